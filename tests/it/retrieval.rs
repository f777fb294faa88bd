//! Fetch, receipts, billing, allowances, limits, usage and Terms through
//! signed HTTP requests, as an AI company sends them (retrieval 2.6, 2.7, 4,
//! 5, 7 and 8).

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use svc_core::digest::sha256_prefixed;
use svc_core::dsse::Envelope;
use svc_core::ids::product_id;
use svc_core::receipt::{ReceiptCheck, verify};
use svc_core::seal::{BatchMembership, BatchSealV2};
use svc_core::source_line::SourceLine;
use svc_node::actors::publisher::PublisherMsg;

const LAMP: &str = "Oak desk lamp";

fn lamp(brand: &str, sku: &str, name: &str) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&product(brand, sku, "19.90")).unwrap();
    value["product_name"] = json!(name);
    serde_json::to_vec(&value).unwrap()
}

/// Lumio with two lamps and Brisa with one, published and indexed.
async fn corpus(home: &Home) -> (Business, Business, Vec<Vec<u8>>) {
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let brisa = home.business("Brisa", products_scope(1_000)).await;
    let lamps = vec![lamp("Lumio", "L-1", LAMP), lamp("Lumio", "L-2", "Copper floor lamp")];
    assert_eq!(home.publish(&lumio, &lamps, "l").await.status, 200);
    assert_eq!(home.publish(&brisa, &[lamp("Brisa", "B-1", "Glass table lamp")], "b").await.status, 200);
    home.wait_indexed().await;
    (lumio, brisa, lamps)
}

pub(crate) fn lamp_search() -> Value {
    json!({"collection": "products", "q": "lamp", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})
}

fn miss_search() -> Value {
    json!({"collection": "products", "q": "zzzz", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})
}

pub(crate) async fn get(home: &Home, caller: &Caller, path: &str) -> Answer {
    home.signed(&caller.key, "GET", path, b"", "svc-retrieval", &[]).await
}

/// One signed request that can be sent again as it is (same nonce).
fn replayable(
    home: &Home,
    caller: &Caller,
    search: Value,
) -> impl Fn() -> axum::http::Request<axum::body::Body> + use<> {
    let body = serde_json::to_vec(&search).unwrap();
    let (parts, _) = home.signed_request(&caller.key, "POST", "/v1/search", &body, "svc-retrieval", &[]).into_parts();
    move || {
        let mut request = axum::http::Request::from_parts(parts.clone(), axum::body::Body::from(body.clone()));
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.1:1".parse().unwrap()));
        request
    }
}

