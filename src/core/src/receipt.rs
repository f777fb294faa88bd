//! Receipts: what the service asserts it served, signed by the serving
//! region's Ed25519 receipt key. Format 3 is made; formats 1 to 3 verify.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::dsse::{Envelope, payload_type};
use crate::keys::{SigningKey, VerifyingKey};
use crate::time::UnixMs;

pub const RECEIPT_V1: &str = "receipt.v1";
pub const RECEIPT_V2: &str = "receipt.v2";
pub const RECEIPT_V3: &str = "receipt.v3";

/// One row of a receipt. A search row carries `adl_origin` and `row_sig`; a
/// fetch row carries `sha256` of the record's bytes. Format 3 adds
/// `ai_policy_version` to every row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptRow {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub adl_origin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub row_sig: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ai_policy_version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sponsored: Option<bool>,
}

/// The receipt payload. `country` is the one country a search named and is
/// absent on fetch receipts. `caller_key_id` is required from format 2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    pub retrieval_id: String,
    pub served_at: String,
    pub region: String,
    pub request_hash: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub country: Option<String>,
    pub rows: Vec<ReceiptRow>,
    pub key_id: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub caller_key_id: Option<String>,
    pub sandbox: bool,
}

/// A verified receipt and its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    pub format: u64,
    pub receipt: Receipt,
}

/// `request_hash`: `sha256:` of the request's RFC 9421 signature base.
pub fn request_hash(signature_base: &str) -> String {
    crate::digest::sha256_prefixed(signature_base.as_bytes())
}

/// Signs a format 3 receipt. `key_id` and the canonical payload are set here.
/// A receipt holding an integer beyond 2^53 (an AI policy version, say) is
/// refused rather than signed over a rounded value.
pub fn make(mut receipt: Receipt, signer: &ReceiptSigner) -> Result<Envelope, crate::canonical::CanonicalError> {
    receipt.key_id = signer.key_id.clone();
    let bytes = crate::canonical::to_signed_bytes(&receipt)?;
    Ok(Envelope::sign(&payload_type(RECEIPT_V3), &bytes, &[&signer.key]))
}

/// A region's receipt key and its id (the JWK thumbprint), worked out once
/// rather than for every receipt.
#[derive(Clone)]
pub struct ReceiptSigner {
    pub key: SigningKey,
    pub key_id: String,
}

impl ReceiptSigner {
    pub fn new(key: SigningKey) -> ReceiptSigner {
        let key_id = key.verifying_key().thumbprint();
        ReceiptSigner { key, key_id }
    }
}

/// What the party checking a receipt knows besides the envelope.
pub struct ReceiptCheck<'a, F: Fn(&str, &str, UnixMs) -> Option<VerifyingKey>> {
    /// The region's receipt key valid at `served_at`, by key id.
    pub receipt_key: F,
    /// The retrieval key presenting the receipt, when one does.
    pub presenter: Option<&'a str>,
    /// Rows as served (`record_id`, `adl_origin`, `adl_row_sig`), when given.
    pub rows: Option<&'a [serde_json::Map<String, serde_json::Value>]>,
}

