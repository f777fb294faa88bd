//! `service/products/1` (retrieval 2.1, R2.1.8 to R2.1.10): an item or service
//! with a price per country.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::form::{CATEGORY, Checker, Field, Form, LABEL, NAME, long_text, opt, req, valid_countries};
use super::{AVAILABILITY, CHANNELS, ErrorCode, MAX_COUNTRIES, MAX_SHORT_DESCRIPTION};

/// One entry of `prices`: the price in one country.
const PRICE: &[Field] = &[req("country", Form::Country), req("currency", Form::Currency), req("amount", Form::Money)];

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("business_product_id", Form::OwnId),
    req("product_name", Form::Text(NAME)),
    req("countries", Form::Countries),
    req("prices", Form::ObjectList { min: 1, max: MAX_COUNTRIES, fields: PRICE }),
    req("on_sale", Form::Bool),
    req("availability", Form::Enum(AVAILABILITY)),
    req("product_url", Form::Url),
    opt("vertical", Form::Slug),
    opt("category", Form::Text(CATEGORY)),
    opt("channel", Form::Enum(CHANNELS)),
    opt("brand", Form::Text(LABEL)),
    opt("tags", Form::Tags),
    opt("short_description", Form::Text(long_text(MAX_SHORT_DESCRIPTION))),
    opt("gtin", Form::Gtin),
];

/// Exactly one price for each country in `countries`, and none for another.
pub(super) fn cross(checker: &mut Checker<'_>, map: &Map<String, Value>) {
    let Some(prices) = map.get("prices").and_then(Value::as_array) else {
        return;
    };
    let countries = valid_countries(map);
    let mut priced = HashSet::new();
    for (i, price) in prices.iter().enumerate() {
        let Some(country) = price.get("country").and_then(Value::as_str) else {
            continue;
        };
        if !crate::ids::is_country(country) {
            continue;
        }
        let at = format!("/prices/{i}/country");
        if !countries.contains(&country) {
            checker.push(ErrorCode::FieldInvalid, &at, format!("{country} is not in countries"));
        } else if !priced.insert(country) {
            checker.push(ErrorCode::FieldInvalid, &at, format!("a second price for {country}"));
        }
    }
    for country in countries {
        if !priced.contains(country) {
            checker.push(ErrorCode::FieldInvalid, "/prices", format!("no price for {country}"));
        }
    }
}