async fn usage(home: &Home, caller: &Caller) -> Value {
    let answer = get(home, caller, "/v1/usage").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

// rule: R2.7.1, R2.7.2, R2.7.3, R2.7.4, R2.7.5, R2.7.6, R2.7.8, R2.7.12, R2.7.13, R2.7.14, R2.7.15, R2.6.10, R1.21
#[tokio::test(flavor = "multi_thread")]
async fn a_fetch_answers_the_sealed_bytes_verbatim_with_their_proofs_and_a_receipt() {
    let home = Home::start().await;
    let (lumio, _, lamps) = corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    let id = product_id(&lumio.uuid, "L-1");
    let answer = get(&home, &caller, &format!("/v1/records/{id}")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let body = &answer.body;
    assert_eq!(
        (body["record_id"].as_str(), body["business_uuid"].as_str()),
        (Some(id.as_str()), Some(lumio.uuid.as_str()))
    );
    assert_eq!(body["type"], "products");
    assert!(svc_core::time::UnixMs::parse_rfc3339(body["published_at"].as_str().unwrap()).is_some());

    // The record's exact bytes are in the answer, verbatim.
    let record = &lamps[0];
    let embedded = format!("\"record\":{}", String::from_utf8(record.clone()).unwrap());
    assert!(String::from_utf8(answer.bytes.clone()).unwrap().contains(&embedded), "bytes verbatim");

    // The batch seal proves the bytes are leaf 0 of what the business sealed.
    let membership: BatchMembership = serde_json::from_value(body["seal"].clone()).unwrap();
    let seal: BatchSealV2 = serde_json::from_slice(&membership.batch_seal.payload_bytes().unwrap()).unwrap();
    assert_eq!(membership.leaf_index, 0);
    membership.check_inclusion(&seal, record).expect("inclusion proof holds");

    let sidecar = Envelope::from_value(&body["sidecar"]).unwrap();
    let sidecar = svc_core::sidecar::verify(&sidecar, &home.state.keys.sidecar.verifying_key()).unwrap();
    assert_eq!((sidecar.format(), sidecar.origin()), (2, sha256_prefixed(record).as_str()));
    assert_eq!(body["ai_policy"], json!({"version": 0, "record": null, "seal": null}));
    assert!(body.get("represent").is_none() && body.get("endpoints").is_none(), "business files only");

    let provenance = &body["provenance"];
    assert_eq!(provenance["certificate_url"], format!("http://verify.svc.localhost/v1/certificates/{}", lumio.uuid));
    assert!(provenance["projection_version"].as_str().unwrap().starts_with("sha256:"));
    assert!(provenance["log_leaf"].as_str().unwrap().starts_with("sha256:"));
    let line = SourceLine::parse(provenance["source_line"].as_str().unwrap()).expect("a well-formed source line");
    assert_eq!((line.record_id.as_str(), line.origin.clone()), (id.as_str(), sha256_prefixed(record)));

    let envelope = Envelope::from_value(&body["receipt"]).unwrap();
    let check = ReceiptCheck {
        receipt_key: |_: &str, _: &str, _| Some(home.state.keys.receipt.verifying_key()),
        presenter: Some(&caller.key_id),
        rows: None,
    };
    let receipt = verify(&envelope, &check).expect("the receipt verifies").receipt;
    assert_eq!(receipt.rows.len(), 1);
    assert_eq!(receipt.rows[0].id, id);
    assert_eq!(receipt.rows[0].sha256.as_deref(), Some(sha256_prefixed(record).as_str()));
    assert_eq!(receipt.rows[0].ai_policy_version, Some(0));
    assert_eq!(receipt.country, None);
    assert_eq!(answer.headers["x-request-id"].to_str().unwrap(), receipt.retrieval_id);
    assert_eq!(usage(&home, &caller).await["totals"]["fetches"], 1);
}

// rule: R1.6, R2.7.16, R2.7.17, R2.7.18, R8.22, R3.1, R1.23
#[tokio::test(flavor = "multi_thread")]
async fn every_absence_is_one_404_no_sooner_than_20_ms() {
    let home = Home::start().await;
    let (lumio, brisa, _) = corpus(&home).await;
    let caller = home.caller("Blocked AI").await;
    let block =
        home.admin("POST", "/admin/blocks", json!({"business_uuid": brisa.uuid, "ai_group_id": caller.group_id})).await;
    assert_eq!(block.status, 200);
    let another =
        home.publish(&lumio, &[lamp("Lumio", "L-3", "Linen shade"), lamp("Lumio", "L-4", "Wall lamp")], "m").await;
    assert_eq!(another.status, 200);
    for (sku, delete) in [("L-3", false), ("L-4", true)] {
        let record_id = product_id(&lumio.uuid, sku);
        let business_uuid = lumio.uuid.clone();
        let now = home.clock.now();
        home.state
            .home
            .as_ref()
            .unwrap()
            .publisher
            .call(|reply| PublisherMsg::EndRecord {
                business_uuid,
                record_id,
                delete,
                // Driven straight through the publisher: no sealed document.
                seal_json: Vec::new(),
                now,
                reply,
            })
            .await
            .unwrap()
            .unwrap();
    }
    let absent = [
        ("blocked", product_id(&brisa.uuid, "B-1")),
        ("withdrawn", product_id(&lumio.uuid, "L-3")),
        ("deleted", product_id(&lumio.uuid, "L-4")),
        ("never existed", product_id(&lumio.uuid, "L-404")),
        ("malformed", "svc_NOT-AN-ID".to_owned()),
        ("not fetchable", svc_core::ids::ai_policy_record_id(&lumio.uuid, 1)),
    ];
    let mut bodies = Vec::new();
    for (why, id) in &absent {
        let path = format!("/v1/records/{id}");
        let started = Instant::now();
        let answer = get(&home, &caller, &path).await;
        assert!(started.elapsed() >= Duration::from_millis(20), "{why}: answered in {:?}", started.elapsed());
        assert_eq!(answer.status, 404, "{why}: {:?}", answer.body);
        assert_eq!(answer.body["instance"], path, "{why}");
        assert_eq!(answer.headers["content-type"], "application/problem+json");
        // Byte for byte the same once the echoed path is set aside.
        bodies.push(String::from_utf8(answer.bytes).unwrap().replace(&path, "{path}"));
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:#?}");
    // The live record is there for the same caller; 404s were never billed.
    assert_eq!(get(&home, &caller, &format!("/v1/records/{}", product_id(&lumio.uuid, "L-1"))).await.status, 200);
    assert_eq!(usage(&home, &caller).await["totals"], json!({"searches": 0, "fetches": 1, "billed": 1}));
}

// rule: R1.6, R1.16, R1.18
#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_group_sees_exactly_the_rows_of_a_world_without_the_business() {
    let home = Home::start().await;
    let (_, brisa, _) = corpus(&home).await;
    let blocked = home.caller("Blocked AI").await;
    let other = home.caller("Other AI").await;
    home.admin("POST", "/admin/blocks", json!({"business_uuid": brisa.uuid, "ai_group_id": blocked.group_id})).await;
    home.wait_indexed().await;
    let seen = home.search(&blocked, "/v1/search", lamp_search()).await;
    let all = home.search(&other, "/v1/search", lamp_search()).await;
    let without: Vec<Value> = all.body["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["business_uuid"] != json!(brisa.uuid))
        .cloned()
        .collect();
    assert_eq!(without.len(), 2);
    assert_eq!(serde_json::to_vec(&seen.body["rows"]).unwrap(), serde_json::to_vec(&without).unwrap());
    // The receipt names exactly the rows served.
    let receipt = Envelope::from_value(&seen.body["receipt"]).unwrap();
    let payload: Value = serde_json::from_slice(&receipt.payload_bytes().unwrap()).unwrap();
    assert_eq!(payload["rows"].as_array().unwrap().len(), 2);
    // Members of the answer other than rows and receipt are the same shape.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&seen.body), keys(&all.body));
}

// rule: R1.20, R1.21, R1.22, R1.23, R1.24, R1.26, R5.39, R4.11, R-NS-7, R-NS-8
#[tokio::test(flavor = "multi_thread")]
async fn only_searches_with_rows_and_fetched_records_are_billed_once_each() {
    let home = Home::start().await;
    let (lumio, _, _) = corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    assert_eq!(home.search(&caller, "/v1/search", miss_search()).await.body["rows"], json!([]));
    let refused = home
        .search(&caller, "/v1/search", json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}}))
        .await;
    assert_eq!(refused.body["code"], "sort_required");
    assert_eq!(get(&home, &caller, &format!("/v1/records/{}", product_id(&lumio.uuid, "L-1"))).await.status, 200);
    assert_eq!(get(&home, &caller, &format!("/v1/records/{}", product_id(&lumio.uuid, "nope"))).await.status, 404);
    // The same signed request twice: the second is refused and not billed.
    let replay = replayable(&home, &caller, lamp_search());
    assert_eq!(home.send(replay()).await.status, 200);
    let again = home.send(replay()).await;
    assert_eq!(again.body["code"], "nonce_reused");

    let usage = usage(&home, &caller).await;
    assert_eq!(usage["totals"], json!({"searches": 2, "fetches": 1, "billed": 3}));
    assert_eq!(usage["days"], json!([{"date": "2026-11-22", "searches": 2, "fetches": 1, "billed": 3}]));
    assert_eq!(usage["ai_company_uuid"], caller.company_uuid);
    assert_eq!((usage["environment"].as_str(), usage["invoiced"].as_bool()), (Some("production"), Some(true)));
    assert_eq!(usage["allowance"], json!({"prepay": false}));
    let range = get(&home, &caller, "/v1/usage?from=2026-11-23&to=2026-11-30").await;
    assert_eq!(range.body["totals"]["billed"], 0, "another range");
    let bad = get(&home, &caller, "/v1/usage?from=yesterday").await;
    assert_eq!((bad.status, bad.body["code"].as_str()), (400, Some("request_invalid")));
}

