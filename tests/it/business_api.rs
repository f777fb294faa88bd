//! The business API through HTTP with signed requests: publish outcomes,
//! every batch refusal in the spec's order, resend, idempotency, caps before
//! parsing, background pushes, the price-shock hold, withdraw and reads.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::json;
use svc_core::keys::{Alg, SigningKey};
use svc_core::time::{MINUTE, SECOND};

async fn wait_settled(home: &Home, business: &Business, push_id: &str) -> serde_json::Value {
    for _ in 0..200 {
        let status =
            home.signed(&business.key, "GET", &format!("/v1/pushes/{push_id}"), b"", "svc-business-read", &[]).await;
        assert_eq!(status.status, 200, "{:?}", status.body);
        if status.body["completed_at"].is_string() {
            return status.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("push {push_id} never settled");
}

// rule: P3.12, P3.13, P4.1.7, P4.1.26, P2.5.1, P2.5.3, P2.5.4, P1.17, R2.1.5
#[tokio::test(flavor = "multi_thread")]
async fn inline_push_accepts_then_updates() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let records = vec![product("Lumio", "SKU-1", "19.99"), product("Lumio", "SKU-2", "5.00")];
    let first = home.publish(&b, &records, "k-1").await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert!(svc_core::ids::is_batch_id(first.body["batch_id"].as_str().unwrap()));
    assert_eq!(first.body["held"], false);
    let results = first.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["outcome"], "accepted");
    assert_eq!(results[0]["record_id"], svc_core::ids::product_id(&b.uuid, "SKU-1"));
    assert_eq!(results[0]["version"], 1);
    assert_eq!(results[0]["sha256"], svc_core::digest::sha256_prefixed(&records[0]));

    let again = home.publish(&b, &[product("Lumio", "SKU-1", "18.99")], "k-2").await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.body["results"][0]["outcome"], "updated");
    assert_eq!(again.body["results"][0]["record_id"], results[0]["record_id"]);
    assert_eq!(again.body["results"][0]["version"], 2);
}

// rule: P1.18, P2.5.5, P2.5.6, P2.5.21, P3.14, P7.12
#[tokio::test(flavor = "multi_thread")]
async fn one_bad_record_never_fails_the_batch() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let mut bad: serde_json::Value = serde_json::from_slice(&product("Lumio", "SKU-9", "1.00")).unwrap();
    bad["prices"][0]["amount"] = json!(1.0);
    bad["countries"] = json!(["FR", "XX"]);
    let records = vec![product("Lumio", "SKU-1", "2.00"), serde_json::to_vec(&bad).unwrap()];
    let answer = home.publish(&b, &records, "k-1").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["results"][0]["outcome"], "accepted");
    let rejected = &answer.body["results"][1];
    assert_eq!(rejected["outcome"], "rejected");
    let codes: Vec<(&str, &str)> = rejected["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["code"].as_str().unwrap(), e["pointer"].as_str().unwrap()))
        .collect();
    assert!(codes.contains(&("money_not_string", "/prices/0/amount")), "{codes:?}");
    assert!(codes.iter().any(|(_, p)| p.starts_with("/countries/1")), "{codes:?}");
}

// rule: P2.2.7, P3.30, P7.10
#[tokio::test(flavor = "multi_thread")]
async fn another_batch_under_the_same_seq_is_refused() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let records = vec![product("Lumio", "SKU-1", "2.00")];
    let seal = home.batch_seal(&b, &records, 5, 0, home.clock.now());
    let ok = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &records),
            "svc-push",
            &[("idempotency-key", "a")],
        )
        .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    let other = vec![product("Lumio", "SKU-2", "2.00")];
    let seal = home.batch_seal(&b, &other, 5, 0, home.clock.now());
    let refused = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &other),
            "svc-push",
            &[("idempotency-key", "b")],
        )
        .await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.body["code"], "seq_not_increasing");
    let seal = home.batch_seal(&b, &other, 4, 0, home.clock.now());
    let lower = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &other),
            "svc-push",
            &[("idempotency-key", "c")],
        )
        .await;
    assert_eq!(lower.body["code"], "seq_not_increasing");
}

