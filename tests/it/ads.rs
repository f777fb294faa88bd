//! Paid placements in search (issue 28, in part): campaigns the operator
//! funds mark their rows `sponsored` outside the row signature and in the
//! receipt, and never move a row.

use serde_json::{Value, json};
use svc_core::rng::Rng;

use std::sync::atomic::Ordering;

use svc_core::ads::images::png_header;

use crate::common::images::ImageServer;
use crate::common::{Clock, Home, product, products_scope};

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

// rule: R1.10, R1.43, R2.3.13, R2.4.3, R2.4.4, R2.4.16, R2.6.5
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
        // The filter on `sponsored` splits the same order in two: exactly
        // the marked rows, and exactly the others, each where it stood.
        let mut whole = query.clone();
        whole["limit"] = json!(50);
        let every = home.search(&caller, "/v1/search", whole.clone()).await;
        for wanted in [true, false] {
            let mut filtered = whole.clone();
            filtered["filter"]["all"].as_array_mut().unwrap().push(json!({"sponsored": wanted}));
            let answer = home.search(&caller, "/v1/search", filtered.clone()).await;
            let expected: Vec<&Value> = every.body["rows"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| (r.get("sponsored") == Some(&json!(true))) == wanted)
                .collect();
            let got: Vec<&Value> = answer.body["rows"].as_array().unwrap().iter().collect();
            assert_eq!(got, expected, "case {case}: {filtered}");
        }
        for id in &campaigns {
            home.admin("POST", &format!("/admin/campaigns/{id}/state"), json!({"state": "paused"})).await;
        }
        let without = home.search(&caller, "/v1/search", query.clone()).await;
        assert!(without.body["rows"].as_array().unwrap().iter().all(|r| r.get("sponsored").is_none()), "paused");
        let mut paid = whole.clone();
        paid["filter"]["all"].as_array_mut().unwrap().push(json!({"sponsored": true}));
        assert_eq!(home.search(&caller, "/v1/search", paid).await.body["rows"], json!([]), "paused: none is paid");
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
    let at = svc_clock::Clock::now(&home.clock).0;
    let id = hex::encode(svc_clock::random::<16>());
    let request =
        crate::common::link_request_at("POST", path, region, &crate::common::region_token(region), body, at, &id);
    let answer = svc_http::api::internal_router(home.state.clone()).oneshot(request).await.unwrap();
    let status = answer.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(answer.into_body()).await.unwrap().to_bytes();
    if status == 200 { Ok(postcard::from_bytes(&bytes).unwrap()) } else { Err(status) }
}

// rule: R4.1.19
#[tokio::test(flavor = "multi_thread")]
async fn home_leases_a_campaigns_money_to_regions_and_never_more_than_it_may_spend() {
    use svc_core::ads::Micros;
    use svc_core::ads::ledger::Lease;
    use svc_node::service::ads::ledger::{AdLeaseAsk, AdLeaseSettle};
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        use svc_node::config::{RegionCredential, ReplicationConfig};
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
    // Events of 0.05: a lease is whole events.
    let ask = |region: &str, want: u64| AdLeaseAsk {
        region: region.into(),
        campaign_id: campaign.clone(),
        want: Micros(want),
        event: Micros(50_000),
    };
    let lease = |region: &'static str, want: u64| {
        let ask = ask(region, want);
        let home = &home;
        async move { link::<Option<Lease>>(home, "/internal/v1/ad-lease", region, &ask).await.unwrap() }
    };
    let money = async || {
        let shown = home.admin("POST", &format!("/admin/campaigns/{campaign}/state"), json!({"state": "active"})).await;
        [&shown.body["spent"], &shown.body["leased"], &shown.body["left"]].map(|v| v.as_str().unwrap().to_owned())
    };

    // Unfunded: nothing to lease.
    assert!(lease("eu", 100_000).await.is_none());
    home.admin("POST", &format!("/admin/campaigns/{campaign}/funds"), json!({"amount": "5"})).await;
    // Spendable is the lesser of the budget (1.00) and the funds (5.00). A
    // region's first lease is at most a third of what is left (home, eu and
    // ap), in whole events, so each region finds some.
    let (eu, ap) = (lease("eu", 700_000).await.unwrap(), lease("ap", 700_000).await.unwrap());
    assert_eq!((eu.amount, ap.amount), (Micros(300_000), Micros(200_000)), "a third, then a third of the rest");
    let mut rest = Vec::new();
    while let Some(more) = lease("eu", 700_000).await {
        rest.push(more.amount.0);
    }
    assert_eq!(rest, [500_000], "then what it asks, never more than the campaign may spend");
    assert_eq!(money().await, ["0.00", "1.00", "0.00"]);
    // Asks out of range, or for another region, are refused.
    let mut zero = ask("eu", 0);
    zero.event = Micros(0);
    assert_eq!(link::<Option<Lease>>(&home, "/internal/v1/ad-lease", "eu", &zero).await.unwrap_err(), 400);
    assert_eq!(link::<Option<Lease>>(&home, "/internal/v1/ad-lease", "eu", &ask("eu", 1)).await.unwrap_err(), 400);
    assert_eq!(link::<Option<Lease>>(&home, "/internal/v1/ad-lease", "eu", &ask("ap", 1)).await.unwrap_err(), 401);
    // A region settles only its own lease, and never for more than it held.
    let theirs =
        AdLeaseSettle { region: "eu".into(), campaign_id: campaign.clone(), lease_id: ap.lease_id, used: Micros(0) };
    assert_eq!(link::<()>(&home, "/internal/v1/ad-settle", "eu", &theirs).await.unwrap_err(), 404);
    let too_much = AdLeaseSettle { used: Micros(300_001), lease_id: eu.lease_id, ..theirs.clone() };
    assert_eq!(link::<()>(&home, "/internal/v1/ad-settle", "eu", &too_much).await.unwrap_err(), 400);
    // eu used 0.25 of its first lease and hands the rest back: that much can be leased again.
    let settled = AdLeaseSettle { used: Micros(250_000), lease_id: eu.lease_id, ..theirs };
    link::<()>(&home, "/internal/v1/ad-settle", "eu", &settled).await.unwrap();
    assert_eq!(money().await, ["0.25", "0.70", "0.05"]);
    assert_eq!(lease("eu", 1_000_000).await.unwrap().amount, Micros(50_000));
    // Both regions are lost: their leases count in full once they expire,
    // so what they may have spent unreported is never given out again.
    home.clock.advance(svc_node::service::ads::ledger::LEASE_MS);
    assert_eq!(money().await, ["1.00", "0.00", "0.00"], "0.25 settled and 0.75 expired");
}

/// An ad showing the image server's square and landscape images, or none.
fn ad(own_id: &str, headline: &str, images: Option<&ImageServer>) -> Vec<u8> {
    let mut ad = svc_core::records::examples::example(svc_core::ids::RecordType::Ads);
    ad["ad_id"] = json!(own_id);
    ad["headline"] = json!(headline);
    let fields = ad.as_object_mut().unwrap();
    match images {
        Some(server) => {
            fields.insert("image_square_url".into(), json!(server.url("/square.png")));
            fields.insert("image_landscape_url".into(), json!(server.url("/wide.png")));
        }
        None => {
            fields.remove("image_square_url");
            fields.remove("image_landscape_url");
        }
    }
    serde_json::to_vec(&ad).unwrap()
}

fn ad_terms(budget: &str, net_price: &str, basis: &str) -> Value {
    json!({"name": "lamps", "placement": "ad", "budget": budget, "net_price": net_price, "basis": basis,
        "keywords": ["lamp", "desk"], "countries": ["FR"], "formats": ["compact", "card"],
        "repeats": {"allowed": false, "max_per_conversation": 1}})
}

fn pool_body(session_ref: &str) -> Value {
    json!({"country": "FR", "keywords": ["Lamp"], "formats": ["card"], "sort_by": "net_price:desc,random:asc",
        "size": 20, "session_ref": session_ref})
}

