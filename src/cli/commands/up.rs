//! `svc up`: a whole deployment in one process. Home, and two read regions
//! that pull home's replication log over HTTP/2 on loopback, each on its own
//! ports and in its own data folder; a front door before them; the sandbox
//! corpus published at home.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use super::CliError;
use svc_clock::SystemClock;
use svc_http::front_door::{FrontDoor, FrontDoorConfig, Health, Route};
use svc_http::group_node::GroupNode;
use svc_http::node::Node;
use svc_node::config::{
    self, GroupMember, HomeGroupConfig, HomeMemberUrls, NodeConfig, Peer, RegionCredential, ReplicationConfig, Role,
    TlsConfig,
};
use svc_node::region::Region;

/// The take rate of `svc up`'s home (basis points): 20 %.
const SANDBOX_TAKE_BPS: u32 = 2_000;

#[derive(Debug, Clone)]
pub struct Plan {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    pub ports_from: u16,
    pub latency: Vec<String>,
    pub seed: u64,
    /// Every listener over TLS, from a deployment CA under
    /// `<data_dir>/tls/`; the link between regions mutual TLS.
    pub tls: bool,
    /// Home's members: 1, or a Raft group of 3 or 5 (`--home-nodes`).
    pub home_nodes: u8,
}

impl Plan {
    /// The default deployment (home, eu, ap; eu nearest) on ports the
    /// system picks, its data under `data_dir`: for tests and tools that run
    /// beside others.
    pub fn on_free_ports(data_dir: PathBuf) -> Plan {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        Plan {
            data_dir,
            listen: any,
            admin_listen: any,
            ports_from: 0,
            latency: vec!["eu=10".into(), "home=25".into(), "ap=40".into()],
            seed: 1,
            tls: false,
            home_nodes: 1,
        }
    }

    /// `http` or `https`, as the listeners speak.
    fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// Where the deployment's CA and its certificates are kept.
    pub fn tls_dir(&self) -> PathBuf {
        self.data_dir.join("tls")
    }

    /// A listener's `[tls]`: `name`'s certificate, and the deployment's
    /// CA believed as a client.
    fn tls_config(&self, name: &str) -> Option<TlsConfig> {
        let dir = self.tls_dir();
        self.tls.then(|| TlsConfig {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}-key.pem")),
            ca: Some(dir.join("ca.pem")),
        })
    }

    /// With `--tls`: the deployment's CA (made once), and a certificate
    /// for each region and the door, renewed at every start, for the
    /// address they listen on.
    fn issue_certificates(&self) -> Result<(), CliError> {
        if !self.tls {
            return Ok(());
        }
        let dir = self.tls_dir();
        if !dir.join("ca.pem").exists() {
            crate::ca::init(&dir)?;
        }
        let hosts = [self.listen.ip().to_string(), "127.0.0.1".into(), "localhost".into()];
        for &(region, _, _) in REGIONS {
            crate::ca::issue(&dir, region, true, &hosts, CERTIFICATE_DAYS)?;
        }
        crate::ca::issue(&dir, "door", false, &hosts, CERTIFICATE_DAYS)?;
        Ok(())
    }
}

/// How long `svc up --tls` certificates last; each start renews them.
const CERTIFICATE_DAYS: u32 = 30;

/// The regions `svc up` runs, with the offset of their public port.
const REGIONS: &[(&str, Role, u16)] = &[("home", Role::Home, 0), ("eu", Role::Read, 10), ("ap", Role::Read, 20)];

/// Parses `region=ms` pairs; every region of the deployment needs one.
fn latency_table(pairs: &[String]) -> Result<Vec<(String, u64)>, CliError> {
    let mut table = Vec::new();
    for pair in pairs {
        let (region, ms) =
            pair.split_once('=').ok_or_else(|| CliError::Usage(format!("--latency {pair}: region=ms")))?;
        let ms =
            ms.trim().parse::<u64>().map_err(|_| CliError::Usage(format!("--latency {pair}: ms is a whole number")))?;
        table.push((region.trim().to_owned(), ms));
    }
    for (region, _, _) in REGIONS {
        if !table.iter().any(|(r, _)| r == region) {
            return Err(CliError::Usage(format!("--latency names no latency for {region}")));
        }
    }
    Ok(table)
}

/// Where one member of home listens; home alone is member 1.
#[derive(Debug, Clone, Copy)]
struct Member {
    id: u64,
    public: SocketAddr,
    admin: SocketAddr,
    internal: SocketAddr,
    /// Its group listener (`--home-nodes` above 1).
    group: SocketAddr,
}