// rule: P3.24, P3.25, P3.26, P3.27, P3.28, P2.2.8
#[tokio::test(flavor = "multi_thread")]
async fn exact_resend_resumes_even_after_the_window() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let records = vec![product("Lumio", "SKU-1", "2.00"), product("Lumio", "SKU-2", "3.00")];
    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let body = home.publish_body(&seal, &records);
    let first =
        home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "a")]).await;
    assert_eq!(first.status, 200);
    home.clock.advance(6 * MINUTE);
    let resend =
        home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "b")]).await;
    assert_eq!(resend.status, 200, "{:?}", resend.body);
    assert_eq!(resend.body, first.body, "the resend answer covers the whole batch with the first outcomes");
    let head = home.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-1")).unwrap().unwrap();
    assert_eq!(head.generation, 1, "nothing is published twice");
    // A new batch sealed more than five minutes ago is refused.
    let stale = home.batch_seal(&b, &records, 2, 0, home.clock.now().minus(5 * MINUTE + SECOND));
    let refused = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&stale, &records),
            "svc-push",
            &[("idempotency-key", "c")],
        )
        .await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (422, Some("seal_invalid")));
}

// rule: P4.1.1, P4.1.2, P4.1.3, P8.17
#[tokio::test(flavor = "multi_thread")]
async fn idempotency_key_replays_the_first_answer() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let records = vec![product("Lumio", "SKU-1", "2.00")];
    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let body = home.publish_body(&seal, &records);
    let first =
        home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "same")]).await;
    let replay =
        home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "same")]).await;
    assert_eq!((first.status, &first.bytes), (replay.status, &replay.bytes));
    let other = vec![product("Lumio", "SKU-2", "2.00")];
    let seal = home.batch_seal(&b, &other, 2, 0, home.clock.now());
    let reused = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &other),
            "svc-push",
            &[("idempotency-key", "same")],
        )
        .await;
    assert_eq!(reused.body["code"], "idempotency_key_reused");
    let missing = home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[]).await;
    assert_eq!((missing.status, missing.body["code"].as_str()), (400, Some("request_invalid")));
    let spaced =
        home.signed(&b.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "a b")]).await;
    assert_eq!(spaced.body["code"], "request_invalid");
}

// rule: P4.1.55, P4.1.56, P7.4
#[tokio::test(flavor = "multi_thread")]
async fn caps_are_judged_before_the_body_is_parsed() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(2)).await;
    let records = vec![product("Lumio", "SKU-1", "2.00"), product("Lumio", "SKU-2", "3.00")];
    assert_eq!(home.publish(&b, &records, "a").await.status, 200);
    // Not even JSON: refused for the cap, not for the body.
    let over = home
        .signed(&b.key, "POST", "/v1/publish/products", b"not json at all", "svc-push", &[("idempotency-key", "b")])
        .await;
    assert_eq!(over.status, 429, "{:?}", over.body);
    assert_eq!(over.body["code"], "rate_limited");
    let retry: u64 = over.headers["retry-after"].to_str().unwrap().parse().unwrap();
    // Usage is kept in minute buckets, so the wait may round up by one minute.
    assert!((3600..=3660).contains(&retry), "{retry}");
    home.clock.advance(61 * MINUTE);
    let later = home
        .signed(&b.key, "POST", "/v1/publish/products", b"not json at all", "svc-push", &[("idempotency-key", "c")])
        .await;
    assert_eq!(later.body["code"], "request_invalid", "after the window the body is parsed");
}

// rule: P4.1.57, P7.6
#[tokio::test(flavor = "multi_thread")]
async fn a_source_outside_the_allow_list_is_refused() {
    let home = Home::start().await;
    let mut scope = products_scope(1000);
    scope["source_ip_allow_list"] = json!(["10.0.0.0/8"]);
    let b = home.business("Lumio", scope).await;
    let answer = home.publish(&b, &[product("Lumio", "SKU-1", "2.00")], "a").await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (403, Some("source_not_allowed")));
}

