//! The cost of home's group on a commit: one writer committing batches one
//! after another (as the publisher does), each synced, in three set-ups
//! side by side in one run: a store alone (today's home), a group of one
//! member (Raft's own log write, then the apply), and a group of three
//! members on one machine over HTTP/2 on loopback (a quorum of two must
//! hold each batch before it is applied and answered). Printed for each:
//! the median and p99 of a commit, commits per second, and the ratio of
//! each median to the store alone's.
//!
//! `cargo bench --bench group -- --writes 400 --bytes 65536`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::{BasicNode, ServerState};
use svc_client::trust::Trust;
use svc_clock::{SharedClock, SystemClock};
use svc_consensus::member::{Member, Settings};
use svc_http::api::group::{GroupState, router};
use svc_store::{Store, be, cf};

// Linked for its allocator: the bench allocates with mimalloc, as `svc node` does.
use svc as _;

const TOKEN: &str = "group-bench-token-of-32-characters!";

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `members` members, each with its store under `dir` and its listener;
/// answers the stores, the leader's first.
async fn group(dir: &std::path::Path, members: u64) -> Vec<(Store, Arc<Member>)> {
    let clock: SharedClock = Arc::new(SystemClock);
    let mut listeners = Vec::new();
    for _ in 0..members {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let nodes: BTreeMap<u64, BasicNode> = listeners
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, BasicNode::new(format!("http://{}", l.local_addr().unwrap()))))
        .collect();
    let mut started = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let id = i as u64 + 1;
        let store = Store::open(&dir.join(format!("member-{id}"))).unwrap();
        let settings = Settings {
            id,
            heartbeat_ms: 100,
            election_ms: (500, 1000),
            commit_timeout: Duration::from_secs(10),
            snapshots: dir.join(format!("member-{id}-snapshots")),
            snapshot_every: svc_node::config::default_snapshot_every(),
            logs_kept: svc_node::config::default_logs_kept(),
        };
        let network =
            svc_node::group::Network { id, token: TOKEN.into(), trust: Trust::system(), clock: clock.clone() };
        let member = tokio::task::block_in_place(|| Member::start(&settings, store.clone(), network)).unwrap();
        let ids: Vec<u64> = nodes.keys().copied().collect();
        let state = GroupState { member: member.clone(), token: TOKEN.into(), members: ids, clock: clock.clone() };
        tokio::spawn(async move {
            let _ = axum::serve(listener, router(state)).await;
        });
        started.push((store, member));
    }
    tokio::task::block_in_place(|| started[0].1.initialize(nodes)).unwrap();
    for _ in 0..400 {
        if let Some(at) = started.iter().position(|(_, m)| m.raft().metrics().borrow().state == ServerState::Leader) {
            started.swap(0, at);
            return started;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no leader");
}

/// Commits `writes` batches of `bytes` each, one after another; answers
/// each commit's time.
fn commit_all(store: &Store, writes: u64, bytes: usize) -> Vec<Duration> {
    let value = "x".repeat(bytes);
    let mut times = Vec::new();
    for n in 0..writes {
        let started = Instant::now();
        tokio::task::block_in_place(|| store.put(cf::FRESHNESS, &be(n), &value)).unwrap();
        times.push(started.elapsed());
    }
    times
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let writes = arg("--writes", 400);
    let bytes = arg("--bytes", 65_536) as usize;
    let dir = tempfile::tempdir().unwrap();
    println!("{writes} commits of {bytes} bytes, one writer, each synced");
    let alone = Store::open(&dir.path().join("alone")).unwrap();
    let mut rows: Vec<(&str, Vec<Duration>)> = vec![("store alone", Vec::new())];
    let one = group(&dir.path().join("one"), 1).await;
    let three = group(&dir.path().join("three"), 3).await;
    rows.push(("group of 1", Vec::new()));
    rows.push(("group of 3 (HTTP/2, loopback)", Vec::new()));
    // Interleaved in rounds, so the machine's state weighs on each alike.
    let stores = [&alone, &one[0].0, &three[0].0];
    for _ in 0..4 {
        for (row, store) in rows.iter_mut().zip(stores) {
            row.1.extend(commit_all(store, writes / 4, bytes));
        }
    }
    let mut alone_median = Duration::ZERO;
    println!("{:<32} {:>10} {:>10} {:>12} {:>8}", "set-up", "p50 ms", "p99 ms", "commits/s", "p50 ×");
    for (name, mut times) in rows {
        times.sort();
        let (p50, p99) = (quantile(&times, 0.5), quantile(&times, 0.99));
        if alone_median.is_zero() {
            alone_median = p50;
        }
        let per_second = times.len() as f64 / times.iter().sum::<Duration>().as_secs_f64();
        let ratio = p50.as_secs_f64() / alone_median.as_secs_f64();
        println!(
            "{name:<32} {:>10.2} {:>10.2} {per_second:>12.0} {ratio:>8.2}",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );
    }
    for (_, member) in one.iter().chain(three.iter()) {
        tokio::task::block_in_place(|| member.stop());
    }
}
