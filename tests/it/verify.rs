//! `POST /v1/verify` through HTTP: a fetched product with its seal, row and
//! sidecar judged and signed; a failed check is a 200 with a reason; the
//! seal proven into the log once sequenced; refusals are problems.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};

fn lamp_search() -> Value {
    json!({"collection": "products", "q": "lampe", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})
}

fn post(body: &Value) -> Request<Body> {
    Request::post("/v1/verify")
        .header("host", AUTHORITY)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

/// A published product as a checker holds it: the fetch answer and its row.
struct Held {
    record: Vec<u8>,
    seal: Value,
    sidecar: Value,
    row: Value,
}

async fn held(home: &Home, caller: &Caller) -> Held {
    let found = home.search(caller, "/v1/search", lamp_search()).await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    let row = found.body["rows"][0].clone();
    let path = format!("/v1/records/{}", row["record_id"].as_str().unwrap());
    let fetched = home.signed(&caller.key, "GET", &path, b"", "svc-retrieval", &[]).await;
    assert_eq!(fetched.status, 200, "{:?}", fetched.body);
    Held {
        record: record_of(&fetched),
        seal: fetched.body["seal"].clone(),
        sidecar: fetched.body["sidecar"].clone(),
        row,
    }
}

/// A fetch answer's record, byte for byte as it was sealed.
pub(crate) fn record_of(fetched: &Answer) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        record: &'a serde_json::value::RawValue,
    }
    let raw: Raw<'_> = serde_json::from_slice(&fetched.bytes).unwrap();
    raw.record.get().as_bytes().to_vec()
}

fn body_of(held: &Held) -> Value {
    json!({
        "record_base64": svc_core::b64::std_encode(&held.record),
        "seal": held.seal,
        "row": held.row,
        "sidecar": held.sidecar,
    })
}

/// The answer's statement, checked under the statement key's P-256 half
/// (a short-lived statement carries that one signature); answers its payload.
fn statement(home: &Home, answer: &Value) -> Value {
    let envelope = svc_core::dsse::Envelope::from_value(&answer["statement"]).unwrap();
    assert_eq!(envelope.signatures.len(), 1, "one signature: not a long-lived artefact");
    let payload = home
        .state
        .keys
        .statement
        .verify_short_lived(&envelope, "application/vnd.service.verify-statement.v1+json")
        .expect("signed by the statement key");
    serde_json::from_slice(&payload).unwrap()
}