/// A signed ad call with an Idempotency-Key.
async fn ad_call(
    home: &Home,
    caller: &crate::common::Caller,
    path: &str,
    body: &Value,
    idem: &str,
) -> crate::common::Answer {
    let body = serde_json::to_vec(body).unwrap();
    home.signed(&caller.key, "POST", path, &body, "svc-retrieval", &[("idempotency-key", idem)]).await
}

/// A business with two sealed ads in one funded campaign.
async fn ads_on_sale(
    home: &Home,
    budget: &str,
    net_price: &str,
    basis: &str,
    images: Option<&ImageServer>,
) -> (Vec<String>, String, crate::common::Business) {
    ads_of("Lumen", home, budget, net_price, basis, images).await
}

/// As `ads_on_sale`, of the business named `name`.
async fn ads_of(
    name: &str,
    home: &Home,
    budget: &str,
    net_price: &str,
    basis: &str,
    images: Option<&ImageServer>,
) -> (Vec<String>, String, crate::common::Business) {
    let business = home.business(name, products_scope(100_000)).await;
    let mut ad_ids = Vec::new();
    for (own, headline) in [("winter", "Warm lamps"), ("desk", "Desk lamps")] {
        let saved = home.save_sealed(&business, "ads", &ad(own, headline, images)).await;
        assert_eq!(saved.status, 201, "{:?}", saved.body);
        ad_ids.push(saved.body["record_id"].as_str().unwrap().to_owned());
    }
    let made = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": ad_terms(budget, net_price, basis), "items": ad_ids}),
        )
        .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let campaign = made.body["campaign_id"].as_str().unwrap().to_owned();
    let funded = home.admin("POST", &format!("/admin/campaigns/{campaign}/funds"), json!({"amount": budget})).await;
    assert_eq!(funded.status, 200, "{:?}", funded.body);
    home.wait_indexed().await;
    (ad_ids, campaign, business)
}

fn payload(envelope: &Value) -> Value {
    let bytes = svc_core::b64::std_decode(envelope["payload"].as_str().unwrap()).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

// rule: P4.2.19, P4.2.23, R4.1.1, R4.1.5, R4.1.9, R4.1.10, R4.1.17, R4.1.18, R2.8.1, R2.8.2, R2.8.3, R2.8.4, R2.8.5, R2.8.6, R2.8.7, R2.8.8, R2.8.9, R2.8.10, R2.8.12, R4.1.22, R4.3.1
#[tokio::test(flavor = "multi_thread")]
async fn a_pool_holds_funded_ads_in_the_callers_order_each_with_a_render_token_and_a_receipt() {
    let images = ImageServer::start().await;
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| images.trust(config)).await;
    let (ad_ids, campaign, business) = ads_on_sale(&home, "10", "200.00", "cpm", Some(&images)).await;
    assert_eq!(images.hits.load(Ordering::SeqCst), 4, "each ad's two images fetched once, when it was saved");
    let caller = home.caller("Reader").await;

    let mut no_sort = pool_body("c1");
    no_sort.as_object_mut().unwrap().remove("sort_by");
    let refused = ad_call(&home, &caller, "/v1/ads/pool", &no_sort, "p0").await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("sort_required")), "{:?}", refused.body);
    let mut other_sort = pool_body("c1");
    other_sort["sort_by"] = json!("price:asc");
    let refused = ad_call(&home, &caller, "/v1/ads/pool", &other_sort, "p0").await;
    assert_eq!(refused.body["code"], "sort_not_allowed", "{:?}", refused.body);
    let mut elsewhere = pool_body("c1");
    elsewhere["country"] = json!("DE");
    let none = ad_call(&home, &caller, "/v1/ads/pool", &elsewhere, "p0").await;
    assert_eq!((none.status, none.body["ads"].as_array().unwrap().len()), (200, 0), "not running in DE");

    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c1"), "p1").await;
    assert_eq!(pooled.status, 200, "{:?}", pooled.body);
    let ads = pooled.body["ads"].as_array().unwrap();
    assert_eq!(ads.len(), 2, "{:?}", pooled.body);
    // Equal prices: the random key, seeded by the pool's retrieval_id, orders them.
    let retrieval_id = pooled.body["retrieval_id"].as_str().unwrap();
    let mut expected = ad_ids.clone();
    expected.sort_by_key(|id| svc_core::ads::pool::random_key(retrieval_id, id));
    let got: Vec<&str> = ads.iter().map(|a| a["ad_id"].as_str().unwrap()).collect();
    assert_eq!(got, expected);
    let item = &ads[0];
    assert_eq!(item["label"], "Ad");
    assert_eq!(item["campaign_id"], campaign.as_str());
    assert_eq!(item["formats"], json!(["card"]), "offered among those asked");
    assert_eq!(item["net_price"], json!({"amount": "200.00", "currency": "USD", "basis": "cpm"}));
    assert_eq!(item["creative"]["display_domain"], "shop.example.com");
    assert_eq!(item["creative"]["cta"], "See the lamps");
    assert!(item.get("gross_price").is_none() && item["net_price"].get("take_rate").is_none());
    let record = svc_core::b64::std_decode(item["record_base64"].as_str().unwrap()).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&record).unwrap()["schema"], "service/ads/1");
    assert_eq!(item["ai_policy"], json!({"version": 0, "record_base64": null, "seal": null}));
    let token = payload(&item["render_token"]);
    assert_eq!(item["render_token"]["payloadType"], "application/vnd.service.render.v1+json");
    assert_eq!(
        (token["retrieval_id"].as_str(), token["company_uuid"].as_str()),
        (Some(retrieval_id), Some(caller.company_uuid.as_str()))
    );
    // The receipt names each ad with the hash of its bytes.
    let receipt = payload(&pooled.body["receipt"]);
    assert_eq!(receipt["retrieval_id"], retrieval_id);
    assert_eq!(receipt["caller_key_id"], caller.key_id.as_str());
    let rows: Vec<&str> = receipt["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(rows, got);
    assert_eq!(receipt["rows"][0]["adl_origin"], svc_core::digest::sha256_prefixed(&record).as_str());
    assert_eq!(receipt["rows"][0]["row_sig"], item["row"]["adl_row_sig"]);

    // The signed row: the seal inline, the destination, each image's hash,
    // and the serve-time AI policy bits outside the signature.
    let row = item["row"].as_object().unwrap();
    assert_eq!(row["type"], "ads");
    assert_eq!(row["adl_origin_seal"], item["adl_origin_seal"]);
    assert_eq!(row["adl_dest"], item["creative"]["destination_url"]);
    let square = svc_core::digest::sha256_prefixed(&png_header(600, 600));
    let wide = svc_core::digest::sha256_prefixed(&png_header(1200, 628));
    assert_eq!(row["adl_creative"], json!({"image_square": square, "image_landscape": wide}));
    assert_eq!(row["ai_policy_bits"]["ai_policy_version"], 0);
    let keys = home.state.key_set.clone();
    let now = home.clock.now();
    svc_core::projection::verify_row(row, |kid| keys.key(svc_core::keyset::Purpose::Projection, kid, now, now))
        .expect("the ad's row verifies under the projection key");

    // Each image through the region's signed link: the stored bytes, good
    // for 15 minutes, and only as signed; the advertiser is not asked again.
    let link = item["creative"]["image_square_url"].as_str().unwrap();
    let path = link.strip_prefix(&home.state.config.public_base()).expect("a link to this region");
    let shown = home.get(path).await;
    assert_eq!((shown.status, shown.bytes.clone()), (200, png_header(600, 600)));
    assert_eq!(shown.headers["content-type"], "image/png");
    assert_eq!(shown.headers["x-content-type-options"], "nosniff");
    let forged = home.get(&path.replace("sig=", "sig=00")).await;
    assert_eq!((forged.status, forged.body["code"].as_str()), (401, Some("signature_invalid")));
    let bare = home.get(path.split('?').next().unwrap()).await;
    assert_eq!((bare.status, bare.body["code"].as_str()), (400, Some("request_invalid")));
    assert_eq!(images.hits.load(Ordering::SeqCst), 4, "shown from the service's copy");

    // Anyone can check the item as served (P4.2.23): its seal, its row, and
    // that every text and link it would show is the sealed one.
    let verify = |item: Value| {
        let home = &home;
        async move {
            let body = serde_json::to_vec(&json!({"ad_item": item})).unwrap();
            let mut request = axum::http::Request::post("/v1/verify")
                .header("host", crate::common::AUTHORITY)
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body))
                .unwrap();
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.1:50000".parse().unwrap()));
            home.send(request).await
        }
    };
    let checked = verify(item.clone()).await;
    assert_eq!(checked.status, 200, "{:?}", checked.body);
    assert_eq!(checked.body["seal"]["valid"], true, "{:?}", checked.body["seal"]);
    assert_eq!(checked.body["seal"]["record_type"], "ads");
    assert_eq!(
        (checked.body["projection"]["row_signature"].as_str(), checked.body["projection"]["rerun"].as_str()),
        (Some("ok"), Some("matches")),
        "{:?}",
        checked.body["projection"]
    );
    assert_eq!(checked.body["ad_item"], json!({"shown_is_sealed": "ok", "differ": []}));
    let mut shown_otherwise = item.clone();
    shown_otherwise["creative"]["headline"] = json!("Lamps at half price");
    let checked = verify(shown_otherwise).await;
    assert_eq!(checked.body["ad_item"]["differ"], json!(["creative.headline"]), "{:?}", checked.body);
    assert_eq!(checked.body["seal"]["valid"], true, "the seal itself still holds");
    let mut other_image = item.clone();
    other_image["row"]["adl_creative"]["image_square"] = json!(square.replace('a', "b"));
    let checked = verify(other_image).await;
    assert_eq!(checked.body["projection"]["row_signature"], "failed", "{:?}", checked.body);

    // An ad saved again shows its new version in the next pool.
    let saved = home.save_sealed(&business, "ads", &ad("winter", "Warmer lamps", Some(&images))).await;
    assert_eq!((saved.status, saved.body["version"].as_u64()), (201, Some(2)), "{:?}", saved.body);
    let after = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c9"), "p9").await;
    let headlines: Vec<&str> =
        after.body["ads"].as_array().unwrap().iter().map(|a| a["creative"]["headline"].as_str().unwrap()).collect();
    assert!(headlines.contains(&"Warmer lamps") && !headlines.contains(&"Warm lamps"), "{headlines:?}");

    home.clock.advance(svc_core::ads::images::LINK_VALID_MS);
    let stale = home.get(path).await;
    assert_eq!((stale.status, stale.body["code"].as_str()), (401, Some("signature_expired")));
}

