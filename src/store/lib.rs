//! RocksDB: column families, versioned postcard values, atomic write batches.
//!
//! Every value is one version byte ([`VALUE_VERSION`]) followed by its
//! postcard encoding (a documented, stable serde format); every read checks
//! the byte first, and a version this build does not know is
//! [`StoreError::UnknownVersion`], naming the column family — never a panic
//! and never a guess. There is no exception: a marker whose value carries
//! nothing (`()`) is the version byte alone. JSON that must be served byte
//! for byte (records, envelopes, rows) is stored as bytes inside those
//! values, never re-encoded. Key layouts are in [`keys`].
//!
//! `Store::open` checks each column family's schema version (recorded in
//! `meta` under `schema ‖ <cf>`) and the version byte of its first value,
//! and refuses to open on one it does not know. A store written before
//! values carried the byte (no schema marker) is migrated once, at open.

mod bells;
mod group;
pub use group::{Consensus, Write};
pub mod keys;
pub mod model;
mod table;

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, DB, Direction, IteratorMode, Options, WriteBatch, WriteOptions};
use serde::{Serialize, de::DeserializeOwned};

pub use keys::{be, from_be, key};
pub use table::{Family, Holds, Keys, MOST, Migration, Named, Schema, Table};

/// The first version byte of every table's values, and the one a value
/// written without a table (`encode_value`) carries. A table declares its
/// own ([`Schema::version`]) once its values change.
pub const VALUE_VERSION: u8 = 1;

/// The schema version recorded for every column family: the layout of its
/// keys and values this build writes and reads.
pub const SCHEMA_VERSION: u8 = 1;

/// Column families. One per kind of thing, named for it.
pub mod cf {
    use super::{Table, model};
    use svc_core::ads::Micros;
    use svc_core::time::UnixMs;

    /// The bound of a table read whole by the tasks that must see all of
    /// it (a start, a sweep, an expiry): a million entries, past which
    /// such a read is an error instead of an unbounded one.
    pub const ALL_OF_THEM: usize = 1_000_000;
    const _: () = assert!(ALL_OF_THEM > super::MOST);

    /// Families whose values are of types the crates above declare: their
    /// tables are declared there (`svc_node::tables`).
    pub mod families {
        /// Home's replication log, by sequence.
        pub const REPLOG: &str = "replog";
        /// A read region's reports to home, in order: usage, lease returns,
        /// ad settlements.
        pub const OUTBOX: &str = "outbox";
        /// A read region's own claimed nonces until home holds them: a lane
        /// of their own, so a slow report never holds a claim back.
        pub const CLAIMS_OUT: &str = "claims_out";
        /// Home's fan-out of claimed nonces, by sequence.
        pub const NONCE_FEED: &str = "nonce_feed";
        /// Home: the ad facts every region must know, by feed sequence,
        /// kept 25 hours; regions long-poll it.
        pub const AD_FEED: &str = "ad_feed";
    }

    /// `meta`: the node's own small values, each a table over its keys.
    pub mod meta {
        use super::{Table, UnixMs};
        use crate::Named;
        pub const FAMILY: &str = "meta";
        /// The family by name, for whether a key of a table declared above
        /// (the sandbox seeder's) is there.
        pub const RAW: Named = Named(FAMILY);

        /// The store's own: each column family's schema version.
        pub const SCHEMA: Table<u8> = Table::part(FAMILY, "meta.schema", b"schema\0", "`schema` ‖ family").own();
        /// The store's own: the last key of a family given its version
        /// byte, while that runs.
        pub const MIGRATING: Table<Vec<u8>> =
            Table::part(FAMILY, "meta.migrating", b"migrating\0", "`migrating` ‖ family").own();
        /// When the last write that probed the disk was made (`/readyz`).
        pub const WRITE_PROBE: Table<i64> = Table::exact(FAMILY, "meta.write_probe", b"write_probe").own();
        /// Home: the last lease id granted.
        pub const LEASE_SEQ: Table<u64> = Table::exact(FAMILY, "meta.lease_seq", b"lease_seq");
        /// A region: the last sequence of home's nonce feed it holds.
        pub const NONCE_FEED_CURSOR: Table<u64> = Table::exact(FAMILY, "meta.nonce_feed_cursor", b"nonce_feed_cursor");
        /// The last replication sequence every index shard committed.
        pub const INDEX_APPLIED_SEQ: Table<u64> =
            Table::exact(FAMILY, "meta.index_applied_seq", b"index_applied_seq").own();
        /// The last receipt sequence analytics folded.
        pub const ANALYTICS_APPLIED_SEQ: Table<u64> =
            Table::exact(FAMILY, "meta.analytics_applied_seq", b"analytics_applied_seq");
        /// Home: the last ad event of each region analytics folded.
        pub const AD_EVENTS_APPLIED: Table<u64> =
            Table::part(FAMILY, "meta.ad_events_applied", b"ad_events_applied\0", "`ad_events_applied` ‖ region");
        /// Home: the last receipt sequence of each region it has taken.
        pub const REGION_RECEIPTS_THROUGH: Table<u64> = Table::part(
            FAMILY,
            "meta.region_receipts_through",
            b"region_receipts_through\0",
            "`region_receipts_through` ‖ region",
        );
        /// The last receipt sequence the receipt folder folded.
        pub const RECEIPT_FOLDED_SEQ: Table<u64> =
            Table::exact(FAMILY, "meta.receipt_folded_seq", b"receipt_folded_seq");
        /// A read region: the last receipt sequence home has taken.
        pub const RECEIPTS_SHIPPED_SEQ: Table<u64> =
            Table::exact(FAMILY, "meta.receipts_shipped_seq", b"receipts_shipped_seq");
        /// The log sequence of the last delete whose bytes this node purged.
        pub const PURGED_THROUGH: Table<u64> = Table::exact(FAMILY, "meta.purged_through", b"purged_through");
        /// A member of home's group: its Raft vote (postcard, `svc_consensus`).
        pub const RAFT_VOTE: Table<Vec<u8>> = Table::exact(FAMILY, "meta.raft_vote", b"raft_vote").own();
        /// A member of home's group: the last entry it knows committed.
        pub const RAFT_COMMITTED: Table<Vec<u8>> = Table::exact(FAMILY, "meta.raft_committed", b"raft_committed").own();
        /// A member of home's group: the last entry purged from its Raft log.
        pub const RAFT_PURGED: Table<Vec<u8>> = Table::exact(FAMILY, "meta.raft_purged", b"raft_purged").own();
        /// A member of home's group: the last entry it applied, and the
        /// group's membership then (written with the entry's writes).
        pub const RAFT_APPLIED: Table<Vec<u8>> = Table::exact(FAMILY, "meta.raft_applied", b"raft_applied").own();
        /// A member of home's group: the meta of its current snapshot file,
        /// so a file that does not belong to this store is known.
        pub const RAFT_SNAPSHOT: Table<Vec<u8>> = Table::exact(FAMILY, "meta.raft_snapshot", b"raft_snapshot").own();
        /// The node's own tables of `meta`: never part of the group's state.
        pub const OWN: [crate::Schema; 9] = [
            *SCHEMA.schema(),
            *MIGRATING.schema(),
            *WRITE_PROBE.schema(),
            *INDEX_APPLIED_SEQ.schema(),
            *RAFT_VOTE.schema(),
            *RAFT_COMMITTED.schema(),
            *RAFT_PURGED.schema(),
            *RAFT_APPLIED.schema(),
            *RAFT_SNAPSHOT.schema(),
        ];
        /// A read region: why it stopped applying home's log, once home's
        /// history was found to differ from its own (kept across restarts).
        pub const LOG_FORK: Table<String> = Table::exact(FAMILY, "meta.log_fork", b"log_fork");
        /// Expired callers whose receipts this node has forgotten, and when.
        pub const EXPIRED_FORGOTTEN: Table<UnixMs> =
            Table::part(FAMILY, "meta.expired_forgotten", b"expired_forgotten\0", "`expired_forgotten` ‖ company uuid");
        /// A region: its receipt key rotations (their seeds).
        pub const RECEIPT_KEY_ROTATIONS: Table<Vec<[u8; 32]>> =
            Table::exact(FAMILY, "meta.receipt_key_rotations", b"receipt_key_rotations");
        /// The service keys' seeds, wrapped under the operator's key-encryption key.
        pub const SERVICE_KEY_SEEDS_WRAPPED: Table<Vec<u8>> =
            Table::exact(FAMILY, "meta.service_key_seeds_wrapped", b"service_key_seeds_wrapped");
        /// Home: the service keys' rotations, wrapped likewise.
        pub const SERVICE_KEY_ROTATIONS_WRAPPED: Table<Vec<u8>> =
            Table::exact(FAMILY, "meta.service_key_rotations_wrapped", b"service_key_rotations_wrapped");
        /// When the service keys were first drawn.
        pub const SERVICE_KEYS_CREATED_AT: Table<UnixMs> =
            Table::exact(FAMILY, "meta.service_keys_created_at", b"service_keys_created_at");
        /// The sandbox corpus's own AI company.
        pub const SANDBOX_COMPANY: Table<String> = Table::exact(FAMILY, "meta.sandbox_company", b"sandbox_company");
        /// The sandbox corpus's own businesses.
        pub const SANDBOX_BUSINESSES: Table<Vec<String>> =
            Table::exact(FAMILY, "meta.sandbox_businesses", b"sandbox_businesses");
        /// The sandbox corpus's campaigns, in the order the corpus lists them.
        pub const SANDBOX_CAMPAIGNS: Table<Vec<String>> =
            Table::exact(FAMILY, "meta.sandbox_campaigns", b"sandbox_campaigns");
        /// A sandbox home: when its corpus was last republished.
        pub const SANDBOX_REPUBLISHED_AT: Table<UnixMs> =
            Table::exact(FAMILY, "meta.sandbox_republished_at", b"sandbox_republished_at");
        /// Home, sandbox: the UTC day each business last used the service.
        pub const BUSINESS_USED: Table<UnixMs> =
            Table::part(FAMILY, "meta.business_used", b"business_used\0", "`business_used` ‖ business uuid");
    }

