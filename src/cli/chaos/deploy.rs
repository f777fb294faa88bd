//! A real deployment for a chaos run: home and its read regions, each a
//! `svc node` process with its own configuration and data directory under
//! the run's folder. Each node keeps the ports it was first given (below
//! the ephemeral range, see `config::port_to_keep`), so a node killed and
//! started again is where its clients and peers expect it.
//! Dropping the deployment kills every process it started.
//!
//! Or an operator's own deployment (`--target`, `target`): its nodes are
//! reached at the addresses its file gives, and a fault runs the command
//! the file gives for it; nothing of it is started, stopped at the end or
//! deleted.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::disk::{DiskError, SmallDisk};
use super::network::{Network, NetworkError, NetworkKind};
use super::target::{self, Commands, TargetFile};
use svc_client::admin::Admin;
use svc_client::trust::Trust;
use svc_node::faults::CrashPoint;

/// Why a deployment could not be made or driven.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{node} did not start: {detail}")]
    Start { node: String, detail: String },
    #[error("{node} was not ready within {seconds} s")]
    NotReady { node: String, seconds: u64 },
    #[error("no node is called {0}")]
    Unknown(String),
    #[error("signal {signal} to {node}: {detail}")]
    Signal { node: String, signal: &'static str, detail: String },
    #[error("fault on {node}: {detail}")]
    Fault { node: String, detail: String },
    #[error("the run's certificates: {0}")]
    Ca(Box<crate::ca::CaError>),
    #[error("the run's CA: {0}")]
    Trust(Box<svc_client::ClientError>),
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error(transparent)]
    Disk(#[from] DiskError),
    #[error("{node}: {detail}")]
    Command { node: String, detail: String },
}

/// The authority every node serves, so a signed request is valid at each.
pub const AUTHORITY: &str = "api.svc.localhost";

/// One `svc node` process.
pub struct Node {
    pub name: String,
    pub config: PathBuf,
    pub public_url: String,
    pub admin_url: String,
    pub internal_url: Option<String>,
    child: Option<Child>,
    /// An operator's node: what acts on it (`None`: a process of the run).
    commands: Option<Box<Commands>>,
    /// An operator's node a fault killed and that was not started again.
    killed: bool,
    /// The deployment's CA, which its clients believe.
    trust: Trust,
}

impl Node {
    /// Whether the process is running (not killed by a fault).
    pub fn is_up(&self) -> bool {
        match self.commands {
            Some(_) => !self.killed,
            None => self.child.is_some(),
        }
    }

    /// Runs the operator's command `which` for this node, with `fills`.
    fn command(&self, which: target::Pick, what: &str, fills: &[(&str, &str)]) -> Result<(), DeployError> {
        let failed = |detail: String| DeployError::Command { node: self.name.clone(), detail };
        let commands = self.commands.as_ref().ok_or_else(|| failed(format!("no command to {what}")))?;
        let command = which(commands).as_ref().ok_or_else(|| failed(format!("the target file gives no `{what}`")))?;
        let mut all = vec![("node", self.name.as_str())];
        all.extend_from_slice(fills);
        target::run(command, &all).map_err(|e| failed(e.to_string()))
    }

    fn signal(&self, signal: &'static str) -> Result<(), DeployError> {
        if self.commands.is_some() {
            return match signal {
                "STOP" => self.command(|c| &c.pause, "pause", &[]),
                _ => self.command(|c| &c.resume, "resume", &[]),
            };
        }
        let Some(child) = &self.child else {
            return Err(DeployError::Signal { node: self.name.clone(), signal, detail: "not running".into() });
        };
        let status = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status();
        match status {
            Ok(s) if s.success() => Ok(()),
            other => Err(DeployError::Signal { node: self.name.clone(), signal, detail: format!("{other:?}") }),
        }
    }
}

