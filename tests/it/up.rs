//! `svc up`: home and two read regions in one process, each on its own
//! port, behind a front door that routes to the region its probes measure
//! nearest and fails over when a region goes down.

use std::time::Duration;

use serde_json::json;
use svc::commands::up::{Plan, Up};
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;
use svc_http::front_door::{FrontDoor, FrontDoorConfig, REGION_HEADER, Route};
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{ai_caller, ensure_seeded};

async fn get(base: &str, path: &str) -> svc_client::transport::Answer {
    let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
    Transport::new(base).unwrap().send(request).await.unwrap()
}

fn region_of(answer: &svc_client::transport::Answer) -> String {
    answer.headers.get(REGION_HEADER).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn svc_up_runs_three_regions_behind_a_front_door_that_routes_to_the_nearest_and_fails_over() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::on_free_ports(dir.path().to_owned());
    let mut up = Up::start(&plan).await.unwrap();
    let door = format!("http://{}", up.door.addr);
    let roles: Vec<(String, bool)> =
        up.nodes.iter().map(|n| (n.state.config.region.clone(), n.state.home.is_some())).collect();
    assert_eq!(roles, [("home".into(), true), ("eu".into(), false), ("ap".into(), false)]);
    // Each region answers on its own port too.
    for node in &up.nodes {
        let health = get(&format!("http://{}", node.addr), "/healthz").await.json();
        assert_eq!(health["region"], node.state.config.region.as_str());
    }

    let home = &up.nodes[0];
    let sizes = Sizes::products_only(1, 10);
    let corpus = generate(14, sizes);
    let country = corpus.businesses[0].country.clone();
    ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let (key, grant) = ai_caller(&home.state, "Door AI", 46).await.unwrap();
    let client = RetrievalClient::new(&door, "api.svc.localhost", key, grant).unwrap();
    let search = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": country}]},
        "sort_by": "published_at:desc", "limit": 5}))
    .unwrap();

    // The nearest ready region answers: eu, once it has caught up.
    let mut served = None;
    for _ in 0..800 {
        let answer = client.call("POST", "/v1/search", search.clone()).await.unwrap();
        if answer.status == 200 && region_of(&answer) == "eu" && !answer.json()["rows"].as_array().unwrap().is_empty() {
            served = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let served = served.expect("eu served a search through the door");
    assert_eq!(served.json()["rows"].as_array().unwrap().len(), 5);
    // A business route through the door is answered by eu, which forwards it home.
    let catalogue = get(&door, "/v1/catalogue").await;
    assert_eq!(region_of(&catalogue), "eu");
    assert_eq!(catalogue.status, get(&format!("http://{}", home.addr), "/v1/catalogue").await.status);

    // eu goes down: the very next requests go to home, the next nearest.
    // A second door that probes only at its start, so only a refused
    // connection can tell it eu is gone.
    let routes = up.door.table().into_iter().map(|row| row.route).collect();
    let config = FrontDoorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        probe_ms: 3_600_000,
        regions: routes,
        listener: Default::default(),
        tls: None,
        allow_plain_http: true,
    };
    let blind = FrontDoor::start(config).await.unwrap();
    let eu = up.nodes.remove(1);
    eu.stop().await;
    for path in ["/healthz", "/v1/catalogue"] {
        let answer = get(&format!("http://{}", blind.addr), path).await;
        assert_eq!(region_of(&answer), "home", "a request without a body fails over: {path}");
        assert_ne!(answer.status, 503);
    }
    blind.stop().await;
    let answer = client.call("POST", "/v1/search", search.clone()).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    assert_eq!(region_of(&answer), "home");
    assert_eq!(answer.json()["rows"], served.json()["rows"], "the same rows from another region");
    let table = up.door.table();
    assert_eq!(table.last().map(|row| row.route.region.as_str()), Some("eu"), "a down region goes last");
    up.stop().await;
}

/// A stand-in region for the door alone: answers every request 200 with
/// its name.
// A write through the door lands at eu, which forwards it to home: the
// operator follows it across both nodes by its trace id.
#[tokio::test(flavor = "multi_thread")]
async fn svc_admin_trace_follows_one_request_through_the_door_a_region_and_home() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::on_free_ports(dir.path().to_owned());
    let up = Up::start(&plan).await.unwrap();
    let door = format!("http://{}", up.door.addr);
    let mut followed = None;
    for attempt in 0..400u32 {
        let trace = format!("{:032x}", 0x5eed_0000 + attempt);
        let request = axum::http::Request::get("/v1/catalogue")
            .header("traceparent", format!("00-{trace}-00000000000000aa-01"))
            .body(axum::body::Body::empty())
            .unwrap();
        let answer = Transport::new(&door).unwrap().send(request).await.unwrap();
        if region_of(&answer) == "eu" {
            followed = Some(trace);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let trace = followed.expect("the door sent a request to eu");
    let (home, eu) = (&up.nodes[0], &up.nodes[1]);
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["admin", "--url", &format!("http://{}", home.admin_addr)])
        .arg("--token-file")
        .arg(dir.path().join("home/admin_token"))
        .args(["trace", &trace, "--node"])
        .arg(format!("http://{}={}", eu.admin_addr, dir.path().join("eu/admin_token").display()))
        .env("SVC_LOG", "warn")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let followed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let hops = followed["hops"].as_array().unwrap();
    let regions: Vec<&str> = hops.iter().map(|h| h["region"].as_str().unwrap()).collect();
    assert_eq!(regions, ["eu", "home"], "{followed}");
    assert!(hops.iter().all(|h| h["trace_id"] == trace.as_str() && h["path"] == "/v1/catalogue"));
    assert_ne!(hops[0]["parent_span_id"], "00000000000000aa", "the door is a hop of its own");
    assert_eq!(hops[1]["parent_span_id"], hops[0]["span_id"], "home's parent is eu's span");
    up.stop().await;
}

