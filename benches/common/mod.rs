//! What more than one bench sets up: a region whose index has caught up,
//! and an AI company's retrieval keys.

use std::time::Duration;

use serde_json::json;
use svc_core::keys::{Alg, SigningKey};
use svc_http::sandbox::seed::admin;
use svc_node::actors::indexer::IndexerMsg;
use svc_node::actors::publisher::PublisherMsg;
use svc_node::region::Region;

/// Waits until the index has applied every replication log entry.
pub async fn wait_indexed(state: &Region) {
    loop {
        let last =
            state.home.as_ref().unwrap().publisher.call(PublisherMsg::Observe).await.expect("publisher").last_seq;
        let applied = state.indexer.call(IndexerMsg::Observe).await.expect("indexer").applied_seq;
        if applied >= last {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One AI company, one group, `count` Ed25519 retrieval keys in it, drawn
/// from seeds named by `label`: the group's id and the keys.
pub async fn retrieval_keys(state: &Region, count: usize, label: &str) -> (String, Vec<SigningKey>) {
    let company =
        admin(state, "POST", "/admin/companies", json!({"name": "Bench AI", "verified": true})).await.expect("company");
    let company = company["ai_company_uuid"].as_str().unwrap().to_owned();
    let group = admin(state, "POST", &format!("/admin/companies/{company}/groups"), json!({"name": "assistants"}))
        .await
        .expect("group");
    let group = group["ai_group_id"].as_str().unwrap().to_owned();
    let mut keys = Vec::with_capacity(count);
    for i in 0..count {
        let seed = svc_core::digest::sha256(format!("{label} {i}").as_bytes());
        let key = SigningKey::from_seed(Alg::Ed25519, &seed).unwrap();
        let path = format!("/admin/groups/{group}/retrieval-keys");
        admin(state, "POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await.expect("retrieval key");
        keys.push(key);
    }
    (group, keys)
}
