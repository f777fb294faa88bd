//! List answers under a caller with a million receipts: `GET /v1/receipts`
//! signed over real TCP at a home node, its group holding N receipts
//! (another group's as many again, interleaved), against the same pages
//! with 1,000, side by side in one run. Each page must hold at most 100
//! receipts and pass over at most 10,000 index entries, whatever N is.
//!
//! Pages: the first; one deep in by cursor (from the middle); one narrowed
//! by a `key_id` nothing matches (it stops after its 10,000-entry scan, with
//! a cursor); `from` near the end. The receipts are written straight into
//! home's store as a read region's shipped receipts would be (no actor tails
//! those, so nothing else runs meanwhile).
//!
//! `cargo bench --bench lists -- --receipts 1000000 --asks 200`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use svc::loadgen::summarize;
use svc_client::retrieval::RetrievalClient;
use svc_clock::{Clock, SystemClock};
use svc_core::time::UnixMs;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{ai_caller, ensure_seeded};
use svc_node::config::NodeConfig;
use svc_store::model::{StoredReceipt, UsageKind};
use svc_store::{Store, cf, keys};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Writes `n` receipts for `group` and `n` for another group, a millisecond
/// apart, as region `region`'s shipped receipts; answers the first and last
/// served times of the group's.
fn fill(store: &Store, region: &str, group: &str, key_id: &str, company: &str, n: u64) -> (UnixMs, UnixMs) {
    let start = UnixMs(SystemClock.now().0 - 2 * n as i64 - 60_000);
    let envelope =
        br#"{"payloadType":"application/vnd.service.receipt.v3+json","payload":"eyJ2IjozfQ==","signatures":[]}"#;
    let mut batch = store.batch();
    for i in 0..2 * n {
        let (group_id, caller) = if i % 2 == 0 { (group, key_id) } else { ("grp_someone_else", "another-key") };
        let receipt = StoredReceipt {
            seq: i + 1,
            group_id: group_id.into(),
            company_uuid: company.into(),
            caller_key_id: caller.into(),
            retrieval_id: format!("ret_{i:012}"),
            kind: UsageKind::Search,
            served_at: UnixMs(start.0 + i as i64),
            country: Some("FR".into()),
            businesses: Vec::new(),
            envelope: envelope.to_vec(),
        };
        batch.put(cf::REGION_RECEIPTS, &keys::region_receipt(region, receipt.seq), &receipt);
        let by_group = keys::region_receipt_by_group(group_id, receipt.served_at.0, receipt.seq, region);
        batch.put(cf::RECEIPTS_BY_GROUP, &by_group, &());
        if i % 20_000 == 19_999 {
            std::mem::replace(&mut batch, store.batch()).commit().expect("write");
        }
    }
    batch.commit().expect("write");
    (start, UnixMs(start.0 + 2 * n as i64 - 2))
}

struct Page {
    samples: Vec<Duration>,
    receipts: usize,
    more: bool,
}

async fn ask(client: &RetrievalClient, path: &str, asks: usize) -> Page {
    let mut samples = Vec::with_capacity(asks);
    let mut last = Value::Null;
    for _ in 0..asks {
        let started = Instant::now();
        let answer = client.call("GET", path, Vec::new()).await.expect("answer");
        samples.push(started.elapsed());
        assert_eq!(answer.status, 200, "{path}: {}", String::from_utf8_lossy(&answer.bytes));
        last = answer.json();
    }
    let receipts = last["receipts"].as_array().map_or(0, Vec::len);
    assert!(receipts <= 100, "{path}: {receipts} receipts in one page");
    Page { samples, receipts, more: last["next_cursor"].is_string() }
}

/// The four pages over a group holding `n` receipts; answers (name, page).
async fn pages(n: u64, asks: usize) -> Vec<(&'static str, Page)> {
    let dir = tempfile::tempdir().expect("dir");
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.path().join("home"), loopback, loopback);
    // The page time is measured, not the key's request rate.
    config.retrieval_limits.requests_per_second = 1_000_000;
    let node = Node::start(config, Arc::new(SystemClock)).await.expect("node");
    let state = node.state.clone();
    ensure_seeded(&state, &generate(3, Sizes::products_only(1, 5)), &|_| {}).await.expect("seed");
    let (key, grant) = ai_caller(&state, "Lister AI", 91).await.expect("caller");
    let key_id = key.verifying_key().thumbprint();
    let stored = state.registry.retrieval_key(&key_id).unwrap().unwrap();
    let filled = Instant::now();
    let (first, last) = fill(&state.store, "bench", &stored.group_id, &key_id, &stored.company_uuid, n);
    eprintln!("{n} receipts of the group (and as many of another) written in {:.1} s", filled.elapsed().as_secs_f64());
    let client = RetrievalClient::new(&format!("http://{}", node.addr), "api.svc.localhost", key, grant).unwrap();
    let middle = UnixMs(first.0 + (last.0 - first.0) / 2);
    let cursor = svc_core::publish::cursor::encode(&format!("{}-{}-bench", middle.0, (middle.0 - first.0) + 1));
    let near_end = UnixMs(last.0 - 150).to_rfc3339_millis();
    let paths = [
        ("first page", "/v1/receipts".to_owned()),
        ("a page from the middle, by cursor", format!("/v1/receipts?cursor={cursor}")),
        ("narrowed by a key_id nothing matches", "/v1/receipts?key_id=nobody".to_owned()),
        ("from near the end", format!("/v1/receipts?from={}", svc_client::percent(&near_end))),
    ];
    let mut out = Vec::new();
    for (name, path) in paths {
        out.push((name, ask(&client, &path, asks).await));
    }
    node.stop().await;
    out
}

fn main() {
    let (n, asks) = (arg("--receipts", 1_000_000), arg("--asks", 200) as usize);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let small = runtime.block_on(pages(1_000, asks));
    let large = runtime.block_on(pages(n, asks));
    println!("GET /v1/receipts, one connection, {asks} asks each, signed over TCP");
    println!("| page | receipts | 1,000: p50 / p99 ms | {n}: p50 / p99 ms | p50 ratio |");
    println!("|---|---|---|---|---|");
    for ((name, a), (_, b)) in small.into_iter().zip(large) {
        let (sa, sb) = (summarize(a.samples), summarize(b.samples));
        println!(
            "| {name} | {} / {}{} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2}× |",
            a.receipts,
            b.receipts,
            if b.more { ", more" } else { "" },
            sa.p50_ms,
            sa.p99_ms,
            sb.p50_ms,
            sb.p99_ms,
            sb.p50_ms / sa.p50_ms
        );
    }
}