// rule: R1.27, R7.12, R1.24
#[tokio::test(flavor = "multi_thread")]
async fn a_spent_prepay_allowance_is_402_and_zero_row_searches_spend_none() {
    let home = Home::start().await;
    corpus(&home).await;
    let caller = home.caller("Prepaid AI").await;
    let set = home
        .admin(
            "POST",
            "/admin/allowances",
            json!({"ai_company_uuid": caller.company_uuid, "prepay": true, "remaining": 2}),
        )
        .await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    for _ in 0..3 {
        assert_eq!(home.search(&caller, "/v1/search", miss_search()).await.status, 200, "zero rows are free");
    }
    for _ in 0..2 {
        assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    }
    for body in [lamp_search(), miss_search()] {
        let spent = home.search(&caller, "/v1/search", body).await;
        assert_eq!((spent.status, spent.body["code"].as_str()), (402, Some("allowance_exhausted")));
    }
    let usage = usage(&home, &caller).await;
    assert_eq!(usage["allowance"], json!({"prepay": true, "remaining": 0}));
    assert_eq!(usage["totals"]["billed"], 2);
}

// rule: R1.28, R1.29, R7.15, R7.16
#[tokio::test(flavor = "multi_thread")]
async fn an_allowance_that_cannot_be_checked_fails_closed_with_503() {
    let home = Home::start().await;
    corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    assert!(home.state.retire("billing").await);
    let answer = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (503, Some("unavailable")), "{:?}", answer.body);
    assert!(answer.headers.contains_key("retry-after"));
    assert!(answer.body.get("rows").is_none(), "nothing served");
    let fetch = get(&home, &caller, "/v1/records/svc_aaaaaaaaaaaaaaaaaaaaaaaaaa").await;
    assert_eq!(fetch.status, 503);
}

