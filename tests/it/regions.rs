//! A home region and a read region as two nodes over TCP: the read region
//! pulls home's replication log over HTTP/2, serves searches from what it
//! applied, forwards writes to home, and answers 503 for writes while home
//! is unreachable (while still serving searches).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;
use svc_clock::SystemClock;
use svc_core::keys::{Alg, SigningKey};
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ai_caller, ensure_seeded};
use svc_node::actors::receipt_folder;
use svc_node::config::{NodeConfig, RegionCredential, ReplicationConfig, Role};
use svc_store::cf;
use svc_store::model::StoredReceipt;

use crate::common::{eventually, link_request, region_token as token};

/// A region's config; a read region reaches `home`'s public and internal
/// listeners. Home knows `eu` and `ap`, each by its own token.
fn config(dir: &std::path::Path, region: &str, role: Role, home: Option<&Node>) -> NodeConfig {
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.join(region), loopback, loopback);
    config.region = region.into();
    config.role = role;
    config.replication = Some(match home {
        None => {
            config.internal_listen = Some(loopback);
            ReplicationConfig::home(["eu", "ap"].map(|r| RegionCredential::new(r, &token(r))).to_vec())
        }
        Some(home) => ReplicationConfig::read(
            Some(format!("http://{}", home.addr)),
            Some(format!("http://{}", home.internal_addr.unwrap())),
            &token(region),
        ),
    });
    config
}

