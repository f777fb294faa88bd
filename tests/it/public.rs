//! The unauthenticated public routes: the signed key set, cacheable and open
//! to any origin (publishing 4.2).

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use svc_core::keyset::{Purpose, RootAnchors, verify};

fn get(path: &str) -> Request<Body> {
    Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap()
}

// rule: P2.6.33, P2.6.34, P2.6.35, P2.6.36, P2.6.37, P1.21, P1.22, P1.25, P1.26, P1.27
#[tokio::test(flavor = "multi_thread")]
async fn the_key_set_is_root_signed_cacheable_and_open_to_any_origin() {
    let home = Home::start().await;
    let answer = home.send(get("/.well-known/keys")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["access-control-allow-origin"], "*");
    assert!(answer.headers.get("access-control-allow-credentials").is_none());
    assert_eq!(answer.headers["cache-control"], "public, max-age=300");
    let etag = answer.headers["etag"].to_str().unwrap().to_owned();

    let keys = &home.state.keys;
    let anchors = RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = verify(&answer.body, &anchors).expect("signed by the pinned root");
    let receipt_kid = keys.receipt.verifying_key().thumbprint();
    let entry = set.keys.iter().find(|e| e.purpose == Purpose::Receipt).unwrap();
    assert_eq!((entry.kid.as_str(), entry.region.as_deref()), (receipt_kid.as_str(), Some("home")));
    for purpose in [
        Purpose::Root,
        Purpose::Issuance,
        Purpose::Statement,
        Purpose::Projection,
        Purpose::Sidecar,
        Purpose::LogCheckpoint,
    ] {
        assert!(set.keys.iter().any(|e| e.purpose == purpose), "{purpose:?} listed");
    }
    assert_eq!(set.keys.iter().filter(|e| e.purpose == Purpose::Root).count(), 2, "P-256 and ML-DSA-65");
    assert!(set.key(Purpose::Receipt, &receipt_kid, home.clock.now()).is_some(), "valid now");

    // A client holding the same version gets 304, and a preflight is allowed.
    let mut conditional = get("/.well-known/keys");
    conditional.headers_mut().insert("if-none-match", etag.parse().unwrap());
    let unchanged = home.send(conditional).await;
    assert_eq!(unchanged.status, 304);
    assert!(unchanged.bytes.is_empty());
    let preflight = home
        .send(
            Request::options("/.well-known/keys")
                .header("host", AUTHORITY)
                .header("origin", "https://example.org")
                .header("access-control-request-method", "GET")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");
}

fn get_accept(path: &str, accept: &str) -> Request<Body> {
    Request::get(path).header("host", AUTHORITY).header("accept", accept).body(Body::empty()).unwrap()
}

// rule: P2.6.1, P2.6.2, P2.6.3, P2.6.4, P2.6.5, P2.6.6, P2.6.7, P2.6.8, P2.6.9, P2.6.10, P2.6.12, P3.11
// rule: P4.2.1, P4.2.2, P4.2.3, P4.2.4, P7.14, P5.15
#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_is_served_as_json_and_as_a_self_contained_page_with_its_history() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(100)).await;
    let path = format!("/v1/certificates/{}", business.uuid);
    let first = home.send(get(&path)).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(first.body["subject"], "business");
    assert_eq!(first.body["status"], "active");
    assert_eq!(first.body["cert_id"], business.cert_id.as_str());
    assert!(first.body["statement"].as_str().unwrap().contains("was verified by the service on"));
    assert_eq!(first.body["history"], serde_json::json!([]));
    assert!(first.body.get("status_reason").is_none());
    // The envelope is the certificate: dual-signed by the issuance key, its id the hash of its payload.
    let envelope = svc_core::dsse::Envelope::from_value(&first.body["certificate"]).unwrap();
    let payload = home.state.keys.issuance.verify(&envelope, "application/vnd.service.certificate.v1+json").unwrap();
    assert_eq!(svc_core::digest::sha256_prefixed(&payload), business.cert_id);
    let payload: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!((payload["legal_name"].as_str(), payload["country"].as_str()), (Some("Lumen"), Some("FR")));
    for absent in ["trading_name", "verification_method", "expires_at"] {
        assert!(payload.get(absent).is_none(), "{absent}");
    }

    // Withdrawn: a new issuance with its reason; the first is history.
    let changed = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/certificate-status", business.uuid),
            serde_json::json!({"status": "withdrawn", "reason": "approval_reversed"}),
        )
        .await;
    assert_eq!(changed.status, 201, "{:?}", changed.body);
    home.clock.advance(1_000);
    let now = home.send(get(&path)).await;
    assert_eq!(now.body["status"], "withdrawn");
    assert_eq!(now.body["status_reason"], "approval_reversed");
    assert_ne!(now.body["cert_id"], first.body["cert_id"], "a status change is a new issuance");
    assert_eq!(now.body["history"][0]["cert_id"], first.body["cert_id"]);
    assert_eq!(now.body["history"][0]["status"], "active");

    // The page: by Accept or by ?format=html, with no script and nothing loaded.
    for request in [get_accept(&path, "text/html,application/xhtml+xml"), get(&format!("{path}?format=html"))] {
        let page = home.send(request).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.headers["content-type"], "text/html; charset=utf-8");
        assert!(page.headers["vary"].to_str().unwrap().contains("accept"));
        assert!(page.headers["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
        let html = String::from_utf8(page.bytes).unwrap();
        assert!(html.contains("Lumen") && html.contains("withdrawn") && html.contains("approval_reversed"));
        assert!(html.contains(now.body["statement"].as_str().unwrap()));
        assert!(!html.contains("<script") && !html.contains(" src=") && !html.contains("<link"));
    }
    // Unknown: a problem for programs, a page for browsers.
    let unknown = "/v1/certificates/00000000-0000-4000-8000-000000000000";
    let missing = home.send(get(unknown)).await;
    assert_eq!((missing.status, missing.body["code"].as_str()), (404, Some("not_found")));
    let missing_page = home.send(get_accept(unknown, "text/html")).await;
    assert_eq!(missing_page.status, 404);
    assert!(String::from_utf8(missing_page.bytes).unwrap().contains("<h1>Not found</h1>"));
    assert_eq!(home.send(get(&format!("{path}?format=pdf"))).await.status, 400);
}

