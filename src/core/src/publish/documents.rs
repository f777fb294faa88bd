//! Sealed withdraw and delete documents (P2.3.1–P2.3.4).
//!
//! A bare DELETE is refused: taking a record out of serving needs a document
//! `{record_id, action, at}` the business sealed. It travels as exact bytes
//! (`document_base64`) with a format 2 seal whose `hash` is over those bytes,
//! so the bytes are judged as sent and never re-serialised. They need not be
//! canonical JSON, but must hold exactly these three members, once each.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::canonical::to_signed_bytes;
use crate::ids::{RecordType, parse_record_id};
use crate::seal::{SealV2, check_hash};
use crate::time::UnixMs;

/// What the document asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Out of serving in every region; history and record of truth stay.
    Withdraw,
    /// Out of serving, and bytes purged within 30 days; fingerprints stay.
    Delete,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Withdraw => "withdraw",
            Action::Delete => "delete",
        }
    }
}

/// A withdraw or delete document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub record_id: String,
    pub action: Action,
    /// RFC 3339; when the business made the decision.
    pub at: String,
}

impl Document {
    /// The record type its `record_id` names.
    pub fn record_type(&self) -> Option<RecordType> {
        parse_record_id(&self.record_id)
    }

    pub fn at_ms(&self) -> Option<UnixMs> {
        UnixMs::parse_rfc3339(&self.at)
    }

    /// Canonical bytes of a new document, for the CLI to seal.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Three strings: canonicalising cannot meet an unsafe number.
        to_signed_bytes(self).unwrap_or_default()
    }
}

/// Reads a document, saying in plain words what is wrong (the caller wraps
/// it in a `request_invalid` problem).
pub fn read_document(bytes: &[u8]) -> Result<Document, String> {
    // serde also reads a struct from a JSON array; a document is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err("document is not a JSON object".into());
    }
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("document is not {{record_id, action, at}}: {e}"))?;
    if doc.record_type().is_none() {
        return Err(format!("record_id {:?} is not a record id", doc.record_id));
    }
    if doc.at_ms().is_none() {
        return Err(format!("at {:?} is not an RFC 3339 date-time", doc.at));
    }
    Ok(doc)
}

/// Checks a document's seal against the document bytes and the route's type:
/// the seal's `hash` must be over exactly these bytes (`hash_mismatch`), and
/// both the seal's `record_type` and the type the document's `record_id`
/// names must be the route's (`record_type_mismatch`). Bytes that are not a
/// document are `payload_malformed`. Signature, key and certificate are
/// judged by the seal checks shared with records.
pub fn check_document_seal(doc_bytes: &[u8], seal: &SealV2, expected_record_type: RecordType) -> Result<(), Reason> {
    if seal.v != 2 {
        return Err(Reason::VersionUnknown);
    }
    check_hash(&seal.hash, doc_bytes)?;
    if seal.record_type != expected_record_type.name() {
        return Err(Reason::RecordTypeMismatch);
    }
    let doc = read_document(doc_bytes).map_err(|_| Reason::PayloadMalformed)?;
    if doc.record_type() != Some(expected_record_type) {
        return Err(Reason::RecordTypeMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256_prefixed;
    use crate::ids::product_id;
    use proptest::prelude::*;

    const BUSINESS: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";

    fn doc(action: Action) -> Document {
        Document { record_id: product_id(BUSINESS, "SKU-1"), action, at: "2026-11-01T12:00:00Z".into() }
    }

    fn seal_over(bytes: &[u8], record_type: &str) -> SealV2 {
        SealV2 {
            v: 2,
            key_id: "k".into(),
            cert_id: "sha256:00".into(),
            hash: sha256_prefixed(bytes),
            sealed_at: "2026-11-01T12:00:00.000Z".into(),
            record_type: record_type.into(),
            ai_policy_version: 1,
            next_ai_policy_version: None,
        }
    }

    // rule: P2.3.1, P2.3.2
    #[test]
    fn documents_have_exactly_three_members() {
        for action in [Action::Withdraw, Action::Delete] {
            let bytes = doc(action).to_bytes();
            assert_eq!(read_document(&bytes), Ok(doc(action)));
        }
        let id = product_id(BUSINESS, "SKU-1");
        let text = format!(r#"{{"action":"withdraw","at":"2026-11-01T12:00:00Z","record_id":"{id}"}}"#);
        assert_eq!(String::from_utf8(doc(Action::Withdraw).to_bytes()).unwrap(), text);
        // Not canonical is fine: the seal is over the bytes as sent.
        let spaced = format!(r#"{{ "record_id": "{id}", "action": "delete", "at": "2026-11-01T13:00:00+01:00" }}"#);
        assert_eq!(read_document(spaced.as_bytes()).unwrap().action, Action::Delete);
        for bad in [
            format!(r#"{{"record_id":"{id}","action":"purge","at":"2026-11-01T12:00:00Z"}}"#),
            format!(r#"{{"record_id":"{id}","action":"delete"}}"#),
            format!(r#"{{"record_id":"{id}","action":"delete","at":"2026-11-01T12:00:00Z","why":"x"}}"#),
            format!(r#"{{"record_id":"{id}","action":"delete","action":"withdraw","at":"2026-11-01T12:00:00Z"}}"#),
            format!(r#"{{"record_id":"{id}","action":"delete","at":"yesterday"}}"#),
            r#"{"record_id":"SKU-1","action":"delete","at":"2026-11-01T12:00:00Z"}"#.to_string(),
            format!(r#"["{id}","delete","2026-11-01T12:00:00Z"]"#),
        ] {
            assert!(read_document(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    // rule: P2.3.3, P2.3.4
    #[test]
    fn the_seal_hash_is_over_the_document_bytes() {
        let bytes = doc(Action::Withdraw).to_bytes();
        let seal = seal_over(&bytes, "products");
        assert_eq!(check_document_seal(&bytes, &seal, RecordType::Products), Ok(()));
        let other = doc(Action::Delete).to_bytes();
        assert_eq!(check_document_seal(&other, &seal, RecordType::Products), Err(Reason::HashMismatch));
        // A byte of white space is another document.
        let mut spaced = bytes.clone();
        spaced.push(b' ');
        assert_eq!(check_document_seal(&spaced, &seal, RecordType::Products), Err(Reason::HashMismatch));
    }

    // rule: P2.3.4
    #[test]
    fn record_type_must_match_the_route() {
        let bytes = doc(Action::Withdraw).to_bytes();
        let seal = seal_over(&bytes, "jobs");
        assert_eq!(check_document_seal(&bytes, &seal, RecordType::Jobs), Err(Reason::RecordTypeMismatch));
        assert_eq!(check_document_seal(&bytes, &seal, RecordType::Products), Err(Reason::RecordTypeMismatch));
        let garbage = b"not a document";
        assert_eq!(
            check_document_seal(garbage, &seal_over(garbage, "products"), RecordType::Products),
            Err(Reason::PayloadMalformed)
        );
        let v1 = SealV2 { v: 1, ..seal_over(&bytes, "products") };
        assert_eq!(check_document_seal(&bytes, &v1, RecordType::Products), Err(Reason::VersionUnknown));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200), text in ".{0,80}") {
            let _ = read_document(&bytes);
            let _ = read_document(text.as_bytes());
            let _ = check_document_seal(&bytes, &seal_over(&bytes, "products"), RecordType::Products);
        }
    }
}