    /// `key_set` (replicated): the key set home certified.
    pub mod key_set {
        use super::Table;
        pub const FAMILY: &str = "key_set";
        /// Its entries, each the JSON of a `KeyEntry`.
        pub const ENTRIES: Table<Vec<String>> = Table::exact(FAMILY, "key_set.entries", b"entries");
        /// The signed key set document.
        pub const DOCUMENT: Table<String> = Table::exact(FAMILY, "key_set.document", b"document");
        /// The signed key directory.
        pub const DIRECTORY: Table<String> = Table::exact(FAMILY, "key_set.directory", b"key_directory");
    }

    /// `ad_book`: a region's own book of ads.
    pub mod ad_book {
        use super::{Micros, Table};
        use crate::Named;
        pub const FAMILY: &str = "ad_book";
        /// The family by name: what an older build kept whole under `book`
        /// is deleted by it.
        pub const RAW: Named = Named(FAMILY);
        /// The campaign leases it holds.
        pub const LEASES: Table<svc_core::ads::ledger::Held> =
            Table::part(FAMILY, "ad_book.leases", b"lease\0", "`lease` ‖ campaign id").most(super::ALL_OF_THEM);
        /// Its sequences: the last analytics event's (`event_seq`), the last
        /// ad fact's (`fact_seq`), its place in home's ad feed (`feed_cursor`).
        pub const EVENT_SEQ: Table<u64> = Table::exact(FAMILY, "ad_book.event_seq", b"event_seq");
        pub const FACT_SEQ: Table<u64> = Table::exact(FAMILY, "ad_book.fact_seq", b"fact_seq");
        pub const FEED_CURSOR: Table<u64> = Table::exact(FAMILY, "ad_book.feed_cursor", b"feed_cursor");
        /// Home: the last fact taken from each region.
        pub const LEARNED: Table<u64> = Table::part(FAMILY, "ad_book.learned", b"learned\0", "`learned` ‖ region");
        /// The service's secret for conversation digests.
        pub const CONVERSATION_SECRET: Table<Vec<u8>> =
            Table::exact(FAMILY, "ad_book.conversation_secret", b"conversation_secret");
        /// The take rate in force, in basis points.
        pub const TAKE_BPS: Table<u32> = Table::exact(FAMILY, "ad_book.take_bps", b"take_bps");
        /// Each key's charged clicks on a campaign within an hour.
        pub const BILLED_CLICKS: Table<u32> = Table::part(
            FAMILY,
            "ad_book.billed_clicks",
            b"billed_clicks\0",
            "`billed_clicks` ‖ be(hour ms) key id ‖ campaign id",
        );
        /// Home: a campaign's credit (charges given back).
        pub const CREDIT: Table<Micros> = Table::part(FAMILY, "ad_book.credit", b"credit\0", "`credit` ‖ campaign id");
        /// Home: what it leased a region of a campaign, in all.
        pub const GRANTED: Table<Micros> =
            Table::part(FAMILY, "ad_book.granted", b"granted\0", "`granted` ‖ campaign id ‖ region");
        /// Home: what a region handed back unused of a campaign's leases.
        pub const RETURNED: Table<Micros> =
            Table::part(FAMILY, "ad_book.returned", b"returned\0", "`returned` ‖ campaign id ‖ region");
        /// Home: what it credited back of a region's charges to a campaign.
        pub const CREDITED: Table<Micros> =
            Table::part(FAMILY, "ad_book.credited", b"credited\0", "`credited` ‖ campaign id ‖ region");
    }

