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

/// A region's call on home's internal routes, answered in postcard.
async fn link<T: serde::de::DeserializeOwned>(
    home: &Home,
    path: &str,
    region: &str,
    body: &impl serde::Serialize,
) -> Result<T, u16> {
    use tower::ServiceExt;
    let body = postcard::to_stdvec(body).unwrap();
    // Signed at home's (test) clock, as a region's own clock would be near it.
    let at = svc::clock::Clock::now(&home.clock).0;
    let mac = svc_core::link::request_mac(&crate::common::region_token(region), region, "POST", path, at, &body);
    let request = axum::http::Request::post(path)
        .header(svc_core::link::REGION_HEADER, region)
        .header(svc_core::link::AT_HEADER, at)
        .header(svc_core::link::MAC_HEADER, mac)
        .body(axum::body::Body::from(body))
        .unwrap();
    let answer = svc::http::internal_router(home.state.clone()).oneshot(request).await.unwrap();
    let status = answer.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(answer.into_body()).await.unwrap().to_bytes();
    if status == 200 { Ok(postcard::from_bytes(&bytes).unwrap()) } else { Err(status) }
}

// rule: R4.1.19
#[tokio::test(flavor = "multi_thread")]
async fn home_leases_a_campaigns_money_to_regions_and_never_more_than_it_may_spend() {
    use svc::service::ads::ledger::{AdLeaseAsk, AdLeaseSettle};
    use svc_core::ads::Micros;
    use svc_core::ads::ledger::Lease;
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        use svc::config::{RegionCredential, ReplicationConfig};
        let regions = ["eu", "ap"].map(|r| RegionCredential::new(r, &crate::common::region_token(r))).to_vec();
        config.replication = Some(ReplicationConfig::home(regions));
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let business = home.business("Lumen", products_scope(100)).await;
    assert_eq!(home.publish(&business, &[product("Lumen", "L-1", "9.00")], "one").await.status, 200);
    home.wait_indexed().await;
    let caller = home.caller("Reader").await;
    let all = json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "price_amount:asc"});
    let record = ids(&home.search(&caller, "/v1/search", all).await.body)[0].clone();
    let made = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": terms("lamps", "1.00"), "items": [record]}),
        )
        .await;
    let campaign = made.body["campaign_id"].as_str().unwrap().to_owned();
    let ask = |region: &str, want: u64| AdLeaseAsk {
        region: region.into(),
        campaign_id: campaign.clone(),
        want: Micros(want),
    };

    // Unfunded: nothing to lease.
    let none: Option<Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 100)).await.unwrap();
    assert!(none.is_none());
    home.admin("POST", &format!("/admin/campaigns/{campaign}/funds"), json!({"amount": "5"})).await;
    // Spendable is the lesser of the budget (1.00) and the funds (5.00).
    let eu: Option<Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 700_000)).await.unwrap();
    let ap: Option<Lease> = link(&home, "/internal/v1/ad-lease", "ap", &ask("ap", 700_000)).await.unwrap();
    let (eu, ap) = (eu.unwrap(), ap.unwrap());
    assert_eq!((eu.amount, ap.amount), (Micros(700_000), Micros(300_000)), "the second gets what is left");
    let more: Option<Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 1)).await.unwrap();
    assert!(more.is_none(), "never more than the campaign may spend");
    // A region speaks only for itself, and settles only its own lease.
    assert_eq!(link::<Option<Lease>>(&home, "/internal/v1/ad-lease", "eu", &ask("ap", 1)).await.unwrap_err(), 401);
    let theirs =
        AdLeaseSettle { region: "eu".into(), campaign_id: campaign.clone(), lease_id: ap.lease_id, used: Micros(0) };
    assert_eq!(link::<()>(&home, "/internal/v1/ad-settle", "eu", &theirs).await.unwrap_err(), 404);
    let too_much = AdLeaseSettle { used: Micros(700_001), lease_id: eu.lease_id, ..theirs.clone() };
    assert_eq!(link::<()>(&home, "/internal/v1/ad-settle", "eu", &too_much).await.unwrap_err(), 400);
    // eu used 0.25 and hands the rest back: that much can be leased again.
    let settled = AdLeaseSettle { used: Micros(250_000), lease_id: eu.lease_id, ..theirs };
    link::<()>(&home, "/internal/v1/ad-settle", "eu", &settled).await.unwrap();
    let shown = home.admin("POST", &format!("/admin/campaigns/{campaign}/state"), json!({"state": "active"})).await;
    let money = (&shown.body["spent"], &shown.body["leased"], &shown.body["left"]);
    assert_eq!(money, (&json!("0.25"), &json!("0.30"), &json!("0.45")), "{:?}", shown.body);
    let again: Option<Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 1_000_000)).await.unwrap();
    assert_eq!(again.unwrap().amount, Micros(450_000));
    // Both regions are lost: their leases count in full once they expire,
    // so what they may have spent unreported is never given out again.
    home.clock.advance(svc::service::ads::ledger::LEASE_MS);
    let after: Option<Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 1_000_000)).await.unwrap();
    assert!(after.is_none(), "0.25 settled, 0.30 and 0.45 expired: the whole 1.00 is spent");
}
