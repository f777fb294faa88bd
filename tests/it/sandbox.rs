//! The sandbox corpus goes through the real pipeline: businesses, keys,
//! mandates and AI policies through the admin API, products as signed
//! batches, the other types as passkey-sealed saves. A republish writes new
//! versions with the same ids and bytes.

use crate::common;

use common::*;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{ensure_seeded, republish};

// rule: R1.31, R1.41, P3.12, P3.13
#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_is_seeded_once_and_republished_with_the_same_bytes() {
    let home = Home::start_sandbox().await;
    let sizes =
        Sizes { businesses: 4, products: 90, events_per_business: 2, jobs_per_business: 2, updates_per_business: 1 };
    let corpus = generate(11, sizes);
    let seeded = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    assert_eq!(seeded.businesses.len(), 4);
    let registry = &home.state.registry;

    let mut live = 0;
    for (spec, (uuid, _)) in corpus.businesses.iter().zip(&seeded.businesses) {
        for (kind, expected) in
            [("products", spec.products.len()), ("events", 2), ("jobs", 2), ("updates", 1), ("business_files", 1)]
                .into_iter()
                .chain([("ads", spec.ads.len())])
        {
            let ids = registry.catalogue_ids(uuid, kind, None, usize::MAX).unwrap();
            assert_eq!(ids.len(), expected, "{} {kind}", spec.brand);
            live += ids.len();
        }
        assert_eq!(
            registry.ai_policy_at(uuid, home.clock.now()).unwrap().map(|p| p.version),
            spec.ai_policy.as_ref().map(|_| 1)
        );
        assert_eq!(!registry.blocks_of(uuid).unwrap().is_empty(), spec.blocks_research);
        // The exact sealed bytes are what is stored.
        let first = svc_core::ids::product_id(uuid, &format!("{}-00000", spec.brand.to_ascii_uppercase()));
        let version = registry.record_version(&first, 1).unwrap().unwrap();
        assert_eq!(version.bytes, spec.products[0]);
    }
    assert_eq!(live, corpus.record_count());

    // Seeding again is a no-op.
    let again = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    assert_eq!(again, seeded);

    home.clock.advance(svc_core::time::MINUTE);
    let report = republish(&home.state, &|_| {}).await.unwrap();
    assert_eq!(report["records"], corpus.record_count());
    let (uuid, _) = &seeded.businesses[0];
    let spec = &corpus.businesses[0];
    let first = svc_core::ids::product_id(uuid, &format!("{}-00000", spec.brand.to_ascii_uppercase()));
    let head = registry.record_head(&first).unwrap().unwrap();
    assert_eq!(head.generation, 2, "a new version");
    assert_eq!(registry.record_version(&first, 2).unwrap().unwrap().bytes, spec.products[0], "the same bytes");
    let event = svc_core::ids::record_id(svc_core::ids::RecordType::Events, uuid, "event-0");
    assert_eq!(registry.record_head(&event).unwrap().unwrap().generation, 2);
}

// rule: R1.41
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_home_republishes_its_corpus_itself_each_night() {
    use svc_core::time::{HOUR, MINUTE};
    let (home, node) = Home::listening(|config| {
        config.environment = svc_store::model::Environment::Sandbox;
        config.sandbox_republish_at = "03:00".into();
    })
    .await;
    let corpus = generate(5, Sizes::products_only(1, 5));
    let seeded = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let (uuid, _) = &seeded.businesses[0];
    let spec = &corpus.businesses[0];
    let first = svc_core::ids::product_id(uuid, &format!("{}-00000", spec.brand.to_ascii_uppercase()));
    let generation = || home.state.registry.record_head(&first).unwrap().unwrap().generation;
    let looked = || {
        home.state
            .store
            .contains(svc_store::cf::meta::SANDBOX_REPUBLISHED_AT, svc_store::keys::meta::SANDBOX_REPUBLISHED_AT)
    };
    for _ in 0..100 {
        if looked().unwrap() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(looked().unwrap(), "the schedule begins when the node starts");

    // START is 10:00 UTC: 02:59 the next day is not yet the hour.
    home.clock.advance(17 * HOUR - MINUTE);
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(generation(), 1, "nothing before the hour");

    home.clock.advance(2 * MINUTE);
    for _ in 0..300 {
        if generation() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(generation(), 2, "republished at the hour: a new version");
    let version = home.state.registry.record_version(&first, 2).unwrap().unwrap();
    assert_eq!(version.bytes, spec.products[0], "with the same bytes");
    // Once a night: later looks the same night do nothing.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(generation(), 2, "once a night");
    node.stop().await;
}

/// Polls until `check` holds, for up to 10 s.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{what} never happened");
}

/// A sandbox home with a small corpus seeded, whose retention pass runs
/// every 50 ms, so a test moves its clock and sees what expired.
async fn seeded_with_fast_retention() -> (Home, svc_http::sandbox::corpus::Corpus, svc_http::sandbox::seed::SeedState) {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.environment = svc_store::model::Environment::Sandbox;
        config.retention_every_ms = 50;
    })
    .await;
    let corpus = generate(7, Sizes::products_only(1, 4));
    let seeded = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    (home, corpus, seeded)
}

