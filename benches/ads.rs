//! Ad pools next to signed searches at one region, and two regions spending
//! one small budget at once. One run, two parts:
//!
//! (a) one sandbox region in-process on 127.0.0.1 with the corpus scaled to
//!     `--products` and `--campaigns` funded ad campaigns of one ad each
//!     (three keywords from a vocabulary of 40, net prices and bases mixed),
//!     then the load generator over real TCP: `--connections` keep-alive
//!     connections sending signed `POST /v1/ads/pool` as fast as answers
//!     come back, then the product search mix on the same connections. Each
//!     connection signs with 32 keys in turn, so no key comes near the
//!     600-pools-an-hour pace. Pools hold real reserves against leases of
//!     each campaign's money from home's ledger.
//! (b) home and a read region `eu` in-process, linked as in service; for
//!     each of `--rounds` rounds a fresh campaign of `--budget` dollars at
//!     0.20 a render, and `--tasks` tasks at each region pooling and
//!     rendering at once until neither region has an ad to show. Printed:
//!     the worst overspend over the rounds (the goal is none) and how much
//!     money the regions' leases held unspent when the rounds ended.
//!
//! `cargo bench --bench ads -- --products 100000 --campaigns 1000 --connections 32 --seconds 20`
//! (also `--warmup S`, `--rounds N`, `--tasks N`, `--budget D`).
//!
//! The ads are stored through the publisher with a stand-in seal: a pool
//! serves what a business sealed and never checks the seal again, so the
//! figures do not depend on it (the tests seal every ad with a passkey).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc::loadgen::{self, Plan, Query};
use svc_client::retrieval::RetrievalClient;
use svc_clock::SystemClock;
use svc_core::ids::RecordType;
use svc_core::keys::{Alg, SigningKey};
use svc_core::rng::Rng;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ensure_seeded};
use svc_node::actors::ad_reservations::AdMsg;
use svc_node::actors::publisher::PublisherMsg;
use svc_node::config::{NodeConfig, Peer, RegionCredential, ReplicationConfig, RetrievalLimits, Role};
use svc_node::region::Region;
use svc_store::cf;

mod common;

use common::{retrieval_keys, wait_indexed};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Words the campaigns and pools name.
const KEYWORDS: [&str; 40] = [
    "lamp", "table", "chair", "mirror", "jacket", "scarf", "sweater", "boots", "speaker", "radio", "coffee", "tea",
    "honey", "tent", "backpack", "helmet", "cream", "serum", "soap", "oak", "linen", "copper", "velvet", "alpine",
    "organic", "bike", "kayak", "watch", "camera", "guitar", "piano", "bread", "cheese", "wine", "olive", "rug",
    "pillow", "candle", "kettle", "desk",
];

const TOKEN: &str = "eu-replication-token-for-the-ads-bench-32";

/// Stores one ad of `business_uuid` through the publisher; its record id.
async fn store_ad(state: &Region, business_uuid: &str, n: usize) -> String {
    let mut ad = svc_core::records::examples::example(RecordType::Ads);
    ad["ad_id"] = json!(format!("bench-{n}"));
    ad["headline"] = json!(format!("Offer number {n}"));
    ad["description"] = json!("Made to last, sold with care.");
    let fields = ad.as_object_mut().unwrap();
    fields.remove("image_square_url");
    fields.remove("image_landscape_url");
    let certificates = state.registry.certificates(business_uuid).expect("certificates");
    let cert_id = certificates.last().expect("a certificate").cert_id.clone();
    let bytes = serde_json::to_vec(&ad).unwrap();
    let now = svc_clock::Clock::now(&SystemClock);
    // A seal of the right form by a key of the bench's own.
    let sealer = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
    let seal = svc_core::seal::SealV2 {
        v: 2,
        key_id: sealer.verifying_key().thumbprint(),
        cert_id: cert_id.clone(),
        hash: svc_core::digest::sha256_prefixed(&bytes),
        sealed_at: now.to_rfc3339_millis(),
        record_type: "ads".into(),
        ai_policy_version: 0,
        next_ai_policy_version: None,
    };
    let envelope = svc_core::dsse::Envelope::sign(
        &svc_core::dsse::payload_type("seal.v2"),
        &svc_core::canonical::canonicalize(&serde_json::to_value(&seal).unwrap()),
        &[&sealer],
    );
    let save = svc_node::publish::SealedSave {
        business_uuid: business_uuid.to_owned(),
        record_type: RecordType::Ads,
        bytes,
        seal_json: envelope.to_json(),
        key_id: seal.key_id.clone(),
        cert_id,
        certificate_status: "active".into(),
        ai_policy_version: 0,
        now,
        images: Vec::new(),
    };
    let saved = state
        .home
        .as_ref()
        .unwrap()
        .publisher
        .call(|reply| PublisherMsg::SaveSealed(Box::new(save), reply))
        .await
        .expect("publisher")
        .expect("save");
    saved.unwrap_or_else(|errors| panic!("the bench's ad is refused: {errors:?}")).record_id
}

