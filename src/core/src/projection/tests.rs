use proptest::prelude::{prop_assert, prop_assert_eq};
use serde_json::{Value, json};

use super::*;
use crate::digest::sha256_prefixed;
use crate::records::tests::{arb_json, arb_member, ctx, fixture};
use crate::records::{ValidationContext, validate};

const BUSINESS: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";

/// Unusual white space and member order: the origin must be over these bytes.
const PRODUCT_BYTES: &str = "{ \"prices\" : [ {\"amount\":\"19.99\",\"currency\":\"EUR\",\"country\":\"FR\"},\n\
    {\"country\":\"DE\",\"currency\":\"EUR\",\"amount\":\"20.00\"} ],\n\t\"schema\":\"service/products/1\",\
    \"language\":\"fr\",  \"business_product_id\":\"SKU-1\",\"product_name\":\"Lampe de bureau\",\
    \"countries\":[\"FR\",\"DE\"],\"on_sale\":true,\"availability\":\"in_stock\",\
    \"product_url\":\"https://shop.example.com/p/1\",\"brand\":\"Lumio\",\"tags\":[\"desk\"] }\n";

fn key() -> SigningKey {
    SigningKey::from_seed(Alg::Ed25519, &[7; 32]).unwrap()
}

fn vctx() -> ValidationContext {
    ValidationContext::new(vec!["Lumio".into()], Vec::new(), None)
}