// rule: R1.42, R5.40
#[tokio::test(flavor = "multi_thread")]
async fn caller_created_sandbox_data_expires_ninety_days_after_its_last_use() {
    use svc_core::time::DAY;
    let (home, corpus, seeded) = seeded_with_fast_retention().await;
    home.wait_indexed().await;
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[61; 32]).unwrap();
    let company = serde_json::json!({"name": "Visitor AI", "verified": true, "terms_accepted": 1});
    let (caller, registered) = home.caller_with(company, key).await;
    let grant = registered.body["sandbox_key_grant"].as_str().unwrap().to_owned();
    let country = corpus.businesses[0].country.clone();
    let body = serde_json::json!({"collection": "products", "filter": {"all": [{"country": country}]}, "sort_by": "published_at:desc"});
    let body = serde_json::to_vec(&body).unwrap();
    let search = |headers: Vec<(&'static str, String)>| {
        let (home, caller, body) = (&home, &caller, body.clone());
        async move {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            home.signed(&caller.key, "POST", "/v1/search", &body, "svc-retrieval", &headers).await
        }
    };
    assert_eq!(search(vec![("svc-sandbox-key", grant.clone())]).await.status, 200);
    let has_receipts = || {
        let listed: Vec<(Vec<u8>, ())> = home
            .state
            .store
            .scan(svc_store::cf::RECEIPTS_BY_GROUP, &svc_store::keys::prefix(&[&caller.group_id]), None, 10)
            .unwrap();
        !listed.is_empty()
    };
    assert!(has_receipts());

    // Used again on day 80: kept 90 days from then, not from the first use.
    home.clock.advance(80 * DAY);
    assert_eq!(search(Vec::new()).await.status, 200);
    home.clock.advance(80 * DAY);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(search(Vec::new()).await.status, 200, "80 days after its last use the caller is kept");

    // 91 days after the last use, its company, key, usage and receipts go;
    // the corpus's own company stays.
    home.clock.advance(91 * DAY);
    let registry = &home.state.registry;
    until("the caller's company is removed", || registry.company(&caller.company_uuid).unwrap().is_none()).await;
    until("its receipts are forgotten", || !has_receipts()).await;
    assert!(registry.retrieval_key(&caller.key_id).unwrap().is_none());
    assert!(registry.last_billed_day(&caller.company_uuid).unwrap().is_none(), "its usage is gone");
    assert!(registry.company(&seeded.sandbox_company).unwrap().is_some(), "the corpus's company is not a caller's");
    let refused = search(Vec::new()).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("key_unknown")), "{:?}", refused.body);
}

