//! A node's configuration: which region it is, where it keeps its data, and
//! the addresses and authorities it answers for.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use svc_store::model::Environment;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Accepts writes, sequences the replication log, bills.
    Home,
    /// Serves retrieval from what the log delivered.
    Read,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// The region's name, as receipts and the key set name it.
    pub region: String,
    pub role: Role,
    pub environment: Environment,
    pub data_dir: PathBuf,
    /// The public API (business and retrieval routes).
    pub listen: SocketAddr,
    /// The operator's admin API; loopback unless deliberately opened.
    pub admin_listen: SocketAddr,
    /// Home: the routes between regions (`/internal/*`), on a listener of
    /// their own that only the read regions' network should reach. Never
    /// served on the public port.
    #[serde(default)]
    pub internal_listen: Option<SocketAddr>,
    /// The host every signed request must address (`@authority`): shared by
    /// all regions of a deployment, lower case, no default port.
    pub public_authority: String,
    /// Base URL of the public verification routes, used in source lines.
    pub verify_base_url: String,
    /// Where clients reach this node's public API, used in upload addresses;
    /// `http://<listen>` when absent.
    #[serde(default)]
    pub public_base_url: Option<String>,
    /// The operator's bearer token for the admin API: here, or read from
    /// `admin_token_file` (a deployment keeps secrets out of its config).
    #[serde(default)]
    pub admin_token: String,
    #[serde(default)]
    pub admin_token_file: Option<PathBuf>,
    /// A file holding the operator's key-encryption key (a token, as
    /// `svc secret` draws one): the node's seeds, and at home the hosted
    /// businesses' seeds, are stored wrapped under a key drawn from it.
    /// `SVC_KEY_ENCRYPTION_KEY` may give it instead (read once, then removed
    /// from the environment).
    #[serde(default)]
    pub key_encryption_key_file: Option<PathBuf>,
    /// The key, once read: never in a config file, never printed.
    #[serde(skip)]
    pub key_encryption_key: Option<crate::service_keys::KeyEncryptionKey>,
    /// WebAuthn relying party of the business portal (passkey seals).
    pub passkey_rp_id: String,
    pub passkey_origin: String,
    /// tantivy shards per collection. One by default: a search visits its
    /// shards one after another, so on a small machine more shards only add
    /// per-search overhead (measured: 1 shard 1.4x the searches/s of 2 at
    /// 100,000 products on 2 cores).
    #[serde(default = "default_shards")]
    pub shards_per_collection: usize,
    /// DNS blocklist used for `url_flagged`; none disables the check.
    #[serde(default)]
    pub url_blocklist: Option<BlocklistConfig>,
    /// Per-key retrieval limits (the spec leaves the numbers to the operator).
    #[serde(default)]
    pub retrieval_limits: RetrievalLimits,
    /// How long a search may look before it answers with what it has
    /// (`partial: true`), counted from the request's arrival.
    #[serde(default = "default_search_budget_ms")]
    pub search_budget_ms: u64,
    /// Most answers whose nonce claims, receipts or usage one store write
    /// holds: requests that queue while the write before is made are
    /// written together (group commit). 1 (or 0) writes each answer on its
    /// own.
    #[serde(default = "default_answers_per_write")]
    pub answers_per_write: usize,
    /// The store's memory, in MiB: one cache for every table's blocks, with
    /// the memtables (at most half of it) charged to it.
    #[serde(default = "default_store_memory_mib")]
    pub store_memory_mib: usize,
    /// The search index's rows held in memory, in MiB, every shard's
    /// together: a search copies its hits' rows from there; a segment that
    /// does not fit is read from tantivy's doc store per hit.
    #[serde(default = "default_index_rows_memory_mib")]
    pub index_rows_memory_mib: usize,
    /// How often home sequences the transparency log's waiting leaves and
    /// signs a checkpoint: hourly, as the spec says; shorter for tests.
    #[serde(default = "default_log_sequence_every_ms")]
    pub log_sequence_every_ms: u64,
    /// How often the node runs retention: purging deleted records' bytes
    /// from every copy it holds (within the spec's 30 days) and deleting
    /// bulk files kept 7 days. Hourly; shorter for tests.
    #[serde(default = "default_retention_every_ms")]
    pub retention_every_ms: u64,
    /// Domain assurance (`actors::domain_assurance`); none: every domain
    /// stays `unchecked` and endpoints are never suspended by it.
    #[serde(default)]
    pub domain_assurance: Option<DomainAssuranceConfig>,
    /// The operator's IP-to-AS table (`as_table`), for the `AS…` entries
    /// of mandates' source allow-lists; without one such a mandate is
    /// refused when it is sealed.
    #[serde(default)]
    pub ip_to_as_file: Option<std::path::PathBuf>,
    /// When a sandbox home republishes its corpus each night, `HH:MM` UTC
    /// (R1.41).
    #[serde(default = "default_sandbox_republish_at")]
    pub sandbox_republish_at: String,
    /// How this region reaches the others: home's address for a read
    /// region, and the token both sides present on the internal routes.
    #[serde(default)]
    pub replication: Option<ReplicationConfig>,
    /// Timeouts and caps of every listener this node opens.
    #[serde(default)]
    pub listener: ListenerLimits,
    /// TLS on every listener of this node (public, admin, internal), and
    /// the CA its own clients trust beside the system's roots; none: plain
    /// HTTP.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// Production without `[tls]`: a TLS-terminating proxy in front of
    /// every listener does it, named in `plain_http_behind`. Plain HTTP in
    /// production is only ever said here.
    #[serde(default)]
    pub allow_plain_http: bool,
    /// The proxy that terminates TLS for this node (`allow_plain_http`).
    #[serde(default)]
    pub plain_http_behind: Option<String>,
    /// Where this node's backups are written and how often (the schedule
    /// itself is the operator's: `deploy/production/`); `svc doctor` checks
    /// that the newest is recent.
    #[serde(default)]
    pub backups: Option<BackupsConfig>,
    /// The front doors and regions whose `X-Forwarded-For` this node
    /// believes (addresses or blocks): the client address a mandate's
    /// allow-list and the public rate limit see is the first address right
    /// of them. Empty: the TCP peer, always.
    #[serde(default)]
    pub trusted_proxies: Vec<svc_core::net::Cidr>,
    /// `POST /v1/verify` answers per client address in any rolling second
    /// (unauthenticated CPU work); past it `429` with `Retry-After`.
    #[serde(default = "default_verify_per_second")]
    pub verify_per_second: u64,
    /// The hosted public MCP server's sessions.
    #[serde(default)]
    pub mcp: McpConfig,
    /// Lets the admin API crash this node at a step of its write path and
    /// move its clock (`/admin/faults/*`), for chaos runs. Never in service.
    #[serde(default)]
    pub fault_injection: bool,
    /// The other regions' public addresses, by name: an ad confirmation
    /// belongs to the region that served its pool or search, and is sent
    /// on there (retrieval 4.2). A region not listed answers `503`.
    #[serde(default)]
    pub peers: Vec<Peer>,
    /// How home fetches the images ads name when they are saved.
    #[serde(default)]
    pub ad_images: AdImagesConfig,
    /// Paid placements' money (home's is in force everywhere).
    #[serde(default)]
    pub ads: AdsConfig,
    /// Witnesses that cosign the log's checkpoints (home only).
    #[serde(default)]
    pub log_witnesses: LogWitnesses,
    /// Home as a group of members agreeing through Raft (`svc-consensus`);
    /// absent, home is this one process.
    #[serde(default)]
    pub home_group: Option<HomeGroupConfig>,
}