// rule: R4.1.22, R2.8.4
#[tokio::test(flavor = "multi_thread")]
async fn an_ad_whose_images_the_service_cannot_fetch_or_use_is_refused_with_the_member_at_fault() {
    let images = ImageServer::start().await;
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| images.trust(config)).await;
    let business = home.business("Lumen", products_scope(100_000)).await;
    let with = |square: String, wide: String| {
        let mut ad: Value = serde_json::from_slice(&ad("a", "Lamps", None)).unwrap();
        ad["image_square_url"] = json!(square);
        ad["image_landscape_url"] = json!(wide);
        serde_json::to_vec(&ad).unwrap()
    };
    // A square image in the landscape slot, and an image over the size cap.
    let saved = home.save_sealed(&business, "ads", &with(images.url("/huge.png"), images.url("/square.png"))).await;
    assert_eq!(saved.body["outcome"], "rejected", "{:?}", saved.body);
    let pointers: Vec<&str> =
        saved.body["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap()).collect();
    assert_eq!(pointers, ["/image_square_url", "/image_landscape_url"], "{:?}", saved.body);
    let missing = home.save_sealed(&business, "ads", &with(images.url("/gone.png"), images.url("/wide.png"))).await;
    assert_eq!(missing.body["errors"][0]["pointer"], "/image_square_url", "{:?}", missing.body);

    // Without the operator's leave, the service fetches nothing from its
    // own network, whatever the name says.
    let strict = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        images.trust(config);
        config.ad_images.allow_private_addresses = false;
    })
    .await;
    let business = strict.business("Lumen", products_scope(100_000)).await;
    let before = images.hits.load(Ordering::SeqCst);
    let inward = strict.save_sealed(&business, "ads", &with(images.url("/square.png"), images.url("/wide.png"))).await;
    assert_eq!(inward.body["outcome"], "rejected", "{:?}", inward.body);
    assert!(inward.body["errors"][0]["detail"].as_str().unwrap().contains("not public"), "{:?}", inward.body);
    assert_eq!(images.hits.load(Ordering::SeqCst), before, "never connected");
}