// rule: P2.6.13, P2.6.14, P2.6.15, P2.6.16, P2.6.17, P2.6.18, P2.6.19, P2.6.20, P2.6.21, P4.2.5, P4.2.6
// rule: P2.6.22, P2.6.23, P2.6.24, P2.6.25, P2.6.26, P2.6.27, P2.6.31, P2.6.32, P4.2.7
#[tokio::test(flavor = "multi_thread")]
async fn business_keys_and_custody_are_signed_statements_and_an_ai_company_gets_404() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(100)).await;
    let keys = home.send(get(&format!("/v1/certificates/{}/keys", business.uuid))).await;
    assert_eq!(keys.status, 200, "{:?}", keys.body);
    assert_eq!(keys.body["uuid"], business.uuid.as_str());
    assert_eq!(keys.body["cert_id"], business.cert_id.as_str());
    let listed = keys.body["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    let integration = listed.iter().find(|k| k["purpose"] == "integration").unwrap();
    assert_eq!(
        (integration["key_id"].as_str(), integration["kind"].as_str()),
        (Some(business.key_id.as_str()), Some("ed25519"))
    );
    assert!(integration["cose"].is_null());
    let passkey = listed.iter().find(|k| k["purpose"] == "sealing").unwrap();
    assert_eq!(passkey["kind"], "passkey");
    let cose = svc_core::b64::std_decode(passkey["cose"].as_str().unwrap()).unwrap();
    assert_eq!((cose.len(), cose[0]), (77, 0xa5), "a COSE_Key map of five entries");
    for key in listed {
        let jwk: svc_core::keys::Jwk = serde_json::from_value(key["jwk"].clone()).unwrap();
        assert_eq!(key["key_id"], jwk.thumbprint().as_str(), "the id is the RFC 7638 thumbprint");
        assert!(key.get("role").is_none() && key.get("registered_by").is_none(), "nothing names a person");
    }
    // The signed statement is the part to trust: it holds the same keys.
    let signed = svc_core::dsse::Envelope::from_value(&keys.body["signed"]).unwrap();
    let payload = home.state.keys.statement.verify(&signed, "application/vnd.service.business-keys.v1+json").unwrap();
    let payload: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(payload["v"], 1);
    assert_eq!(payload["keys"], keys.body["keys"]);
    assert_eq!(payload["uuid"], business.uuid.as_str());

    let custody = home.send(get(&format!("/v1/certificates/{}/key-custody", business.uuid))).await;
    assert_eq!(custody.status, 200, "{:?}", custody.body);
    let statements = custody.body["statements"].as_array().unwrap();
    assert_eq!(statements.len(), 2);
    assert!(statements[0]["issued_at"].as_str() >= statements[1]["issued_at"].as_str(), "newest first");
    for s in statements {
        assert_eq!(s["custody"], "self");
        let envelope = svc_core::dsse::Envelope::from_value(&s["statement"]).unwrap();
        let bytes = home.state.keys.issuance.verify(&envelope, "application/vnd.service.key-custody.v1+json").unwrap();
        assert_eq!(s["statement_id"], svc_core::digest::sha256_prefixed(&bytes).as_str());
    }
    assert_eq!(custody.body["unstated"], serde_json::json!([]));

    // An AI company's uuid is not a business's: it has a certificate of its
    // own (the key directory links it), and no business keys or custody.
    let company = home.caller("Reader").await;
    let certificate = home.send(get(&format!("/v1/certificates/{}", company.company_uuid))).await;
    assert_eq!((certificate.status, certificate.body["subject"].as_str()), (200, Some("ai_company")));
    for path in [
        format!("/v1/certificates/{}/keys", company.company_uuid),
        format!("/v1/certificates/{}/key-custody", company.company_uuid),
    ] {
        let answer = home.send(get(&path)).await;
        assert_eq!((answer.status, answer.body["code"].as_str()), (404, Some("not_found")), "{path}");
        assert_eq!(answer.headers["access-control-allow-origin"], "*");
    }
}