/// `[home_group]`: this member and the others of home's group.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HomeGroupConfig {
    /// This member's number among `members`.
    pub id: u64,
    /// Where this member takes the others' Raft messages (mutual TLS from
    /// the deployment's CA when `[tls]` is set).
    pub listen: SocketAddr,
    /// The token every member's messages are signed under, or
    /// `token_file`; the same at every member.
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Every member, this one included: 1, 3 or 5.
    pub members: Vec<GroupMember>,
    /// Milliseconds between the leader's heartbeats.
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// A follower that heard no heartbeat for a time drawn between these
    /// (milliseconds) stands for election.
    #[serde(default = "default_election_ms")]
    pub election_ms: [u64; 2],
    /// How long a write waits for a quorum before it fails.
    #[serde(default = "default_commit_timeout_ms")]
    pub commit_timeout_ms: u64,
    /// A member writes its state to a snapshot file once this many log
    /// entries were applied since the last, and purges its log up to it.
    #[serde(default = "default_snapshot_every")]
    pub snapshot_every: u64,
    /// The newest log entries a purge keeps: a member that far behind
    /// catches up from the log, one further behind takes the snapshot.
    #[serde(default = "default_logs_kept")]
    pub logs_kept: u64,
}

/// One member of home's group.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMember {
    pub id: u64,
    /// Its group listener (`listen` at that member), as the others reach it.
    pub url: String,
    /// Its public and admin listeners, where a member that does not lead
    /// sends on the requests it takes while this one leads; without them
    /// such a request is `503` with `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_url: Option<String>,
}

pub fn default_heartbeat_ms() -> u64 {
    250
}

pub fn default_election_ms() -> [u64; 2] {
    [1_000, 2_000]
}

pub fn default_commit_timeout_ms() -> u64 {
    5_000
}

pub fn default_snapshot_every() -> u64 {
    50_000
}

pub fn default_logs_kept() -> u64 {
    10_000
}

impl HomeGroupConfig {
    /// A group that can work: 1, 3 or 5 members of distinct numbers, this
    /// one among them, each reached over HTTP(S), a strong token, and an
    /// election slower than the heartbeat.
    pub fn check(&self, plain_allowed: bool) -> Result<(), ConfigError> {
        let refuse = |why: String| Err(ConfigError::HomeGroup(why));
        if ![1, 3, 5].contains(&self.members.len()) {
            return refuse(format!("{} members; a group has 1, 3 or 5", self.members.len()));
        }
        let ids: std::collections::BTreeSet<u64> = self.members.iter().map(|m| m.id).collect();
        if ids.len() != self.members.len() {
            return refuse("two members have the same id".into());
        }
        if !ids.contains(&self.id) {
            return refuse(format!("id {} is not among the members", self.id));
        }
        for member in &self.members {
            let urls = [
                ("url", Some(&member.url)),
                ("public_url", member.public_url.as_ref()),
                ("admin_url", member.admin_url.as_ref()),
            ];
            for (name, url) in urls {
                let Some(url) = url else { continue };
                let plain = plain_allowed && url.starts_with("http://");
                if !(url.starts_with("https://") || plain) {
                    return refuse(format!("member {}'s {name} {url:?} is not https://", member.id));
                }
            }
        }
        let [low, high] = self.election_ms;
        if self.heartbeat_ms == 0 || low <= self.heartbeat_ms || high <= low {
            return refuse(format!(
                "heartbeat_ms {} and election_ms [{low}, {high}]: an election waits longer than a heartbeat, and its range is not empty",
                self.heartbeat_ms
            ));
        }
        check_secret("home_group.token", &self.token)
    }
}

