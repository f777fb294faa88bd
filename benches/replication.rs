//! Replication lag from home to a read region under a sustained publish.
//!
//! One run: a home node and a read region in-process, each on its own
//! 127.0.0.1 port, the region pulling home's log over HTTP/2 as in any
//! deployment. A business publishes `--batch` records every
//! `--batch / --rate` seconds for `--seconds` (1,000 records/s by default),
//! through home's router. Home's log, the region's applied sequence and
//! the region indexer's applied sequence are sampled every millisecond from
//! a thread of their own. An entry's stamp (its `at`) is when home began
//! committing its chunk (an inline batch's chunk starts once the batch is
//! accepted); printed for each entry, p50, p99 and max of: stamp to home's
//! durable commit, home's commit to the region holding it, stamp to the
//! region holding it (target, issue 5: p99 1 s or less), and stamp to the
//! region's index answering with it (issue 29: p99 100 ms or less). Then
//! the region indexer's steps and their mean time, in all and waiting on
//! the shards.
//!
//! Then the replay window, each way (region to home through the region's
//! claim uplink, home to region through the nonce feed): for each of
//! `--replays` signed searches answered at one region, the time from its
//! answer until the other region holds its nonce, after which the same
//! request sent there is refused `nonce_reused`; p50, p90, p99 and max.
//!
//! Both parts run twice in one run: home as one node, then home as a group
//! of three members in this process on loopback (the region pulls from the
//! leader, whose every commit waits for a quorum); `--alone` runs the first
//! only.
//!
//! `cargo bench --bench replication -- --rate 1000 --batch 100 --seconds 30 --replays 500`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use svc_client::retrieval::RetrievalClient;
use svc_client::sealing::SealContext;
use svc_clock::{Clock, SystemClock};
use svc_http::group_node::GroupNode;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ai_caller, keys_of, publish_request, register_business, send_publish};
use svc_node::actors::indexer::{IndexerMsg, indexed_seq};
use svc_node::config::{NodeConfig, RegionCredential, ReplicationConfig, RetrievalLimits, Role};
use svc_node::region::Region;

const TOKEN: &str = "replication-bench-token-of-32-characters";

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A region's config; a read region reaches `home`'s public and internal
/// listeners (their URLs).
fn config(dir: &std::path::Path, region: &str, role: Role, home: Option<&Home>) -> NodeConfig {
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.join(region), loopback, loopback);
    config.region = region.into();
    config.role = role;
    match home {
        Some(home) => {
            let link = ReplicationConfig::read(Some(home.public.clone()), Some(home.internal.clone()), TOKEN);
            config.replication = Some(link);
            // The replay trials send faster than a key's default rate allows.
            config.retrieval_limits = UNLIMITED;
        }
        None => home_side(&mut config, loopback),
    }
    config
}

const UNLIMITED: RetrievalLimits =
    RetrievalLimits { requests_per_second: 1_000_000_000, query_cost_per_minute: 1_000_000_000_000 };

/// What a home node (alone or a member of the group) needs for the bench:
/// an internal listener, eu's token, and no rate limit.
fn home_side(config: &mut NodeConfig, internal: std::net::SocketAddr) {
    config.internal_listen = Some(internal);
    config.replication = Some(ReplicationConfig::home(vec![RegionCredential::new("eu", TOKEN)]));
    config.retrieval_limits = UNLIMITED;
}

/// Home as a run uses it: one node, or a group of members in this process
/// whose leader runs the region.
struct Home {
    state: Region,
    public: String,
    internal: String,
    lone: Option<Node>,
    group: Vec<GroupNode>,
}