// rule: R7.13, R7.14, R8.24, R2.9.2
#[tokio::test(flavor = "multi_thread")]
async fn the_request_rate_and_the_query_cost_budget_give_429_with_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::start_with_config(dir, |c| {
        c.retrieval_limits = svc_node::config::RetrievalLimits { requests_per_second: 3, query_cost_per_minute: 8 };
    })
    .await;
    corpus(&home).await;
    let caller = home.caller("Busy AI").await;
    for _ in 0..3 {
        assert_eq!(home.search(&caller, "/v1/search", miss_search()).await.status, 200);
    }
    let fast = home.search(&caller, "/v1/search", miss_search()).await;
    assert_eq!((fast.status, fast.body["code"].as_str()), (429, Some("rate_limited")));
    assert_eq!(fast.body["retry_after_ms"], 1_000);
    assert_eq!(fast.headers["retry-after"], "1");
    // Zero-row searches spent rate but no query cost; two lamp searches
    // (1 + the country clause + sort + text = 4 each) spend the budget of 8.
    home.clock.advance(1_000);
    for _ in 0..2 {
        assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    }
    let costly = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!((costly.status, costly.body["code"].as_str()), (429, Some("rate_limited")));
    assert_eq!(costly.body["retry_after_ms"], 60_000);
    home.clock.advance(60_000);
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
}

fn receipt_ids(page: &Value) -> Vec<String> {
    page["receipts"].as_array().unwrap().iter().map(|r| r["retrieval_id"].as_str().unwrap().to_owned()).collect()
}