/// The witnesses home asks to cosign each checkpoint
/// (c2sp.org/tlog-witness), and how often it looks for one to ask.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogWitnesses {
    /// How often home looks for a witness whose cosignature is missing.
    pub every_ms: u64,
    /// PEM certificates trusted besides the web PKI's roots.
    pub extra_roots_pem: Option<PathBuf>,
    pub witness: Vec<WitnessConfig>,
}

impl Default for LogWitnesses {
    fn default() -> Self {
        LogWitnesses { every_ms: 10_000, extra_roots_pem: None, witness: Vec::new() }
    }
}

/// One witness: its verifier key (`<name>+<key id>+<base64(0x04 ‖ key)>`),
/// its submission prefix and how long one request may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessConfig {
    pub key: String,
    pub url: String,
    #[serde(default = "default_witness_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_witness_timeout_ms() -> u64 {
    5_000
}

/// Paid placements' money.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdsConfig {
    /// The service's take of what a business pays, in basis points (0 to
    /// 9,000): an event whose net price is N charges the campaign
    /// N / (1 - rate). Home's rate reaches every region with its ad feed;
    /// a read region's own is not read. It never leaves the service.
    pub take_rate_bps: u32,
    /// The most clicks one retrieval key is charged on one campaign within
    /// an hour, at each region; clicks past it are recorded, not charged.
    pub billed_clicks_per_hour: u32,
}

impl Default for AdsConfig {
    fn default() -> Self {
        AdsConfig { take_rate_bps: 0, billed_clicks_per_hour: 1_000 }
    }
}

/// The ad-image fetcher (`image_fetch`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdImagesConfig {
    /// PEM certificates trusted besides the web PKI's roots (a deployment
    /// behind its own CA; tests).
    pub extra_roots_pem: Option<PathBuf>,
    /// Fetch from loopback and private addresses too. Never in service: it
    /// lets an ad point the service at its own network.
    pub allow_private_addresses: bool,
    /// One image's whole fetch, connection to last byte.
    pub timeout_ms: u64,
}

impl Default for AdImagesConfig {
    fn default() -> Self {
        AdImagesConfig { extra_roots_pem: None, allow_private_addresses: false, timeout_ms: 5_000 }
    }
}

/// Another region's public address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    pub name: String,
    pub url: String,
}

fn default_verify_per_second() -> u64 {
    20
}

/// The hosted public MCP server (`/v1/mcp/public`): how many sessions one
/// region keeps, and one client address share (IPv6 by /64); how long one
/// lives idle (R8.23: 30 minutes), and one that never called a tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    pub public_sessions: usize,
    pub sessions_per_address: usize,
    pub session_idle_ms: u64,
    pub untouched_session_idle_ms: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            public_sessions: 10_000,
            sessions_per_address: 100,
            session_idle_ms: 30 * 60 * 1000,
            untouched_session_idle_ms: 2 * 60 * 1000,
        }
    }
}

/// What one listener admits: how long a connection or request may take,
/// and how many may be open or in flight at once. The defaults suit a
/// public node; tests shorten them to see them act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ListenerLimits {
    /// An HTTP/1 request head must arrive whole within this time, counted
    /// from when the connection waits for it, and any connection's first
    /// request (HTTP/2 included) within it of opening (slowloris).
    pub header_read_timeout_ms: u64,
    /// A connection that sends and receives nothing for this long is closed.
    pub idle_timeout_ms: u64,
    /// A request must be answered, its body read included, within this time.
    pub request_timeout_ms: u64,
    /// The bulk upload route streams up to 256 MiB: its own, longer bound.
    pub upload_timeout_ms: u64,
    /// Longest wait for the next piece of a request body.
    pub body_read_timeout_ms: u64,
    /// Connections open at once; the next waits in the kernel's backlog.
    pub max_connections: usize,
    /// Requests at once on one HTTP/2 connection.
    pub max_streams_per_connection: u32,
    /// Requests in flight at once, per route class; past it `503`.
    pub in_flight: InFlightCaps,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        ListenerLimits {
            header_read_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            request_timeout_ms: 30_000,
            upload_timeout_ms: 30 * 60_000,
            body_read_timeout_ms: 10_000,
            max_connections: 4_096,
            max_streams_per_connection: 128,
            in_flight: InFlightCaps::default(),
        }
    }
}

/// Requests in flight at once, by the kind of work they ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InFlightCaps {
    /// Publishing routes, whose bodies reach 32 MiB.
    pub publish: usize,
    /// Bulk file uploads, streamed to disk.
    pub upload: usize,
    /// Public verification, unauthenticated CPU work.
    pub verify: usize,
    /// Signed search and fetch.
    pub retrieval: usize,
    /// Routes between regions.
    pub internal: usize,
    /// Everything else (public reads, portal pages, admin, health).
    pub other: usize,
}