// A business a caller made in the sandbox is theirs: 90 days after its
// last use (a request its key signed) its records are deleted everywhere
// and its keys, mandates, people, campaigns and certificate removed; the
// corpus's businesses are the operator's and stay.
// rule: R1.42
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_business_s_own_data_expires_ninety_days_after_its_last_use() {
    use serde_json::json;
    use svc_core::time::DAY;
    let (home, _, seeded) = seeded_with_fast_retention().await;
    let visitor = home.business("Visitor Lamps", products_scope(1_000)).await;
    let saved = home.save_sealed(&visitor, "products", &product("Visitor Lamps", "v-1", "9.90")).await;
    assert_eq!(saved.status, 201, "{:?}", saved.body);
    let record_id = saved.body["record_id"].as_str().unwrap().to_owned();
    let campaign = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", visitor.uuid),
            json!({"terms": {"name": "Visitor picks", "placement": "sponsorship", "budget": "10.00",
                "net_price": "3.00", "basis": "cpm", "keywords": ["lamp"], "countries": ["FR"],
                "formats": ["compact", "card"], "repeats": {"allowed": false, "max_per_conversation": 1}},
                "items": [record_id]}),
        )
        .await;
    assert!(campaign.status < 300, "{:?}", campaign.body);
    let campaign_id = campaign.body["campaign_id"].as_str().unwrap().to_owned();
    // A key of its own, used with its grant: what the business does.
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[62; 32]).unwrap();
    let registered = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/keys", visitor.uuid),
            json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}),
        )
        .await;
    let grant = registered.body["sandbox_key_grant"].as_str().unwrap().to_owned();
    let read = || {
        let (home, key, grant) = (&home, &key, grant.clone());
        async move {
            home.signed(key, "GET", "/v1/catalogue", b"", "svc-business-read", &[("svc-sandbox-key", grant.as_str())])
                .await
        }
    };
    assert_eq!(read().await.status, 200);
    let registry = &home.state.registry;

    // Used again on day 80: kept 90 days from then, not from its creation.
    home.clock.advance(80 * DAY);
    assert_eq!(read().await.status, 200);
    home.clock.advance(80 * DAY);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(registry.business(&visitor.uuid).unwrap().is_some(), "80 days after its last use it is kept");
    assert_eq!(read().await.status, 200);

    // 91 days after that use: its records deleted, its data removed.
    home.clock.advance(91 * DAY);
    until("the business is removed", || registry.business(&visitor.uuid).unwrap().is_none()).await;
    let head = registry.record_head(&record_id).unwrap().expect("the fingerprint stays");
    assert_eq!(head.state, svc_store::model::RecordState::Deleted, "its record is deleted, purged at every node");
    assert!(registry.business_keys(&visitor.uuid).unwrap().is_empty(), "its keys are gone");
    assert!(registry.integration_key(&visitor.key_id).unwrap().is_none());
    assert!(registry.certificates(&visitor.uuid).unwrap().is_empty(), "its certificate is gone");
    let kept: Option<svc_store::model::Campaign> =
        home.state.store.get(svc_store::cf::CAMPAIGNS, campaign_id.as_bytes()).unwrap();
    assert!(kept.is_none(), "its campaign is gone");
    let refused = read().await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (401, Some("key_unknown")), "{:?}", refused.body);
    let certificate = home.get(&format!("/v1/certificates/{}", visitor.uuid)).await;
    assert_eq!(certificate.status, 404);
    // The corpus's businesses were never used by anyone and stay.
    for (uuid, _) in &seeded.businesses {
        assert!(registry.business(uuid).unwrap().is_some(), "the corpus's business {uuid} stays");
    }
    let observed = home.admin("GET", "/admin/observe", json!({})).await;
    assert_eq!(observed.body["actors"]["retention"]["businesses_expired"], 1, "{:?}", observed.body);
}