// rule: P2.6.42, P2.6.43, P2.6.44, P2.6.47, P4.2.12, P4.2.13
#[tokio::test(flavor = "multi_thread")]
async fn projections_and_the_ai_policy_key_are_public_and_cacheable_for_a_day() {
    let home = Home::start().await;
    let spec = home.send(get("/v1/projections/products/1")).await;
    assert_eq!(spec.status, 200);
    assert_eq!(spec.body["version"], "products/1");
    let mut unhashed = spec.body.clone();
    unhashed.as_object_mut().unwrap().remove("sha256");
    assert_eq!(
        spec.body["sha256"],
        svc_core::digest::sha256_prefixed(&svc_core::canonical::canonicalize(&unhashed)).as_str(),
        "the RFC 8785 hash is every row's adl_proj"
    );
    assert_eq!(spec.headers["cache-control"], "public, max-age=86400");
    assert_eq!(home.send(get("/v1/projections/products/9")).await.status, 404);
    assert_eq!(home.send(get("/v1/projections/nothing/1")).await.status, 404);
    let key = home.send(get("/v1/ai-policy-key")).await;
    assert_eq!(key.status, 200);
    assert_eq!(key.headers["cache-control"], "public, max-age=86400");
    for member in ["key_version", "current_ai_policy_schema", "rule", "groups", "blocked"] {
        assert!(key.body.get(member).is_some(), "{member}");
    }
}

// rule: P2.6.34, P2.6.37, P5.14
#[tokio::test(flavor = "multi_thread")]
async fn a_service_key_can_be_retired_or_marked_compromised_in_the_signed_key_set() {
    let home = Home::start().await;
    let keys = &home.state.keys;
    let projection = keys.projection.verifying_key().thumbprint();
    let sidecar = keys.sidecar.verifying_key().thumbprint();
    let at = |ms: i64| svc_core::time::UnixMs(START.0 + ms).to_rfc3339_secs();
    // Two minutes after the keys were drawn, one is found stolen since the
    // first. A key that signs now cannot be ended: its purpose rotates first.
    home.clock.advance(120_000);
    let signing = home
        .admin("POST", &format!("/admin/service-keys/{sidecar}/end"), serde_json::json!({"valid_until": at(0)}))
        .await;
    assert_eq!(signing.status, 400, "{:?}", signing.body);
    for purpose in ["sidecar", "projection"] {
        let rotated = home.admin("POST", "/admin/service-keys/rotate", serde_json::json!({"purpose": purpose})).await;
        assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    }
    let retired = home
        .admin("POST", &format!("/admin/service-keys/{sidecar}/end"), serde_json::json!({"valid_until": at(3_600_000)}))
        .await;
    assert_eq!(retired.status, 200, "{:?}", retired.body);
    let compromised = home
        .admin(
            "POST",
            &format!("/admin/service-keys/{projection}/end"),
            serde_json::json!({"compromised_at": at(60_000)}),
        )
        .await;
    assert_eq!(compromised.status, 200, "{:?}", compromised.body);
    let root = keys.root.classical.verifying_key().thumbprint();
    let refused =
        home.admin("POST", &format!("/admin/service-keys/{root}/end"), serde_json::json!({"valid_until": at(0)})).await;
    assert_eq!(refused.status, 400, "a root is not ended by itself");
    let unknown = home.admin("POST", "/admin/service-keys/nope/end", serde_json::json!({"valid_until": at(0)})).await;
    assert_eq!(unknown.status, 404);

    home.clock.advance(1_000);
    let answer = home.send(get("/.well-known/keys")).await;
    let anchors = RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = verify(&answer.body, &anchors).expect("re-signed by the root");
    let entry = |kid: &str| set.keys.iter().find(|e| e.kid == kid).unwrap().clone();
    assert_eq!(entry(&projection).compromised_at, Some(svc_core::time::UnixMs(START.0 + 60_000)));
    assert_eq!(entry(&sidecar).valid_until, Some(svc_core::time::UnixMs(START.0 + 3_600_000)));
    let t = |ms: i64| svc_core::time::UnixMs(START.0 + ms);
    assert!(set.key(Purpose::Projection, &projection, t(59_999)).is_some(), "what it signed before stands");
    assert!(set.key(Purpose::Projection, &projection, t(60_000)).is_none(), "nothing from the compromise on");
    assert!(set.key(Purpose::Sidecar, &sidecar, t(3_599_999)).is_some());
    assert!(set.key(Purpose::Sidecar, &sidecar, t(3_600_000)).is_none());
}