// rule: R4.10, R4.16, R4.17, R4.18, R8.21
#[tokio::test(flavor = "multi_thread")]
async fn receipts_list_the_groups_own_oldest_first_a_hundred_a_page() {
    let home = Home::start().await;
    corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    let stranger = home.caller("Other AI").await;
    // A second key in the caller's group.
    let second = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[7; 32]).unwrap();
    let reg = home
        .admin(
            "POST",
            &format!("/admin/groups/{}/retrieval-keys", caller.group_id),
            json!({"jwk": second.verifying_key().to_jwk()}),
        )
        .await;
    assert_eq!(reg.status, 201, "{:?}", reg.body);
    let second_id = second.verifying_key().thumbprint();

    let mut served = Vec::new();
    for i in 0..103 {
        if i % 50 == 0 {
            home.clock.advance(1_000);
        }
        home.clock.advance(3);
        let answer = home.search(&caller, "/v1/search", if i % 2 == 0 { lamp_search() } else { miss_search() }).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        served.push(answer.body["retrieval_id"].as_str().unwrap().to_owned());
    }
    home.clock.advance(3);
    let by_second = home
        .signed(&second, "POST", "/v1/search", &serde_json::to_vec(&lamp_search()).unwrap(), "svc-retrieval", &[])
        .await;
    served.push(by_second.body["retrieval_id"].as_str().unwrap().to_owned());
    home.search(&stranger, "/v1/search", lamp_search()).await;

    let first = get(&home, &caller, "/v1/receipts").await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(receipt_ids(&first.body), served[..100].to_vec(), "oldest first, 100 a page");
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = get(&home, &caller, &format!("/v1/receipts?cursor={cursor}")).await;
    assert_eq!(receipt_ids(&rest.body), served[100..].to_vec(), "the group's other key included");
    assert!(rest.body["next_cursor"].is_null());
    // Every entry's receipt verifies and was issued to the caller's group.
    for entry in rest.body["receipts"].as_array().unwrap() {
        let envelope = Envelope::from_value(&entry["receipt"]).unwrap();
        let presenter = entry["caller_key_id"].as_str().unwrap();
        let check = ReceiptCheck {
            receipt_key: |_: &str, _: &str, _| Some(home.state.keys.receipt.verifying_key()),
            presenter: Some(presenter),
            rows: None,
        };
        verify(&envelope, &check).unwrap();
    }
    let narrowed = get(&home, &caller, &format!("/v1/receipts?key_id={second_id}")).await;
    assert_eq!(receipt_ids(&narrowed.body), vec![served[103].clone()]);
    let foreign = get(&home, &caller, &format!("/v1/receipts?ai_company_uuid={}", stranger.company_uuid)).await;
    assert_eq!(foreign.body["receipts"], json!([]), "another company's receipts are never listed");
    let theirs = get(&home, &stranger, "/v1/receipts").await;
    assert_eq!(theirs.body["receipts"].as_array().unwrap().len(), 1);
    // A time window: only receipts served at or after `from`.
    let from = svc_core::time::UnixMs(START.0 + 2_000).to_rfc3339_millis();
    let later = get(&home, &caller, &format!("/v1/receipts?from={from}")).await;
    assert!(receipt_ids(&later.body).len() < 100);
    let bad = get(&home, &caller, "/v1/receipts?cursor=%21").await;
    assert_eq!(bad.body["code"], "request_invalid");
}

// rule: R4.12, R4.13, R4.14, R2.9.1
#[tokio::test(flavor = "multi_thread")]
async fn terms_are_served_by_version_and_404_when_none_is_in_force() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    let none = get(&home, &caller, "/v1/terms").await;
    assert_eq!((none.status, none.body["code"].as_str()), (404, Some("not_found")));
    let published = home
        .admin(
            "POST",
            "/admin/terms",
            json!({"version": 1, "effective_from": "2026-11-01T00:00:00Z", "text": "Use once."}),
        )
        .await;
    assert_eq!(published.status, 201, "{:?}", published.body);
    home.admin(
        "POST",
        "/admin/terms",
        json!({"version": 2, "effective_from": "2027-01-01T00:00:00Z", "text": "Use once, cite."}),
    )
    .await;
    let in_force = get(&home, &caller, "/v1/terms").await;
    assert_eq!(in_force.status, 200);
    assert_eq!(
        in_force.body,
        json!({"version": 1, "effective_from": "2026-11-01T00:00:00Z", "sha256": sha256_prefixed(b"Use once."), "text": "Use once."})
    );
    assert_eq!(get(&home, &caller, "/v1/terms/2").await.body["version"], 2);
    assert_eq!(get(&home, &caller, "/v1/terms/3").await.status, 404);
    assert_eq!(get(&home, &caller, "/v1/terms/two").await.body["code"], "request_invalid");
    // Unsigned: refused like any retrieval route.
    let unsigned = home
        .send(axum::http::Request::get("/v1/terms").header("host", AUTHORITY).body(axum::body::Body::empty()).unwrap())
        .await;
    assert_eq!(unsigned.body["code"], "signature_missing");
}

// rule: R5.36, R5.38
#[tokio::test(flavor = "multi_thread")]
async fn a_claimed_nonce_is_still_refused_after_a_restart() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    let replay = replayable(&home, &caller, miss_search());
    assert_eq!(home.send(replay()).await.status, 200);
    home.state.stop_actors().await;
    let Home { dir, state, .. } = home;
    drop(state);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Same moment, so the signature itself is still valid: only the nonce store refuses it.
    let restarted = Home::start_in(dir).await;
    let again = restarted.send(replay()).await;
    assert_eq!((again.status, again.body["code"].as_str()), (401, Some("nonce_reused")), "{:?}", again.body);
}

