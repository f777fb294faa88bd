//! What a search adds at serve time (retrieval 2.4): a row is exactly what
//! the projection signed, plus `ai_policy_bits`, `sponsored` (only on a paid
//! placement) and `freshness_expectation`; and the receipt's entry for it.
//! Also the exact distance check behind `near` (the index only narrows by
//! a bounding box).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ai_policy::AiPolicyBits;
use crate::freshness::FreshnessExpectation;
use crate::receipt::ReceiptRow;

/// The mean Earth radius used for `near` (IUGG), in kilometres.
pub const EARTH_RADIUS_KM: f64 = 6_371.008_8;

/// Great-circle distance between two points, by the haversine formula.
pub fn haversine_km(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = (lat2 - lat1).to_radians();
    let dl = (lng2 - lng1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().min(1.0).asin()
}

/// The latitude and longitude bounds that contain every point within
/// `radius_km` of a centre: what the index filters on before the exact check.
pub fn bounding_box(lat: f64, lng: f64, radius_km: f64) -> ((f64, f64), (f64, f64)) {
    let dlat = (radius_km / EARTH_RADIUS_KM).to_degrees();
    let lat_min = (lat - dlat).max(-90.0);
    let lat_max = (lat + dlat).min(90.0);
    // Near a pole, or when the box would wrap, every longitude qualifies.
    let cos = lat_max.abs().max(lat_min.abs()).to_radians().cos();
    let dlng = if cos <= 1e-9 { 180.0 } else { (dlat / cos).min(180.0) };
    let (lng_min, lng_max) =
        if lng - dlng < -180.0 || lng + dlng > 180.0 { (-180.0, 180.0) } else { (lng - dlng, lng + dlng) };
    ((lat_min, lat_max), (lng_min, lng_max))
}

/// Whether any of a row's points lies within the radius.
pub fn any_within(points: &[(f64, f64)], lat: f64, lng: f64, radius_km: f64) -> bool {
    points.iter().any(|(plat, plng)| haversine_km(lat, lng, *plat, *plng) <= radius_km)
}

/// What the service knows at serve time about the row's business.
#[derive(Debug, Clone, Copy)]
pub struct ServeTime {
    pub bits: AiPolicyBits,
    /// The business's authorised endpoints are suspended: `purchase` is withheld.
    pub endpoints_suspended: bool,
    pub sponsored: bool,
    pub freshness: Option<FreshnessExpectation>,
}

/// The row as served: the signed row and the serve-time members.
pub fn serve_row(signed: &Map<String, Value>, at: &ServeTime) -> Map<String, Value> {
    let mut row = signed.clone();
    let bits = if at.endpoints_suspended { at.bits.with_purchase_withheld() } else { at.bits };
    row.insert("ai_policy_bits".into(), serde_json::to_value(bits).unwrap_or(Value::Null));
    if at.sponsored {
        row.insert("sponsored".into(), Value::Bool(true));
    }
    if let Some(freshness) = at.freshness {
        row.insert("freshness_expectation".into(), serde_json::to_value(freshness).unwrap_or(Value::Null));
    }
    row
}

/// A search receipt's entry for a served row.
pub fn receipt_row(signed: &Map<String, Value>, at: &ServeTime) -> ReceiptRow {
    let text = |name: &str| signed.get(name).and_then(Value::as_str).map(str::to_owned);
    ReceiptRow {
        id: text("record_id").unwrap_or_default(),
        adl_origin: text("adl_origin"),
        row_sig: text("adl_row_sig"),
        sha256: None,
        ai_policy_version: Some(at.bits.ai_policy_version),
        sponsored: at.sponsored.then_some(true),
    }
}

/// The members of a stored row that serving needs, read from its JSON text
/// without building the row. The index keeps them as their own short JSON
/// text beside the row, so serving does not read through the whole row.
#[derive(Debug, Deserialize, Serialize)]
pub struct RowIds<'a> {
    #[serde(borrow)]
    pub record_id: Cow<'a, str>,
    #[serde(borrow)]
    pub business_uuid: Cow<'a, str>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub adl_origin: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub adl_row_sig: Option<Cow<'a, str>>,
}

/// Reads a stored row's ids; `None` when the text is not such a row.
pub fn row_ids(row: &[u8]) -> Option<RowIds<'_>> {
    serde_json::from_slice(row).ok()
}