/// Verifies a receipt of format 1, 2 or 3.
///
/// Order: payload type and shape, key valid at `served_at`, signature, the
/// presenting key (`receipt_caller_mismatch`), then each given row against its
/// entry (`receipt_row_mismatch`).
pub fn verify<F: Fn(&str, &str, UnixMs) -> Option<VerifyingKey>>(
    envelope: &Envelope,
    check: &ReceiptCheck<'_, F>,
) -> Result<VerifiedReceipt, Reason> {
    let format = crate::dsse::known_version(&envelope.payload_type, "receipt", &[1, 2, 3])?;
    let payload = envelope.payload_bytes()?;
    let receipt: Receipt = serde_json::from_slice(&payload).map_err(|_| Reason::PayloadMalformed)?;
    let shaped = match format {
        1 => receipt.caller_key_id.is_none() && receipt.rows.iter().all(|r| r.ai_policy_version.is_none()),
        2 => receipt.caller_key_id.is_some() && receipt.rows.iter().all(|r| r.ai_policy_version.is_none()),
        _ => receipt.caller_key_id.is_some() && receipt.rows.iter().all(|r| r.ai_policy_version.is_some()),
    };
    let served_at = UnixMs::parse_rfc3339(&receipt.served_at);
    let (true, Some(served_at)) = (shaped, served_at) else {
        return Err(Reason::PayloadMalformed);
    };
    let key = (check.receipt_key)(&receipt.key_id, &receipt.region, served_at).ok_or(Reason::KeyUnknown)?;
    if key.thumbprint() != receipt.key_id {
        return Err(Reason::KeyMismatch);
    }
    envelope.verify(&envelope.payload_type, &key)?;
    if let Some(presenter) = check.presenter
        && receipt.caller_key_id.as_deref() != Some(presenter)
    {
        return Err(Reason::ReceiptCallerMismatch);
    }
    if let Some(rows) = check.rows {
        for row in rows {
            let field = |name: &str| row.get(name).and_then(serde_json::Value::as_str);
            let matched = receipt.rows.iter().any(|entry| {
                Some(entry.id.as_str()) == field("record_id")
                    && entry.adl_origin.as_deref() == field("adl_origin")
                    && entry.row_sig.as_deref() == field("adl_row_sig")
            });
            if !matched {
                return Err(Reason::ReceiptRowMismatch);
            }
        }
    }
    Ok(VerifiedReceipt { format, receipt })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;
    use serde_json::json;

    fn region_key() -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[21; 32]).unwrap()
    }

    fn search_receipt() -> Receipt {
        Receipt {
            retrieval_id: "r_aaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
            served_at: "2026-11-01T12:00:00.000Z".into(),
            region: "eu-west".into(),
            request_hash: request_hash("\"@method\": POST"),
            country: Some("FR".into()),
            rows: vec![ReceiptRow {
                id: "svc_aaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
                adl_origin: Some("sha256:11".into()),
                row_sig: Some("c2ln".into()),
                sha256: None,
                ai_policy_version: Some(2),
                sponsored: None,
            }],
            key_id: String::new(),
            caller_key_id: Some("caller".into()),
            sandbox: false,
        }
    }

    fn lookup(_: &str, _: &str, _: UnixMs) -> Option<VerifyingKey> {
        Some(region_key().verifying_key())
    }

    fn row(sig: &str) -> serde_json::Map<String, serde_json::Value> {
        json!({"record_id": "svc_aaaaaaaaaaaaaaaaaaaaaaaaaa", "adl_origin": "sha256:11", "adl_row_sig": sig})
            .as_object()
            .unwrap()
            .clone()
    }

    // rule: R2.6.1, R2.6.3, R2.6.4, R2.6.9, R2.6.11, R2.6.12, R9.5
    #[test]
    fn format_three_is_made_and_verifies() {
        let env = make(search_receipt(), &ReceiptSigner::new(region_key())).unwrap();
        assert_eq!(env.payload_type, "application/vnd.service.receipt.v3+json");
        let payload: serde_json::Value = serde_json::from_slice(&env.payload_bytes().unwrap()).unwrap();
        assert_eq!(payload["key_id"], region_key().verifying_key().thumbprint());
        assert_eq!(payload["rows"][0]["ai_policy_version"], 2);
        let rows = [row("c2ln")];
        let check = ReceiptCheck { receipt_key: lookup, presenter: Some("caller"), rows: Some(&rows) };
        let verified = verify(&env, &check).unwrap();
        assert_eq!(verified.format, 3);
    }

    // rule: R2.6.14
    #[test]
    fn presented_by_another_key_is_refused() {
        let env = make(search_receipt(), &ReceiptSigner::new(region_key())).unwrap();
        let check = ReceiptCheck { receipt_key: lookup, presenter: Some("someone-else"), rows: None };
        assert_eq!(verify(&env, &check), Err(Reason::ReceiptCallerMismatch));
    }

    // rule: P4.2.53
    #[test]
    fn a_row_not_in_the_receipt_is_refused() {
        let env = make(search_receipt(), &ReceiptSigner::new(region_key())).unwrap();
        let rows = [row("other")];
        let check = ReceiptCheck { receipt_key: lookup, presenter: None, rows: Some(&rows) };
        assert_eq!(verify(&env, &check), Err(Reason::ReceiptRowMismatch));
    }

    // rule: R2.6.2, P9.9
    #[test]
    fn formats_one_and_two_still_verify() {
        let mut r = search_receipt();
        r.rows[0].ai_policy_version = None;
        r.key_id = region_key().verifying_key().thumbprint();
        let bytes = crate::canonical::to_signed_bytes(&r).unwrap();
        let v2 = Envelope::sign(&payload_type(RECEIPT_V2), &bytes, &[&region_key()]);
        let check = ReceiptCheck { receipt_key: lookup, presenter: Some("caller"), rows: None };
        assert_eq!(verify(&v2, &check).unwrap().format, 2);
        r.caller_key_id = None;
        let bytes = crate::canonical::to_signed_bytes(&r).unwrap();
        let v1 = Envelope::sign(&payload_type(RECEIPT_V1), &bytes, &[&region_key()]);
        let anyone = ReceiptCheck { receipt_key: lookup, presenter: None, rows: None };
        assert_eq!(verify(&v1, &anyone).unwrap().format, 1);
        // A format 1 receipt names no caller, so no key may present it.
        assert_eq!(verify(&v1, &check), Err(Reason::ReceiptCallerMismatch));
        // A format 2 payload under the format 3 type lacks per-row versions.
        let mislabelled = Envelope::sign(&payload_type(RECEIPT_V3), &bytes, &[&region_key()]);
        assert_eq!(verify(&mislabelled, &anyone), Err(Reason::PayloadMalformed));
        let v4 = Envelope::sign(&payload_type("receipt.v4"), &bytes, &[&region_key()]);
        assert_eq!(verify(&v4, &anyone), Err(Reason::VersionUnknown));
    }

    #[test]
    fn wrong_region_key_or_tampering_fails() {
        let env = make(search_receipt(), &ReceiptSigner::new(region_key())).unwrap();
        let none = ReceiptCheck { receipt_key: |_: &str, _: &str, _| None, presenter: None, rows: None };
        assert_eq!(verify(&env, &none), Err(Reason::KeyUnknown));
        let mut tampered = env.clone();
        let mut payload: serde_json::Value = serde_json::from_slice(&env.payload_bytes().unwrap()).unwrap();
        payload["country"] = json!("DE");
        tampered.payload = crate::b64::std_encode(&serde_json::to_vec(&payload).unwrap());
        let check = ReceiptCheck { receipt_key: lookup, presenter: None, rows: None };
        assert_eq!(verify(&tampered, &check), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn an_integer_beyond_2_pow_53_is_refused_not_rounded() {
        let mut r = search_receipt();
        r.rows[0].ai_policy_version = Some(1 << 53);
        assert!(matches!(
            make(r, &ReceiptSigner::new(region_key())),
            Err(crate::canonical::CanonicalError::UnsafeInteger(p)) if p == "/rows/0/ai_policy_version"
        ));
    }

    // rule: R2.6.7
    #[test]
    fn request_hash_is_sha256_of_the_signature_base() {
        assert_eq!(request_hash(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