// rule: P4.2.8, P4.2.18, P4.2.22, P4.2.26, P4.2.27, P4.2.28, P4.2.29, P4.2.30, P4.2.32, P4.2.33, P4.2.34
// rule: P4.2.39, P4.2.40, P4.2.41, P4.2.42, P4.2.43, P4.2.44, P7.13, P7.17, P5.15, P9.10
#[tokio::test(flavor = "multi_thread")]
async fn a_fetched_product_verifies_with_its_seal_row_and_sidecar_and_is_proven_once_sequenced() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    let published =
        home.publish(&business, &[product("Lumen", "l-1", "19.90"), product("Lumen", "l-2", "9.90")], "a").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let caller = home.caller("Reader").await;
    home.wait_indexed().await;
    let held = held(&home, &caller).await;

    let answer = home.send(post(&body_of(&held))).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.headers["access-control-allow-origin"], "*");
    let seal = &answer.body["seal"];
    assert_eq!(seal["valid"], true, "{seal}");
    assert_eq!((seal["path"].as_str(), seal["format"].as_u64()), (Some("A"), Some(2)));
    assert_eq!(seal["business_uuid"], business.uuid.as_str());
    assert_eq!(seal["cert_id"], business.cert_id.as_str());
    assert_eq!(seal["checks"]["inclusion"], "ok");
    assert_eq!(seal["checks"]["scope"], "ok");
    // Before the hour is sequenced: the key event is missing (a warning) and the seal not in the log.
    assert_eq!(seal["checks"]["key_event"], "missing");
    assert_eq!(answer.body["log_inclusion"]["included"], false);
    assert_eq!(answer.body["log_inclusion"]["reason"], "not_in_log");
    assert_eq!(answer.body["warnings"], json!(["key_event_missing", "not_in_log"]));
    assert_eq!(answer.body["projection"]["row_signature"], "ok");
    assert_eq!(answer.body["projection"]["rerun"], "matches");
    let signed = statement(&home, &answer.body);
    assert_eq!(signed["seal"], answer.body["seal"], "the statement signs the answer");

    let mut required = body_of(&held);
    required["key_events"] = json!("require");
    let refused = home.send(post(&required)).await;
    assert_eq!(refused.status, 200);
    assert_eq!(refused.body["seal"]["valid"], false);
    assert_eq!(refused.body["seal"]["reason"], "key_event_missing");

    // Sequenced: the key event is there and the seal is proven into a checkpoint.
    home.admin("POST", "/admin/log/sequence", json!({})).await;
    let answer = home.send(post(&required)).await;
    assert_eq!(answer.body["seal"]["valid"], true, "{:?}", answer.body);
    assert_eq!(answer.body["seal"]["checks"]["key_event"], "ok");
    let inclusion = &answer.body["log_inclusion"];
    assert_eq!(inclusion["included"], true, "{inclusion}");
    let checkpoint = svc_core::tlog::Checkpoint::open(
        inclusion["checkpoint"].as_str().unwrap(),
        "api.svc.localhost/log",
        &home.state.keys.checkpoint.verifying_key(),
    )
    .unwrap();
    let leaf = svc_core::merkle::leaf_hash(&svc_core::tlog::seal_leaf(
        &svc_core::dsse::Envelope::from_value(&held.seal["batch_seal"]).unwrap(),
    ));
    checkpoint
        .check_inclusion(
            &leaf,
            inclusion["leaf_index"].as_u64().unwrap(),
            &svc_core::tlog::parse_path(&inclusion["inclusion_path"]).unwrap(),
        )
        .expect("the seal's leaf is in the checkpoint");
    assert_eq!(answer.body["warnings"], json!([]));

    // Failed checks are answers, not errors.
    let mut other = body_of(&held);
    other["record_base64"] = json!(svc_core::b64::std_encode(&product("Lumen", "l-9", "1.00")));
    let wrong = home.send(post(&other)).await;
    assert_eq!(wrong.status, 200);
    assert_eq!(
        (wrong.body["seal"]["valid"].clone(), wrong.body["seal"]["reason"].clone()),
        (json!(false), json!("inclusion_invalid"))
    );
    let mut bent_row = body_of(&held);
    bent_row["row"]["product_name"] = json!("Autre chose");
    let bent = home.send(post(&bent_row)).await;
    assert_eq!(bent.body["projection"]["reason"], "row_signature_invalid");
    assert_eq!(bent.body["seal"]["valid"], true, "the seal stands; the row does not");

    // A format 1 sidecar (publishing 9: "v1 still exists") is judged as a
    // format 2 one; signed by anyone but the service, it is refused.
    let format_1 = |payload: &Value, key: &svc_core::keys::SigningKey| {
        let mut body = body_of(&held);
        let bytes = svc_core::canonical::to_signed_bytes(payload).unwrap();
        let kid = home.state.keys.sidecar.verifying_key().thumbprint();
        let mut envelope = svc_core::dsse::Envelope::sign(&svc_core::dsse::payload_type("sidecar.v1"), &bytes, &[key]);
        envelope.signatures[0].keyid = kid;
        body["sidecar"] = serde_json::to_value(&envelope).unwrap();
        body
    };
    let served = svc_core::dsse::Envelope::from_value(&held.sidecar).unwrap();
    let mut v1: Value = serde_json::from_slice(&served.payload_bytes().unwrap()).unwrap();
    let version = v1.as_object_mut().unwrap().remove("ai_policy_version").unwrap();
    v1["terms_version"] = version;
    v1["v"] = json!(1);
    let answer = home.send(post(&format_1(&v1, &home.state.keys.sidecar))).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["seal"]["valid"], true, "{:?}", answer.body);
    assert_eq!(answer.body["seal"]["checks"]["scope"], "ok");
    let forger = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[9; 32]).unwrap();
    let forged = home.send(post(&format_1(&v1, &forger))).await;
    assert_eq!(
        (forged.body["seal"]["valid"].clone(), forged.body["seal"]["reason"].clone()),
        (json!(false), json!("signature_invalid"))
    );
    let mut elsewhere = v1.clone();
    elsewhere["origin"] = json!(svc_core::digest::sha256_prefixed(b"another record"));
    let moved = home.send(post(&format_1(&elsewhere, &home.state.keys.sidecar))).await;
    assert_eq!(moved.body["seal"]["reason"], "hash_mismatch", "{:?}", moved.body);
}