// rule: P2.2.9, P2.2.10, P2.2.11, R2.9.5, P3.7, P4.1.28
#[tokio::test(flavor = "multi_thread")]
async fn seal_refusals_root_policy_version_and_certificate() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(1000)).await;
    let records = vec![product("Lumio", "SKU-1", "2.00")];
    // Merkle root over other records.
    let seal = home.batch_seal(&b, &[product("Lumio", "SKU-X", "2.00")], 1, 0, home.clock.now());
    let wrong_root = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &records),
            "svc-push",
            &[("idempotency-key", "a")],
        )
        .await;
    assert_eq!((wrong_root.status, wrong_root.body["code"].as_str()), (422, Some("seal_invalid")));
    // An AI policy version that is not the one in force names the one in force.
    let seal = home.batch_seal(&b, &records, 1, 3, home.clock.now());
    let wrong_policy = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &records),
            "svc-push",
            &[("idempotency-key", "b")],
        )
        .await;
    assert_eq!(wrong_policy.body["code"], "seal_invalid");
    assert_eq!(wrong_policy.body["ai_policy_version"], 0);
    // A withdrawal that took effect before sealed_at.
    let withdrawn = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/certificate-status", b.uuid),
            json!({"status": "withdrawn", "reason": "approval_reversed"}),
        )
        .await;
    assert_eq!(withdrawn.status, 201);
    home.clock.advance(SECOND);
    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let refused = home
        .signed(
            &b.key,
            "POST",
            "/v1/publish/products",
            &home.publish_body(&seal, &records),
            "svc-push",
            &[("idempotency-key", "c")],
        )
        .await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (422, Some("certificate_withdrawn")));
}

// rule: P4.1.27, P4.1.29, P2.5.7, P2.5.8, P2.5.14, P2.5.16, P2.5.17, P3.21, P3.22
#[tokio::test(flavor = "multi_thread")]
async fn large_pushes_run_in_the_background() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10_000)).await;
    let records: Vec<Vec<u8>> = (0..230).map(|i| product("Lumio", &format!("SKU-{i}"), "4.50")).collect();
    let answer = home.publish(&b, &records, "a").await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    let push_id = answer.body["push_id"].as_str().unwrap().to_owned();
    assert_eq!(answer.headers["location"], format!("/v1/pushes/{push_id}"));
    assert_eq!(answer.body["status_url"], format!("/v1/pushes/{push_id}"));
    assert_eq!(answer.body["batch_id"], push_id);
    assert_eq!(answer.body["mode"], "queued");
    assert_eq!(answer.body["progress"]["chunks"], 2);
    let settled = wait_settled(&home, &b, &push_id).await;
    assert_eq!(settled["state"], "complete");
    assert_eq!(settled["counts"]["accepted"], 230);
    assert!(settled.get("poll_after_seconds").is_none_or(|v| v.is_null()));
    assert_eq!(settled["results"].as_array().unwrap().len(), 100, "results are 100 per page");
    let cursor = settled["next_cursor"].as_str().unwrap();
    let page = home
        .signed(&b.key, "GET", &format!("/v1/pushes/{push_id}?cursor={cursor}"), b"", "svc-business-read", &[])
        .await;
    assert_eq!(page.body["results"][0]["leaf_index"], 100);
}

// rule: P3.15, P3.31, P3.32, P3.35, P8.14
#[tokio::test(flavor = "multi_thread")]
async fn price_shock_holds_the_push() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10_000)).await;
    let catalogue: Vec<Vec<u8>> = (0..20).map(|i| product("Lumio", &format!("SKU-{i}"), "10.00")).collect();
    assert_eq!(home.publish(&b, &catalogue, "a").await.status, 200);
    // 4 of 20 prices changed: not held.
    let four: Vec<Vec<u8>> = (0..4).map(|i| product("Lumio", &format!("SKU-{i}"), "11.00")).collect();
    let ok = home.publish(&b, &four, "b").await;
    assert_eq!(ok.body["held"], false);
    // 5 of 20 changed: held, stored but not published.
    let five: Vec<Vec<u8>> = (10..15).map(|i| product("Lumio", &format!("SKU-{i}"), "11.00")).collect();
    let held = home.publish(&b, &five, "c").await;
    assert_eq!(held.status, 200);
    assert_eq!(held.body["held"], true);
    assert_eq!(held.body["results"][0]["outcome"], "held");
    let head = home.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-10")).unwrap().unwrap();
    assert_eq!((head.generation, head.live_generation), (2, 1), "the held version is stored, the live one stays");
}