fn valid(bytes: &[u8], kind: RecordType) -> ValidRecord {
    validate(bytes, kind, &vctx()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn pctx(record: &ValidRecord) -> ProjectionContext {
    ProjectionContext {
        record_id: record.record_id(BUSINESS),
        business_uuid: BUSINESS.into(),
        business_name: "Lumio SARL".into(),
        // 2026-11-01T12:00:00.999Z: seconds round down.
        published_at: UnixMs(1_793_534_400_999),
        ad: None,
    }
}

fn product_row() -> (ValidRecord, Map<String, Value>) {
    let record = valid(PRODUCT_BYTES.as_bytes(), RecordType::Products);
    let row = project(&record, &pctx(&record), &key());
    (record, row)
}

fn keys_of(key: &SigningKey) -> impl Fn(&str) -> Option<VerifyingKey> {
    let public = key.verifying_key();
    move |id: &str| (id == public.thumbprint()).then(|| public.clone())
}

// rule: R2.4.7, R2.4.8, R2.4.9, R2.4.12, R2.4.13, R2.1.10, R2.2.29
#[test]
fn product_row_has_exactly_the_expected_members() {
    let (record, row) = product_row();
    let products = spec(RecordType::Products).unwrap();
    let expected = json!({
        "record_id": crate::ids::product_id(BUSINESS, "SKU-1"),
        "business_uuid": BUSINESS,
        "business_name": "Lumio SARL",
        "type": "products",
        "language": "fr",
        "product_name": "Lampe de bureau",
        "brand": "Lumio",
        "availability": "in_stock",
        "on_sale": true,
        "tags": ["desk"],
        "product_url": "https://shop.example.com/p/1",
        "countries": ["FR", "DE"],
        "price_FR": 19.99,
        "price_currency_FR": "EUR",
        "price_DE": 20,
        "price_currency_DE": "EUR",
        "published_at": 1_793_534_400,
        "adl_origin": "sha256:99c6eb095415e1fd5a4c8f552bc51b608aec164c625a0504cad02474d70ffde7",
        "adl_proj": products.sha256,
        "adl_key_id": key().verifying_key().thumbprint(),
        "adl_row_sig": "PINNED",
    });
    let mut without_sig = row.clone();
    let signature = without_sig.insert("adl_row_sig".into(), json!("PINNED")).unwrap();
    assert_eq!(Value::Object(without_sig), expected);
    assert!(row["published_at"].is_i64() && row["price_FR"].is_f64() && row["price_DE"].is_u64());
    // Ed25519 is deterministic; this value was checked independently (Python
    // `cryptography`, over the JCS form of the row).
    assert_eq!(
        signature,
        json!("eaXAr3+2JQ8wdVaVEWCSIHZO7efmhPaV66x8rsz7cghIv+JUWZyNvYgBXaV399DNrXp5gvZNk9fQtosZ4snDBA==")
    );
    assert_eq!(record.value()["prices"][0]["amount"], "19.99");
}

// rule: R2.4.10
#[test]
fn adl_origin_is_the_hash_of_the_exact_bytes() {
    let (record, row) = product_row();
    assert_eq!(row["adl_origin"], sha256_prefixed(PRODUCT_BYTES.as_bytes()));
    assert_eq!(row["adl_origin"], record.origin());
    // Not of any re-serialised form.
    let reserialised = serde_json::to_vec(record.value()).unwrap();
    assert_ne!(row["adl_origin"], sha256_prefixed(&reserialised));
    assert_ne!(row["adl_origin"], sha256_prefixed(&crate::canonical::canonicalize(record.value())));
}

// rule: R2.4.11, R9.7, P2.6.42, P2.6.43
#[test]
fn adl_proj_is_the_pinned_hash_of_the_specification() {
    let pinned = [
        (RecordType::Products, "sha256:fbf7deb78745e2cdd8289b3f9df950fbc45c5e66021fc15dc35d4753711b8e41"),
        (RecordType::BusinessFiles, "sha256:02346b7256deb8a7dc2f8ba77fb7f826cd24786467b4db37125af1c2f51e384f"),
        (RecordType::Events, "sha256:b66eae53cca81afae6fc87e2a25dc1cbecd3a56ae11a9d80dac88c526efb5976"),
        (RecordType::Jobs, "sha256:9ec4fe283e788df2d38aa3f8153a828e9a49ca78bd2b3590d84d504cd4684c9f"),
        (RecordType::Updates, "sha256:3f0b58336bd22718abdba1a9f521e206d5037daf4b129039724eb68d30711509"),
    ];
    for (kind, _) in pinned {
        let spec = spec(kind).unwrap();
        let document = spec.document().as_object().unwrap();
        let mut members: Vec<&str> = document.keys().map(String::as_str).collect();
        members.sort_unstable();
        assert_eq!(
            members,
            [
                "definition",
                "field_map",
                "record_type",
                "rules",
                "serve_time_fields",
                "sha256",
                "spec_version",
                "unsigned_fields",
                "version"
            ]
        );
        let mut unhashed = document.clone();
        unhashed.remove("sha256");
        let recomputed = sha256_prefixed(&crate::canonical::canonicalize(&Value::Object(unhashed)));
        assert_eq!(spec.sha256, recomputed);
        assert_eq!(document["sha256"], spec.sha256.as_str());
        assert_eq!(document["version"], format!("{}/1", kind.name()));
        assert_eq!(document["record_type"], kind.name());
        assert_eq!(document["spec_version"], 1);
        assert_eq!(document["unsigned_fields"], json!(["sponsorship_id", "excluded_groups"]));
        assert_eq!(document["serve_time_fields"], json!(["ai_policy_bits", "sponsored", "freshness_expectation"]));
        assert!(document["definition"].as_str().is_some_and(|d| !d.is_empty()));
        assert_eq!(spec_by_hash(&spec.sha256).map(|s| s.record_type), Some(kind));
        assert_eq!(spec_by_version(kind, "1"), Some(spec));
        assert_eq!(spec_by_version(kind, &format!("{}/1", kind.name())), Some(spec));
    }
    let actual: Vec<(RecordType, &str)> =
        pinned.iter().map(|(kind, _)| (*kind, spec(*kind).unwrap().sha256.as_str())).collect();
    assert_eq!(actual, pinned);
    assert_eq!(product_row().1["adl_proj"], pinned[0].1);
    assert_eq!(spec(RecordType::AiPolicy), None);
    assert_eq!(spec_by_version(RecordType::Products, "2"), None);
    assert_eq!(spec_by_version(RecordType::Products, "events/1"), None);
    assert_eq!(
        spec(RecordType::Products).unwrap().document()["field_map"]["price_{CC}"],
        "prices[country=CC].amount as number"
    );
}

// rule: P4.2.51, R2.4.15, R2.4.16, R2.4.17, P4.2.30
#[test]
fn rows_verify_and_serve_time_members_stay_outside_the_signature() {
    let (_, row) = product_row();
    assert_eq!(verify_row(&row, keys_of(&key())), Ok(()));

    let mut served = row.clone();
    served.insert(
        "ai_policy_bits".into(),
        json!({"ai_policy_version": 3, "ai_policy_schema": 2, "use": 1, "action": 3, "blocked": 0}),
    );
    served.insert("sponsored".into(), json!(true));
    served.insert("freshness_expectation".into(), json!({"cadence": "daily"}));
    served.insert("sponsorship_id".into(), json!("sp_1"));
    served.insert("excluded_groups".into(), json!([]));
    assert_eq!(verify_row(&served, keys_of(&key())), Ok(()));
    assert_eq!(signed_bytes(&served).unwrap(), signed_bytes(&row).unwrap());

    // Any signed member changed, added or removed breaks it.
    for tamper in [
        ("price_FR", Some(json!(9.99))),
        ("product_name", Some(json!("Other lamp"))),
        ("published_at", Some(json!(1_793_534_401))),
        ("business_name", None),
        ("extra", Some(json!(1))),
    ] {
        let mut tampered = row.clone();
        match tamper.1 {
            Some(value) => tampered.insert(tamper.0.into(), value),
            None => tampered.remove(tamper.0),
        };
        assert_eq!(verify_row(&tampered, keys_of(&key())), Err(Reason::RowSignatureInvalid), "{}", tamper.0);
    }
    let mut bad_sig = row.clone();
    bad_sig.insert("adl_row_sig".into(), json!("not base64!"));
    assert_eq!(verify_row(&bad_sig, keys_of(&key())), Err(Reason::RowSignatureInvalid));
    bad_sig.remove("adl_row_sig");
    assert_eq!(verify_row(&bad_sig, keys_of(&key())), Err(Reason::RowSignatureInvalid));
}

// rule: R9.9
#[test]
fn unknown_projection_or_key_is_refused() {
    let (_, row) = product_row();
    let mut unknown = row.clone();
    unknown.insert("adl_proj".into(), json!(format!("sha256:{}", "0".repeat(64))));
    assert_eq!(verify_row(&unknown, keys_of(&key())), Err(Reason::ProjectionUnknown));
    unknown.remove("adl_proj");
    assert_eq!(verify_row(&unknown, keys_of(&key())), Err(Reason::ProjectionUnknown));

    assert_eq!(verify_row(&row, |_| None), Err(Reason::KeyUnknown));
    let other = SigningKey::from_seed(Alg::Ed25519, &[8; 32]).unwrap().verifying_key();
    assert_eq!(verify_row(&row, |_| Some(other.clone())), Err(Reason::KeyMismatch));
    let es256 = SigningKey::from_seed(Alg::Es256, &[8; 32]).unwrap();
    let es_row = project(&valid(PRODUCT_BYTES.as_bytes(), RecordType::Products), &pctx(&product_row().0), &es256);
    assert_eq!(verify_row(&es_row, keys_of(&es256)), Err(Reason::KeyMismatch));

    // A row claiming another collection than its projection's.
    let mut retyped = row.clone();
    retyped.insert("type".into(), json!("events"));
    assert_eq!(verify_row(&retyped, keys_of(&key())), Err(Reason::RecordTypeMismatch));
}

// rule: P4.2.30
#[test]
fn rerun_matches_only_the_same_projection() {
    let (record, row) = product_row();
    let ctx = pctx(&record);
    assert!(rerun_matches(&record, &ctx, &row));
    // Serve-time members do not matter.
    let mut served = row.clone();
    served.insert("sponsored".into(), json!(true));
    assert!(rerun_matches(&record, &ctx, &served));
    // Another name, instant or record does not match.
    let renamed = ProjectionContext { business_name: "Other".into(), ..ctx.clone() };
    assert!(!rerun_matches(&record, &renamed, &row));
    let later = ProjectionContext { published_at: UnixMs(1_793_534_402_000), ..ctx.clone() };
    assert!(!rerun_matches(&record, &later, &row));
    let other = valid(PRODUCT_BYTES.replace("19.99", "18.99").as_bytes(), RecordType::Products);
    assert!(!rerun_matches(&other, &ctx, &row));
    let mut no_key = row.clone();
    no_key.remove("adl_key_id");
    assert!(!rerun_matches(&record, &ctx, &no_key));
}

// rule: R2.3.16, R2.3.18, R2.3.19, R2.3.20, R2.3.21, R2.3.22, R2.3.23, R2.3.24
#[test]
fn business_file_rows_never_carry_represent_texts_and_never_booking() {
    let file = json!({
        "schema": "service/business_files/1",
        "language": "fr",
        "business_file_id": "main",
        "countries": ["FR"],
        "description": "Lamps designed in Lyon.",
        "brands_owned": [{"name": "Lumio"}],
        "delivery": {"options": ["pickup"]},
        "payment": {"methods": ["card"]},
        "locations": [
            {"name": "Lyon", "address": "1 rue A", "city": "Lyon", "country": "FR", "geo": {"lat": 45.76, "lng": 4.84}},
            {"name": "Paris", "address": "2 rue B", "city": "Paris", "country": "FR", "geo": {"lat": 48.85, "lng": 2.35}}
        ],
        "year_established": 1998,
        "represent": {"who_we_are": "A family lamp maker.", "what_we_offer": "Lamps."},
        "endpoints": {"domains": ["lumio.example"], "booking_url": "https://lumio.example/book"}
    });
    let record = valid(&serde_json::to_vec(&file).unwrap(), RecordType::BusinessFiles);
    let row = project(&record, &pctx(&record), &key());
    let mut members: Vec<&str> = row.keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "adl_key_id",
            "adl_origin",
            "adl_proj",
            "adl_row_sig",
            "brands_owned",
            "business_name",
            "business_uuid",
            "countries",
            "delivery",
            "description",
            "has_booking",
            "has_locations",
            "language",
            "location_geo",
            "payment",
            "published_at",
            "record_id",
            "type",
            "year_established",
        ]
    );
    assert_eq!(row["has_booking"], false);
    assert_eq!(row["has_locations"], true);
    assert_eq!(row["location_geo"], json!([{"lat": 45.76, "lng": 4.84}, {"lat": 48.85, "lng": 2.35}]));
    let text = serde_json::to_string(&row).unwrap();
    for hidden in ["A family lamp maker.", "who_we_are", "represent", "endpoints", "lumio.example/book"] {
        assert!(!text.contains(hidden), "{hidden}");
    }
    assert_eq!(verify_row(&row, keys_of(&key())), Ok(()));

    let bare = json!({"schema": "service/business_files/1", "language": "en", "business_file_id": "x",
        "countries": ["IE"], "description": "Shop."});
    let record =
        crate::records::validate(&serde_json::to_vec(&bare).unwrap(), RecordType::BusinessFiles, &vctx()).unwrap();
    let row = project(&record, &pctx(&record), &key());
    assert_eq!((row["has_booking"].clone(), row["has_locations"].clone()), (json!(false), json!(false)));
    assert!(!row.contains_key("location_geo"));
}

