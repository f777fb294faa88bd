//! Paid placements in search (issue 28, in part): campaigns the operator
//! funds mark their rows `sponsored` outside the row signature and in the
//! receipt, and never move a row.

use serde_json::{Value, json};
use svc_core::rng::Rng;

use crate::common::{Home, product, products_scope};

fn terms(name: &str, budget: &str) -> Value {
    json!({"name": name, "placement": "sponsorship", "budget": budget, "net_price": "4.00", "basis": "cpm",
        "keywords": ["lamp"], "countries": ["FR"], "formats": ["card"],
        "repeats": {"allowed": false, "max_per_conversation": 1}})
}

fn ids(answer: &Value) -> Vec<String> {
    answer["rows"].as_array().unwrap().iter().map(|r| r["record_id"].as_str().unwrap().to_owned()).collect()
}

fn receipt_rows(answer: &Value) -> Vec<Value> {
    let payload = answer["receipt"]["payload"].as_str().unwrap();
    let payload: Value = serde_json::from_slice(&svc_core::b64::std_decode(payload).unwrap()).unwrap();
    payload["rows"].as_array().unwrap().clone()
}

// rule: R1.10, R2.4.3, R2.4.4, R2.6.5
#[tokio::test(flavor = "multi_thread")]
async fn paid_rows_are_marked_outside_their_signature_and_never_change_the_order() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(100_000)).await;
    // A generated corpus: forty lamps at seeded prices.
    let mut rng = Rng::new(28);
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| product("Lumen", &format!("L-{i}"), &format!("{}.{:02}", 5 + rng.below(90), rng.below(100))))
        .collect();
    let published = home.publish(&business, &records, "corpus").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    home.wait_indexed().await;
    let caller = home.caller("Reader").await;
    let all = json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "price_amount:asc"});
    let every = home.search(&caller, "/v1/search", all.clone()).await;
    let record_ids = ids(&every.body);
    assert_eq!(record_ids.len(), 40);

    // Unfunded, a campaign places nothing; refused terms are a problem.
    let zero = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": terms("none", "0"), "items": []}),
        )
        .await;
    assert_eq!((zero.status, zero.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", zero.body);
    let foreign = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": terms("x", "10"), "items": ["svc_aaaaaaaaaaaaaaaaaaaaaaaaaa"]}),
        )
        .await;
    assert_eq!(foreign.status, 400, "an item that is no record of the business: {:?}", foreign.body);
    let made = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": terms("lamps", "50"), "items": [record_ids[3], record_ids[7]]}),
        )
        .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert_eq!(made.body["net_price"], json!({"amount": "4.00", "currency": "USD", "basis": "cpm"}));
    assert!(made.body.get("gross_price").is_none() && made.body.get("take_rate").is_none());
    let campaign = made.body["campaign_id"].as_str().unwrap().to_owned();
    let unfunded = home.search(&caller, "/v1/search", all.clone()).await;
    assert!(unfunded.body["rows"].as_array().unwrap().iter().all(|r| r.get("sponsored").is_none()));

    // Funded, its rows are marked where they stand, outside the signature.
    let funded = home.admin("POST", &format!("/admin/campaigns/{campaign}/funds"), json!({"amount": "20"})).await;
    assert_eq!((funded.status, funded.body["funded"].as_str()), (200, Some("20.00")), "{:?}", funded.body);
    let on = home.search(&caller, "/v1/search", all.clone()).await;
    assert_eq!(ids(&on.body), record_ids, "paid placement never changes the order");
    for (i, row) in on.body["rows"].as_array().unwrap().iter().enumerate() {
        let paid = i == 3 || i == 7;
        assert_eq!(row.get("sponsored"), paid.then_some(&json!(true)), "row {i}");
        let mut bare = row.clone();
        bare.as_object_mut().unwrap().remove("sponsored");
        assert_eq!(bare, every.body["rows"][i], "the signed row is the same, signature included");
    }
    let entries = receipt_rows(&on.body);
    let marked: Vec<usize> = (0..entries.len()).filter(|i| entries[*i]["sponsored"] == true).collect();
    assert_eq!(marked, [3, 7], "the receipt's row entries carry the marker");
    // Another country's search carries no paid row of a French campaign.
    let de = json!({"collection": "products", "filter": {"all": [{"country": "DE"}]}, "sort_by": "price_amount:asc"});
    let answer = home.search(&caller, "/v1/search", de).await;
    assert!(answer.body["rows"].as_array().unwrap().iter().all(|r| r.get("sponsored").is_none()));

    // The property, over generated campaigns and queries: the ids in order
    // are the same with paid placement on and off.
    let sorts = ["price_amount:asc", "price_amount:desc", "published_at:desc", "_text_match:desc,price_amount:asc"];
    let mut campaigns = vec![campaign];
    for case in 0..16 {
        let items: Vec<&String> = record_ids.iter().filter(|_| rng.chance(25)).collect();
        let made = home
            .admin(
                "POST",
                &format!("/admin/businesses/{}/campaigns", business.uuid),
                json!({"terms": terms(&format!("case {case}"), "30"), "items": items}),
            )
            .await;
        assert_eq!(made.status, 201, "{:?}", made.body);
        let id = made.body["campaign_id"].as_str().unwrap().to_owned();
        home.admin("POST", &format!("/admin/campaigns/{id}/funds"), json!({"amount": "30"})).await;
        campaigns.push(id);
        let mut query = json!({"collection": "products", "filter": {"all": [{"country": "FR"}]},
            "sort_by": rng.pick(&sorts).to_string(), "limit": 1 + rng.below(50)});
        if rng.chance(50) {
            query["q"] = json!(format!("L-{}", rng.below(40)));
        }
        let with_ads = home.search(&caller, "/v1/search", query.clone()).await;
        for id in &campaigns {
            home.admin("POST", &format!("/admin/campaigns/{id}/state"), json!({"state": "paused"})).await;
        }
        let without = home.search(&caller, "/v1/search", query.clone()).await;
        assert!(without.body["rows"].as_array().unwrap().iter().all(|r| r.get("sponsored").is_none()), "paused");
        assert_eq!(ids(&with_ads.body), ids(&without.body), "case {case}: {query}");
        for id in &campaigns {
            home.admin("POST", &format!("/admin/campaigns/{id}/state"), json!({"state": "active"})).await;
        }
    }
    let ended =
        home.admin("POST", &format!("/admin/campaigns/{}/state", campaigns[0]), json!({"state": "ended"})).await;
    assert_eq!(ended.body["state"], "ended");
    let again =
        home.admin("POST", &format!("/admin/campaigns/{}/state", campaigns[0]), json!({"state": "active"})).await;
    assert_eq!(again.status, 400, "an ended campaign stays ended");
}
