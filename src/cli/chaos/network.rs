//! The network a chaos run's nodes talk over, so a partition can cut it.
//!
//! - **Namespaces** (Linux, as root): each node runs in a network namespace
//!   of its own, joined to the others by a veth pair on a bridge the run
//!   makes. A partition between two nodes is a blackhole route for the
//!   other's address in each namespace: packets are dropped in silence, as
//!   a real partition drops them, while the runner (outside every
//!   namespace) still reaches both. Dropping the network deletes the
//!   namespaces and the bridge.
//! - **Loopback** (where namespaces are not allowed): every node on
//!   127.0.0.1, and each read region reaches home through two proxies the
//!   runner holds (home's public and internal listeners). A partition
//!   closes the proxied connections and holds new ones unanswered until it
//!   heals. Read regions have no link to each other, so a partition
//!   between two of them has nothing to cut there.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Why the network could not be made or changed.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {detail}")]
pub struct NetworkError {
    pub what: String,
    pub detail: String,
}

fn failed(what: impl Into<String>, detail: impl Into<String>) -> NetworkError {
    NetworkError { what: what.into(), detail: detail.into() }
}

/// Which kind of network a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetworkKind {
    /// Namespaces where the runner may make them, else loopback.
    #[default]
    Auto,
    Namespaces,
    Loopback,
}

/// Runs `ip` with `args`; its error output on failure.
fn ip(args: &[&str]) -> Result<(), NetworkError> {
    let output =
        Command::new("ip").args(args).output().map_err(|e| failed(format!("ip {}", args.join(" ")), e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(format!("ip {}", args.join(" ")), String::from_utf8_lossy(&output.stderr).trim().to_owned()))
    }
}

/// One namespace per node on one bridge.
pub struct Namespaces {
    bridge: String,
    /// Node name to (namespace, address).
    nodes: HashMap<String, (String, Ipv4Addr)>,
}

impl Namespaces {
    /// Makes the bridge and a namespace for each of `names`, on a /24 of
    /// 10.213.0.0/16 drawn from `tag` (distinct runs rarely share one).
    pub fn create(tag: &str, names: &[String]) -> Result<Namespaces, NetworkError> {
        let short: String = tag.chars().take(4).collect();
        let third = u8::from_str_radix(&short[..2.min(short.len())], 16).unwrap_or(1).max(1);
        let mut made = Namespaces { bridge: format!("svc{short}b"), nodes: HashMap::new() };
        let gateway = format!("10.213.{third}.1/24");
        ip(&["link", "add", &made.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &gateway, "dev", &made.bridge])?;
        ip(&["link", "set", &made.bridge, "up"])?;
        for (i, name) in names.iter().enumerate() {
            let namespace = format!("svc-chaos-{tag}-{name}");
            let address = Ipv4Addr::new(10, 213, third, i as u8 + 2);
            let (outside, inside) = (format!("svc{short}{i}h"), format!("svc{short}{i}n"));
            ip(&["netns", "add", &namespace])?;
            made.nodes.insert(name.clone(), (namespace.clone(), address));
            ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
            ip(&["link", "add", &outside, "type", "veth", "peer", "name", &inside])?;
            ip(&["link", "set", &inside, "netns", &namespace])?;
            ip(&["link", "set", &outside, "master", &made.bridge, "up"])?;
            ip(&["-n", &namespace, "addr", "add", &format!("{address}/24"), "dev", &inside])?;
            ip(&["-n", &namespace, "link", "set", &inside, "up"])?;
        }
        Ok(made)
    }

    fn node(&self, name: &str) -> Result<&(String, Ipv4Addr), NetworkError> {
        self.nodes.get(name).ok_or_else(|| failed(name, "has no namespace"))
    }

    /// Drops every packet between `a` and `b` (`add`), or stops dropping.
    fn blackhole(&self, a: &str, b: &str, add: bool) -> Result<(), NetworkError> {
        let ((ns_a, ip_a), (ns_b, ip_b)) = (self.node(a)?, self.node(b)?);
        let verb = if add { "add" } else { "del" };
        ip(&["-n", ns_a, "route", verb, "blackhole", &format!("{ip_b}/32")])?;
        ip(&["-n", ns_b, "route", verb, "blackhole", &format!("{ip_a}/32")])
    }
}