/// A sandbox AI company's key: the caller, its grant and its bearer token.
async fn sandbox_key(home: &Home, seed: u8) -> (Caller, String, String) {
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[seed; 32]).unwrap();
    let (caller, reg) = home.caller_with(json!({"name": "Sandbox AI"}), key).await;
    let grant = reg.body["sandbox_key_grant"].as_str().unwrap().to_owned();
    let token = reg.body["sandbox_bearer_token"].as_str().unwrap().to_owned();
    (caller, grant, token)
}

/// Copies a retrieval key's record into another node's registry, already
/// introduced, as a shared registry would hold it.
async fn copy_key(from: &Home, to: &Home, key_id: &str) {
    let mut record = from.state.registry.retrieval_key(key_id).unwrap().unwrap();
    record.introduced = true;
    let mut change = svc_node::replication::Change::new();
    change.put(svc_store::cf::RETRIEVAL_KEYS, key_id.as_bytes(), &record);
    let now = to.clock.now();
    to.state
        .home
        .as_ref()
        .unwrap()
        .publisher
        .call(|reply| PublisherMsg::Apply { change, now, reply })
        .await
        .unwrap()
        .unwrap();
}

// rule: R1.34, R1.36, R1.37, R1.38, R5.40, R5.43, R5.47, R5.3
#[tokio::test(flavor = "multi_thread")]
async fn sandbox_and_production_never_accept_each_others_keys_or_tokens() {
    let production = Home::start().await;
    let sandbox = Home::start_sandbox().await;
    let (sandbox_caller, grant, token) = sandbox_key(&sandbox, 9).await;
    let (sandbox_signing, sandbox_key_id) = (sandbox_caller.key.clone(), sandbox_caller.key_id.clone());
    let prod = production.caller("Prod AI").await;
    let body = serde_json::to_vec(&miss_search()).unwrap();
    let grant_header = [("svc-sandbox-key", grant.as_str())];

    // The sandbox key works in the sandbox: receipts say so, usage is never invoiced.
    let ok = sandbox.signed(&sandbox_signing, "POST", "/v1/search", &body, "svc-retrieval", &grant_header).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    let payload: Value =
        serde_json::from_slice(&Envelope::from_value(&ok.body["receipt"]).unwrap().payload_bytes().unwrap()).unwrap();
    assert_eq!(payload["sandbox"], true);

    // The sandbox key, grant and token at production.
    let at_production =
        production.signed(&sandbox_signing, "POST", "/v1/search", &body, "svc-retrieval", &grant_header).await;
    assert_eq!((at_production.status, at_production.body["code"].as_str()), (401, Some("key_unknown")));
    let bearer = production
        .send(
            axum::http::Request::post("/v1/search")
                .header("host", AUTHORITY)
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::from(body.clone()))
                .unwrap(),
        )
        .await;
    assert_eq!(bearer.body["code"], "signature_missing", "production never reads a bearer token");
    // The production key at the sandbox.
    let at_sandbox = sandbox.signed(&prod.key, "POST", "/v1/search", &body, "svc-retrieval", &[]).await;
    assert_eq!(at_sandbox.body["code"], "key_unknown");

    // Even a registry holding both keys refuses the other environment's.
    copy_key(&sandbox, &production, &sandbox_key_id).await;
    copy_key(&production, &sandbox, &prod.key_id).await;
    let crossed = production.signed(&sandbox_signing, "POST", "/v1/search", &body, "svc-retrieval", &[]).await;
    assert_eq!(crossed.body["code"], "key_unknown");
    let crossed = sandbox.signed(&prod.key, "POST", "/v1/search", &body, "svc-retrieval", &[]).await;
    assert_eq!(crossed.body["code"], "key_unknown");

    let usage = usage(&sandbox, &sandbox_caller).await;
    assert_eq!((usage["environment"].as_str(), usage["invoiced"].as_bool()), (Some("sandbox"), Some(false)));
}

// rule: R2.4.5, R1.22
#[tokio::test(flavor = "multi_thread")]
async fn a_search_past_its_time_budget_answers_partial_and_is_not_billed() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::start_with_config(dir, |c| c.search_budget_ms = 0).await;
    corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    let answer = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["partial"], true);
    assert_eq!(answer.body["rows"], json!([]), "the budget ran out before the first segment");
    assert_eq!(usage(&home, &caller).await["totals"]["billed"], 0);
}