// rule: P1.4, P7.16
#[tokio::test(flavor = "multi_thread")]
async fn a_bare_delete_is_refused() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10)).await;
    let id = svc_core::ids::product_id(&b.uuid, "SKU-1");
    let answer = home.signed(&b.key, "DELETE", &format!("/v1/catalogue/{id}"), b"", "svc-push", &[]).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (405, Some("method_not_allowed")));
}

// rule: P2.3.1, P2.3.3, P2.3.4, P3.18, P4.1.8, P3.20
#[tokio::test(flavor = "multi_thread")]
async fn withdraw_takes_a_record_out_of_the_catalogue() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100)).await;
    assert_eq!(home.publish(&b, &[product("Lumio", "SKU-1", "2.00")], "a").await.status, 200);
    let id = svc_core::ids::product_id(&b.uuid, "SKU-1");
    let (answer, env) = home.end_record(&b, &id, "withdraw").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["action"], "withdraw");
    let catalogue = home.signed(&b.key, "GET", "/v1/catalogue", b"", "svc-business-read", &[]).await;
    assert_eq!(catalogue.body["entries"].as_array().unwrap().len(), 0);
    let head = home.state.registry.record_head(&id).unwrap().unwrap();
    assert_eq!(head.state, svc_store::model::RecordState::Withdrawn);
    // The withdrawal's seal is a leaf of the transparency log once sequenced.
    assert_eq!(home.admin("POST", "/admin/log/sequence", json!({})).await.status, 200);
    let leaf = svc_core::merkle::leaf_hash(&svc_core::tlog::seal_leaf(&env));
    assert!(home.state.log.find(&leaf).unwrap().is_some(), "the withdrawal is logged");
}

// rule: P4.1.10, P4.1.11, P4.1.12, P4.1.17, P2.5.27, P2.5.28, P2.5.29, P2.5.30, P2.5.31, P4.1.35
#[tokio::test(flavor = "multi_thread")]
async fn reads_catalogue_record_attempts_and_seal_context() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100)).await;
    let mut bad: serde_json::Value = serde_json::from_slice(&product("Lumio", "SKU-2", "1.00")).unwrap();
    bad["availability"] = json!("sometimes");
    assert_eq!(
        home.publish(&b, &[product("Lumio", "SKU-1", "2.00"), serde_json::to_vec(&bad).unwrap()], "a").await.status,
        200
    );
    let read = |path: &'static str| home.signed(&b.key, "GET", path, b"", "svc-business-read", &[]);
    let catalogue = read("/v1/catalogue?type=products").await;
    assert_eq!(catalogue.body["entries"][0]["business_product_id"], "SKU-1");
    assert_eq!(catalogue.body["entries"][0]["source"], "api");
    let record = read("/v1/catalogue/SKU-1").await;
    assert_eq!(record.status, 200, "{:?}", record.body);
    assert_eq!(record.body["record_id"], svc_core::ids::product_id(&b.uuid, "SKU-1"));
    assert_eq!(
        svc_core::b64::std_decode(record.body["record"].as_str().unwrap()).unwrap(),
        product("Lumio", "SKU-1", "2.00")
    );
    assert!(record.body["sidecar"]["payloadType"].as_str().unwrap().ends_with("sidecar.v2+json"));
    let attempts = read("/v1/push-attempts").await;
    let rows = attempts.body["attempts"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["outcome"], "rejected");
    assert_eq!(rows[1]["reason"], "field_invalid");
    let rejected_only = read("/v1/push-attempts?status=rejected").await;
    assert_eq!(rejected_only.body["attempts"].as_array().unwrap().len(), 1);
    let context = read("/v1/seal-context").await;
    assert_eq!(context.body["cert_id"], b.cert_id.as_str());
    assert_eq!(context.body["certificate_status"], "active");
    assert_eq!(
        (context.body["ai_policy_version"].as_u64(), context.body["next_ai_policy_version"].as_u64()),
        (Some(0), Some(1))
    );
}