async fn get(base: &str, path: &str, token: Option<&str>) -> svc_client::transport::Answer {
    let mut request = axum::http::Request::get(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    Transport::new(base).unwrap().send(request.body(axum::body::Body::empty()).unwrap()).await.unwrap()
}

// rule: R5.1, P4.2.5
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_serves_what_home_published_and_forwards_writes() {
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let home_url = format!("http://{}", home.addr);
    let read = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    let read_url = format!("http://{}", read.addr);

    // Published at home, through home's own routes.
    let sizes = Sizes::products_only(2, 30);
    let corpus = generate(11, sizes);
    let country = corpus.businesses[0].country.clone();
    ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let (key, grant) = ai_caller(&home.state, "Far AI", 43).await.unwrap();
    let grant = grant.unwrap();
    let home_head = svc_node::replication::last_seq(&home.state.store).unwrap();

    // The read region catches up to home's head and says so.
    eventually("the read region is ready at home's head", || async {
        let ready = get(&read_url, "/readyz", None).await;
        ready.status == 200 && ready.json()["applied_seq"].as_u64() >= Some(home_head)
    })
    .await;
    let ready = get(&read_url, "/readyz", None).await.json();
    assert_eq!(ready["region"], "eu");
    assert_eq!(ready["role"], "read");
    assert!(ready["indexed_seq"].as_u64() >= Some(home_head), "{ready}");
    assert_eq!(
        svc_node::replication::entries_after(&read.state.store, 0, usize::MAX).unwrap(),
        svc_node::replication::entries_after(&home.state.store, 0, usize::MAX).unwrap(),
        "the region's log is home's, entry for entry"
    );

    // The same search answers the same rows at both regions.
    let body = json!({"collection": "products", "filter": {"all": [{"country": country}]}, "sort_by": "published_at:desc", "limit": 10});
    let rows = |base: String| {
        let key = key.clone();
        let grant = grant.clone();
        let body = body.clone();
        async move {
            let client = RetrievalClient::new(&base, "api.svc.localhost", key, Some(grant)).unwrap();
            let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
            assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
            answer.json()["rows"].clone()
        }
    };
    eventually("home's index serves the corpus", || {
        let found = rows(home_url.clone());
        async move { !found.await.as_array().unwrap().is_empty() }
    })
    .await;
    let at_home = rows(home_url.clone()).await;
    assert_eq!(rows(read_url.clone()).await, at_home, "the read region serves home's rows");

    // Home's internal routes are on its internal listener only: not on its
    // public port, nor through a region's, even with a region's token.
    let internal_url = format!("http://{}", home.internal_addr.unwrap());
    let eu_token = token("eu");
    let through = get(&read_url, "/internal/v1/log?after=0", Some(&eu_token)).await;
    assert_eq!(through.status, 404, "{}", String::from_utf8_lossy(&through.bytes));
    assert_eq!(get(&home_url, "/internal/v1/log?after=0", Some(&eu_token)).await.status, 404);
    // The token itself never crosses the wire: a bearer is refused; a
    // request under the region's MAC is answered, under home's MAC.
    assert_eq!(get(&internal_url, "/internal/v1/log?after=0", Some(&eu_token)).await.status, 401);
    let internal = Transport::new(&internal_url).unwrap();
    let as_eu = |path: &str| link_request("GET", path, "eu", &eu_token, Vec::new());
    let answered = internal.send(as_eu("/internal/v1/log?after=0")).await.unwrap();
    assert_eq!(answered.status, 200);
    assert!(answered.headers.contains_key(svc_core::link::MAC_HEADER));
    let stale = {
        let mut request = as_eu("/internal/v1/log?after=0");
        request.headers_mut().insert(svc_core::link::AT_HEADER, "1000".parse().unwrap());
        request
    };
    assert_eq!(internal.send(stale).await.unwrap().status, 401, "outside the window (and its MAC no longer fits)");

    // Public documents the statement key signs on demand come from home
    // (a region holds no statement key); the rest from the region's copy.
    let businesses = home.state.registry.businesses().unwrap();
    let uuid = businesses.iter().find(|b| b.legal_name == corpus.businesses[0].legal_name).unwrap().uuid.clone();
    let keys_at_region = get(&read_url, &format!("/v1/certificates/{uuid}/keys"), None).await;
    assert_eq!(keys_at_region.status, 200);
    assert_eq!(keys_at_region.headers["access-control-allow-origin"], "*");
    let signed = svc_core::dsse::Envelope::from_value(&keys_at_region.json()["signed"]).unwrap();
    home.state
        .keys
        .statement_key()
        .verify(&signed, "application/vnd.service.business-keys.v1+json")
        .expect("signed by home's statement key, which the key set names");
    let certificate_at_region = get(&read_url, &format!("/v1/certificates/{uuid}"), None).await;
    assert_eq!(certificate_at_region.json()["status"], "active", "served from the region's copy");

    // A write route at the read region is home's answer, byte for byte
    // apart from `instance`; the internal log needs the token.
    let catalogue = "/v1/catalogue";
    let via_read = get(&read_url, catalogue, None).await;
    let at_home_direct = get(&home_url, catalogue, None).await;
    assert_eq!(via_read.status, at_home_direct.status);
    assert_eq!(via_read.json()["code"], at_home_direct.json()["code"]);
    let wrong = link_request("GET", "/internal/v1/log?after=0", "eu", "a-wrong-token-of-thirty-two-characters", vec![]);
    assert_eq!(internal.send(wrong).await.unwrap().status, 401);
    let log = internal.send(as_eu("/internal/v1/log?after=0")).await.unwrap();
    assert_eq!(log.status, 200);
    // (The search at home introduced the sandbox key: one entry more.)
    let head_now = svc_node::replication::last_seq(&home.state.store).unwrap();
    assert_eq!(log.headers["x-svc-log-head"].to_str().unwrap(), head_now.to_string());
    let (frames, stopped) = svc_core::frames::decode(&log.bytes, 0);
    assert_eq!((frames.len() as u64, stopped), (head_now, None));

    // Both admin listeners expose metrics a Prometheus parser reads, with
    // the searches above counted by route and code.
    for (node, role) in [(&home, "home"), (&read, "read")] {
        // A method of the caller's making is counted as `other`, so no
        // caller can grow a series per request.
        let odd = axum::http::Request::builder().method("FOOBAR7").uri("/v1/search");
        let base = format!("http://{}", node.addr);
        Transport::new(&base).unwrap().send(odd.body(axum::body::Body::empty()).unwrap()).await.unwrap();
        let admin = format!("http://{}", node.admin_addr);
        assert_eq!(get(&admin, "/metrics", None).await.status, 401, "metrics need the admin token");
        let scrape = get(&admin, "/metrics", Some(&node.state.config.admin_token)).await;
        assert_eq!(scrape.status, 200);
        let text = String::from_utf8(scrape.bytes.to_vec()).unwrap();
        let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        let value = |name: &str, labels: &[(&str, &str)]| {
            parsed
                .samples
                .iter()
                .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
                .map(|s| match s.value {
                    prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                    prometheus_parse::Value::Untyped(v) => v,
                    _ => f64::NAN,
                })
        };
        let searches = value("svc_http_requests_total", &[("route", "/v1/search"), ("code", "200")]);
        assert!(searches >= Some(1.0), "{role}: {text}");
        assert!(value("svc_http_requests_total", &[("method", "other")]) >= Some(1.0), "{role}: {text}");
        assert!(!text.contains("FOOBAR7"), "{role}: a caller's method is no label");
        assert!(value("svc_replication_applied_seq", &[]) >= Some(home_head as f64), "{role}: {text}");
        assert!(value("svc_index_documents", &[("collection", "products")]) >= Some(30.0), "{role}: {text}");
        // Issue 51: the searches above copied their rows from memory.
        assert!(value("svc_index_rows_bytes", &[("part", "held")]) > Some(0.0), "{role}: {text}");
        assert_eq!(value("svc_search_rows_from_store_total", &[]), Some(0.0), "{role}: {text}");
        assert!(value("svc_nonce_store_size", &[]) >= Some(1.0), "{role}: {text}");
        assert!(parsed.samples.iter().any(|s| s.metric.starts_with("svc_http_request_duration_seconds")), "{role}");
        // Each actor of the roster: what waits on it, and whether the
        // watchdog has it named.
        assert_eq!(value("svc_actor_frozen", &[("actor", "billing")]), Some(0.0), "{role}: {text}");
        assert_eq!(value("svc_actor_waiting", &[("actor", "receipt_log")]), Some(0.0), "{role}: {text}");
        if role == "read" {
            assert!(value("svc_replication_lag_seconds", &[]).is_some(), "{text}");
            assert_eq!(value("svc_replication_head_seq", &[]), value("svc_replication_applied_seq", &[]));
        }
    }

    // Home goes away: searches go on, writes are refused with 503.
    home.stop().await;
    let refused = get(&read_url, catalogue, None).await;
    assert_eq!(refused.status, 503, "{}", String::from_utf8_lossy(&refused.bytes));
    assert_eq!(refused.json()["code"], "unavailable");
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(rows(read_url.clone()).await, at_home, "the read region still serves");
    let health: Value = get(&read_url, "/healthz", None).await.json();
    assert_eq!(health["status"], "ok");
    read.stop().await;
}

/// A fresh nonce, as a caller draws one.
fn nonce() -> String {
    svc_core::http_sig::nonce_from_bytes(&svc_clock::random::<32>())
}

fn now_secs() -> i64 {
    svc_clock::Clock::now(&SystemClock).as_secs()
}

/// The totals home counted for the caller's company.
async fn billed_at_home(client: &RetrievalClient) -> (u64, Value) {
    let usage = client.call("GET", "/v1/usage", vec![]).await.unwrap();
    assert_eq!(usage.status, 200, "{}", String::from_utf8_lossy(&usage.bytes));
    let usage = usage.json();
    (usage["totals"]["billed"].as_u64().unwrap(), usage["allowance"].clone())
}

/// Where home's nonce feed holds the nonce (claimed anywhere), if it does.
fn feed_seq(home: &Node, nonce: &str) -> Option<u64> {
    let feed = svc_node::replication::exchange::feed_after(&home.state.store, 0, 100_000).unwrap();
    feed.iter().find(|e| e.claimed.nonce == nonce).map(|e| e.seq)
}

/// Home and eu serving the same corpus to one AI key, its company on a
/// prepaid allowance of 200 (leased to eu 3 units at a time) or on none.
struct TwoRegions {
    home: Node,
    eu: Node,
    at_home: RetrievalClient,
    at_eu: RetrievalClient,
    search: Vec<u8>,
    company_uuid: String,
}

async fn two_regions_serving(dir: &std::path::Path, prepaid: bool) -> TwoRegions {
    let home = Node::start(config(dir, "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let home_url = format!("http://{}", home.addr);
    let mut eu_config = config(dir, "eu", Role::Read, Some(&home));
    if let Some(link) = eu_config.replication.as_mut() {
        link.lease_units = 3;
    }
    let eu = Node::start(eu_config, Arc::new(SystemClock)).await.unwrap();
    let eu_url = format!("http://{}", eu.addr);

    let sizes = Sizes::products_only(1, 10);
    let corpus = generate(12, sizes);
    let country = corpus.businesses[0].country.clone();
    ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let company = admin(&home.state, "POST", "/admin/companies", json!({"name": "An AI"})).await.unwrap();
    let uuid = company["ai_company_uuid"].as_str().unwrap();
    if prepaid {
        let allowance = json!({"ai_company_uuid": uuid, "prepay": true, "remaining": 200});
        admin(&home.state, "POST", "/admin/allowances", allowance).await.unwrap();
    }
    let group =
        admin(&home.state, "POST", &format!("/admin/companies/{uuid}/groups"), json!({"name": "bots"})).await.unwrap();
    let key = SigningKey::from_seed(Alg::Ed25519, &[44; 32]).unwrap();
    let path = format!("/admin/groups/{}/retrieval-keys", group["ai_group_id"].as_str().unwrap());
    let registered = admin(&home.state, "POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await.unwrap();
    let grant = Some(registered["sandbox_key_grant"].as_str().unwrap().to_owned());
    let at_home = RetrievalClient::new(&home_url, "api.svc.localhost", key.clone(), grant.clone()).unwrap();
    let at_eu = RetrievalClient::new(&eu_url, "api.svc.localhost", key, grant).unwrap();
    let search = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": country}]},
        "sort_by": "published_at:desc", "limit": 5}))
    .unwrap();
    eventually("both regions serve the corpus", || async {
        let mut served = true;
        for client in [&at_home, &at_eu] {
            let answer = client.call("POST", "/v1/search", search.clone()).await.unwrap();
            served &= answer.status == 200 && !answer.json()["rows"].as_array().unwrap().is_empty();
        }
        served
    })
    .await;
    let outbox_empty = || async { svc_node::replication::exchange::pending(&eu.state.store, 1).unwrap().is_empty() };
    eventually("eu reported all it served", outbox_empty).await;
    TwoRegions { home, eu, at_home, at_eu, search, company_uuid: uuid.to_owned() }
}

// rule: R1.26, R1.27, R1.28, R1.29, R5.36
#[tokio::test(flavor = "multi_thread")]
async fn a_signed_request_is_billed_once_across_regions_and_a_lease_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let TwoRegions { home, eu, at_home, at_eu, search, company_uuid: uuid } =
        two_regions_serving(dir.path(), true).await;
    let (billed, _) = billed_at_home(&at_home).await;

    // Served at eu; once the claim has gone round, a replay at home is refused.
    let (created, n1) = (now_secs(), nonce());
    assert_eq!(at_eu.call_as("POST", "/v1/search", search.clone(), created, &n1).await.unwrap().status, 200);
    let replay = async |client: &RetrievalClient, n: &str| {
        client.call_as("POST", "/v1/search", search.clone(), created, n).await.unwrap()
    };
    eventually("home holds eu's claim", || async { feed_seq(&home, &n1).is_some() }).await;
    let replayed = replay(&at_home, &n1).await;
    assert_eq!((replayed.status, replayed.json()["code"].as_str()), (401, Some("nonce_reused")));
    // Served at home; once eu learned it from the feed, a replay at eu is refused.
    let n2 = nonce();
    assert_eq!(replay(&at_home, &n2).await.status, 200);
    let seq = feed_seq(&home, &n2).expect("home's feed has its own claim");
    let learned = || eu.state.replica.as_ref().unwrap().status.feed_learned.load(std::sync::atomic::Ordering::Relaxed);
    eventually("eu learned home's claim", || async { learned() >= seq }).await;
    let replayed = replay(&at_eu, &n2).await;
    assert_eq!((replayed.status, replayed.json()["code"].as_str()), (401, Some("nonce_reused")));

    // Sent to both at once, before either heard of it: served twice at
    // most, billed once. Tried until both regions served the same request.
    let mut both_served = 0;
    let mut distinct = 2;
    for _ in 0..10 {
        let n = nonce();
        let (a, b) = tokio::join!(replay(&at_home, &n), replay(&at_eu, &n));
        assert!(
            a.status == 200 || b.status == 200,
            "{} {} {} {}",
            a.status,
            String::from_utf8_lossy(&a.bytes),
            b.status,
            String::from_utf8_lossy(&b.bytes)
        );
        distinct += 1;
        if a.status == 200 && b.status == 200 {
            both_served += 1;
        }
    }
    assert!(both_served > 0, "a replay inside the window was served at both regions at least once");
    eventually("home billed each signed request once", || async {
        billed_at_home(&at_home).await.0 == billed + distinct
    })
    .await;
    let (billed, allowance) = billed_at_home(&at_home).await;
    assert_eq!(
        allowance["remaining"].as_u64(),
        Some(200 - billed),
        "the allowance spent is what was billed: {allowance}"
    );

    // Allowances are home's: a read region's admin API does not take them.
    let request = axum::http::Request::post("/admin/allowances")
        .header("authorization", format!("Bearer {}", eu.state.config.admin_token))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(json!({"ai_company_uuid": uuid, "prepay": true, "remaining": 5}).to_string()))
        .unwrap();
    let at_region = Transport::new(&format!("http://{}", eu.admin_addr)).unwrap().send(request).await.unwrap();
    assert_eq!(at_region.status, 503, "{}", String::from_utf8_lossy(&at_region.bytes));

    // Home goes away: eu serves from its lease (at most 3 units), then fails closed.
    home.stop().await;
    let mut answers = Vec::new();
    for _ in 0..5 {
        answers.push(at_eu.call("POST", "/v1/search", search.clone()).await.unwrap());
    }
    let served = answers.iter().filter(|a| a.status == 200).count();
    assert!(served <= 3, "never more than the lease: {served}");
    let refused = answers.last().unwrap();
    assert_eq!(refused.status, 503, "{}", String::from_utf8_lossy(&refused.bytes));
    assert_eq!(refused.json()["code"], "unavailable");
    assert!(refused.headers.contains_key("retry-after"));
    eu.stop().await;
}

