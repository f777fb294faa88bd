//! A valid record of each collection, of the business `Lumio` (FR): what
//! the tests change one member of, and the fuzz targets' seeds
//! (`crate::fuzzing`).

use serde_json::{Value, json};

use crate::ids::RecordType;

fn product() -> Value {
    json!({
        "schema": "service/products/1",
        "language": "fr-FR",
        "business_product_id": "SKU-1",
        "product_name": "Lampe de bureau",
        "countries": ["FR", "DE"],
        "prices": [
            {"country": "FR", "currency": "EUR", "amount": "19.99"},
            {"country": "DE", "currency": "EUR", "amount": "20.00"}
        ],
        "on_sale": false,
        "availability": "in_stock",
        "product_url": "https://shop.example.com/p/1",
        "vertical": "home",
        "category": "Lighting",
        "channel": "online",
        "brand": "Lumio",
        "tags": ["desk", "lamp"],
        "short_description": "A small lamp.\nWarm light.",
        "gtin": "4006381333931"
    })
}

fn business_file() -> Value {
    json!({
        "schema": "service/business_files/1",
        "language": "fr",
        "business_file_id": "main",
        "countries": ["FR", "BE"],
        "description": "Lamps designed in Lyon. We also sell Acme bulbs.",
        "brands_owned": [{"name": "Lumio"}],
        "brands_sold": [{"name": "Acme"}],
        "markets_served": ["France", "Belgium"],
        "cities": ["Lyon"],
        "delivery": {"options": ["delivery", "pickup"]},
        "payment": {"methods": ["card", "cash"]},
        "locations": [{
            "name": "Lumio Lyon",
            "address": "1 rue de la Lampe",
            "city": "Lyon",
            "country": "FR",
            "geo": {"lat": 45.76, "lng": 4.84}
        }],
        "ships_internationally": true,
        "year_established": 1998,
        "represent": {"who_we_are": "A family lamp maker.", "how_to_describe_us": "Lamp makers from Lyon."},
        "endpoints": {"domains": ["lumio.example"], "checkout_url": "https://pay.lumio.example/checkout"}
    })
}

fn event() -> Value {
    json!({
        "schema": "service/events/1",
        "language": "en",
        "event_id": "launch-2026",
        "countries": ["GB"],
        "title": "Lamp launch evening",
        "start_at": "2026-11-01T18:00:00Z",
        "end_at": "2026-11-01T21:00:00+00:00",
        "event_type": "exhibition",
        "attendance_mode": "in_person",
        "description": "See the new lamps.",
        "age_restriction": "all_ages",
        "timezone": "Europe/London",
        "region": "England",
        "city": "London",
        "geo": {"lat": 51.5, "lng": -0.12},
        "ticketed": true,
        "price_min": "0",
        "price_max": "12.50",
        "price_currency": "GBP"
    })
}

fn job() -> Value {
    json!({
        "schema": "service/jobs/1",
        "language": "de",
        "job_id": "J-7",
        "countries": ["DE"],
        "title": "Lampenbauer (m/w/d)",
        "description": "Wir suchen Verstärkung.",
        "employment_type": "full_time",
        "salary_disclosed": true,
        "category": "manufacturing",
        "work_arrangement": "on_site",
        "city": "Berlin",
        "region": "Berlin",
        "geo": {"lat": 52.52, "lng": 13.4},
        "salary_min": "42000",
        "salary_max": "52000.00",
        "salary_currency": "EUR",
        "salary_period": "year",
        "closing_date": "2026-12-31T23:59:59Z"
    })
}

fn update() -> Value {
    json!({
        "schema": "service/updates/1",
        "language": "en",
        "update_id": "u-1",
        "countries": ["US"],
        "headline": "Holiday opening hours",
        "body": "We close early on 24 December.",
        "update_type": "announcement",
        "relevant_until": "2026-12-26T00:00:00Z",
        "url": "http://lumio.example/news/1"
    })
}

fn ad() -> Value {
    json!({
        "schema": "service/ads/1",
        "language": "fr",
        "ad_id": "winter-lamps",
        "countries": ["FR"],
        "headline": "Lumio desk lamps",
        "description": "Warm light for long evenings, designed in Lyon.",
        "cta_text": "See the lamps",
        "destination_url": "https://shop.example.com/lamps?utm_source=svc",
        "image_square_url": "https://shop.example.com/img/lamp-1x1.png",
        "image_landscape_url": "https://shop.example.com/img/lamp-191x100.png"
    })
}

/// A valid record of `kind` (the five collections and ads; `{}` otherwise).
pub fn example(kind: RecordType) -> Value {
    match kind {
        RecordType::Products => product(),
        RecordType::BusinessFiles => business_file(),
        RecordType::Events => event(),
        RecordType::Jobs => job(),
        RecordType::Updates => update(),
        RecordType::Ads => ad(),
        RecordType::AiPolicy => json!({}),
    }
}
