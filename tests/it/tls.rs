//! TLS on a node's listeners (issue 48, part 1): rustls from the files the
//! config names, HTTP/2 by ALPN, a client that believes the node only by
//! the CA it is given, and a certificate read again without a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::Request;
use svc_client::transport::Transport;
use svc_client::trust::Trust;
use svc_node::config::TlsConfig;

use crate::common::{Home, eventually};

/// A deployment's CA: its file, and what issues its certificates.
struct Ca {
    file: PathBuf,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("svc test CA {name}"));
        let cert = params.self_signed(&key).unwrap();
        let file = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&file, cert.pem()).unwrap();
        Ca { file, issuer: rcgen::Issuer::new(params, key) }
    }

    /// A node's `[tls]`: a certificate of this CA for loopback, written in
    /// `dir` as `name` (over what is there), and `trusted` as the CA it
    /// believes as a client.
    fn tls(&self, dir: &Path, name: &str, trusted: Option<&Path>) -> TlsConfig {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        leaf.subject_alt_names.push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
        let (cert, key) = (leaf.signed_by(&key, &self.issuer).unwrap().pem(), key.serialize_pem());
        let tls = TlsConfig {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}-key.pem")),
            ca: trusted.map(Path::to_owned),
        };
        std::fs::write(&tls.cert, cert).unwrap();
        std::fs::write(&tls.key, key).unwrap();
        tls
    }
}

async fn healthz(transport: &Transport) -> Result<u16, String> {
    let request = Request::get("/healthz").body(Body::empty()).unwrap();
    transport.send(request).await.map(|a| a.status).map_err(|e| e.to_string())
}

