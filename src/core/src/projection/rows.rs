//! The collection fields of each row, as the specifications' `field_map`s say.
//! Member names are exactly the retrieval 2.3 filter and text field names.

use serde_json::{Map, Number, Value};

use crate::ids::RecordType;
use crate::time::UnixMs;

type Row = Map<String, Value>;

/// Writes the collection fields of a record of `kind` into `row`.
pub(super) fn collection_fields(kind: RecordType, rec: &Row, row: &mut Row) {
    match kind {
        RecordType::Products => products(rec, row),
        RecordType::BusinessFiles => business_files(rec, row),
        RecordType::Events => {
            copy(
                rec,
                row,
                &[
                    "language",
                    "countries",
                    "title",
                    "description",
                    "event_type",
                    "attendance_mode",
                    "age_restriction",
                    "timezone",
                    "region",
                    "city",
                    "geo",
                    "ticketed",
                    "price_currency",
                ],
            );
            seconds(rec, row, &["start_at", "end_at"]);
            money(rec, row, &["price_min", "price_max"]);
        }
        RecordType::Jobs => {
            copy(
                rec,
                row,
                &[
                    "language",
                    "countries",
                    "title",
                    "description",
                    "employment_type",
                    "category",
                    "work_arrangement",
                    "city",
                    "region",
                    "geo",
                    "salary_disclosed",
                    "salary_currency",
                    "salary_period",
                ],
            );
            money(rec, row, &["salary_min", "salary_max"]);
            seconds(rec, row, &["closing_date"]);
        }
        RecordType::Updates => {
            copy(rec, row, &["language", "countries", "headline", "body", "update_type", "url"]);
            seconds(rec, row, &["relevant_until"]);
        }
        RecordType::Ads => {
            copy(rec, row, &["language", "countries", "headline", "description", "cta_text"]);
            if let Some(dest) = rec.get("destination_url") {
                row.insert("adl_dest".into(), dest.clone());
            }
        }
        RecordType::AiPolicy => {}
    }
}

fn products(rec: &Row, row: &mut Row) {
    copy(
        rec,
        row,
        &[
            "language",
            "product_name",
            "brand",
            "vertical",
            "category",
            "channel",
            "availability",
            "on_sale",
            "tags",
            "short_description",
            "gtin",
            "product_url",
            "countries",
        ],
    );
    // R2.4.9: one price and currency per country the product is published in.
    for price in rec.get("prices").and_then(Value::as_array).into_iter().flatten() {
        let Some(country) = price.get("country").and_then(Value::as_str) else {
            continue;
        };
        if let Some(amount) = price.get("amount").and_then(Value::as_str).and_then(money_number) {
            row.insert(format!("price_{country}"), amount);
        }
        if let Some(currency) = price.get("currency") {
            row.insert(format!("price_currency_{country}"), currency.clone());
        }
    }
}

fn business_files(rec: &Row, row: &mut Row) {
    // Never `represent` (R2.3.18) and never `endpoints`: both come with a fetch.
    copy(
        rec,
        row,
        &[
            "language",
            "countries",
            "description",
            "brands_owned",
            "brands_sold",
            "markets_served",
            "cities",
            "delivery",
            "payment",
            "ships_internationally",
            "year_established",
        ],
    );
    let geos: Vec<Value> = rec
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|location| location.get("geo").cloned())
        .collect();
    row.insert("has_locations".into(), Value::Bool(!geos.is_empty()));
    if !geos.is_empty() {
        row.insert("location_geo".into(), Value::Array(geos));
    }
    // R2.3.23: always false, so a filter asking for true matches nothing.
    row.insert("has_booking".into(), Value::Bool(false));
}

fn copy(rec: &Row, row: &mut Row, names: &[&str]) {
    for name in names {
        if let Some(value) = rec.get(*name) {
            row.insert((*name).to_owned(), value.clone());
        }
    }
}

/// Money members become numbers (R2.4.12).
fn money(rec: &Row, row: &mut Row, names: &[&str]) {
    for name in names {
        if let Some(number) = rec.get(*name).and_then(Value::as_str).and_then(money_number) {
            row.insert((*name).to_owned(), number);
        }
    }
}

/// Timestamps become integer Unix seconds, rounded towards the past.
fn seconds(rec: &Row, row: &mut Row, names: &[&str]) {
    for name in names {
        if let Some(instant) = rec.get(*name).and_then(Value::as_str).and_then(UnixMs::parse_rfc3339) {
            row.insert((*name).to_owned(), instant.as_secs().into());
        }
    }
}

/// A decimal-string amount as a JSON number: an integer when every fraction
/// digit is zero (so `"20.00"` is `20`), else the nearest double.
pub(super) fn money_number(amount: &str) -> Option<Value> {
    if !crate::records::is_money(amount) {
        return None;
    }
    let (int, frac) = amount.split_once('.').unwrap_or((amount, ""));
    if frac.bytes().all(|b| b == b'0') {
        return int.parse::<u64>().ok().map(Value::from);
    }
    amount.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number)
}