// rule: R2.3.27, R2.3.29, R2.3.32, R2.3.33, R2.3.35, R2.3.36, R2.4.12, R2.4.13
#[test]
fn event_rows_carry_seconds_and_numbers() {
    let event = json!({
        "schema": "service/events/1", "language": "en", "event_id": "e1", "countries": ["GB"],
        "title": "Launch", "start_at": "2026-11-01T18:00:00.500Z", "end_at": "2026-11-01T21:00:00+01:00",
        "event_type": "exhibition", "attendance_mode": "in_person", "timezone": "Europe/London",
        "geo": {"lat": 51.5, "lng": -0.12}, "ticketed": true,
        "price_min": "0", "price_max": "12.50", "price_currency": "GBP"
    });
    let record = valid(&serde_json::to_vec(&event).unwrap(), RecordType::Events);
    let row = project(&record, &pctx(&record), &key());
    assert_eq!(row["start_at"], 1_793_556_000);
    assert_eq!(row["end_at"], 1_793_563_200);
    assert_eq!(row["price_min"], 0);
    assert_eq!(row["price_max"], 12.5);
    assert_eq!(row["geo"], json!({"lat": 51.5, "lng": -0.12}));
    assert_eq!(row["type"], "events");
    for name in ["timezone", "ticketed", "price_currency", "title", "event_type", "attendance_mode"] {
        assert_eq!(row[name], event[name], "{name}");
    }
    assert_eq!(verify_row(&row, keys_of(&key())), Ok(()));
}