/// A plain-HTTP door on loopback before `regions`, probing every 20 ms.
async fn door_probing_often(regions: Vec<Route>) -> FrontDoor {
    let config = FrontDoorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        probe_ms: 20,
        regions,
        listener: Default::default(),
        tls: None,
        allow_plain_http: true,
    };
    FrontDoor::start(config).await.unwrap()
}

async fn answering(name: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(move || async move { name });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

// The latency table is measured, not configured: the region configured as
// nearest but measured 40 ms away is not the one the door leads with.
#[tokio::test(flavor = "multi_thread")]
async fn the_front_door_leads_with_the_region_its_probes_measure_nearest() {
    let (far, near) = (answering("far").await, answering("near").await);
    let door = door_probing_often(vec![
        Route { region: "far".into(), url: far, latency_ms: Some(1), delay_ms: Some(40) },
        Route { region: "near".into(), url: near, latency_ms: Some(500), delay_ms: None },
    ])
    .await;
    // Several probes in: each estimate is measured and the order holds.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let table = door.table();
    let regions: Vec<&str> = table.iter().map(|row| row.route.region.as_str()).collect();
    assert_eq!(regions, ["near", "far"]);
    assert!(table.iter().all(|row| row.latency.measured()), "{table:?}");
    let (near_ms, far_ms) = (table[0].latency.ms().unwrap(), table[1].latency.ms().unwrap());
    assert!(far_ms >= 40.0 && near_ms < far_ms, "near {near_ms} ms, far {far_ms} ms");
    let answer = get(&format!("http://{}", door.addr), "/anything").await;
    assert_eq!((region_of(&answer).as_str(), answer.bytes.as_slice()), ("near", b"near".as_slice()));
    door.stop().await;
}

// A region that took a request and failed before answering may have
// served it: the door neither sends it to another region nor answers 503
// (which says "not served, sign it again", and would bill twice); the
// caller's connection is cut, as the region's own was.
#[tokio::test(flavor = "multi_thread")]
async fn a_region_failing_mid_request_leaves_its_caller_without_an_answer_not_a_refusal() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let crashing = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/readyz", axum::routing::get(|| async { "ready" })).fallback(|| async {
        if std::hint::black_box(true) {
            panic!("the region fails after taking the request");
        }
        "never"
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().route("/readyz", axum::routing::get(|| async { "ready" })).fallback(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { "other" }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let door = door_probing_often(vec![
        Route { region: "crashing".into(), url: crashing, latency_ms: Some(1), delay_ms: None },
        Route { region: "other".into(), url: other, latency_ms: Some(500), delay_ms: Some(40) },
    ])
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(door.table()[0].route.region, "crashing", "the door leads with the nearer region");
    let request = axum::http::Request::post("/v1/search").body(axum::body::Body::from("{}")).unwrap();
    let answer = Transport::new(&format!("http://{}", door.addr)).unwrap().send(request).await;
    assert!(answer.is_err(), "no answer, not a refusal: {:?}", answer.map(|a| (a.status, a.bytes)));
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0, "not sent to another region");
    door.stop().await;
}

// A public MCP session lives in the region that opened it, which its id
// names. Home as a group has a route per member: a session at home reaches
// whichever member answers, not only the first one listed (which may be
// the member that is down).
#[tokio::test(flavor = "multi_thread")]
async fn a_session_at_home_reaches_any_member_the_door_knows_for_it() {
    let down = {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", closed.local_addr().unwrap())
    };
    let member = answering("a member of home").await;
    let door = door_probing_often(vec![
        Route { region: "home".into(), url: down, latency_ms: Some(1), delay_ms: None },
        Route { region: "home".into(), url: member, latency_ms: Some(500), delay_ms: None },
    ])
    .await;
    let request = axum::http::Request::post("/mcp")
        .header(svc_http::mcp::public::SESSION_HEADER, "home.0123456789abcdef")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let answer = Transport::new(&format!("http://{}", door.addr)).unwrap().send(request).await.unwrap();
    assert_eq!((answer.status, answer.bytes.as_slice()), (200, b"a member of home".as_slice()));
    door.stop().await;
}