/// A funded campaign placing `ad`; its id.
async fn campaign(state: &Region, business_uuid: &str, ad: &str, terms: Value, funds: &str) -> String {
    let made = admin(
        state,
        "POST",
        &format!("/admin/businesses/{business_uuid}/campaigns"),
        json!({"terms": terms, "items": [ad]}),
    )
    .await
    .expect("campaign");
    let id = made["campaign_id"].as_str().unwrap().to_owned();
    admin(state, "POST", &format!("/admin/campaigns/{id}/funds"), json!({"amount": funds})).await.expect("funds");
    id
}

/// `count` pool requests: one to three keywords, one or both formats, a
/// sort of one to three keys, 5 to 20 ads, each its own conversation.
fn pool_mix(seed: u64, count: usize) -> Vec<Query> {
    let mut rng = Rng::new(seed);
    let sorts = [
        "net_price:desc",
        "net_price:desc,random:asc",
        "keyword_matches:desc,net_price:desc",
        "published_at:desc",
        "random:asc",
    ];
    (0..count)
        .map(|i| {
            let keywords: Vec<&str> = (0..1 + rng.below(3)).map(|_| KEYWORDS[rng.below(40) as usize]).collect();
            let formats = match rng.below(3) {
                0 => json!(["compact"]),
                1 => json!(["card"]),
                _ => json!(["compact", "card"]),
            };
            let body = json!({"country": "FR", "keywords": keywords, "formats": formats,
                "sort_by": sorts[rng.below(sorts.len() as u64) as usize], "size": 5 + rng.below(16),
                "session_ref": format!("bench-conversation-{i}")});
            Query { path: "/v1/ads/pool".into(), body: serde_json::to_vec(&body).unwrap() }
        })
        .collect()
}

fn line(label: &str, report: &loadgen::Report) -> String {
    let l = &report.latency;
    format!(
        "{label:<20} {:>8.0} req/s   p50 {:>7.3} ms   p90 {:>7.3} ms   p99 {:>7.3} ms   statuses {:?}   transport errors {}",
        report.requests_per_second, l.p50_ms, l.p90_ms, l.p99_ms, report.statuses, report.transport_errors
    )
}

fn limits() -> RetrievalLimits {
    RetrievalLimits { requests_per_second: 1_000_000_000, query_cost_per_minute: 1_000_000_000_000 }
}