// rule: P4.2.19, P4.2.20, P4.2.21, P4.2.24, P1.24, P1.25, P1.26
#[tokio::test(flavor = "multi_thread")]
async fn verify_refuses_a_bare_id_or_hash_and_answers_any_origin() {
    let home = Home::start().await;
    let preflight = home
        .send(
            Request::options("/v1/verify")
                .header("host", AUTHORITY)
                .header("origin", "https://checker.example")
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");
    assert!(preflight.headers["access-control-allow-methods"].to_str().unwrap().contains("POST"));
    assert!(preflight.headers["access-control-allow-headers"].to_str().unwrap().contains("content-type"));
    assert!(preflight.headers.get("access-control-allow-credentials").is_none());
    let hash = format!("sha256:{}", "a".repeat(64));
    for (body, status) in [
        (json!({"record_id": "svc_x"}), 400),
        (json!({"hash": hash}), 400),
        (json!({}), 400),
        (json!({"record_base64": "e30=", "seal": {}, "key_events": "sometimes"}), 400),
        (json!({"record_base64": "not base64!", "seal": {}}), 400),
        (json!({"record_base64": "A".repeat(204_804), "seal": {}}), 413),
        (json!({"ad_item": {}}), 400),
        (json!({"ad_item": [1]}), 400),
        (json!({"ad_item": {"record_base64": "e30="}, "record_base64": "e30="}), 400),
    ] {
        let answer = home.send(post(&body)).await;
        assert_eq!(answer.status, status, "{body}: {:?}", answer.body);
        assert_eq!(answer.headers["content-type"], "application/problem+json");
        assert_eq!(answer.headers["access-control-allow-origin"], "*");
    }
    let big = Request::post("/v1/verify")
        .header("host", AUTHORITY)
        .header("content-length", (600 * 1024).to_string())
        .body(Body::from(vec![b' '; 600 * 1024]))
        .unwrap();
    assert_eq!(home.send(big).await.status, 413, "over the 512 KiB body limit, refused before reading");
}

// rule: P4.2.25, P4.2.31, P2.5.2
#[tokio::test(flavor = "multi_thread")]
async fn ai_policy_bits_are_checked_against_the_sealed_policy() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "l-1", "19.90")], "a").await.status, 200);
    let policy = svc_core::ai_policy::record_bytes(&["cite_as_source"], &["answer"], &["politics_elections"]);
    let config = &home.state.config;
    let passkey = svc_client::sealing::Passkey {
        key: &business.passkey,
        rp_id: &config.passkey_rp_id,
        origin: &config.passkey_origin,
    };
    let context = svc_client::sealing::SealContext { cert_id: business.cert_id.clone(), ai_policy_version: 0 };
    let policy_seal = passkey.seal_record(&context, "ai_policy", &policy, home.clock.now(), Some(1)).unwrap();
    let body = json!({"record_base64": svc_core::b64::std_encode(&policy), "seal": policy_seal});
    let sealed = home.admin("POST", &format!("/admin/businesses/{}/ai-policy", business.uuid), body).await;
    assert!(sealed.status < 300, "{:?}", sealed.body);
    let caller = home.caller("Reader").await;
    home.wait_indexed().await;
    let held = held(&home, &caller).await;
    let mut body = body_of(&held);
    body["ai_policy_bits"] = held.row["ai_policy_bits"].clone();
    body["ai_policy_record_base64"] = json!(svc_core::b64::std_encode(&policy));
    body["ai_policy_seal"] = serde_json::to_value(&policy_seal).unwrap();
    let answer = home.send(post(&body)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["ai_policy_bits"]["matches"], true, "{:?}", answer.body["ai_policy_bits"]);
    assert_eq!(answer.body["ai_policy_bits"]["blocked"], json!(["politics_elections"]));
    body["ai_policy_bits"]["use"] = json!(0);
    let changed = home.send(post(&body)).await;
    assert_eq!(changed.body["ai_policy_bits"]["reason"], "ai_policy_bits_mismatch");
    let mut bits_alone = body_of(&held);
    bits_alone["ai_policy_bits"] = held.row["ai_policy_bits"].clone();
    assert_eq!(home.send(post(&bits_alone)).await.status, 400, "bits need the sealed policy to be checked");
}