/// Home's group as the run's clients reach it: a front door over the
/// members' public listeners and one over their admin listeners (the
/// leader answers; a standby sends on), named `home` like a lone home.
pub struct HomeDoor {
    doors: Vec<svc_http::front_door::FrontDoor>,
    node: Node,
}

/// Home (first; or its group's members, `home-1`, …) and its read regions.
pub struct Deployment {
    pub dir: PathBuf,
    /// Every node serves TLS from the run's own CA (`tls/` under `dir`),
    /// and the link is mutual TLS: the clients of the run believe it.
    pub trust: Trust,
    binary: PathBuf,
    pub admin_token: String,
    pub nodes: Vec<Node>,
    /// What the nodes talk over; dropped after them.
    pub network: Network,
    /// Why the run is on loopback when it asked for namespaces.
    pub network_note: Option<String>,
    /// The data directories on small disks of their own, by node.
    disks: std::collections::HashMap<String, SmallDisk>,
    /// With home as a group: the doors the clients reach it through.
    home_door: Option<HomeDoor>,
    /// The authority signed requests name.
    pub authority: String,
    /// An operator's deployment (`--target`): nothing of it is the run's.
    attached: bool,
}

/// What a deployment is made of, beyond home.
pub struct Plan<'a> {
    pub regions: &'a [String],
    /// A network partitions can cut; plain loopback when `None`.
    pub network: Option<NetworkKind>,
    /// The nodes whose data directory is a small disk a fault can fill.
    pub small_disks: Vec<String>,
    /// Home's nodes: 1, or a group of 3 or 5.
    pub home_nodes: u8,
}

/// An address on `ip` for a node to listen at, chosen before it starts:
/// on loopback one it keeps across restarts (`config::port_to_keep`); in
/// a namespace of its own the node binds a port itself (`:0`): nothing
/// else there connects out.
fn listen_address(ip: std::net::IpAddr) -> Result<std::net::SocketAddr, DeployError> {
    if !ip.is_loopback() {
        return Ok(std::net::SocketAddr::new(ip, 0));
    }
    svc_node::config::port_to_keep(ip).map_err(|source| DeployError::Io { path: PathBuf::from(ip.to_string()), source })
}

/// Where home's members and door send requests on from: loopback, or the
/// run's bridge (each member in a namespace, the door on the gateway).
fn members_net(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) if !v4.is_loopback() => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        _ => format!("{ip}/32"),
    }
}

/// A read region's token on home's internal routes, drawn for the run.
fn region_token(run_secret: &str, region: &str) -> String {
    format!("{region}-{run_secret}")
}

