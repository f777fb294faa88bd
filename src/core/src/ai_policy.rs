//! The AI policy: the sealed record's booleans, their bits (retrieval 2.5),
//! and the public AI policy key document.
//!
//! Bit positions under a schema never change; a new toggle is a new schema
//! that only appends. An unknown `ai_policy_schema` is refused, never guessed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The schema new policies are sealed under.
pub const CURRENT_SCHEMA: u64 = 2;

pub const AI_POLICY_RECORD_SCHEMA: &str = "service/ai_policy/1";
pub const TERMS_RECORD_SCHEMA: &str = "service/terms/1";

/// `use` mask, bit n = index n. (name, meaning, since_schema)
pub const USE_FLAGS: [(&str, &str, u64); 7] = [
    ("cite_as_source", "cite the business", 1),
    ("definitive_source", "its record wins over third parties", 1),
    ("prefer_over_inference", "an omitted field means not stated; do not infer", 1),
    ("include_in_recommendations", "may be recommended", 1),
    ("quote_policy_verbatim", "quote delivery, returns and warranty wording verbatim", 1),
    ("prices_indicative", "prices are indicative", 1),
    ("state_publish_date", "say when last published", 1),
];

/// `action` mask, bit n = index n.
pub const ACTION_FLAGS: [(&str, &str, u64); 6] = [
    ("answer", "data may be used to answer", 1),
    ("quote", "a price may be stated as current", 1),
    ("reserve", "a booking may be made for a person", 1),
    ("purchase", "a purchase may be completed through an authorised checkout domain", 1),
    ("contact", "the business may be contacted for a person", 1),
    ("hand_to_human", "the person must be handed to the business beyond answering", 1),
];

/// `blocked` mask, bit n = index n: (code, name, meaning). Since schema 2.
pub const BLOCKED_CONTEXTS: [(&str, &str, &str); 10] = [
    ("bc1", "adult_sexual", "adult and sexual content"),
    ("bc2", "alcohol", "alcohol"),
    ("bc3", "crime_illegal", "crime and illegal activity"),
    ("bc4", "death_tragedy_disaster", "death, tragedy and disaster"),
    ("bc5", "firearms_weapons_violence", "firearms, weapons and violence"),
    ("bc6", "gambling_betting", "gambling and betting"),
    ("bc7", "mental_health_self_harm", "mental health, self-harm and crisis"),
    ("bc8", "politics_elections", "politics and elections"),
    ("bc9", "regulated_advice", "regulated advice (medical, legal, financial)"),
    ("bc10", "tobacco_vaping_drugs", "tobacco, vaping and recreational drugs"),
];

const PURCHASE_BIT: u64 = 1 << 3;

/// The `ai_policy_bits` member of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiPolicyBits {
    pub ai_policy_version: u64,
    pub ai_policy_schema: u64,
    #[serde(rename = "use")]
    pub use_mask: u64,
    pub action: u64,
    pub blocked: u64,
}

impl AiPolicyBits {
    /// A business that never sealed a policy: version 0, every mask 0. The
    /// schema is the current one, so consumers decode it rather than refuse.
    pub fn none() -> Self {
        AiPolicyBits { ai_policy_version: 0, ai_policy_schema: CURRENT_SCHEMA, use_mask: 0, action: 0, blocked: 0 }
    }

    /// The bits served while the business's authorised endpoints are
    /// suspended: `purchase` withheld, the only permitted difference.
    pub fn with_purchase_withheld(self) -> Self {
        AiPolicyBits { action: self.action & !PURCHASE_BIT, ..self }
    }