// A region's claims go home in their own lane: with a report home refuses
// at the head of eu's outbox, nothing behind it gets through, yet a
// request served at eu is refused when replayed at home.
// rule: R5.36
#[tokio::test(flavor = "multi_thread")]
async fn a_claim_goes_home_while_the_regions_report_is_refused() {
    use svc_node::replication::exchange::{self, Outgoing};
    let dir = tempfile::tempdir().unwrap();
    let TwoRegions { home, eu, at_home, at_eu, search, .. } = two_regions_serving(dir.path(), false).await;
    let outbox = &eu.state.replica.as_ref().unwrap().outbox;
    let mut batch = eu.state.store.batch();
    outbox.append(&mut batch, &Outgoing::ReceiptKey { jwk: "x".repeat(5_000) });
    batch.commit().unwrap();

    let (created, n) = (now_secs(), nonce());
    let served = at_eu.call_as("POST", "/v1/search", search.clone(), created, &n).await.unwrap();
    assert_eq!(served.status, 200, "{}", String::from_utf8_lossy(&served.bytes));
    // Replayed only once home holds it: a replay home served would claim it there.
    eventually("home holds eu's claim", || async { feed_seq(&home, &n).is_some() }).await;
    let replayed = at_home.call_as("POST", "/v1/search", search.clone(), created, &n).await.unwrap();
    assert_eq!((replayed.status, replayed.json()["code"].as_str()), (401, Some("nonce_reused")));
    // eu clears its claim once home's answer to the claims call is back,
    // which may come a moment after home's feed holds it.
    eventually("home took the claim", || async { exchange::claims_pending(&eu.state.store, 1).unwrap().is_empty() })
        .await;
    let waiting = exchange::pending(&eu.state.store, 10).unwrap();
    let billed = |e: &Outgoing| matches!(e, Outgoing::Usage { event, .. } if event.nonce == n);
    assert!(waiting.iter().any(|(_, e)| billed(e)), "its bill waits behind the refused report: {waiting:?}");
    eu.stop().await;
    home.stop().await;
}