impl Deployment {
    /// Starts home, then each read region, and waits until all are ready.
    /// `binary` is the `svc` executable. With `network`, the nodes talk
    /// over a network a partition can cut; without, over plain loopback.
    pub async fn start(binary: &Path, dir: &Path, plan: &Plan<'_>) -> Result<Deployment, DeployError> {
        let regions = plan.regions;
        std::fs::create_dir_all(dir).map_err(|source| DeployError::Io { path: dir.to_owned(), source })?;
        let secret = hex::encode(svc_clock::random::<16>());
        // Each process its own name on the network: home's members by number.
        let homes: Vec<String> = match plan.home_nodes {
            1 => vec!["home".to_owned()],
            n => (1..=n).map(|id| format!("home-{id}")).collect(),
        };
        let names: Vec<String> = homes.into_iter().chain(regions.iter().cloned()).collect();
        let (network, network_note) = match plan.network {
            Some(kind) => Network::create(kind, &secret[..8], &names)?,
            None => (Network::Direct, None),
        };
        let tls = dir.join("tls");
        if !tls.join("ca.pem").exists() {
            crate::ca::init(&tls).map_err(|e| DeployError::Ca(Box::new(e)))?;
        }
        let trust = Trust::with_ca(Some(&tls.join("ca.pem"))).map_err(|e| DeployError::Trust(Box::new(e)))?;
        let mut deployment = Deployment {
            dir: dir.to_owned(),
            trust,
            binary: binary.to_owned(),
            admin_token: format!("admin-{secret}"),
            nodes: Vec::new(),
            network,
            network_note,
            disks: Default::default(),
            home_door: None,
            authority: AUTHORITY.to_owned(),
            attached: false,
        };
        for name in &plan.small_disks {
            let disk = SmallDisk::mount(&dir.join(name))?;
            deployment.disks.insert(name.clone(), disk);
        }
        let home_links: String = regions
            .iter()
            .map(|r| format!("[[replication.regions]]\nname = \"{r}\"\ntoken = \"{}\"\n", region_token(&secret, r)))
            .collect();
        // The log is sequenced every 5 s, not hourly, so clients see it grow.
        let sequencing = "log_sequence_every_ms = 5000\n";
        if plan.home_nodes > 1 {
            deployment.start_group(plan.home_nodes, &secret, &format!("[replication]\n{home_links}")).await?;
        } else {
            let internal =
                format!("internal_listen = \"{}\"\n{sequencing}", listen_address(deployment.network.address("home"))?);
            let home = deployment.write_config(
                ("home", "home"),
                "home",
                None,
                &internal,
                &format!("[replication]\n{home_links}"),
            )?;
            deployment.launch(home).await?;
        }
        for region in regions {
            let home = &deployment.nodes[0];
            let (mut public, mut internal) = (home.public_url.clone(), home.internal_url.clone().unwrap_or_default());
            if let Network::Loopback(proxies) = &deployment.network {
                let address = |url: &str| url.trim_start_matches("https://").parse::<std::net::SocketAddr>();
                if let (Ok(a), Ok(b)) = (address(&public), address(&internal)) {
                    let [p, i] = proxies.link(region, [a, b]).await?;
                    (public, internal) = (format!("https://{p}"), format!("https://{i}"));
                }
            }
            // The group's other members, which the region moves on to.
            let others: String = deployment
                .members()
                .iter()
                .skip(1)
                .map(|m| {
                    format!(
                        "[[replication.home_members]]\nhome_url = \"{}\"\ninternal_url = \"{}\"\n",
                        m.public_url,
                        m.internal_url.clone().unwrap_or_default()
                    )
                })
                .collect();
            let link = format!(
                "[replication]\nhome_url = \"{public}\"\ninternal_url = \"{internal}\"\ntoken = \"{}\"\n{others}",
                region_token(&secret, region)
            );
            let config = deployment.write_config((region, region), "read", None, "", &link)?;
            deployment.launch(config).await?;
        }
        deployment.wait_serving().await?;
        Ok(deployment)
    }

    /// An operator's deployment as its file names it (`--target`), once
    /// every node that serves clients answers ready. The admin token is
    /// read from the variable the file names.
    pub async fn attach(file: &TargetFile, dir: &Path) -> Result<Deployment, DeployError> {
        std::fs::create_dir_all(dir).map_err(|source| DeployError::Io { path: dir.to_owned(), source })?;
        let trust = Trust::with_ca(file.ca.as_deref()).map_err(|e| DeployError::Trust(Box::new(e)))?;
        let admin_token = std::env::var(&file.admin_token_env).map_err(|_| DeployError::Start {
            node: "the deployment".into(),
            detail: format!("{} holds no admin token", file.admin_token_env),
        })?;
        let node = |name: &str, public_url: &str, admin_url: &str, commands: Option<&Commands>| Node {
            name: name.to_owned(),
            config: dir.join(format!("{name}.toml")),
            public_url: public_url.to_owned(),
            admin_url: admin_url.to_owned(),
            internal_url: None,
            child: None,
            commands: commands.map(|c| Box::new(c.clone())),
            killed: false,
            trust: trust.clone(),
        };
        let nodes = file.nodes.iter().map(|n| node(&n.name, &n.public_url, &n.admin_url, Some(&n.commands))).collect();
        let home_door = file
            .home
            .as_ref()
            .map(|home| HomeDoor { doors: Vec::new(), node: node("home", &home.public_url, &home.admin_url, None) });
        let deployment = Deployment {
            dir: dir.to_owned(),
            trust,
            binary: PathBuf::new(),
            admin_token,
            nodes,
            network: Network::Direct,
            network_note: Some("an operator's deployment: a partition runs the commands its file gives".into()),
            disks: Default::default(),
            home_door,
            authority: file.authority.clone(),
            attached: true,
        };
        deployment.wait_serving().await?;
        Ok(deployment)
    }

