//! Public verification and the transparency log, measured on a home node
//! in-process over real TCP:
//!
//! (a) `POST /v1/verify` for one product record with its batch seal, row and
//!     sidecar, from N keep-alive connections (requests/s, p50, p99), beside
//!     the same judgement called straight (`svc_core::verify`) from N
//!     threads, for the ratio of what HTTP, JSON and the signed statement add;
//! (b) log appends: K leaves queued, then one sequencing (append, index,
//!     checkpoint, one replicated write), as leaves per second; and the
//!     in-memory tree alone (push, and an inclusion proof at the end).
//!
//! `cargo bench --bench verify -- --connections 32 --seconds 10 --leaves 100000`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc::loadgen::summarize;
use svc_client::transport::Transport;
use svc_client::trust::Trust;
use svc_clock::SystemClock;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::ensure_seeded;
use svc_node::actors::transparency_log::TransparencyLogMsg;
use svc_node::config::NodeConfig;
use svc_store::cf;
use svc_store::model::RecordHead;
use svc_store::model::{LeafKind, PendingLeaf};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The verify body for one published product: what a checker holds.
fn verify_body(state: &svc_node::region::Region) -> Value {
    let records = state.store.scan::<RecordHead>(cf::RECORDS, &[], None, 1).expect("records");
    let head = &records[0].1;
    let version = state.registry.record_version(&head.record_id, head.live_generation).unwrap().unwrap();
    json!({
        "record_base64": svc_core::b64::std_encode(&version.bytes),
        "seal": serde_json::from_slice::<Value>(&version.seal).unwrap(),
        "row": serde_json::from_slice::<Value>(&version.row).unwrap(),
        "sidecar": serde_json::from_slice::<Value>(&version.sidecar).unwrap(),
    })
}

/// Calls `one` over and over from `connections` tasks until `run` has
/// passed (`each` makes a task's own call, with what it keeps between
/// calls); answers the calls per second and each call's time.
async fn repeatedly<F, Fut>(connections: usize, run: Duration, each: impl Fn() -> F) -> (f64, Vec<Duration>)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let one = each();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while started.elapsed() < run {
                let at = Instant::now();
                one().await;
                samples.push(at.elapsed());
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.unwrap());
    }
    (samples.len() as f64 / started.elapsed().as_secs_f64(), samples)
}

/// `POST /v1/verify` from `connections` keep-alive connections.
async fn http_verify(
    (base, trust): (&str, &Trust),
    authority: &str,
    body: Vec<u8>,
    connections: usize,
    run: Duration,
) -> (f64, Vec<Duration>) {
    repeatedly(connections, run, || {
        let transport = Transport::trusting(base, trust).expect("transport");
        let (body, authority) = (body.clone(), authority.to_owned());
        move || {
            let request = axum::http::Request::post("/v1/verify")
                .header("host", authority.as_str())
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body.clone()))
                .unwrap();
            let transport = transport.clone();
            async move {
                let answer = transport.send(request).await.expect("verify answered");
                assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
            }
        }
    })
    .await
}

/// New connections per second, each carrying one `GET /healthz` and closed
/// with its answer: over `https://` each is a full TLS handshake (no
/// session resumption: every transport is new).
async fn connection_rate(base: &str, trust: &Trust, connections: usize, run: Duration) -> (f64, Vec<Duration>) {
    repeatedly(connections, run, || {
        let (base, trust) = (base.to_owned(), trust.clone());
        move || {
            let transport = Transport::trusting(&base, &trust).expect("transport");
            async move {
                let request = axum::http::Request::get("/healthz").body(axum::body::Body::empty()).unwrap();
                let answer = transport.send(request).await.expect("healthz answered");
                assert_eq!(answer.status, 200);
            }
        }
    })
    .await
}