// rule: P2.6.33, P2.6.34, P2.6.36, P2.6.37, R2.6.14, R2.6.17, R5.40
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_signs_receipts_with_its_own_key_certified_by_home_and_rotates_it_with_an_overlap() {
    use svc_core::keyset::{self, KEY_OVERLAP_MS, RootAnchors};
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let home_url = format!("http://{}", home.addr);
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    let eu_url = format!("http://{}", eu.addr);
    let sizes = Sizes::products_only(1, 10);
    let corpus = generate(13, sizes);
    let country = corpus.businesses[0].country.clone();
    ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let (key, grant) = ai_caller(&home.state, "Keyed AI", 45).await.unwrap();
    let at_eu = RetrievalClient::new(&eu_url, "api.svc.localhost", key, grant).unwrap();
    let search = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": country}]},
        "sort_by": "published_at:desc", "limit": 5}))
    .unwrap();

    // Only home holds a root: the region's own root never signs anything.
    let root = &home.state.keys.root;
    let anchors =
        RootAnchors { classical: root.classical.verifying_key(), post_quantum: root.post_quantum.verifying_key() };
    let eu_kid = eu.state.keys.receipt.verifying_key().thumbprint();
    let home_kid = home.state.keys.receipt.verifying_key().thumbprint();
    assert_ne!(eu_kid, home_kid);
    let names = |document: &Value, kid: &str| {
        keyset::verify(document, &anchors)
            .is_ok_and(|set| set.keys.iter().any(|k| k.kid == kid && k.region.as_deref() == Some("eu")))
    };
    eventually("eu serves home's key set naming eu's receipt key", || async {
        let document = get(&eu_url, "/.well-known/keys", None).await;
        document.status == 200 && names(&document.json(), &eu_kid)
    })
    .await;
    let at_home = get(&home_url, "/.well-known/keys", None).await;
    let at_region = get(&eu_url, "/.well-known/keys", None).await;
    assert_eq!(at_region.bytes, at_home.bytes, "one key set, signed by home, served everywhere");
    assert_eq!(at_region.headers["etag"], at_home.headers["etag"]);
    let ready = get(&eu_url, "/readyz", None).await.json();
    assert_eq!(ready["receipt_key_certified"], true, "{ready}");

    // A search at eu carries a receipt of region eu, signed by eu's key,
    // which checks offline under home's anchors.
    let searched = || async {
        let answer = at_eu.call("POST", "/v1/search", search.clone()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        answer.json()
    };
    // The caller's key replicates to eu with the corpus: until then eu
    // does not know it (401), which is waited out, not a failure.
    eventually("eu serves the corpus to the caller", || async {
        let answer = at_eu.call("POST", "/v1/search", search.clone()).await.unwrap();
        answer.status == 200 && !answer.json()["rows"].as_array().unwrap().is_empty()
    })
    .await;
    let before = searched().await;
    // The grant introduced the key at eu; eu reported it home, and once
    // that change replicated the key needs no grant at either region.
    let key_id = at_eu.key_id();
    eventually("home marks the key introduced", || async {
        home.state.registry.retrieval_key(&key_id).unwrap().is_some_and(|k| k.introduced)
    })
    .await;
    let no_grant = RetrievalClient::new(
        &eu_url,
        "api.svc.localhost",
        SigningKey::from_seed(Alg::Ed25519, &[45; 32]).unwrap(),
        None,
    )
    .unwrap();
    eventually("eu admits the key without its grant", || async {
        no_grant.call("POST", "/v1/search", search.clone()).await.unwrap().status == 200
    })
    .await;
    let receipt_of = |body: &Value| {
        let envelope = svc_core::dsse::Envelope::from_value(&body["receipt"]).unwrap();
        serde_json::from_slice::<Value>(&envelope.payload_bytes().unwrap()).unwrap()
    };
    assert_eq!(receipt_of(&before)["region"], "eu");
    assert_eq!(receipt_of(&before)["key_id"], eu_kid.as_str());
    let set = keyset::verify(&at_region.json(), &anchors).unwrap();
    svc_core::offline::check_search(&before, &set, &at_eu.key_id()).expect("eu's receipt checks under home's anchors");

    // Rotation: a new key, certified by home; eu switches to it, and the
    // old one stays valid for the overlap, so earlier receipts still check.
    let admin_url = format!("http://{}", eu.admin_addr);
    let request = axum::http::Request::post("/admin/receipt-key/rotate")
        .header("authorization", format!("Bearer {}", eu.state.config.admin_token))
        .body(axum::body::Body::empty())
        .unwrap();
    let rotated = Transport::new(&admin_url).unwrap().send(request).await.unwrap();
    assert_eq!(rotated.status, 200, "{}", String::from_utf8_lossy(&rotated.bytes));
    let new_kid = rotated.json()["kid"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, eu_kid);
    eventually("eu signs with its new key", || async { receipt_of(&searched().await)["key_id"] == new_kid.as_str() })
        .await;
    let document = get(&eu_url, "/.well-known/keys", None).await.json();
    let set = keyset::verify(&document, &anchors).unwrap();
    let entry = |kid: &str| set.keys.iter().find(|k| k.kid == kid).unwrap().clone();
    let (old, new) = (entry(&eu_kid), entry(&new_kid));
    assert_eq!(new.region.as_deref(), Some("eu"));
    assert_eq!(old.valid_until, Some(new.valid_from.plus(KEY_OVERLAP_MS)), "old and new overlap");
    assert_eq!(new.valid_until, None);
    assert!(entry(&home_kid).valid_until.is_none(), "home's receipt key is not touched");
    svc_core::offline::check_search(&before, &set, &at_eu.key_id()).expect("an old receipt still checks");
    svc_core::offline::check_search(&searched().await, &set, &at_eu.key_id()).expect("a new one checks");

    // Stopping, eu folds every receipt it served (the open minute too) and
    // its last report takes the roots home; each receipt is proven in its part.
    let eu_store = eu.state.store.clone();
    eu.stop().await;
    let served: Vec<StoredReceipt> = eu_store
        .scan::<StoredReceipt>(cf::RECEIPTS, &[], None, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let folded = receipt_folder::roots(&eu_store, "eu").unwrap();
    assert_eq!(folded.iter().map(|r| r.size).sum::<u64>(), served.len() as u64, "every receipt folded once");
    assert_eq!(folded.first().map(|r| r.first_seq), Some(1));
    assert_eq!(folded.last().map(|r| r.last_seq), served.last().map(|r| r.seq));
    assert_eq!(receipt_folder::roots(&home.state.store, "eu").unwrap(), folded, "home holds eu's roots");
    for part in &folded {
        let envelopes: Vec<&[u8]> = served
            .iter()
            .filter(|r| (part.first_seq..=part.last_seq).contains(&r.seq))
            .map(|r| r.envelope.as_slice())
            .collect();
        for (i, envelope) in envelopes.iter().enumerate() {
            let path = svc_core::receipt_fold::proof(&envelopes, i).unwrap();
            let leaf = svc_core::merkle::leaf_hash(envelope);
            assert!(svc_core::merkle::verify_inclusion(&leaf, i as u64, part.size, &path, &part.root));
        }
    }

    drop(eu_store);

    // A restart keeps the new key.
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    assert_eq!(eu.state.key_set.signer(svc_clock::Clock::now(&SystemClock)).unwrap().key_id, new_kid);
    eu.stop().await;
    home.stop().await;
}

/// A postcard body POSTed to home's internal route `path` as region eu,
/// under the MAC of `token`.
async fn internal_post(home: &Node, path: &str, token: &str, body: Vec<u8>) -> svc_client::transport::Answer {
    let request = link_request("POST", path, "eu", token, body);
    let internal = Transport::new(&format!("http://{}", home.internal_addr.unwrap())).unwrap();
    internal.send(request).await.unwrap()
}

// A rogue region: with its own token it may not speak for another region
// (reports, claims, leases, and so receipt key certifications), and values out of
// range are refused before they reach billing, which stays up.
#[tokio::test(flavor = "multi_thread")]
async fn a_region_speaks_only_for_itself_and_out_of_range_values_are_refused() {
    use svc_node::replication::exchange::{CLAIMS_MAX, Claimed, ClaimsReport, LeaseAsk, Outgoing, Report};
    use svc_store::model::{UsageEvent, UsageKind};
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let eu = token("eu");
    let report =
        |region: &str, entries: Vec<Outgoing>| postcard::to_stdvec(&Report { region: region.into(), entries }).unwrap();
    let lease = |region: &str, units: i64| {
        postcard::to_stdvec(&LeaseAsk { region: region.into(), company_uuid: "c".into(), units }).unwrap()
    };
    let key = SigningKey::from_seed(Alg::Ed25519, &[5; 32]).unwrap();
    let forged_key = Outgoing::ReceiptKey { jwk: serde_json::to_string(&key.verifying_key().to_jwk()).unwrap() };

    let posing = internal_post(&home, "/internal/v1/report", &eu, report("ap", vec![forged_key])).await;
    assert_eq!(posing.status, 401, "{}", String::from_utf8_lossy(&posing.bytes));
    let now = svc_clock::Clock::now(&SystemClock);
    let kid = key.verifying_key().thumbprint();
    let certified = home.state.key_set.key(svc_core::keyset::Purpose::Receipt, &kid, now, now);
    assert!(certified.is_none(), "no key is certified for ap on eu's word");
    assert_eq!(internal_post(&home, "/internal/v1/lease", &eu, lease("ap", 10)).await.status, 401);
    assert_eq!(internal_post(&home, "/internal/v1/lease", &"x".repeat(40), lease("eu", 10)).await.status, 401);
    let claims = |region: &str, claims: Vec<Claimed>| {
        postcard::to_stdvec(&ClaimsReport { region: region.into(), claims }).unwrap()
    };
    let soon = now_secs() + 300;
    let claim = |nonce: &str, expires_secs: i64| Claimed { key_id: "k".into(), nonce: nonce.into(), expires_secs };
    let posing = internal_post(&home, "/internal/v1/claims", &eu, claims("ap", vec![claim("n", soon)])).await;
    assert_eq!(posing.status, 401);

    let event = |at: i64| UsageEvent {
        company_uuid: "c".into(),
        group_id: "g".into(),
        key_id: "k".into(),
        nonce: "n".repeat(20),
        kind: UsageKind::Search,
        retrieval_id: "r".into(),
        region: "eu".into(),
        at: svc_core::time::UnixMs(at),
    };
    let (report_path, lease_path) = ("/internal/v1/report", "/internal/v1/lease");
    let elsewhere = UsageEvent { region: "ap".into(), ..event(1_800_000_000_000) };
    for (path, bad) in [
        (report_path, report("eu", vec![Outgoing::Usage { event: event(i64::MAX), lease_id: None }])),
        (report_path, report("eu", vec![Outgoing::Usage { event: event(-1), lease_id: Some(u64::MAX) }])),
        (report_path, report("eu", vec![Outgoing::Usage { event: elsewhere, lease_id: None }])),
        (report_path, vec![0xff; 64]),
        ("/internal/v1/claims", claims("eu", vec![claim("n", i64::MAX)])),
        ("/internal/v1/claims", claims("eu", vec![claim("", soon)])),
        ("/internal/v1/claims", claims("eu", vec![claim("n", soon); CLAIMS_MAX + 1])),
        (lease_path, lease("eu", 0)),
        (lease_path, lease("eu", i64::MIN)),
    ] {
        let refused = internal_post(&home, path, &eu, bad).await;
        assert_eq!(refused.status, 400, "{path}: {}", String::from_utf8_lossy(&refused.bytes));
    }
    // Billing took none of it and is still up.
    assert_eq!(internal_post(&home, "/internal/v1/report", &eu, report("eu", vec![])).await.status, 200);
    assert!(
        svc_node::replication::exchange::feed_after(&home.state.store, 0, 10).unwrap().is_empty(),
        "no claim taken"
    );
    let taken = internal_post(&home, "/internal/v1/claims", &eu, claims("eu", vec![claim("n", soon)])).await;
    assert_eq!(taken.status, 200, "{}", String::from_utf8_lossy(&taken.bytes));
    assert_eq!(svc_node::replication::exchange::feed_after(&home.state.store, 0, 10).unwrap().len(), 1);
    let ready = get(&format!("http://{}", home.addr), "/readyz", None).await.json();
    assert_eq!(ready["failed_actors"], json!({}), "{ready}");
    home.stop().await;
}

// rule: R3.11, R4.1.21
// A region's ad facts reach home once however often its outbox ships, join
// home's ad feed under the region's name, and ones out of range are refused.
#[tokio::test(flavor = "multi_thread")]
async fn home_takes_each_ad_fact_once_and_passes_it_on_in_its_feed() {
    use svc_core::ads::pace::minute_of;
    use svc_node::actors::ad_reservations::AdMsg;
    use svc_node::replication::exchange::{AdFact, AdFactKind, AdFeedPage, Outgoing, Report};
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let now = svc_clock::Clock::now(&SystemClock);
    let report = |facts: Vec<AdFact>| {
        let entries = facts.into_iter().map(Outgoing::AdFact).collect();
        postcard::to_stdvec(&Report { region: "eu".into(), entries }).unwrap()
    };
    let rendered = |seq| AdFact {
        seq,
        at: now,
        kind: AdFactKind::Rendered {
            conversation: "c1".into(),
            item_id: "ad_x".into(),
            key_id: "k".into(),
            charge: None,
        },
    };
    let pooled =
        AdFact { seq: 1, at: now, kind: AdFactKind::Pooled { key_id: "k".into(), minute: minute_of(now), pools: 7 } };
    let pace = || {
        let ads = home.state.ads.clone();
        async move { ads.call(|reply| AdMsg::ObservePace { key_id: "k".into(), now, reply }).await.unwrap() }
    };
    for _ in 0..2 {
        let taken =
            internal_post(&home, "/internal/v1/report", &token("eu"), report(vec![pooled.clone(), rendered(2)])).await;
        assert_eq!(taken.status, 200, "{}", String::from_utf8_lossy(&taken.bytes));
    }
    assert_eq!(pace().await, (7, 1), "shipped twice, counted once");
    let again = report(vec![rendered(2), rendered(3)]);
    assert_eq!(internal_post(&home, "/internal/v1/report", &token("eu"), again).await.status, 200);
    assert_eq!(pace().await, (7, 2), "only the fact after the last taken");

    let request = link_request("GET", "/internal/v1/ad-feed?after=0", "eu", &token("eu"), vec![]);
    let internal = Transport::new(&format!("http://{}", home.internal_addr.unwrap())).unwrap();
    let page: AdFeedPage = postcard::from_bytes(&internal.send(request).await.unwrap().bytes).unwrap();
    assert_eq!(page.head, 3);
    // The conversation secret is wrapped for eu: only eu's token opens it,
    // and it never crosses the link in clear.
    let secret: Vec<u8> = home
        .state
        .store
        .get(svc_store::cf::ad_book::CONVERSATION_SECRET, svc_node::actors::ad_reservations::CONVERSATION_SECRET)
        .unwrap()
        .unwrap();
    assert!(!page.wrapped_secret.windows(32).any(|w| w == secret.as_slice()), "not in clear");
    let opened = svc_core::wrap::unwrap(&svc_core::link::conversation_key(&token("eu")), b"eu", &page.wrapped_secret);
    assert_eq!(opened, Some(secret.clone()));
    assert_eq!(
        svc_core::wrap::unwrap(&svc_core::link::conversation_key(&token("ap")), b"ap", &page.wrapped_secret),
        None
    );
    let told: Vec<(&str, u64)> = page.entries.iter().map(|e| (e.region.as_str(), e.fact.seq)).collect();
    assert_eq!(told, [("eu", 1), ("eu", 2), ("eu", 3)]);

    for bad in [
        AdFact {
            kind: AdFactKind::Clicked { conversation: "c1".into(), item_id: String::new(), charge: None },
            ..rendered(4)
        },
        AdFact { kind: AdFactKind::Pooled { key_id: "k".into(), minute: i64::MAX, pools: 1 }, ..rendered(4) },
        AdFact { at: svc_core::time::UnixMs(i64::MAX), ..rendered(4) },
    ] {
        let refused = internal_post(&home, "/internal/v1/report", &token("eu"), report(vec![bad])).await;
        assert_eq!(refused.status, 400, "{}", String::from_utf8_lossy(&refused.bytes));
    }
    assert_eq!(pace().await, (7, 2));
    home.stop().await;
}

// Slow posts at a read region: each holds a publishing slot there and a
// stream to home on the connection for forwarded requests, never the one
// replication uses. Past the key's cap of publishes in flight (or the
// region's) they are refused at once; the region stays ready and keeps
// applying what home writes.
#[tokio::test(flavor = "multi_thread")]
async fn slow_posts_at_a_read_region_do_not_hold_up_its_replication() {
    use svc_client::{Signer, Unsigned};
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    let corpus = generate(13, Sizes::products_only(1, 5));
    ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let (key, _) = svc_http::sandbox::seed::keys_of(&corpus.businesses[0]).unwrap();
    let now = svc_clock::Clock::now(&SystemClock).as_secs();
    let big = vec![b' '; 1 << 20];
    let mut sockets = Vec::new();
    for n in 0..40 {
        let unsigned =
            Unsigned::new("POST", "/v1/publish/products", big.clone()).header("idempotency-key", &format!("slow-{n}"));
        let request = Signer::new(key.clone(), "api.svc.localhost", "svc-push").sign_now(unsigned, now).unwrap();
        let mut socket = tokio::net::TcpStream::connect(eu.addr).await.unwrap();
        socket.write_all(&crate::hardening::head_bytes(&request, big.len())).await.unwrap();
        socket.write_all(&big[..100]).await.unwrap();
        sockets.push(socket);
    }
    let mut statuses = Vec::new();
    for socket in &mut sockets {
        statuses.push(crate::hardening::status_within(socket, Duration::from_millis(500)).await);
    }
    let refused = statuses.iter().filter(|s| matches!(s, Some(429 | 503))).count();
    let held = statuses.iter().filter(|s| s.is_none()).count();
    let cap = svc_node::limits::PUBLISHES_PER_KEY;
    assert_eq!((held, refused), (cap, 40 - cap), "the key's publishes in flight held, the rest refused: {statuses:?}");

    let (ai_key, grant) = ai_caller(&home.state, "Honest AI", 61).await.unwrap();
    let client = RetrievalClient::new(&read_url_of(&eu), "api.svc.localhost", ai_key, grant).unwrap();
    let search = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": "FR"}]},
        "sort_by": "published_at:desc", "limit": 5}))
    .unwrap();
    // (Home introduces the sandbox key on its first request, so ask once first.)
    eventually("the caller's key reached the region", || async {
        client.call("POST", "/v1/search", search.clone()).await.unwrap().status == 200
    })
    .await;
    let (median, slowest) = crate::hardening::honest_times(10, || async {
        client.call("POST", "/v1/search", search.clone()).await.unwrap().status
    })
    .await;
    eprintln!(
        "slow posts at a region: honest search median {median:?} max {slowest:?}; peak RSS {} MiB",
        crate::hardening::peak_rss_mib()
    );

    // Home writes; the region applies it and stays ready meanwhile.
    admin(&home.state, "POST", "/admin/companies", json!({"name": "Later AI"})).await.unwrap();
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    let read_url = read_url_of(&eu);
    eventually("the region applies home's newest entry while the posts are held", || async {
        let ready = get(&read_url, "/readyz", None).await;
        ready.status == 200 && ready.json()["applied_seq"].as_u64() >= Some(head)
    })
    .await;
    drop(sockets);
    eu.stop().await;
    home.stop().await;
}