// rule: P2.5.33, R3.3, R3.4, R3.6, R3.7, R3.9, R3.11, R3.14, R4.2.1, R4.2.2, R4.2.4, R4.2.5, R4.2.6, R4.2.7, R7.9
#[tokio::test(flavor = "multi_thread")]
async fn renders_and_clicks_follow_the_confirmation_table() {
    let home = Home::start().await;
    // 200.00 per thousand renders: 0.20 a render, five renders in a dollar.
    let (_, campaign, _) = ads_on_sale(&home, "1", "200.00", "cpm", None).await;
    let caller = home.caller("Reader").await;
    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c1"), "p1").await;
    let ads = pooled.body["ads"].as_array().unwrap().clone();
    let render = |i: usize, session: &str| json!({"render_token": ads[i]["render_token"], "format": "card", "session_ref": session});

    // Refusals: no Idempotency-Key, a format not offered, both forms, a forged token.
    let body = serde_json::to_vec(&render(0, "c1")).unwrap();
    let bare = home.signed(&caller.key, "POST", "/v1/ads/render", &body, "svc-retrieval", &[]).await;
    assert_eq!((bare.status, bare.body["code"].as_str()), (400, Some("request_invalid")));
    let mut compact = render(0, "c1");
    compact["format"] = json!("compact");
    assert_eq!(ad_call(&home, &caller, "/v1/ads/render", &compact, "r0").await.body["code"], "request_invalid");
    let mut both = render(0, "c1");
    both["retrieval_id"] = pooled.body["retrieval_id"].clone();
    assert_eq!(ad_call(&home, &caller, "/v1/ads/render", &both, "r0").await.body["code"], "request_invalid");
    let mut forged = render(0, "c1");
    let mut token = payload(&ads[0]["render_token"]);
    token["company_uuid"] = json!("00000000-0000-4000-8000-000000000000");
    forged["render_token"]["payload"] = json!(svc_core::b64::std_encode(&serde_json::to_vec(&token).unwrap()));
    let answer = ad_call(&home, &caller, "/v1/ads/render", &forged, "r0").await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (400, Some("token_invalid")));
    let stranger = home.caller("Stranger").await;
    let answer = ad_call(&home, &stranger, "/v1/ads/render", &render(0, "c1"), "r0").await;
    assert_eq!(answer.body["code"], "token_invalid", "issued to another company");

    // Accepted with a click token; the same key and body replay the first answer.
    let first = ad_call(&home, &caller, "/v1/ads/render", &render(0, "c1"), "r1").await;
    assert_eq!((first.status, &first.body["accepted"]), (200, &json!(true)), "{:?}", first.body);
    assert_eq!(first.body["click_token"]["payloadType"], "application/vnd.service.click.v1+json");
    let again = ad_call(&home, &caller, "/v1/ads/render", &render(0, "c1"), "r1").await;
    assert_eq!(again.body, first.body, "replayed");
    let other_body = ad_call(&home, &caller, "/v1/ads/render", &render(0, "c9"), "r1").await;
    assert_eq!(other_body.body["code"], "request_invalid", "one key, another body");
    let reused = ad_call(&home, &caller, "/v1/ads/render", &render(0, "c1"), "r2").await;
    assert_eq!(reused.body, json!({"accepted": false, "reason": "token_reused"}));

    // The rendered ad leaves that conversation's pools for an hour, not others'.
    let same = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c1"), "p2").await;
    let ids = |a: &crate::common::Answer| -> Vec<String> {
        a.body["ads"].as_array().unwrap().iter().map(|x| x["ad_id"].as_str().unwrap().to_owned()).collect()
    };
    assert!(!ids(&same).contains(&ads[0]["ad_id"].as_str().unwrap().to_owned()), "{:?}", same.body);
    assert_eq!(ids(&ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c2"), "p3").await).len(), 2);

    // A click on a cpm campaign is accepted and not charged; clicks go on.
    let click = json!({"click_token": first.body["click_token"], "session_ref": "c1"});
    let clicked = ad_call(&home, &caller, "/v1/ads/click", &click, "k1").await;
    assert_eq!(clicked.body, json!({"accepted": true}), "{:?}", clicked.body);
    assert_eq!(ad_call(&home, &caller, "/v1/ads/click", &click, "k2").await.body, json!({"accepted": true}));

    // Renders spend the dollar, and not a cent past it. A render costs
    // 0.20; one is spent, and the two pools above still reserve 0.40 for
    // ten minutes, so two more renders fit, then the campaign leaves pools.
    let mut accepted = 0;
    let mut exhausted = 0;
    for round in 0..8 {
        let session = format!("spend-{round}");
        let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body(&session), &format!("sp{round}")).await;
        let Some(item) = pooled.body["ads"].as_array().unwrap().first().cloned() else { continue };
        let body = json!({"render_token": item["render_token"], "format": "card", "session_ref": session});
        let answer = ad_call(&home, &caller, "/v1/ads/render", &body, &format!("sr{round}")).await;
        match answer.body["reason"].as_str() {
            None => accepted += 1,
            Some("budget_exhausted") => exhausted += 1,
            Some(other) => panic!("{other}"),
        }
    }
    assert_eq!(accepted, 2, "0.20 spent and 0.40 reserved of the dollar");
    assert!(exhausted == 0, "a spent campaign leaves pools rather than failing renders");
    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("after"), "spx").await;
    assert!(pooled.body["ads"].as_array().unwrap().is_empty(), "nothing left to reserve: {:?}", pooled.body);
    let book = home.state.ads.call(svc_node::actors::ad_reservations::AdMsg::Observe).await.unwrap();
    assert_eq!(book.leases[&campaign].used, svc_core::ads::Micros(600_000), "three renders of 0.20");
    let reserved: u64 = book.reserves().map(|r| r.cost.0).sum();
    assert_eq!(reserved, 400_000, "two pools' reserves");
    assert_eq!(book.leases[&campaign].amount, svc_core::ads::Micros(1_000_000), "all home had");

    // Ten minutes after the pool the window is closed.
    home.clock.advance((10 * 60 + 1) * 1000);
    let late = ad_call(&home, &caller, "/v1/ads/render", &render(1, "c3"), "r3").await;
    assert_eq!(late.body, json!({"accepted": false, "reason": "window_expired"}), "{:?}", late.body);
    // A day after the render, so is its click.
    home.clock.advance(24 * 3600 * 1000);
    let stale = ad_call(&home, &caller, "/v1/ads/click", &click, "k3").await;
    assert_eq!(stale.body, json!({"accepted": false, "reason": "window_expired"}));

    // The business sees what was accepted: three renders charged 0.20
    // each and two clicks on a cpm campaign, charged nothing.
    let business_uuid = ads[0]["business_uuid"].as_str().unwrap();
    let days = ad_days(&home, business_uuid).await;
    assert_eq!(days.len(), 1, "{days:?}");
    assert_eq!((&days[0]["country"], &days[0]["ai_group"]), (&json!("FR"), &json!("assistants")), "{days:?}");
    assert_eq!((&days[0]["ad_renders"], &days[0]["ad_clicks"]), (&json!(3), &json!(2)));
    assert_eq!(days[0]["spend_gross"], json!({"amount": "0.60", "currency": "USD"}));
}

// rule: R2.8.7, R4.1.19, P2.5.33
#[tokio::test(flavor = "multi_thread")]
async fn a_campaign_pays_the_take_rate_on_the_net_price_and_the_rate_never_leaves_the_service() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| config.ads.take_rate_bps = 2_000).await;
    // A dollar at 200.00 net a thousand: a render is 0.20 net and charges
    // 0.25 at a 20 % take, so the dollar pays four.
    let (_, campaign, _) = ads_on_sale(&home, "1", "200.00", "cpm", None).await;
    let caller = home.caller("Reader").await;
    let mut accepted = 0;
    let mut business_uuid = String::new();
    for round in 0..8 {
        let session = format!("take-{round}");
        let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body(&session), &format!("tp{round}")).await;
        let Some(item) = pooled.body["ads"].as_array().unwrap().first().cloned() else { continue };
        assert_eq!(item["net_price"], json!({"amount": "200.00", "currency": "USD", "basis": "cpm"}));
        let text = String::from_utf8_lossy(&pooled.bytes).to_lowercase();
        for leak in ["gross", "take", "250.00", "0.25\""] {
            assert!(!text.contains(leak), "{leak} leaves the service: {text}");
        }
        business_uuid = item["business_uuid"].as_str().unwrap().to_owned();
        let body = json!({"render_token": item["render_token"], "format": "card", "session_ref": session});
        let answer = ad_call(&home, &caller, "/v1/ads/render", &body, &format!("tr{round}")).await;
        accepted += u32::from(answer.body["accepted"] == true);
    }
    assert_eq!(accepted, 4, "0.25 a render of a dollar");
    let shown = home.admin("GET", &format!("/admin/campaigns/{campaign}"), json!(null)).await;
    assert_eq!(shown.body["left"], "0.00", "{:?}", shown.body);
    // The business sees what it paid.
    home.clock.advance(3_600_000);
    let days = ad_days(&home, &business_uuid).await;
    assert_eq!(days[0]["ad_renders"], 4);
    assert_eq!(days[0]["spend_gross"], json!({"amount": "1.00", "currency": "USD"}));
}

