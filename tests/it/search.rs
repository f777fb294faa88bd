//! Signed searches through HTTP over the index the replication log feeds:
//! rows exactly as projected plus serve-time members, a format 3 receipt,
//! filters, sorts, the allow-list refusals, and blocked businesses absent.

use crate::common;

use common::*;
use serde_json::{Value, json};
use svc_core::receipt::{ReceiptCheck, verify};

fn priced(brand: &str, sku: &str, name: &str, fr: &str) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&product(brand, sku, fr)).unwrap();
    value["product_name"] = json!(name);
    serde_json::to_vec(&value).unwrap()
}

async fn corpus(home: &Home) -> (Business, Business) {
    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let brisa = home.business("Brisa", products_scope(1_000)).await;
    let lamps = vec![
        priced("Lumio", "L-1", "Oak desk lamp", "19.90"),
        priced("Lumio", "L-2", "Copper floor lamp", "89.00"),
        priced("Lumio", "L-3", "Linen shade", "12.00"),
    ];
    assert_eq!(home.publish(&lumio, &lamps, "l").await.status, 200);
    let brisa_lamps = vec![priced("Brisa", "B-1", "Glass table lamp", "45.50")];
    assert_eq!(home.publish(&brisa, &brisa_lamps, "b").await.status, 200);
    home.wait_indexed().await;
    (lumio, brisa)
}

fn ids(answer: &Answer) -> Vec<String> {
    answer.body["rows"].as_array().unwrap().iter().map(|r| r["product_name"].as_str().unwrap().to_owned()).collect()
}