// rule: P2.6.34, P2.6.37, P5.13
#[tokio::test(flavor = "multi_thread")]
async fn home_rotates_its_own_keys_with_an_overlap_and_keeps_the_successor_across_a_restart() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    let first = home.state.keys.projection.verifying_key().thumbprint();
    let rotated = home.admin("POST", "/admin/service-keys/rotate", serde_json::json!({"purpose": "projection"})).await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let second = rotated.body["key_ids"][0].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    let statement = home.admin("POST", "/admin/service-keys/rotate", serde_json::json!({"purpose": "statement"})).await;
    assert_eq!(statement.body["key_ids"].as_array().unwrap().len(), 2, "a dual key: P-256 and ML-DSA-65");
    assert_eq!(
        home.admin("POST", "/admin/service-keys/rotate", serde_json::json!({"purpose": "root"})).await.status,
        400
    );

    // The set lists both projection keys; the first closes after the overlap.
    home.clock.advance(1_000);
    let anchors = RootAnchors {
        classical: home.state.keys.root.classical.verifying_key(),
        post_quantum: home.state.keys.root.post_quantum.verifying_key(),
    };
    let set = verify(&home.send(get("/.well-known/keys")).await.body, &anchors).unwrap();
    let old = set.keys.iter().find(|e| e.kid == first).unwrap();
    let new = set.keys.iter().find(|e| e.kid == second).unwrap();
    assert_eq!(old.valid_until, Some(new.valid_from.plus(svc_core::keyset::KEY_OVERLAP_MS)));
    // Rows published now are signed by the successor, and verify under the set.
    assert_eq!(home.publish(&business, &[product("Lumen", "l-1", "1.00")], "a").await.status, 200);
    let record_id = svc_core::ids::product_id(&business.uuid, "l-1");
    let row_of = |home: &Home, id: &str| -> serde_json::Map<String, serde_json::Value> {
        let head = home.state.registry.record_head(id).unwrap().unwrap();
        let version = home.state.registry.record_version(id, head.live_generation).unwrap().unwrap();
        serde_json::from_slice(&version.row).unwrap()
    };
    let row = row_of(&home, &record_id);
    assert_eq!(row["adl_key_id"], second.as_str());
    svc_core::projection::verify_row(&row, |kid| set.key(Purpose::Projection, kid, home.clock.now())).unwrap();
    // Business keys are now stated by the new statement key.
    let keys = home.send(get(&format!("/v1/certificates/{}/keys", business.uuid))).await;
    let signer = svc_core::dsse::Envelope::from_value(&keys.body["signed"]).unwrap().signatures[0].keyid.clone();
    assert_eq!(signer, statement.body["key_ids"][0].as_str().unwrap());

    // After a restart the successor still signs.
    home.state.stop_actors().await;
    let Home { dir, state, .. } = home;
    drop(state);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let home = Home::start_in(dir).await;
    let mut business = business;
    business.seq = std::sync::atomic::AtomicU64::new(2);
    assert_eq!(home.publish(&business, &[product("Lumen", "l-2", "2.00")], "b").await.status, 200);
    let row = row_of(&home, &svc_core::ids::product_id(&business.uuid, "l-2"));
    assert_eq!(row["adl_key_id"], second.as_str(), "the rotation survived the restart");
}