    pub const BUSINESSES: Table<model::Business> = Table::new("businesses", "business uuid").most(ALL_OF_THEM);
    pub const CERTIFICATES: Table<model::CertificateIssuance> =
        Table::new("certificates", "uuid ‖ be(issued_at ms) ‖ cert_id");
    pub const INTEGRATION_KEYS: Table<model::BusinessKey> = Table::new("integration_keys", "key id").most(ALL_OF_THEM);
    pub const PASSKEYS: Table<model::BusinessKey> = Table::new("passkeys", "key id").most(ALL_OF_THEM);
    /// Where business keys are found without reading every key: by
    /// business (`keys::business_key`, the key's family) and by a sandbox
    /// key's bearer digest (`keys::sandbox_bearer`, its key id). Written
    /// with the key; replicated.
    pub const KEY_INDEX: Table<String> = Table::new(
        "key_index",
        "`b` ‖ business uuid ‖ key id (the key's family); `t` ‖ a sandbox key's bearer digest (its key id)",
    );
    pub const MANDATES: Table<model::MandateRecord> = Table::new("mandates", "key id ‖ mandate id");
    pub const AI_POLICIES: Table<model::AiPolicyVersion> = Table::new("ai_policies", "uuid ‖ be(version)");
    pub const CUSTODY: Table<model::CustodyRecord> = Table::new("custody", "uuid ‖ be(issued_at ms) ‖ statement id");
    pub const COMPANIES: Table<model::Company> = Table::new("companies", "company uuid").most(ALL_OF_THEM);
    pub const GROUPS: Table<model::Group> = Table::new("groups", "group id").most(ALL_OF_THEM);
    pub const RETRIEVAL_KEYS: Table<model::RetrievalKey> = Table::new("retrieval_keys", "key id").most(ALL_OF_THEM);
    pub const BLOCKS: Table<model::Block> = Table::new("blocks", "business uuid ‖ group id");
    pub const TERMS: Table<model::TermsVersion> = Table::new("terms", "be(version)");
    pub const ALLOWANCES: Table<model::Allowance> = Table::new("allowances", "company uuid");
    /// Whether each company is prepaid, replicated so a read region knows
    /// whom it may serve without a lease while home is away.
    pub const BILLING_PLANS: Table<model::BillingPlan> = Table::new("billing_plans", "company uuid");
    pub const RECORDS: Table<model::RecordHead> = Table::new("records", "record id");
    pub const VERSIONS: Table<model::RecordVersion> = Table::new("versions", "record id ‖ be(generation)");
    pub const PUSHES: Table<model::PushRecord> = Table::new("pushes", "push id");
    /// Each push's leaves (the hashes under `~leaf_hashes` are not theirs).
    pub const PUSH_LEAVES: Table<model::PushLeaf> = Table::new("push_results", "push id ‖ be(leaf index)")
        .named_as("push_results.leaves")
        .shaped(not_leaf_hashes)
        .most(ALL_OF_THEM);
    /// Each push's leaf hashes, in order.
    pub const PUSH_LEAF_HASHES: Table<Vec<svc_core::merkle::Hash>> =
        Table::part("push_results", "push_results.leaf_hashes", b"~leaf_hashes\0", "`~leaf_hashes` ‖ push id");
    fn not_leaf_hashes(key: &[u8]) -> bool {
        !key.starts_with(b"~leaf_hashes\0")
    }
    /// A business's pushes by when they were received.
    pub const ATTEMPTS: Table<()> = Table::new("attempts", "business uuid ‖ be(received_at ms) ‖ push id");
    /// The last `seq` each key used.
    pub const LAST_SEQS: Table<u64> = Table::new("seqs", "key id").named_as("seqs.last").shaped(one_part);
    /// Each `seq` a key used, and what it carried.
    pub const SEQS: Table<model::SeqEntry> = Table::new("seqs", "key id ‖ be(seq)").shaped(two_parts);
    /// A key alone (no 0x00 in it), where a family also keys by key ‖ more.
    fn one_part(key: &[u8]) -> bool {
        !key.contains(&0)
    }
    fn two_parts(key: &[u8]) -> bool {
        key.contains(&0)
    }
    pub const IDEMPOTENCY: Table<model::IdempotentAnswer> = Table::new("idempotency", "key id ‖ `Idempotency-Key`");
    /// Billed requests, one per (key id, nonce).
    pub const USAGE: Table<model::UsageEvent> =
        Table::new("usage", "key id ‖ nonce").shaped(two_parts).most(ALL_OF_THEM);
    /// Each key's publishing caps used so far.
    pub const USAGE_LEDGERS: Table<svc_core::publish::caps::UsageLedger> =
        Table::new("usage", "key id").named_as("usage.ledgers").shaped(one_part);
    /// Billed requests counted per company and UTC day.
    pub const USAGE_DAYS: Table<model::DayUsage> = Table::new("usage_days", "company uuid ‖ `YYYY-MM-DD`");
    /// Receipts this region issued, by its own sequence (served order).
    pub const RECEIPTS: Table<model::StoredReceipt> = Table::new("receipts", "be(seq)");
    /// Receipts by group and time: group, served ms, sequence.
    pub const RECEIPTS_BY_GROUP: Table<()> = Table::new(
        "receipts_by_group",
        "group id ‖ be(served ms) be(seq), then ‖ region for a region's receipt at home",
    )
    .most(ALL_OF_THEM);
    /// Each receipt's served time and Merkle leaf hash, by its sequence:
    /// what folding reads, a fraction of the receipt's size.
    pub const RECEIPT_LEAVES: Table<model::ReceiptLeaf> = Table::new("receipt_leaves", "be(seq)");
    /// Each receipt's sequence by its leaf hash, written as it is stored, so
    /// a proof finds its part without the fold writing every place.
    pub const RECEIPT_SEQS: Table<u64> = Table::new("receipt_seqs", "leaf hash (32 bytes)");
    /// Analytics: business, hour, country, group → counts, folded from receipts.
    pub const ANALYTICS: Table<model::HourCounts> =
        Table::new("analytics", "business uuid ‖ be(hour ms) ‖ country ‖ group id");
    /// Businesses whose authorised endpoints are suspended.
    pub const ENDPOINTS: Table<model::EndpointsSuspension> = Table::new("endpoints", "business uuid");
    /// Claimed nonces by expiry: expires (Unix seconds), key id, nonce.
    pub const NONCES: Table<()> = Table::new("nonces", "be(expires, Unix s) key id ‖ nonce").shaped(by_expiry);
    /// What an older build stored, rekeyed by expiry at start.
    pub const LEGACY_NONCES: Table<i64> =
        Table::new("nonces", "key id ‖ nonce (an older build's; its value the expiry)")
            .named_as("nonces.legacy")
            .shaped(not_by_expiry);
    /// An expiry's first byte is 0 until 2^56 seconds; a key id's never is.
    fn by_expiry(key: &[u8]) -> bool {
        key.first() == Some(&0)
    }
    fn not_by_expiry(key: &[u8]) -> bool {
        !by_expiry(key)
    }
    pub const UPLOADS: Table<model::UploadRecord> = Table::new("uploads", "upload id");
    /// Home-only index: business, type, record id.
    pub const CATALOGUE: Table<()> =
        Table::new("catalogue", "business uuid ‖ record type ‖ record id").most(ALL_OF_THEM);
    /// Home: allowance units set aside for regions, by lease id.
    pub const LEASES_GRANTED: Table<model::GrantedLease> =
        Table::new("leases_granted", "be(lease id)").most(ALL_OF_THEM);
    /// A read region: the lease it serves each company from.
    pub const LEASES_HELD: Table<model::HeldLease> = Table::new("leases_held", "company uuid").most(ALL_OF_THEM);
    /// Folded receipt roots, by region and first receipt: a region's own,
    /// and at home every region's.
    pub const RECEIPT_ROOTS: Table<model::ReceiptRoot> =
        Table::new("receipt_roots", "region ‖ be(first seq)").most(ALL_OF_THEM);
    /// Home: leaves waiting for the next hourly sequencing, by leaf hash.
    pub const TLOG_PENDING: Table<model::PendingLeaf> = Table::new("tlog_pending", "leaf hash").most(ALL_OF_THEM);
    /// The transparency log (replicated): leaves by index, the index of each
    /// leaf hash, and every signed checkpoint by tree size.
    pub const TLOG_LEAVES: Table<model::LogLeaf> = Table::new("tlog_leaves", "be(index)");
    pub const TLOG_INDEX: Table<u64> = Table::new("tlog_index", "leaf hash");
    pub const TLOG_CHECKPOINTS: Table<model::LogCheckpoint> = Table::new("tlog_checkpoints", "be(tree size)");
    /// Witnesses' cosignatures (replicated): by tree size, then witness.
    pub const TLOG_COSIGNATURES: Table<model::Cosignature> =
        Table::new("tlog_cosignatures", "be(tree size) witness name");
    /// A region's folded receipts: each receipt's leaf hash to its part and
    /// place, and each part's leaf hashes (for the first level of a proof).
    pub const RECEIPT_PLACES: Table<model::ReceiptPlace> =
        Table::new("receipt_places", "leaf hash (folds of an older build; read only)");
    pub const RECEIPT_PARTS: Table<Vec<svc_core::merkle::Hash>> = Table::new("receipt_parts", "be(first seq)");
    /// Home: every read region's receipts as the region shipped them, so
    /// a group's receipts list whole at home even after a region is lost.
    pub const REGION_RECEIPTS: Table<model::StoredReceipt> = Table::new("region_receipts", "region ‖ be(seq)");
    /// What domain assurance found of each domain a business file lists
    /// (replicated; the verify page's `endpoints.domains`).
    pub const DOMAINS: Table<svc_core::assurance::DomainAssurance> = Table::new("domains", "business uuid ‖ domain");
    /// Sandbox AI companies whose data expired (replicated): each node
    /// forgets their groups' receipts.
    pub const EXPIRED_CALLERS: Table<model::ExpiredCaller> = Table::new("expired_callers", "AI company uuid");
    /// The Terms each AI company accepted, version and hash (replicated).
    pub const TERMS_ACCEPTED: Table<model::TermsAcceptance> = Table::new("terms_accepted", "AI company uuid");
    /// AI companies that opted in to the key directory (replicated).
    pub const DIRECTORY: Table<model::DirectoryListing> = Table::new("directory", "AI company uuid").most(ALL_OF_THEM);
    /// How fresh each business expects its records of a type to be
    /// (replicated; served on rows as `freshness_expectation`).
    pub const FRESHNESS: Table<String> = Table::new("freshness", "business uuid ‖ record type");
    /// Home: the log sequence of each record's last change (`live_in`).
    pub const RECORD_SEQS: Table<u64> = Table::new("record_seqs", "record id");
    /// The replication log's running hash (`svc_core::log_chain`) at each
    /// entry: home's as it committed the entry, a region's as home sent it.
    pub const LOG_CHAIN: Table<[u8; 32]> = Table::new("log_chain", "be(seq)");
    /// A member of home's group: its Raft log, each entry (postcard,
    /// `svc_consensus`) by its index.
    pub const RAFT_LOG: Table<Vec<u8>> = Table::new("raft_log", "be(index)").own();
    /// Deleted records whose bytes every node purges (replicated): by the
    /// sequence of the delete's log entry, then the record id.
    pub const PURGES: Table<model::Purge> = Table::new("purges", "be(seq of the delete's entry) ‖ record id");
    /// Home: the portals' people by business uuid ‖ person id (`Person`),
    /// and by e-mail address (`PersonRef`).
    pub const PEOPLE: Table<model::Person> = Table::new("people", "business uuid ‖ person id");
    pub const PEOPLE_EMAILS: Table<model::PersonRef> = Table::new("people_emails", "lower-case e-mail address");
    /// Home: portal invitations, sessions and WebAuthn ceremonies, each by
    /// the SHA-256 of its secret (ceremonies by their random id).
    pub const INVITATIONS: Table<model::Invitation> = Table::new("invitations", "SHA-256 of the token");
    /// Home: each account's open invitations, by account uuid ‖ SHA-256 of
    /// the token (its owners list, renew and cancel them).
    pub const ACCOUNT_INVITATIONS: Table<()> = Table::new("account_invitations", "account uuid ‖ SHA-256 of the token");
    pub const PORTAL_SESSIONS: Table<model::PortalSession> = Table::new("portal_sessions", "SHA-256 of the token");
    pub const CEREMONIES: Table<model::Ceremony> = Table::new("ceremonies", "the ceremony's random id");
    /// Home: the sealing key the service holds for a business with hosted
    /// signing on, by business uuid (`HostedKey`); deleted when it ends.
    pub const HOSTED_KEYS: Table<model::HostedKey> = Table::new("hosted_keys", "business uuid").most(ALL_OF_THEM);
    /// Home: when each person last dismissed the portal's notices, by
    /// business uuid ‖ person id (`UnixMs`).
    pub const NOTICES_SEEN: Table<svc_core::time::UnixMs> = Table::new("notices_seen", "business uuid ‖ person id");
    /// Home: the records each business withdrew and has not deleted or
    /// published again, keyed as `catalogue` is (the portal lists them).
    pub const WITHDRAWN: Table<()> = Table::new("withdrawn", "business uuid ‖ record type ‖ record id");
    /// Campaigns by id (`Campaign`, replicated).
    pub const CAMPAIGNS: Table<model::Campaign> = Table::part("campaigns", "campaigns", b"cmp_", "campaign id");
    /// A token rewritten with every campaign change, so a region reads
    /// the campaigns again only when one changed.
    pub const CAMPAIGNS_CHANGED: Table<u64> = Table::exact("campaigns", "campaigns.changed", b"~changed");
    /// Home: each campaign's money, leased to regions
    /// (`svc_core::ads::ledger::Ledger`).
    pub const CAMPAIGN_LEDGERS: Table<svc_core::ads::ledger::Ledger> = Table::new("campaign_ledgers", "campaign id");
    /// A region's own: each render or click token's confirmations, by the
    /// token's time (ms, big-endian) ‖ its id ‖ 0xff ‖ the confirmation's
    /// number (`AdConfirmation`, one per key, appended).
    pub const AD_TOKENS: Table<model::AdConfirmation> =
        Table::new("ad_tokens", "be(token ms) token id 0xff be32(n)").shaped(a_confirmation);
    /// A token's whole list, as an older build kept it (read, then deleted).
    pub const LEGACY_AD_TOKENS: Table<model::AdToken> =
        Table::new("ad_tokens", "be(token ms) token id").named_as("ad_tokens.legacy").shaped(not_a_confirmation);
    /// A confirmation's key ends 0xff and a 4-byte number; a token id is text.
    fn a_confirmation(key: &[u8]) -> bool {
        key.len() > 13 && key[key.len() - 5] == 0xff
    }
    fn not_a_confirmation(key: &[u8]) -> bool {
        !a_confirmation(key)
    }
    /// Every node's own: a conversation's renders and clicks of an item, by
    /// conversation digest ‖ 0 ‖ item id (`AdConversation`), kept 24 hours;
    /// its own confirmations and the other regions' from the ad feed.
    pub const AD_CONVERSATIONS: Table<model::AdConversation> =
        Table::new("ad_conversations", "conversation digest ‖ item id");
    /// The images ads name, fetched by the service when each ad was saved,
    /// by lower-case hex SHA-256 of their bytes (`AdImage`, replicated).
    pub const AD_IMAGES: Table<model::AdImage> = Table::new("ad_images", "lower-case hex SHA-256 of the image");
    /// Home: accepted ad renders and clicks not yet counted, by its own
    /// event sequence (`AdEvent`); the analytics actor folds and deletes them.
    pub const AD_EVENTS: Table<model::AdEvent> = Table::new("ad_events", "be(event seq)");
    /// Home: charges credited back, by reporting region ‖ 0 ‖ its fact's
    /// number (`AdRefund`); the analytics actor folds and deletes them.
    pub const AD_REFUNDS: Table<model::AdRefund> = Table::new("ad_refunds", "region ‖ be(fact number)");
    /// Home: ad renders, clicks and spend per business, hour, country and
    /// group (`AdHourCounts`, keyed as `analytics`).
    pub const AD_ANALYTICS: Table<model::AdHourCounts> =
        Table::new("ad_analytics", "business uuid ‖ be(hour ms) ‖ country ‖ group id");

