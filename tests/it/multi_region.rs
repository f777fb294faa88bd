//! Three `svc node` processes on 127.0.0.1: home and two read regions. A
//! batch published at home becomes searchable in both read regions; one of
//! them, aborted while it replicates (fault injection) and then restarted,
//! catches up with no gap and answers the same queries as its peer. With
//! home cut off (SIGSTOP), the read regions serve searches, refuse writes
//! with 503 and fail closed once their allowance lease is spent; after the
//! cut heals everything they served is billed at home, once.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::sealing;
use svc_client::transport::Transport;
use svc_client::{Signer, Unsigned};
use svc_clock::{Clock, SystemClock};
use svc_core::keys::{Alg, SigningKey};

use crate::process;

use process::{
    AUTHORITY, Process, TOKEN, ai_company, onboard, product, region_token, start, start_sandbox, start_with,
};

/// Home's newest sequence number, from its log route (as region eu).
async fn home_head(home: &Process) -> u64 {
    let home = Transport::new(home.internal_url.as_deref().unwrap()).unwrap();
    let path = format!("/internal/v1/log?after={}", u64::MAX - 1);
    let request = crate::common::link_request("GET", &path, "eu", &region_token("eu"), Vec::new());
    let answer = home.send(request).await.unwrap();
    answer.headers["x-svc-log-head"].to_str().unwrap().parse().unwrap()
}

async fn readyz(region: &Transport) -> Value {
    match region.send(Request::get("/readyz").body(Body::empty()).unwrap()).await {
        Ok(answer) => answer.json(),
        Err(_) => Value::Null,
    }
}