// rule: P1.10, P5.1, R5.24, R5.33, P7.3, P5.4
#[tokio::test(flavor = "multi_thread")]
async fn unsigned_or_unknown_keys_are_refused() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100)).await;
    let unsigned = axum::http::Request::builder()
        .method("GET")
        .uri("/v1/seal-context")
        .header("host", AUTHORITY)
        .body(axum::body::Body::empty())
        .unwrap();
    let answer = home.send(unsigned).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (401, Some("signature_missing")));
    let stranger = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[9; 32]).unwrap();
    let unknown = home.signed(&stranger, "GET", "/v1/seal-context", b"", "svc-business-read", &[]).await;
    assert_eq!((unknown.status, unknown.body["code"].as_str()), (401, Some("key_unknown")));
    // A read key tag on a write route is not this route's signature.
    let wrong_tag = home
        .signed(&b.key, "POST", "/v1/publish/products", b"{}", "svc-business-read", &[("idempotency-key", "a")])
        .await;
    assert_eq!(wrong_tag.body["code"], "signature_invalid");
}

/// Registers a fresh integration key of `business` through the admin API.
async fn register_key(home: &Home, business_uuid: &str, seed: &str) -> (SigningKey, serde_json::Value) {
    let key = SigningKey::from_seed(Alg::Ed25519, &svc_core::digest::sha256(seed.as_bytes())).unwrap();
    let reg = home
        .admin(
            "POST",
            &format!("/admin/businesses/{business_uuid}/keys"),
            json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}),
        )
        .await;
    assert_eq!(reg.status, 201, "{:?}", reg.body);
    (key, reg.body)
}

// rule: P4.1.4, P4.1.5, P4.1.6, P5.10, R5.40
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_key_is_introduced_by_its_grant_and_gets_a_sandbox_mandate() {
    let home = Home::start_sandbox().await;
    let created = home
        .admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"]}))
        .await;
    let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
    let (key, reg) = register_key(&home, &uuid, "sandbox key").await;
    let grant = reg["sandbox_key_grant"].as_str().unwrap().to_owned();
    assert!(grant.starts_with("svc_sbxk1."));
    assert!(reg["sandbox_bearer_token"].is_string());

    let unseen = home.signed(&key, "GET", "/v1/seal-context", b"", "svc-business-read", &[]).await;
    assert_eq!((unseen.status, unseen.body["code"].as_str()), (401, Some("key_unknown")));
    let other_grant = svc_core::sandbox::grant_for("someone-else");
    let wrong = home
        .signed(&key, "GET", "/v1/seal-context", b"", "svc-business-read", &[("svc-sandbox-key", &other_grant)])
        .await;
    assert_eq!(wrong.status, 401);
    let first =
        home.signed(&key, "GET", "/v1/seal-context", b"", "svc-business-read", &[("svc-sandbox-key", &grant)]).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let later = home.signed(&key, "GET", "/v1/seal-context", b"", "svc-business-read", &[]).await;
    assert_eq!(later.status, 200, "introduced once, known after");

    // The sandbox mandate lets the key publish with no passkey ceremony.
    let b = Business {
        uuid: uuid.clone(),
        cert_id: created.body["cert_id"].as_str().unwrap().to_owned(),
        key_id: key.verifying_key().thumbprint(),
        key: key.clone(),
        passkey: key.clone(),
        seq: std::sync::atomic::AtomicU64::new(1),
    };
    let published = home.publish(&b, &[product("Lumio", "SKU-1", "1.00")], "k-1").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    assert_eq!(published.body["results"][0]["outcome"], "accepted");
}