/// (a) Pools next to searches at one region.
async fn pools_next_to_searches() -> Value {
    let products = arg("--products", 100_000) as usize;
    let campaigns = arg("--campaigns", 1_000) as usize;
    let connections = arg("--connections", 32) as usize;
    let window = Duration::from_secs(arg("--seconds", 20));
    let warmup = Duration::from_secs(arg("--warmup", 3));
    let dir = tempfile::tempdir().expect("temporary directory");
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.path().to_path_buf(), loopback, loopback);
    config.retrieval_limits = limits();
    let node = Node::start(config, Arc::new(SystemClock)).await.expect("node starts");
    let state = node.state.clone();
    let seeding = Instant::now();
    let corpus = generate(1, Sizes { products, ..Sizes::default() });
    let progress =
        |p: svc_http::sandbox::seed::Progress| eprint!("\r  seeding: {} {}/{}        ", p.stage, p.done, p.total);
    ensure_seeded(&state, &corpus, &progress).await.expect("corpus seeded");
    eprintln!();
    let businesses: Vec<String> = state.registry.businesses().unwrap().into_iter().map(|b| b.uuid).collect();
    let mut rng = Rng::new(7);
    for n in 0..campaigns {
        let business = &businesses[n % businesses.len()];
        let ad = store_ad(&state, business, n).await;
        let keywords: Vec<&str> = (0..3).map(|_| KEYWORDS[rng.below(40) as usize]).collect();
        let (price, basis) = if n % 2 == 0 {
            (format!("{}.00", 1 + rng.below(9)), "cpm")
        } else {
            (format!("0.{:02}", 5 + rng.below(90)), "cpc")
        };
        let terms = json!({"name": format!("bench {n}"), "placement": "ad", "budget": "1000000", "net_price": price,
            "basis": basis, "keywords": keywords, "countries": ["FR"], "formats": ["compact", "card"],
            "repeats": {"allowed": true, "max_per_conversation": 3}});
        campaign(&state, business, &ad, terms, "1000000").await;
        if n % 50 == 0 {
            eprint!("\r  campaigns: {n}/{campaigns}        ");
        }
    }
    wait_indexed(&state).await;
    eprintln!(
        "\rcorpus: {products} products, {campaigns} campaigns over {} businesses; ready in {:.1} s",
        businesses.len(),
        seeding.elapsed().as_secs_f64()
    );
    let (_, keys) = retrieval_keys(&state, connections * 32, "ads bench retrieval").await;
    let plan = |queries: Vec<Query>| Plan {
        base_url: format!("http://{}", node.addr),
        authority: state.config.public_authority.clone(),
        keys: keys.clone(),
        connections,
        rate: None,
        warmup,
        duration: window,
        queries,
        trust: svc_client::trust::Trust::system(),
        connection_per_request: false,
        sandbox_grant: true,
    };
    let pools = pool_mix(1, 256);
    let sample = &pools[0];
    let probe = RetrievalClient::new(
        &format!("http://{}", node.addr),
        &state.config.public_authority,
        keys[0].clone(),
        Some(svc_core::sandbox::grant_for(&keys[0].verifying_key().thumbprint())),
    )
    .unwrap()
    .call("POST", &sample.path, sample.body.clone())
    .await
    .expect("a pool");
    let ads_per_pool = probe.json()["ads"].as_array().map_or(0, Vec::len);
    eprintln!(
        "(a) pools: {connections} connections, {} s warm-up, {} s (a sample pool holds {ads_per_pool} ads)",
        warmup.as_secs(),
        window.as_secs()
    );
    let pooled = loadgen::run(plan(pools)).await.expect("load generator");
    eprintln!("(a) searches: the same connections and keys");
    let searched = loadgen::run(plan(loadgen::product_mix(1, 256))).await.expect("load generator");
    println!("{}", line("ads/pool", &pooled));
    println!("{}", line("ads/search", &searched));
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    println!(
        "ads/ratio pool:search   req/s {:.3}   p50 {:.2}x   p99 {:.2}x",
        ratio(pooled.requests_per_second, searched.requests_per_second),
        ratio(pooled.latency.p50_ms, searched.latency.p50_ms),
        ratio(pooled.latency.p99_ms, searched.latency.p99_ms)
    );
    node.stop().await;
    json!({"products": products, "campaigns": campaigns, "connections": connections, "seconds": window.as_secs(),
        "pool": {"requests_per_second": pooled.requests_per_second, "latency": pooled.latency, "statuses": pooled.statuses},
        "search": {"requests_per_second": searched.requests_per_second, "latency": searched.latency, "statuses": searched.statuses}})
}