impl Default for InFlightCaps {
    fn default() -> Self {
        InFlightCaps { publish: 16, upload: 4, verify: 64, retrieval: 1_024, internal: 256, other: 512 }
    }
}

/// A node's backups: the folder they land in and the most hours between
/// two (`svc doctor` fails past it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupsConfig {
    pub dir: PathBuf,
    #[serde(default = "default_backup_every_hours")]
    pub every_hours: u32,
}

fn default_backup_every_hours() -> u32 {
    24
}

/// A node's certificate and key (PEM files, relative to the config file's
/// folder), read again on `SIGHUP` or when either changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain, its end-entity certificate first.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// A CA certificate the node trusts beside the system's roots when it
    /// is the client (a read region reaching home, an ad confirmation sent
    /// to its region): a deployment's own CA.
    #[serde(default)]
    pub ca: Option<PathBuf>,
}

/// The internal link between a read region and home.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationConfig {
    /// Home's public API base URL (`http://host:port`), reached over HTTP/2.
    /// Required for a read region; home leaves it out.
    #[serde(default)]
    pub home_url: Option<String>,
    /// A read region: home's internal listener (`internal_listen`), where
    /// it pulls the log and nonces and sends its reports and lease asks.
    #[serde(default)]
    pub internal_url: Option<String>,
    /// A read region: its own bearer token on home's internal routes, here
    /// or read from `token_file`. Home names every region's under `regions`.
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Home: each read region and its token. A request on the internal
    /// routes is the region whose token it presents, and may speak only
    /// for that region.
    #[serde(default)]
    pub regions: Vec<RegionCredential>,
    /// A read region with TLS: the region home's certificate must name
    /// (`urn:svc:region:<name>`), as home holds each region to its own.
    #[serde(default = "default_home_region")]
    pub home_region: String,
    /// A read region is ready while it was caught up with home within this
    /// many milliseconds.
    #[serde(default = "default_ready_max_lag_ms")]
    pub ready_max_lag_ms: u64,
    /// Home: how long an allowance lease lasts.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
    /// A read region: how many allowance units it asks for at a time.
    #[serde(default = "default_lease_units")]
    pub lease_units: i64,
    /// A read region: how long a forwarded write may wait for home's
    /// answer before the caller gets 503 (home stalled, not just down).
    #[serde(default = "default_forward_timeout_ms")]
    pub forward_timeout_ms: u64,
    /// A read region of a home that is a group: the other members' URLs
    /// (`home_url` and `internal_url` name one); the region follows
    /// whichever leads.
    #[serde(default)]
    pub home_members: Vec<HomeMemberUrls>,
}

/// Where a read region reaches one member of home's group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeMemberUrls {
    pub home_url: String,
    pub internal_url: String,
}

/// A read region as home knows it: its name and its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionCredential {
    pub name: String,
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

impl RegionCredential {
    pub fn new(name: &str, token: &str) -> Self {
        RegionCredential { name: name.to_owned(), token: token.to_owned(), token_file: None }
    }
}

impl ReplicationConfig {
    /// Home's side of the link: every read region with its token.
    pub fn home(regions: Vec<RegionCredential>) -> Self {
        ReplicationConfig { regions, ..Self::read(None, None, "") }
    }

    /// A read region's side: home's public and internal addresses, and the
    /// region's own token.
    pub fn read(home_url: Option<String>, internal_url: Option<String>, token: &str) -> Self {
        ReplicationConfig {
            home_url,
            internal_url,
            token: token.to_owned(),
            token_file: None,
            regions: Vec::new(),
            home_region: default_home_region(),
            ready_max_lag_ms: default_ready_max_lag_ms(),
            lease_ms: default_lease_ms(),
            lease_units: default_lease_units(),
            forward_timeout_ms: default_forward_timeout_ms(),
            home_members: Vec::new(),
        }
    }
}

fn default_home_region() -> String {
    "home".to_owned()
}

fn default_lease_ms() -> u64 {
    60_000
}

fn default_lease_units() -> i64 {
    100
}

fn default_forward_timeout_ms() -> u64 {
    10_000
}

fn default_ready_max_lag_ms() -> u64 {
    5_000
}

fn default_log_sequence_every_ms() -> u64 {
    svc_core::tlog::SEQUENCE_EVERY_MS as u64
}

fn default_sandbox_republish_at() -> String {
    "03:00".into()
}

fn default_retention_every_ms() -> u64 {
    3_600_000
}

fn default_search_budget_ms() -> u64 {
    250
}

fn default_answers_per_write() -> usize {
    256
}

fn default_store_memory_mib() -> usize {
    svc_store::MemoryBudget::DEFAULT.total_bytes >> 20
}

/// 100,000 products' rows take about 130 MiB.
pub const DEFAULT_INDEX_ROWS_MEMORY_MIB: usize = 1024;

fn default_index_rows_memory_mib() -> usize {
    DEFAULT_INDEX_ROWS_MEMORY_MIB
}