impl Home {
    async fn start(dir: &std::path::Path, members: u64) -> Home {
        if members == 1 {
            let node = Node::start(config(dir, "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
            let (public, internal) =
                (format!("http://{}", node.addr), format!("http://{}", node.internal_addr.unwrap()));
            return Home { state: node.state.clone(), public, internal, lone: Some(node), group: Vec::new() };
        }
        let mut configs = NodeConfig::local_group(dir, members).unwrap();
        let mut group = Vec::new();
        for config in &mut configs {
            let internal = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).unwrap();
            home_side(config, internal);
            group.push(GroupNode::start(config.clone(), Arc::new(SystemClock)).await.unwrap());
        }
        for _ in 0..1_200 {
            for (member, config) in group.iter().zip(&configs) {
                let state = member.leading.lock().await.as_ref().map(|node| node.state.clone());
                if let Some(state) = state {
                    let (public, internal) =
                        (format!("http://{}", config.listen), format!("http://{}", config.internal_listen.unwrap()));
                    return Home { state, public, internal, lone: None, group };
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no member of the group brought its region up");
    }

    async fn stop(self) {
        if let Some(node) = self.lone {
            node.stop().await;
        }
        for member in self.group {
            member.stop().await;
        }
    }
}

/// When each sequence number was first seen, sampling a growing sequence.
struct FirstSeen {
    at: BTreeMap<u64, i64>,
    last: u64,
}

impl FirstSeen {
    fn from(last: u64) -> FirstSeen {
        FirstSeen { at: BTreeMap::new(), last }
    }

    fn saw(&mut self, seq: u64, now: i64) {
        for n in self.last + 1..=seq {
            self.at.insert(n, now);
        }
        self.last = self.last.max(seq);
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let (rate, batch, seconds) = (arg("--rate", 1000), arg("--batch", 100).max(1), arg("--seconds", 30));
    let replays = arg("--replays", 500) as usize;
    // A lone home, then (unless `--alone`) a group of three, in one run.
    let homes: &[u64] = if std::env::args().any(|a| a == "--alone") { &[1] } else { &[1, 3] };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    for &members in homes {
        println!("{}", json!({"home_members": members}));
        runtime.block_on(run(members, (rate, batch, seconds), replays));
    }
}

/// One run against a home of `members`: sustained publishing, then the
/// replay windows; prints its figures.
async fn run(members: u64, (rate, batch, seconds): (u64, u64, u64), replays: usize) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::start(&dir.path().join("home"), members).await;
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();

    let total = (rate * seconds) as usize;
    let sizes = Sizes::products_only(1, total);
    let spec = generate(7, sizes).businesses.remove(0);
    let (uuid, _) = register_business(&home.state, &spec, "").await.unwrap();
    let shown = admin(&home.state, "GET", &format!("/admin/businesses/{uuid}"), serde_json::Value::Null).await;
    let shown = shown.unwrap();
    let context = SealContext {
        cert_id: shown["cert_id"].as_str().unwrap().to_owned(),
        ai_policy_version: shown["ai_policy_version"].as_u64().unwrap(),
    };
    let (key, _) = keys_of(&spec).unwrap();
    let status = eu.state.replica.as_ref().unwrap().status.clone();
    let first = svc_node::replication::last_seq(&home.state.store).unwrap();
    while status.applied.load(Ordering::Relaxed) < first {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The sampler: when home first held each sequence number (durable in
    // its log), when the region first did, and when the region's index
    // first answered with it (its indexer's applied sequence, written
    // once every shard has committed and reloaded its readers). Its own
    // thread, so a busy runtime does not make it late.
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let status = status.clone();
        let home_store = home.state.store.clone();
        let region_store = eu.state.store.clone();
        let indexed = move || indexed_seq(&region_store).unwrap_or(0);
        let stopped = stopped.clone();
        std::thread::spawn(move || {
            let mut home = FirstSeen::from(first);
            let mut region = FirstSeen::from(status.applied.load(Ordering::Relaxed));
            let mut index = FirstSeen::from(indexed().max(first));
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                let now = SystemClock.now().0;
                home.saw(svc_node::replication::last_seq(&home_store).unwrap_or(0), now);
                region.saw(status.applied.load(Ordering::Relaxed), now);
                index.saw(indexed(), now);
            }
            (home.at, region.at, index.at)
        })
    };

    // Each batch is sent on its tick without waiting for the one before,
    // so the offered rate holds whatever home's answer time.
    let every = Duration::from_secs_f64(batch as f64 / rate as f64);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut sends = tokio::task::JoinSet::new();
    let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for chunk in spec.products.chunks(batch as usize) {
        tick.tick().await;
        let (state, key, context, chunk) = (home.state.clone(), key.clone(), context.clone(), chunk.to_vec());
        let busy = busy.clone();
        // Home takes a few publishes at a time (`429` with a retry hint
        // past them): the batch waits as a client would, then is sealed
        // afresh (a new seq) and sent again.
        sends.spawn(async move {
            loop {
                let request = publish_request(&state, &key, &context, &chunk, SystemClock.now()).unwrap();
                match send_publish(&state, request).await {
                    Err(svc_http::sandbox::seed::SeedError::PublishRefused { status: 429, answer }) => {
                        busy.fetch_add(1, Ordering::Relaxed);
                        let wait = answer["retry_after_ms"].as_u64().unwrap_or(50).clamp(5, 1_000);
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                    sent => return sent.map(|_| chunk.len()),
                }
            }
        });
    }
    let (mut published, mut overtaken) = (0usize, 0usize);
    while let Some(sent) = sends.join_next().await {
        match sent.unwrap() {
            Ok(records) => published += records,
            // Two batches sent on one burst of ticks can arrive out of
            // order; home refuses the one overtaken (its seq is lower).
            Err(svc_http::sandbox::seed::SeedError::PublishRefused { status: 409, .. }) => overtaken += 1,
            Err(e) => panic!("publish failed: {e:?}"),
        }
    }
    let publishing = started.elapsed();
    let last = svc_node::replication::last_seq(&home.state.store).unwrap();
    while status.applied.load(Ordering::Relaxed) < last || indexed_seq(&eu.state.store).unwrap_or(0) < last {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    stopped.store(true, Ordering::Relaxed);
    let (at_home, at_region, at_index) = sampler.join().unwrap();

    let entries = svc_node::replication::entries_after(&home.state.store, first, usize::MAX).unwrap();
    // Each lag from a stamp or from home's commit to when home, the
    // region or the region's index first held the entry.
    let lags_to = |to: &BTreeMap<u64, i64>, from: &dyn Fn(&svc_node::replication::Entry) -> Option<i64>| {
        let mut lags: Vec<i64> = entries.iter().filter_map(|e| Some((to.get(&e.seq)? - from(e)?).max(0))).collect();
        lags.sort_unstable();
        json!({"measured": lags.len(), "p50": percentile(&lags, 0.50), "p99": percentile(&lags, 0.99),
            "max": lags.last().copied().unwrap_or(0)})
    };
    println!(
        "{}",
        json!({
            "target_records_per_s": rate,
            "batch": batch,
            "records": published,
            "batches_overtaken": overtaken,
            "batches_waited_busy": busy.load(Ordering::Relaxed),
            "records_per_s": (published as f64 / publishing.as_secs_f64()).round(),
            "entries": entries.len(),
            "lag_ms_from_home_commit": lags_to(&at_region, &|e| at_home.get(&e.seq).copied()),
            "lag_ms_from_entry_stamp": lags_to(&at_region, &|e| Some(e.at.0)),
            "home_commit_ms_from_entry_stamp": lags_to(&at_home, &|e| Some(e.at.0)),
            "searchable_at_region_ms_from_entry_stamp": lags_to(&at_index, &|e| Some(e.at.0)),
        })
    );
    // Where the region's indexer spent its time: steps in all, and
    // waiting on the shards (documents added, committed, readers reloaded).
    if let Ok(indexer) = eu.state.indexer.call(IndexerMsg::Observe).await {
        println!(
            "{}",
            json!({"region_indexer": {"steps": indexer.steps, "step_ms_mean": indexer.step_micros / indexer.steps.max(1) / 1000,
                "shard_ms_mean": indexer.shard_micros / indexer.steps.max(1) / 1000}})
        );
    }
    let (eu_to_home, home_to_eu) = replay_windows(&home, &eu, replays).await;
    println!(
        "{}",
        json!({"replay_window": {"served_at_eu_replayed_at_home": eu_to_home, "served_at_home_replayed_at_eu": home_to_eu}})
    );
    eu.stop().await;
    home.stop().await;
}

/// Where home's nonce feed holds each nonce it has seen, read on from the
/// last entry seen.
#[derive(Default)]
struct HomeFeed {
    after: u64,
    seq: std::collections::HashMap<String, u64>,
}

impl HomeFeed {
    fn seq_of(&mut self, home: &Home, nonce: &str) -> Option<u64> {
        for entry in svc_node::replication::exchange::feed_after(&home.state.store, self.after, 10_000).unwrap() {
            self.after = entry.seq;
            self.seq.insert(entry.claimed.nonce, entry.seq);
        }
        self.seq.get(nonce).copied()
    }
}

/// The replay window, claim by claim: for each of `trials` requests
/// answered at one region, the milliseconds from its answer until the
/// other region holds its nonce (sampled every millisecond, in-process),
/// after which the same request sent there is refused `nonce_reused`.
/// Region to home: home's feed has the nonce (home holds a claim and feeds
/// it in one write). Home to region: the region learned the feed that far.
async fn windows(
    (home, at_home): (&Home, &RetrievalClient),
    (eu, at_eu): (&Node, &RetrievalClient),
    trials: usize,
) -> [serde_json::Value; 2] {
    let body = serde_json::to_vec(&json!({"collection": "products", "q": "nothing-matches-this",
        "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc", "limit": 1}))
    .unwrap();
    let status = eu.state.replica.as_ref().unwrap().status.clone();
    let mut feed = HomeFeed::default();
    let mut out = Vec::new();
    // Served at eu and replayed at home, then the other way.
    for served_at_home in [false, true] {
        let (first, second) = if served_at_home { (at_home, at_eu) } else { (at_eu, at_home) };
        let mut windows_us = Vec::with_capacity(trials);
        for _ in 0..trials {
            let nonce = svc_core::http_sig::nonce_from_bytes(&svc_clock::random::<32>());
            let created = SystemClock.now().as_secs();
            let answer = first.call_as("POST", "/v1/search", body.clone(), created, &nonce).await.unwrap();
            let answered = Instant::now();
            assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
            loop {
                let held = match (served_at_home, feed.seq_of(home, &nonce)) {
                    (false, seq) => seq.is_some(),
                    (true, Some(seq)) => status.feed_learned.load(Ordering::Relaxed) >= seq,
                    (true, None) => panic!("home answered without holding the nonce"),
                };
                if held {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            windows_us.push(answered.elapsed().as_micros() as i64);
            let replay = second.call_as("POST", "/v1/search", body.clone(), created, &nonce).await.unwrap();
            assert_eq!((replay.status, replay.json()["code"].as_str()), (401, Some("nonce_reused")));
        }
        windows_us.sort_unstable();
        let ms = |us: i64| us as f64 / 1000.0;
        out.push(json!({"trials": trials, "p50_ms": ms(percentile(&windows_us, 0.5)),
            "p90_ms": ms(percentile(&windows_us, 0.9)), "p99_ms": ms(percentile(&windows_us, 0.99)),
            "max_ms": ms(windows_us.last().copied().unwrap_or(0))}));
    }
    [out.remove(0), out.remove(0)]
}

async fn replay_windows(home: &Home, eu: &Node, trials: usize) -> (serde_json::Value, serde_json::Value) {
    let state = &home.state;
    let (key, grant) = ai_caller(state, "Replay AI", 77).await.unwrap();
    let authority = &state.config.public_authority;
    let at_home = RetrievalClient::new(&home.public, authority, key.clone(), grant.clone()).unwrap();
    let at_eu = RetrievalClient::new(&format!("http://{}", eu.addr), authority, key, grant).unwrap();
    // The key reaches eu through the log first.
    let probe = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": "FR"}]},
        "sort_by": "published_at:desc", "limit": 1}))
    .unwrap();
    while at_eu.call("POST", "/v1/search", probe.clone()).await.unwrap().status != 200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let [eu_to_home, home_to_eu] = windows((home, &at_home), (eu, &at_eu), trials).await;
    (eu_to_home, home_to_eu)
}