// rule: R1.1, R2.4.1, R2.4.2, R2.4.3, R2.4.6, R2.4.7, R2.6.1, R2.6.5, R2.6.7, R2.6.9, R2.6.11, R2.6.12, R4.1
#[tokio::test(flavor = "multi_thread")]
async fn a_text_search_answers_projected_rows_and_a_receipt() {
    let home = Home::start().await;
    corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    let answer = home
        .search(
            &caller,
            "/v1/search",
            json!({"collection": "products", "q": "lamp", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert!(svc_core::ids::is_retrieval_id(answer.body["retrieval_id"].as_str().unwrap()));
    assert_eq!((answer.body["collection"].as_str(), answer.body["country"].as_str()), (Some("products"), Some("FR")));
    let rows = answer.body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "three rows name a lamp");
    assert!(answer.body.get("partial").is_none());
    for row in rows {
        // The signed part verifies with the projection key.
        let mut signed = row.as_object().unwrap().clone();
        assert_eq!(signed["ai_policy_bits"]["ai_policy_version"], 0);
        signed.remove("ai_policy_bits");
        svc_core::projection::verify_row(&signed, |_| Some(home.state.keys.projection.verifying_key())).unwrap();
    }
    let envelope = svc_core::dsse::Envelope::from_value(&answer.body["receipt"]).unwrap();
    let row_maps: Vec<_> = rows.iter().map(|r| r.as_object().unwrap().clone()).collect();
    let check = ReceiptCheck {
        receipt_key: |_: &str, _: &str, _| Some(home.state.keys.receipt.verifying_key()),
        presenter: Some(&caller.key_id),
        rows: Some(&row_maps),
    };
    let receipt = verify(&envelope, &check).unwrap();
    assert_eq!(receipt.format, 3);
    assert_eq!(receipt.receipt.retrieval_id, answer.body["retrieval_id"].as_str().unwrap());
    assert_eq!(receipt.receipt.country.as_deref(), Some("FR"));
    assert_eq!(receipt.receipt.region, "home");
    assert!(receipt.receipt.request_hash.starts_with("sha256:"));
    assert!(!receipt.receipt.sandbox);
}

// rule: R2.2.21, R2.2.29, R2.3.3, R1.9
#[tokio::test(flavor = "multi_thread")]
async fn filters_and_sorts_run_in_the_index() {
    let home = Home::start().await;
    corpus(&home).await;
    let caller = home.caller("Acme AI").await;
    let by_price = home
        .search(
            &caller,
            "/v1/products/search",
            json!({"filter": {"all": [{"country": "FR"}, {"price_amount": {"gte": "15", "lt": "50"}}]}, "sort_by": "price_amount:desc"}),
        )
        .await;
    assert_eq!(by_price.status, 200, "{:?}", by_price.body);
    assert_eq!(ids(&by_price), vec!["Glass table lamp", "Oak desk lamp"]);
    let ascending = home
        .search(
            &caller,
            "/v1/products/search",
            json!({"filter": {"all": [{"country": "FR"}]}, "sort_by": "price_amount:asc", "limit": 2}),
        )
        .await;
    assert_eq!(ids(&ascending), vec!["Linen shade", "Oak desk lamp"]);
    let brand = home
        .search(
            &caller,
            "/v1/products/search",
            json!({"filter": {"all": [{"country": "FR"}, {"brand": {"nin": ["Lumio"]}}]}, "sort_by": "published_at:asc"}),
        )
        .await;
    assert_eq!(ids(&brand), vec!["Glass table lamp"]);
    let elsewhere = home
        .search(
            &caller,
            "/v1/products/search",
            json!({"filter": {"all": [{"country": "DE"}]}, "sort_by": "published_at:asc"}),
        )
        .await;
    assert_eq!(elsewhere.status, 200);
    assert!(elsewhere.body["rows"].as_array().unwrap().is_empty(), "published for FR only");
}

// rule: R1.16, R1.18, R2.4.24
#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_business_is_absent_from_the_query_itself() {
    let home = Home::start().await;
    let (_, brisa) = corpus(&home).await;
    let blocked = home.caller("Blocked AI").await;
    let other = home.caller("Other AI").await;
    let block = home
        .admin("POST", "/admin/blocks", json!({"business_uuid": brisa.uuid, "ai_group_id": blocked.group_id}))
        .await;
    assert_eq!(block.status, 200, "{:?}", block.body);
    home.wait_indexed().await;
    let body = json!({"collection": "products", "q": "lamp", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"});
    let seen_by_blocked = home.search(&blocked, "/v1/search", body.clone()).await;
    let seen_by_other = home.search(&other, "/v1/search", body.clone()).await;
    assert_eq!(ids(&seen_by_other).len(), 3, "three lamps, one of them Brisa's");
    let names = ids(&seen_by_blocked);
    assert_eq!(names.len(), 2);
    assert!(!names.contains(&"Glass table lamp".to_owned()));
    // Only Brisa's lamp: the blocked caller gets an empty page, like a miss.
    let only = json!({"collection": "products", "q": "glass", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"});
    let miss = home.search(&blocked, "/v1/search", only.clone()).await;
    let nothing = json!({"collection": "products", "q": "zzzz", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"});
    let never = home.search(&blocked, "/v1/search", nothing).await;
    assert_eq!(miss.body["rows"], never.body["rows"]);
    assert_eq!(miss.status, never.status);
    // Unblocking brings it back.
    home.admin(
        "POST",
        "/admin/blocks",
        json!({"business_uuid": brisa.uuid, "ai_group_id": blocked.group_id, "blocked": false}),
    )
    .await;
    home.wait_indexed().await;
    assert_eq!(ids(&home.search(&blocked, "/v1/search", only).await), vec!["Glass table lamp"]);
}

// rule: R2.2.10, R2.2.13, R1.13, R1.14, R1.15, R5.21
#[tokio::test(flavor = "multi_thread")]
async fn refusals_name_the_member_and_signatures_come_first() {
    let home = Home::start().await;
    let caller = home.caller("Acme AI").await;
    let cases = [
        (json!({"collection": "products", "filter": {"all": []}, "sort_by": "_text_match:desc"}), "filter_required"),
        (json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}}), "sort_required"),
        (
            json!({"collection": "products", "filter": {"all": [{"country": "FR"}, {"colour": "red"}]}, "sort_by": "published_at:asc"}),
            "unknown_field",
        ),
        (
            json!({"collection": "products", "filter": {"all": [{"country": "FR"}, {"language": {"ne": "fr"}}]}, "sort_by": "published_at:asc"}),
            "operator_not_allowed",
        ),
        (
            json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "brand:asc"}),
            "sort_not_allowed",
        ),
    ];
    for (body, code) in cases {
        let answer = home.search(&caller, "/v1/search", body).await;
        assert_eq!((answer.status, answer.body["code"].as_str()), (400, Some(code)));
        assert!(answer.body["detail"].is_string());
    }
    let stranger = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[9; 32]).unwrap();
    let body = serde_json::to_vec(&json!({"collection": "products"})).unwrap();
    let unknown = home.signed(&stranger, "POST", "/v1/search", &body, "svc-retrieval", &[]).await;
    assert_eq!((unknown.status, unknown.body["code"].as_str()), (401, Some("key_unknown")));
    // A business key's tag is not the retrieval tag.
    let wrong_tag = home.signed(&caller.key, "POST", "/v1/search", &body, "svc-push", &[]).await;
    assert_eq!(wrong_tag.body["code"], "signature_invalid");
}

fn event(id: &str, title: &str, lat: f64, lng: f64, start: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/events/1", "language": "fr", "event_id": id, "countries": ["FR"], "title": title,
        "start_at": start, "end_at": "2027-06-01T20:00:00Z", "event_type": "market", "attendance_mode": "in_person",
        "geo": {"lat": lat, "lng": lng},
    }))
    .unwrap()
}

