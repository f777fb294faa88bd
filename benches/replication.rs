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
//! With `--apart-rounds R` it runs only the lone home's lag, `R` times over
//! both ways, alternated: the region in this process beside home, both on
//! every core; then the region as `svc node` in a process of its own on the
//! upper half of the cores, with this process (home, the publishing load,
//! the sampler) pinned to the lower half. Apart, the region's times are the
//! ones it logs as it applies a page and commits an index step (`at_ms`,
//! the same wall clock as home's stamps), read from its log afterwards.
//! Each `--eu LABEL=PATH` runs the apart region from that build of `svc`
//! instead (several side by side; this bench's own by default).
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

// Linked for its allocator: the bench allocates with mimalloc, as `svc node` does.
use svc as _;

#[path = "common/process.rs"]
mod process;

use process::{pin_this_process, readyz};

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
    let apart_rounds = arg("--apart-rounds", 0) as usize;
    if apart_rounds > 0 {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        runtime.block_on(compare_apart((rate, batch, seconds), apart_rounds));
        return;
    }
    // A lone home, then (unless `--alone`) a group of three, in one run.
    let homes: &[u64] = if std::env::args().any(|a| a == "--alone") { &[1] } else { &[1, 3] };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    for &members in homes {
        println!("{}", json!({"home_members": members}));
        runtime.block_on(run(members, (rate, batch, seconds), replays));
    }
}

/// The read region of a run: in this process, or `svc node` in its own.
enum Eu {
    Inside(Box<Node>),
    Apart { child: std::process::Child, listen: std::net::SocketAddr, log: std::path::PathBuf },
}

impl Eu {
    /// The region's applied and indexed sequences, as it answers them.
    async fn sequences(&self) -> (u64, u64) {
        match self {
            Eu::Inside(eu) => {
                let status = &eu.state.replica.as_ref().unwrap().status;
                (status.applied.load(Ordering::Relaxed), indexed_seq(&eu.state.store).unwrap_or(0))
            }
            Eu::Apart { listen, .. } => {
                let listen = *listen;
                let body = tokio::task::spawn_blocking(move || readyz(listen)).await.unwrap().unwrap_or_default().1;
                (body["applied_seq"].as_u64().unwrap_or(0), body["indexed_seq"].as_u64().unwrap_or(0))
            }
        }
    }
}

/// When an apart region first held each entry and first answered with
/// it, from the `at_ms` of the events it logged (`replicated page
/// applied`, `index step committed`), counting from `first`.
fn logged_times(log: &std::path::Path, first: u64) -> (BTreeMap<u64, i64>, BTreeMap<u64, i64>, u64) {
    let (mut region, mut index, mut steps) = (FirstSeen::from(first), FirstSeen::from(first), 0);
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let fields = &event["fields"];
        let (Some(seq), Some(at)) = (fields["applied_seq"].as_u64(), fields["at_ms"].as_i64()) else { continue };
        match fields["message"].as_str() {
            Some("replicated page applied") => region.saw(seq, at),
            Some("index step committed") => {
                index.saw(seq, at);
                steps += 1;
            }
            _ => {}
        }
    }
    (region.at, index.at, steps)
}

/// Issue 51, section 3: the lone home's lag with the region in this
/// process and in its own on its own cores, alternated `rounds` times;
/// prints each run, then the medians of stamp → searchable at the region.
async fn compare_apart(load: (u64, u64, u64), rounds: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cores >= 2, "a region apart needs two cores or more");
    let (all, home_cores, eu_cores) =
        (format!("0-{}", cores - 1), format!("0-{}", cores / 2 - 1), format!("{}-{}", cores / 2, cores - 1));
    let builds = process::node_builds("--eu");
    let mut runs: BTreeMap<String, Vec<[i64; 5]>> = BTreeMap::new();
    for round in 1..=rounds {
        pin_this_process(&all);
        println!("{}", json!({"round": round, "region": "inside"}));
        runs.entry("inside".into()).or_default().push(run_with(1, load, 0, None).await);
        for build in &builds {
            pin_this_process(&home_cores);
            let way = format!("apart, {}", build.label);
            println!("{}", json!({"round": round, "region": way}));
            runs.entry(way).or_default().push(run_with(1, load, 0, Some((&eu_cores, build))).await);
        }
    }
    pin_this_process(&all);
    for (way, runs) in &runs {
        let median = |n: usize| {
            let mut column: Vec<i64> = runs.iter().map(|r| r[n]).collect();
            column.sort_unstable();
            column[column.len() / 2]
        };
        println!(
            "replication/region {way:<14} stamp → searchable at the region p50 {} ms  p99 {} ms   stamp → home's commit p99 {} ms   \
             held at the region → searchable p50 {} ms  p99 {} ms   (medians of {rounds})",
            median(0),
            median(1),
            median(2),
            median(3),
            median(4)
        );
    }
}

/// One run against a home of `members`: sustained publishing, then the
/// replay windows; prints its figures.
async fn run(members: u64, load: (u64, u64, u64), replays: usize) {
    run_with(members, load, replays, None).await;
}

