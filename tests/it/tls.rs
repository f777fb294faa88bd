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

/// A deployment's CA, made by `svc ca init` in a folder of its own.
struct Ca {
    dir: PathBuf,
    file: PathBuf,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let dir = dir.join(name);
        svc::ca::init(&dir).unwrap();
        Ca { file: dir.join("ca.pem"), dir }
    }

    /// A node's `[tls]`: this CA's certificate for region `name` on
    /// loopback (`svc ca issue --region`), copied into `into` (over what is
    /// there), and `trusted` as the CA it believes as a client.
    fn tls(&self, into: &Path, name: &str, trusted: Option<&Path>) -> TlsConfig {
        svc::ca::issue(&self.dir, name, true, &[], 30).unwrap();
        let tls = TlsConfig {
            cert: into.join(format!("{name}.pem")),
            key: into.join(format!("{name}-key.pem")),
            ca: trusted.map(Path::to_owned),
        };
        if into != self.dir {
            std::fs::copy(self.dir.join(format!("{name}.pem")), &tls.cert).unwrap();
            std::fs::copy(self.dir.join(format!("{name}-key.pem")), &tls.key).unwrap();
        }
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

/// A region's token on home's link.
fn token(region: &str) -> String {
    format!("{region}-token-of-at-least-thirty-two-characters")
}

/// Home on TLS from `ca`, its internal listener mutual TLS, knowing the
/// read regions eu and ap by their tokens.
async fn linked_home(dir: &Path, ca: &Ca) -> svc_http::node::Node {
    use svc_node::config::{NodeConfig, RegionCredential, ReplicationConfig};
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.join("home"), loopback, loopback);
    config.internal_listen = Some(loopback);
    config.replication =
        Some(ReplicationConfig::home(["eu", "ap"].map(|r| RegionCredential::new(r, &token(r))).to_vec()));
    config.tls = Some(ca.tls(dir, "home", Some(&ca.file)));
    svc_http::node::Node::start(config, std::sync::Arc::new(svc_clock::SystemClock)).await.unwrap()
}

/// Home and a read region, each on TLS from one deployment CA: the region
/// that believes the CA replicates over the mutual-TLS link and is ready; a
/// region that does not believe home's certificate takes nothing from it.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_replicates_over_tls_only_from_a_home_it_believes() {
    use svc_node::config::{NodeConfig, ReplicationConfig, Role};
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "deployment");
    let home = linked_home(dir.path(), &ca).await;
    let clock = || std::sync::Arc::new(svc_clock::SystemClock);
    let read = |region: &str, trusted: Option<&Path>| {
        let loopback = "127.0.0.1:0".parse().unwrap();
        let mut config = NodeConfig::local_home(dir.path().join(region), loopback, loopback);
        config.region = region.into();
        config.role = Role::Read;
        config.replication = Some(ReplicationConfig::read(
            Some(https(home.addr)),
            Some(https(home.internal_addr.unwrap())),
            &token(region),
        ));
        config.tls = Some(ca.tls(dir.path(), region, trusted));
        config
    };
    let eu = svc_http::node::Node::start(read("eu", Some(&ca.file)), clock()).await.unwrap();
    // ap believes another deployment's CA, not the one home's certificate is of.
    let other = Ca::new(dir.path(), "other");
    let ap = svc_http::node::Node::start(read("ap", Some(&other.file)), clock()).await.unwrap();

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