/// The request rate and the per-minute query-cost budget of one retrieval
/// key (retrieval 8: "numeric values not shown").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalLimits {
    /// Requests a key may make in any rolling second.
    pub requests_per_second: u64,
    /// Query cost a key may spend in any rolling minute; zero-row searches
    /// spend none (`svc_core::limits::search_cost`).
    pub query_cost_per_minute: u64,
}

impl Default for RetrievalLimits {
    fn default() -> Self {
        RetrievalLimits { requests_per_second: 100, query_cost_per_minute: 30_000 }
    }
}

/// A DNS blocklist zone: a URL's host `h` is flagged when `h.<zone>` has an A record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlocklistConfig {
    pub zone: String,
    /// The resolver to ask (for example 127.0.0.1:5353).
    pub resolver: SocketAddr,
    /// How long to wait for an answer before treating a URL as unchecked.
    #[serde(default = "default_blocklist_timeout_ms")]
    pub timeout_ms: u64,
}

/// Domain assurance of business files' endpoints: where to look up each
/// domain's TXT record, how long to wait, how often to look again.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainAssuranceConfig {
    /// The resolver to ask (for example 127.0.0.1:53).
    pub resolver: SocketAddr,
    /// How long to wait for an answer; none changes nothing by itself.
    #[serde(default = "default_blocklist_timeout_ms")]
    pub timeout_ms: u64,
    /// How often every business file's domains are looked at again.
    #[serde(default = "default_assurance_every_ms")]
    pub every_ms: u64,
}

fn default_assurance_every_ms() -> u64 {
    6 * 3_600_000
}

fn default_shards() -> usize {
    1
}

fn default_blocklist_timeout_ms() -> u64 {
    2_000
}

impl NodeConfig {
    /// The base URL clients reach this node's public API at.
    pub fn public_base(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        self.public_base_url.clone().unwrap_or_else(|| format!("{scheme}://{}", self.listen))
    }

    /// Who this node believes when it is the client: the system's roots,
    /// and its deployment's CA when the config names one.
    pub fn trust(&self) -> Result<svc_client::trust::Trust, svc_client::ClientError> {
        svc_client::trust::Trust::with_ca(self.tls.as_ref().and_then(|tls| tls.ca.as_deref()))
    }

    /// A home node of a local deployment, used by `svc up` and tests.
    pub fn local_home(data_dir: PathBuf, listen: SocketAddr, admin_listen: SocketAddr) -> NodeConfig {
        NodeConfig {
            region: "home".into(),
            role: Role::Home,
            environment: Environment::Sandbox,
            data_dir,
            listen,
            admin_listen,
            internal_listen: None,
            public_authority: "api.svc.localhost".into(),
            verify_base_url: "http://verify.svc.localhost".into(),
            public_base_url: None,
            admin_token: hex::encode(svc_clock::random::<16>()),
            admin_token_file: None,
            key_encryption_key_file: None,
            key_encryption_key: None,
            passkey_rp_id: "portal.svc.localhost".into(),
            passkey_origin: "https://portal.svc.localhost".into(),
            url_blocklist: None,
            shards_per_collection: default_shards(),
            retrieval_limits: RetrievalLimits::default(),
            search_budget_ms: default_search_budget_ms(),
            answers_per_write: default_answers_per_write(),
            store_memory_mib: default_store_memory_mib(),
            index_rows_memory_mib: default_index_rows_memory_mib(),
            log_sequence_every_ms: default_log_sequence_every_ms(),
            retention_every_ms: default_retention_every_ms(),
            sandbox_republish_at: default_sandbox_republish_at(),
            ip_to_as_file: None,
            domain_assurance: None,
            replication: None,
            listener: ListenerLimits::default(),
            tls: None,
            allow_plain_http: false,
            plain_http_behind: None,
            backups: None,
            trusted_proxies: Vec::new(),
            verify_per_second: default_verify_per_second(),
            mcp: McpConfig::default(),
            fault_injection: false,
            peers: Vec::new(),
            ad_images: AdImagesConfig::default(),
            ads: AdsConfig::default(),
            log_witnesses: LogWitnesses::default(),
            home_group: None,
        }
    }

    /// `count` sandbox homes on loopback as one group over plain HTTP (for
    /// a process that runs them all: tests and benches), member `n` under
    /// `dir/home-<n>` on ports free now, sharing one admin and group token,
    /// with the default timings.
    pub fn local_group(dir: &Path, count: u64) -> std::io::Result<Vec<NodeConfig>> {
        let free = || port_to_keep(std::net::Ipv4Addr::LOCALHOST.into());
        let mut addresses = Vec::new();
        for _ in 0..count {
            addresses.push([free()?, free()?, free()?]);
        }
        let members: Vec<GroupMember> = (1..)
            .zip(&addresses)
            .map(|(id, [public, admin, group])| GroupMember {
                id,
                url: format!("http://{group}"),
                public_url: Some(format!("http://{public}")),
                admin_url: Some(format!("http://{admin}")),
            })
            .collect();
        let (admin_token, token) = (hex::encode(svc_clock::random::<16>()), hex::encode(svc_clock::random::<24>()));
        let configs = (1..)
            .zip(&addresses)
            .map(|(id, [public, admin, group])| {
                let mut config = NodeConfig::local_home(dir.join(format!("home-{id}")), *public, *admin);
                config.admin_token = admin_token.clone();
                config.allow_plain_http = true;
                config.home_group = Some(HomeGroupConfig {
                    id,
                    listen: *group,
                    token: token.clone(),
                    token_file: None,
                    members: members.clone(),
                    heartbeat_ms: default_heartbeat_ms(),
                    election_ms: default_election_ms(),
                    commit_timeout_ms: default_commit_timeout_ms(),
                    snapshot_every: default_snapshot_every(),
                    logs_kept: default_logs_kept(),
                });
                config
            })
            .collect();
        Ok(configs)
    }
}

