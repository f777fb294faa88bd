//! `service/business_files/1`: the business and brand identity file for a set
//! of countries. Its `represent` texts come with a fetch and never go on a row
//! (R2.3.18); its `endpoints` are the authorised checkout, order, booking and
//! API addresses, also fetch-only.

use serde_json::{Map, Value};

use super::form::{Checker, Field, Form, GEO, PLACE, Text, child, long_text, opt, parse_url, req};
use super::scope::Scope;
use super::{
    DELIVERY_OPTIONS, ErrorCode, MAX_LABEL, MAX_LIST_ITEMS, MAX_LONG_TEXT, MAX_REPRESENT_TEXT, PAYMENT_METHODS,
};

/// A brand name: declared, so only directive phrases are checked in it.
const BRAND_NAME: Text = Text { max: MAX_LABEL, multiline: false, scope: Scope::Directive };
const BRAND: &[Field] = &[req("name", Form::Text(BRAND_NAME))];
const LOCATION: &[Field] = &[
    req("name", Form::Text(super::form::NAME)),
    req("address", Form::Text(Text { max: 500, multiline: false, scope: Scope::Directive })),
    req("city", Form::Text(PLACE)),
    req("country", Form::Country),
    req("geo", GEO),
];
const REPRESENT: &[Field] = &[
    opt("who_we_are", Form::Text(long_text(MAX_REPRESENT_TEXT))),
    opt("what_we_offer", Form::Text(long_text(MAX_REPRESENT_TEXT))),
    opt("how_we_work", Form::Text(long_text(MAX_REPRESENT_TEXT))),
    opt("what_we_stand_for", Form::Text(long_text(MAX_REPRESENT_TEXT))),
    opt("how_to_describe_us", Form::Text(long_text(MAX_REPRESENT_TEXT))),
];
/// The endpoint address members; each must be https on a listed domain.
pub const ENDPOINT_URLS: [&str; 4] = ["checkout_url", "order_url", "booking_url", "api_url"];
const ENDPOINTS: &[Field] = &[
    req("domains", Form::Hostnames),
    opt("checkout_url", Form::HttpsUrl),
    opt("order_url", Form::HttpsUrl),
    opt("booking_url", Form::HttpsUrl),
    opt("api_url", Form::HttpsUrl),
];

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("business_file_id", Form::OwnId),
    req("countries", Form::Countries),
    req("description", Form::Text(long_text(MAX_LONG_TEXT))),
    opt("brands_owned", Form::ObjectList { min: 0, max: MAX_LIST_ITEMS, fields: BRAND }),
    opt("brands_sold", Form::ObjectList { min: 0, max: MAX_LIST_ITEMS, fields: BRAND }),
    opt("markets_served", Form::TextList { max_items: MAX_LIST_ITEMS, text: PLACE }),
    opt("cities", Form::TextList { max_items: MAX_LIST_ITEMS, text: PLACE }),
    opt("delivery", Form::Object(&[req("options", Form::EnumSet(DELIVERY_OPTIONS))])),
    opt("payment", Form::Object(&[req("methods", Form::EnumSet(PAYMENT_METHODS))])),
    opt("locations", Form::ObjectList { min: 0, max: MAX_LIST_ITEMS, fields: LOCATION }),
    opt("ships_internationally", Form::Bool),
    opt("year_established", Form::Int { min: 1000, max: 9999 }),
    opt("represent", Form::Object(REPRESENT)),
    opt("endpoints", Form::Object(ENDPOINTS)),
];

/// The brand names the file itself declares (`brands_owned`, `brands_sold`).
pub(super) fn declared_brands(map: &Map<String, Value>) -> Vec<String> {
    ["brands_owned", "brands_sold"]
        .into_iter()
        .filter_map(|list| map.get(list).and_then(Value::as_array))
        .flatten()
        .filter_map(|brand| brand.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The `endpoints.domains` of a business file's bytes (none when it has no
/// endpoints or does not read), at most [`super::MAX_DOMAINS`].
pub fn endpoint_domains(bytes: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else { return Vec::new() };
    let domains = value.pointer("/endpoints/domains").and_then(Value::as_array).cloned().unwrap_or_default();
    domains.iter().filter_map(Value::as_str).take(super::MAX_DOMAINS).map(str::to_owned).collect()
}

/// Every endpoint address must be on one of `endpoints.domains`, or a
/// subdomain of one: an address off the assured domains could not be suspended
/// with them.
pub(super) fn cross(checker: &mut Checker<'_>, map: &Map<String, Value>) {
    let Some(endpoints) = map.get("endpoints").and_then(Value::as_object) else {
        return;
    };
    let Some(domains) = endpoints.get("domains").and_then(Value::as_array) else {
        return;
    };
    let domains: Vec<&str> = domains.iter().filter_map(Value::as_str).collect();
    for name in ENDPOINT_URLS {
        let Some(Ok(url)) = endpoints.get(name).and_then(Value::as_str).map(|u| parse_url(u, true)) else {
            continue;
        };
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let covered = domains.iter().any(|d| host == *d || host.ends_with(&format!(".{d}")));
        if !covered {
            let detail = format!("{host} is not one of endpoints.domains");
            checker.push(ErrorCode::FieldInvalid, &child("/endpoints", name), detail);
        }
    }
}