// rule: R2.3.38, R2.3.40, R2.3.41, R2.3.45, R2.3.46, R2.3.47, R2.3.49, R2.3.52, R2.3.53
#[test]
fn job_and_update_rows_carry_seconds_and_numbers() {
    let job = json!({
        "schema": "service/jobs/1", "language": "de", "job_id": "J-7", "countries": ["DE"],
        "title": "Lampenbauer", "description": "Wir suchen.", "employment_type": "full_time",
        "salary_disclosed": true, "salary_min": "42000", "salary_max": "52000.50",
        "salary_currency": "EUR", "salary_period": "year", "closing_date": "2026-12-31T23:59:59Z"
    });
    let record = valid(&serde_json::to_vec(&job).unwrap(), RecordType::Jobs);
    let row = project(&record, &pctx(&record), &key());
    assert_eq!(row["salary_min"], 42000);
    assert_eq!(row["salary_max"], 52000.5);
    assert_eq!(row["closing_date"], 1_798_761_599);
    assert_eq!(row["salary_disclosed"], true);
    assert_eq!(row["salary_period"], "year");
    assert_eq!(verify_row(&row, keys_of(&key())), Ok(()));

    let update = json!({
        "schema": "service/updates/1", "language": "en", "update_id": "u-1", "countries": ["US"],
        "headline": "Holiday hours", "body": "We close early.", "update_type": "announcement",
        "relevant_until": "2026-12-26T00:00:00Z"
    });
    let record = valid(&serde_json::to_vec(&update).unwrap(), RecordType::Updates);
    let row = project(&record, &pctx(&record), &key());
    assert_eq!(row["relevant_until"], 1_798_243_200);
    assert_eq!((row["headline"].clone(), row["update_type"].clone()), (json!("Holiday hours"), json!("announcement")));
    assert!(!row.contains_key("url"));
    assert_eq!(verify_row(&row, keys_of(&key())), Ok(()));
}