/// An address on `ip` free now and below the machine's ephemeral port
/// range, for a config to name before its node binds it: a node stopped
/// and started again finds it still free, where a port the kernel handed
/// out could meanwhile be the local end of any outgoing connection.
pub fn port_to_keep(ip: std::net::IpAddr) -> std::io::Result<SocketAddr> {
    let ephemeral_from: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768);
    let (low, high) = (10_000u16, ephemeral_from.max(10_001));
    for _ in 0..200 {
        let port = low + u16::from_le_bytes(svc_clock::random::<2>()) % (high - low);
        if let Ok(probe) = std::net::TcpListener::bind((ip, port)) {
            return probe.local_addr();
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AddrInUse, format!("no free port on {ip} from {low} to {high}")))
}

/// Checks the regions of one deployment together: one home, which names
/// every read region with that region's own token and listens for them on
/// `internal_listen`; every read region reaches home's public and internal
/// listeners; one public authority and environment for all (a signed
/// request is valid at any region); and no two regions share a name (nor,
/// on one host, an address or a data directory).
pub fn check_deployment(regions: &[NodeConfig], hosts: Hosts) -> Result<(), ConfigError> {
    let homes: Vec<&NodeConfig> = regions.iter().filter(|r| r.role == Role::Home).collect();
    let [home] = homes.as_slice() else { return Err(ConfigError::Homes(homes.len())) };
    let known = home.replication.as_ref().map(|r| r.regions.as_slice()).unwrap_or_default();
    let internal = home.internal_listen.ok_or(ConfigError::NoInternalListen)?;
    let mut seen = std::collections::HashSet::new();
    for region in regions {
        let name = &region.region;
        let mut unique = vec![("name", name.clone())];
        if hosts == Hosts::One {
            unique.extend([
                ("listen", region.listen.to_string()),
                ("admin_listen", region.admin_listen.to_string()),
                ("data_dir", region.data_dir.display().to_string()),
            ]);
            if let Some(internal) = region.internal_listen {
                unique.push(("listen", internal.to_string()));
            }
        }
        for (what, value) in unique {
            if !seen.insert((what, value.clone())) {
                return Err(ConfigError::UsedTwice { region: name.clone(), what, value });
            }
        }
        if region.public_authority != home.public_authority || region.environment != home.environment {
            return Err(ConfigError::AuthorityOrEnvironment(name.clone()));
        }
        let link = region.replication.as_ref().ok_or_else(|| ConfigError::NoReplication(name.clone()))?;
        match (region.role, link.home_url.as_deref(), link.internal_url.as_deref()) {
            (Role::Read, Some(url), Some(internal_url))
                if reaches(url, home.listen, hosts) && reaches(internal_url, internal, hosts) => {}
            (Role::Read, url, internal_url) => {
                return Err(ConfigError::HomeUrl {
                    region: name.clone(),
                    urls: format!("{url:?}, {internal_url:?}"),
                    home_listen: home.listen,
                    internal_listen: internal,
                });
            }
            (Role::Home, None, None) => continue,
            (Role::Home, _, _) => return Err(ConfigError::HomeWithHomeUrl(name.clone())),
        }
        let credential = known.iter().find(|c| &c.name == name).ok_or_else(|| ConfigError::Unknown(name.clone()))?;
        if (&link.token, &link.token_file) != (&credential.token, &credential.token_file) {
            return Err(ConfigError::TokenDiffers(name.clone()));
        }
    }
    Ok(())
}