fn read_url_of(node: &Node) -> String {
    format!("http://{}", node.addr)
}

// A read region uses only what home said: an answer without home's MAC for
// that request (an impostor, or frames altered on the way) is refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_region_refuses_an_answer_home_did_not_seal() {
    use svc_node::replication::link::{HomeLink, HomeUrls, LinkError};
    let impostor = axum::Router::new().route(
        "/internal/v1/log",
        axum::routing::get(|| async {
            ([("x-svc-log-head", "5"), (svc_core::link::MAC_HEADER, "00")], vec![1u8, 2, 3])
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, impostor).await });
    let trust = svc_client::trust::Trust::system();
    let urls = HomeUrls { members: vec![(&url, &url)], trust: &trust, link_trust: &trust };
    let link = HomeLink::new(urls, token("eu"), "eu".into(), 10, Arc::new(SystemClock)).unwrap();
    let answer = link.send("GET", "/internal/v1/log?after=0", Vec::new(), Duration::from_secs(5)).await;
    assert!(matches!(answer, Err(LinkError::Forged { .. })), "{:?}", answer.map(|a| a.status));
    server.abort();
}

/// The retrieval id a receipt envelope names.
fn receipt_retrieval_id(receipt: &Value) -> String {
    let envelope = svc_core::dsse::Envelope::from_value(receipt).unwrap();
    let payload: Value = serde_json::from_slice(&envelope.payload_bytes().unwrap()).unwrap();
    payload["retrieval_id"].as_str().unwrap().to_owned()
}