fn business_file(name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/business_files/1",
        "language": "fr",
        "business_file_id": "main",
        "countries": ["FR"],
        "description": format!("{name} sells lamps from Lyon."),
        "brands_owned": [{"name": name}],
        "represent": {"who_we_are": format!("{name} is a lamp maker in Lyon.")},
        "endpoints": {"domains": ["lumio.example"], "checkout_url": "https://lumio.example/checkout"},
    }))
    .unwrap()
}

/// Bit 3 of the action mask (retrieval 2.5).
const PURCHASE: u64 = 1 << 3;

// rule: R2.5.17, R2.7.7, R2.7.9, R2.7.10, R2.7.11
#[tokio::test(flavor = "multi_thread")]
async fn suspended_endpoints_withhold_purchase_and_show_on_the_business_file() {
    let home = Home::start().await;
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let file = business_file("Lumio");
    let saved = home.save_sealed(&lumio, "business_files", &file).await;
    assert_eq!(saved.status, 201, "{:?}", saved.body);
    // An AI policy that allows purchase, sealed by the owner's passkey.
    let policy = svc_core::ai_policy::record_bytes(&["cite_as_source"], &["answer", "purchase"], &[]);
    let config = &home.state.config;
    let passkey = svc_client::sealing::Passkey {
        key: &lumio.passkey,
        rp_id: &config.passkey_rp_id,
        origin: &config.passkey_origin,
    };
    let context = svc_client::sealing::SealContext { cert_id: lumio.cert_id.clone(), ai_policy_version: 0 };
    let seal = passkey.seal_record(&context, "ai_policy", &policy, home.clock.now(), Some(1)).unwrap();
    let body = json!({"record_base64": svc_core::b64::std_encode(&policy), "seal": seal});
    let sealed = home.admin("POST", &format!("/admin/businesses/{}/ai-policy", lumio.uuid), body).await;
    assert!(sealed.status < 300, "{:?}", sealed.body);
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let search =
        json!({"collection": "business_files", "filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc"});
    let file_id = saved.body["record_id"].as_str().unwrap().to_owned();
    let action = |answer: &Answer| answer.body["rows"][0]["ai_policy_bits"]["action"].as_u64().unwrap();

    let live = home.search(&caller, "/v1/search", search.clone()).await;
    assert_eq!(live.status, 200, "{:?}", live.body);
    assert_eq!(action(&live) & PURCHASE, PURCHASE);
    let fetched = get(&home, &caller, &format!("/v1/records/{file_id}")).await;
    assert_eq!(fetched.status, 200, "{:?}", fetched.body);
    assert_eq!(fetched.body["endpoints"], json!({"status": "live"}));
    assert_eq!(fetched.body["represent"]["who_we_are"], "Lumio is a lamp maker in Lyon.");
    assert_eq!(fetched.body["ai_policy"]["version"], 1);
    let embedded = format!("\"record\":{}", String::from_utf8(policy.clone()).unwrap());
    assert!(String::from_utf8(fetched.bytes).unwrap().contains(&embedded), "the policy's bytes verbatim");

    let suspend = json!({"business_uuid": lumio.uuid, "suspended": true, "reason": "domain assurance lost"});
    assert_eq!(home.admin("POST", "/admin/endpoints", suspend).await.status, 200);
    let suspended = home.search(&caller, "/v1/search", search.clone()).await;
    assert_eq!(action(&suspended) & PURCHASE, 0, "purchase withheld while suspended");
    assert_eq!(action(&suspended), action(&live) & !PURCHASE, "nothing else changes");
    let fetched = get(&home, &caller, &format!("/v1/records/{file_id}")).await;
    assert_eq!(fetched.body["endpoints"], json!({"status": "suspended"}));

    let restore = json!({"business_uuid": lumio.uuid, "suspended": false});
    assert_eq!(home.admin("POST", "/admin/endpoints", restore).await.status, 200);
    assert_eq!(action(&home.search(&caller, "/v1/search", search).await) & PURCHASE, PURCHASE);
}

fn unsigned_search(body: Vec<u8>, declared: bool) -> axum::http::Request<axum::body::Body> {
    let mut builder = axum::http::Request::post("/v1/search").header("host", AUTHORITY);
    if declared {
        builder = builder.header("content-length", body.len());
    }
    builder.body(axum::body::Body::from(body)).unwrap()
}

