//! What is served follows the certificate in force now and the sealing
//! key (publishing section 3): a withdrawn business is served nowhere until
//! verified again; a suspended or closed one keeps its history and nothing
//! newer; a compromised key's later seals stop serving. Fetch and search
//! agree, and a status issued for later takes effect when its time comes.

use crate::common;
use crate::retrieval::get;

use common::*;
use serde_json::json;
use svc_core::ids::product_id;
use svc_core::time::{MINUTE, SECOND, UnixMs};

const SKUS: [&str; 3] = ["L-1", "L-2", "L-3"];

/// Which of Lumio's lamps a fetch serves, and which rows a search shows
/// (Brisa's lamp included).
async fn served(home: &Home, caller: &Caller, lumio: &Business, brisa: &Business) -> (Vec<&'static str>, usize, usize) {
    let mut fetched = Vec::new();
    for sku in SKUS {
        let answer = get(home, caller, &format!("/v1/records/{}", product_id(&lumio.uuid, sku))).await;
        assert!(answer.status == 200 || answer.status == 404, "{:?}", answer.body);
        if answer.status == 200 {
            fetched.push(sku);
        }
    }
    let every =
        json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc"});
    let rows = home.search(caller, "/v1/search", every).await.body["rows"].as_array().cloned().unwrap_or_default();
    let of = |b: &Business| rows.iter().filter(|r| r["business_uuid"] == b.uuid.as_str()).count();
    (fetched, of(lumio), of(brisa))
}

async fn status(home: &Home, business: &Business, status: &str, effective_from: UnixMs) {
    let body = json!({"status": status, "effective_from": effective_from.to_rfc3339_secs()});
    let changed = home.admin("POST", &format!("/admin/businesses/{}/certificate-status", business.uuid), body).await;
    assert_eq!(changed.status, 201, "{:?}", changed.body);
    home.wait_indexed().await;
}

/// Waits (a bounded number of polls) until `want` is what is served.
async fn until_served(
    home: &Home,
    caller: &Caller,
    (lumio, brisa): (&Business, &Business),
    want: (&[&str], usize, usize),
) -> (Vec<&'static str>, usize, usize) {
    let mut seen = served(home, caller, lumio, brisa).await;
    for _ in 0..200 {
        if (seen.0.as_slice(), seen.1, seen.2) == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        seen = served(home, caller, lumio, brisa).await;
    }
    seen
}

// rule: P3.5, P3.6, P3.9, P3.38, P3.39, R1.19
#[tokio::test(flavor = "multi_thread")]
async fn serving_follows_the_certificate_in_force_and_the_sealing_key() {
    let home = Home::start().await;
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let brisa = home.business("Brisa", products_scope(1_000)).await;
    let lamp = |sku: &str| product("Lumio", sku, "19.90");
    let sealed_early = home.clock.now();
    assert_eq!(home.publish(&lumio, &[lamp("L-1"), lamp("L-2")], "a").await.status, 200);
    assert_eq!(home.publish(&brisa, &[product("Brisa", "B-1", "9.90")], "b").await.status, 200);
    home.clock.advance(10 * MINUTE);
    assert_eq!(home.publish(&lumio, &[lamp("L-3")], "c").await.status, 200);
    home.wait_indexed().await;
    let caller = home.caller("Reader AI").await;
    let both = (&lumio, &brisa);
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (SKUS.to_vec(), 3, 1));

    // Suspended from a moment between the two pushes (issued now, taking
    // effect earlier): what was sealed before stays, nothing newer.
    let between = sealed_early.plus(5 * MINUTE);
    status(&home, &lumio, "suspended", between).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (vec!["L-1", "L-2"], 2, 1));
    status(&home, &lumio, "closed", between).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (vec!["L-1", "L-2"], 2, 1));
    home.clock.advance(SECOND);
    status(&home, &lumio, "active", home.clock.now()).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (SKUS.to_vec(), 3, 1));

    // Withdrawn: nothing of Lumio at all, as if it never existed, until it
    // is verified again; Brisa is untouched.
    home.clock.advance(SECOND);
    status(&home, &lumio, "withdrawn", home.clock.now()).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (vec![], 0, 1));
    let gone = get(&home, &caller, &format!("/v1/records/{}", product_id(&lumio.uuid, "L-1"))).await;
    let never = get(&home, &caller, &format!("/v1/records/{}", product_id(&lumio.uuid, "L-404"))).await;
    assert_eq!(gone.body["code"], never.body["code"]);
    assert_eq!(gone.body["title"], never.body["title"]);
    home.clock.advance(SECOND);
    status(&home, &lumio, "active", home.clock.now()).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (SKUS.to_vec(), 3, 1));

    // A withdrawal issued for a minute from now changes nothing until then,
    // and the index follows when the minute comes.
    home.clock.advance(SECOND);
    status(&home, &lumio, "withdrawn", home.clock.now().plus(MINUTE)).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (SKUS.to_vec(), 3, 1));
    home.clock.advance(MINUTE);
    assert_eq!(until_served(&home, &caller, both, (&[], 0, 1)).await, (vec![], 0, 1));
    home.clock.advance(SECOND);
    status(&home, &lumio, "active", home.clock.now()).await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (SKUS.to_vec(), 3, 1));

    // The integration key compromised between the pushes: what it sealed
    // after that moment stops serving; what it sealed before stands.
    let body = json!({"compromised_at": between.to_rfc3339_secs()});
    let revoked = home.admin("POST", &format!("/admin/keys/{}/revoke", lumio.key_id), body).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    home.wait_indexed().await;
    assert_eq!(served(&home, &caller, &lumio, &brisa).await, (vec!["L-1", "L-2"], 2, 1));
}

// rule: P3.5
#[tokio::test(flavor = "multi_thread")]
async fn a_status_change_for_an_unknown_business_or_status_is_refused_and_writes_nothing() {
    let home = Home::start().await;
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    let unknown = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";
    let body = json!({"status": "withdrawn", "reason": "approval_reversed"});
    let answer = home.admin("POST", &format!("/admin/businesses/{unknown}/certificate-status"), body).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (404, Some("not_found")), "{:?}", answer.body);
    let path = format!("/admin/businesses/{}/certificate-status", lumio.uuid);
    let answer = home.admin("POST", &path, json!({"status": "paused"})).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", answer.body);
    assert!(answer.body["detail"].as_str().unwrap().contains("paused"), "it says why: {:?}", answer.body);
    assert_eq!(svc_node::replication::last_seq(&home.state.store).unwrap(), head, "nothing was written");
    assert_eq!(home.state.registry.certificates(&lumio.uuid).unwrap().len(), 1);
}