// rule: R2.4.12
#[test]
fn money_numbers() {
    assert_eq!(rows::money_number("20.00"), Some(json!(20)));
    assert_eq!(rows::money_number("0"), Some(json!(0)));
    assert_eq!(rows::money_number("19.99"), Some(json!(19.99)));
    assert_eq!(rows::money_number("999999999999"), Some(json!(999_999_999_999u64)));
    assert_eq!(rows::money_number("1e3"), None);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn validate_never_panics_on_mutated_records(
        kind in proptest::sample::select(RecordType::COLLECTIONS.to_vec()),
        member in arb_member(),
        value in arb_json(),
    ) {
        let mut record = fixture(kind);
        record[member.as_str()] = value;
        let bytes = serde_json::to_vec(&record).unwrap();
        if let Ok(valid) = validate(&bytes, kind, &ctx()) {
            // Whatever passes also projects and verifies.
            let key = crate::keys::SigningKey::from_seed(crate::keys::Alg::Ed25519, &[9; 32]).unwrap();
            let pctx = ProjectionContext {
                record_id: valid.record_id("6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c"),
                business_uuid: "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c".into(),
                business_name: "Lumio".into(),
                published_at: crate::time::UnixMs(1_793_966_400_000),
                ad: None,
            };
            let row = project(&valid, &pctx, &key);
            let public = key.verifying_key();
            prop_assert_eq!(verify_row(&row, |_| Some(public.clone())), Ok(()));
            prop_assert!(rerun_matches(&valid, &pctx, &row));
        }
    }
}