    /// Starts home as a group of `count` members on ports chosen before any
    /// starts (each names the others), and the doors the clients reach it
    /// through.
    async fn start_group(&mut self, count: u8, secret: &str, replication: &str) -> Result<(), DeployError> {
        // In namespaces each member has an address of its own, where any
        // port is free; on loopback they share one.
        let mut addresses = Vec::new();
        for id in 1..=count {
            let ip = self.network.address(&format!("home-{id}"));
            let at = |port: u16| {
                if ip.is_loopback() { listen_address(ip) } else { Ok(std::net::SocketAddr::new(ip, port)) }
            };
            addresses.push([at(7080)?, at(7081)?, at(7082)?, at(7083)?]);
        }
        let ip = self.network.address("home");
        let members: String = addresses
            .iter()
            .enumerate()
            .map(|(i, [public, admin, _, group])| {
                format!(
                    "[[home_group.members]]\nid = {}\nurl = \"https://{group}\"\npublic_url = \"https://{public}\"\n\
                     admin_url = \"https://{admin}\"\n",
                    i + 1
                )
            })
            .collect();
        let mut configs = Vec::new();
        for (i, [public, admin, internal, group]) in addresses.iter().enumerate() {
            let name = format!("home-{}", i + 1);
            // The members send requests on to each other: the leader reads
            // the caller's address from what a standby forwarded.
            let listeners = format!(
                "internal_listen = \"{internal}\"\nlog_sequence_every_ms = 5000\ntrusted_proxies = [\"{}\"]\n",
                members_net(public.ip())
            );
            let section = format!(
                "{replication}\n[home_group]\nid = {}\nlisten = \"{group}\"\ntoken = \"group-{secret}-{secret}\"\n{members}",
                i + 1
            );
            configs.push(self.write_config((&name, "home"), "home", Some((*public, *admin)), &listeners, &section)?);
        }
        // The members share home's certificate: it names each one's address.
        let mut hosts: Vec<String> = addresses.iter().map(|[public, ..]| public.ip().to_string()).collect();
        hosts.extend(["127.0.0.1".into(), "localhost".into()]);
        hosts.sort();
        hosts.dedup();
        crate::ca::issue(&self.dir.join("tls"), "home", true, &hosts, 30).map_err(|e| DeployError::Ca(Box::new(e)))?;
        for config in configs {
            self.launch(config).await?;
        }
        let routes = |urls: Vec<String>| {
            urls.into_iter()
                .map(|url| svc_http::front_door::Route { region: "home".into(), url, latency_ms: None, delay_ms: None })
                .collect::<Vec<_>>()
        };
        let tls = self.dir.join("tls");
        crate::ca::issue(&tls, "door", false, &[ip.to_string(), "127.0.0.1".into(), "localhost".into()], 30)
            .map_err(|e| DeployError::Ca(Box::new(e)))?;
        let door = |urls: Vec<String>| svc_http::front_door::FrontDoorConfig {
            listen: std::net::SocketAddr::new(ip, 0),
            probe_ms: 100,
            regions: routes(urls),
            listener: Default::default(),
            tls: Some(svc_node::config::TlsConfig {
                cert: tls.join("door.pem"),
                key: tls.join("door-key.pem"),
                ca: Some(tls.join("ca.pem")),
            }),
            allow_plain_http: false,
        };
        let start = |config| async move {
            svc_http::front_door::FrontDoor::start(config)
                .await
                .map_err(|e| DeployError::Start { node: "home's door".into(), detail: e.to_string() })
        };
        let public = start(door(self.members().iter().map(|m| m.public_url.clone()).collect())).await?;
        let admin = start(door(self.members().iter().map(|m| m.admin_url.clone()).collect())).await?;
        let node = Node {
            name: "home".into(),
            config: self.dir.join("home-1.toml"),
            public_url: format!("https://{}", public.addr),
            admin_url: format!("https://{}", admin.addr),
            internal_url: None,
            child: None,
            commands: None,
            killed: false,
            trust: self.trust.clone(),
        };
        self.home_door = Some(HomeDoor { doors: vec![public, admin], node });
        Ok(())
    }