/// Polls `check` every 20 ms for up to 30 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let began = Instant::now();
    while !check() {
        assert!(began.elapsed() < Duration::from_secs(30), "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Pools and renders at `node` until pools come back empty five times in
/// a row; answers the renders accepted.
async fn hammer(client: Arc<RetrievalClient>, task: usize, round: usize) -> u64 {
    let mut accepted = 0;
    let mut empty = 0;
    for n in 0.. {
        let session = format!("r{round}-t{task}-{n}");
        let body = json!({"country": "FR", "keywords": ["race"], "formats": ["card"], "sort_by": "net_price:desc", "size": 1, "session_ref": session});
        let Ok(pooled) = client.call("POST", "/v1/ads/pool", serde_json::to_vec(&body).unwrap()).await else {
            continue;
        };
        let Some(item) = pooled.json()["ads"].as_array().and_then(|a| a.first().cloned()) else {
            empty += 1;
            if empty >= 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        empty = 0;
        let render = json!({"render_token": item["render_token"], "format": "card", "session_ref": session});
        let idem = format!("bench-{round}-{task}-{n}");
        let answer = client
            .call_with("POST", "/v1/ads/render", serde_json::to_vec(&render).unwrap(), &[("idempotency-key", &idem)])
            .await;
        if answer.is_ok_and(|a| a.json()["accepted"] == true) {
            accepted += 1;
        }
    }
    accepted
}

/// (b) Two regions spending one small budget at once.
async fn overspend() -> Value {
    let rounds = arg("--rounds", 5) as usize;
    let tasks = arg("--tasks", 16) as usize;
    let budget_cents = arg("--budget", 2) * 100;
    let dir = tempfile::tempdir().expect("temporary directory");
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let eu_listen = std::net::TcpListener::bind(loopback).unwrap().local_addr().unwrap();
    let mut home_config = NodeConfig::local_home(dir.path().join("home"), loopback, loopback);
    home_config.internal_listen = Some(loopback);
    home_config.replication = Some(ReplicationConfig::home(vec![RegionCredential::new("eu", TOKEN)]));
    home_config.peers = vec![Peer { name: "eu".into(), url: format!("http://{eu_listen}") }];
    home_config.retrieval_limits = limits();
    let home = Node::start(home_config, Arc::new(SystemClock)).await.expect("home starts");
    let mut eu_config = NodeConfig::local_home(dir.path().join("eu"), eu_listen, loopback);
    eu_config.region = "eu".into();
    eu_config.role = Role::Read;
    eu_config.replication = Some(ReplicationConfig::read(
        Some(format!("http://{}", home.addr)),
        Some(format!("http://{}", home.internal_addr.unwrap())),
        TOKEN,
    ));
    eu_config.peers = vec![Peer { name: "home".into(), url: format!("http://{}", home.addr) }];
    eu_config.retrieval_limits = limits();
    let eu = Node::start(eu_config, Arc::new(SystemClock)).await.expect("eu starts");
    let corpus = generate(2, Sizes { products: 10, ..Sizes::default() });
    ensure_seeded(&home.state, &corpus, &|_| {}).await.expect("corpus seeded");
    let business = home.state.registry.businesses().unwrap()[0].uuid.clone();
    let (_, keys) = retrieval_keys(&home.state, tasks * 2, "ads bench retrieval").await;
    let clients: Vec<Arc<RetrievalClient>> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let at = if i % 2 == 0 { &eu } else { &home };
            let grant = svc_core::sandbox::grant_for(&key.verifying_key().thumbprint());
            Arc::new(
                RetrievalClient::new(
                    &format!("http://{}", at.addr),
                    &home.state.config.public_authority,
                    key.clone(),
                    Some(grant),
                )
                .unwrap(),
            )
        })
        .collect();
    let budget = format!("{}.{:02}", budget_cents / 100, budget_cents % 100);
    let (mut worst, mut unspent_total, mut leased_total, mut renders_total) = (0i64, 0u64, 0u64, 0u64);
    for round in 0..rounds {
        let ad = store_ad(&home.state, &business, 10_000 + round).await;
        let terms = json!({"name": format!("race {round}"), "placement": "ad", "budget": budget, "net_price": "200.00",
            "basis": "cpm", "keywords": ["race"], "countries": ["FR"], "formats": ["card"],
            "repeats": {"allowed": false, "max_per_conversation": 1}});
        let id = campaign(&home.state, &business, &ad, terms, &budget).await;
        // The earlier round's campaign is paused, so each round races for one budget.
        eventually("eu holds the campaign", || eu.state.store.contains(cf::CAMPAIGNS, id.as_bytes()).unwrap_or(false))
            .await;
        let racers: Vec<_> =
            clients.iter().enumerate().map(|(task, c)| tokio::spawn(hammer(c.clone(), task, round))).collect();
        let mut accepted = 0;
        for racer in racers {
            accepted += racer.await.expect("racer");
        }
        let spent_cents = accepted as i64 * 20;
        let over = spent_cents - budget_cents as i64;
        worst = worst.max(over);
        let (mut leased, mut used) = (0u64, 0u64);
        for node in [&home, &eu] {
            let book = node.state.ads.call(AdMsg::Observe).await.expect("book");
            if let Some(lease) = book.leases.get(&id) {
                leased += lease.amount.0;
                used += lease.used.0;
            }
        }
        admin(&home.state, "POST", &format!("/admin/campaigns/{id}/state"), json!({"state": "paused"}))
            .await
            .expect("pause");
        println!(
            "ads/overspend round {round}: budget {budget}, {accepted} renders accepted ({}.{:02} spent, {} over), leases held {:.2} of which {:.2} unspent",
            spent_cents / 100,
            spent_cents % 100,
            over.max(0),
            leased as f64 / 1e6,
            (leased - used) as f64 / 1e6
        );
        renders_total += accepted;
        leased_total += leased;
        unspent_total += leased - used;
    }
    println!(
        "ads/overspend worst over {rounds} rounds: {} cents (goal 0); leases held {:.2}, {:.2} of it unspent at the end",
        worst.max(0),
        leased_total as f64 / 1e6,
        unspent_total as f64 / 1e6
    );
    eu.stop().await;
    home.stop().await;
    json!({"rounds": rounds, "tasks_per_region": tasks, "budget": budget, "renders": renders_total,
        "worst_overspend_cents": worst.max(0), "leased": leased_total as f64 / 1e6, "unspent": unspent_total as f64 / 1e6})
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // and expects a quick run, so the bench runs only when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let pools = pools_next_to_searches().await;
        let spending = overspend().await;
        println!("{}", serde_json::to_string_pretty(&json!({"pools": pools, "overspend": spending})).unwrap());
    });
}