/// Member `id`'s ports, above `--ports-from`: member 1 is home's
/// (public +0, internal +2, group +3), member 2 from +30, member 3 from
/// +40 and so on (public, admin +1, internal +2, group +3).
fn member_offset(id: u64) -> u16 {
    match id {
        1 => 0,
        n => 30 + 10 * (n as u16 - 2),
    }
}

/// An address on the plan's host: `--ports-from` plus `offset`, or a port
/// free now (port 0: tests; `config::port_to_keep`), known before any
/// node binds it.
fn address(plan: &Plan, offset: u16) -> Result<SocketAddr, CliError> {
    let ip = plan.listen.ip();
    if plan.ports_from != 0 {
        let port = plan.ports_from.checked_add(offset);
        let port = port.ok_or_else(|| CliError::Usage(format!("--ports-from {}: too high", plan.ports_from)))?;
        return Ok(SocketAddr::new(ip, port));
    }
    svc_node::config::port_to_keep(ip).map_err(|source| CliError::Io { path: PathBuf::from(ip.to_string()), source })
}

/// Each region's public address, known before any starts so each can
/// name the others: from `ports_from`, or ports the system frees for it.
fn public_addresses(plan: &Plan) -> Result<Vec<(String, SocketAddr)>, CliError> {
    REGIONS.iter().map(|&(region, _, offset)| Ok((region.to_owned(), address(plan, offset)?))).collect()
}

/// Home's members and their addresses, known before any starts.
fn home_members(plan: &Plan, publics: &[(String, SocketAddr)]) -> Result<Vec<Member>, CliError> {
    if ![1, 3, 5].contains(&plan.home_nodes) {
        return Err(CliError::Usage(format!("--home-nodes {}: home runs 1, 3 or 5 nodes", plan.home_nodes)));
    }
    let mut members = Vec::new();
    for id in 1..=u64::from(plan.home_nodes) {
        let offset = member_offset(id);
        let public = match id {
            1 => publics.iter().find(|(name, _)| name == "home").map(|(_, a)| *a),
            _ => None,
        };
        let admin = match (id, plan.admin_listen.port()) {
            (1, 0) => address(plan, 1)?,
            (1, _) => plan.admin_listen,
            _ => address(plan, offset + 1)?,
        };
        members.push(Member {
            id,
            public: public.map_or_else(|| address(plan, offset), Ok)?,
            admin,
            internal: address(plan, offset + 2)?,
            group: address(plan, offset + 3)?,
        });
    }
    Ok(members)
}

