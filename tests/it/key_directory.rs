//! The key directory (publishing 2.6; path P-NS-7): the live retrieval keys
//! of verified AI companies that opted in, while their certificate is
//! active, signed by the statement key and checked offline from its
//! statement alone. AI companies hold certificates as businesses do.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};
use svc_core::keys::{Alg, SigningKey};
use svc_core::keyset::{self, RootAnchors};
use svc_core::offline::key_directory;

async fn get_json(home: &Home, path: &str) -> Value {
    let answer = home.send(Request::get(path).body(Body::empty()).unwrap()).await;
    assert_eq!(answer.status, 200, "{path}: {:?}", answer.body);
    answer.body
}

/// The directory, checked offline under the deployment's root anchors;
/// answers the document and (company, key ids) as the statement lists them.
async fn checked_directory(home: &Home) -> (Value, Vec<(String, Vec<String>)>) {
    let document = get_json(home, "/v1/key-directory").await;
    let keys = &home.state.keys;
    let anchors = RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = keyset::verify(&get_json(home, "/.well-known/keys").await, &anchors).unwrap();
    let listed = key_directory(&document, &set).expect("the statement holds");
    let listed =
        listed.into_iter().map(|c| (c.ai_company_uuid, c.keys.into_iter().map(|(id, _)| id).collect())).collect();
    (document, listed)
}

// rule: P2.6.38, P2.6.39, P2.6.40, P2.6.41, P-NS-7, P2.1.8
#[tokio::test(flavor = "multi_thread")]
async fn the_directory_lists_live_keys_of_verified_companies_that_opted_in() {
    let home = Home::start().await;
    let reader = home.caller("Reader AI").await;
    let (_, listed) = checked_directory(&home).await;
    assert!(listed.is_empty(), "no company opted in yet: {listed:?}");

    // An AI company holds a certificate, as a business does.
    let certificate = get_json(&home, &format!("/v1/certificates/{}", reader.company_uuid)).await;
    assert_eq!((certificate["subject"].as_str(), certificate["status"].as_str()), (Some("ai_company"), Some("active")));

    let opt_in = |uuid: &str, listed: bool| {
        let path = format!("/admin/companies/{uuid}/directory");
        let home = &home;
        async move { home.admin("POST", &path, json!({"listed": listed})).await }
    };
    assert_eq!(opt_in(&reader.company_uuid, true).await.status, 200);
    let (document, listed) = checked_directory(&home).await;
    assert_eq!(listed, [(reader.company_uuid.clone(), vec![reader.key_id.clone()])]);
    assert_eq!(document["v"], 1);
    let company = &document["companies"][0];
    assert_eq!(company["name"], "Reader AI");
    assert_eq!(
        company["certificate_url"],
        format!("{}/v1/certificates/{}", home.state.config.verify_base_url.trim_end_matches('/'), reader.company_uuid)
    );
    let key = &company["keys"][0];
    assert_eq!((key["alg"].as_str(), key["source"].as_str()), (Some("Ed25519"), Some("registration")));
    assert_eq!(key["public_key"], json!(reader.key.verifying_key().to_jwk()));
    assert!(key["valid_from"].is_string() && key["valid_until"].is_null(), "{key}");

    // A second key joins; a revoked one leaves.
    let second = SigningKey::from_seed(Alg::Ed25519, &[77; 32]).unwrap();
    let registered = home
        .admin(
            "POST",
            &format!("/admin/groups/{}/retrieval-keys", reader.group_id),
            json!({"jwk": second.verifying_key().to_jwk()}),
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let second_id = second.verifying_key().thumbprint();
    let mut both = vec![reader.key_id.clone(), second_id.clone()];
    both.sort();
    let (_, listed) = checked_directory(&home).await;
    let mut ids = listed[0].1.clone();
    ids.sort();
    assert_eq!(ids, both);
    let revoked = home.admin("POST", &format!("/admin/retrieval-keys/{second_id}/revoke"), json!({})).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    assert_eq!(checked_directory(&home).await.1, [(reader.company_uuid.clone(), vec![reader.key_id.clone()])]);

    // A statement edited after signing no longer verifies.
    let (mut tampered, _) = checked_directory(&home).await;
    let mut envelope = svc_core::dsse::Envelope::from_value(&tampered["statement"]).unwrap();
    let mut payload: Value = serde_json::from_slice(&envelope.payload_bytes().unwrap()).unwrap();
    payload["companies"][0]["name"] = json!("Someone Else");
    envelope.payload = svc_core::b64::std_encode(&svc_core::canonical::to_signed_bytes(&payload).unwrap());
    tampered["statement"] = serde_json::to_value(&envelope).unwrap();
    let keys = &home.state.keys;
    let anchors = RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = keyset::verify(&get_json(&home, "/.well-known/keys").await, &anchors).unwrap();
    assert!(key_directory(&tampered, &set).is_err(), "a changed payload is refused");

    // A company that is not verified cannot opt in; one whose certificate
    // is withdrawn leaves the directory.
    let unverified = home.admin("POST", "/admin/companies", json!({"name": "Unverified AI"})).await;
    let uuid = unverified.body["ai_company_uuid"].as_str().unwrap().to_owned();
    let refused = opt_in(&uuid, true).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", refused.body);
    home.clock.advance(svc_core::time::SECOND);
    let withdrawn = home
        .admin(
            "POST",
            &format!("/admin/companies/{}/certificate-status", reader.company_uuid),
            json!({"status": "withdrawn", "reason": "approval_reversed"}),
        )
        .await;
    assert_eq!(withdrawn.status, 201, "{:?}", withdrawn.body);
    assert!(checked_directory(&home).await.1.is_empty(), "a withdrawn company is not listed");
    assert_eq!(opt_in(&reader.company_uuid, false).await.status, 200);
}