/// The first page of the caller's group's receipts.
async fn listed(client: &RetrievalClient) -> Vec<Value> {
    let page = client.call("GET", "/v1/receipts", vec![]).await.unwrap();
    assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.bytes));
    page.json()["receipts"].as_array().unwrap().clone()
}

/// The searches home counted for `business` in its analytics.
fn searches_counted(node: &Node, business: &str) -> u64 {
    let hours: Vec<(Vec<u8>, svc_store::model::HourCounts)> =
        node.state.store.scan(cf::ANALYTICS, &svc_store::keys::prefix(&[business]), None, usize::MAX).unwrap();
    hours.iter().map(|(_, counts)| counts.searches).sum()
}

// rule: R4.10, R4.16, R4.17, P2.5.36, P4.1.18, P-NS-7, P-NS-8, R2.4.18
#[tokio::test(flavor = "multi_thread")]
async fn every_regions_receipts_list_and_count_at_home_even_after_the_region_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    let (home_url, eu_url) = (format!("http://{}", home.addr), format!("http://{}", eu.addr));
    let corpus = generate(11, Sizes::products_only(2, 30));
    let country = corpus.businesses[0].country.clone();
    let seeded = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let business = seeded.businesses[0].0.clone();
    let (key, grant) = ai_caller(&home.state, "Far AI", 47).await.unwrap();
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    eventually("eu is ready at home's head", || async {
        let ready = get(&eu_url, "/readyz", None).await;
        ready.status == 200 && ready.json()["indexed_seq"].as_u64() >= Some(head)
    })
    .await;
    let at_eu = RetrievalClient::new(&eu_url, "api.svc.localhost", key.clone(), grant.clone()).unwrap();
    let at_home = RetrievalClient::new(&home_url, "api.svc.localhost", key, grant).unwrap();

    // Searches at both regions and a fetch at eu, each with its receipt.
    let body = json!({"collection": "products", "filter": {"all": [{"country": country}]}, "sort_by": "published_at:desc", "limit": 5});
    let (mut issued, mut searched_business) = (Vec::new(), 0u64);
    for client in [&at_eu, &at_eu, &at_eu, &at_home, &at_home] {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        let answer = answer.json();
        issued.push(receipt_retrieval_id(&answer["receipt"]));
        let rows = answer["rows"].as_array().unwrap();
        searched_business += u64::from(rows.iter().any(|r| r["business_uuid"] == business.as_str()));
    }
    let id =
        svc_core::ids::product_id(&business, &format!("{}-00000", corpus.businesses[0].brand.to_ascii_uppercase()));
    let fetched = at_eu.call("GET", &format!("/v1/records/{id}"), vec![]).await.unwrap();
    assert_eq!(fetched.status, 200, "{}", String::from_utf8_lossy(&fetched.bytes));
    issued.push(receipt_retrieval_id(&fetched.json()["receipt"]));
    assert!(searched_business > 0, "the searches served the business's rows");

    // Listed through eu (answered by home), oldest first: every receipt of
    // the group, wherever it was issued.
    let want = issued.len();
    eventually("every receipt lists at home", || async { listed(&at_eu).await.len() == want }).await;
    let receipts = listed(&at_eu).await;
    let ids: Vec<String> = receipts.iter().map(|r| r["retrieval_id"].as_str().unwrap().to_owned()).collect();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort();
    let mut want = issued.clone();
    want.sort();
    assert_eq!(sorted_ids, want, "each receipt once, from both regions");
    let served: Vec<&str> = receipts.iter().map(|r| r["served_at"].as_str().unwrap()).collect();
    assert!(served.windows(2).all(|w| w[0] <= w[1]), "oldest first: {served:?}");
    for r in &receipts {
        assert_eq!(r["retrieval_id"].as_str().unwrap(), receipt_retrieval_id(&r["receipt"]), "the receipt itself");
    }

    // Home's analytics count the searches eu served too.
    eventually("home counts every search of the business", || async {
        searches_counted(&home, &business) == searched_business
    })
    .await;

    // The key directory and the verification index are served at every
    // region: eu answers home's signed documents byte for byte.
    for path in ["/v1/key-directory", "/v1/verification-index"] {
        eventually(path, || async { get(&eu_url, path, None).await.bytes == get(&home_url, path, None).await.bytes })
            .await;
        assert_eq!(get(&eu_url, path, None).await.status, 200, "{path}");
    }

    // A declared freshness expectation reaches eu's rows as it does home's
    // (declared here through home's one writer; the route is tested in
    // business_api.rs).
    let mut change = svc_node::replication::Change::new();
    change.put(
        cf::FRESHNESS,
        &svc_store::keys::freshness(&business, "products"),
        &r#"{"cadence":"weekly"}"#.to_owned(),
    );
    let now = svc_clock::Clock::now(&SystemClock);
    let publisher = &home.state.home.as_ref().unwrap().publisher;
    publisher
        .call(|reply| svc_node::actors::publisher::PublisherMsg::Apply { change, now, reply })
        .await
        .unwrap()
        .unwrap();
    eventually("eu's rows carry the declared freshness", || async {
        let answer = at_eu.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap().json();
        let rows = answer["rows"].as_array().cloned().unwrap_or_default();
        let of_business: Vec<&Value> = rows.iter().filter(|r| r["business_uuid"] == business.as_str()).collect();
        !of_business.is_empty()
            && of_business.iter().all(|r| r["freshness_expectation"] == json!({"cadence": "weekly"}))
    })
    .await;

    // eu is lost with its store: home still lists what it issued.
    eu.stop().await;
    std::fs::remove_dir_all(dir.path().join("eu")).unwrap();
    let after = listed(&at_home).await;
    assert_eq!(after[..receipts.len()], receipts[..], "the same list after eu is gone (and any later ones after it)");
    home.stop().await;
}