/// Home's internal listener is mutual TLS under the deployment's CA, and
/// the region's MAC stays the second factor: home answers a region only
/// with its own certificate and its own token, refuses a client with no
/// certificate in the handshake, and a region believes home only by home's
/// own certificate.
#[tokio::test(flavor = "multi_thread")]
async fn home_answers_a_region_only_with_its_own_certificate_and_its_own_token() {
    use svc_node::replication::link::{HomeLink, HomeUrls};
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "deployment");
    let home = linked_home(dir.path(), &ca).await;
    let (public, internal) = (https(home.addr), https(home.internal_addr.unwrap()));

    // A pull of home's log by `region` with `token`, showing `shown`'s
    // certificate and expecting home's to name `home_is`.
    let pull = async |shown: &TlsConfig, home_is: &str, region: &str, token: String| {
        let trust = Trust::link(&ca.file, home_is, (&shown.cert, &shown.key)).unwrap();
        let urls = HomeUrls { members: vec![(&public, &internal)], trust: &trust, link_trust: &trust };
        let clock = std::sync::Arc::new(svc_clock::SystemClock);
        let link = HomeLink::new(urls, token, region.to_owned(), 1, clock).unwrap();
        let answer = link.send("GET", "/internal/v1/log?after=0", Vec::new(), std::time::Duration::from_secs(5));
        answer.await.map(|a| a.status).map_err(|e| format!("{e} ({e:?})"))
    };
    let (eu, ap) = (ca.tls(dir.path(), "eu", None), ca.tls(dir.path(), "ap", None));
    assert_eq!(pull(&eu, "home", "eu", token("eu")).await, Ok(200), "eu's certificate and eu's token");

    // ap's certificate with eu's stolen token: refused.
    let refused = pull(&ap, "home", "eu", token("eu")).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");
    // eu's stolen certificate with a guessed token: refused.
    let refused = pull(&eu, "home", "eu", token("guessed")).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");
    // A certificate another CA issued, naming eu: refused in the handshake.
    let other = Ca::new(dir.path(), "other");
    let forged = other.tls(&other.dir, "eu", None);
    let refused = pull(&forged, "home", "eu", token("eu")).await.unwrap_err();
    assert!(!refused.contains("401"), "no request was answered: {refused}");
    // No certificate at all: refused in the handshake, so no request (head
    // or body) can reach home's routes; the client reads the alert.
    let refused = without_certificate(home.internal_addr.unwrap(), &ca.file).await;
    assert!(refused.contains("CertificateRequired"), "{refused}");

    // A region believes home only by a certificate naming home: one that
    // expects another region there refuses home's answers.
    let refused = pull(&eu, "ap", "eu", token("eu")).await.unwrap_err();
    assert!(refused.contains(r#"OtherRegion { named: ["home"], expected: "ap" }"#), "{refused}");
    assert!(!refused.contains("--ca"), "the CA is believed; the name is what is wrong: {refused}");
    home.stop().await;
}

/// A raw TLS client that believes `ca` and shows no certificate: once its
/// side of the handshake is done it reads what the server says (a request
/// written now would race the server's refusal), and answers it.
async fn without_certificate(addr: SocketAddr, ca: &Path) -> String {
    use tokio::io::AsyncReadExt;
    let roots = svc_client::trust::deployment_roots(ca).unwrap();
    let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::from(addr.ip());
    let mut tls = match connector.connect(name, tcp).await {
        Ok(tls) => tls,
        Err(e) => return e.to_string(),
    };
    let mut said = Vec::new();
    match tokio::time::timeout(std::time::Duration::from_secs(10), tls.read_to_end(&mut said)).await {
        Ok(Ok(_)) => format!("closed, having said: {}", String::from_utf8_lossy(&said)),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "the server waited for a request".into(),
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
        allow_plain_http: false,
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
    use svc::ca;
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

/// With `[tls]`, the link is mutual TLS or nothing: a node that names no CA
/// for it, or a read region that reaches home's internal listener over
/// plain HTTP, does not start, told which setting.
#[test]
fn a_link_without_its_ca_or_over_plain_http_is_refused_by_name() {
    use svc_node::config::{NodeConfig, ReplicationConfig, Role};
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut read = NodeConfig::local_home("unused".into(), loopback, loopback);
    read.role = Role::Read;
    read.replication = Some(ReplicationConfig::read(
        Some("https://home:8443".into()),
        Some("https://home:8444".into()),
        "a-token-of-at-least-thirty-two-characters",
    ));
    read.tls = Some(TlsConfig { cert: "eu.pem".into(), key: "eu-key.pem".into(), ca: None });
    assert!(read.check_link_tls().unwrap_err().to_string().starts_with("tls.ca:"));
    read.tls.as_mut().unwrap().ca = Some("ca.pem".into());
    assert!(read.check_link_tls().is_ok());
    read.replication.as_mut().unwrap().internal_url = Some("http://home:8444".into());
    let refused = read.check_link_tls().unwrap_err().to_string();
    assert!(refused.starts_with("replication.internal_url http://home:8444"), "{refused}");
    // Without [tls] a plain link stays what the config says.
    read.tls = None;
    assert!(read.check_link_tls().is_ok());
}

/// `svc loadgen` over `https://`: its connections believe the CA they are
/// given (and fail, named, without it), keep-alive or one per request.
#[tokio::test(flavor = "multi_thread")]
async fn the_load_generator_speaks_tls_to_a_region() {
    use svc::loadgen::{LoadgenError, Plan, product_mix, run};
    let files = tempfile::tempdir().unwrap();
    let ca = Ca::new(files.path(), "deployment");
    let tls = ca.tls(files.path(), "home", None);
    let (_home, node) = Home::listening(|c| c.tls = Some(tls)).await;
    let plan = |trust: Trust, connection_per_request: bool| Plan {
        base_url: https(node.addr),
        authority: "api.svc.localhost".into(),
        keys: vec![svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[7; 32]).unwrap()],
        connections: 2,
        rate: Some(100.0),
        warmup: std::time::Duration::from_millis(100),
        duration: std::time::Duration::from_millis(400),
        queries: product_mix(1, 4),
        trust,
        connection_per_request,
        sandbox_grant: false,
    };
    let believed = Trust::with_ca(Some(&ca.file)).unwrap();
    for per_request in [false, true] {
        let report = run(plan(believed.clone(), per_request)).await.unwrap();
        // An unregistered key: every search is answered, 401, over TLS.
        assert_eq!((report.requests, report.transport_errors), (40, 0), "{per_request}");
        assert_eq!(report.statuses.keys().collect::<Vec<_>>(), [&401], "{per_request}");
    }
    let refused = run(plan(Trust::system(), false)).await.expect_err("a certificate not believed");
    assert!(matches!(refused, LoadgenError::Tls { .. }), "{refused}");
    assert!(refused.to_string().contains("UnknownIssuer"), "{refused}");
    node.stop().await;
}

// Home's group over mutual TLS: each member shows the deployment CA's
// certificate for home and believes the others only by it; the group
// forms, its leader takes a write, and a client without a certificate
// gets no Raft message through to a member.
#[tokio::test(flavor = "multi_thread")]
async fn home_s_group_speaks_mutual_tls_among_its_members() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "ca");
    let mut configs = crate::group::group_configs(dir.path());
    for config in &mut configs {
        config.tls = Some(ca.tls(&ca.dir, "home", Some(&ca.file)));
        let group = config.home_group.as_mut().unwrap();
        for member in &mut group.members {
            member.url = member.url.replace("http://", "https://");
        }
    }
    let clock: svc_clock::SharedClock = std::sync::Arc::new(svc_clock::SystemClock);
    let nodes = crate::group::start_members(&configs, &clock).await;
    let leader = crate::group::leading(&nodes).await;
    let admin = https(configs[leader as usize - 1].admin_listen);
    let trust = Trust::with_ca(Some(&ca.file)).unwrap();
    let request = Request::post("/admin/companies")
        .header("authorization", format!("Bearer {}", configs[0].admin_token))
        .header("content-type", "application/json")
        .body(Body::from(r#"{"name":"Over TLS"}"#))
        .unwrap();
    let made = Transport::trusting(&admin, &trust).unwrap().send(request).await.unwrap();
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.bytes));

    let member = configs[0].home_group.as_ref().unwrap().listen;
    let refused = without_certificate(member, &ca.file).await;
    assert!(refused.contains("CertificateRequired"), "{refused}");
    for (_, node) in nodes {
        node.stop().await;
    }
}