// rule: R3.12, R3.14, P2.5.33
// Two regions each charge a first render of one item in one conversation
// before either learned of the other: home, which learns both, credits the
// second back to the campaign and takes it off the business's spend.
#[tokio::test(flavor = "multi_thread")]
async fn home_credits_back_a_charge_two_regions_made_for_one_conversation() {
    use svc_core::ads::Micros;
    use svc_node::replication::exchange::{AdFact, AdFactKind, Charge, Outgoing, Report, ReportTaken};
    use svc_store::model::AdEvent;
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        use svc_node::config::{RegionCredential, ReplicationConfig};
        config.replication =
            Some(ReplicationConfig::home(vec![RegionCredential::new("eu", &crate::common::region_token("eu"))]));
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    // 0.20 a render, no repeats.
    let (_, campaign, business) = ads_on_sale(&home, "10", "200.00", "cpm", None).await;
    let caller = home.caller("Reader").await;
    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("both"), "p").await;
    let item = pooled.body["ads"][0].clone();
    let render = json!({"render_token": item["render_token"], "format": "card", "session_ref": "both"});
    assert_eq!(ad_call(&home, &caller, "/v1/ads/render", &render, "r").await.body["accepted"], true);
    let left = || async {
        let shown = home.admin("GET", &format!("/admin/campaigns/{campaign}"), json!(null)).await;
        Micros::parse(shown.body["left"].as_str().unwrap()).unwrap().0
    };

    // eu's report of its own first render of the same item, charged, in
    // the same conversation (the digest under the service's one secret).
    let secret: Vec<u8> =
        home.state.store.get(svc_store::cf::ad_book::CONVERSATION_SECRET, b"conversation_secret").unwrap().unwrap();
    let now = home.clock.now();
    let charged = |session: &str, seq: u64| {
        let charge = Charge {
            campaign_id: campaign.clone(),
            amount: Micros(200_000),
            business_uuid: business.uuid.clone(),
            group_id: caller.group_id.clone(),
            country: Some("FR".into()),
        };
        let conversation = svc_core::ads::conversation(&secret, session);
        let item_id = item["ad_id"].as_str().unwrap().to_owned();
        let key_id = caller.key_id.clone();
        let kind = AdFactKind::Rendered { conversation, item_id, key_id, charge: Some(charge) };
        let event = AdEvent {
            seq,
            business_uuid: business.uuid.clone(),
            group_id: caller.group_id.clone(),
            country: Some("FR".into()),
            at: now,
            click: false,
            charged: Micros(200_000),
        };
        vec![Outgoing::AdEvent(event), Outgoing::AdFact(AdFact { seq, at: now, kind })]
    };
    let report = |entries| Report { region: "eu".into(), entries };
    // eu spends from a lease of its own; what home credits back of its
    // charges is bounded by what it leased eu.
    let ask = svc_node::service::ads::ledger::AdLeaseAsk {
        region: "eu".into(),
        campaign_id: campaign.clone(),
        want: Micros(200_000),
        event: Micros(200_000),
    };
    let leased: Option<svc_core::ads::ledger::Lease> = link(&home, "/internal/v1/ad-lease", "eu", &ask).await.unwrap();
    let leased = leased.unwrap();
    let before = left().await;
    for _ in 0..2 {
        let taken: ReportTaken = link(&home, "/internal/v1/report", "eu", &report(charged("both", 1))).await.unwrap();
        assert_eq!(taken.billed, 0);
    }
    assert_eq!(left().await, before + 200_000, "credited back once, however often the report came");
    // A charged render in another conversation is no repeat.
    let _: ReportTaken = link(&home, "/internal/v1/report", "eu", &report(charged("other", 2))).await.unwrap();
    assert_eq!(left().await, before + 200_000);

    // eu hands its lease back having spent two renders' worth.
    let used = Micros(400_000.min(leased.amount.0));
    let settle = svc_node::service::ads::ledger::AdLeaseSettle {
        region: "eu".into(),
        campaign_id: campaign.clone(),
        lease_id: leased.lease_id,
        used,
    };
    let () = link(&home, "/internal/v1/ad-settle", "eu", &settle).await.unwrap();
    let settled = left().await;

    // The business sees three renders and pays for two.
    home.clock.advance(3_600_000);
    let days = ad_days(&home, &business.uuid).await;
    assert_eq!(days[0]["ad_renders"], 3, "{days:?}");
    assert_eq!(days[0]["spend_gross"], json!({"amount": "0.40", "currency": "USD"}));

    // The attack: eu (or whoever holds its token) reports a charge of
    // u64::MAX made twice. The report is refused whole; no money moves.
    let mut forged = charged("both", 3);
    if let Outgoing::AdFact(AdFact { kind: AdFactKind::Rendered { charge: Some(charge), .. }, .. }) = &mut forged[1] {
        charge.amount = Micros(u64::MAX);
    }
    assert_eq!(link::<ReportTaken>(&home, "/internal/v1/report", "eu", &report(forged)).await.unwrap_err(), 400);
    assert_eq!(left().await, settled, "the campaign's money is unchanged");
    // Repeats of one conversation's render, each a real event's cost, are
    // credited only up to what eu spent (0.20 of it was credited above).
    let repeats = (3..40).map(|seq| charged("both", seq).remove(1)).collect();
    let _: ReportTaken = link(&home, "/internal/v1/report", "eu", &report(repeats)).await.unwrap();
    assert_eq!(left().await, settled + used.0 - 200_000, "never more back than eu spent from its own leases");
}

/// The days of a business's analytics with ad figures, once home folded
/// what it holds.
async fn ad_days(home: &Home, business_uuid: &str) -> Vec<Value> {
    use svc_node::actors::analytics::AnalyticsMsg;
    use svc_node::service::publishing::{DailyQuery, daily_of};
    home.state.analytics.cast(AnalyticsMsg::Tick).unwrap();
    home.state.analytics.call(AnalyticsMsg::Observe).await.unwrap();
    let daily = daily_of(&home.state, business_uuid, home.clock.now(), DailyQuery { from: None, to: None }).unwrap();
    daily["days"].as_array().unwrap().iter().filter(|d| d["ad_renders"] != 0 || d["ad_clicks"] != 0).cloned().collect()
}

/// A read region `eu` of `home_node` on `listen`, whose peer is home.
fn eu_config(
    dir: &std::path::Path,
    home: &Home,
    home_node: &svc_http::node::Node,
    listen: std::net::SocketAddr,
) -> svc_node::config::NodeConfig {
    use svc_node::config::{NodeConfig, Peer, ReplicationConfig, Role};
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.join("eu"), listen, loopback);
    config.environment = svc_store::model::Environment::Production;
    config.region = "eu".into();
    config.role = Role::Read;
    config.replication = Some(ReplicationConfig::read(
        Some(format!("http://{}", home_node.addr)),
        Some(format!("http://{}", home_node.internal_addr.unwrap())),
        &crate::common::region_token("eu"),
    ));
    config.peers = vec![Peer { name: home.state.config.region.clone(), url: format!("http://{}", home_node.addr) }];
    // The manual clock stands still: every request falls in one second.
    config.retrieval_limits.requests_per_second = 1_000_000;
    config
}

/// A signed ad call sent over TCP to the node at `addr`.
async fn ad_call_at(
    addr: std::net::SocketAddr,
    home: &Home,
    caller: &crate::common::Caller,
    path: &str,
    body: &Value,
    idem: &str,
) -> (u16, Value) {
    let body = serde_json::to_vec(body).unwrap();
    let request = home.signed_request(&caller.key, "POST", path, &body, "svc-retrieval", &[("idempotency-key", idem)]);
    let transport = svc_client::transport::Transport::new(&format!("http://{addr}")).unwrap();
    let answer = transport.send(request).await.unwrap();
    (answer.status, serde_json::from_slice(&answer.bytes).unwrap_or(Value::Null))
}