    /// Stops the doors over home's group (they probe its members until then).
    pub async fn close_doors(&mut self) {
        for door in self.home_door.iter_mut().flat_map(|home| std::mem::take(&mut home.doors)) {
            door.stop().await;
        }
    }

    /// Home as its clients reach it: the lone home node, or the door over
    /// its group.
    pub fn home(&self) -> &Node {
        match &self.home_door {
            Some(door) => &door.node,
            None => &self.nodes[0],
        }
    }

    /// The members of home's group (none when home is one node).
    pub fn members(&self) -> Vec<&Node> {
        self.nodes.iter().filter(|n| n.name.starts_with("home-")).collect()
    }

    /// What serves clients: home (as `home()`), then each read region.
    pub fn serving(&self) -> Vec<&Node> {
        let regions = self.nodes.iter().filter(|n| n.name != "home" && !n.name.starts_with("home-"));
        std::iter::once(self.home()).chain(regions).collect()
    }

    /// The member of home's group that leads now: the one whose `/readyz`
    /// answers 200 (a standby answers 503).
    pub async fn leader(&self) -> Option<String> {
        for member in self.members() {
            let Ok(transport) = svc_client::transport::Transport::trusting(&member.public_url, &self.trust) else {
                continue;
            };
            let Ok(request) = axum::http::Request::get("/readyz").body(axum::body::Body::empty()) else { continue };
            if let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(2), transport.send(request)).await
                && answer.status == 200
            {
                return Some(member.name.clone());
            }
        }
        None
    }

    /// Waits until home (its group's leader, if a group) and every read
    /// region answer ready.
    async fn wait_serving(&self) -> Result<(), DeployError> {
        if self.home_door.is_some() {
            self.wait_leader(Duration::from_secs(60)).await?;
        }
        for node in self.serving() {
            wait_ready(node, Duration::from_secs(60)).await?;
        }
        Ok(())
    }

    /// Waits until a member of home's group leads with its region up.
    async fn wait_leader(&self, within: Duration) -> Result<String, DeployError> {
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            if let Some(leader) = self.leader().await {
                return Ok(leader);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(DeployError::NotReady { node: "home's group leader".into(), seconds: within.as_secs() })
    }

    /// The process a fault on `target` strikes: in a group, `home` is the
    /// member leading now and `home-follower` the first that does not.
    pub async fn resolve(&self, target: &str) -> String {
        if self.home_door.is_none() {
            return target.to_owned();
        }
        let leader = self.leader().await;
        match target {
            "home" => leader.unwrap_or_else(|| "home-1".into()),
            "home-follower" => {
                let members = self.members();
                let follower = members.iter().find(|m| Some(&m.name) != leader.as_ref());
                follower.map_or_else(|| "home-2".into(), |m| m.name.clone())
            }
            _ => target.to_owned(),
        }
    }

    /// A node's configuration: `name` is its process (file, data, log),
    /// `region` what it serves and the certificate it holds; its public and
    /// admin addresses as given, or ports it binds and keeps.
    fn write_config(
        &self,
        (name, region): (&str, &str),
        role: &str,
        at: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
        listeners: &str,
        replication: &str,
    ) -> Result<(String, PathBuf), DeployError> {
        let ip = self.network.address(name);
        let (listen, admin_listen) = match at {
            Some((public, admin)) => (public.to_string(), admin.to_string()),
            None => (listen_address(ip)?.to_string(), listen_address(ip)?.to_string()),
        };
        // The node's certificate names its region (the link's mutual TLS)
        // and the addresses it is reached at: its own, and loopback where
        // the run's proxies stand.
        let hosts = [ip.to_string(), "127.0.0.1".into(), "localhost".into()];
        crate::ca::issue(&self.dir.join("tls"), region, true, &hosts, 30).map_err(|e| DeployError::Ca(Box::new(e)))?;
        // Sandbox: production refuses fault injection.
        let text = format!(
            "region = \"{region}\"\nrole = \"{role}\"\nenvironment = \"sandbox\"\ndata_dir = \"{}\"\n\
             listen = \"{listen}\"\nadmin_listen = \"{admin_listen}\"\n{listeners}public_authority = \"{AUTHORITY}\"\n\
             verify_base_url = \"http://verify.svc.localhost\"\nadmin_token = \"{}\"\n\
             passkey_rp_id = \"portal.svc.localhost\"\npasskey_origin = \"https://portal.svc.localhost\"\n\
             fault_injection = true\n\n[tls]\ncert = \"tls/{region}.pem\"\nkey = \"tls/{region}-key.pem\"\n\
             ca = \"tls/ca.pem\"\n\n{replication}",
            self.dir.join(name).display(),
            self.admin_token
        );
        let path = self.dir.join(format!("{name}.toml"));
        std::fs::write(&path, text).map_err(|source| DeployError::Io { path: path.clone(), source })?;
        Ok((name.to_owned(), path))
    }

    /// Starts a node from its configuration; the first time, pins the ports
    /// it bound into the configuration for its restarts.
    async fn launch(&mut self, (name, config): (String, PathBuf)) -> Result<(), DeployError> {
        let (child, addresses) = spawn(self.network.command(&name, &self.binary), &name, &config, &self.dir)?;
        let url = |key: &str| addresses[key].as_str().map(|a| format!("https://{a}"));
        let node = Node {
            public_url: url("listen").unwrap_or_default(),
            admin_url: url("admin_listen").unwrap_or_default(),
            internal_url: url("internal_listen"),
            name,
            config,
            child: Some(child),
            commands: None,
            killed: false,
            trust: self.trust.clone(),
        };
        let text = std::fs::read_to_string(&node.config)
            .map_err(|source| DeployError::Io { path: node.config.clone(), source })?;
        // Each top-level `key = "127.0.0.1:0"` line becomes the address it
        // bound (a section's own `listen`, as `[home_group]`'s, is its own).
        let mut top_level = true;
        let pinned: Vec<String> = text
            .lines()
            .map(|line| {
                top_level &= !line.starts_with('[');
                let key = line.split(" = ").next().unwrap_or_default();
                match addresses[key].as_str() {
                    Some(address) if top_level && matches!(key, "listen" | "admin_listen" | "internal_listen") => {
                        format!("{key} = \"{address}\"")
                    }
                    _ => line.to_owned(),
                }
            })
            .collect();
        let text = pinned.join("\n") + "\n";
        std::fs::write(&node.config, text).map_err(|source| DeployError::Io { path: node.config.clone(), source })?;
        self.nodes.push(node);
        Ok(())
    }

    pub fn node(&self, name: &str) -> Result<&Node, DeployError> {
        self.nodes.iter().find(|n| n.name == name).ok_or_else(|| DeployError::Unknown(name.to_owned()))
    }

    fn node_mut(&mut self, name: &str) -> Result<&mut Node, DeployError> {
        self.nodes.iter_mut().find(|n| n.name == name).ok_or_else(|| DeployError::Unknown(name.to_owned()))
    }

    /// SIGKILL: the process ends at once, mid-write if it was writing.
    pub fn kill(&mut self, name: &str) -> Result<(), DeployError> {
        let node = self.node_mut(name)?;
        if node.commands.is_some() {
            node.command(|c| &c.kill, "kill", &[])?;
            node.killed = true;
            return Ok(());
        }
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// Starts a killed node again from its data directory, on its ports.
    pub async fn restart(&mut self, name: &str) -> Result<(), DeployError> {
        let command = self.network.command(name, &self.binary);
        let dir = self.dir.clone();
        let node = self.node_mut(name)?;
        if node.commands.is_some() {
            node.command(|c| &c.start, "start", &[])?;
            node.killed = false;
            return Ok(());
        }
        if node.child.is_none() {
            let (child, _) = spawn(command, &node.name, &node.config, &dir)?;
            node.child = Some(child);
        }
        Ok(())
    }

    /// SIGSTOP: the process keeps its sockets and answers nothing.
    pub fn stop(&self, name: &str) -> Result<(), DeployError> {
        self.node(name)?.signal("STOP")
    }

    /// SIGCONT.
    pub fn resume(&self, name: &str) -> Result<(), DeployError> {
        self.node(name)?.signal("CONT")
    }

    /// One call to a node's fault-injection routes.
    async fn inject(&self, name: &str, path: &str, body: Value) -> Result<(), DeployError> {
        let node = self.node(name)?;
        let fault = |detail: String| DeployError::Fault { node: name.to_owned(), detail };
        let admin = Admin::new(&node.admin_url, self.admin_token.clone())
            .and_then(|admin| admin.trusting(&self.trust))
            .map_err(|e| fault(e.to_string()))?;
        admin.call("POST", path, Some(body)).await.map(|_| ()).map_err(|e| fault(e.to_string()))
    }

    /// Arms `step` and waits (up to `within`) for the node to abort there.
    pub async fn crash_at(&mut self, name: &str, step: CrashPoint, within: Duration) -> Result<(), DeployError> {
        if self.attached {
            // Its end is seen as a process of the run's ending.
            let detail = "a crash point needs a process the runner started".into();
            return Err(DeployError::Fault { node: name.to_owned(), detail });
        }
        self.inject(name, "/admin/faults/crash", json!({ "at": step })).await?;
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            let node = self.node_mut(name)?;
            if let Some(child) = &mut node.child
                && let Ok(Some(_)) = child.try_wait()
            {
                node.child = None;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.inject(name, "/admin/faults/crash", json!({ "at": null })).await;
        Err(DeployError::Fault {
            node: name.to_owned(),
            detail: format!("its write path did not reach {} within {} s", step.name(), within.as_secs()),
        })
    }

    /// Cuts (or heals) the network between two nodes; a note when there
    /// was nothing to cut. With home as a group, `home` on one side is
    /// every member not on the other (the leader from the rest).
    pub fn partition(&self, a: &str, b: &str, cut: bool) -> Result<Option<String>, DeployError> {
        let side = |name: &str, other: &str| -> Vec<String> {
            match (name, self.home_door.is_some()) {
                ("home", true) => self.members().iter().map(|m| m.name.clone()).filter(|m| m != other).collect(),
                _ => vec![name.to_owned()],
            }
        };
        let mut notes = Vec::new();
        for x in side(a, b) {
            for y in side(b, a) {
                let (node, peer) = (self.node(&x)?, self.node(&y)?);
                if self.attached {
                    let fills = [("peer", peer.name.as_str()), ("peer_host", target::host(&peer.public_url))];
                    match cut {
                        true => node.command(|c| &c.partition, "partition", &fills)?,
                        false => node.command(|c| &c.heal, "heal", &fills)?,
                    }
                    continue;
                }
                notes.extend(self.network.partition(&x, &y, cut)?);
            }
        }
        Ok((!notes.is_empty()).then(|| notes.join("; ")))
    }

    fn disk(&self, name: &str) -> Result<&SmallDisk, DeployError> {
        self.disks.get(name).ok_or_else(|| DeployError::Unknown(format!("a small disk for {name}")))
    }

    /// Fills the node's small disk; answers how many bytes that took.
    pub fn fill_disk(&self, name: &str) -> Result<u64, DeployError> {
        Ok(self.disk(name)?.fill()?)
    }

    /// Deletes what `fill_disk` wrote.
    pub fn free_disk(&self, name: &str) -> Result<(), DeployError> {
        Ok(self.disk(name)?.free()?)
    }

    /// Moves the node's clock `skew_ms` from the machine's (0 puts it back).
    pub async fn skew_clock(&self, name: &str, skew_ms: i64) -> Result<(), DeployError> {
        self.inject(name, "/admin/faults/clock", json!({ "skew_ms": skew_ms })).await
    }
}

impl Deployment {
    /// Stops every node and deletes their data directories, keeping each
    /// node's configuration and log: a run that ended as expected needs no
    /// more than its report, and a smoke run in CI should not fill the disk.
    pub fn remove_data(mut self) -> Result<(), DeployError> {
        if self.attached {
            return Ok(());
        }
        self.halt();
        self.disks.clear();
        for node in &self.nodes {
            let data = self.dir.join(&node.name);
            std::fs::remove_dir_all(&data).map_err(|source| DeployError::Io { path: data, source })?;
        }
        Ok(())
    }

    fn halt(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Drop for Deployment {
    /// Nothing a run started outlives it, a stopped process included.
    fn drop(&mut self) {
        self.halt();
    }
}

/// Spawns `svc node` and reads its first line (the bound addresses). Its
/// log goes to `{dir}/{name}.log`, appended across restarts.
fn spawn(mut command: Command, name: &str, config: &Path, dir: &Path) -> Result<(Child, Value), DeployError> {
    let log_path = dir.join(format!("{name}.log"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|source| DeployError::Io { path: log_path.clone(), source })?;
    let mut child = command
        .args(["node", "--config"])
        .arg(config)
        .env("SVC_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| DeployError::Start { node: name.to_owned(), detail: e.to_string() })?;
    let mut line = String::new();
    let stdout =
        child.stdout.take().ok_or_else(|| DeployError::Start { node: name.to_owned(), detail: "no stdout".into() })?;
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| DeployError::Start { node: name.to_owned(), detail: e.to_string() })?;
    let addresses: Value = serde_json::from_str(&line).map_err(|_| {
        let _ = child.kill();
        DeployError::Start { node: name.to_owned(), detail: format!("see {}", log_path.display()) }
    })?;
    Ok((child, addresses))
}

/// Polls `/readyz` until it answers 200.
pub async fn wait_ready(node: &Node, within: Duration) -> Result<(), DeployError> {
    poll_ready(node, within, |_| true).await
}

/// Waits until `node` is ready and its index holds everything its log
/// does (`indexed_seq` at least its `head_seq` or `applied_seq`): a node
/// ready while its index is stuck (a shard that never took a write again)
/// has not converged.
pub async fn wait_caught_up(node: &Node, within: Duration) -> Result<(), DeployError> {
    poll_ready(node, within, |body| {
        let log = ["head_seq", "applied_seq"].iter().filter_map(|m| body[*m].as_u64()).max().unwrap_or(0);
        body["indexed_seq"].as_u64().is_some_and(|indexed| indexed >= log)
    })
    .await
}

/// Polls `/readyz` until it answers 200 with a body `done` accepts.
async fn poll_ready(
    node: &Node,
    within: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> Result<(), DeployError> {
    let transport = svc_client::transport::Transport::trusting(&node.public_url, &node.trust)
        .map_err(|e| DeployError::Start { node: node.name.clone(), detail: e.to_string() })?;
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        let request = axum::http::Request::get("/readyz").body(axum::body::Body::empty());
        if let Ok(request) = request
            && let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(2), transport.send(request)).await
            && answer.status == 200
            && done(&answer.json())
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(DeployError::NotReady { node: node.name.clone(), seconds: within.as_secs() })
}