/// Why the regions given do not make one deployment. A message about one
/// region starts with its name.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} home regions; one is expected")]
    Homes(usize),
    #[error("home takes a token per read region ([[replication.regions]]), not one of its own")]
    HomeToken,
    #[error("{0}: its token is another region's or the admin token; each region has its own")]
    SharedToken(String),
    #[error("{region}: {what} {value} is used twice")]
    UsedTwice { region: String, what: &'static str, value: String },
    #[error("{0}: public_authority and environment must be home's")]
    AuthorityOrEnvironment(String),
    #[error("{0}: no [replication]")]
    NoReplication(String),
    #[error("{0}: its token is not the one home names for it")]
    TokenDiffers(String),
    #[error("{0}: home's [[replication.regions]] does not name it")]
    Unknown(String),
    #[error("home has no internal_listen for its read regions")]
    NoInternalListen,
    #[error("{region}: home_url and internal_url are {urls}; home listens at {home_listen} and {internal_listen}")]
    HomeUrl { region: String, urls: String, home_listen: SocketAddr, internal_listen: SocketAddr },
    #[error("{0}: home has no home_url or internal_url")]
    HomeWithHomeUrl(String),
    #[error("{setting}: refused with environment = \"production\": {why}")]
    Production { setting: &'static str, why: &'static str },
    #[error("tls: without [tls] every listener speaks plain HTTP; add [tls], or say allow_plain_http = true")]
    PlainHttpUnsaid,
    #[error("tls.ca: the link between regions is mutual TLS under the deployment's CA; name its certificate")]
    LinkWithoutCa,
    #[error("replication.internal_url {0}: with [tls] the link to home is https://")]
    PlainLink(String),
    #[error("{what}: {why} (draw one with `svc secret`)")]
    WeakSecret { what: String, why: &'static str },
    #[error("[home_group]: {0}")]
    HomeGroup(String),
    #[error("{what}: given both in the file and as {what}_file")]
    SecretTwice { what: String },
    #[error("{}: {source}", path.display())]
    SecretFile { path: PathBuf, source: std::io::Error },
}

/// The fewest characters a token may have: 32 hex characters are 128 bits.
pub const MIN_SECRET_CHARS: usize = 32;

/// Refuses a token an attacker could guess: empty, short, or a
/// placeholder a config file shipped with.
pub fn check_secret(what: &str, token: &str) -> Result<(), ConfigError> {
    let why = if token.is_empty() {
        "no token is given"
    } else if token.chars().count() < MIN_SECRET_CHARS {
        "shorter than 32 characters"
    } else if token.to_ascii_lowercase().contains("change-me") {
        "still the placeholder a config file shipped with"
    } else {
        return Ok(());
    };
    Err(ConfigError::WeakSecret { what: what.to_owned(), why })
}

/// The variable a key-encryption key may be given in instead of a file.
pub const KEY_ENCRYPTION_KEY_VAR: &str = "SVC_KEY_ENCRYPTION_KEY";

/// A token given inline or in a file (relative paths from `base`), never both.
fn read_secret(what: &str, inline: &mut String, file: &Option<PathBuf>, base: &Path) -> Result<(), ConfigError> {
    let Some(file) = file else { return Ok(()) };
    if !inline.is_empty() {
        return Err(ConfigError::SecretTwice { what: what.to_owned() });
    }
    let path = base.join(file);
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::SecretFile { path, source })?;
    *inline = text.trim().to_owned();
    Ok(())
}

impl NodeConfig {
    /// Reads the tokens given as files, and takes every file path (TLS,
    /// backups, the IP-to-AS table) relative to the config file's folder.
    pub fn read_secret_files(&mut self, base: &Path) -> Result<(), ConfigError> {
        read_secret("admin_token", &mut self.admin_token, &self.admin_token_file, base)?;
        let mut kek = String::new();
        read_secret("key_encryption_key", &mut kek, &self.key_encryption_key_file, base)?;
        if kek.is_empty()
            && let Ok(text) = std::env::var(KEY_ENCRYPTION_KEY_VAR)
        {
            // SAFETY: read once while the node starts, before its threads
            // read the environment.
            unsafe { std::env::remove_var(KEY_ENCRYPTION_KEY_VAR) };
            kek = text.trim().to_owned();
        }
        if !kek.is_empty() {
            check_secret("key_encryption_key", &kek)?;
            self.key_encryption_key = Some(crate::service_keys::KeyEncryptionKey::from_token(&kek));
        }
        if let Some(tls) = &mut self.tls {
            for path in [&mut tls.cert, &mut tls.key].into_iter().chain(tls.ca.as_mut()) {
                *path = base.join(&*path);
            }
        }
        if let Some(backups) = &mut self.backups {
            backups.dir = base.join(&backups.dir);
        }
        if let Some(table) = &mut self.ip_to_as_file {
            *table = base.join(&*table);
        }
        if let Some(group) = &mut self.home_group {
            read_secret("home_group.token", &mut group.token, &group.token_file, base)?;
        }
        if let Some(link) = &mut self.replication {
            read_secret("token", &mut link.token, &link.token_file, base)?;
            for region in &mut link.regions {
                let what = format!("regions.{}.token", region.name);
                read_secret(&what, &mut region.token, &region.token_file, base)?;
            }
        }
        Ok(())
    }

    /// `environment = "production"` is safe by default: it refuses plain
    /// HTTP unless a named proxy terminates TLS, fault injection, fetching
    /// ad images from private addresses, and a build with deliberate
    /// faults. Each refusal names the setting.
    pub fn check_production(&self) -> Result<(), ConfigError> {
        if self.environment != Environment::Production {
            return Ok(());
        }
        let refuse = |setting: &'static str, why: &'static str| Err(ConfigError::Production { setting, why });
        // The build itself first: no setting makes it safe.
        if cfg!(feature = "sabotage") {
            return refuse("the sabotage feature", "this build breaks invariants on purpose; build without it");
        }
        if self.tls.is_none() {
            if !self.allow_plain_http {
                return refuse(
                    "tls",
                    "the public and internal listeners serve TLS: add [tls], or allow_plain_http = true behind a proxy that terminates it",
                );
            }
            if self.plain_http_behind.as_deref().is_none_or(|name| name.trim().is_empty()) {
                return refuse("plain_http_behind", "allow_plain_http needs the TLS-terminating proxy named");
            }
        }
        if self.fault_injection {
            return refuse("fault_injection", "lets the admin API crash the node and move its clock");
        }
        if self.ad_images.allow_private_addresses {
            return refuse("ad_images.allow_private_addresses", "lets an ad point the service at its own network");
        }
        Ok(())
    }