// rule: R2.2.22, R2.3.26, R2.3.28, R2.3.33
#[tokio::test(flavor = "multi_thread")]
async fn near_keeps_only_points_within_the_radius() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10)).await;
    for (id, title, lat, lng, start) in [
        ("lyon", "Lumio market Lyon", 45.764, 4.8357, "2027-06-01T09:00:00Z"),
        ("villeurbanne", "Lumio market Villeurbanne", 45.7719, 4.8902, "2027-05-01T09:00:00Z"),
        ("paris", "Lumio market Paris", 48.8566, 2.3522, "2027-04-01T09:00:00Z"),
    ] {
        let saved = home.save_sealed(&b, "events", &event(id, title, lat, lng, start)).await;
        assert_eq!(saved.status, 201, "{:?}", saved.body);
    }
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let near = |radius: f64| {
        json!({"filter": {"all": [{"country": "FR"}, {"geo": {"near": {"lat": 45.764, "lng": 4.8357, "radius_km": radius}}}]},
            "sort_by": "start_at:asc"})
    };
    let titles = |a: &Answer| -> Vec<String> {
        a.body["rows"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap().to_owned()).collect()
    };
    let close = home.search(&caller, "/v1/events/search", near(10.0)).await;
    assert_eq!(close.status, 200, "{:?}", close.body);
    assert_eq!(titles(&close), vec!["Lumio market Villeurbanne", "Lumio market Lyon"]);
    let wide = home.search(&caller, "/v1/events/search", near(400.0)).await;
    assert_eq!(titles(&wide), vec!["Lumio market Paris", "Lumio market Villeurbanne", "Lumio market Lyon"]);
    // Paris is 392 km away: inside the box at 380 km but outside the radius.
    let edge = home.search(&caller, "/v1/events/search", near(380.0)).await;
    assert_eq!(titles(&edge).len(), 2);
}

// rule: R1.9, R2.2.29, R2.4.4
#[tokio::test(flavor = "multi_thread")]
async fn top_rows_over_many_candidates_match_a_full_sort() {
    let home = Home::start().await;
    let shop = home.business("Lumio", products_scope(10_000)).await;
    // 300 lamps whose prices are a scrambled sequence, published 50 a batch;
    // every third is an "oak" lamp for the relevance sort.
    let price = |i: u64| (i * 7_919) % 1_000 + 1;
    for batch in 0..6u64 {
        let records: Vec<Vec<u8>> = (batch * 50..batch * 50 + 50)
            .map(|i| {
                let name = if i % 3 == 0 { format!("Oak lamp {i}") } else { format!("Lamp {i}") };
                priced("Lumio", &format!("S-{i}"), &name, &format!("{}.00", price(i)))
            })
            .collect();
        let answer = home.publish(&shop, &records, &format!("p{batch}")).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    home.wait_indexed().await;
    let caller = home.caller("Acme AI").await;
    let mut prices: Vec<u64> = (0..300).map(price).collect();
    prices.sort_unstable();
    for (direction, expected) in
        [("asc", prices[..10].to_vec()), ("desc", prices.iter().rev().take(10).copied().collect())]
    {
        let answer = home
            .search(
                &caller,
                "/v1/search",
                json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": format!("price_amount:{direction}"), "limit": 10}),
            )
            .await;
        let got: Vec<u64> =
            answer.body["rows"].as_array().unwrap().iter().map(|r| r["price_FR"].as_f64().unwrap() as u64).collect();
        assert_eq!(got, expected, "{direction}");
    }
    let relevant = home
        .search(
            &caller,
            "/v1/search",
            json!({"collection": "products", "q": "oak", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc", "limit": 50}),
        )
        .await;
    let names = ids(&relevant);
    assert_eq!(names.len(), 50);
    assert!(names.iter().all(|n| n.starts_with("Oak lamp")), "{names:?}");
}
