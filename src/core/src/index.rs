//! The verification index (P4.2.16, P4.2.17; its path is ours, P-NS-8) and
//! the vocabularies it pins: every payload type, hash-pinned specification
//! and vocabulary, each with its version, URL and hash, so a verifier can
//! pin exactly what it checks against.

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::canonical::canonicalize;
use crate::digest::sha256_prefixed;
use crate::records;

/// Where the index is served.
pub const INDEX_PATH: &str = "/v1/verification-index";
/// Where the list of vocabularies is served; one is at `{VOCABULARIES_PATH}/{name}`.
pub const VOCABULARIES_PATH: &str = "/v1/vocabularies";

/// Every payload type this build issues or accepts, by short name.
pub const PAYLOAD_TYPES: &[&str] = &[
    "seal.v1",
    "seal.v2",
    "batch-seal.v2",
    "mandate.v1",
    "push-release.v1",
    "receipt.v1",
    "receipt.v2",
    "receipt.v3",
    "sidecar.v1",
    "sidecar.v2",
    "jwks.v1",
    "key-certificate.v1",
    "key-custody.v1",
    "business-keys.v1",
    "certificate.v1",
    "verify-statement.v1",
    "verify-page.v1",
    "key-directory.v1",
    "custody-request.v1",
    "campaign.v1",
    "render.v1",
    "click.v1",
];

/// A controlled list of values a record field takes (R-NS-4).
pub struct Vocabulary {
    pub name: &'static str,
    pub version: u64,
    pub sha256: String,
    document: Value,
}

impl Vocabulary {
    /// The document as served, its `sha256` included.
    pub fn document(&self) -> &Value {
        &self.document
    }

    fn entry(&self) -> Value {
        json!({"name": self.name, "version": self.version, "url": format!("{VOCABULARIES_PATH}/{}", self.name), "sha256": self.sha256})
    }
}

const LISTS: &[(&str, &[&str])] = &[
    ("availability", records::AVAILABILITY),
    ("channels", records::CHANNELS),
    ("delivery_options", records::DELIVERY_OPTIONS),
    ("payment_methods", records::PAYMENT_METHODS),
    ("event_types", records::EVENT_TYPES),
    ("attendance_modes", records::ATTENDANCE_MODES),
    ("age_restrictions", records::AGE_RESTRICTIONS),
    ("employment_types", records::EMPLOYMENT_TYPES),
    ("work_arrangements", records::WORK_ARRANGEMENTS),
    ("salary_periods", records::SALARY_PERIODS),
    ("update_types", records::UPDATE_TYPES),
];

/// Every vocabulary, in a fixed order; each hashed over its canonical form
/// without the `sha256` member, as projection specifications are.
pub fn vocabularies() -> &'static [Vocabulary] {
    static ALL: OnceLock<Vec<Vocabulary>> = OnceLock::new();
    ALL.get_or_init(|| {
        LISTS
            .iter()
            .map(|&(name, values)| {
                let mut document = json!({"vocabulary": name, "version": 1, "values": values});
                let sha256 = sha256_prefixed(&canonicalize(&document));
                document["sha256"] = Value::String(sha256.clone());
                Vocabulary { name, version: 1, sha256, document }
            })
            .collect()
    })
}

/// The vocabulary called `name`.
pub fn vocabulary(name: &str) -> Option<&'static Vocabulary> {
    vocabularies().iter().find(|v| v.name == name)
}

/// `GET /v1/vocabularies`: each vocabulary's name, version, URL and hash.
pub fn vocabulary_list() -> Value {
    json!({"vocabularies": vocabularies().iter().map(Vocabulary::entry).collect::<Vec<_>>()})
}

/// The verification index. No test vectors are published, so no entry has
/// `test_vectors_url` (P4.2.17).
/// Whether `document` is what an index entry pins by `sha256`: `sha256:`
/// and the hex of its RFC 8785 form without its own `sha256` member.
pub fn pinned_by(document: &Value, sha256: &str) -> bool {
    let mut bare = document.clone();
    if let Some(map) = bare.as_object_mut() {
        map.remove("sha256");
    }
    sha256_prefixed(&canonicalize(&bare)) == sha256
}

pub fn verification_index() -> Value {
    let payload_types: Vec<Value> = PAYLOAD_TYPES
        .iter()
        .map(|name| {
            let (family, version) = name.rsplit_once(".v").unwrap_or((name, "1"));
            json!({"payload_type": crate::dsse::payload_type(name), "family": family, "version": version.parse::<u64>().unwrap_or(1)})
        })
        .collect();
    let projections: Vec<Value> = crate::projection::specs()
        .iter()
        .map(|s| {
            json!({"version": s.version, "url": format!("/v1/projections/{}/{}", s.record_type.name(), s.version_number()), "sha256": s.sha256})
        })
        .collect();
    let policy_key = crate::ai_policy::key_document();
    json!({
        "payload_types": payload_types,
        "specifications": {
            "projections": projections,
            "ai_policy_key": {"ai_policy_schema": crate::ai_policy::CURRENT_SCHEMA, "url": "/v1/ai-policy-key", "sha256": sha256_prefixed(&canonicalize(&policy_key))},
        },
        "vocabularies": vocabularies().iter().map(Vocabulary::entry).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pinned_document_hashes_to_its_entry_and_a_changed_one_does_not() {
        for vocabulary in vocabularies() {
            assert!(pinned_by(vocabulary.document(), &vocabulary.sha256), "{}", vocabulary.name);
            let mut changed = vocabulary.document().clone();
            changed["version"] = json!(99);
            assert!(!pinned_by(&changed, &vocabulary.sha256), "{}", vocabulary.name);
        }
        for spec in crate::projection::specs() {
            assert!(pinned_by(spec.document(), &spec.sha256));
        }
    }

    // rule: P4.2.16, P4.2.17
    #[test]
    fn the_index_pins_every_payload_type_specification_and_vocabulary_by_hash() {
        let index = verification_index();
        let types = index["payload_types"].as_array().unwrap();
        assert_eq!(types.len(), PAYLOAD_TYPES.len());
        assert!(
            types.iter().any(|t| t["payload_type"] == "application/vnd.service.receipt.v3+json" && t["version"] == 3)
        );
        let projections = index["specifications"]["projections"].as_array().unwrap();
        assert_eq!(projections.len(), crate::projection::specs().len());
        for p in projections {
            assert!(p["sha256"].as_str().unwrap().starts_with("sha256:"));
            assert!(p["url"].as_str().unwrap().starts_with("/v1/projections/"));
        }
        for entry in index["vocabularies"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            let document = vocabulary(name).unwrap().document().clone();
            let mut unhashed = document.clone();
            unhashed.as_object_mut().unwrap().remove("sha256");
            assert_eq!(entry["sha256"], Value::String(sha256_prefixed(&canonicalize(&unhashed))));
            assert_eq!(entry["sha256"], document["sha256"]);
        }
        assert!(!index.to_string().contains("test_vectors_url"));
    }

    #[test]
    fn an_unknown_vocabulary_is_none_and_the_list_names_them_all() {
        assert!(vocabulary("colours").is_none());
        assert_eq!(vocabulary("employment_types").unwrap().document()["values"][0], "full_time");
        assert_eq!(vocabulary_list()["vocabularies"].as_array().unwrap().len(), LISTS.len());
    }
}