/// One region's configuration under `data_dir/<region>` (member `n` of
/// home's group under `data_dir/home-<n>`); a read region pulls from home
/// (any of its members) with its own token
/// (`data_dir/<region>/replication_token`), and home knows every read
/// region's.
fn region_config(
    plan: &Plan,
    (region, role, offset): (&str, Role, u16),
    home: &[Member],
    member: Option<&Member>,
    publics: &[(String, SocketAddr)],
) -> Result<NodeConfig, CliError> {
    let folder = match member {
        Some(m) if m.id > 1 => format!("{region}-{}", m.id),
        _ => region.to_owned(),
    };
    let dir = plan.data_dir.join(folder);
    std::fs::create_dir_all(&dir).map_err(|source| CliError::Io { path: dir.clone(), source })?;
    let ip = plan.listen.ip();
    // Port 0 everywhere (tests) lets the system choose.
    let port = |n: u16| if plan.ports_from == 0 { 0 } else { plan.ports_from + n };
    let public = publics.iter().find(|(name, _)| name == region).map_or(SocketAddr::new(ip, 0), |(_, a)| *a);
    let (public, admin) = match (member, role) {
        (Some(m), _) => (m.public, m.admin),
        (None, Role::Home) => (public, plan.admin_listen),
        (None, Role::Read) => (public, SocketAddr::new(ip, port(offset + 1))),
    };
    let mut config = NodeConfig::local_home(dir.clone(), public, admin);
    config.region = region.to_owned();
    config.role = role;
    // Every other region, for the ad confirmations it owns.
    config.peers = publics
        .iter()
        .filter(|(name, _)| name != region)
        .map(|(name, addr)| Peer { name: name.clone(), url: format!("{}://{addr}", plan.scheme()) })
        .collect();
    config.tls = plan.tls_config(region);
    config.allow_plain_http = !plan.tls;
    // Home's members share one admin token, so any of them takes a call.
    config.admin_token = super::secret_file(&plan.data_dir.join(region).join("admin_token"))?;
    // The door and the read regions forward callers from this address: a
    // node reads the caller's own from their X-Forwarded-For, so one busy
    // checker never shares a rate with every caller behind a forwarder.
    let trusted = if ip.is_ipv4() { format!("{ip}/32") } else { format!("{ip}/128") };
    config.trusted_proxies = vec![trusted.parse().map_err(CliError::Usage)?];
    // The portal is reached through the door; a browser treats
    // http://localhost as a secure context, so passkeys work without TLS.
    config.passkey_rp_id = "localhost".into();
    config.passkey_origin = format!("{}://localhost:{}", plan.scheme(), plan.listen.port());
    let scheme = plan.scheme();
    let url = |addr: SocketAddr| format!("{scheme}://{addr}");
    config.replication = Some(match role {
        Role::Home => {
            // The sandbox's campaigns pay a 20 % take on their net prices.
            config.ads.take_rate_bps = SANDBOX_TAKE_BPS;
            config.internal_listen = Some(member.map_or(SocketAddr::new(ip, port(offset + 2)), |m| m.internal));
            let mut regions = Vec::new();
            for &(name, role, _) in REGIONS {
                if role == Role::Read {
                    let token = region_token(plan, name)?;
                    regions.push(RegionCredential::new(name, &token));
                }
            }
            ReplicationConfig::home(regions)
        }
        Role::Read => {
            let first = home.first().ok_or_else(|| CliError::Usage("home has no member".into()))?;
            let mut link = ReplicationConfig::read(
                Some(url(first.public)),
                Some(url(first.internal)),
                &region_token(plan, region)?,
            );
            link.home_members = home[1..]
                .iter()
                .map(|m| HomeMemberUrls { home_url: url(m.public), internal_url: url(m.internal) })
                .collect();
            link
        }
    });
    if let Some(member) = member.filter(|_| home.len() > 1) {
        config.home_group = Some(HomeGroupConfig {
            id: member.id,
            listen: member.group,
            token: super::secret_file(&plan.data_dir.join(region).join("group_token"))?,
            token_file: None,
            members: home
                .iter()
                .map(|m| GroupMember {
                    id: m.id,
                    url: url(m.group),
                    public_url: Some(url(m.public)),
                    admin_url: Some(url(m.admin)),
                })
                .collect(),
            heartbeat_ms: config::default_heartbeat_ms(),
            election_ms: config::default_election_ms(),
            commit_timeout_ms: config::default_commit_timeout_ms(),
            snapshot_every: config::default_snapshot_every(),
            logs_kept: config::default_logs_kept(),
        });
    }
    Ok(config)
}

/// A read region's token on home's internal routes, drawn at its first start.
fn region_token(plan: &Plan, region: &str) -> Result<String, CliError> {
    let dir = plan.data_dir.join(region);
    std::fs::create_dir_all(&dir).map_err(|source| CliError::Io { path: dir.clone(), source })?;
    super::secret_file(&dir.join("replication_token"))
}

/// A running deployment: its regions and the door before them.
pub struct Up {
    /// Home (when it runs as one node), then eu and ap.
    pub nodes: Vec<Node>,
    /// Home's members, when it runs as a group (`--home-nodes 3`): the
    /// region runs on whichever leads.
    pub group: Vec<GroupNode>,
    pub door: FrontDoor,
    /// Where each node listens, home's first.
    pub addresses: Vec<Addresses>,
}

/// Where one node of the deployment listens, as `svc up` prints it.
#[derive(Debug, Clone)]
pub struct Addresses {
    pub region: String,
    /// `home`, `read`, or the member's place in home's group (`home-2`).
    pub role: String,
    pub public: SocketAddr,
    pub admin: SocketAddr,
    /// Home's listener for the read regions.
    pub internal: Option<SocketAddr>,
}