impl Drop for Namespaces {
    /// Deleting a namespace deletes its end of the veth pair, and so the pair.
    fn drop(&mut self) {
        for (namespace, _) in self.nodes.values() {
            let _ = ip(&["netns", "del", namespace]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// A TCP proxy on loopback that a partition can cut.
struct Proxy {
    address: SocketAddr,
    cut: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Result<Proxy, NetworkError> {
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| failed("a loopback proxy", e.to_string()))?;
        let address = listener.local_addr().map_err(|e| failed("a loopback proxy", e.to_string()))?;
        let (cut, watching) = watch::channel(false);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, upstream, watching.clone()));
            }
        });
        Ok(Proxy { address, cut, task })
    }
}

/// Relays one connection until either side closes or the link is cut. A
/// connection made while cut is held unanswered until the cut heals.
async fn relay(mut client: TcpStream, upstream: SocketAddr, mut cut: watch::Receiver<bool>) {
    if cut.wait_for(|cut| !*cut).await.is_err() {
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else { return };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = cut.wait_for(|cut| *cut) => {}
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Each read region's two proxies to home.
#[derive(Default)]
pub struct Proxies {
    links: Mutex<HashMap<String, [Proxy; 2]>>,
}

impl Proxies {
    /// Proxies for `region` to home's public and internal listeners; the
    /// addresses the region should be configured with.
    pub async fn link(&self, region: &str, home: [SocketAddr; 2]) -> Result<[SocketAddr; 2], NetworkError> {
        let link = [Proxy::start(home[0]).await?, Proxy::start(home[1]).await?];
        let addresses = [link[0].address, link[1].address];
        self.links.lock().map_err(|_| failed("proxies", "poisoned"))?.insert(region.to_owned(), link);
        Ok(addresses)
    }

    fn set(&self, region: &str, cut: bool) -> Result<bool, NetworkError> {
        let links = self.links.lock().map_err(|_| failed("proxies", "poisoned"))?;
        let Some(link) = links.get(region) else { return Ok(false) };
        for proxy in link {
            proxy.cut.send_replace(cut);
        }
        Ok(true)
    }
}

/// The network of one run.
pub enum Network {
    /// Loopback with no proxies: a run without partitions.
    Direct,
    Namespaces(Namespaces),
    Loopback(Arc<Proxies>),
}

impl Network {
    /// The network `kind` asks for; `Auto` tries namespaces and falls back
    /// to loopback, saying why.
    pub fn create(kind: NetworkKind, tag: &str, names: &[String]) -> Result<(Network, Option<String>), NetworkError> {
        match kind {
            NetworkKind::Loopback => Ok((Network::Loopback(Arc::default()), None)),
            NetworkKind::Namespaces => Namespaces::create(tag, names).map(|n| (Network::Namespaces(n), None)),
            NetworkKind::Auto => match Namespaces::create(tag, names) {
                Ok(made) => Ok((Network::Namespaces(made), None)),
                Err(e) => Ok((Network::Loopback(Arc::default()), Some(format!("no network namespaces ({e})")))),
            },
        }
    }

    pub fn kind(&self) -> NetworkKind {
        match self {
            Network::Namespaces(_) => NetworkKind::Namespaces,
            Network::Direct | Network::Loopback(_) => NetworkKind::Loopback,
        }
    }

    /// The address node `name` listens on.
    pub fn address(&self, name: &str) -> IpAddr {
        match self {
            Network::Namespaces(n) => n.node(name).map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |(_, a)| IpAddr::V4(*a)),
            Network::Direct | Network::Loopback(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }

    /// The command that runs a program inside node `name`'s network.
    pub fn command(&self, name: &str, program: &std::path::Path) -> Command {
        match self {
            Network::Namespaces(n) if let Ok((namespace, _)) = n.node(name) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", namespace]).arg(program);
                command
            }
            _ => Command::new(program),
        }
    }

    /// Cuts (or heals) the network between `a` and `b`. Answers a note when
    /// there was nothing to cut (two read regions on loopback).
    pub fn partition(&self, a: &str, b: &str, cut: bool) -> Result<Option<String>, NetworkError> {
        match self {
            Network::Direct => Err(failed("partition", "this run's network has no links to cut")),
            Network::Namespaces(n) => n.blackhole(a, b, cut).map(|_| None),
            Network::Loopback(proxies) => {
                let region = if a == "home" { b } else { a };
                let other = if a == "home" { a } else { b };
                if other != "home" || !proxies.set(region, cut)? {
                    return Ok(Some(format!("{a} and {b} have no link on loopback: nothing to cut")));
                }
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        address
    }

    async fn round_trip(address: SocketAddr) -> Option<Vec<u8>> {
        let attempt = async {
            let mut stream = TcpStream::connect(address).await.ok()?;
            stream.write_all(b"ping").await.ok()?;
            let mut buf = [0u8; 4];
            stream.read_exact(&mut buf).await.ok()?;
            Some(buf.to_vec())
        };
        tokio::time::timeout(std::time::Duration::from_millis(300), attempt).await.ok().flatten()
    }

    #[tokio::test]
    async fn a_loopback_partition_holds_new_connections_and_closes_open_ones_until_it_heals() {
        let upstream = echo().await;
        let proxies = Arc::new(Proxies::default());
        let [public, _] = proxies.link("eu", [upstream, upstream]).await.unwrap();
        let network = Network::Loopback(proxies);
        assert_eq!(round_trip(public).await.as_deref(), Some(&b"ping"[..]));

        let mut open = TcpStream::connect(public).await.unwrap();
        open.write_all(b"ping").await.unwrap();
        open.read_exact(&mut [0u8; 4]).await.unwrap();
        assert_eq!(network.partition("eu", "home", true).unwrap(), None);
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(std::time::Duration::from_secs(1), open.read_to_end(&mut rest)).await;
        assert!(matches!(closed, Ok(Ok(0))), "an open connection is closed by the cut: {closed:?}");
        assert_eq!(round_trip(public).await, None, "a new connection is held unanswered");

        assert_eq!(network.partition("home", "eu", false).unwrap(), None);
        assert_eq!(round_trip(public).await.as_deref(), Some(&b"ping"[..]));
        let note = network.partition("eu", "ap", true).unwrap();
        assert!(note.is_some_and(|n| n.contains("nothing to cut")));
    }

    fn routes(namespace: &str) -> String {
        let output = Command::new("ip").args(["-n", namespace, "route", "show"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn namespaces() -> String {
        let output = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    // Where the machine allows namespaces (root on Linux, as CI is), a
    // partition is a blackhole route each way and nothing outlives the
    // network; elsewhere `auto` falls back to loopback and says why.
    #[test]
    fn namespaces_cut_with_blackhole_routes_and_leave_nothing_behind() {
        let names = ["home".to_owned(), "eu".to_owned(), "ap".to_owned()];
        let tag = hex::encode(svc_clock::random::<4>());
        let (network, note) = Network::create(NetworkKind::Auto, &tag, &names).unwrap();
        let Network::Namespaces(made) = &network else {
            assert!(note.is_some_and(|n| n.starts_with("no network namespaces")));
            return;
        };
        let (eu, ap) = (made.nodes["eu"].clone(), made.nodes["ap"].clone());
        assert_ne!(eu.1, ap.1);
        assert_eq!(network.address("eu"), IpAddr::V4(eu.1));
        assert!(namespaces().contains(&eu.0));
        assert_eq!(network.partition("eu", "ap", true).unwrap(), None);
        assert!(routes(&eu.0).contains(&format!("blackhole {}", ap.1)), "{}", routes(&eu.0));
        assert!(routes(&ap.0).contains(&format!("blackhole {}", eu.1)));
        assert!(!routes(&made.nodes["home"].0).contains("blackhole"), "home is not cut");
        network.partition("ap", "eu", false).unwrap();
        assert!(
            !routes(&eu.0).contains("blackhole") && !routes(&ap.0).contains("blackhole"),
            "healed either way round"
        );
        network.partition("eu", "ap", false).unwrap_err();
        drop(network);
        assert!(!namespaces().contains(&tag), "every namespace is deleted");
    }
}