    pub const ALL: &[&str] = &[
        meta::FAMILY,
        BUSINESSES.name(),
        CERTIFICATES.name(),
        INTEGRATION_KEYS.name(),
        PASSKEYS.name(),
        KEY_INDEX.name(),
        MANDATES.name(),
        AI_POLICIES.name(),
        CUSTODY.name(),
        COMPANIES.name(),
        GROUPS.name(),
        RETRIEVAL_KEYS.name(),
        BLOCKS.name(),
        TERMS.name(),
        ALLOWANCES.name(),
        BILLING_PLANS.name(),
        RECORDS.name(),
        VERSIONS.name(),
        PUSHES.name(),
        PUSH_LEAVES.name(),
        ATTEMPTS.name(),
        SEQS.name(),
        IDEMPOTENCY.name(),
        USAGE.name(),
        USAGE_DAYS.name(),
        RECEIPTS.name(),
        RECEIPTS_BY_GROUP.name(),
        RECEIPT_LEAVES.name(),
        RECEIPT_SEQS.name(),
        ANALYTICS.name(),
        ENDPOINTS.name(),
        NONCES.name(),
        UPLOADS.name(),
        CATALOGUE.name(),
        families::REPLOG,
        families::OUTBOX,
        families::CLAIMS_OUT,
        families::NONCE_FEED,
        LEASES_GRANTED.name(),
        LEASES_HELD.name(),
        key_set::FAMILY,
        RECEIPT_ROOTS.name(),
        TLOG_PENDING.name(),
        TLOG_LEAVES.name(),
        TLOG_INDEX.name(),
        TLOG_CHECKPOINTS.name(),
        TLOG_COSIGNATURES.name(),
        RECEIPT_PLACES.name(),
        RECEIPT_PARTS.name(),
        PURGES.name(),
        REGION_RECEIPTS.name(),
        RECORD_SEQS.name(),
        LOG_CHAIN.name(),
        RAFT_LOG.name(),
        FRESHNESS.name(),
        DOMAINS.name(),
        DIRECTORY.name(),
        EXPIRED_CALLERS.name(),
        TERMS_ACCEPTED.name(),
        PEOPLE.name(),
        PEOPLE_EMAILS.name(),
        INVITATIONS.name(),
        ACCOUNT_INVITATIONS.name(),
        PORTAL_SESSIONS.name(),
        CEREMONIES.name(),
        HOSTED_KEYS.name(),
        NOTICES_SEEN.name(),
        WITHDRAWN.name(),
        CAMPAIGNS.name(),
        CAMPAIGN_LEDGERS.name(),
        ad_book::FAMILY,
        AD_TOKENS.name(),
        AD_CONVERSATIONS.name(),
        AD_IMAGES.name(),
        AD_EVENTS.name(),
        AD_ANALYTICS.name(),
        families::AD_FEED,
        AD_REFUNDS.name(),
    ];
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Rocks(#[from] rocksdb::Error),
    #[error("a value in column family {cf} does not decode: {source}")]
    Decode { cf: &'static str, source: postcard::Error },
    #[error("a value does not encode: {0}")]
    Encode(postcard::Error),
    #[error(
        "a value in column family {cf} has version {version}, which this build does not know \
         (it reads version {VALUE_VERSION}); it was written by a newer build, or is corrupt"
    )]
    UnknownVersion { cf: &'static str, version: u8 },
    #[error("a value in column family {cf} is empty: it has no version byte")]
    NoVersion { cf: &'static str },
    #[error(
        "the replication log was written before values had versions; the node's start migrates it \
         (svc node), a bare open of the store does not"
    )]
    LegacyLog,
    /// A key that is not one of the table's was read or written through it.
    #[error("a key outside table {table} was used with it")]
    OutsideTable { table: &'static str },
    /// A scan of a table found more entries than it may read whole.
    #[error("table {table} has more than {most} entries in the range scanned whole")]
    TooMany { table: &'static str, most: usize },
    /// A change required a key to hold nothing, and it held a value.
    #[error("a value in column family {cf} already exists under this key")]
    Exists { cf: &'static str },
    /// A change required a key to hold what was read before, and another
    /// change had written it since.
    #[error("a value in column family {cf} changed since it was read")]
    Changed { cf: &'static str },
    #[error(
        "column family {cf} records schema version {version}, which this build does not know \
         (it knows {SCHEMA_VERSION}); it was written by a newer build"
    )]
    UnknownSchema { cf: &'static str, version: u8 },
    #[error("unknown column family {0}")]
    NoColumnFamily(&'static str),
    #[error("a write to column family {0}, which this build does not know")]
    UnknownColumnFamily(String),
    #[error("the log committer stopped")]
    Closed,
    #[error("replication log entry {seq} has no running hash")]
    Unchained { seq: u64 },
    /// This member of home's group does not lead it: only the leader writes.
    #[error("this member of home's group does not lead it{}", leader.as_deref().map(|l| format!(" (member {l} does)")).unwrap_or_default())]
    NotLeader { leader: Option<String> },
    /// Home's group could not commit a write (no quorum, or stopping).
    #[error("home's group did not commit the write: {0}")]
    Group(String),
    /// A file beside the store (a snapshot of home's group) could not be
    /// read or written.
    #[error("a file beside the store: {0}")]
    Io(#[from] std::io::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Rewrites one replication log entry stored before version bytes as this
/// build stores it (the entry, and each value it carries, versioned).
pub type LegacyLogEntry = fn(&[u8]) -> StoreResult<Vec<u8>>;

/// What the store may keep in memory: one LRU cache for the blocks of
/// every column family, their indexes and filters included, with the
/// memtables charged to it as they grow. Without it each of the
/// seventy-odd families had its own 32 MiB block cache and index blocks
/// held outside any cache, so the store's memory grew with the families
/// read and the data on disk rather than with a figure an operator sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The cache's capacity: blocks and memtables together.
    pub total_bytes: usize,
}

impl MemoryBudget {
    /// The default: 128 MiB.
    pub const DEFAULT: MemoryBudget = MemoryBudget { total_bytes: 128 << 20 };

    /// The memtables' share: half, so a write burst flushes before it
    /// pushes every cached block out.
    fn memtables_bytes(self) -> usize {
        self.total_bytes / 2
    }
}

/// A column family's options; its blocks go to the shared `cache`.
fn cf_options(name: &str, cache: &rocksdb::Cache) -> Options {
    let mut opts = Options::default();
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(cache);
    // Index and filter blocks in the cache too (ahead of data blocks), so
    // they count against the budget; level 0's stay pinned, being read by
    // every lookup.
    table.set_cache_index_and_filter_blocks(true);
    table.set_cache_index_and_filter_blocks_with_high_priority(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    if name == cf::RECEIPTS.name() {
        // Every answer writes a receipt of a few kilobytes: the bulk of what
        // a serving region writes. Its envelope is mostly base64, which LZ4
        // shrinks by a tenth at most, and compressing it was most of a
        // flush's CPU. A small memtable makes each flush short: a flush
        // takes a core from the workers for its length, and each 16 MiB one
        // (every 1.7 s at 2,000 answers a second) lined up with a slow
        // quarter second; 4 MiB ones, four times as often, mostly do not
        // (benches/README, issue 51).
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_write_buffer_size(4 << 20);
        // Room for a flush that falls behind, before writes wait for it.
        opts.set_max_write_buffer_number(4);
    } else {
        opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    }
    if name == cf::USAGE.name() {
        // Every billed answer asks whether its (key id, nonce) was counted,
        // and a new answer's never was: a bloom filter answers that miss
        // from memory instead of reading a block of every level's file.
        table.set_bloom_filter(10.0, false);
    }
    opts.set_block_based_table_factory(&table);
    opts
}

/// A value as stored: [`VALUE_VERSION`], then its postcard encoding.
pub fn encode_value<T: Serialize + ?Sized>(value: &T) -> StoreResult<Vec<u8>> {
    postcard::to_extend(value, vec![VALUE_VERSION]).map_err(StoreError::Encode)
}

/// Checks a stored value's version byte; answers the postcard after it.
pub fn versioned_body<'a>(cf: &'static str, bytes: &'a [u8]) -> StoreResult<&'a [u8]> {
    match bytes.split_first() {
        Some((&VALUE_VERSION, body)) => Ok(body),
        Some((&version, _)) => Err(StoreError::UnknownVersion { cf, version }),
        None => Err(StoreError::NoVersion { cf }),
    }
}

/// A value of `table` as stored: its version byte, then postcard.
pub fn encode<T: Serialize>(table: impl Holds<T>, value: &T) -> StoreResult<Vec<u8>> {
    postcard::to_extend(value, vec![table.schema().version]).map_err(StoreError::Encode)
}

/// A stored value of `table`: its version checked (an older one migrated),
/// then postcard.
pub fn decode<T: DeserializeOwned>(table: impl Holds<T>, bytes: &[u8]) -> StoreResult<T> {
    let schema = table.schema();
    let body = schema.body(bytes)?;
    postcard::from_bytes(&body).map_err(|source| StoreError::Decode { cf: schema.family, source })
}

/// The part of `prefix` a scan of `family` reads: the longer of the two
/// prefixes when one begins the other; `None` when they part (nothing).
fn within(family: impl Family, prefix: &[u8]) -> Option<&[u8]> {
    let own = family.prefix();
    if prefix.starts_with(own) {
        Some(prefix)
    } else if own.starts_with(prefix) {
        Some(own)
    } else {
        None
    }
}

/// The column family of this name, as the `'static` name the store uses.
pub fn cf_named(name: &str) -> Option<Named> {
    cf::ALL.iter().copied().find(|n| *n == name).map(Named)
}

/// Values given their version byte per migration write.
const MIGRATE_STEP: usize = 4_096;
/// At most this many value bytes per migration write.
const MIGRATE_STEP_BYTES: usize = 8 << 20;

/// A node's embedded database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<DB>,
    /// Rung after writes to the feeds regions long-poll.
    bells: Arc<bells::Bells>,
    /// Home's group, once this store joined it: where its batches go.
    group: Arc<std::sync::OnceLock<Arc<dyn Consensus>>>,
    /// Writes to the database since it opened (`writes`).
    writes: Arc<std::sync::atomic::AtomicU64>,
    /// The budget, the one block cache, and the memtables charged to it
    /// (`memory`).
    budget: MemoryBudget,
    cache: rocksdb::Cache,
    memtables: rocksdb::WriteBufferManager,
}

/// What the store holds in memory now (`Store::memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// The budget: the cache's capacity.
    pub capacity_bytes: usize,
    /// The cache's use: blocks, and the memtables charged to it.
    pub cache_bytes: usize,
    /// The memtables alone.
    pub memtables_bytes: usize,
}

impl Store {
    /// Opens (or creates) the store, migrates a store an older build wrote
    /// without version bytes, and refuses one whose schema or values carry
    /// a version this build does not know. A replication log written before
    /// version bytes is refused (`LegacyLog`): only `open_migrating`, with
    /// the replication module's rewrite (a node's start), migrates it.
    pub fn open(path: &Path) -> StoreResult<Store> {
        Self::open_migrating(path, MemoryBudget::DEFAULT, |_| Err(StoreError::LegacyLog))
    }

    /// Opens a store; a replication log entry written before version bytes
    /// is rewritten by `legacy_log_entry`, which the replication module
    /// provides (only it knows an entry's shape).
    pub fn open_migrating(path: &Path, memory: MemoryBudget, legacy_log_entry: LegacyLogEntry) -> StoreResult<Store> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.increase_parallelism(2);
        // Write files out a megabyte at a time: a flush that leaves tens of
        // megabytes dirty makes the kernel throttle every writer at once,
        // and the WAL appends of the serving path stall with it.
        opts.set_bytes_per_sync(1 << 20);
        opts.set_wal_bytes_per_sync(1 << 20);
        // No WAL recycling: a recycled file keeps what it held past the
        // point new writes reach, and a deleted record's bytes must leave
        // every file (`retention`).
        opts.set_avoid_unnecessary_blocking_io(true);
        // Every memtable together at most their share of the budget, the
        // largest flushed first, and charged to the block cache: each of the
        // seventy-odd column families may otherwise hold its own 64 MiB
        // unflushed, and after seeding 100,000 products a node kept a
        // gigabyte of WAL on disk and replayed it at each start.
        let cache = rocksdb::Cache::new_lru_cache(memory.total_bytes);
        let memtables = rocksdb::WriteBufferManager::new_write_buffer_manager_with_cache(
            memory.memtables_bytes(),
            false,
            cache.clone(),
        );
        opts.set_write_buffer_manager(&memtables);
        let cfs = cf::ALL.iter().map(|name| ColumnFamilyDescriptor::new(*name, cf_options(name, &cache)));
        let db = DB::open_cf_descriptors(&opts, path, cfs)?;
        let store = Store {
            db: Arc::new(db),
            bells: Arc::new(bells::Bells::new()),
            group: Default::default(),
            writes: Default::default(),
            budget: memory,
            cache,
            memtables,
        };
        store.check_schema(legacy_log_entry)?;
        Ok(store)
    }

    /// Each column family's schema: a recorded version must be one this
    /// build knows, and so must its first value's version byte; a family
    /// with no record was written before values had versions (or is new),
    /// and its values are given their byte now, then the record written.
    fn check_schema(&self, legacy_log_entry: LegacyLogEntry) -> StoreResult<()> {
        let meta = self.handle(cf::meta::FAMILY)?;
        let mut markers = self.batch();
        for &name in cf::ALL {
            match self.db.get_pinned_cf(meta, keys::schema(name))? {
                Some(recorded) => {
                    let version: u8 = decode(cf::meta::SCHEMA, &recorded)?;
                    if version != SCHEMA_VERSION {
                        return Err(StoreError::UnknownSchema { cf: name, version });
                    }
                    if let Some(first) = self.first_value(name)? {
                        versioned_body(name, &first)?;
                    }
                }
                None => {
                    let migrated = self.give_versions(name, legacy_log_entry)?;
                    if migrated > 0 {
                        tracing::info!(cf = name, values = migrated, "stored values given their version byte");
                    }
                    markers.put(cf::meta::SCHEMA, &keys::schema(name), &SCHEMA_VERSION);
                    markers.delete(cf::meta::MIGRATING, &keys::migrating(name));
                }
            }
        }
        if !markers.is_empty() {
            markers.commit()?;
        }
        Ok(())
    }

    /// The first value of a column family (in `meta`, the first that is not
    /// the store's own schema record).
    fn first_value(&self, name: &'static str) -> StoreResult<Option<Box<[u8]>>> {
        for item in self.db.iterator_cf(self.handle(name)?, IteratorMode::Start) {
            let (key, value) = item?;
            if !Self::is_schema_key(name, &key) {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    /// Keys of `meta` the store writes itself, already versioned.
    fn is_schema_key(name: &str, key: &[u8]) -> bool {
        name == cf::meta::FAMILY
            && [keys::meta::SCHEMA, keys::meta::MIGRATING]
                .iter()
                .any(|p| key.len() > p.len() && key.starts_with(p) && key[p.len()] == 0)
    }

    /// Prefixes every value of `name` with the version byte, in steps, each
    /// step with how far it got (`migrating ‖ <cf>`) in the same write, so a
    /// crash midway resumes after the last value rewritten and never gives
    /// a value two bytes. Answers how many values it rewrote.
    fn give_versions(&self, name: &'static str, legacy_log_entry: LegacyLogEntry) -> StoreResult<usize> {
        let handle = self.handle(name)?;
        let progress = keys::migrating(name);
        let mut after: Option<Vec<u8>> = self
            .db
            .get_pinned_cf(self.handle(cf::meta::FAMILY)?, &progress)?
            .map(|v| decode(cf::meta::MIGRATING, &v))
            .transpose()?;
        let mut total = 0;
        loop {
            let mode = match &after {
                Some(k) => IteratorMode::From(k, Direction::Forward),
                None => IteratorMode::Start,
            };
            let mut batch = self.batch();
            let (mut count, mut bytes, mut last) = (0, 0, None);
            for item in self.db.iterator_cf(handle, mode) {
                let (key, value) = item?;
                if after.as_deref() == Some(&key[..]) || Self::is_schema_key(name, &key) {
                    continue;
                }
                batch.batch.put_cf(handle, &key, Self::versioned_legacy(name, &value, legacy_log_entry)?);
                count += 1;
                bytes += value.len();
                last = Some(key.to_vec());
                if count >= MIGRATE_STEP || bytes >= MIGRATE_STEP_BYTES {
                    break;
                }
            }
            let Some(last) = last else { return Ok(total) };
            batch.put(cf::meta::MIGRATING, &progress, &last);
            batch.commit()?;
            total += count;
            after = Some(last);
        }
    }

    /// A value an older build stored, as this build stores it: the version
    /// byte before it. A replication log entry also carries stored values
    /// (its puts): each of those is given its byte too.
    fn versioned_legacy(name: &'static str, value: &[u8], legacy_log_entry: LegacyLogEntry) -> StoreResult<Vec<u8>> {
        if name == cf::families::REPLOG {
            return legacy_log_entry(value);
        }
        let mut versioned = Vec::with_capacity(value.len() + 1);
        versioned.push(VALUE_VERSION);
        versioned.extend_from_slice(value);
        Ok(versioned)
    }

    /// Writes every memtable out, then rewrites each key range (family,
    /// first key, last key, both included) down to its family's last level:
    /// what an overwrite or delete replaced there leaves the files (and the
    /// WAL files that held it are no longer needed).
    pub fn purge_replaced(&self, ranges: &[(&'static str, Vec<u8>, Vec<u8>)]) -> StoreResult<()> {
        for name in cf::ALL {
            self.db.flush_cf(self.handle(name)?)?;
        }
        let mut options = rocksdb::CompactOptions::default();
        options.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        for (name, first, last) in ranges {
            self.db.compact_range_cf_opt(self.handle(name)?, Some(first), Some(last), &options);
        }
        Ok(())
    }

    fn handle(&self, name: &'static str) -> StoreResult<&rocksdb::ColumnFamily> {
        self.db.cf_handle(name).ok_or(StoreError::NoColumnFamily(name))
    }

    pub fn get<T: DeserializeOwned>(&self, table: impl Holds<T>, key: &[u8]) -> StoreResult<Option<T>> {
        table.admit(key)?;
        match self.db.get_pinned_cf(self.handle(table.name())?, key)? {
            Some(bytes) => Ok(Some(decode(table, &bytes)?)),
            None => Ok(None),
        }
    }

    /// Whether `key` holds exactly `encoded` (as `encode` wrote it).
    pub fn holds(&self, table: impl Family, key: &[u8], encoded: &[u8]) -> StoreResult<bool> {
        table.admit(key)?;
        Ok(self.db.get_pinned_cf(self.handle(table.name())?, key)?.is_some_and(|v| &v[..] == encoded))
    }

    pub fn contains(&self, table: impl Family, key: &[u8]) -> StoreResult<bool> {
        table.admit(key)?;
        Ok(self.db.get_pinned_cf(self.handle(table.name())?, key)?.is_some())
    }

    /// The table's (key, value)s whose key starts with `prefix`, in key
    /// order, starting at `from` (inclusive) when given, at most `limit`.
    pub fn scan<T: DeserializeOwned>(
        &self,
        table: impl Holds<T>,
        prefix: &[u8],
        from: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<(Vec<u8>, T)>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.walk(table, prefix, from, |key, value| {
            out.push((key.to_vec(), value));
            out.len() < limit
        })?;
        Ok(out)
    }

    /// Every (key, value) of the table under `prefix`, when they are at most
    /// the table's `most`; more is [`StoreError::TooMany`], read no further.
    pub fn scan_all<T: DeserializeOwned>(&self, table: impl Holds<T>, prefix: &[u8]) -> StoreResult<Vec<(Vec<u8>, T)>> {
        let most = table.schema().most;
        let all = self.scan(table, prefix, None, most.saturating_add(1))?;
        if all.len() > most {
            return Err(StoreError::TooMany { table: table.schema().table, most });
        }
        Ok(all)
    }

    /// Hands each of the table's (key, value)s under `prefix`, in key order
    /// from `from` (inclusive) when given, to `each`, one at a time, until
    /// `each` answers false: a pass over a whole table holds one value at a
    /// time. Keys of other tables sharing the family are passed over.
    pub fn walk<T: DeserializeOwned>(
        &self,
        table: impl Holds<T>,
        prefix: &[u8],
        from: Option<&[u8]>,
        mut each: impl FnMut(&[u8], T) -> bool,
    ) -> StoreResult<()> {
        let Some(prefix) = within(table, prefix) else { return Ok(()) };
        let start = from.filter(|f| *f > prefix).unwrap_or(prefix);
        let iter = self.db.iterator_cf(self.handle(table.name())?, IteratorMode::From(start, Direction::Forward));
        for item in iter {
            let (key, value) = item?;
            if !key.starts_with(prefix) {
                break;
            }
            if table.admit(&key).is_err() {
                continue;
            }
            if !each(&key, decode(table, &value)?) {
                break;
            }
        }
        Ok(())
    }

    /// The table's keys (not their values) that start with `prefix`, in
    /// order, at most `limit`: what a removal of everything under a prefix
    /// deletes.
    pub fn scan_keys(&self, table: impl Family, prefix: &[u8], limit: usize) -> StoreResult<Vec<Vec<u8>>> {
        let Some(prefix) = within(table, prefix) else { return Ok(Vec::new()) };
        let iter = self.db.iterator_cf(self.handle(table.name())?, IteratorMode::From(prefix, Direction::Forward));
        let mut out = Vec::new();
        for item in iter {
            let (key, _) = item?;
            if !key.starts_with(prefix) || out.len() >= limit {
                break;
            }
            if table.admit(&key).is_ok() {
                out.push(key.to_vec());
            }
        }
        Ok(out)
    }

    /// The table's entry with the greatest key at or before `at`.
    pub fn at_or_before<T: DeserializeOwned>(
        &self,
        table: impl Holds<T>,
        at: &[u8],
    ) -> StoreResult<Option<(Vec<u8>, T)>> {
        let iter = self.db.iterator_cf(self.handle(table.name())?, IteratorMode::From(at, Direction::Reverse));
        for item in iter {
            let (key, value) = item?;
            if !key.starts_with(table.prefix()) {
                break;
            }
            if table.admit(&key).is_ok() {
                return Ok(Some((key.to_vec(), decode(table, &value)?)));
            }
        }
        Ok(None)
    }

    /// The last key of a column family (the highest sequence of a log).
    pub fn last_key(&self, table: impl Family) -> StoreResult<Option<Vec<u8>>> {
        let mut iter = self.db.iterator_cf(self.handle(table.name())?, IteratorMode::End);
        match iter.next() {
            Some(item) => Ok(Some(item?.0.to_vec())),
            None => Ok(None),
        }
    }

    pub fn batch(&self) -> Batch<'_> {
        let group = self.group.get().map(|_| Vec::new());
        Batch { store: self, batch: WriteBatch::default(), group, error: None, rings: bells::Rings::default() }
    }

    /// Makes this store a member of home's group: from now on its batches'
    /// writes (but to its own tables) are committed by `consensus`, which
    /// applies them here with [`apply_group_writes`](Self::apply_group_writes).
    /// A store joins once.
    pub fn join_group(&self, consensus: Arc<dyn Consensus>) -> StoreResult<()> {
        self.group.set(consensus).map_err(|_| StoreError::Group("this store already joined a group".into()))
    }

    /// The group's state in this store: every value but the node's own, as
    /// puts (a snapshot a member installs with
    /// [`replace_group_state`](Self::replace_group_state)), with the value
    /// of one of its own tables as of the same moment. It is read whole
    /// into memory.
    pub fn group_state<T: DeserializeOwned>(&self, with: (Table<T>, &[u8])) -> StoreResult<(Vec<Write>, Option<T>)> {
        let (mut writes, mut value) = (Vec::new(), None);
        self.each_group_value(
            with,
            |read| {
                value = read;
                Ok(())
            },
            |write| {
                writes.push(write);
                Ok(())
            },
        )?;
        Ok((writes, value))
    }

    /// [`group_state`](Self::group_state) without holding it: `with`'s
    /// value to `first`, then each value of the group's state to `each`,
    /// all read at one point in time.
    pub fn each_group_value<T: DeserializeOwned>(
        &self,
        with: (Table<T>, &[u8]),
        first: impl FnOnce(Option<T>) -> StoreResult<()>,
        mut each: impl FnMut(Write) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let snapshot = self.db.snapshot();
        let (table, key) = with;
        table.admit(key)?;
        first(snapshot.get_cf(self.handle(table.name())?, key)?.map(|bytes| decode(table, &bytes)).transpose()?)?;
        for &name in cf::ALL.iter().filter(|name| **name != cf::RAFT_LOG.name()) {
            for item in snapshot.iterator_cf(self.handle(name)?, IteratorMode::Start) {
                let (key, value) = item?;
                if name == cf::meta::FAMILY && Self::own_meta(&key) {
                    continue;
                }
                each(Write::Put { cf: name.to_owned(), key: key.to_vec(), value: value.to_vec() })?;
            }
        }
        Ok(())
    }

    /// Whether this store holds any of the group's state (a value but its
    /// own): a lone home's store does, a new member's does not. It reads at
    /// most the node's own few `meta` keys before the answer.
    pub fn holds_group_state(&self) -> StoreResult<bool> {
        for &name in cf::ALL.iter().filter(|name| **name != cf::RAFT_LOG.name()) {
            for item in self.db.iterator_cf(self.handle(name)?, IteratorMode::Start) {
                let (key, _) = item?;
                if !(name == cf::meta::FAMILY && Self::own_meta(&key)) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn own_meta(key: &[u8]) -> bool {
        cf::meta::OWN.iter().any(|schema| schema.keys.admit(key))
    }

    /// Replaces the group's state in this store with `state` (from
    /// [`group_state`](Self::group_state)), and writes `own` with it, in
    /// one synced write.
    pub fn replace_group_state(
        &self,
        state: impl IntoIterator<Item = StoreResult<Write>>,
        own: Batch<'_>,
    ) -> StoreResult<()> {
        let ReadyBatch(mut batch, mut rings, _) = own.ready()?;
        for &name in cf::ALL.iter().filter(|name| **name != cf::RAFT_LOG.name()) {
            let handle = self.handle(name)?;
            if name == cf::meta::FAMILY {
                for item in self.db.iterator_cf(handle, IteratorMode::Start) {
                    let (key, _) = item?;
                    if !Self::own_meta(&key) {
                        batch.delete_cf(handle, key);
                    }
                }
            } else if let Some((last, _)) = self.db.iterator_cf(handle, IteratorMode::End).next().transpose()? {
                let mut past_last = last.to_vec();
                past_last.push(0);
                batch.delete_range_cf(handle, Vec::new(), past_last);
            }
        }
        for write in state {
            self.add_group_write(&mut batch, &mut rings, &write?)?;
        }
        self.write_synced(batch, rings)
    }

    /// A batch that writes only this node's own tables, even in a group.
    pub fn batch_own(&self) -> Batch<'_> {
        Batch { store: self, batch: WriteBatch::default(), group: None, error: None, rings: bells::Rings::default() }
    }

    /// Applies writes the group committed, with `own` (this member's record
    /// of what it applied) in the same synced write.
    pub fn apply_group_writes(&self, writes: &[Write], own: Batch<'_>) -> StoreResult<()> {
        let ReadyBatch(mut batch, mut rings, _) = own.ready()?;
        self.add_group_writes(&mut batch, &mut rings, writes)?;
        self.write_synced(batch, rings)
    }

    fn add_group_writes(&self, batch: &mut WriteBatch, rings: &mut bells::Rings, writes: &[Write]) -> StoreResult<()> {
        writes.iter().try_for_each(|write| self.add_group_write(batch, rings, write))
    }

    fn add_group_write(&self, batch: &mut WriteBatch, rings: &mut bells::Rings, write: &Write) -> StoreResult<()> {
        let (Write::Put { cf, .. } | Write::Delete { cf, .. } | Write::DeleteRange { cf, .. }) = write;
        let family = cf_named(cf).ok_or_else(|| StoreError::UnknownColumnFamily(cf.clone()))?;
        let handle = self.handle(family.0)?;
        rings.note(family.0);
        match write {
            Write::Put { key, value, .. } => {
                versioned_body(family.0, value)?;
                batch.put_cf(handle, key, value)
            }
            Write::Delete { key, .. } => batch.delete_cf(handle, key),
            Write::DeleteRange { from, to, .. } => batch.delete_range_cf(handle, from, to),
        }
        Ok(())
    }

    fn write_synced(&self, batch: WriteBatch, rings: bells::Rings) -> StoreResult<()> {
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db.write_opt(batch, &opts)?;
        self.count_write();
        self.bells.ring(rings);
        Ok(())
    }

    /// A single put, synced.
    pub fn put<T: Serialize>(&self, table: impl Holds<T>, key: &[u8], value: &T) -> StoreResult<()> {
        let mut batch = self.batch();
        batch.put(table, key, value);
        batch.commit()
    }
}

/// An atomic group of writes. `commit` writes them all or none, synced to
/// disk: whatever a commit acknowledged survives a crash.
pub struct Batch<'a> {
    store: &'a Store,
    /// What the node writes itself: everything, or in a group its own tables.
    batch: WriteBatch,
    /// In a group, the writes the group commits.
    group: Option<Vec<Write>>,
    error: Option<StoreError>,
    rings: bells::Rings,
}

impl Batch<'_> {
    /// Writes `value`, with its version byte.
    pub fn put<T: Serialize>(&mut self, table: impl Holds<T>, key: &[u8], value: &T) {
        let cf = table.name();
        match (self.store.handle(cf), table.admit(key).and_then(|()| encode(table, value))) {
            (Ok(handle), Ok(bytes)) => {
                self.rings.note(cf);
                match &mut self.group {
                    Some(group) if !table.own() => {
                        group.push(Write::Put { cf: cf.to_owned(), key: key.to_vec(), value: bytes })
                    }
                    _ => self.batch.put_cf(handle, key, bytes),
                }
            }
            (Err(e), _) | (_, Err(e)) => self.error = Some(e),
        }
    }

    /// Writes bytes already encoded as a stored value ([`encode_value`]:
    /// home's replicated values, applied as they came). A value without a
    /// version byte this build knows fails the batch.
    pub fn put_raw(&mut self, family: impl Family, key: &[u8], value: &[u8]) {
        let cf = family.name();
        match (self.store.handle(cf), family.admit(key).and_then(|()| versioned_body(cf, value))) {
            (Ok(handle), Ok(_)) => {
                self.rings.note(cf);
                match &mut self.group {
                    Some(group) if !family.own() => {
                        group.push(Write::Put { cf: cf.to_owned(), key: key.to_vec(), value: value.to_vec() })
                    }
                    _ => self.batch.put_cf(handle, key, value),
                }
            }
            (Err(e), _) | (_, Err(e)) => self.error = Some(e),
        }
    }

    /// Fails the batch: its commit answers `error`.
    pub fn fail(&mut self, error: StoreError) {
        self.error = Some(error);
    }

    pub fn delete(&mut self, family: impl Family, key: &[u8]) {
        match (family.admit(key).and_then(|()| self.store.handle(family.name())), &mut self.group) {
            (Ok(_), Some(group)) if !family.own() => {
                group.push(Write::Delete { cf: family.name().to_owned(), key: key.to_vec() })
            }
            (Ok(handle), _) => self.batch.delete_cf(handle, key),
            (Err(e), _) => self.error = Some(e),
        }
    }

    /// Deletes every key from `from` up to, not including, `to`: one range
    /// tombstone, however many keys it covers.
    pub fn delete_range(&mut self, family: impl Family, from: &[u8], to: &[u8]) {
        match (self.store.handle(family.name()), &mut self.group) {
            (Ok(_), Some(group)) if !family.own() => {
                group.push(Write::DeleteRange { cf: family.name().to_owned(), from: from.to_vec(), to: to.to_vec() })
            }
            (Ok(handle), _) => self.batch.delete_range_cf(handle, from, to),
            (Err(e), _) => self.error = Some(e),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.batch.is_empty() && self.group.as_ref().is_none_or(Vec::is_empty)
    }

    pub fn commit(self) -> StoreResult<()> {
        self.write(true)
    }

    /// Commits without waiting for the disk: survives a crash of the process
    /// (the write-ahead log is in the operating system's hands) but not of the
    /// machine. For state that is cheap to lose that way, such as nonces.
    pub fn commit_unsynced(self) -> StoreResult<()> {
        self.write(false)
    }

    fn write(self, sync: bool) -> StoreResult<()> {
        let store = self.store.clone();
        store.write_ready(self.ready()?, sync)
    }

    /// The batch, checked, to be written later or from another thread.
    pub fn ready(self) -> StoreResult<ReadyBatch> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(ReadyBatch(self.batch, self.rings, self.group.unwrap_or_default())),
        }
    }
}

/// A checked batch of writes that owns its data: what the node writes
/// itself, and in a group what the group commits.
pub struct ReadyBatch(WriteBatch, bells::Rings, Vec<Write>);

impl Store {
    /// Writes a ready batch atomically; `sync` waits for the disk. In a
    /// group, the group commits (always synced) what is not the node's own,
    /// then the node writes its own part.
    pub fn write_ready(&self, batch: ReadyBatch, sync: bool) -> StoreResult<()> {
        let ReadyBatch(own, rings, group) = batch;
        if !group.is_empty() {
            let consensus = self.group.get().ok_or_else(|| StoreError::Group("this store is in no group".into()))?;
            consensus.commit(group)?;
        }
        if !own.is_empty() {
            let mut opts = WriteOptions::default();
            opts.set_sync(sync);
            self.db.write_opt(own, &opts)?;
            self.count_write();
        }
        self.bells.ring(rings);
        Ok(())
    }

    /// How many writes this node made to its database since it opened (a
    /// write batch counts once, however many values it holds): what the
    /// search bench divides by its answers.
    pub fn writes(&self) -> u64 {
        self.writes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the store holds in memory against its budget.
    pub fn memory(&self) -> MemoryUse {
        MemoryUse {
            capacity_bytes: self.budget.total_bytes,
            cache_bytes: self.cache.get_usage(),
            memtables_bytes: self.memtables.get_usage(),
        }
    }

    fn count_write(&self) {
        self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sees each later write that puts into `cf`, one of the feeds home
    /// serves its regions (the replication log, the nonce and ad feeds);
    /// `None` for any other family.
    pub fn bell(&self, family: impl Family) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.bells.listen(family.name())
    }

    /// A token that changes with every write to `family`, one of the feeds
    /// with a bell, read from memory (what a cache keyed by the replication
    /// log's head compares, without a seek to the log's last key); `None`
    /// for any other family. It counts from the store's opening, and moves
    /// once the write is in the store.
    pub fn writes_to(&self, family: impl Family) -> Option<u64> {
        self.bells.count(family.name())
    }

    /// Writes one small synced value, as a probe of the disk: a full disk
    /// or a store in a background error fails it.
    pub fn probe_write(&self, now_ms: i64) -> StoreResult<()> {
        let mut batch = self.batch();
        batch.put(cf::meta::WRITE_PROBE, keys::meta::WRITE_PROBE, &now_ms);
        batch.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::legacy_store;

    #[test]
    fn batches_are_atomic_and_scans_are_ordered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut batch = store.batch();
        for n in [3u64, 1, 2] {
            batch.put(cf::FRESHNESS, &be(n), &format!("entry {n}"));
        }
        batch.commit().unwrap();
        let all: Vec<(Vec<u8>, String)> = store.scan(cf::FRESHNESS, &[], None, 10).unwrap();
        assert_eq!(all.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(), ["entry 1", "entry 2", "entry 3"]);
        assert_eq!(store.last_key(cf::FRESHNESS).unwrap(), Some(be(3).to_vec()));
        drop(store);
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.get::<String>(cf::FRESHNESS, &be(2)).unwrap().as_deref(), Some("entry 2"));
    }

    #[test]
    fn every_table_shares_one_cache_of_the_budget_and_the_memtables_count_against_it() {
        let dir = tempfile::tempdir().unwrap();
        let budget = MemoryBudget { total_bytes: 16 << 20 };
        let store = Store::open_migrating(dir.path(), budget, |_| Err(StoreError::LegacyLog)).unwrap();
        // RocksDB's own view: each family's cache is the budget's (each had
        // a 32 MiB cache of its own before).
        for &name in cf::ALL {
            let handle = store.db.cf_handle(name).unwrap();
            let capacity = store.db.property_int_value_cf(&handle, "rocksdb.block-cache-capacity").unwrap();
            assert_eq!(capacity, Some(16 << 20), "{name}");
        }
        let before = store.memory();
        assert_eq!(before.capacity_bytes, 16 << 20);
        let mut batch = store.batch();
        for n in 0..1_000u64 {
            batch.put(cf::FRESHNESS, &be(n), &"x".repeat(1_000));
        }
        batch.commit().unwrap();
        let after = store.memory();
        assert!(after.memtables_bytes >= 1_000_000, "{after:?}");
        // Charged to the cache, in whole reservations.
        assert!(after.cache_bytes >= after.memtables_bytes, "{after:?}");
        assert!(after.memtables_bytes <= budget.total_bytes / 2, "{after:?}");
    }

    /// A group of one in a unit test: takes each batch's group writes, and
    /// applies them (or refuses, as a follower would).
    struct Recorder {
        store: Store,
        taken: std::sync::Mutex<Vec<Vec<Write>>>,
        leads: bool,
    }

    impl Consensus for Recorder {
        fn commit(&self, writes: Vec<Write>) -> StoreResult<()> {
            if !self.leads {
                return Err(StoreError::NotLeader { leader: Some("2".into()) });
            }
            self.taken.lock().unwrap().push(writes.clone());
            self.store.apply_group_writes(&writes, self.store.batch_own())
        }
    }

    #[test]
    fn in_a_group_a_batch_goes_through_the_consensus_but_the_nodes_own_tables() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| Store::open(&dir.path().join(name)).unwrap();
        let (leader, follower) = (open("leader"), open("follower"));
        let recorder = Arc::new(Recorder { store: leader.clone(), taken: Default::default(), leads: true });
        leader.join_group(recorder.clone()).unwrap();
        assert!(leader.join_group(recorder.clone()).is_err(), "a store joins once");
        let mut batch = leader.batch();
        batch.put(cf::FRESHNESS, b"a", &"one".to_owned());
        batch.delete(cf::FRESHNESS, b"gone");
        batch.delete_range(cf::TLOG_INDEX, b"a", b"z");
        batch.put(cf::meta::INDEX_APPLIED_SEQ, keys::meta::INDEX_APPLIED_SEQ, &7u64);
        batch.commit().unwrap();
        let taken = recorder.taken.lock().unwrap().clone();
        assert_eq!(taken.len(), 1, "one batch, one proposal");
        let families: Vec<&str> = taken[0]
            .iter()
            .map(|w| match w {
                Write::Put { cf, .. } | Write::Delete { cf, .. } | Write::DeleteRange { cf, .. } => cf.as_str(),
            })
            .collect();
        assert_eq!(families, ["freshness", "freshness", "tlog_index"], "the node's own index progress stays out");
        assert_eq!(leader.get::<String>(cf::FRESHNESS, b"a").unwrap().as_deref(), Some("one"));
        assert_eq!(leader.get::<u64>(cf::meta::INDEX_APPLIED_SEQ, keys::meta::INDEX_APPLIED_SEQ).unwrap(), Some(7));

        // A follower writes none of the group's state itself, but its own.
        let refusing = Arc::new(Recorder { store: follower.clone(), taken: Default::default(), leads: false });
        follower.join_group(refusing).unwrap();
        assert!(matches!(
            follower.put(cf::FRESHNESS, b"a", &"mine".to_owned()),
            Err(StoreError::NotLeader { leader: Some(_) })
        ));
        assert_eq!(follower.get::<String>(cf::FRESHNESS, b"a").unwrap(), None);
        follower.probe_write(5).unwrap();

        // The group's state, read whole, holds the leader's values and
        // none of its own; installed elsewhere, it replaces what was there.
        let (state, applied) =
            leader.group_state((cf::meta::INDEX_APPLIED_SEQ, keys::meta::INDEX_APPLIED_SEQ)).unwrap();
        assert_eq!(applied, Some(7));
        assert!(state.iter().all(|w| !matches!(w, Write::Put { key, .. } if key == keys::meta::INDEX_APPLIED_SEQ)));
        let other = open("other");
        other.put(cf::FRESHNESS, b"stale", &"old".to_owned()).unwrap();
        other.replace_group_state(state.iter().cloned().map(Ok), other.batch_own()).unwrap();
        assert_eq!(other.get::<String>(cf::FRESHNESS, b"stale").unwrap(), None);
        assert_eq!(other.get::<String>(cf::FRESHNESS, b"a").unwrap().as_deref(), Some("one"));
        assert_eq!(other.group_state((cf::meta::INDEX_APPLIED_SEQ, keys::meta::INDEX_APPLIED_SEQ)).unwrap().0, state);
    }

    /// Writes bytes as they are, past every check: what another build, or
    /// corruption, might have left.
    fn put_unchecked(store: &Store, name: &'static str, key: &[u8], value: &[u8]) {
        store.db.put_cf(store.handle(name).unwrap(), key, value).unwrap();
    }

    #[test]
    fn a_value_of_an_unknown_version_is_a_typed_error_naming_its_family() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.put(cf::FRESHNESS, b"a", &"known".to_string()).unwrap();
        let newer = [&[VALUE_VERSION + 1][..], &postcard::to_stdvec("newer").unwrap()].concat();
        put_unchecked(&store, cf::FRESHNESS.name(), b"b", &newer);
        put_unchecked(&store, cf::FRESHNESS.name(), b"c", &[]);

        let unknown = store.get::<String>(cf::FRESHNESS, b"b").unwrap_err();
        assert!(
            matches!(unknown, StoreError::UnknownVersion { cf: "freshness", version } if version == VALUE_VERSION + 1),
            "{unknown}"
        );
        assert!(unknown.to_string().contains("column family freshness has version 2"), "{unknown}");
        assert!(matches!(store.get::<String>(cf::FRESHNESS, b"c"), Err(StoreError::NoVersion { cf: "freshness" })));
        assert!(matches!(
            store.scan::<String>(cf::FRESHNESS, &[], None, 10),
            Err(StoreError::UnknownVersion { cf: "freshness", .. })
        ));
        assert!(matches!(
            store.at_or_before::<String>(cf::FRESHNESS, b"b"),
            Err(StoreError::UnknownVersion { cf: "freshness", .. })
        ));
        assert_eq!(store.get::<String>(cf::FRESHNESS, b"a").unwrap().as_deref(), Some("known"));
        // Replicated bytes are checked as they are applied: the batch fails.
        let mut batch = store.batch();
        batch.put_raw(cf::FRESHNESS, b"d", &newer);
        assert!(matches!(batch.commit(), Err(StoreError::UnknownVersion { cf: "freshness", .. })));
        assert!(!store.contains(cf::FRESHNESS, b"d").unwrap());
    }

    #[test]
    fn open_refuses_a_family_whose_first_value_or_schema_is_of_an_unknown_version() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        put_unchecked(&store, cf::RECORDS.name(), b"r1", &[9, 0]);
        drop(store);
        let refused = Store::open(dir.path()).err().expect("a value of version 9 is refused at open");
        assert!(matches!(refused, StoreError::UnknownVersion { cf: "records", version: 9 }), "{refused}");
        assert!(refused.to_string().contains("column family records has version 9"), "{refused}");

        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.put(cf::meta::SCHEMA, &keys::schema(cf::TLOG_LEAVES.name()), &(SCHEMA_VERSION + 1)).unwrap();
        drop(store);
        let refused = Store::open(dir.path()).err().expect("a newer schema is refused at open");
        assert!(matches!(refused, StoreError::UnknownSchema { cf: "tlog_leaves", version: 2 }), "{refused}");
        assert!(refused.to_string().contains("column family tlog_leaves records schema version 2"), "{refused}");
    }

    #[test]
    fn a_migration_cut_short_resumes_after_the_last_value_it_rewrote() {
        let dir = tempfile::tempdir().unwrap();
        let versioned = |s: &str| encode_value(&s.to_string()).unwrap();
        let legacy = |s: &str| postcard::to_stdvec(&s.to_string()).unwrap();
        legacy_store(
            dir.path(),
            &[
                // Rewritten before the crash, with how far it got.
                (cf::FRESHNESS.name(), &b"a"[..], versioned("one")),
                (cf::FRESHNESS.name(), &b"b"[..], versioned("two")),
                (cf::meta::FAMILY, &keys::migrating(cf::FRESHNESS.name())[..], encode_value(&b"b".to_vec()).unwrap()),
                // Not reached.
                (cf::FRESHNESS.name(), &b"c"[..], legacy("three")),
            ],
        );
        let store = Store::open(dir.path()).unwrap();
        let all: Vec<(Vec<u8>, String)> = store.scan(cf::FRESHNESS, &[], None, 10).unwrap();
        assert_eq!(all.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(), ["one", "two", "three"]);
        assert!(!store.contains(cf::meta::MIGRATING, &keys::migrating(cf::FRESHNESS.name())).unwrap());
    }
}

/// For migration tests, here and in the crates above: a store as a build
/// before version bytes wrote it (every column family, postcard values with
/// no byte before them, no schema record).
pub mod testing {
    use std::path::Path;

    use rocksdb::{ColumnFamilyDescriptor, DB, Options};

    use crate::cf;

    pub fn legacy_store(path: &Path, values: &[(&'static str, &[u8], Vec<u8>)]) {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = DB::open_cf_descriptors(
            &opts,
            path,
            cf::ALL.iter().map(|n| ColumnFamilyDescriptor::new(*n, Options::default())),
        )
        .unwrap();
        for (name, key, value) in values {
            db.put_cf(db.cf_handle(name).unwrap(), key, value).unwrap();
        }
    }
}