// rule: P5.11, P5.12, R5.43
#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_bearer_token_lasts_an_hour_and_production_never_takes_one() {
    let home = Home::start_sandbox().await;
    let created = home.admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR"})).await;
    let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
    let (_, reg) = register_key(&home, &uuid, "bearer key").await;
    let token = reg["sandbox_bearer_token"].as_str().unwrap().to_owned();
    let bearer = |token: String| {
        Request::builder()
            .uri("/v1/seal-context")
            .header("host", AUTHORITY)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    let ok = home.send(bearer(token.clone())).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    assert_eq!(ok.body["business_uuid"], uuid.as_str());
    assert_eq!(home.send(bearer("not-the-token".into())).await.status, 401);
    home.clock.advance(61 * MINUTE);
    assert_eq!(home.send(bearer(token)).await.status, 401, "one hour only");

    let production = Home::start().await;
    let p = production.business("Lumio", products_scope(10)).await;
    let refused = production.send(bearer("anything".into())).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("signature_missing")));
    // Production ignores the grant header: its keys need none.
    let read = production
        .signed(&p.key, "GET", "/v1/seal-context", b"", "svc-business-read", &[("svc-sandbox-key", "svc_sbxk1.x")])
        .await;
    assert_eq!(read.status, 200);
    let (_, production_reg) = register_key(&production, &p.uuid, "production key").await;
    assert!(production_reg.get("sandbox_key_grant").is_none() && production_reg.get("sandbox_bearer_token").is_none());
}

// rule: P2.6.24, P2.6.26, P2.6.28, P2.6.29
#[tokio::test(flavor = "multi_thread")]
async fn every_key_gets_a_dual_signed_custody_statement_and_restating_adds_one() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10)).await;
    let statements = home.state.registry.custody_statements(&b.uuid).unwrap();
    assert_eq!(statements.len(), 2, "the integration key and the passkey");
    let first = statements.iter().find(|c| c.key_id == b.key_id).unwrap();
    assert_eq!(first.custody, svc_core::custody::Custody::OwnKey);
    let envelope = svc_core::dsse::Envelope::parse(&first.envelope).unwrap();
    let payload = home.state.keys.issuance.verify(&envelope, &svc_core::dsse::payload_type("key-custody.v1")).unwrap();
    assert_eq!(svc_core::digest::sha256_prefixed(&payload), first.statement_id);

    let restated = home.admin("POST", &format!("/admin/keys/{}/custody", b.key_id), json!({"custody": "hosted"})).await;
    assert_eq!(restated.status, 201, "{:?}", restated.body);
    let statements = home.state.registry.custody_statements(&b.uuid).unwrap();
    assert_eq!(statements.len(), 3, "re-issued, never edited");
    let of_key: Vec<_> = statements.iter().filter(|c| c.key_id == b.key_id).collect();
    let pairs: Vec<_> = of_key.iter().map(|c| (c.effective_from, c.issued_at)).collect();
    let now = svc_core::custody::in_force(&pairs, home.clock.now()).unwrap();
    assert_eq!(of_key[now].custody, svc_core::custody::Custody::Hosted);
    let bad = home.admin("POST", &format!("/admin/keys/{}/custody", b.key_id), json!({"custody": "shared"})).await;
    assert_eq!(bad.status, 400);
}

/// An owner's (or another person's) passkey confirmation of a held push.
fn release(
    home: &Home,
    passkey: &svc_core::keys::SigningKey,
    push_id: &str,
    business: &str,
    decision: &str,
    at: svc_core::time::UnixMs,
) -> serde_json::Value {
    let config = &home.state.config;
    let person =
        svc_client::sealing::Passkey { key: passkey, rp_id: &config.passkey_rp_id, origin: &config.passkey_origin };
    json!({"envelope": person.seal_release(push_id, business, decision, at).unwrap()})
}