fn https(addr: SocketAddr) -> String {
    format!("https://{addr}")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_listener_speaks_tls_and_a_client_believes_it_by_the_ca_it_is_given() {
    let files = tempfile::tempdir().unwrap();
    let ca = Ca::new(files.path(), "first");
    let tls = ca.tls(files.path(), "node", None);
    let (_home, node) = Home::listening(|c| c.tls = Some(tls)).await;
    let trust = Trust::with_ca(Some(&ca.file)).unwrap();

    // The public and admin listeners both, HTTP/2 by ALPN (an HTTP/2-only
    // client gets its answer only if the server chose h2). The admin
    // listener has no `/healthz`: its 404 is an answer over TLS.
    for (addr, status) in [(node.addr, 200), (node.admin_addr, 404)] {
        let h2 = Transport::http2(&https(addr), &trust).unwrap();
        assert_eq!(healthz(&h2).await, Ok(status), "{addr}");
        let any = Transport::trusting(&https(addr), &trust).unwrap();
        assert_eq!(healthz(&any).await, Ok(status), "{addr}");
    }

    // A client that believes only the system's roots is refused, told why.
    let refused = healthz(&Transport::new(&https(node.addr)).unwrap()).await.unwrap_err();
    assert!(refused.contains("UnknownIssuer"), "{refused}");
    assert!(refused.contains("--ca"), "{refused}");

    // No plain HTTP on a TLS listener.
    assert!(healthz(&Transport::new(&format!("http://{}", node.addr)).unwrap()).await.is_err());
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_replaced_on_disk_is_served_after_sighup_and_open_connections_stay() {
    let files = tempfile::tempdir().unwrap();
    let (first, second) = (Ca::new(files.path(), "first"), Ca::new(files.path(), "second"));
    let tls = first.tls(files.path(), "node", None);
    let (_home, node) = Home::listening(|c| c.tls = Some(tls)).await;
    let believes_first = Trust::with_ca(Some(&first.file)).unwrap();
    let believes_second = Trust::with_ca(Some(&second.file)).unwrap();
    let open = Transport::http2(&https(node.addr), &believes_first).unwrap();
    assert_eq!(healthz(&open).await, Ok(200));

    // The second CA's pair, written over the files the node reads.
    second.tls(files.path(), "node", None);
    let pid = std::process::id().to_string();
    assert!(std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    eventually("the new certificate is served to new connections", async || {
        let fresh = Transport::http2(&https(node.addr), &believes_second).unwrap();
        healthz(&fresh).await == Ok(200)
    })
    .await;
    // A client of its own (no TLS session of the old one to resume).
    let first_only = Trust::with_ca(Some(&first.file)).unwrap();
    let fresh = Transport::http2(&https(node.addr), &first_only).unwrap();
    assert!(healthz(&fresh).await.is_err(), "the old certificate is no longer served");
    // The connection opened under the old certificate was not dropped.
    assert_eq!(healthz(&open).await, Ok(200));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_key_does_not_match_its_certificate_does_not_start() {
    let files = tempfile::tempdir().unwrap();
    let (first, second) = (Ca::new(files.path(), "first"), Ca::new(files.path(), "second"));
    // One certificate, and another certificate's key.
    let cert = first.tls(files.path(), "cert", None).cert;
    let key = second.tls(files.path(), "other", None).key;
    let tls = TlsConfig { cert, key, ca: None };
    let dir = tempfile::tempdir().unwrap();
    let mut config = svc_node::config::NodeConfig::local_home(
        dir.path().to_owned(),
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:0".parse().unwrap(),
    );
    config.tls = Some(tls.clone());
    let refused = svc_http::node::Node::start(config, std::sync::Arc::new(svc_clock::SystemClock)).await.err();
    let refused = refused.expect("a mismatched pair is refused").to_string();
    assert!(refused.contains("cert.pem") && refused.contains("key.pem"), "{refused}");
}

/// Home and a read region, each on TLS from one deployment CA: the region
/// that believes the CA replicates over the encrypted link and is ready; a
/// region that does not believe home's certificate takes nothing from it.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_replicates_over_tls_only_from_a_home_it_believes() {
    use svc_node::config::{NodeConfig, RegionCredential, ReplicationConfig, Role};
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "deployment");
    let token = |r: &str| format!("{r}-token-of-at-least-thirty-two-characters");
    let loopback = "127.0.0.1:0".parse().unwrap();
    let node = |region: &str, role: Role| {
        let mut config = NodeConfig::local_home(dir.path().join(region), loopback, loopback);
        config.region = region.into();
        config.role = role;
        config
    };
    let mut home = node("home", Role::Home);
    home.internal_listen = Some(loopback);
    home.replication =
        Some(ReplicationConfig::home(["eu", "ap"].map(|r| RegionCredential::new(r, &token(r))).to_vec()));
    home.tls = Some(ca.tls(dir.path(), "home", Some(&ca.file)));
    let clock = || std::sync::Arc::new(svc_clock::SystemClock);
    let home = svc_http::node::Node::start(home, clock()).await.unwrap();
    let read = |region: &str, trusted: Option<&Path>| {
        let mut config = node(region, Role::Read);
        config.replication = Some(ReplicationConfig::read(
            Some(https(home.addr)),
            Some(https(home.internal_addr.unwrap())),
            &token(region),
        ));
        config.tls = Some(ca.tls(dir.path(), region, trusted));
        config
    };
    let eu = svc_http::node::Node::start(read("eu", Some(&ca.file)), clock()).await.unwrap();
    let ap = svc_http::node::Node::start(read("ap", None), clock()).await.unwrap();

    let trust = Trust::with_ca(Some(&ca.file)).unwrap();
    let ready = |addr: SocketAddr| {
        let trust = trust.clone();
        async move {
            let transport = Transport::trusting(&https(addr), &trust).unwrap();
            let request = Request::get("/readyz").body(Body::empty()).unwrap();
            transport.send(request).await.unwrap()
        }
    };
    eventually("the region that believes home's CA replicates and is ready", async || {
        ready(eu.addr).await.status == 200
    })
    .await;
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    assert!(svc_node::replication::last_seq(&eu.state.store).unwrap() >= head.min(1), "it applied home's log");
    // The other has had as long: it took nothing from a home it does not believe.
    assert_eq!(ready(ap.addr).await.status, 503);
    assert_eq!(svc_node::replication::last_seq(&ap.state.store).unwrap(), 0);
    for node in [ap, eu, home] {
        node.stop().await;
    }
}

/// The front door serves TLS and reaches its regions over TLS, believing
/// them by the deployment's CA.
#[tokio::test(flavor = "multi_thread")]
async fn the_front_door_speaks_tls_on_both_sides() {
    use svc_http::front_door::{FrontDoor, FrontDoorConfig, REGION_HEADER, Route};
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "deployment");
    let tls = ca.tls(dir.path(), "home", None);
    let (_home, node) = Home::listening(|c| c.tls = Some(tls)).await;
    let door = FrontDoor::start(FrontDoorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        probe_ms: 100,
        regions: vec![Route { region: "home".into(), url: https(node.addr), latency_ms: None, delay_ms: None }],
        listener: Default::default(),
        tls: Some(ca.tls(dir.path(), "door", Some(&ca.file))),
    })
    .await
    .unwrap();
    let trust = Trust::with_ca(Some(&ca.file)).unwrap();
    let through = Transport::trusting(&https(door.addr), &trust).unwrap();
    let request = Request::get("/healthz").body(Body::empty()).unwrap();
    let answer = through.send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    assert_eq!(answer.headers[REGION_HEADER], "home");
    door.stop().await;
    node.stop().await;
}

/// `svc ca init` makes a deployment's CA once, `svc ca issue` a region's
/// certificate from it, and a node serves it to a client that believes
/// the CA; the keys are the owner's alone.
#[tokio::test(flavor = "multi_thread")]
async fn svc_ca_makes_the_certificates_a_node_serves() {
    use std::os::unix::fs::PermissionsExt;
    use svc::commands::ca;
    let dir = tempfile::tempdir().unwrap();
    let tls_dir = dir.path().join("tls");
    ca::init(&tls_dir).unwrap();
    let again = ca::init(&tls_dir).unwrap_err().to_string();
    assert!(again.contains("already there"), "{again}");
    ca::issue(&tls_dir, "home", true, &[], 30).unwrap();
    for key in ["ca-key.pem", "home-key.pem"] {
        let mode = std::fs::metadata(tls_dir.join(key)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{key}");
    }
    assert!(ca::issue(&tls_dir, "../elsewhere", true, &[], 30).is_err(), "a name is not a path");

    let tls = TlsConfig { cert: tls_dir.join("home.pem"), key: tls_dir.join("home-key.pem"), ca: None };
    let (_home, node) = Home::listening(|c| c.tls = Some(tls)).await;
    let trust = Trust::with_ca(Some(&tls_dir.join("ca.pem"))).unwrap();
    let transport = Transport::http2(&https(node.addr), &trust).unwrap();
    assert_eq!(healthz(&transport).await, Ok(200));
    node.stop().await;
}