// The sandbox shows every paid part: ads with their images (drawn, not
// fetched), a cpc campaign whose one-click budget the tour spends, a cpm
// one that goes on, and products sponsored in several countries, all kept
// by the republish.
// rule: R1.31, R1.41, R2.4.16, R4.1.22, R4.2.5, R4.3.1
#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_shows_ads_and_sponsored_products_and_keeps_them() {
    use serde_json::{Value, json};
    // As `svc up` runs it: a 20 % take.
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.environment = svc_store::model::Environment::Sandbox;
        config.ads.take_rate_bps = 2_000;
    })
    .await;
    let corpus = generate(11, Sizes::products_only(8, 160));
    let seeded = ensure_seeded(&home.state, &corpus, &|_| {}).await.unwrap();
    let campaigns = svc_http::sandbox::seed::campaigns(&home.state).unwrap();
    assert_eq!(campaigns.len(), 5, "two ad campaigns and three sponsorships");
    home.wait_indexed().await;
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[41; 32]).unwrap();
    let (caller, registered) = home.caller_with(json!({"name": "Tourist AI"}), key).await;
    let grant = registered.body["sandbox_key_grant"].as_str().unwrap().to_owned();
    let call = |path: &'static str, body: Value, idempotency: &'static str| {
        let (home, caller, grant) = (&home, &caller, &grant);
        async move {
            let body = serde_json::to_vec(&body).unwrap();
            let headers = [("svc-sandbox-key", grant.as_str()), ("idempotency-key", idempotency)];
            home.signed(&caller.key, "POST", path, &body, "svc-retrieval", &headers).await
        }
    };
    let pool = json!({"country": "FR", "keywords": ["lamp"], "formats": ["compact", "card"],
        "sort_by": "net_price:desc", "session_ref": "tour"});

    let pooled = call("/v1/ads/pool", pool.clone(), "p1").await;
    assert_eq!(pooled.status, 200, "{:?}", pooled.body);
    let ads = pooled.body["ads"].as_array().unwrap().clone();
    let shown: Vec<(&str, &str)> =
        ads.iter().map(|a| (a["ad_id"].as_str().unwrap(), a["net_price"]["basis"].as_str().unwrap())).collect();
    let ad_id = |own: &str| svc_core::ids::record_id(svc_core::ids::RecordType::Ads, &seeded.businesses[0].0, own);
    let (reading, desk) = (ad_id("reading-corner"), ad_id("desk-lamps"));
    assert_eq!(shown, [(reading.as_str(), "cpc"), (desk.as_str(), "cpm")]);
    for ad in &ads {
        for slot in svc_core::ads::images::Slot::ALL {
            let link = ad["creative"][slot.url_member()].as_str().unwrap();
            let path = link.strip_prefix(&home.state.config.public_base()).expect("the region's own link");
            let image = home.get(path).await;
            assert_eq!((image.status, image.headers["content-type"].to_str().unwrap()), (200, "image/png"));
            svc_core::ads::images::judge(slot, &image.bytes).unwrap();
        }
    }

    // The tour's render and click: the click spends the cpc campaign's budget.
    let render = json!({"render_token": ads[0]["render_token"], "format": "card", "session_ref": "tour"});
    let rendered = call("/v1/ads/render", render, "r1").await;
    assert_eq!((rendered.status, &rendered.body["accepted"]), (200, &json!(true)), "{:?}", rendered.body);
    let click = json!({"click_token": rendered.body["click_token"], "session_ref": "tour"});
    let clicked = call("/v1/ads/click", click, "k1").await;
    assert_eq!(clicked.body, json!({"accepted": true}), "{:?}", clicked.body);
    let cpc = ads[0]["campaign_id"].as_str().unwrap();
    let shown = home.admin("GET", &format!("/admin/campaigns/{cpc}"), Value::Null).await;
    assert_eq!(shown.body["left"], "0.00", "leased for the click, and spent: {:?}", shown.body);
    let mut again = pool.clone();
    again["session_ref"] = json!("later");
    let after = call("/v1/ads/pool", again, "p2").await;
    let left: Vec<&str> = after.body["ads"].as_array().unwrap().iter().map(|a| a["ad_id"].as_str().unwrap()).collect();
    assert_eq!(left, [desk.as_str()], "the spent campaign places nothing");

    // Sponsored products in several countries, found by the filter.
    for (business, country) in [(0, "FR"), (5, "GB"), (7, "US")] {
        let (uuid, _) = &seeded.businesses[business];
        let body = json!({"collection": "products", "filter": {"all": [{"country": country}, {"sponsored": true}]},
            "sort_by": "price_amount:asc", "limit": 50});
        let answer = call("/v1/search", body, "s").await;
        let rows = answer.body["rows"].as_array().unwrap();
        assert!(rows.iter().all(|r| r["sponsored"] == true), "{country}: only paid rows");
        let own = rows.iter().filter(|r| r["business_uuid"] == uuid.as_str()).count();
        assert_eq!(own, 5, "{country}: the sponsor's five products among {} rows", rows.len());
    }

    // The republish keeps the ads (new versions) and their campaigns.
    home.clock.advance(svc_core::time::MINUTE);
    republish(&home.state, &|_| {}).await.unwrap();
    assert_eq!(home.state.registry.record_head(&desk).unwrap().unwrap().generation, 2);
    let mut third = pool.clone();
    third["session_ref"] = json!("next-day");
    let next = call("/v1/ads/pool", third, "p3").await;
    assert_eq!(next.body["ads"][0]["ad_id"], desk.as_str(), "{:?}", next.body);
}