// rule: P3.15, P3.35
#[tokio::test(flavor = "multi_thread")]
async fn an_owner_releases_or_discards_a_held_push() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10_000)).await;
    let catalogue: Vec<Vec<u8>> = (0..20).map(|i| product("Lumio", &format!("SKU-{i}"), "10.00")).collect();
    assert_eq!(home.publish(&b, &catalogue, "a").await.status, 200);
    let five: Vec<Vec<u8>> = (10..15).map(|i| product("Lumio", &format!("SKU-{i}"), "17.00")).collect();
    let held = home.publish(&b, &five, "b").await;
    assert_eq!(held.body["held"], true);
    let push_id = held.body["batch_id"].as_str().unwrap().to_owned();
    let path = format!("/admin/pushes/{push_id}/release");

    // A developer's passkey cannot release it, nor can a stale confirmation.
    let developer = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Es256, &[77; 32]).unwrap();
    let reg = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/keys", b.uuid),
            json!({"jwk": developer.verifying_key().to_jwk(), "purpose": "sealing", "role": "developer"}),
        )
        .await;
    assert_eq!(reg.status, 201, "{:?}", reg.body);
    let now = home.clock.now();
    let by_developer = home.admin("POST", &path, release(&home, &developer, &push_id, &b.uuid, "publish", now)).await;
    assert_eq!(
        (by_developer.status, by_developer.body["code"].as_str()),
        (422, Some("seal_invalid")),
        "{:?}",
        by_developer.body
    );
    let stale = home
        .admin("POST", &path, release(&home, &b.passkey, &push_id, &b.uuid, "publish", now.minus(6 * 60_000)))
        .await;
    assert_eq!(stale.body["code"], "seal_invalid");
    let other_push = home
        .admin("POST", &path, release(&home, &b.passkey, "bat_000000000000000000000000", &b.uuid, "publish", now))
        .await;
    assert_eq!(other_push.body["code"], "seal_invalid");

    let released = home.admin("POST", &path, release(&home, &b.passkey, &push_id, &b.uuid, "publish", now)).await;
    assert_eq!(released.status, 200, "{:?}", released.body);
    assert_eq!((released.body["state"].as_str(), released.body["held"].as_bool()), (Some("complete"), Some(false)));
    assert_eq!(released.body["counts"]["updated"], 5);
    assert_eq!(released.body["counts"]["held"], 0);
    let head = home.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-10")).unwrap().unwrap();
    assert_eq!((head.generation, head.live_generation), (2, 2), "the held version is live");
    assert_eq!(head.prices[0].2, 170_000, "at its new price");
    let status = home.signed(&b.key, "GET", &format!("/v1/pushes/{push_id}"), b"", "svc-business-read", &[]).await;
    assert_eq!(status.body["state"], "complete");
    assert_eq!(status.body["results"][0]["outcome"], "updated");
    let again = home.admin("POST", &path, release(&home, &b.passkey, &push_id, &b.uuid, "publish", now)).await;
    assert_eq!(again.status, 400, "only a held push is released");

    // Discarded: the push ends and the held versions are never served.
    let six: Vec<Vec<u8>> = (0..6).map(|i| product("Lumio", &format!("SKU-{i}"), "3.00")).collect();
    let held = home.publish(&b, &six, "c").await;
    assert_eq!(held.body["held"], true);
    let push_id = held.body["batch_id"].as_str().unwrap().to_owned();
    let discarded = home
        .admin(
            "POST",
            &format!("/admin/pushes/{push_id}/release"),
            release(&home, &b.passkey, &push_id, &b.uuid, "discard", now),
        )
        .await;
    assert_eq!(discarded.body["state"], "complete");
    assert_eq!(discarded.body["counts"]["held"], 6);
    let head = home.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-0")).unwrap().unwrap();
    assert_eq!(head.live_generation, 1, "the original stays live");
}

/// The `freshness_expectation` of the first row a search of France's products serves.
async fn served_freshness(home: &Home, caller: &Caller) -> serde_json::Value {
    let every =
        json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc"});
    let answer = home.search(caller, "/v1/search", every).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["rows"][0].get("freshness_expectation").cloned().unwrap_or(serde_json::Value::Null)
}