impl<'a> RowIds<'a> {
    /// The ids of a parsed row; `None` without its record id or business.
    pub fn of_row(row: &'a Map<String, Value>) -> Option<RowIds<'a>> {
        let text = |name: &str| row.get(name).and_then(Value::as_str).map(Cow::Borrowed);
        Some(RowIds {
            record_id: text("record_id")?,
            business_uuid: text("business_uuid")?,
            adl_origin: text("adl_origin"),
            adl_row_sig: text("adl_row_sig"),
        })
    }
}

/// The row as served, as JSON text: the stored row's own text, untouched,
/// with the serve-time members appended inside its braces. Equal, as JSON,
/// to [`serve_row`] of the parsed row.
pub fn serve_row_text(row: &[u8], at: &ServeTime) -> Option<Vec<u8>> {
    let trimmed = row.trim_ascii();
    let inner = trimmed.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let mut out = Vec::with_capacity(trimmed.len() + 160);
    out.push(b'{');
    out.extend_from_slice(inner);
    let bits = if at.endpoints_suspended { at.bits.with_purchase_withheld() } else { at.bits };
    let first = inner.trim_ascii().is_empty();
    append_member(&mut out, first, "ai_policy_bits", &bits);
    if at.sponsored {
        append_member(&mut out, false, "sponsored", &true);
    }
    if let Some(freshness) = at.freshness {
        append_member(&mut out, false, "freshness_expectation", &freshness);
    }
    out.push(b'}');
    Some(out)
}

/// Writes `"name":value` at the end of an object's text.
fn append_member<T: serde::Serialize>(out: &mut Vec<u8>, first: bool, name: &str, value: &T) {
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// A search receipt's entry for a served row, from its ids.
pub fn receipt_row_of(ids: &RowIds<'_>, at: &ServeTime) -> ReceiptRow {
    ReceiptRow {
        id: ids.record_id.clone().into_owned(),
        adl_origin: ids.adl_origin.as_ref().map(|s| s.clone().into_owned()),
        row_sig: ids.adl_row_sig.as_ref().map(|s| s.clone().into_owned()),
        sha256: None,
        ai_policy_version: Some(at.bits.ai_policy_version),
        sponsored: at.sponsored.then_some(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // rule: R2.2.22
    #[test]
    fn distances_and_boxes() {
        // Lyon to Paris is about 392 km.
        let d = haversine_km(45.764, 4.8357, 48.8566, 2.3522);
        assert!((d - 392.0).abs() < 3.0, "{d}");
        assert!(any_within(&[(48.8566, 2.3522)], 45.764, 4.8357, 400.0));
        assert!(!any_within(&[(48.8566, 2.3522)], 45.764, 4.8357, 380.0));
        let ((lat_min, lat_max), (lng_min, lng_max)) = bounding_box(45.764, 4.8357, 400.0);
        assert!(lat_min < 48.8566 - 5.0 && 48.8566 < lat_max);
        assert!(lng_min < 2.3522 && 2.3522 < lng_max);
        assert_eq!(bounding_box(89.9, 0.0, 50.0).1, (-180.0, 180.0), "near a pole every longitude");
        assert_eq!(bounding_box(0.0, 179.9, 50.0).1, (-180.0, 180.0), "across the antimeridian");
    }

    // rule: R2.4.7, R2.4.15, R2.4.16, R2.4.18, R2.5.17, R2.6.9
    #[test]
    fn serve_time_members_sit_outside_the_signed_row() {
        let signed = json!({"record_id": "svc_x", "adl_origin": "sha256:aa", "adl_row_sig": "c2ln", "price_FR": 12.5})
            .as_object()
            .unwrap()
            .clone();
        let bits = AiPolicyBits { ai_policy_version: 3, ai_policy_schema: 2, use_mask: 1, action: 0b1001, blocked: 2 };
        let plain = ServeTime { bits, endpoints_suspended: false, sponsored: false, freshness: None };
        let row = serve_row(&signed, &plain);
        assert_eq!(row["ai_policy_bits"]["action"], 0b1001);
        assert!(!row.contains_key("sponsored") && !row.contains_key("freshness_expectation"));
        for (k, v) in &signed {
            assert_eq!(&row[k], v, "the signed members are untouched");
        }
        let suspended = ServeTime {
            endpoints_suspended: true,
            sponsored: true,
            freshness: Some(FreshnessExpectation::Daily),
            ..plain
        };
        let row = serve_row(&signed, &suspended);
        assert_eq!(row["ai_policy_bits"]["action"], 0b0001, "purchase withheld");
        assert_eq!(row["sponsored"], true);
        assert_eq!(row["freshness_expectation"], json!({"cadence": "daily"}));
        let entry = receipt_row(&signed, &suspended);
        assert_eq!((entry.id.as_str(), entry.ai_policy_version, entry.sponsored), ("svc_x", Some(3), Some(true)));
        assert_eq!(entry.row_sig.as_deref(), Some("c2ln"));
    }

    #[test]
    fn a_row_served_as_text_equals_the_row_served_as_a_map() {
        let signed = json!({"record_id": "svc_x", "business_uuid": "b", "adl_origin": "sha256:aa", "adl_row_sig": "c2ln",
            "product_name": "Caf\u{e9} \"quoted\"", "price_FR": 12.5});
        let text = serde_json::to_vec(&signed).unwrap();
        let bits = AiPolicyBits { ai_policy_version: 3, ai_policy_schema: 2, use_mask: 1, action: 0b1001, blocked: 2 };
        for at in [
            ServeTime { bits, endpoints_suspended: false, sponsored: false, freshness: None },
            ServeTime {
                bits,
                endpoints_suspended: true,
                sponsored: true,
                freshness: Some(FreshnessExpectation::Daily),
            },
        ] {
            let served: Value = serde_json::from_slice(&serve_row_text(&text, &at).unwrap()).unwrap();
            assert_eq!(served, Value::Object(serve_row(signed.as_object().unwrap(), &at)));
            let ids = row_ids(&text).unwrap();
            assert_eq!(receipt_row_of(&ids, &at), receipt_row(signed.as_object().unwrap(), &at));
        }
        let empty =
            serve_row_text(b" {} ", &ServeTime { bits, endpoints_suspended: false, sponsored: false, freshness: None });
        assert!(serde_json::from_slice::<Value>(&empty.unwrap()).is_ok(), "an empty object takes members too");
        assert!(
            serve_row_text(b"[1]", &ServeTime { bits, endpoints_suspended: false, sponsored: false, freshness: None })
                .is_none()
        );
    }
}