/// Home listening on TCP with a read region `eu` of it, each the other's peer.
async fn home_and_eu() -> (Home, svc_http::node::Node, svc_http::node::Node, tempfile::TempDir) {
    use svc_node::config::{Peer, RegionCredential, ReplicationConfig};
    let eu_listen = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (home, home_node) = Home::listening(|config| {
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
        config.replication =
            Some(ReplicationConfig::home(vec![RegionCredential::new("eu", &crate::common::region_token("eu"))]));
        config.peers = vec![Peer { name: "eu".into(), url: format!("http://{eu_listen}") }];
        config.retrieval_limits.requests_per_second = 1_000_000;
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let eu = svc_http::node::Node::start(
        eu_config(dir.path(), &home, &home_node, eu_listen),
        std::sync::Arc::new(home.clock.clone()),
    )
    .await
    .unwrap();
    (home, home_node, eu, dir)
}

/// The ad ids of a pool answer.
fn pooled_ids(answer: &Value) -> Vec<String> {
    answer["ads"].as_array().map_or(vec![], |a| a.iter().map(|x| x["ad_id"].as_str().unwrap().to_owned()).collect())
}

// rule: R3.11, R3.12, R3.14, R4.1.21
#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_and_a_keys_pace_are_one_across_regions() {
    use crate::common::eventually;
    use svc_node::actors::ad_reservations::AdMsg;
    let (home, home_node, eu, _dir) = home_and_eu().await;
    // A cpm campaign without repeats (0.20 a render) and a cpc one (1.00 a
    // click), each with money enough for both regions' first leases.
    let (_, cpm, _) = ads_on_sale(&home, "10", "200.00", "cpm", None).await;
    let (_, cpc, _) = ads_of("Halo", &home, "100", "1.00", "cpc", None).await;
    let caller = home.caller("Reader").await;
    let pool_at = |addr, session: &'static str, idem: &'static str| {
        let (home, caller) = (&home, &caller);
        async move { ad_call_at(addr, home, caller, "/v1/ads/pool", &pool_body(session), idem).await }
    };
    // One conversation pools in both regions before anything is rendered.
    let mut at_eu = Value::Null;
    eventually("eu pools all four ads", async || {
        home.clock.advance(1_000);
        at_eu = pool_at(eu.addr, "moving", "pe").await.1;
        pooled_ids(&at_eu).len() == 4
    })
    .await;
    let (_, at_home) = pool_at(home_node.addr, "moving", "ph").await;
    assert_eq!(pooled_ids(&at_home).len(), 4, "{at_home}");
    // The first ad of a campaign in a pool, or the one that is not `but`.
    let item = |pool: &Value, campaign: &str, but: Option<&Value>| -> Value {
        let mut of_campaign = pool["ads"].as_array().unwrap().iter().filter(|a| {
            payload(&a["render_token"])["campaign_id"] == campaign && but.is_none_or(|b| b["ad_id"] != a["ad_id"])
        });
        of_campaign.next().unwrap().clone()
    };
    let same = |pool: &Value, ad: &Value| -> Value {
        pool["ads"].as_array().unwrap().iter().find(|a| a["ad_id"] == ad["ad_id"]).unwrap().clone()
    };
    let render =
        |item: &Value| json!({"render_token": item["render_token"], "format": "card", "session_ref": "moving"});
    let observe = |node: &svc_http::node::Node, campaign: &str| {
        let (ads, campaign) = (node.state.ads.clone(), campaign.to_owned());
        async move { ads.call(AdMsg::Observe).await.unwrap().leases.get(&campaign).map_or(0, |l| l.used.0) }
    };

    // At eu: a render of each campaign and a click of the cpc one, all billed there.
    let (x, y) = (item(&at_eu, &cpm, None), item(&at_eu, &cpc, None));
    for (i, it) in [&x, &y].into_iter().enumerate() {
        let (_, answer) = ad_call_at(eu.addr, &home, &caller, "/v1/ads/render", &render(it), &format!("er{i}")).await;
        assert_eq!(answer["accepted"], true, "{answer}");
        if i == 1 {
            let click = json!({"click_token": answer["click_token"], "session_ref": "moving"});
            let (_, clicked) = ad_call_at(eu.addr, &home, &caller, "/v1/ads/click", &click, "ek").await;
            assert_eq!(clicked, json!({"accepted": true}));
        }
    }
    assert_eq!((observe(&eu, &cpm).await, observe(&eu, &cpc).await), (200_000, 1_000_000));
    eventually("home took eu's outbox", async || {
        svc_node::replication::exchange::pending_count(&eu.state.store).unwrap().0 == 0
    })
    .await;

    // Home knows: both items are out of the conversation's pools there, a
    // repeat render is accepted and not charged, and a repeat click within
    // 15 minutes is accepted and not charged.
    let (_, again) = pool_at(home_node.addr, "moving", "ph2").await;
    let left = pooled_ids(&again);
    assert!(!left.contains(&x["ad_id"].as_str().unwrap().to_owned()), "{again}");
    assert!(!left.contains(&y["ad_id"].as_str().unwrap().to_owned()), "{again}");
    assert_eq!(left.len(), 2, "{again}");
    let (hx, hy) = (same(&at_home, &x), same(&at_home, &y));
    let (_, repeat) = ad_call_at(home_node.addr, &home, &caller, "/v1/ads/render", &render(&hx), "hr1").await;
    assert_eq!(repeat["accepted"], true, "a repeat render is accepted: {repeat}");
    let (_, rendered) = ad_call_at(home_node.addr, &home, &caller, "/v1/ads/render", &render(&hy), "hr2").await;
    let click = json!({"click_token": rendered["click_token"], "session_ref": "moving"});
    let (_, clicked) = ad_call_at(home_node.addr, &home, &caller, "/v1/ads/click", &click, "hk").await;
    assert_eq!(clicked, json!({"accepted": true}));
    assert_eq!((observe(&home_node, &cpm).await, observe(&home_node, &cpc).await), (0, 0), "repeats, not charged");

    // At home: a first render of the other cpm ad, which eu then leaves out too.
    let w = item(&at_home, &cpm, Some(&x));
    let (_, answer) = ad_call_at(home_node.addr, &home, &caller, "/v1/ads/render", &render(&w), "hr3").await;
    assert_eq!(answer["accepted"], true, "{answer}");
    assert_eq!(observe(&home_node, &cpm).await, 200_000, "a first render is charged");
    let feed_head = || svc_node::replication::exchange::ad_feed(&home_node.state.store).unwrap().last();
    eventually("eu learned home's ad feed", async || {
        eu.state.ads.call(AdMsg::FeedCursor).await.unwrap() >= feed_head()
    })
    .await;
    let (_, at_eu) = pool_at(eu.addr, "moving", "pe2").await;
    assert_eq!(pooled_ids(&at_eu), [item(&at_home, &cpc, Some(&y))["ad_id"].as_str().unwrap()], "{at_eu}");

    // A key's pace: eu's pools up to the hour's 600 leave it none at home
    // either, until it renders.
    let now = home.clock.now();
    let mut at_eu_only = 0;
    loop {
        let (key_id, asks) = (caller.key_id.clone(), vec![]);
        let paced = eu.state.ads.call(|reply| AdMsg::Pool { key_id, asks, pace: true, now, reply }).await.unwrap();
        if paced.unwrap().is_err() {
            break;
        }
        at_eu_only += 1;
    }
    assert!(at_eu_only > 590, "eu counted home's few pools and its own: {at_eu_only}");
    let pace = |node: &svc_http::node::Node| {
        let (ads, key_id) = (node.state.ads.clone(), caller.key_id.clone());
        async move { ads.call(|reply| AdMsg::ObservePace { key_id, now, reply }).await.unwrap() }
    };
    eventually("home counts eu's pools", async || pace(&home_node).await.0 >= 600).await;
    let (status, refused) = pool_at(home_node.addr, "moving", "ph3").await;
    assert_eq!((status, refused["code"].as_str()), (429, Some("rate_limited")), "{refused}");
    // Every pool and render is counted alike in both regions once told.
    eventually("both regions count the key alike", async || pace(&home_node).await == pace(&eu).await).await;
    let (pools, renders) = pace(&eu).await;
    assert!(pools >= 600 && renders == 5, "{pools} pools, {renders} renders");
}

// rule: R4.2.11, R4.1.19, R4.1.20, R4.1.1, R4.2.1, R4.2.2
#[tokio::test(flavor = "multi_thread")]
async fn a_confirmation_is_judged_where_its_pool_was_served_and_two_regions_never_overspend() {
    let (home, home_node, eu, _dir) = home_and_eu().await;
    // One dollar at 0.20 a render: five renders, whichever region serves them.
    let (_, campaign, _) = ads_on_sale(&home, "1", "200.00", "cpm", None).await;
    let caller = home.caller("Reader").await;
    let mut pooled = Value::Null;
    let mut last = (0, Value::Null);
    for _ in 0..200 {
        let (status, body) = ad_call_at(eu.addr, &home, &caller, "/v1/ads/pool", &pool_body("route"), "p").await;
        if status == 200 && body["ads"].as_array().is_some_and(|a| a.len() == 2) {
            pooled = body;
            break;
        }
        last = (status, body);
        // A region reads its key set again as its clock moves.
        home.clock.advance(1_000);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let ads = pooled["ads"].as_array().unwrap_or_else(|| panic!("eu never pooled both ads: {last:?}")).clone();
    assert_eq!(payload(&ads[0]["render_token"])["region"], "eu");

    // Through the front door, whose nearest region is home: a pool is
    // served at home, and a render of eu's pool goes on from home to eu and
    // is judged there.
    let door = svc_http::front_door::FrontDoor::start(svc_http::front_door::FrontDoorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        probe_ms: 50,
        regions: vec![
            svc_http::front_door::Route {
                region: "home".into(),
                url: format!("http://{}", home_node.addr),
                latency_ms: None,
                delay_ms: None,
            },
            svc_http::front_door::Route {
                region: "eu".into(),
                url: format!("http://{}", eu.addr),
                latency_ms: None,
                delay_ms: Some(30),
            },
        ],
        listener: Default::default(),
        tls: None,
        allow_plain_http: true,
    })
    .await
    .unwrap();
    let mut at_door = (0, Value::Null);
    for _ in 0..200 {
        at_door = ad_call_at(door.addr, &home, &caller, "/v1/ads/pool", &pool_body("door"), "pd").await;
        if at_door.0 == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(at_door.0, 200, "{:?}", at_door.1);
    assert_eq!(payload(&at_door.1["receipt"])["region"], "home", "the nearest region served it");
    let render = json!({"render_token": ads[0]["render_token"], "format": "card", "session_ref": "route"});
    let (status, first) = ad_call_at(door.addr, &home, &caller, "/v1/ads/render", &render, "r1").await;
    assert_eq!((status, &first["accepted"]), (200, &json!(true)), "{first}");
    let (_, again) = ad_call_at(eu.addr, &home, &caller, "/v1/ads/render", &render, "r1").await;
    assert_eq!(again, first, "eu holds the first answer");
    let click = json!({"click_token": first["click_token"], "session_ref": "route"});
    let (_, clicked) = ad_call_at(door.addr, &home, &caller, "/v1/ads/click", &click, "k1").await;
    assert_eq!(clicked, json!({"accepted": true}));
    let observe = |node: &svc_http::node::Node| {
        let ads = node.state.ads.clone();
        async move { ads.call(svc_node::actors::ad_reservations::AdMsg::Observe).await.unwrap() }
    };
    assert_eq!(observe(&eu).await.leases[&campaign].used, svc_core::ads::Micros(200_000), "spent at eu");
    let at_home = observe(&home_node).await.leases[&campaign].clone();
    assert_eq!((at_home.amount.0, at_home.used.0), (200_000, 0), "home found some of what eu left, and spent none");

    // Both regions hammer the rest of the dollar at once.
    let mut racers = Vec::new();
    for i in 0..12 {
        let addr = if i % 2 == 0 { eu.addr } else { home_node.addr };
        let (home, caller) = (&home, &caller);
        racers.push(async move {
            let session = format!("race-{i}");
            let (_, pooled) =
                ad_call_at(addr, home, caller, "/v1/ads/pool", &pool_body(&session), &format!("rp{i}")).await;
            let Some(item) = pooled["ads"].as_array().and_then(|a| a.first().cloned()) else { return 0 };
            let body = json!({"render_token": item["render_token"], "format": "card", "session_ref": session});
            let (_, answer) = ad_call_at(addr, home, caller, "/v1/ads/render", &body, &format!("rr{i}")).await;
            u64::from(answer["accepted"] == true)
        });
    }
    let accepted: u64 = futures::future::join_all(racers).await.into_iter().sum();
    assert!((1..=4).contains(&accepted), "at most four more renders of 0.20 fit: {accepted}");
    // Spent: what home's ledger settled (leases a region replaced) and what
    // the regions' leases used, once eu's settlements reached home.
    let mut spent = 0;
    crate::common::eventually("eu's replaced leases settled at home", async || {
        let shown = home.admin("POST", &format!("/admin/campaigns/{campaign}/state"), json!({"state": "active"})).await;
        let settled = shown.body["spent"].as_str().unwrap().parse::<f64>().unwrap();
        spent = (settled * 1e6).round() as u64;
        for node in [&eu, &home_node] {
            spent += observe(node).await.leases.get(&campaign).map_or(0, |l| l.used.0);
        }
        spent == 200_000 * (1 + accepted)
    })
    .await;
    assert!(spent <= 1_000_000, "never past the budget across regions: {spent}");

    // Home counts every accepted render and click, eu's as its outbox
    // ships them, each once, once their hour is over.
    home.clock.advance(3_600_000);
    let business_uuid = ads[0]["business_uuid"].as_str().unwrap();
    let mut counted = (0, 0);
    for _ in 0..200 {
        let days = ad_days(&home, business_uuid).await;
        let sum = |name: &str| days.iter().map(|d| d[name].as_u64().unwrap()).sum::<u64>();
        counted = (sum("ad_renders"), sum("ad_clicks"));
        if counted == (1 + accepted, 1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(counted, (1 + accepted, 1), "every accepted render and click, once");

    // With eu gone, a confirmation of its pool cannot be judged: 503.
    let render = json!({"render_token": ads[1]["render_token"], "format": "card", "session_ref": "gone"});
    eu.stop().await;
    let (status, refused) = ad_call_at(home_node.addr, &home, &caller, "/v1/ads/render", &render, "r9").await;
    assert_eq!((status, refused["code"].as_str()), (503, Some("unavailable")), "{refused}");
    door.stop().await;
}

/// Runs `svc client --base-url <node> --key <file> <args>`; answers (exit
/// code, stdout, stderr).
async fn svc_client(node: &svc_http::node::Node, key_file: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_svc"));
    command.args(["client", "--base-url", &format!("http://{}", node.addr), "--key", key_file.to_str().unwrap()]);
    command.args(args);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

// rule: R4.1.1, R4.2.1, R4.2.2, R2.8.10, R2.8.12, P4.2.23
#[tokio::test(flavor = "multi_thread")]
async fn the_command_line_pools_renders_and_clicks_and_checks_each_answer_offline() {
    let images = ImageServer::start().await;
    let (home, node) = Home::listening(|config| images.trust(config)).await;
    // The command line signs with the real clock: the node's moves there.
    home.clock.advance(svc_clock::SystemClock.now().0 - home.clock.now().0);
    ads_on_sale(&home, "10", "200.00", "cpm", Some(&images)).await;
    let caller = home.caller("Reader").await;
    let key_file = home.dir.path().join("reader.key.json");
    svc_client::keyfile::write(&key_file, &caller.key).unwrap();
    let (pool, render) = (home.dir.path().join("pool.json"), home.dir.path().join("render.json"));

    let pool_args =
        ["pool", "--country", "FR", "--keyword", "lamp", "--format", "card", "--session-ref", "c1", "--save"];
    let mut pool_args = pool_args.to_vec();
    pool_args.push(pool.to_str().unwrap());
    let (code, stdout, stderr) = svc_client(&node, &key_file, &pool_args).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["ads"].as_array().unwrap().len(), 2);
    assert!(stderr.contains("the receipt names all 2 ads; every row signature holds"), "{stderr}");

    let pooled: Value = serde_json::from_slice(&std::fs::read(&pool).unwrap()).unwrap();
    let second = pooled["ads"][1]["ad_id"].as_str().unwrap().to_owned();
    let args = ["render", "--pool", pool.to_str().unwrap(), "--ad", &second, "--format", "card"];
    let mut render_args = args.to_vec();
    render_args.extend(["--session-ref", "c1", "--idempotency-key", "r1", "--save", render.to_str().unwrap()]);
    let (code, stdout, stderr) = svc_client(&node, &key_file, &render_args).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["accepted"], true);
    assert!(stderr.contains(&format!("the click token for {second} is region home's, issued to this key")), "{stderr}");
    // The same Idempotency-Key answers the first answer again, byte for byte.
    let first = std::fs::read(&render).unwrap();
    assert_eq!(svc_client(&node, &key_file, &render_args).await.0, 0);
    assert_eq!(std::fs::read(&render).unwrap(), first);

    let click = ["click", "--render", render.to_str().unwrap(), "--session-ref", "c1"];
    let (code, stdout, stderr) = svc_client(&node, &key_file, &click).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["accepted"], true);

    // The offline checks catch what was changed after the pool answered.
    let document = svc_client::retrieval::RetrievalClient::new(
        &format!("http://{}", node.addr),
        crate::common::AUTHORITY,
        caller.key.clone(),
        None,
    )
    .unwrap()
    .key_set()
    .await
    .unwrap()
    .json();
    let keys = &home.state.keys;
    let anchors = svc_core::keyset::RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = svc_core::keyset::verify(&document, &anchors).unwrap();
    let me = caller.key.verifying_key().thumbprint();
    use svc_core::offline::check_pool;
    assert_eq!(check_pool(&pooled, &set, &me), Ok(2));
    assert_eq!(check_pool(&pooled, &set, "someone-else"), Err(svc_core::Reason::ReceiptCallerMismatch));
    let mut shown = pooled.clone();
    shown["ads"][0]["creative"]["cta"] = json!("Buy now");
    assert_eq!(check_pool(&shown, &set, &me), Err(svc_core::Reason::HashMismatch));
    let mut swapped = pooled.clone();
    swapped["ads"][0]["render_token"] = pooled["ads"][1]["render_token"].clone();
    assert_eq!(check_pool(&swapped, &set, &me), Err(svc_core::Reason::ReceiptRowMismatch));
    let mut dropped = pooled.clone();
    dropped["ads"].as_array_mut().unwrap().pop();
    assert_eq!(check_pool(&dropped, &set, &me), Err(svc_core::Reason::ReceiptRowMismatch));
    node.stop().await;
}

// rule: R3.9, R3.14
// The attack: a key renders one ad on a cpc campaign, then confirms its
// click a thousand times, each with a fresh session_ref and Idempotency-Key
// (each would be a new conversation), then again in the render's own
// conversation every sixteen minutes (past the repeat-click window). The
// campaign pays for one click.
#[tokio::test(flavor = "multi_thread")]
async fn one_render_buys_one_billed_click_not_a_thousand() {
    // The clock stands still: the key may send its thousands at once.
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.retrieval_limits.requests_per_second = 10_000;
    })
    .await;
    // 0.50 a click, at no take rate.
    let (_, campaign, business) = ads_on_sale(&home, "100", "0.50", "cpc", None).await;
    let caller = home.caller("Clicker").await;
    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("c1"), "p1").await;
    let ad = pooled.body["ads"][0].clone();
    let render = json!({"render_token": ad["render_token"], "format": "card", "session_ref": "c1"});
    let rendered = ad_call(&home, &caller, "/v1/ads/render", &render, "r1").await;
    assert_eq!(rendered.body["accepted"], true, "{:?}", rendered.body);
    let token = rendered.body["click_token"].clone();
    assert!(payload(&token)["conversation"].as_str().is_some_and(|c| c.len() > 16), "a digest, not the session_ref");
    let used = || async {
        let book = home.state.ads.call(svc_node::actors::ad_reservations::AdMsg::Observe).await.unwrap();
        book.leases.get(&campaign).map_or(0, |l| l.used.0)
    };

    for i in 0..1_000 {
        let click = json!({"click_token": token, "session_ref": format!("fresh-{i}")});
        let answer = ad_call(&home, &caller, "/v1/ads/click", &click, &format!("f{i}")).await;
        assert_eq!((answer.status, answer.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", answer.body);
    }
    assert_eq!(used().await, 0, "no click was charged");
    let click = json!({"click_token": token, "session_ref": "c1"});
    for i in 0..999 {
        if i % 100 == 1 {
            home.clock.advance(16 * 60 * 1000);
        }
        let answer = ad_call(&home, &caller, "/v1/ads/click", &click, &format!("k{i}")).await;
        assert_eq!(answer.body, json!({"accepted": true}), "recorded: {:?}", answer.body);
        if i == 0 {
            assert_eq!(used().await, 500_000, "the first click is charged 0.50");
        }
    }
    // Each confirmation was appended under its own key (the render's and
    // 999 clicks'), not the token's whole list written again each time.
    let kept: Vec<(Vec<u8>, svc_store::model::AdConfirmation)> =
        home.state.store.scan(svc_store::cf::AD_TOKENS, &[], None, 10_000).unwrap();
    assert_eq!(kept.len(), 1 + 999);
    // The business sees every click and pays for one.
    home.clock.advance(3_600_000);
    let days = ad_days(&home, &business.uuid).await;
    let clicks: u64 = days.iter().map(|d| d["ad_clicks"].as_u64().unwrap()).sum();
    assert_eq!(clicks, 999, "{days:?}");
    let spent: Vec<&Value> = days.iter().map(|d| &d["spend_gross"]).collect();
    assert_eq!(spent, [&json!({"amount": "0.50", "currency": "USD"})], "one click of 0.50, whatever came after");
}

// rule: R3.9
// A key's charged clicks on one campaign within an hour are capped: past
// the cap, clicks on fresh renders are recorded and not charged.
#[tokio::test(flavor = "multi_thread")]
async fn a_keys_charged_clicks_on_a_campaign_are_capped_per_hour() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.ads.billed_clicks_per_hour = 2;
    })
    .await;
    let (_, campaign, _) = ads_on_sale(&home, "100", "0.50", "cpc", None).await;
    let caller = home.caller("Clicker").await;
    // Three pools: a key holds at most three reserves of a campaign.
    for round in 0..3 {
        let session = format!("person-{round}");
        let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body(&session), &format!("p{round}")).await;
        let ad = pooled.body["ads"][0].clone();
        let render = json!({"render_token": ad["render_token"], "format": "card", "session_ref": session});
        let rendered = ad_call(&home, &caller, "/v1/ads/render", &render, &format!("r{round}")).await;
        let click = json!({"click_token": rendered.body["click_token"], "session_ref": session});
        let clicked = ad_call(&home, &caller, "/v1/ads/click", &click, &format!("k{round}")).await;
        assert_eq!(clicked.body, json!({"accepted": true}), "{:?}", clicked.body);
    }
    let book = home.state.ads.call(svc_node::actors::ad_reservations::AdMsg::Observe).await.unwrap();
    assert_eq!(book.leases[&campaign].used.0, 1_000_000, "two clicks charged of three");
    // The next hour the key's clicks are charged again.
    home.clock.advance(3_600 * 1000);
    let pooled = ad_call(&home, &caller, "/v1/ads/pool", &pool_body("later"), "p9").await;
    let ad = pooled.body["ads"][0].clone();
    let render = json!({"render_token": ad["render_token"], "format": "card", "session_ref": "later"});
    let rendered = ad_call(&home, &caller, "/v1/ads/render", &render, "r9").await;
    let click = json!({"click_token": rendered.body["click_token"], "session_ref": "later"});
    assert_eq!(ad_call(&home, &caller, "/v1/ads/click", &click, "k9").await.body, json!({"accepted": true}));
    let book = home.state.ads.call(svc_node::actors::ad_reservations::AdMsg::Observe).await.unwrap();
    assert_eq!(book.leases[&campaign].used.0, 500_000, "charged again in a new hour, from a new lease: {book:?}");
}

// A campaign pays its net price grossed up by the service's take: a budget
// that covers the net price of one event but not what the business pays
// for it would be accepted and never place anything.
// rule: R4.3.1
#[tokio::test(flavor = "multi_thread")]
async fn a_budget_must_cover_one_event_with_the_services_take() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.ads.take_rate_bps = 2_000).await;
    let business = home.business("Lumen", products_scope(100)).await;
    let published = home.publish(&business, &[product("Lumen", "L-1", "9.90")], "one").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let item = svc_core::ids::product_id(&business.uuid, "L-1");
    let path = format!("/admin/businesses/{}/campaigns", business.uuid);
    let mut short = terms("short", "5.00");
    short["basis"] = json!("cpc");
    short["net_price"] = json!("5.00");
    let refused = home.admin("POST", &path, json!({"terms": short, "items": [item]})).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", refused.body);
    assert!(refused.body["detail"].as_str().unwrap().contains("6.25"), "{:?}", refused.body);
    let mut enough = short.clone();
    enough["budget"] = json!("6.25");
    let made = home.admin("POST", &path, json!({"terms": enough, "items": [item]})).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
}