// rule: R2.4.8, R2.4.15, R2.4.18, R2.4.19, R2.4.22
#[tokio::test(flavor = "multi_thread")]
async fn a_declared_freshness_expectation_is_served_on_every_row_of_the_type() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100)).await;
    assert_eq!(home.publish(&b, &[product("Lumio", "SKU-1", "2.00")], "a").await.status, 200);
    home.wait_indexed().await;
    let caller = home.caller("Reader AI").await;
    assert_eq!(served_freshness(&home, &caller).await, serde_json::Value::Null, "none declared, none served");

    let declare = |body: serde_json::Value, kind: &'static str| {
        let body = serde_json::to_vec(&body).unwrap();
        let path = format!("/v1/freshness-expectations/{kind}");
        let key = &b.key;
        let home = &home;
        async move { home.signed(key, "PUT", &path, &body, "svc-push", &[]).await }
    };
    let daily = declare(json!({"cadence": "daily"}), "products").await;
    assert_eq!(daily.status, 200, "{:?}", daily.body);
    assert_eq!(daily.body, json!({"record_type": "products", "freshness_expectation": {"cadence": "daily"}}));
    home.wait_indexed().await;
    assert_eq!(served_freshness(&home, &caller).await, json!({"cadence": "daily"}));

    let every_six = declare(json!({"cadence": "interval", "interval_hours": 6}), "products").await;
    assert_eq!(every_six.status, 200, "{:?}", every_six.body);
    assert_eq!(served_freshness(&home, &caller).await, json!({"cadence": "interval", "interval_hours": 6}));
    let listed = home.signed(&b.key, "GET", "/v1/freshness-expectations", b"", "svc-business-read", &[]).await;
    assert_eq!(listed.body["freshness_expectations"].as_array().unwrap().len(), 1, "{:?}", listed.body);

    // Refused plainly, and nothing changes.
    for (body, kind, status, code) in [
        (json!({"cadence": "interval", "interval_hours": 0}), "products", 400, "request_invalid"),
        (json!({"cadence": "fortnightly"}), "products", 400, "request_invalid"),
        (json!({"cadence": "daily", "extra": 1}), "products", 400, "request_invalid"),
        (json!({"cadence": "daily"}), "ai_policy", 400, "request_invalid"),
        (json!({"cadence": "daily"}), "events", 403, "out_of_scope"),
    ] {
        let refused = declare(body.clone(), kind).await;
        assert_eq!(
            (refused.status, refused.body["code"].as_str()),
            (status, Some(code)),
            "{body} {kind}: {:?}",
            refused.body
        );
    }
    assert_eq!(served_freshness(&home, &caller).await, json!({"cadence": "interval", "interval_hours": 6}));

    let cleared = home.signed(&b.key, "DELETE", "/v1/freshness-expectations/products", b"", "svc-push", &[]).await;
    assert_eq!(cleared.status, 200, "{:?}", cleared.body);
    assert_eq!(served_freshness(&home, &caller).await, serde_json::Value::Null, "withdrawn, no longer served");
}

// rule: P4.1.57, P7.6
#[tokio::test(flavor = "multi_thread")]
async fn an_as_entry_is_matched_from_the_operators_table_and_refused_without_one() {
    // Without a table an AS entry cannot be matched: the mandate is refused when sealed.
    let plain = Home::start().await;
    let b = plain.business("Lumio", products_scope(1000)).await;
    let mut scope = products_scope(1000);
    scope["source_ip_allow_list"] = json!(["AS64500"]);
    let refused = plain.seal_mandate(&b, scope.clone(), "m-2").await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", refused.body);
    assert!(refused.body["detail"].as_str().unwrap().contains("IP-to-AS table"), "{:?}", refused.body);

    // With one, the request's address (127.0.0.1 here) is in AS64500.
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("ip-to-as.txt");
    std::fs::write(&table, "# test table\n127.0.0.0/8 AS64500\n10.0.0.0/8 AS64501\n").unwrap();
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.ip_to_as_file = Some(table.clone())).await;
    let inside = home.business("Lumio", scope).await;
    let answer = home.publish(&inside, &[product("Lumio", "SKU-1", "2.00")], "a").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let mut other = products_scope(1000);
    other["source_ip_allow_list"] = json!(["AS64501"]);
    let outside = home.business("Brisa", other).await;
    let answer = home.publish(&outside, &[product("Brisa", "SKU-1", "2.00")], "a").await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (403, Some("source_not_allowed")));

    // A table that does not read stops the start, naming the line.
    std::fs::write(&table, "127.0.0.0/8 AS64500\n127.0.0.0 nonsense\n").unwrap();
    let start_dir = tempfile::tempdir().unwrap();
    let mut config = svc_node::config::NodeConfig::local_home(
        start_dir.path().to_path_buf(),
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.1:0".parse().unwrap(),
    );
    config.ip_to_as_file = Some(table);
    let clock = std::sync::Arc::new(svc_clock::SystemClock);
    let Err(failed) = svc_node::region::start(config, clock).await else { panic!("a bad table must stop the start") };
    assert!(failed.to_string().contains("line 2"), "{failed}");
}