    /// Names set in each mask. Unknown schemas are refused.
    pub fn decode(&self) -> Result<DecodedPolicy, AiPolicyError> {
        if !matches!(self.ai_policy_schema, 1 | 2) {
            return Err(AiPolicyError::SchemaUnknown(self.ai_policy_schema));
        }
        let names = |mask: u64, names: &[&'static str]| -> Result<Vec<&'static str>, AiPolicyError> {
            if mask >> names.len() != 0 {
                return Err(AiPolicyError::BitsOutOfRange);
            }
            Ok(names.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| *n).collect())
        };
        let use_names: Vec<_> = USE_FLAGS.iter().map(|f| f.0).collect();
        let action_names: Vec<_> = ACTION_FLAGS.iter().map(|f| f.0).collect();
        let blocked_names: Vec<_> =
            if self.ai_policy_schema >= 2 { BLOCKED_CONTEXTS.iter().map(|f| f.1).collect() } else { Vec::new() };
        Ok(DecodedPolicy {
            use_flags: names(self.use_mask, &use_names)?,
            actions: names(self.action, &action_names)?,
            blocked: names(self.blocked, &blocked_names)?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecodedPolicy {
    #[serde(rename = "use")]
    pub use_flags: Vec<&'static str>,
    pub actions: Vec<&'static str>,
    pub blocked: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AiPolicyError {
    #[error("ai_policy_schema {0} is unknown")]
    SchemaUnknown(u64),
    #[error("a mask sets a bit the schema does not define")]
    BitsOutOfRange,
    #[error("{pointer}: {detail}")]
    Invalid { pointer: String, detail: String },
}

/// A validated AI policy record (either form) and its booleans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiPolicyRecord {
    pub schema: u64,
    pub use_mask: u64,
    pub action: u64,
    pub blocked: u64,
}

impl AiPolicyRecord {
    pub fn bits(&self, version: u64) -> AiPolicyBits {
        AiPolicyBits {
            ai_policy_version: version,
            ai_policy_schema: self.schema,
            use_mask: self.use_mask,
            action: self.action,
            blocked: self.blocked,
        }
    }
}

fn invalid(pointer: impl Into<String>, detail: impl Into<String>) -> AiPolicyError {
    AiPolicyError::Invalid { pointer: pointer.into(), detail: detail.into() }
}

/// Reads the booleans named in `flags` from `object`: every one required and
/// boolean. Returns the mask with bit n set exactly when flag n is true.
fn read_mask<'a>(
    object: &Map<String, Value>,
    flags: impl Iterator<Item = &'a str>,
    base: &str,
) -> Result<u64, AiPolicyError> {
    let mut mask = 0;
    for (bit, name) in flags.enumerate() {
        match object.get(name) {
            Some(Value::Bool(true)) => mask |= 1 << bit,
            Some(Value::Bool(false)) => {}
            Some(_) => return Err(invalid(format!("{base}/{name}"), "must be a boolean")),
            None => return Err(invalid(format!("{base}/{name}"), "is required")),
        }
    }
    Ok(mask)
}

/// Parses a sealed AI policy record: `service/ai_policy/1` with
/// `ai_policy_schema` 1 or 2, or the earlier `service/terms/1` with
/// `terms_schema` 1. Use and action booleans are top-level members named as
/// in the bit table; `blocked` (schema 2 only) is an object of the ten context
/// names. Every boolean is required and no other member is allowed.
pub fn parse_record(bytes: &[u8]) -> Result<AiPolicyRecord, AiPolicyError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| invalid("", "not a JSON object"))?;
    let Value::Object(object) = value else {
        return Err(invalid("", "not a JSON object"));
    };
    let schema_name = object.get("schema").and_then(Value::as_str).ok_or_else(|| invalid("/schema", "is required"))?;
    let (schema_member, schema) = match schema_name {
        AI_POLICY_RECORD_SCHEMA => {
            ("ai_policy_schema", object.get("ai_policy_schema").and_then(Value::as_u64).unwrap_or(0))
        }
        TERMS_RECORD_SCHEMA => match object.get("terms_schema").and_then(Value::as_u64) {
            Some(1) => ("terms_schema", 1),
            _ => return Err(invalid("/terms_schema", "must be 1")),
        },
        _ => return Err(invalid("/schema", "unknown record schema")),
    };
    if !matches!(schema, 1 | 2) {
        return Err(AiPolicyError::SchemaUnknown(schema));
    }
    let use_mask = read_mask(&object, USE_FLAGS.iter().map(|f| f.0), "")?;
    let action = read_mask(&object, ACTION_FLAGS.iter().map(|f| f.0), "")?;
    let blocked = if schema >= 2 {
        match object.get("blocked") {
            Some(Value::Object(b)) => {
                if let Some(extra) = b.keys().find(|k| !BLOCKED_CONTEXTS.iter().any(|c| c.1 == k.as_str())) {
                    return Err(invalid(format!("/blocked/{extra}"), "unknown blocked context"));
                }
                read_mask(b, BLOCKED_CONTEXTS.iter().map(|c| c.1), "/blocked")?
            }
            _ => return Err(invalid("/blocked", "must be an object of ten booleans")),
        }
    } else {
        0
    };
    let known = |k: &str| {
        k == "schema"
            || k == schema_member
            || (schema >= 2 && k == "blocked")
            || USE_FLAGS.iter().any(|f| f.0 == k)
            || ACTION_FLAGS.iter().any(|f| f.0 == k)
    };
    if let Some(extra) = object.keys().find(|k| !known(k)) {
        return Err(invalid(format!("/{extra}"), "unknown member"));
    }
    Ok(AiPolicyRecord { schema, use_mask, action, blocked })
}

/// Builds the bytes of a schema-2 AI policy record from the names set true.
/// Used by the operator CLI and the sandbox corpus.
pub fn record_bytes(use_true: &[&str], action_true: &[&str], blocked_true: &[&str]) -> Vec<u8> {
    let mut object = Map::new();
    object.insert("schema".into(), json!(AI_POLICY_RECORD_SCHEMA));
    object.insert("ai_policy_schema".into(), json!(CURRENT_SCHEMA));
    for (name, _, _) in USE_FLAGS {
        object.insert(name.into(), json!(use_true.contains(&name)));
    }
    for (name, _, _) in ACTION_FLAGS {
        object.insert(name.into(), json!(action_true.contains(&name)));
    }
    let blocked: Map<String, Value> =
        BLOCKED_CONTEXTS.iter().map(|(_, name, _)| ((*name).into(), json!(blocked_true.contains(name)))).collect();
    object.insert("blocked".into(), Value::Object(blocked));
    crate::canonical::canonicalize(&Value::Object(object))
}

/// The public key to the bits (`GET /v1/ai-policy-key`).
pub fn key_document() -> Value {
    let group = |flags: &[(&str, &str, u64)]| -> Vec<Value> {
        flags
            .iter()
            .enumerate()
            .map(|(bit, (name, meaning, since))| json!({"name": name, "meaning": meaning, "bit": bit, "since_schema": since}))
            .collect()
    };
    let blocked: Vec<Value> = BLOCKED_CONTEXTS
        .iter()
        .enumerate()
        .map(|(bit, (code, name, meaning))| {
            json!({"number": bit + 1, "code": code, "name": name, "meaning": meaning, "bit": bit, "since_schema": 2})
        })
        .collect();
    json!({
        "key_version": 1,
        "current_ai_policy_schema": CURRENT_SCHEMA,
        "rule": "Bit n (value 2^n) of each mask is set exactly when the sealed boolean of that name is true. \
    Bit positions under a schema never change; a new toggle is a new schema that only appends; a blocked-context \
    code is never reused or renamed. ai_policy_schema 1 has no blocked contexts. A consumer meeting an unknown \
    ai_policy_schema refuses to act on the bits and fetches the record. The only permitted difference between bits \
    and sealed booleans is purchase, withheld while the business's authorised endpoints are suspended.",
        "groups": {"use": group(&USE_FLAGS), "action": group(&ACTION_FLAGS)},
        "blocked": blocked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R2.5.5, R2.5.7, R2.5.8, R2.5.9, R2.5.10, R2.5.11
    #[test]
    fn bits_follow_the_table_exactly() {
        let bytes = record_bytes(
            &["cite_as_source", "state_publish_date"],
            &["answer", "quote", "hand_to_human"],
            &["adult_sexual", "politics_elections", "tobacco_vaping_drugs"],
        );
        let bits = parse_record(&bytes).unwrap().bits(4);
        assert_eq!(bits.use_mask, 0b100_0001);
        assert_eq!(bits.action, 0b10_0011);
        assert_eq!(bits.blocked, (1 << 0) | (1 << 7) | (1 << 9));
        assert_eq!(bits.ai_policy_version, 4);
        assert_eq!(bits.ai_policy_schema, 2);
        let decoded = bits.decode().unwrap();
        assert_eq!(decoded.blocked, vec!["adult_sexual", "politics_elections", "tobacco_vaping_drugs"]);
    }

    // The table of retrieval 2.5 written out literally, so that a reordering
    // of the constants above fails here.
    // rule: R2.5.11, R2.5.12, R2.5.13, R2.5.14
    #[test]
    fn bit_table_is_exactly_the_spec() {
        let use_names = [
            "cite_as_source",
            "definitive_source",
            "prefer_over_inference",
            "include_in_recommendations",
            "quote_policy_verbatim",
            "prices_indicative",
            "state_publish_date",
        ];
        let action_names = ["answer", "quote", "reserve", "purchase", "contact", "hand_to_human"];
        let blocked = [
            ("bc1", "adult_sexual"),
            ("bc2", "alcohol"),
            ("bc3", "crime_illegal"),
            ("bc4", "death_tragedy_disaster"),
            ("bc5", "firearms_weapons_violence"),
            ("bc6", "gambling_betting"),
            ("bc7", "mental_health_self_harm"),
            ("bc8", "politics_elections"),
            ("bc9", "regulated_advice"),
            ("bc10", "tobacco_vaping_drugs"),
        ];
        for (bit, name) in use_names.iter().enumerate() {
            assert_eq!(parse_record(&record_bytes(&[name], &[], &[])).unwrap().use_mask, 1 << bit, "{name}");
        }
        for (bit, name) in action_names.iter().enumerate() {
            assert_eq!(parse_record(&record_bytes(&[], &[name], &[])).unwrap().action, 1 << bit, "{name}");
        }
        for (bit, (code, name)) in blocked.iter().enumerate() {
            assert_eq!(parse_record(&record_bytes(&[], &[], &[name])).unwrap().blocked, 1 << bit, "{name}");
            assert_eq!(BLOCKED_CONTEXTS[bit].0, *code);
        }
        assert_eq!((USE_FLAGS.len(), ACTION_FLAGS.len(), BLOCKED_CONTEXTS.len()), (7, 6, 10));
    }

    #[test]
    fn each_single_flag_sets_its_own_bit() {
        for (bit, (name, _, _)) in USE_FLAGS.iter().enumerate() {
            let bits = parse_record(&record_bytes(&[name], &[], &[])).unwrap();
            assert_eq!(bits.use_mask, 1 << bit, "{name}");
        }
        for (bit, (name, _, _)) in ACTION_FLAGS.iter().enumerate() {
            assert_eq!(parse_record(&record_bytes(&[], &[name], &[])).unwrap().action, 1 << bit, "{name}");
        }
        for (bit, (_, name, _)) in BLOCKED_CONTEXTS.iter().enumerate() {
            assert_eq!(parse_record(&record_bytes(&[], &[], &[name])).unwrap().blocked, 1 << bit, "{name}");
        }
    }

    // rule: R2.5.6, R2.5.15
    #[test]
    fn schema_one_and_the_terms_form_have_no_blocked_contexts() {
        let terms = br#"{"schema":"service/terms/1","terms_schema":1,"cite_as_source":true,"definitive_source":false,
            "prefer_over_inference":false,"include_in_recommendations":true,"quote_policy_verbatim":false,
            "prices_indicative":false,"state_publish_date":false,"answer":true,"quote":true,"reserve":false,
            "purchase":false,"contact":false,"hand_to_human":true}"#;
        let r = parse_record(terms).unwrap();
        assert_eq!((r.schema, r.use_mask, r.action, r.blocked), (1, 0b1001, 0b100011, 0));
        let with_blocked = String::from_utf8(terms.to_vec())
            .unwrap()
            .replace("\"hand_to_human\":true", "\"hand_to_human\":true,\"blocked\":{}");
        assert!(parse_record(with_blocked.as_bytes()).is_err());
    }

    // rule: R2.5.16, R9.12
    #[test]
    fn unknown_schemas_are_refused() {
        let bytes = String::from_utf8(record_bytes(&[], &[], &[]))
            .unwrap()
            .replace("\"ai_policy_schema\":2", "\"ai_policy_schema\":3");
        assert_eq!(parse_record(bytes.as_bytes()), Err(AiPolicyError::SchemaUnknown(3)));
        let bits = AiPolicyBits { ai_policy_schema: 3, ..AiPolicyBits::none() };
        assert_eq!(bits.decode(), Err(AiPolicyError::SchemaUnknown(3)));
        let high = AiPolicyBits { use_mask: 1 << 7, ..AiPolicyBits::none() };
        assert_eq!(high.decode(), Err(AiPolicyError::BitsOutOfRange));
    }

    #[test]
    fn missing_or_extra_booleans_are_refused() {
        let full = String::from_utf8(record_bytes(&[], &[], &[])).unwrap();
        assert!(parse_record(full.replace("\"answer\":false,", "").as_bytes()).is_err());
        assert!(parse_record(full.replace("\"answer\":false", "\"answer\":1").as_bytes()).is_err());
        assert!(parse_record(full.replace("\"answer\":false", "\"answer\":false,\"train\":true").as_bytes()).is_err());
    }

    // rule: R2.4.24
    #[test]
    fn no_policy_is_version_zero_with_empty_masks() {
        let none = AiPolicyBits::none();
        assert_eq!(
            serde_json::to_value(none).unwrap(),
            json!({"ai_policy_version": 0, "ai_policy_schema": 2, "use": 0, "action": 0, "blocked": 0})
        );
    }

    // rule: R2.5.17
    #[test]
    fn purchase_is_the_only_bit_withheld() {
        let all = parse_record(&record_bytes(&[], &["answer", "purchase", "contact"], &["alcohol"])).unwrap().bits(2);
        let withheld = all.with_purchase_withheld();
        assert_eq!(withheld.action, all.action & !(1 << 3));
        assert_eq!((withheld.use_mask, withheld.blocked), (all.use_mask, all.blocked));
    }

    // rule: P2.6.44, P2.6.45, P2.6.46, P2.6.48, R2.5.26
    #[test]
    fn key_document_lists_every_bit() {
        let doc = key_document();
        assert_eq!(doc["current_ai_policy_schema"], 2);
        assert_eq!(doc["groups"]["use"].as_array().unwrap().len(), 7);
        assert_eq!(
            doc["groups"]["action"][3],
            json!({"name": "purchase", "meaning": ACTION_FLAGS[3].1, "bit": 3, "since_schema": 1})
        );
        assert_eq!(doc["blocked"][9]["code"], "bc10");
        assert_eq!(doc["blocked"][9]["number"], 10);
        assert_eq!(doc["blocked"][6]["meaning"], "mental health, self-harm and crisis");
    }
}
