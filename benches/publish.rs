//! Publishing throughput at the home region, end to end through the real
//! routers, actors and RocksDB: a 10,000-record batch from arrival to
//! committed (validated, projected, signed, logged), and a 100,000-record
//! bulk import from the import request to committed.
//!
//! Each figure is the median of several runs, each on a fresh node. Run with
//! `cargo bench --bench publish` (`-- --runs N --bulk-runs M` to change the
//! counts).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use svc_client::sealing::{self, SealContext};
use svc_client::{Signer, Unsigned};
use svc_clock::{Clock, SystemClock};
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, call, keys_of, publish_request, register_business, send_publish, wait_settled};
use svc_http::surfaces::public_router;
use svc_node::config::NodeConfig;
use svc_node::region::Region;

struct Node {
    state: Region,
    _dir: tempfile::TempDir,
}

async fn node() -> Node {
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = NodeConfig::local_home(
        dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:0".parse().unwrap(),
    );
    let state = svc_node::region::start(config, Arc::new(SystemClock)).await.expect("node starts");
    Node { state, _dir: dir }
}

/// A business with `products` products, registered; its seal context.
async fn business(
    state: &Region,
    products: usize,
    seed: u64,
) -> (svc_http::sandbox::corpus::BusinessSpec, SealContext) {
    let sizes = Sizes::products_only(1, products);
    let spec = generate(seed, sizes).businesses.remove(0);
    let (uuid, _) = register_business(state, &spec, "").await.expect("business registered");
    let shown = admin(state, "GET", &format!("/admin/businesses/{uuid}"), serde_json::Value::Null).await.unwrap();
    let context = SealContext {
        cert_id: shown["cert_id"].as_str().unwrap().to_owned(),
        ai_policy_version: shown["ai_policy_version"].as_u64().unwrap(),
    };
    (spec, context)
}

async fn settled(state: &Region, push_id: &str, records: usize) {
    let count = wait_settled(state, &[push_id.to_owned()], 0, records, &|_| {}).await.expect("push settles");
    assert_eq!(count, records, "every record settled");
}

/// Arrival to committed for one 10,000-record batch.
async fn batch_run(seed: u64) -> Duration {
    let node = node().await;
    let (spec, context) = business(&node.state, 10_000, seed).await;
    let (key, _) = keys_of(&spec).unwrap();
    // The business system's sealing and signing happen before arrival.
    let request = publish_request(&node.state, &key, &context, &spec.products, SystemClock.now()).unwrap();
    let started = Instant::now();
    let push_id = send_publish(&node.state, request).await.unwrap();
    settled(&node.state, &push_id, spec.products.len()).await;
    let took = started.elapsed();
    node.state.stop_actors().await;
    took
}

/// Import request to committed for one 100,000-record bulk file (the
/// upload itself is timed apart).
async fn bulk_run(seed: u64) -> (Duration, Duration) {
    let node = node().await;
    let state = &node.state;
    let (spec, context) = business(state, 100_000, seed).await;
    let (key, _) = keys_of(&spec).unwrap();
    let signer = Signer::new(key.clone(), &state.config.public_authority, "svc-push");
    let now = || SystemClock.now();

    let body = serde_json::to_vec(&json!({"record_type": "products"})).unwrap();
    let grant = svc_core::sandbox::grant_for(&key.verifying_key().thumbprint());
    let unsigned = Unsigned::new("POST", "/v1/bulk-uploads", body)
        .header("idempotency-key", "bench")
        .header(svc_core::sandbox::GRANT_HEADER, &grant);
    let request = signer.sign_now(unsigned, now().as_secs());
    let (status, upload) = call(public_router(state.clone()), request.unwrap()).await.unwrap();
    assert_eq!(status, 200, "{upload}");

    let file = svc_client::bulk::ndjson(&spec.products);
    let uploading = Instant::now();
    let path = svc_client::bulk::upload_path(upload["url"].as_str().unwrap()).unwrap();
    let request = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", svc_client::bulk::content_type())
        .body(Body::from(svc_client::bulk::form(&upload["fields"], &file)))
        .unwrap();
    let (status, stored) = call(public_router(state.clone()), request).await.unwrap();
    assert_eq!(status, 201, "{stored}");
    let upload_time = uploading.elapsed();

    let seal = sealing::batch_seal(&key, &context, "products", &spec.products, now().0 as u64, now()).unwrap();
    let body = serde_json::to_vec(&json!({"upload_id": upload["upload_id"], "batch_seal": seal})).unwrap();
    let started = Instant::now();
    let request = signer.sign_now(Unsigned::new("POST", "/v1/bulk-imports", body), now().as_secs()).unwrap();
    let (status, accepted) = call(public_router(state.clone()), request).await.unwrap();
    assert_eq!(status, 202, "{accepted}");
    settled(state, accepted["push_id"].as_str().unwrap(), spec.products.len()).await;
    let took = started.elapsed();
    state.stop_actors().await;
    (took, upload_time)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // and expects a quick run, so the bench runs only when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs = arg("--runs", 5);
    let bulk_runs = arg("--bulk-runs", 3);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut batch = Vec::new();
        for run in 0..runs {
            let took = batch_run(run as u64).await;
            eprintln!("publish 10,000-record batch, run {}: {:.3} s", run + 1, took.as_secs_f64());
            batch.push(took);
        }
        let mut bulk = Vec::new();
        let mut upload = Vec::new();
        for run in 0..bulk_runs {
            let (took, upload_took) = bulk_run(100 + run as u64).await;
            eprintln!(
                "bulk import 100,000 records, run {}: {:.3} s (upload {:.3} s)",
                run + 1,
                took.as_secs_f64(),
                upload_took.as_secs_f64()
            );
            bulk.push(took);
            upload.push(upload_took);
        }
        println!(
            "publish/batch_10000_arrival_to_committed  median {:.3} s over {runs} runs",
            median(batch).as_secs_f64()
        );
        println!(
            "publish/bulk_100000_import_to_committed   median {:.3} s over {bulk_runs} runs (upload median {:.3} s)",
            median(bulk).as_secs_f64(),
            median(upload).as_secs_f64()
        );
    });
}