/// How long `svc up` waits for home's group to elect a leader that brought
/// its region up.
const LEADER_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long `svc up` waits, after seeding, for every region to catch up.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl Up {
    /// Starts home (its members, when a group), then the read regions
    /// pulling from it, then the door.
    pub async fn start(plan: &Plan) -> Result<Up, CliError> {
        // The door's port names the portal's passkey origin, so it is known
        // before any region starts, even when the system picks it.
        let listen = match plan.listen.port() {
            0 => std::net::TcpListener::bind(plan.listen)
                .and_then(|l| l.local_addr())
                .map_err(|source| CliError::Io { path: "the front door's port".into(), source })?,
            _ => plan.listen,
        };
        let plan = &Plan { listen, ..plan.clone() };
        let latency = latency_table(&plan.latency)?;
        std::fs::create_dir_all(&plan.data_dir)
            .map_err(|source| CliError::Io { path: plan.data_dir.clone(), source })?;
        plan.issue_certificates()?;
        let publics = public_addresses(plan)?;
        let home = home_members(plan, &publics)?;
        let mut nodes: Vec<Node> = Vec::new();
        let mut group = Vec::new();
        for &(region, role, offset) in REGIONS {
            if role == Role::Read {
                let config = region_config(plan, (region, role, offset), &home, None, &publics)?;
                nodes.push(Node::start(config, Arc::new(SystemClock)).await?);
                continue;
            }
            for member in &home {
                let config = region_config(plan, (region, role, offset), &home, Some(member), &publics)?;
                match home.len() {
                    1 => nodes.push(Node::start(config, Arc::new(SystemClock)).await?),
                    _ => group.push(GroupNode::start(config, Arc::new(SystemClock)).await?),
                }
            }
        }
        let scheme = plan.scheme();
        // One machine: the distance is simulated, and measured.
        let route = |region: &str, addr: SocketAddr| Route {
            region: region.to_owned(),
            url: format!("{scheme}://{addr}"),
            latency_ms: None,
            delay_ms: latency.iter().find(|(r, _)| r == region).map(|(_, ms)| *ms),
        };
        let mut routes: Vec<Route> = Vec::new();
        if !group.is_empty() {
            // Every member: the door's probes find the leader ready, and a
            // standby sends on what reaches it.
            routes.extend(home.iter().map(|m| route("home", m.public)));
        }
        routes.extend(nodes.iter().map(|node| route(&node.state.config.region, node.addr)));
        let door = FrontDoor::start(FrontDoorConfig {
            listen: plan.listen,
            probe_ms: 250,
            regions: routes,
            listener: Default::default(),
            tls: plan.tls_config("door"),
            allow_plain_http: !plan.tls,
        })
        .await?;
        let mut addresses: Vec<Addresses> = home
            .iter()
            .filter(|_| !group.is_empty())
            .map(|m| Addresses {
                region: "home".into(),
                role: format!("home-{}", m.id),
                public: m.public,
                admin: m.admin,
                internal: Some(m.internal),
            })
            .collect();
        addresses.extend(nodes.iter().map(|node| Addresses {
            region: node.state.config.region.clone(),
            role: if node.state.home.is_some() { "home" } else { "read" }.into(),
            public: node.addr,
            admin: node.admin_addr,
            internal: node.internal_addr,
        }));
        Ok(Up { nodes, group, door, addresses })
    }

    /// Home's region as it runs now: home's node, or the region of the
    /// member leading its group (waiting for one to lead).
    pub async fn home_region(&self) -> Result<Region, CliError> {
        if let Some(home) = self.nodes.iter().find(|n| n.state.home.is_some()) {
            return Ok(home.state.clone());
        }
        let started = svc_clock::monotonic();
        while started.elapsed() < LEADER_WAIT {
            for member in &self.group {
                if let Some(node) = member.leading.lock().await.as_ref() {
                    return Ok(node.state.clone());
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Err(CliError::Usage(format!("no member of home's group led within {} s", LEADER_WAIT.as_secs())))
    }

    /// Waits until the door sees every region ready (home's leader among a
    /// group's members), so the tour's first request finds each region
    /// caught up with the seeded corpus rather than whichever answered
    /// first. False when `wait` passes first.
    pub async fn ready(&self, wait: std::time::Duration) -> bool {
        let started = svc_clock::monotonic();
        loop {
            let table = self.door.table();
            let every = table.iter().all(|row| {
                table.iter().any(|other| other.route.region == row.route.region && other.health == Health::Ready)
            });
            if every {
                return true;
            }
            if started.elapsed() >= wait {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Stops the door first, so no new request reaches a stopping region,
    /// then the read regions, then home.
    pub async fn stop(self) {
        self.door.stop().await;
        for node in self.nodes.into_iter().rev() {
            node.stop().await;
        }
        for member in self.group {
            member.stop().await;
        }
    }
}

pub fn run(plan: Plan) -> Result<(), CliError> {
    super::block_on_workers(async move {
        let stopped = super::stop_signal()?;
        let up = Up::start(&plan).await?;
        print_addresses(&plan, &up);
        let home = up.home_region().await?;
        let corpus = svc_http::sandbox::corpus::generate(plan.seed, svc_http::sandbox::corpus::Sizes::default());
        let started = svc_clock::monotonic();
        let bar = super::progress::Bar::counting("  seeding the sandbox corpus at home", 0);
        let report = |p: svc_http::sandbox::seed::Progress| bar.set(p.done as u64, p.total as u64, p.stage);
        let seeded = svc_http::sandbox::seed::ensure_seeded(&home, &corpus, &report).await?;
        bar.finish();
        println!(
            "  sandbox corpus  seed {}: {} businesses, {} records ({:.1} s); the read regions replicate it",
            seeded.seed,
            seeded.businesses.len(),
            corpus.record_count(),
            started.elapsed().as_secs_f64()
        );
        let specs = corpus.businesses.iter().flat_map(|b| &b.campaigns);
        let campaigns: Vec<(String, String)> = svc_http::sandbox::seed::campaigns(&home)?
            .into_iter()
            .zip(specs)
            .map(|(id, spec)| {
                let term = |name: &str| spec.terms[name].as_str().unwrap_or_default().to_owned();
                let about =
                    format!("{}: {} {}, budget {}", term("name"), term("placement"), term("basis"), term("budget"));
                (id, about)
            })
            .collect();
        drop(home);
        if !up.ready(READY_WAIT).await {
            println!(
                "  (not every region was ready within {} s: the door sends requests to those that are)",
                READY_WAIT.as_secs()
            );
        }
        print_tour(&plan, &up, seeded.businesses.first().map(|b| b.0.as_str()), &campaigns);
        stopped.await;
        up.stop().await;
        Ok(())
    })
}

fn print_addresses(plan: &Plan, up: &Up) {
    let scheme = plan.scheme();
    match up.group.len() {
        0 => println!("svc {}: a home region and two read regions (sandbox)", env!("CARGO_PKG_VERSION")),
        n => println!(
            "svc {}: a home region of {n} nodes (one Raft group) and two read regions (sandbox)",
            env!("CARGO_PKG_VERSION")
        ),
    }
    println!("  front door     {scheme}://{}  (sign for authority api.svc.localhost)", up.door.addr);
    if plan.tls {
        println!(
            "  CA             {}  (every listener's certificate; --ca or SVC_CA)",
            plan.tls_dir().join("ca.pem").display()
        );
    }
    println!(
        "  region  role      public                  admin                   measured latency (simulated distance)"
    );
    let url = |addr: SocketAddr| format!("{scheme}://{addr}");
    for row in up.door.table() {
        let Some(node) = up.addresses.iter().find(|a| url(a.public) == row.route.url) else { continue };
        let measured = row.latency.ms().map_or("-".into(), |ms| format!("{ms:.1} ms"));
        println!(
            "  {:<7} {:<9} {:<23} {:<23} {measured} ({} ms, {:?})",
            row.route.region,
            node.role,
            url(node.public),
            url(node.admin),
            row.route.delay_ms.unwrap_or(0),
            row.health
        );
    }
    // Home's listener for the read regions alone (mutual TLS with --tls).
    for node in &up.addresses {
        if let Some(internal) = node.internal {
            println!("  {:<7} {:<9} {}", node.region, "internal", url(internal));
        }
    }
    println!("  admin tokens   {}/<region>/admin_token", plan.data_dir.display());
}

fn print_tour(plan: &Plan, up: &Up, business: Option<&str>, campaigns: &[(String, String)]) {
    let scheme = plan.scheme();
    let token_file = plan.data_dir.join("home").join("admin_token");
    // Home's first member when a group: a standby sends calls on to the leader.
    let home_admin = up.addresses.iter().find(|a| a.region == "home").map_or(plan.admin_listen, |a| a.admin);
    let admin = format!("svc admin --url {scheme}://{home_admin} --token-file {}", token_file.display());
    println!("Try (the README's tour goes on from here):");
    if plan.tls {
        let ca = plan.tls_dir().join("ca.pem");
        println!(
            "  export SVC_CA={} CURL_CA_BUNDLE={}    # svc and curl believe the deployment's CA",
            ca.display(),
            ca.display()
        );
    }
    println!("  {admin} observe");
    println!("  {admin} business show {}", business.unwrap_or("<uuid>"));
    for (id, about) in campaigns {
        println!("  {admin} campaign show {id}    # {about}");
    }
    println!("  svc keygen --alg ed25519 --out ai.json");
    println!("  {admin} company create --name 'Example AI'    # then a group and a retrieval key, as in the tour");
    println!(
        "  svc client --base-url {scheme}://{} --key ai.json --grant <sandbox_key_grant> search --country FR --q lamp",
        up.door.addr
    );
    println!("Not yet:");
    for item in super::NOT_YET {
        println!("  - {item}");
    }
    if !plan.tls {
        println!("  - plain HTTP: the door and the regions speak HTTP on this machine (svc up --tls serves HTTPS)");
    }
    println!("Ctrl-C stops the front door, then each region (in-flight requests drain first).");
}
