//! A signed row as the index sees it: its id and business, the countries it
//! is published for, its text, the values of its filter fields (by the
//! collection's allow-list, nothing else), its points, and the row's exact
//! bytes to serve back.

use serde_json::{Map, Value};
use svc_core::ids::RecordType;
use svc_core::search::fields::{self, Kind};
use svc_core::search::serve::RowIds;

/// One filter value, as indexed.
#[derive(Debug, Clone, PartialEq)]
pub enum Indexed {
    Str(String),
    Bool(bool),
    Num(f64),
}

/// A document with the AI groups that blocked its business.
pub type Blocked = (IndexDoc, Vec<String>);

#[derive(Debug, Clone, PartialEq)]
pub struct IndexDoc {
    pub record_id: String,
    pub business_uuid: String,
    pub countries: Vec<String>,
    /// (text field, text), a field possibly repeated.
    pub texts: Vec<(&'static str, String)>,
    /// (row field, value): `price_FR`, `language`, `delivery.options`, ...
    pub filters: Vec<(String, Indexed)>,
    /// (filter field, lat, lng) for `near`.
    pub points: Vec<(&'static str, f64, f64)>,
    /// The signed row's JSON, served verbatim.
    pub row: Vec<u8>,
    /// The row's ids as their own JSON text ([`RowIds`]), for the receipt.
    pub ids: String,
}

/// Leaves under a dotted path, through arrays.
fn leaves<'a>(value: &'a Value, path: &[&str], out: &mut Vec<&'a Value>) {
    match (value, path.split_first()) {
        (Value::Array(items), _) => items.iter().for_each(|i| leaves(i, path, out)),
        (_, None) => out.push(value),
        (Value::Object(map), Some((head, rest))) => {
            if let Some(child) = map.get(*head) {
                leaves(child, rest, out);
            }
        }
        _ => {}
    }
}

fn indexed(kind: Kind, value: &Value) -> Option<Indexed> {
    match (kind, value) {
        (Kind::Str | Kind::Currency, Value::String(s)) => Some(Indexed::Str(s.clone())),
        (Kind::Bool, Value::Bool(b)) => Some(Indexed::Bool(*b)),
        (Kind::Money | Kind::Int | Kind::Timestamp, Value::Number(n)) => n.as_f64().map(Indexed::Num),
        _ => None,
    }
}

/// The index document of a signed row of `collection`.
pub fn index_doc(collection: RecordType, row_bytes: &[u8]) -> Option<IndexDoc> {
    let spec = fields::collection(collection)?;
    let row: Map<String, Value> = serde_json::from_slice(row_bytes).ok()?;
    let whole = Value::Object(row.clone());
    let ids = RowIds::of_row(&row)?;
    let mut doc = IndexDoc {
        record_id: ids.record_id.to_string(),
        business_uuid: ids.business_uuid.to_string(),
        countries: row
            .get("countries")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
        texts: Vec::new(),
        filters: Vec::new(),
        points: Vec::new(),
        row: row_bytes.to_vec(),
        ids: serde_json::to_string(&ids).ok()?,
    };
    // Words are folded and stemmed in the record's own language (`text`).
    let language = row.get("language").and_then(Value::as_str);
    for field in spec.text_fields {
        let path: Vec<&str> = field.split('.').collect();
        let mut found = Vec::new();
        leaves(&whole, &path, &mut found);
        doc.texts
            .extend(found.into_iter().filter_map(Value::as_str).map(|s| (*field, super::text::indexed(s, language))));
    }
    for field in spec.filters {
        match (collection, field.name) {
            // A product's prices are per country: every price_{CC} of the row.
            (RecordType::Products, "price_amount" | "price_currency") => {
                let prefix = if field.name == "price_amount" { "price_" } else { "price_currency_" };
                for (name, value) in &row {
                    let cc = name.strip_prefix(prefix).filter(|cc| cc.len() == 2 && svc_core::ids::is_country(cc));
                    if let (Some(_), Some(v)) = (cc, indexed(field.kind, value)) {
                        doc.filters.push((name.clone(), v));
                    }
                }
            }
            // Paid placement is a serve-time fact, answered by record id
            // beside the query (`RecordIds`), never indexed.
            (RecordType::Products, "sponsored") => {}
            _ if field.kind == Kind::Geo => {
                let mut found = Vec::new();
                leaves(&whole, &[field.name], &mut found);
                for point in found {
                    if let (Some(lat), Some(lng)) =
                        (point.get("lat").and_then(Value::as_f64), point.get("lng").and_then(Value::as_f64))
                    {
                        doc.points.push((field.name, lat, lng));
                    }
                }
            }
            _ => {
                let path: Vec<&str> = field.name.split('.').collect();
                let mut found = Vec::new();
                leaves(&whole, &path, &mut found);
                for value in found {
                    if let Some(v) = indexed(field.kind, value) {
                        doc.filters.push((field.name.to_owned(), v));
                    }
                }
            }
        }
    }
    Some(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use svc_core::search::serve::row_ids;

    #[test]
    fn a_product_row_gives_its_filters_per_country() {
        let row = json!({"record_id": "svc_a", "business_uuid": "b", "type": "products", "countries": ["FR", "DE"],
            "product_name": "Oak Lamp", "tags": ["lamp", "oak"], "brand": "Lumio", "language": "fr", "on_sale": true,
            "price_FR": 12.5, "price_currency_FR": "EUR", "price_DE": 13, "price_currency_DE": "EUR",
            "published_at": 1_800_000_000});
        let doc = index_doc(RecordType::Products, &serde_json::to_vec(&row).unwrap()).unwrap();
        assert_eq!(doc.countries, vec!["FR", "DE"]);
        assert!(doc.texts.contains(&("tags", "oak".into())));
        assert!(doc.filters.contains(&("price_FR".into(), Indexed::Num(12.5))));
        assert!(doc.filters.contains(&("price_currency_DE".into(), Indexed::Str("EUR".into()))));
        assert!(doc.filters.contains(&("on_sale".into(), Indexed::Bool(true))));
        assert!(doc.filters.contains(&("published_at".into(), Indexed::Num(1_800_000_000.0))));
        assert!(doc.filters.iter().all(|(name, _)| name != "sponsored"), "paid placement is not the row's");
        // The ids kept beside the row read as the row's own (no origin or
        // row signature here: none is written).
        assert_eq!(doc.ids, r#"{"record_id":"svc_a","business_uuid":"b"}"#);
    }

    #[test]
    fn the_ids_kept_beside_a_row_read_as_the_rows_own() {
        let row = json!({"record_id": "svc_a", "business_uuid": "b", "countries": ["FR"], "product_name": "Lamp",
            "adl_origin": "sha256:ab", "adl_row_sig": "c2ln", "price_FR": 1});
        let bytes = serde_json::to_vec(&row).unwrap();
        let doc = index_doc(RecordType::Products, &bytes).unwrap();
        let (kept, own) = (row_ids(doc.ids.as_bytes()).unwrap(), row_ids(&bytes).unwrap());
        assert_eq!(
            (kept.record_id, kept.business_uuid, kept.adl_origin, kept.adl_row_sig),
            (own.record_id, own.business_uuid, own.adl_origin, own.adl_row_sig)
        );
    }

    #[test]
    fn nested_and_geo_fields_are_found() {
        let row = json!({"record_id": "bf_a", "business_uuid": "b", "countries": ["FR"], "description": "Shop",
            "brands_owned": [{"name": "Lumio"}], "delivery": {"options": ["pickup", "delivery"]},
            "location_geo": [{"lat": 45.7, "lng": 4.8}, {"lat": 48.8, "lng": 2.3}], "has_booking": false});
        let doc = index_doc(RecordType::BusinessFiles, &serde_json::to_vec(&row).unwrap()).unwrap();
        assert!(doc.texts.contains(&("brands_owned.name", "lumio".into())), "folded, as the index holds it");
        assert!(doc.filters.contains(&("delivery.options".into(), Indexed::Str("pickup".into()))));
        assert_eq!(doc.points, vec![("location_geo", 45.7, 4.8), ("location_geo", 48.8, 2.3)]);
    }
}