    /// Plain HTTP only where the config says so: a node without `[tls]`
    /// must say `allow_plain_http = true` (in any environment; production
    /// asks more, `check_production`).
    pub fn check_plain_http(&self) -> Result<(), ConfigError> {
        match self.tls.is_none() && !self.allow_plain_http {
            true => Err(ConfigError::PlainHttpUnsaid),
            false => Ok(()),
        }
    }

    /// With TLS, the link between regions is mutual TLS under the
    /// deployment's CA: home asks each region for a certificate it issued,
    /// and a region reaches home's internal listener only over `https://`.
    pub fn check_link_tls(&self) -> Result<(), ConfigError> {
        let (Some(tls), Some(link)) = (&self.tls, &self.replication) else { return Ok(()) };
        let linked = match self.role {
            Role::Home => self.internal_listen.is_some(),
            Role::Read => true,
        };
        if linked && tls.ca.is_none() {
            return Err(ConfigError::LinkWithoutCa);
        }
        let internal = link.internal_url.iter().chain(link.home_members.iter().map(|m| &m.internal_url));
        if let Some(url) = internal.map(String::as_str).find(|url| !url.starts_with("https://")) {
            return Err(ConfigError::PlainLink(url.to_owned()));
        }
        Ok(())
    }

    /// Every token strong enough to guard what it guards, and each region's
    /// its own: a node refuses to start otherwise.
    pub fn check_secrets(&self) -> Result<(), ConfigError> {
        check_secret("admin_token", &self.admin_token)?;
        let Some(link) = &self.replication else { return Ok(()) };
        match self.role {
            Role::Read => check_secret("token", &link.token),
            Role::Home => {
                if !link.token.is_empty() || link.token_file.is_some() {
                    return Err(ConfigError::HomeToken);
                }
                let mut seen = std::collections::HashSet::new();
                for region in &link.regions {
                    check_secret(&format!("regions.{}.token", region.name), &region.token)?;
                    if !seen.insert(&region.token) || region.token == self.admin_token {
                        return Err(ConfigError::SharedToken(region.name.clone()));
                    }
                }
                Ok(())
            }
        }
    }
}

/// Whether the regions of a deployment share one machine (so their ports
/// and data folders must differ) or each has its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hosts {
    One,
    Many,
}

/// Whether `home_url` reaches a home listening at `listen`: the same
/// address on one host; on many, home's port under whatever name the
/// network gives it.
fn reaches(home_url: &str, listen: SocketAddr, hosts: Hosts) -> bool {
    match hosts {
        Hosts::One => home_url == format!("http://{listen}") || home_url == format!("https://{listen}"),
        Hosts::Many => home_url.parse::<axum::http::Uri>().is_ok_and(|u| {
            let default_port = if u.scheme_str() == Some("https") { 443 } else { 80 };
            matches!(u.scheme_str(), Some("http" | "https"))
                && u.port_u16().unwrap_or(default_port) == listen.port()
                && u.path() == "/"
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(members: &[u64], url: &str) -> HomeGroupConfig {
        HomeGroupConfig {
            id: 1,
            listen: "127.0.0.1:7444".parse().unwrap(),
            token: "a-group-token-of-at-least-32-characters".into(),
            token_file: None,
            members: members
                .iter()
                .map(|id| GroupMember {
                    id: *id,
                    url: format!("{url}://m{id}:7444"),
                    public_url: None,
                    admin_url: Some(format!("{url}://m{id}:8081")),
                })
                .collect(),
            heartbeat_ms: default_heartbeat_ms(),
            election_ms: default_election_ms(),
            commit_timeout_ms: default_commit_timeout_ms(),
            snapshot_every: default_snapshot_every(),
            logs_kept: default_logs_kept(),
        }
    }

    #[test]
    fn a_home_group_that_cannot_work_or_is_open_to_guessing_is_refused_with_its_reason() {
        assert!(group(&[1, 2, 3], "https").check(false).is_ok());
        assert!(group(&[1], "https").check(false).is_ok());
        let refused = |config: HomeGroupConfig, plain: bool| config.check(plain).unwrap_err().to_string();
        assert!(refused(group(&[1, 2], "https"), false).contains("2 members"), "an even group cannot outvote a split");
        assert!(refused(group(&[2, 3, 4], "https"), false).contains("id 1 is not among"));
        assert!(refused(group(&[1, 1, 2], "https"), false).contains("same id"));
        assert!(refused(group(&[1, 2, 3], "http"), false).contains("not https://"));
        let mut plain_admin = group(&[1, 2, 3], "https");
        plain_admin.members[2].admin_url = Some("http://m3:8081".into());
        assert!(refused(plain_admin, false).contains("member 3's admin_url"), "forwarded admin tokens stay on TLS");
        assert!(group(&[1, 2, 3], "http").check(true).is_ok(), "plain HTTP where the config allows it");
        let mut weak = group(&[1, 2, 3], "https");
        weak.token = "short".into();
        assert!(refused(weak, false).contains("home_group.token"));
        let mut hasty = group(&[1, 2, 3], "https");
        hasty.election_ms = [200, 2_000];
        hasty.heartbeat_ms = 250;
        assert!(refused(hasty, false).contains("heartbeat_ms"));
    }
}
