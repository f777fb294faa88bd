//! Bulk files (publishing 4.1, bulk steps 1 and 2): the signed upload policy
//! that makes an upload address, and reading the NDJSON file against the
//! batch seal that names it.
//!
//! The upload address is the node's own: the policy travels in the form
//! fields, signed by the service, so the upload route needs no other state
//! to judge it.

use serde::{Deserialize, Serialize};

use crate::b64;
use crate::keys::{SigningKey, VerifyingKey};
use crate::merkle::{self, Hash};
use crate::publish::outcome::{BULK_CONTENT_TYPE, BULK_MAX_BYTES, BULK_MAX_RECORDS};
use crate::time::UnixMs;

/// What an upload address allows: one file, for one key and record type,
/// until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadPolicy {
    pub v: u64,
    pub upload_id: String,
    pub business_uuid: String,
    pub key_id: String,
    pub record_type: String,
    /// RFC 3339 UTC, whole seconds.
    pub expires_at: String,
    pub max_bytes: u64,
    pub max_records: u64,
    pub content_type: String,
}

impl UploadPolicy {
    pub fn new(upload_id: &str, business_uuid: &str, key_id: &str, record_type: &str, expires_at: UnixMs) -> Self {
        UploadPolicy {
            v: 1,
            upload_id: upload_id.to_owned(),
            business_uuid: business_uuid.to_owned(),
            key_id: key_id.to_owned(),
            record_type: record_type.to_owned(),
            expires_at: expires_at.to_rfc3339_secs(),
            max_bytes: BULK_MAX_BYTES,
            max_records: BULK_MAX_RECORDS as u64,
            content_type: BULK_CONTENT_TYPE.to_owned(),
        }
    }
}

/// The algorithm named in the `x-algorithm` field.
pub const POLICY_ALGORITHM: &str = "Ed25519";