fn main() {
    let connections = arg("--connections", 32) as usize;
    let seconds = arg("--seconds", 10);
    let leaves = arg("--leaves", 100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::local_home(dir.path().join("home"), "127.0.0.1:0".parse().unwrap(), "127.0.0.1:0".parse().unwrap());
        // A sandbox (the default): its corpus's ad images are drawn, where
        // production would fetch them from a host that does not exist.
        // One client address sends everything: the per-address rate is not what is measured.
        config.verify_per_second = 1_000_000;
        let node = Node::start(config.clone(), Arc::new(SystemClock)).await.unwrap();
        let state = node.state.clone();
        let corpus = generate(11, Sizes::products_only(2, 200));
        ensure_seeded(&state, &corpus, &|_| {}).await.unwrap();
        // Sequenced, so the answer carries a log inclusion proof too.
        let home = state.home.as_ref().unwrap();
        home.transparency_log.call(TransparencyLogMsg::Sequence).await.unwrap().unwrap();
        let body = serde_json::to_vec(&verify_body(&state)).unwrap();
        let base = format!("http://{}", node.addr);
        let authority = state.config.public_authority.clone();

        let system = Trust::system();
        let (rate, samples) =
            http_verify((&base, &system), &authority, body.clone(), connections, Duration::from_secs(seconds)).await;
        let latency = summarize(samples);
        println!(
            "POST /v1/verify (product, batch seal, row, sidecar): {rate:.0} verifies/s, p50 {:.2} ms, p99 {:.2} ms ({connections} connections, {seconds} s)",
            latency.p50_ms,
            latency.p99_ms
        );

        // The same seal and row judged straight, one per core, for as long.
        let request: Value = serde_json::from_slice(&body).unwrap();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let started = Instant::now();
        let judged: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (request, state) = (&request, &state);
                    scope.spawn(move || {
                        let record = svc_core::b64::std_decode(request["record_base64"].as_str().unwrap()).unwrap();
                        let seal: svc_core::seal::ServedSeal = serde_json::from_value(request["seal"].clone()).unwrap();
                        let row = request["row"].as_object().unwrap().clone();
                        let lookups = svc_node::service::public::verify::Lookups { state, now: state.clock.now() };
                        let mut n = 0;
                        while started.elapsed() < Duration::from_secs(seconds) {
                            let submitted = svc_core::verify::Submitted {
                                record: &record,
                                seal: &seal,
                                sidecar: None,
                                key_events: svc_core::verify::KeyEvents::Warn,
                            };
                            let verdict = svc_core::verify::judge_seal(&submitted, &lookups);
                            assert!(verdict.valid());
                            std::hint::black_box(svc_core::verify::judge_row(&row, verdict.record.as_ref(), &lookups));
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let direct = judged as f64 / started.elapsed().as_secs_f64();
        println!(
            "the same judgement straight ({threads} threads, no HTTP, no statement): {direct:.0}/s; HTTP is {:.2}x of it",
            rate / direct
        );

        // (b) Log appends: K leaves queued, one sequencing.
        let now = state.clock.now();
        let mut batch = state.store.batch();
        for i in 0..leaves {
            let data = format!("{{\"bench\":{i}}}").into_bytes();
            let key = svc_core::merkle::leaf_hash(&data);
            batch.put(cf::TLOG_PENDING, &key, &PendingLeaf { kind: LeafKind::Seal, data, queued_at: now });
        }
        batch.commit().unwrap();
        let started = Instant::now();
        let signed = home.transparency_log.call(TransparencyLogMsg::Sequence).await.unwrap().unwrap();
        let took = started.elapsed();
        println!(
            "log: {leaves} leaves sequenced in one checkpoint in {:.2} s: {:.0} appends/s (tree size {})",
            took.as_secs_f64(),
            leaves as f64 / took.as_secs_f64(),
            signed.size
        );
        let mut tree = svc_core::tlog::Tree::default();
        let started = Instant::now();
        for i in 0..leaves {
            tree.push(svc_core::merkle::leaf_hash(&i.to_be_bytes()));
        }
        let pushed = started.elapsed();
        let started = Instant::now();
        let proofs = 10_000u64;
        for i in 0..proofs {
            std::hint::black_box(tree.inclusion(i * 7 % leaves, leaves));
        }
        println!(
            "tree alone: {:.0} pushes/s; an inclusion proof at size {leaves} in {:.1} µs",
            leaves as f64 / pushed.as_secs_f64(),
            started.elapsed().as_secs_f64() * 1e6 / proofs as f64
        );

        // (c) What TLS costs: verify over keep-alive connections, and new
        // connections per second (one health check each), over plain HTTP
        // and then over HTTPS, each on the node started again on the same
        // directory (a listener speaks one or the other).
        drop(state);
        node.stop().await;
        let tls_dir = dir.path().join("tls");
        svc::ca::init(&tls_dir).unwrap();
        svc::ca::issue(&tls_dir, "home", true, &[], 30).unwrap();
        let believed = Trust::with_ca(Some(&tls_dir.join("ca.pem"))).unwrap();
        let mut tls = config.clone();
        tls.tls = Some(svc_node::config::TlsConfig {
            cert: tls_dir.join("home.pem"),
            key: tls_dir.join("home-key.pem"),
            ca: None,
        });
        let run = Duration::from_secs(seconds);
        let mut figures = Vec::new();
        for (scheme, config, trust) in [("http", config, &system), ("https", tls, &believed)] {
            let node = Node::start(config, Arc::new(SystemClock)).await.unwrap();
            let base = format!("{scheme}://{}", node.addr);
            let (verifies, samples) = http_verify((&base, trust), &authority, body.clone(), connections, run).await;
            let verify_latency = summarize(samples);
            let (opened, samples) = connection_rate(&base, trust, connections, run).await;
            let open_latency = summarize(samples);
            println!(
                "{scheme}: {verifies:.0} verifies/s (p50 {:.2} ms, p99 {:.2} ms); {opened:.0} new connections/s with one health check each (p50 {:.2} ms, p99 {:.2} ms); {connections} connections, {seconds} s",
                verify_latency.p50_ms, verify_latency.p99_ms, open_latency.p50_ms, open_latency.p99_ms
            );
            figures.push((verifies, verify_latency, opened, open_latency));
            node.stop().await;
        }
        let (plain, tls) = (&figures[0], &figures[1]);
        println!(
            "https:http  verifies/s {:.3}  verify p50 {:.2}x  p99 {:.2}x  new connections/s {:.3}  their p50 {:.2}x",
            tls.0 / plain.0,
            tls.1.p50_ms / plain.1.p50_ms,
            tls.1.p99_ms / plain.1.p99_ms,
            tls.2 / plain.2,
            tls.3.p50_ms / plain.3.p50_ms
        );
    });
}
