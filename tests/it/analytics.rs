//! Business analytics through signed reads (publishing 2.5, 4.1): what AI
//! groups asked of a business, folded from the receipts the region issued,
//! shown up to the end of the last complete hour.

use crate::common;

use common::*;
use serde_json::{Value, json};
use svc_node::actors::analytics::AnalyticsMsg;

fn lamp(brand: &str, sku: &str, name: &str) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&product(brand, sku, "19.90")).unwrap();
    value["product_name"] = json!(name);
    serde_json::to_vec(&value).unwrap()
}

fn search(q: &str) -> Value {
    json!({"collection": "products", "q": q, "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})
}

async fn read(home: &Home, business: &Business, path: &str) -> Answer {
    let answer = home.signed(&business.key, "GET", path, b"", "svc-business-read", &[]).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer
}

async fn folded(home: &Home) {
    home.state.analytics.cast(AnalyticsMsg::Tick).unwrap();
    // Observe is answered after the tick: the fold has run.
    home.state.analytics.call(AnalyticsMsg::Observe).await.unwrap();
}

// rule: P2.5.32, P2.5.33, P2.5.34, P2.5.35, P2.5.36, P4.1.18, P4.1.19
#[tokio::test(flavor = "multi_thread")]
async fn searches_and_fetches_are_counted_by_day_country_and_group_after_the_hour() {
    let home = Home::start().await;
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let brisa = home.business("Brisa", products_scope(1_000)).await;
    assert_eq!(home.publish(&lumio, &[lamp("Lumio", "L-1", "Oak desk lamp")], "l").await.status, 200);
    assert_eq!(home.publish(&brisa, &[lamp("Brisa", "B-1", "Glass table lamp")], "b").await.status, 200);
    home.wait_indexed().await;
    let acme = home.caller("Acme AI").await;
    let beta = home.caller("Beta AI").await;
    home.clock.advance(60_000);
    for _ in 0..2 {
        assert_eq!(home.search(&acme, "/v1/search", search("lamp")).await.body["rows"].as_array().unwrap().len(), 2);
    }
    assert_eq!(home.search(&beta, "/v1/search", search("glass")).await.body["rows"].as_array().unwrap().len(), 1);
    assert_eq!(home.search(&beta, "/v1/search", search("zzzz")).await.body["rows"], json!([]));
    let lumio_lamp = svc_core::ids::product_id(&lumio.uuid, "L-1");
    let fetched = home.signed(&acme.key, "GET", &format!("/v1/records/{lumio_lamp}"), b"", "svc-retrieval", &[]).await;
    assert_eq!(fetched.status, 200);
    folded(&home).await;

    // The hour under way is not shown yet.
    let early = read(&home, &lumio, "/v1/analytics/daily").await;
    assert_eq!(early.body["as_at"], "2026-11-22T10:00:00Z");
    assert_eq!(early.body["days"], json!([]));

    home.clock.advance(60 * 60_000);
    let daily = read(&home, &lumio, "/v1/analytics/daily").await;
    assert_eq!(daily.body["as_at"], "2026-11-22T11:00:00Z");
    let days = daily.body["days"].as_array().unwrap();
    assert_eq!(days.len(), 2, "{days:?}");
    let searches = days.iter().find(|d| d["country"] == "FR").unwrap();
    assert_eq!(
        searches,
        &json!({"date": "2026-11-22", "country": "FR", "ai_group": "assistants", "searches": 2, "fetches": 0,
                "ad_renders": 0, "ad_clicks": 0, "spend_gross": {"amount": "0.00", "currency": "USD"}})
    );
    let fetches = days.iter().find(|d| d["country"].is_null()).unwrap();
    assert_eq!((fetches["searches"].as_u64(), fetches["fetches"].as_u64()), (Some(0), Some(1)));
    // By group name, never by key or person.
    let text = String::from_utf8(daily.bytes).unwrap();
    assert!(!text.contains(&acme.key_id) && !text.contains(&acme.group_id));

    let who = read(&home, &brisa, "/v1/analytics/who-is-asking?country=FR").await;
    assert_eq!(who.body["window_days"], 30);
    let mut groups: Vec<(String, u64)> = who.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["ai_group_id"].as_str().unwrap().to_owned(), g["searches"].as_u64().unwrap()))
        .collect();
    groups.sort();
    let mut expected = vec![(acme.group_id.clone(), 2), (beta.group_id.clone(), 1)];
    expected.sort();
    assert_eq!(groups, expected, "the zero-row search served Brisa nothing");
    let elsewhere = read(&home, &brisa, "/v1/analytics/who-is-asking?country=DE").await;
    assert_eq!(elsewhere.body["groups"], json!([]));
    let bad = home.signed(&brisa.key, "GET", "/v1/analytics/daily?from=soon", b"", "svc-business-read", &[]).await;
    assert_eq!(bad.body["code"], "request_invalid");
}