/// A body sent in 1 KiB chunks that counts how many were asked for.
struct Counted {
    left: usize,
    polled: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl axum::body::HttpBody for Counted {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        self.left -= 1;
        self.polled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from(vec![b' '; 1024])))))
    }
}

// rule: R7.10
#[tokio::test(flavor = "multi_thread")]
async fn an_undeclared_body_is_not_read_past_the_limit() {
    let home = Home::start().await;
    let polled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // 1 MiB offered in 1 KiB chunks; the limit is 16 KiB.
    let body = Counted { left: 1024, polled: polled.clone() };
    let request =
        axum::http::Request::post("/v1/search").header("host", AUTHORITY).body(axum::body::Body::new(body)).unwrap();
    let answer = home.send(request).await;
    assert_eq!(answer.body["code"], "record_too_large");
    let read = polled.load(std::sync::atomic::Ordering::SeqCst);
    assert!(read <= 17, "{read} chunks of 1 KiB were read");
}

// rule: R7.8, R7.9, R8.7, R9.13, R9.14
#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_16_kib_is_refused_declared_or_not_before_anything_else() {
    let home = Home::start().await;
    let over = vec![b' '; 16 * 1024 + 1];
    for declared in [true, false] {
        let answer = home.send(unsigned_search(over.clone(), declared)).await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (413, Some("record_too_large")),
            "declared: {declared}"
        );
    }
    // At the limit the body is read, and the missing signature is what refuses it.
    let at = home.send(unsigned_search(vec![b' '; 16 * 1024], false)).await;
    assert_eq!(at.body["code"], "signature_missing");
    // Before 5 October 2026 a declared length over the limit was 400.
    home.clock.set(svc_core::time::UnixMs::parse_rfc3339("2026-10-04T23:59:59Z").unwrap());
    let earlier = home.send(unsigned_search(over.clone(), true)).await;
    assert_eq!((earlier.status, earlier.body["code"].as_str()), (400, Some("request_invalid")));
    assert_eq!(home.send(unsigned_search(over, false)).await.status, 413, "read past the limit is always 413");
}

// rule: R5.50
#[tokio::test(flavor = "multi_thread")]
async fn a_production_key_needs_the_terms_in_force_accepted_by_version_and_hash() {
    let home = Home::start().await;
    let publish = |version: u64, from: &str, text: &str| {
        let body = json!({"version": version, "effective_from": from, "text": text});
        let home = &home;
        async move { assert_eq!(home.admin("POST", "/admin/terms", body).await.status, 201) }
    };
    publish(1, "2026-11-01T00:00:00Z", "Use once.").await;
    // Accepted version 1 when it was created: its keys register.
    let caller = home.caller("Acme AI").await;
    let register = |n: u8| {
        let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[n; 32]).unwrap();
        let path = format!("/admin/groups/{}/retrieval-keys", caller.group_id);
        let home = &home;
        async move { home.admin("POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await }
    };
    assert_eq!(register(1).await.status, 201);

    // Version 2 comes into force: a new key waits for its acceptance.
    home.clock.advance(svc_core::time::SECOND);
    let from = home.clock.now().to_rfc3339_secs();
    publish(2, &from, "Use once, cite.").await;
    let refused = register(2).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", refused.body);
    assert!(refused.body["detail"].as_str().unwrap().contains("version 2"), "{:?}", refused.body);
    let path = format!("/admin/companies/{}/terms-acceptance", caller.company_uuid);
    let accepted = home.admin("POST", &path, json!({"version": 2})).await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    assert_eq!(accepted.body["sha256"], sha256_prefixed(b"Use once, cite."));
    assert_eq!(register(2).await.status, 201, "accepted in force: registered");
    let unknown = home.admin("POST", &path, json!({"version": 9})).await;
    assert_eq!((unknown.status, unknown.body["code"].as_str()), (400, Some("request_invalid")));

    // An unverified company registers no production key, whatever it accepted.
    let unverified =
        home.admin("POST", "/admin/companies", json!({"name": "Unverified AI", "terms_accepted": 2})).await;
    let uuid = unverified.body["ai_company_uuid"].as_str().unwrap();
    let group = home.admin("POST", &format!("/admin/companies/{uuid}/groups"), json!({"name": "bots"})).await;
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[9; 32]).unwrap();
    let path = format!("/admin/groups/{}/retrieval-keys", group.body["ai_group_id"].as_str().unwrap());
    let refused = home.admin("POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);
}