// A sandbox key's first request at home and a read region's report of its
// first request there race to mark it introduced: whichever writes second
// finds it already marked, and the request it serves is answered, not 503.
// rule: R7.3, R5.49
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_key_introduced_by_a_region_meanwhile_is_no_conflict_at_home() {
    let dir = tempfile::tempdir().unwrap();
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    let (key, _) = ai_caller(&home.state, "Raced AI", 49).await.unwrap();
    let kid = key.verifying_key().thumbprint();
    let read_before = home.state.registry.retrieval_key(&kid).unwrap().unwrap();
    assert!(!read_before.introduced);
    let publisher = &svc_node::region::parts::HasHome::home(&home.state).unwrap().publisher;
    let now = home.state.clock.now();
    // The region's report lands first ...
    let marked =
        svc_node::service::retrieval::mark_introduced(&home.state.store, publisher, read_before.clone(), now).await;
    assert!(marked.unwrap().introduced);
    // ... then home's own request, which read the key before it.
    let raced = svc_node::service::retrieval::mark_introduced(&home.state.store, publisher, read_before, now).await;
    assert!(raced.expect("already introduced is no conflict").introduced);
    home.stop().await;
}

/// Readiness of a node at `base`, as JSON.
async fn readiness(base: &str) -> Value {
    get(base, "/readyz", None).await.json()
}

