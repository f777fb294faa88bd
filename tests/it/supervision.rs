//! A region's actors are children of its supervisor. One that fails is
//! started again from what the store holds (an index shard's writer from
//! its directory), and the region serves on; one that cannot be is named on
//! `/readyz`, and the region is unready instead of serving without it
//! (the supervisor's own tests). A request that finds an actor's mailbox full is
//! answered 503 with `Retry-After`, never queued without bound.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc_node::region::supervisor::{ChildState, SupervisorMsg};

use crate::common::{Answer, Caller, Home, product, products_scope};
use crate::retrieval::{get, lamp_search};

async fn readyz(home: &Home) -> Answer {
    home.send(Request::get("/readyz").body(Body::empty()).unwrap()).await
}

async fn child(home: &Home, name: &str) -> ChildState {
    let children = ractor::call!(home.state.supervisor, SupervisorMsg::Observe).unwrap();
    children.into_iter().find(|c| c.name == name).expect("supervised")
}

/// A signed search, sent again while the actors it needs come back.
async fn search_until_served(home: &Home, caller: &Caller) -> Answer {
    let mut answer = home.search(caller, "/v1/search", lamp_search()).await;
    for _ in 0..200 {
        if answer.status == 200 {
            break;
        }
        assert_eq!(answer.status, 503, "only 503 while an actor restarts: {}", answer.body);
        tokio::time::sleep(Duration::from_millis(10)).await;
        answer = home.search(caller, "/v1/search", lamp_search()).await;
    }
    answer
}

// rule: R7.15, R7.16
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_actor_is_restarted_from_the_store_and_the_region_serves_on() {
    let home = Home::start().await;
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let mut lamp: Value = serde_json::from_slice(&product("Lumio", "L-1", "19.90")).unwrap();
    lamp["product_name"] = json!("Brass desk lamp");
    let published = home.publish(&lumio, &[serde_json::to_vec(&lamp).unwrap()], "l").await;
    assert_eq!(published.status, 200, "{}", published.body);
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let first = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!(first.body["rows"].as_array().map(Vec::len), Some(1), "{}", first.body);

    // Billing and the receipt log die (as on a panic) and are started again.
    home.state.billing.actor().kill();
    home.state.receipts.actor().kill();
    for name in ["billing", "receipt_log"] {
        for _ in 0..200 {
            if child(&home, name).await.restarts == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let state = child(&home, name).await;
        assert_eq!((state.restarts, state.failed), (1, None), "{name}");
    }
    let ready = readyz(&home).await;
    assert_eq!((ready.status, &ready.body["failed_actors"]), (200, &json!({})), "{}", ready.body);
    // `svc admin observe` shows every actor, and the supervisor's count.
    let observed = home.admin("GET", "/admin/observe", Value::Null).await;
    assert_eq!(observed.status, 200, "{}", observed.body);
    for name in [
        "nonce_store",
        "billing",
        "receipt_log",
        "receipt_folder",
        "analytics",
        "indexer",
        "publisher",
        "push_worker",
        "transparency_log",
    ] {
        assert!(observed.body["actors"][name].is_object(), "{name}: {}", observed.body);
    }
    assert_eq!(observed.body["actors"]["receipt_log"]["next_seq"], 2, "one receipt so far");
    // Every actor the supervisor holds is listed once and answers: the
    // roster observes, counts, watches and stops the same list.
    let actors = observed.body["actors"].as_object().unwrap();
    let supervised: std::collections::BTreeSet<&str> =
        observed.body["supervisor"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(actors.keys().map(String::as_str).collect::<std::collections::BTreeSet<_>>(), supervised);
    for (name, seen) in actors {
        assert!(!seen.is_null(), "{name} answers Observe: {}", observed.body);
    }
    let billing = observed.body["supervisor"].as_array().unwrap().iter().find(|c| c["name"] == "billing").cloned();
    assert_eq!(billing, Some(json!({"name": "billing", "restarts": 1, "failed": null})));

    assert_eq!(search_until_served(&home, &caller).await.status, 200);
    // What they held is in the store: the first bill is still counted, and
    // the restarted log numbers receipts on from the last one.
    let usage = get(&home, &caller, "/v1/usage").await;
    assert_eq!(usage.body["totals"]["billed"], 2, "{}", usage.body);
    let receipts = get(&home, &caller, "/v1/receipts").await;
    let listed = receipts.body["receipts"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{}", receipts.body);
    assert_ne!(listed[0]["retrieval_id"], listed[1]["retrieval_id"]);
    home.state.stop_actors().await;
}

// An index shard that dies is started again like any actor: its writer is
// opened from its directory (the dead one let go of the directory's lock),
// the region is ready again, and what is published is searchable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_index_shard_is_opened_again_from_its_directory() {
    let home = Home::start().await;
    let ready = readyz(&home).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    let shard = home.state.index_shards.iter().find(|s| s.name().contains("products")).unwrap().clone();
    let name = shard.name().to_owned();
    shard.actor().kill();
    for _ in 0..500 {
        if child(&home, &name).await.restarts == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let state = child(&home, &name).await;
    assert_eq!((state.restarts, state.failed), (1, None), "{name}");
    let business = home.business("Lumen", crate::common::products_scope(100)).await;
    let published = home.publish(&business, &[crate::common::product("Lumen", "L-1", "9.00")], "p").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let all = json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc"});
    let found = home.search(&caller, "/v1/search", all).await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(found.body["rows"].as_array().unwrap().len(), 1, "the reopened shard took the write: {}", found.body);
    assert_eq!(readyz(&home).await.status, 200);
    home.state.stop_actors().await;
}

// rule: R7.15
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_mailbox_answers_503_with_retry_after_and_holds_nothing() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);

    // A burst has taken every place at the nonce store, which every signed
    // request asks.
    let burst = home.state.nonces.occupy();
    assert_eq!(burst.len(), svc_node::region::supervisor::MAILBOX_CAPACITY);
    let refused = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (503, Some("unavailable")), "{}", refused.body);
    assert_eq!(refused.headers["retry-after"], "1");
    assert!(refused.body.get("rows").is_none());

    drop(burst);
    assert_eq!(home.search(&caller, "/v1/search", lamp_search()).await.status, 200);
    home.state.stop_actors().await;
}