/// Waits until the region is ready at `head`.
async fn caught_up(region: &Transport, head: u64) -> Value {
    let mut last = Value::Null;
    for _ in 0..2400 {
        last = readyz(region).await;
        if last["ready"] == true
            && last["applied_seq"].as_u64() >= Some(head)
            && last["indexed_seq"].as_u64() >= Some(head)
        {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the region never caught up with {head}: {last}");
}

async fn search(base: &str, key: &svc::chaos::setup::AiKey, body: &Value) -> Value {
    let client = key.client(base, AUTHORITY).unwrap();
    let answer = client.call("POST", "/v1/search", serde_json::to_vec(body).unwrap()).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    answer.json()
}

// rule: P4.1.29
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_killed_while_replicating_catches_up_and_answers_as_its_peer() {
    // A sandbox deployment: production refuses fault injection.
    let dir = tempfile::tempdir().unwrap();
    let home = start_sandbox(dir.path(), "home", None, false);
    let mut eu = start_sandbox(dir.path(), "eu", Some(&home), true);
    let ap = start_sandbox(dir.path(), "ap", Some(&home), false);
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let home_api = Transport::new(&home.public_url).unwrap();

    let key = SigningKey::from_seed(Alg::Ed25519, &[31; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[32; 32]).unwrap();
    let onboarded = svc::chaos::setup::onboard(&admin, &key, &passkey).await.unwrap();
    svc::chaos::setup::introduce(&home_api, &key, &onboarded, AUTHORITY).await.unwrap();
    let context = onboarded.context;
    let ai_key = svc::chaos::setup::ai_company(&admin, "Far AI", 33, None).await.unwrap();

    // eu aborts right after it writes the first page of frames it pulls
    // next: part of the push, since home commits its chunks over seconds.
    let eu_api = Transport::new(&eu.public_url).unwrap();
    let start_head = home_head(&home).await;
    caught_up(&eu_api, start_head).await;
    let arm = Request::post("/admin/faults/crash")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Body::from(json!({"at": "frames-applied"}).to_string()))
        .unwrap();
    let armed = Transport::new(&eu.admin_url).unwrap().send(arm).await.unwrap();
    assert_eq!(armed.status, 200, "{}", String::from_utf8_lossy(&armed.bytes));

    // A 10,000-record batch, published at home as a background push.
    let records: Vec<Vec<u8>> = (0..10_000).map(product).collect();
    let seal = sealing::batch_seal(&key, &context, "products", &records, 1, SystemClock.now()).unwrap();
    let request = Signer::new(key.clone(), AUTHORITY, "svc-push")
        .sign_now(
            Unsigned::new("POST", "/v1/publish/products", sealing::publish_body(&seal, &records))
                .header("idempotency-key", "multi-1"),
            SystemClock.now().as_secs(),
        )
        .unwrap();
    let accepted = home_api.send(request).await.unwrap();
    assert_eq!(accepted.status, 202, "{}", String::from_utf8_lossy(&accepted.bytes));

    let mut exited = None;
    for _ in 0..1200 {
        exited = eu.child.try_wait().unwrap();
        if exited.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(exited.is_some_and(|status| !status.success()), "eu aborted as it replicated the push");
    let killed_at = {
        let store = svc_store::Store::open(&dir.path().join("eu").join("db")).unwrap();
        svc_node::replication::last_seq(&store).unwrap()
    };
    assert!(killed_at > start_head, "eu wrote part of the push ({killed_at} after {start_head})");
    drop(eu);

    // Restarted on the same data, it resumes from what it applied.
    let eu = start_sandbox(dir.path(), "eu", Some(&home), false);
    let eu_api = Transport::new(&eu.public_url).unwrap();
    let ap_api = Transport::new(&ap.public_url).unwrap();
    let mut head = 0;
    for _ in 0..2400 {
        head = home_head(&home).await;
        let status = home_api.send(
            Signer::new(key.clone(), AUTHORITY, "svc-business-read")
                .sign_now(
                    Unsigned::new(
                        "GET",
                        &format!("/v1/pushes/{}", accepted.json()["push_id"].as_str().unwrap()),
                        vec![],
                    ),
                    SystemClock.now().as_secs(),
                )
                .unwrap(),
        );
        if status.await.unwrap().json()["state"] == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let head = head.max(home_head(&home).await);
    assert!(killed_at < head, "eu stopped before the push was replicated ({killed_at} of {head})");
    let eu_ready = caught_up(&eu_api, head).await;
    caught_up(&ap_api, head).await;
    assert_eq!(eu_ready["region"], "eu");
    // A read region's `svc admin observe` shows its replication actors too.
    let request =
        Request::get("/admin/observe").header("authorization", format!("Bearer {TOKEN}")).body(Body::empty()).unwrap();
    let observed = Transport::new(&eu.admin_url).unwrap().send(request).await.unwrap().json();
    assert!(observed["actors"]["replicator"]["applied"].as_u64() >= Some(head), "{observed}");
    for name in ["nonce_feed", "ad_feed", "uplink", "claim_uplink", "billing", "receipt_log", "indexer"] {
        assert!(observed["actors"][name].is_object(), "{name}: {observed}");
    }
    for (name, seen) in observed["actors"].as_object().unwrap() {
        assert!(!seen.is_null(), "{name} answers Observe: {observed}");
    }
    assert!(observed["actors"].get("publisher").is_none(), "home's writers run at home alone");

    // The same queries answer the same rows at both read regions: records
    // from the first, middle and last chunks, the last pushed after the kill.
    // (Each query matches one record.)
    for sku in [0, 1234, 5000, 9999] {
        let body = json!({"collection": "products", "q": sku.to_string(), "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc", "limit": 10});
        let at_eu = search(&eu.public_url, &ai_key, &body).await;
        let at_ap = search(&ap.public_url, &ai_key, &body).await;
        assert_eq!(at_eu["rows"].as_array().unwrap().len(), 1, "{at_eu}");
        assert_eq!(at_eu["rows"][0]["product_name"], format!("Lampe {sku}"));
        assert_eq!(at_eu["rows"], at_ap["rows"], "eu and ap answer alike");
    }

    for region in [eu, ap, home] {
        region.kill();
    }
}

/// Publishes `records` at home as one batch and waits until the push is complete.
async fn publish(home_api: &Transport, key: &SigningKey, context: &sealing::SealContext, records: &[Vec<u8>], n: u64) {
    let seal = sealing::batch_seal(key, context, "products", records, n, SystemClock.now()).unwrap();
    let request = Signer::new(key.clone(), AUTHORITY, "svc-push")
        .sign_now(
            Unsigned::new("POST", "/v1/publish/products", sealing::publish_body(&seal, records))
                .header("idempotency-key", &format!("cut-{n}")),
            SystemClock.now().as_secs(),
        )
        .unwrap();
    let accepted = home_api.send(request).await.unwrap();
    // A small batch is published at once (200); a large one as a push (202).
    if accepted.status == 200 {
        return;
    }
    assert_eq!(accepted.status, 202, "{}", String::from_utf8_lossy(&accepted.bytes));
    let push = format!("/v1/pushes/{}", accepted.json()["push_id"].as_str().unwrap());
    for _ in 0..2400 {
        let request = Signer::new(key.clone(), AUTHORITY, "svc-business-read")
            .sign_now(Unsigned::new("GET", &push, vec![]), SystemClock.now().as_secs())
            .unwrap();
        if home_api.send(request).await.unwrap().json()["state"] == "complete" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("push {n} never completed");
}

/// What home billed the caller's company, and its prepaid allowance left.
async fn usage(client: &RetrievalClient) -> (u64, Option<i64>) {
    let answer = client.call("GET", "/v1/usage", vec![]).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    let usage = answer.json();
    (usage["totals"]["billed"].as_u64().unwrap(), usage["allowance"]["remaining"].as_i64())
}

/// Waits until home's count settles at `billed`, and stays there. Up to a
/// minute: with the whole suite running on two cores, a region's report can
/// take well over the 20 s this once allowed.
async fn billed_settles_at(client: &RetrievalClient, billed: u64) -> Option<i64> {
    let mut last = (0, None);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        last = usage(client).await;
        if last.0 == billed {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let again = usage(client).await;
            assert_eq!(again.0, billed, "billed more than once");
            return again.1;
        }
        assert!(last.0 < billed, "home billed {} for {billed} served", last.0);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("home billed {} of {billed}", last.0);
}

// rule: R1.26, R1.27, R1.28, R5.36
#[tokio::test(flavor = "multi_thread")]
async fn with_home_cut_off_regions_serve_searches_refuse_writes_fail_closed_and_catch_up_after() {
    const LEASE: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let home = start(dir.path(), "home", None);
    let settings = format!("lease_units = {LEASE}\nforward_timeout_ms = 1500");
    let eu = start_with(dir.path(), "eu", Some(&home), &settings);
    let ap = start_with(dir.path(), "ap", Some(&home), &settings);
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let home_api = Transport::new(&home.public_url).unwrap();
    let (eu_api, ap_api) = (Transport::new(&eu.public_url).unwrap(), Transport::new(&ap.public_url).unwrap());

    let key = SigningKey::from_seed(Alg::Ed25519, &[34; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[35; 32]).unwrap();
    let context = onboard(&admin, &key, &passkey).await;
    let ai_key = ai_company(&admin, "Prepaid AI", 36, Some(1000)).await;
    let records: Vec<Vec<u8>> = (0..20).map(product).collect();
    publish(&home_api, &key, &context, &records, 1).await;
    let head = home_head(&home).await;
    caught_up(&eu_api, head).await;
    caught_up(&ap_api, head).await;

    let client = |url: &str| RetrievalClient::new(url, AUTHORITY, ai_key.clone(), None).unwrap();
    let (at_home, at_eu, at_ap) = (client(&home.public_url), client(&eu.public_url), client(&ap.public_url));
    let body = |q: &str| {
        serde_json::to_vec(&json!({"collection": "products", "q": q, "filter": {"all": [{"country": "FR"}]},
            "sort_by": "_text_match:desc", "limit": 5}))
        .unwrap()
    };
    // Every answered search with rows is billed: this counts what home must bill.
    let mut served = 0u64;

    // The same signed request sent to two regions at once is billed once.
    let created = SystemClock.now().as_secs();
    let nonce = svc_core::http_sig::nonce_from_bytes(&svc_clock::random::<32>());
    let (a, b) = tokio::join!(
        at_eu.call_as("POST", "/v1/search", body("Lampe"), created, &nonce),
        at_ap.call_as("POST", "/v1/search", body("Lampe"), created, &nonce)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.status == 200 || b.status == 200, "{} {}", a.status, b.status);
    assert!([a.status, b.status].iter().all(|s| *s == 200 || *s == 401), "{} {}", a.status, b.status);
    served += 1;
    // The region that answered 401 never asked home for a lease: one search
    // at each region, so each holds a lease when home is cut off.
    for region in [&at_eu, &at_ap] {
        let answer = region.call("POST", "/v1/search", body("Lampe")).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        served += 1;
    }
    billed_settles_at(&at_home, served).await;

    // Home cut off: it holds its sockets open and answers nothing.
    home.signal("STOP");
    // A business write at eu: refused with 503, not answered by eu. Home
    // may still take it once it runs again; the business retries with the
    // same idempotency key and gets one publication either way.
    let cut_records: Vec<Vec<u8>> = (40..45).map(product).collect();
    let seal = sealing::batch_seal(&key, &context, "products", &cut_records, 3, SystemClock.now()).unwrap();
    let publication = sealing::publish_body(&seal, &cut_records);
    let write = || {
        Signer::new(key.clone(), AUTHORITY, "svc-push")
            .sign_now(
                Unsigned::new("POST", "/v1/publish/products", publication.clone())
                    .header("idempotency-key", "cut-write"),
                SystemClock.now().as_secs(),
            )
            .unwrap()
    };
    let refused = eu_api.send(write()).await.unwrap();
    assert_eq!(refused.status, 503, "{}", String::from_utf8_lossy(&refused.bytes));
    assert_eq!(refused.json()["code"], "unavailable");
    assert!(refused.headers.contains_key("retry-after"));
    // Searches go on from each region's lease, then fail closed.
    for region in [&at_eu, &at_ap] {
        let mut answers = Vec::new();
        for _ in 0..LEASE + 2 {
            let answer = region.call("POST", "/v1/search", body("Lampe")).await.unwrap();
            assert!(answer.status == 200 || answer.status == 503, "{}", String::from_utf8_lossy(&answer.bytes));
            answers.push(answer);
        }
        let ok = answers.iter().filter(|a| a.status == 200).count();
        assert!(ok >= 1, "a region serves searches while home is cut off");
        assert!(ok <= LEASE, "never more than the lease: {ok}");
        let last = answers.last().unwrap();
        assert_eq!(last.status, 503, "fails closed once the lease is spent");
        assert_eq!(last.json()["code"], "unavailable");
        assert!(last.headers.contains_key("retry-after"));
        served += ok as u64;
    }

    // The cut heals: the regions report what they served, home bills each
    // once, and what home publishes next reaches both.
    home.signal("CONT");
    let remaining = billed_settles_at(&at_home, served).await;
    assert_eq!(remaining, Some(1000 - served as i64), "the allowance spent is what was billed");
    // Home may still be processing the first attempt it received before the
    // cut (a resend is then only reported, 202); once settled it answers 200.
    let mut retried = eu_api.send(write()).await.unwrap();
    for _ in 0..150 {
        if retried.status != 202 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        retried = eu_api.send(write()).await.unwrap();
    }
    assert_eq!(retried.status, 200, "{}", String::from_utf8_lossy(&retried.bytes));
    let more: Vec<Vec<u8>> = (20..30).map(product).collect();
    publish(&home_api, &key, &context, &more, 4).await;
    let head = home_head(&home).await;
    caught_up(&eu_api, head).await;
    caught_up(&ap_api, head).await;
    for region in [&at_eu, &at_ap] {
        let answer = region.call("POST", "/v1/search", body("29")).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        assert_eq!(answer.json()["rows"][0]["product_name"], "Lampe 29");
        served += 1;
        let answer = region.call("POST", "/v1/search", body("42")).await.unwrap();
        let rows = answer.json()["rows"].clone();
        assert_eq!(rows.as_array().unwrap().len(), 1, "the write made at the cut is published once: {rows}");
        served += 1;
    }
    billed_settles_at(&at_home, served).await;
    for region in [eu, ap, home] {
        region.kill();
    }
}

// Home stopped for longer than two lease periods: companies that are not
// prepaid are served by the read region throughout, one it had served
// before and one it had not, and once home is back their usage reaches
// home and is billed exactly once. (Prepaid companies fail closed: above.)
// rule: R1.26
#[tokio::test(flavor = "multi_thread")]
async fn through_homes_absence_companies_not_prepaid_are_served_and_billed_once_after() {
    let dir = tempfile::tempdir().unwrap();
    let home = start_with(dir.path(), "home", None, "lease_ms = 1000");
    let eu = start(dir.path(), "eu", Some(&home));
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let (home_api, eu_api) = (Transport::new(&home.public_url).unwrap(), Transport::new(&eu.public_url).unwrap());
    let key = SigningKey::from_seed(Alg::Ed25519, &[44; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[45; 32]).unwrap();
    let context = onboard(&admin, &key, &passkey).await;
    let seen = ai_company(&admin, "Seen AI", 46, None).await;
    let unseen = ai_company(&admin, "Unseen AI", 47, None).await;
    let records: Vec<Vec<u8>> = (0..5).map(product).collect();
    publish(&home_api, &key, &context, &records, 1).await;
    caught_up(&eu_api, home_head(&home).await).await;
    let client = |url: &str, key: &SigningKey| RetrievalClient::new(url, AUTHORITY, key.clone(), None).unwrap();
    let (seen_eu, unseen_eu) = (client(&eu.public_url, &seen), client(&eu.public_url, &unseen));
    let body = serde_json::to_vec(&json!({"collection": "products", "q": "Lampe",
        "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc", "limit": 5}))
    .unwrap();
    let first = seen_eu.call("POST", "/v1/search", body.clone()).await.unwrap();
    assert_eq!(first.status, 200, "{}", String::from_utf8_lossy(&first.bytes));

    home.signal("STOP");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    for _ in 0..3 {
        for region_client in [&seen_eu, &unseen_eu] {
            let answer = region_client.call("POST", "/v1/search", body.clone()).await.unwrap();
            assert_eq!(answer.status, 200, "served while home is away: {}", String::from_utf8_lossy(&answer.bytes));
            assert!(!answer.json()["rows"].as_array().unwrap().is_empty());
        }
    }

    home.signal("CONT");
    assert_eq!(billed_settles_at(&client(&home.public_url, &seen), 4).await, None, "not prepaid");
    billed_settles_at(&client(&home.public_url, &unseen), 3).await;
    for region in [eu, home] {
        region.kill();
    }
}

/// Every receipt `region` holds, by retrieval id, from its stopped store.
fn receipts_of(store: &svc_store::Store) -> Vec<svc_store::model::StoredReceipt> {
    let all = store.scan::<svc_store::model::StoredReceipt>(svc_store::cf::RECEIPTS, &[], None, usize::MAX).unwrap();
    all.into_iter().map(|(_, r)| r).collect()
}

// rule: R2.6.17, P4.2.15, P4.2.52, P4.2.56
#[tokio::test(flavor = "multi_thread")]
async fn a_region_killed_with_sigkill_loses_no_receipt_it_returned() {
    let dir = tempfile::tempdir().unwrap();
    let home = start(dir.path(), "home", None);
    let eu = start(dir.path(), "eu", Some(&home));
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let ai_key = ai_company(&admin, "Kept AI", 38, None).await;
    let eu_api = Transport::new(&eu.public_url).unwrap();
    caught_up(&eu_api, home_head(&home).await).await;

    // Searches answered at eu, each with its receipt; then eu dies at once.
    let client = RetrievalClient::new(&eu.public_url, AUTHORITY, ai_key.clone(), None).unwrap();
    let body = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": "FR"}]},
        "sort_by": "published_at:desc", "limit": 1}))
    .unwrap();
    let mut returned = Vec::new();
    let mut receipts = Vec::new();
    for _ in 0..20 {
        let answer = client.call("POST", "/v1/search", body.clone()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        returned.push(answer.json()["retrieval_id"].as_str().unwrap().to_owned());
        receipts.push(svc_core::canonical::to_signed_bytes(&answer.json()["receipt"]).unwrap());
    }
    eu.kill();

    // Restarted, then stopped in order: it folds what it had returned and
    // reports the roots home.
    let mut eu = start(dir.path(), "eu", Some(&home));
    eu.signal("TERM");
    assert!(eu.child.wait().unwrap().success());

    // Home sequences the minute roots into its log; eu, started again,
    // replicates the checkpoint and proves each receipt into it in two levels.
    let sequenced = admin.call("POST", "/admin/log/sequence", None).await.unwrap();
    let size = sequenced["tree_size"].as_u64().unwrap();
    let eu = start(dir.path(), "eu", Some(&home));
    let eu_api = Transport::new(&eu.public_url).unwrap();
    caught_up(&eu_api, home_head(&home).await).await;
    let keys = eu_api.send(Request::get("/.well-known/keys").header("host", AUTHORITY).body(Body::empty()).unwrap());
    let keys = keys.await.unwrap().json();
    let checkpoint_key = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["purpose"] == "log_checkpoint")
        .map(|k| svc_core::keys::VerifyingKey::from_jwk(&serde_json::from_value(k.clone()).unwrap()).unwrap())
        .expect("the key set names the log's checkpoint key");
    // The same log as C2SP tiles, at the region: its checkpoint and its
    // rightmost level 0 tile are home's.
    let home_api = Transport::new(&home.public_url).unwrap();
    let tiled = |api: &Transport, path: String| {
        let request = Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap();
        let api = api.clone();
        async move { api.send(request).await }
    };
    let note = tiled(&eu_api, "/log/checkpoint".into()).await.unwrap();
    let note = String::from_utf8(note.bytes).unwrap();
    let opened = svc_core::tlog::Checkpoint::open(&note, &format!("{AUTHORITY}/log"), &checkpoint_key).unwrap();
    assert_eq!(opened.size, size);
    let tile = format!("/log/tile/{}", svc_core::tiles::rightmost(0, size).unwrap().path());
    let at_eu = tiled(&eu_api, tile.clone()).await.unwrap();
    let at_home = tiled(&home_api, tile).await.unwrap();
    assert_eq!(at_eu.status, 200);
    assert_eq!(at_eu.bytes, at_home.bytes);
    assert_eq!(at_eu.bytes.len() as u64, (size % 256).max(1) * 32);
    for receipt in &receipts {
        let path = format!("/v1/log/proof?receipt={}", svc_core::tlog::leaf_name(receipt));
        let proof = eu_api.send(Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap());
        let proof = proof.await.unwrap().json();
        assert_eq!(proof["region"], "eu", "{proof}");
        let checkpoint = svc_core::tlog::Checkpoint::open(
            proof["log"]["checkpoint"].as_str().expect("the minute is in the log"),
            &format!("{AUTHORITY}/log"),
            &checkpoint_key,
        )
        .unwrap();
        assert_eq!(checkpoint.size, size);
        let two_levels = svc_core::tlog::ReceiptProof {
            index: proof["index"].as_u64().unwrap(),
            path: svc_core::tlog::parse_path(&proof["path"]).unwrap(),
            minute: svc_core::tlog::ReceiptMinute::parse(proof["minute_leaf"].as_str().unwrap().as_bytes()).unwrap(),
            leaf_index: proof["log"]["leaf_index"].as_u64().unwrap(),
            log_path: svc_core::tlog::parse_path(&proof["log"]["inclusion_path"]).unwrap(),
        };
        two_levels.check(receipt, &checkpoint).expect("a receipt eu returned is proven into home's checkpoint");
    }
    let mut eu = eu;
    eu.signal("TERM");
    assert!(eu.child.wait().unwrap().success());
    let mut home = home;
    home.signal("TERM");
    assert!(home.child.wait().unwrap().success());

    let eu_store = svc_store::Store::open(&dir.path().join("eu").join("db")).unwrap();
    let served = receipts_of(&eu_store);
    let home_store = svc_store::Store::open(&dir.path().join("home").join("db")).unwrap();
    let roots = svc_node::actors::receipt_folder::roots(&home_store, "eu").unwrap();
    for retrieval_id in &returned {
        let receipt = served.iter().find(|r| &r.retrieval_id == retrieval_id).expect("the receipt is in eu's log");
        let part = roots
            .iter()
            .find(|p| (p.first_seq..=p.last_seq).contains(&receipt.seq))
            .expect("home holds a root covering the receipt");
        let envelopes: Vec<&[u8]> = served
            .iter()
            .filter(|r| (part.first_seq..=part.last_seq).contains(&r.seq))
            .map(|r| r.envelope.as_slice())
            .collect();
        let index = (receipt.seq - part.first_seq) as usize;
        let path = svc_core::receipt_fold::proof(&envelopes, index).unwrap();
        let leaf = svc_core::merkle::leaf_hash(&receipt.envelope);
        assert!(svc_core::merkle::verify_inclusion(&leaf, index as u64, part.size, &path, &part.root));
    }
}