// rule: P4.2.9, P4.2.10, P4.2.45, P4.2.46, P4.2.47, P4.2.48, P4.2.50, P3.40, P7.15
#[tokio::test(flavor = "multi_thread")]
async fn the_verify_page_needs_the_hash_and_answers_one_404_for_unknown_and_mismatch() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "l-1", "19.90")], "a").await.status, 200);
    let caller = home.caller("Reader").await;
    home.wait_indexed().await;
    let held = held(&home, &caller).await;
    let record_id = held.row["record_id"].as_str().unwrap().to_owned();
    let origin = svc_core::digest::sha256_prefixed(&held.record);
    let get = |path: String| Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap();

    let page = home.send(get(format!("/v1/verify/{record_id}?origin={origin}&served_at=2026-11-22T10:00:30Z"))).await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(page.headers["access-control-allow-origin"], "*");
    let body = &page.body;
    assert_eq!(
        (body["v"].as_u64(), body["status"].as_str(), body["valid"].as_bool()),
        (Some(1), Some("current"), Some(true))
    );
    assert_eq!(body["adl_origin"], origin.as_str());
    assert_eq!(body["business"]["business_uuid"], business.uuid.as_str());
    assert_eq!(body["business"]["certificate"]["status"], "active");
    assert_eq!(body["version"]["generation"], 1);
    assert_eq!(body["version"]["sealed_under_cert_id"], business.cert_id.as_str());
    assert_eq!(body["checks"]["served_at"], "within");
    assert!(body["source_line"].as_str().unwrap().contains(&record_id));
    let envelope = svc_core::dsse::Envelope::from_value(&body["statement"]).unwrap();
    assert_eq!(envelope.payload_type, "application/vnd.service.verify-page.v1+json", "never verify-statement");
    home.state.keys.statement.verify(&envelope, &envelope.payload_type).expect("signed by the statement key");

    let html = home.send(get(format!("/v1/verify/{record_id}?origin={origin}&format=html"))).await;
    assert_eq!(html.headers["content-type"], "text/html; charset=utf-8");
    let text = String::from_utf8(html.bytes).unwrap();
    assert!(text.contains("Lumen") && text.contains("current") && !text.contains("<script"));

    // Unknown id and wrong hash: the same 404, byte for byte (bar `instance`).
    let other = format!("sha256:{}", "0".repeat(64));
    let mismatch = home.send(get(format!("/v1/verify/{record_id}?origin={other}"))).await;
    let unknown = home.send(get(format!("/v1/verify/svc_{}?origin={origin}", "1".repeat(24)))).await;
    assert_eq!((mismatch.status, unknown.status), (404, 404));
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("instance");
        v
    };
    assert_eq!(strip(mismatch.body), strip(unknown.body));
    assert_eq!(home.send(get(format!("/v1/verify/{record_id}"))).await.status, 400, "origin is required");
}

// A flood of verify-page requests for one page is judged once a minute
// while nothing changes (a write, or the next minute, makes it again), and
// one address is held to the verification rate.
#[tokio::test(flavor = "multi_thread")]
async fn the_verify_page_is_made_once_a_minute_and_its_callers_are_rate_limited() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.verify_per_second = 5).await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "l-1", "19.90")], "a").await.status, 200);
    let caller = home.caller("Reader").await;
    home.wait_indexed().await;
    let held = held(&home, &caller).await;
    let record_id = held.row["record_id"].as_str().unwrap().to_owned();
    let origin = svc_core::digest::sha256_prefixed(&held.record);
    let get = |from: &str| {
        let mut request = Request::get(format!("/v1/verify/{record_id}?origin={origin}"))
            .header("host", AUTHORITY)
            .body(Body::empty())
            .unwrap();
        let peer: std::net::SocketAddr = format!("{from}:40000").parse().unwrap();
        request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        request
    };
    let first = home.send(get("198.51.100.1")).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    // The same statement, byte for byte: made once, not signed again.
    for n in 2..=5 {
        assert_eq!(home.send(get("198.51.100.1")).await.bytes, first.bytes, "request {n}");
    }
    let slowed = home.send(get("198.51.100.1")).await;
    assert_eq!((slowed.status, slowed.body["code"].as_str()), (429, Some("rate_limited")));
    assert_eq!(home.send(get("198.51.100.2")).await.bytes, first.bytes, "another address, the same page");
    // A minute on, the page is made again (a new statement).
    home.clock.advance(60_000);
    let later = home.send(get("198.51.100.1")).await;
    assert_eq!(later.status, 200);
    assert_ne!(later.bytes, first.bytes);
}