// A home restored from a backup is behind the regions that applied what it
// wrote after the backup, and would write other entries under those
// numbers. A region finds that out on its first pull, applies nothing
// more (not even once the restored home has written past it), and says so
// in `/readyz`, its metrics and `svc admin observe`, across a restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_region_finds_a_home_restored_from_a_backup_and_never_merges_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let company = |node: &Node, name: &str| {
        let state = node.state.clone();
        let name = name.to_owned();
        async move { admin(&state, "POST", "/admin/companies", json!({ "name": name })).await.unwrap() }
    };
    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    company(&home, "Before the backup").await;
    home.stop().await;
    // The backup, taken with home stopped (as deploy/OPERATING.md says).
    crate::common::copy_tree(&dir.path().join("home"), &dir.path().join("backup"), &["index"]);

    let home = Node::start(config(dir.path(), "home", Role::Home, None), Arc::new(SystemClock)).await.unwrap();
    company(&home, "After the backup").await;
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&home)), Arc::new(SystemClock)).await.unwrap();
    let eu_url = format!("http://{}", eu.addr);
    eventually("eu is ready at home's head", || async {
        let ready = readiness(&eu_url).await;
        ready["ready"] == true && ready["applied_seq"].as_u64() >= Some(head)
    })
    .await;
    let eu_log = svc_node::replication::entries_after(&eu.state.store, 0, usize::MAX).unwrap();
    eu.stop().await;
    home.stop().await;

    // Home is restored from the backup (at a new address), and eu pointed at it.
    let mut restored_config = config(dir.path(), "home", Role::Home, None);
    restored_config.data_dir = dir.path().join("backup");
    let restored = Node::start(restored_config, Arc::new(SystemClock)).await.unwrap();
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&restored)), Arc::new(SystemClock)).await.unwrap();
    let eu_url = format!("http://{}", eu.addr);
    eventually("eu finds home behind it", || async { readiness(&eu_url).await["history_fork"].is_string() }).await;
    let ready = get(&eu_url, "/readyz", None).await;
    assert_eq!(ready.status, 503, "a region that found a fork is not ready");
    let fork = ready.json()["history_fork"].as_str().unwrap().to_owned();
    let applied = eu_log.last().unwrap().seq;
    assert!(
        fork.starts_with("home's log ends at entry ") && fork.contains(&format!("before entry {applied} ")),
        "{fork}"
    );

    // The restored home writes on, past what eu holds, under eu's numbers:
    // eu applies none of it.
    for n in 0..3 {
        company(&restored, &format!("After the restore {n}")).await;
    }
    assert!(svc_node::replication::last_seq(&restored.state.store).unwrap() > head);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        svc_node::replication::entries_after(&eu.state.store, 0, usize::MAX).unwrap(),
        eu_log,
        "eu's log is the history it had, not a merge of two"
    );
    let admin_url = format!("http://{}", eu.admin_addr);
    let observed = get(&admin_url, "/admin/observe", Some(&eu.state.config.admin_token)).await.json();
    assert_eq!(observed["actors"]["replicator"]["fork"], fork.as_str(), "{observed}");
    let metrics = get(&admin_url, "/metrics", Some(&eu.state.config.admin_token)).await;
    assert!(String::from_utf8_lossy(&metrics.bytes).contains("svc_replication_fork 1"));
    eu.stop().await;

    // Restarted, eu remembers, and pulls nothing.
    let eu = Node::start(config(dir.path(), "eu", Role::Read, Some(&restored)), Arc::new(SystemClock)).await.unwrap();
    let ready = get(&format!("http://{}", eu.addr), "/readyz", None).await;
    assert_eq!((ready.status, ready.json()["history_fork"].as_str()), (503, Some(fork.as_str())));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(svc_node::replication::entries_after(&eu.state.store, 0, usize::MAX).unwrap(), eu_log);
    eu.stop().await;

    // A region built afresh from the restored home follows it.
    let ap = Node::start(config(dir.path(), "ap", Role::Read, Some(&restored)), Arc::new(SystemClock)).await.unwrap();
    let ap_url = format!("http://{}", ap.addr);
    let restored_head = svc_node::replication::last_seq(&restored.state.store).unwrap();
    eventually("a fresh region follows the restored home", || async {
        let ready = readiness(&ap_url).await;
        ready["ready"] == true && ready["applied_seq"].as_u64() >= Some(restored_head)
    })
    .await;
    ap.stop().await;
    restored.stop().await;
}
