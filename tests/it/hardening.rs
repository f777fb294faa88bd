//! Issue 23's findings, each as the attack or fault it answers.

use serde_json::{Value, json};
use svc_core::keys::{Alg, SigningKey};

use crate::common::Home;
use crate::retrieval::lamp_search;

// A registration checked before it is written lets two at once both pass
// the check; the one writer checks again as it writes. (Whether the four
// interleave depends on scheduling; the writer's check itself is proven by
// `replication::tests::a_change_that_requires_a_key_absent_…`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_registrations_of_one_key_give_one_201() {
    let home = Home::start().await;
    let created = home
        .admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"]}))
        .await;
    let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
    let key = SigningKey::from_seed(Alg::Ed25519, &[7; 32]).unwrap();
    let body = json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"});
    let path = format!("/admin/businesses/{uuid}/keys");
    let register = || home.admin("POST", &path, body.clone());
    let (a, b, c, d) = tokio::join!(register(), register(), register(), register());
    let answers = [a, b, c, d];
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    for refused in answers.iter().filter(|a| a.status != 201) {
        assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{}", refused.body);
    }
    home.state.stop_actors().await;
}

// A retrieval key registered again never moves to another company.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrieval_key_registered_again_stays_with_its_company() {
    let home = Home::start().await;
    let key = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
    let company = json!({"name": "Acme AI", "verified": true, "terms_accepted": 1});
    let (acme, _) = home.caller_with(company, key.clone()).await;
    let rival = json!({"name": "Rival AI", "verified": true, "terms_accepted": 1});
    let made = home.admin("POST", "/admin/companies", rival).await;
    let rival_uuid = made.body["ai_company_uuid"].as_str().unwrap().to_owned();
    let group = home.admin("POST", &format!("/admin/companies/{rival_uuid}/groups"), json!({"name": "bots"})).await;
    let group_id = group.body["ai_group_id"].as_str().unwrap();
    let again = home
        .admin(
            "POST",
            &format!("/admin/groups/{group_id}/retrieval-keys"),
            json!({"jwk": key.verifying_key().to_jwk()}),
        )
        .await;
    assert_eq!((again.status, again.body["code"].as_str()), (400, Some("request_invalid")), "{}", again.body);
    let stored = home.state.registry.retrieval_key(&acme.key_id).unwrap().unwrap();
    assert_eq!(stored.company_uuid, acme.company_uuid);
    home.state.stop_actors().await;
}

// A retrieval key can be ended: its signatures are refused from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_retrieval_key_is_refused_from_then_on() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    let revoked = home.admin("POST", &format!("/admin/retrieval-keys/{}/revoke", caller.key_id), Value::Null).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let refused = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("key_unknown")), "{}", refused.body);
    // Revoked again: the first revocation stands.
    let again = home.admin("POST", &format!("/admin/retrieval-keys/{}/revoke", caller.key_id), Value::Null).await;
    assert_eq!(again.body["revoked_at"], revoked.body["revoked_at"]);
    let unknown = home.admin("POST", "/admin/retrieval-keys/nope/revoke", Value::Null).await;
    assert_eq!(unknown.status, 404);
    home.state.stop_actors().await;
}