/// A run with the region in this process, or (`apart`: its cores) as `svc
/// node` in its own, without the replay windows; answers stamp →
/// searchable at the region p50 and p99, stamp → home's commit p99, and
/// held at the region → searchable p50 and p99.
async fn run_with(
    members: u64,
    (rate, batch, seconds): (u64, u64, u64),
    replays: usize,
    apart: Option<(&str, &process::NodeBuild)>,
) -> [i64; 5] {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::start(&dir.path().join("home"), members).await;
    let eu_config = config(dir.path(), "eu", Role::Read, Some(&home));
    let eu = match apart {
        None => Eu::Inside(Box::new(Node::start(eu_config, Arc::new(SystemClock)).await.unwrap())),
        Some((cores, build)) => {
            let mut eu_config = eu_config;
            let free = || svc_node::config::port_to_keep(std::net::Ipv4Addr::LOCALHOST.into()).unwrap();
            (eu_config.listen, eu_config.admin_listen, eu_config.allow_plain_http) = (free(), free(), true);
            let file = dir.path().join("eu.toml");
            std::fs::write(&file, toml::to_string(&eu_config).unwrap()).unwrap();
            let log = dir.path().join("eu.log");
            let child = std::process::Command::new("taskset")
                .args(["-c", cores, build.binary.as_str(), "node", "--config"])
                .arg(&file)
                .envs(build.env.iter().map(|(k, v)| (k, v)))
                .env("SVC_LOG", "info,svc_node::actors::replicator=debug,svc_node::actors::indexer=debug")
                .env("SVC_LOG_FORMAT", "json")
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("svc node starts");
            Eu::Apart { child, listen: eu_config.listen, log }
        }
    };

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
    let first = svc_node::replication::last_seq(&home.state.store).unwrap();
    while eu.sequences().await.1 < first {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The sampler: when home first held each sequence number (durable in
    // its log), when the region first did, and when the region's index
    // first answered with it (its indexer's applied sequence, written
    // once every shard has committed and reloaded its readers). Its own
    // thread, so a busy runtime does not make it late.
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Apart, only home is sampled here; the region's times are in its log.
    let sampler = {
        let region = match &eu {
            Eu::Inside(eu) => Some((eu.state.replica.as_ref().unwrap().status.clone(), eu.state.store.clone())),
            Eu::Apart { .. } => None,
        };
        let home_store = home.state.store.clone();
        let stopped = stopped.clone();
        std::thread::spawn(move || {
            let sequences =
                || region.as_ref().map(|(s, store)| (s.applied.load(Ordering::Relaxed), indexed_seq(store)));
            let mut home = FirstSeen::from(first);
            let mut held = FirstSeen::from(sequences().map_or(first, |s| s.0));
            let mut index = FirstSeen::from(sequences().map_or(first, |s| s.1.unwrap_or(0).max(first)));
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                let now = SystemClock.now().0;
                home.saw(svc_node::replication::last_seq(&home_store).unwrap_or(0), now);
                if let Some((applied, indexed)) = sequences() {
                    held.saw(applied, now);
                    index.saw(indexed.unwrap_or(0), now);
                }
            }
            (home.at, held.at, index.at)
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
    while eu.sequences().await < (last, last) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    stopped.store(true, Ordering::Relaxed);
    let (at_home, mut at_region, mut at_index) = sampler.join().unwrap();
    let eu = match eu {
        Eu::Apart { child, log, .. } => {
            process::stop(child);
            let steps;
            (at_region, at_index, steps) = logged_times(&log, first);
            println!("{}", json!({"region_indexer": {"steps": steps}}));
            None
        }
        Eu::Inside(eu) => Some(eu),
    };

    let entries = svc_node::replication::entries_after(&home.state.store, first, usize::MAX).unwrap();
    // Each lag from a stamp or from home's commit to when home, the
    // region or the region's index first held the entry.
    let lags_to = |to: &BTreeMap<u64, i64>, from: &dyn Fn(&svc_node::replication::Entry) -> Option<i64>| {
        let mut lags: Vec<i64> = entries.iter().filter_map(|e| Some((to.get(&e.seq)? - from(e)?).max(0))).collect();
        lags.sort_unstable();
        json!({"measured": lags.len(), "p50": percentile(&lags, 0.50), "p99": percentile(&lags, 0.99),
            "max": lags.last().copied().unwrap_or(0)})
    };
    let searchable = lags_to(&at_index, &|e| Some(e.at.0));
    let home_commit = lags_to(&at_home, &|e| Some(e.at.0));
    // The region's own part: from holding an entry to answering with it.
    let indexing = lags_to(&at_index, &|e| at_region.get(&e.seq).copied());
    let figures = [&searchable["p50"], &searchable["p99"], &home_commit["p99"], &indexing["p50"], &indexing["p99"]]
        .map(|v| v.as_i64().unwrap_or(0));
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
            "home_commit_ms_from_entry_stamp": home_commit,
            "searchable_at_region_ms_from_entry_stamp": searchable,
            "searchable_at_region_ms_from_held_there": indexing,
        })
    );
    let Some(eu) = eu else {
        home.stop().await;
        return figures;
    };
    // Where the region's indexer spent its time: steps in all, and
    // waiting on the shards (documents added, committed, readers reloaded).
    if let Ok(indexer) = eu.state.indexer.call(IndexerMsg::Observe).await {
        println!(
            "{}",
            json!({"region_indexer": {"steps": indexer.steps, "step_ms_mean": indexer.step_micros / indexer.steps.max(1) / 1000,
                "shard_ms_mean": indexer.shard_micros / indexer.steps.max(1) / 1000}})
        );
    }
    if replays > 0 {
        let (eu_to_home, home_to_eu) = replay_windows(&home, &eu, replays).await;
        println!(
            "{}",
            json!({"replay_window": {"served_at_eu_replayed_at_home": eu_to_home, "served_at_home_replayed_at_eu": home_to_eu}})
        );
    }
    eu.stop().await;
    home.stop().await;
    figures
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
