//! An ad item checked (P4.2.23): beyond its seal and row, that every text
//! and link it would show is the sealed one. The seal and the row are
//! judged as any record's; this judges what only an ad item has.

use serde_json::{Map, Value, json};

use crate::Reason;
use crate::ads::images::Slot;
use crate::digest::sha256_prefixed;

use super::Check;

/// The path an image link of the service names its image by.
pub const IMAGE_PATH: &str = "/v1/ads/images/";

/// The `ad_item` member of a statement: `shown_is_sealed` with the item
/// members that differ from the sealed record or the row.
pub fn judge(item: &Map<String, Value>, record: &[u8], row: Option<&Map<String, Value>>) -> Value {
    let mut differ: Vec<&'static str> = Vec::new();
    let sealed: Map<String, Value> = serde_json::from_slice(record).unwrap_or_default();
    let creative = item.get("creative").and_then(Value::as_object).cloned().unwrap_or_default();
    let shown = |name: &str| creative.get(name).unwrap_or(&Value::Null);
    let of_record = |name: &str| sealed.get(name).unwrap_or(&Value::Null);
    for (member, source) in [
        ("creative.headline", "headline"),
        ("creative.description", "description"),
        ("creative.cta", "cta_text"),
        ("creative.destination_url", "destination_url"),
    ] {
        let name = member.trim_start_matches("creative.");
        if shown(name) != of_record(source) || of_record(source).is_null() {
            differ.push(member);
        }
    }
    let destination = of_record("destination_url").as_str().unwrap_or_default();
    if shown("display_domain").as_str() != crate::ads::display_domain(destination).as_deref() {
        differ.push("creative.display_domain");
    }
    let hashes = row.and_then(|r| r.get("adl_creative")).and_then(Value::as_object);
    for slot in Slot::ALL {
        let named = hashes.and_then(|h| h.get(slot.creative_member())).and_then(Value::as_str);
        let linked = shown(slot.url_member()).as_str().and_then(linked_hash);
        let sealed_has = of_record(slot.url_member()).is_string();
        let fine = match (sealed_has, linked, named) {
            (false, None, None) => shown(slot.url_member()).is_null(),
            (true, Some(linked), Some(named)) => linked == named,
            _ => false,
        };
        if !fine {
            differ.push(match slot {
                Slot::Square => "creative.image_square_url",
                Slot::Landscape => "creative.image_landscape_url",
            });
        }
    }
    if item.get("label").and_then(Value::as_str) != Some("Ad") {
        differ.push("label");
    }
    match row {
        Some(row) => {
            let text = |m: &Map<String, Value>, name: &str| m.get(name).and_then(Value::as_str).map(str::to_owned);
            if text(row, "record_id").is_none() || text(row, "record_id") != text(item, "ad_id") {
                differ.push("ad_id");
            }
            if text(row, "business_uuid") != text(item, "business_uuid") {
                differ.push("business_uuid");
            }
            if row.get("adl_origin_seal").is_none() || row.get("adl_origin_seal") != item.get("adl_origin_seal") {
                differ.push("adl_origin_seal");
            }
            if text(row, "adl_origin").as_deref() != Some(sha256_prefixed(record).as_str()) {
                differ.push("record_base64");
            }
        }
        None => differ.push("row"),
    }
    if differ.is_empty() {
        json!({"shown_is_sealed": Check::Ok, "differ": differ})
    } else {
        json!({"shown_is_sealed": Check::Failed, "differ": differ, "reason": Reason::HashMismatch})
    }
}

/// The `sha256:` hash an image link of the service names, from its path.
fn linked_hash(link: &str) -> Option<String> {
    let path = link.split('?').next()?;
    let hex = &path[path.find(IMAGE_PATH)? + IMAGE_PATH.len()..];
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| format!("sha256:{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (Map<String, Value>, Vec<u8>, Map<String, Value>) {
        let record = br#"{"headline":"Warm lamps","description":"Lamps.","cta_text":"See","destination_url":"https://shop.example.com/lamps","image_square_url":"https://shop.example.com/sq.png"}"#.to_vec();
        let hex = "ab".repeat(32);
        let row = json!({"record_id": "ad_1", "business_uuid": "b", "adl_origin_seal": {"payload": "x"},
            "adl_origin": sha256_prefixed(&record), "adl_creative": {"image_square": format!("sha256:{hex}")}});
        let item = json!({"ad_id": "ad_1", "business_uuid": "b", "label": "Ad", "adl_origin_seal": {"payload": "x"},
            "creative": {"headline": "Warm lamps", "description": "Lamps.", "cta": "See",
                "destination_url": "https://shop.example.com/lamps", "display_domain": "shop.example.com",
                "image_square_url": format!("https://eu.example/v1/ads/images/{hex}?expires=1&sig=00"),
                "image_landscape_url": null}});
        (item.as_object().unwrap().clone(), record, row.as_object().unwrap().clone())
    }

    // rule: P4.2.23
    #[test]
    fn every_text_and_link_an_item_shows_must_be_the_sealed_one() {
        let (item, record, row) = fixture();
        assert_eq!(judge(&item, &record, Some(&row))["shown_is_sealed"], "ok");
        let changed = |edit: &dyn Fn(&mut Map<String, Value>), expect: &str| {
            let mut item = item.clone();
            edit(&mut item);
            let verdict = judge(&item, &record, Some(&row));
            assert_eq!(verdict["shown_is_sealed"], "failed");
            assert_eq!(verdict["differ"], json!([expect]), "{verdict}");
        };
        changed(&|i| i["creative"]["headline"] = json!("Cheap lamps"), "creative.headline");
        changed(&|i| i["creative"]["cta"] = json!("Buy"), "creative.cta");
        changed(
            &|i| i["creative"]["destination_url"] = json!("https://evil.example/lamps"),
            "creative.destination_url",
        );
        changed(&|i| i["creative"]["display_domain"] = json!("other.example"), "creative.display_domain");
        let other = format!("https://eu.example/v1/ads/images/{}?expires=1&sig=00", "cd".repeat(32));
        changed(&|i| i["creative"]["image_square_url"] = json!(other), "creative.image_square_url");
        changed(&|i| i["creative"]["image_landscape_url"] = json!(other), "creative.image_landscape_url");
        changed(&|i| i["ad_id"] = json!("ad_2"), "ad_id");
        changed(&|i| i["adl_origin_seal"] = json!({"payload": "y"}), "adl_origin_seal");
        changed(&|i| i["label"] = json!("Sponsored"), "label");
        assert_eq!(judge(&item, b"{}", Some(&row))["shown_is_sealed"], "failed");
        assert_eq!(judge(&item, &record, None)["differ"], json!(["creative.image_square_url", "row"]));
    }
}