/// The form fields of an upload: every one must be sent back unchanged,
/// before the file.
pub fn policy_fields(policy: &UploadPolicy, key: &SigningKey) -> serde_json::Map<String, serde_json::Value> {
    // The policy holds no number beyond 2^53, so canonical bytes always exist.
    let bytes = crate::canonical::to_signed_bytes(policy).unwrap_or_default();
    let encoded = b64::url_encode(&bytes);
    let signature = b64::url_encode(&key.sign(encoded.as_bytes()));
    let mut fields = serde_json::Map::new();
    fields.insert("key".into(), policy.upload_id.clone().into());
    fields.insert("Content-Type".into(), policy.content_type.clone().into());
    fields.insert("policy".into(), encoded.into());
    fields.insert("x-algorithm".into(), POLICY_ALGORITHM.into());
    fields.insert("x-signature".into(), signature.into());
    fields
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadRefusal {
    #[error("the form is missing the field {0}")]
    MissingField(&'static str),
    #[error("the upload policy is not signed by the service")]
    BadSignature,
    #[error("the upload policy is malformed")]
    Malformed,
    #[error("the upload address expired")]
    Expired,
    #[error("the field {0} does not match the upload policy")]
    Mismatch(&'static str),
}

/// Judges the form fields of an upload against the service's key, the
/// address it was sent to and the time.
pub fn check_policy(
    field: impl Fn(&str) -> Option<String>,
    upload_id: &str,
    key: &VerifyingKey,
    now: UnixMs,
) -> Result<UploadPolicy, UploadRefusal> {
    let get = |name: &'static str| field(name).ok_or(UploadRefusal::MissingField(name));
    let encoded = get("policy")?;
    if get("x-algorithm")? != POLICY_ALGORITHM {
        return Err(UploadRefusal::Mismatch("x-algorithm"));
    }
    let signature = b64::url_decode(&get("x-signature")?).ok_or(UploadRefusal::BadSignature)?;
    if !key.verify(encoded.as_bytes(), &signature) {
        return Err(UploadRefusal::BadSignature);
    }
    let bytes = b64::url_decode(&encoded).ok_or(UploadRefusal::Malformed)?;
    let policy: UploadPolicy = serde_json::from_slice(&bytes).map_err(|_| UploadRefusal::Malformed)?;
    if policy.upload_id != upload_id || get("key")? != upload_id {
        return Err(UploadRefusal::Mismatch("key"));
    }
    if get("Content-Type")? != policy.content_type {
        return Err(UploadRefusal::Mismatch("Content-Type"));
    }
    let expires = UnixMs::parse_rfc3339(&policy.expires_at).ok_or(UploadRefusal::Malformed)?;
    if now > expires {
        return Err(UploadRefusal::Expired);
    }
    Ok(policy)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileRefusal {
    #[error("line {0} is not the base64 of a record")]
    NotBase64(u64),
    #[error("line {0} is empty")]
    EmptyLine(u64),
    #[error("the file holds more than {0} records")]
    TooManyRecords(usize),
}

/// Reads an NDJSON bulk file line by line: each line is the standard base64
/// of one record's exact bytes; a final newline is optional, a blank line
/// is refused.
pub fn read_records(file: &[u8]) -> Result<Vec<Vec<u8>>, FileRefusal> {
    let body = file.strip_suffix(b"\n").unwrap_or(file);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let mut records = Vec::new();
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Err(FileRefusal::EmptyLine(i as u64));
        }
        if records.len() == BULK_MAX_RECORDS {
            return Err(FileRefusal::TooManyRecords(BULK_MAX_RECORDS));
        }
        let text = std::str::from_utf8(line).map_err(|_| FileRefusal::NotBase64(i as u64))?;
        records.push(b64::std_decode(text).ok_or(FileRefusal::NotBase64(i as u64))?);
    }
    Ok(records)
}

/// Whether the file's records are exactly those the batch seal names: the
/// same count and the same RFC 6962 root, leaf i being line i.
pub fn file_matches_seal(records: &[Vec<u8>], tree_size: u64, root: &str) -> bool {
    if records.len() as u64 != tree_size {
        return false;
    }
    let leaves: Vec<Hash> = records.iter().map(|r| merkle::leaf_hash(r)).collect();
    merkle::root_form(&merkle::BatchTree::from_leaf_hashes(&leaves).root()) == root
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;

    fn service_key() -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[4; 32]).unwrap()
    }

    const NOW: UnixMs = UnixMs(1_795_341_600_000);

    fn fields() -> serde_json::Map<String, serde_json::Value> {
        let policy = UploadPolicy::new("bup_000000000000000000000001", "b", "k", "products", NOW.plus(3_600_000));
        policy_fields(&policy, &service_key())
    }

    fn lookup(fields: &serde_json::Map<String, serde_json::Value>) -> impl Fn(&str) -> Option<String> + '_ {
        |name| fields.get(name).and_then(|v| v.as_str()).map(str::to_owned)
    }

    // rule: P4.1.37, P4.1.38, P4.1.40
    #[test]
    fn a_signed_policy_is_honoured_until_it_expires() {
        let f = fields();
        let key = service_key().verifying_key();
        let policy = check_policy(lookup(&f), "bup_000000000000000000000001", &key, NOW).unwrap();
        assert_eq!((policy.max_bytes, policy.max_records), (268_435_456, 100_000));
        assert_eq!(f["Content-Type"], "application/x-ndjson");
        assert_eq!(
            check_policy(lookup(&f), "bup_000000000000000000000001", &key, NOW.plus(3_600_001)),
            Err(UploadRefusal::Expired)
        );
        assert_eq!(
            check_policy(lookup(&f), "bup_000000000000000000000002", &key, NOW),
            Err(UploadRefusal::Mismatch("key"))
        );
        let other = SigningKey::from_seed(Alg::Ed25519, &[5; 32]).unwrap().verifying_key();
        assert_eq!(
            check_policy(lookup(&f), "bup_000000000000000000000001", &other, NOW),
            Err(UploadRefusal::BadSignature)
        );
        let mut tampered = f.clone();
        tampered.remove("x-signature");
        assert_eq!(
            check_policy(lookup(&tampered), "bup_000000000000000000000001", &key, NOW),
            Err(UploadRefusal::MissingField("x-signature"))
        );
    }

    // rule: P4.1.41, P4.1.42, P4.1.45
    #[test]
    fn the_file_is_read_line_by_line_and_matched_to_the_seal() {
        let records = vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec(), b"{\"c\":3}".to_vec()];
        let file: String = records.iter().map(|r| format!("{}\n", b64::std_encode(r))).collect();
        let read = read_records(file.as_bytes()).unwrap();
        assert_eq!(read, records);
        let root = merkle::root_form(&merkle::BatchTree::from_records(&records).root());
        assert!(file_matches_seal(&read, 3, &root));
        assert!(!file_matches_seal(&read, 2, &root));
        let swapped = vec![records[1].clone(), records[0].clone(), records[2].clone()];
        assert!(!file_matches_seal(&swapped, 3, &root), "line i is leaf i");
        assert_eq!(read_records(b"e30=\n\ne30=\n"), Err(FileRefusal::EmptyLine(1)));
        assert_eq!(read_records(b"e30=\n!!!\n"), Err(FileRefusal::NotBase64(1)));
        assert_eq!(read_records(b"").unwrap(), Vec::<Vec<u8>>::new());
    }
}
