//! Publishing throughput at the home region, end to end through the real
//! routers, actors and RocksDB: a 10,000-record batch from arrival to
//! committed (validated, projected, signed, logged), and a 100,000-record
//! bulk import from the import request to committed.
//!
//! Each figure is the median of several runs, each on a fresh home: a lone
//! node, and (interleaved, in the same run) a home group of three members
//! in this process talking HTTP/2 on loopback, where every commit waits for
//! a quorum; the ratio of their medians is the group's cost. Run with
//! `cargo bench --bench publish` (`-- --runs N --bulk-runs M` to change the
//! counts, `--alone` for the lone node only).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use svc_client::sealing::{self, SealContext};
use svc_client::{Signer, Unsigned};
use svc_clock::{Clock, SystemClock};
use svc_http::group_node::GroupNode;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, call, keys_of, publish_request, register_business, send_publish, wait_settled};
use svc_http::surfaces::public_router;
use svc_node::config::NodeConfig;
use svc_node::region::Region;

// Linked for its allocator: the bench allocates with mimalloc, as `svc node` does.
use svc as _;

/// A fresh home: one node, or a group whose leader runs the region.
struct Home {
    state: Region,
    group: Vec<GroupNode>,
    _dir: tempfile::TempDir,
}

impl Home {
    async fn start(members: u64) -> Home {
        let dir = tempfile::tempdir().expect("temporary directory");
        if members == 1 {
            let any = "127.0.0.1:0".parse().unwrap();
            let config = NodeConfig::local_home(dir.path().to_path_buf(), any, any);
            let state = svc_node::region::start(config, Arc::new(SystemClock)).await.expect("node starts");
            return Home { state, group: Vec::new(), _dir: dir };
        }
        let mut group = Vec::new();
        for config in NodeConfig::local_group(dir.path(), members).expect("free ports") {
            group.push(GroupNode::start(config, Arc::new(SystemClock)).await.expect("member starts"));
        }
        for _ in 0..1_200 {
            for member in &group {
                let state = member.leading.lock().await.as_ref().map(|node| node.state.clone());
                if let Some(state) = state {
                    return Home { state, group, _dir: dir };
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no member of the group brought its region up");
    }

    async fn stop(self) {
        if self.group.is_empty() {
            self.state.stop_actors().await;
        }
        for member in self.group {
            member.stop().await;
        }
    }
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

/// Arrival to committed for one 10,000-record batch at a home of `members`.
async fn batch_run(seed: u64, members: u64) -> (Duration, f64) {
    let home = Home::start(members).await;
    let (spec, context) = business(&home.state, 10_000, seed).await;
    let (key, _) = keys_of(&spec).unwrap();
    // The business system's sealing and signing happen before arrival.
    let request = publish_request(&home.state, &key, &context, &spec.products, SystemClock.now()).unwrap();
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let push_id = send_publish(&home.state, request).await.unwrap();
    settled(&home.state, &push_id, spec.products.len()).await;
    let took = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    home.stop().await;
    (took, cpu)
}

/// Import request to committed for one 100,000-record bulk file at a home
/// of `members` (the upload itself is timed apart).
async fn bulk_run(seed: u64, members: u64) -> (Duration, Duration, f64) {
    let home = Home::start(members).await;
    let state = &home.state;
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
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let request = signer.sign_now(Unsigned::new("POST", "/v1/bulk-imports", body), now().as_secs()).unwrap();
    let (status, accepted) = call(public_router(state.clone()), request).await.unwrap();
    assert_eq!(status, 202, "{accepted}");
    settled(state, accepted["push_id"].as_str().unwrap(), spec.products.len()).await;
    let took = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    home.stop().await;
    (took, upload_time, cpu)
}

/// This process's CPU time so far (user and system, every thread), from
/// `/proc/self/stat` in USER_HZ ticks (100 a second on Linux): a run's CPU
/// over its wall time is how many cores it kept busy.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime
    // are the 14th and 15th of the line, the 12th and 13th of these.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: Vec<f64> = after.split_whitespace().skip(11).take(2).filter_map(|t| t.parse().ok()).collect();
    ticks.iter().sum::<f64>() / 100.0
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
    // The lone node, then (unless `--alone`) the group of three.
    let homes: Vec<u64> = if std::env::args().any(|a| a == "--alone") { vec![1] } else { vec![1, 3] };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut batch: BTreeMap<u64, Vec<Duration>> = BTreeMap::new();
        for run in 0..runs {
            for &members in &homes {
                let (took, cpu) = batch_run(run as u64, members).await;
                eprintln!(
                    "publish 10,000-record batch, home of {members}, run {}: {:.3} s (CPU {cpu:.2} s, {:.2} cores)",
                    run + 1,
                    took.as_secs_f64(),
                    cpu / took.as_secs_f64()
                );
                batch.entry(members).or_default().push(took);
            }
        }
        let (mut bulk, mut upload): (BTreeMap<u64, Vec<Duration>>, BTreeMap<u64, Vec<Duration>>) = Default::default();
        for run in 0..bulk_runs {
            for &members in &homes {
                let (took, upload_took, cpu) = bulk_run(100 + run as u64, members).await;
                eprintln!(
                    "bulk import 100,000 records, home of {members}, run {}: {:.3} s (upload {:.3} s; CPU {cpu:.1} s, \
                     {:.2} cores)",
                    run + 1,
                    took.as_secs_f64(),
                    upload_took.as_secs_f64(),
                    cpu / took.as_secs_f64()
                );
                bulk.entry(members).or_default().push(took);
                upload.entry(members).or_default().push(upload_took);
            }
        }
        let medians = |samples: &BTreeMap<u64, Vec<Duration>>| -> BTreeMap<u64, Duration> {
            samples.iter().map(|(members, s)| (*members, median(s.clone()))).collect()
        };
        let (batch, bulk, upload) = (medians(&batch), medians(&bulk), medians(&upload));
        for members in &homes {
            let ratio = |m: &BTreeMap<u64, Duration>| m[members].as_secs_f64() / m[&1].as_secs_f64();
            if runs > 0 {
                println!(
                    "publish/batch_10000_arrival_to_committed  home of {members}: median {:.3} s over {runs} runs ({:.2}x)",
                    batch[members].as_secs_f64(),
                    ratio(&batch)
                );
            }
            if bulk_runs > 0 {
                println!(
                    "publish/bulk_100000_import_to_committed   home of {members}: median {:.3} s over {bulk_runs} runs \
                     ({:.2}x; upload median {:.3} s)",
                    bulk[members].as_secs_f64(),
                    ratio(&bulk),
                    upload[members].as_secs_f64()
                );
            }
        }
    });
}
