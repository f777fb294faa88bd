//! Seals: the record seal (`seal.v2`, and `seal.v1` which still verifies), the
//! batch seal (`batch-seal.v2`), and the checks a seal is judged by.
//!
//! Payloads are RFC 8785 canonical JSON with exactly the spec's members; a
//! payload that is not canonical, carries another member, or a `v` other than
//! its payload type's is refused.

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::Reason;
use crate::dsse::{Envelope, known_version, payload_type};
use crate::keys::VerifyingKey;
use crate::merkle::{self, Hash};
use crate::time::{MINUTE, UnixMs};

/// How far `sealed_at` may be from the moment a push is received.
pub const SEALED_AT_WINDOW_MS: i64 = 5 * MINUTE;

pub const SEAL_V1: &str = "seal.v1";
pub const SEAL_V2: &str = "seal.v2";
pub const BATCH_SEAL_V2: &str = "batch-seal.v2";

/// Format 2 record (or document) seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealV2 {
    pub v: u64,
    pub key_id: String,
    pub cert_id: String,
    pub hash: String,
    pub sealed_at: String,
    pub record_type: String,
    pub ai_policy_version: u64,
    /// Only on an AI policy record's own seal: the version it creates.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_ai_policy_version: Option<u64>,
}

/// Format 1 record seal: named the Terms version instead of the AI policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealV1 {
    pub v: u64,
    pub key_id: String,
    pub cert_id: String,
    pub hash: String,
    pub sealed_at: String,
    pub record_type: String,
    pub terms_version: u64,
}

/// Path A batch seal over the records' raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchSealV2 {
    pub v: u64,
    pub key_id: String,
    pub cert_id: String,
    pub root: String,
    pub tree_size: u64,
    pub seq: u64,
    pub sealed_at: String,
    pub record_type: String,
    pub ai_policy_version: u64,
}

/// A record seal of either format, as a verifier reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordSeal {
    V1(SealV1),
    V2(SealV2),
}

impl RecordSeal {
    pub fn format(&self) -> u64 {
        match self {
            RecordSeal::V1(_) => 1,
            RecordSeal::V2(_) => 2,
        }
    }
    pub fn key_id(&self) -> &str {
        match self {
            RecordSeal::V1(s) => &s.key_id,
            RecordSeal::V2(s) => &s.key_id,
        }
    }
    pub fn cert_id(&self) -> &str {
        match self {
            RecordSeal::V1(s) => &s.cert_id,
            RecordSeal::V2(s) => &s.cert_id,
        }
    }
    pub fn hash(&self) -> &str {
        match self {
            RecordSeal::V1(s) => &s.hash,
            RecordSeal::V2(s) => &s.hash,
        }
    }
    pub fn sealed_at(&self) -> &str {
        match self {
            RecordSeal::V1(s) => &s.sealed_at,
            RecordSeal::V2(s) => &s.sealed_at,
        }
    }
    pub fn record_type(&self) -> &str {
        match self {
            RecordSeal::V1(s) => &s.record_type,
            RecordSeal::V2(s) => &s.record_type,
        }
    }
    /// The AI policy version a format 2 seal names; format 1 names none.
    pub fn ai_policy_version(&self) -> Option<u64> {
        match self {
            RecordSeal::V1(_) => None,
            RecordSeal::V2(s) => Some(s.ai_policy_version),
        }
    }
}

/// Decodes a payload of the expected `v`, requiring canonical bytes, exact
/// members and a strict `sealed_at`.
fn decode_payload<T: DeserializeOwned>(payload: &[u8], v: u64) -> Result<T, Reason> {
    let value = crate::dsse::payload_version(payload, &[v])?;
    if crate::canonical::canonicalize_text(payload).map_err(|_| Reason::PayloadMalformed)? != payload {
        return Err(Reason::PayloadMalformed);
    }
    let sealed_at = value.get("sealed_at").and_then(serde_json::Value::as_str).unwrap_or("");
    if UnixMs::parse_rfc3339_millis_utc(sealed_at).is_none() {
        return Err(Reason::PayloadMalformed);
    }
    serde_json::from_value(value).map_err(|_| Reason::PayloadMalformed)
}

/// Reads a record seal without checking its signature. A payload type of
/// another artefact is `payload_type_mismatch`; `seal.v3` and beyond are
/// `version_unknown`.
pub fn read_record_seal(envelope: &Envelope) -> Result<RecordSeal, Reason> {
    let payload = envelope.open()?.payload;
    match known_version(&envelope.payload_type, "seal", &[1, 2])? {
        1 => Ok(RecordSeal::V1(decode_payload(&payload, 1)?)),
        _ => Ok(RecordSeal::V2(decode_payload(&payload, 2)?)),
    }
}

/// Reads a batch seal without checking its signature.
pub fn read_batch_seal(envelope: &Envelope) -> Result<BatchSealV2, Reason> {
    let payload = envelope.open()?.payload;
    known_version(&envelope.payload_type, "batch-seal", &[2])?;
    decode_payload(&payload, 2)
}

/// Verifies a record seal's signature by the key its payload names.
pub fn verify_record_seal(envelope: &Envelope, key: &VerifyingKey) -> Result<RecordSeal, Reason> {
    let seal = read_record_seal(envelope)?;
    if seal.key_id() != key.thumbprint() {
        return Err(Reason::KeyMismatch);
    }
    envelope.verify(&envelope.payload_type, key)?;
    Ok(seal)
}

/// Verifies a batch seal's signature by the key its payload names.
pub fn verify_batch_seal(envelope: &Envelope, key: &VerifyingKey) -> Result<BatchSealV2, Reason> {
    let seal = read_batch_seal(envelope)?;
    if seal.key_id != key.thumbprint() {
        return Err(Reason::KeyMismatch);
    }
    envelope.verify(&payload_type(BATCH_SEAL_V2), key)?;
    Ok(seal)
}

/// The seal's `hash` must be the SHA-256 of the exact bytes.
pub fn check_hash(seal_hash: &str, bytes: &[u8]) -> Result<(), Reason> {
    if seal_hash == crate::digest::sha256_prefixed(bytes) { Ok(()) } else { Err(Reason::HashMismatch) }
}

/// The batch seal's `root` and `tree_size` must describe exactly these records.
pub fn check_batch_root<T: AsRef<[u8]>>(seal: &BatchSealV2, records: &[T]) -> Result<(), Reason> {
    if seal.tree_size != records.len() as u64 {
        return Err(Reason::HashMismatch);
    }
    let root = merkle::BatchTree::from_records(records).root();
    if seal.root == merkle::root_form(&root) { Ok(()) } else { Err(Reason::HashMismatch) }
}

/// One record's place in a batch: the proof that it is leaf `leaf_index`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchMembership {
    pub batch_seal: Envelope,
    pub leaf_index: u64,
    /// Audit path, bottom-up, each hash as 64 hex digits.
    pub inclusion_proof: Vec<String>,
}

/// The `seal` member of a fetch: a record's own DSSE seal (Path B or hosted
/// signing), or the batch seal with the record's leaf index and inclusion proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ServedSeal {
    Batch(BatchMembership),
    Record(Envelope),
}

impl ServedSeal {
    /// The seal's envelope: the batch seal, or the record's own.
    pub fn envelope(&self) -> &Envelope {
        match self {
            ServedSeal::Batch(b) => &b.batch_seal,
            ServedSeal::Record(e) => e,
        }
    }

    /// Who sealed it and when, as written: the sealing key's id and
    /// `sealed_at`, read (not verified) from the batch seal or the record's own.
    pub fn sealer(&self) -> Option<(String, String)> {
        match read_batch_seal(self.envelope()) {
            Ok(batch) => Some((batch.key_id, batch.sealed_at)),
            Err(_) => {
                let seal = read_record_seal(self.envelope()).ok()?;
                Some((seal.key_id().to_owned(), seal.sealed_at().to_owned()))
            }
        }
    }

    /// [`sealer`](Self::sealer) with `sealed_at` read as a time.
    pub fn sealed_by(&self) -> Option<(String, UnixMs)> {
        let (key_id, sealed_at) = self.sealer()?;
        Some((key_id, UnixMs::parse_rfc3339(&sealed_at)?))
    }

    /// The seal's transparency log leaf, `sha256:` of the RFC 6962 leaf
    /// hash over the envelope's canonical JSON. Records of one batch share it.
    pub fn log_leaf(&self) -> String {
        crate::tlog::leaf_name(&crate::tlog::seal_leaf(self.envelope()))
    }
}

impl BatchMembership {
    pub fn new(batch_seal: Envelope, leaf_index: u64, path: &[Hash]) -> Self {
        BatchMembership { batch_seal, leaf_index, inclusion_proof: path.iter().map(hex::encode).collect() }
    }

    /// Whether `record` is leaf `leaf_index` of the batch seal's tree.
    pub fn check_inclusion(&self, seal: &BatchSealV2, record: &[u8]) -> Result<(), Reason> {
        let root = seal
            .root
            .strip_prefix("sha256:")
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <Hash>::try_from(b).ok())
            .ok_or(Reason::PayloadMalformed)?;
        let mut path = Vec::with_capacity(self.inclusion_proof.len());
        for h in &self.inclusion_proof {
            let bytes = hex::decode(h).ok().and_then(|b| <Hash>::try_from(b).ok()).ok_or(Reason::InclusionInvalid)?;
            path.push(bytes);
        }
        let leaf = merkle::leaf_hash(record);
        if merkle::verify_inclusion(&leaf, self.leaf_index, seal.tree_size, &path, &root) {
            Ok(())
        } else {
            Err(Reason::InclusionInvalid)
        }
    }
}

/// Whether `sealed_at` is within five minutes (either side) of `received_at`.
pub fn sealed_at_fresh(sealed_at: UnixMs, received_at: UnixMs) -> bool {
    (received_at.0 - sealed_at.0).abs() <= SEALED_AT_WINDOW_MS
}

/// `seq` must be greater than the last accepted one for the key.
pub fn seq_increases(seq: u64, last_accepted: Option<u64>) -> bool {
    last_accepted.is_none_or(|last| seq > last)
}

/// What a key register says of one key at a moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValidity {
    pub valid_from: UnixMs,
    pub valid_until: Option<UnixMs>,
    /// Revocation takes effect from this moment: seals at or after it fail.
    pub revocation_effective_from: Option<UnixMs>,
    /// A compromise invalidates everything sealed after this moment.
    pub compromised_at: Option<UnixMs>,
}

impl KeyValidity {
    /// Judges a seal made at `sealed_at` against the register.
    pub fn judge(&self, sealed_at: UnixMs) -> Result<(), Reason> {
        if self.compromised_at.is_some_and(|c| sealed_at > c) {
            return Err(Reason::KeyCompromised);
        }
        let revoked = self.revocation_effective_from.is_some_and(|r| sealed_at >= r);
        let expired = self.valid_until.is_some_and(|u| sealed_at > u);
        if sealed_at < self.valid_from || revoked || expired {
            return Err(Reason::KeyNotValid);
        }
        Ok(())
    }
}

/// Certificate statuses (publishing-verification section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateStatus {
    Active,
    Suspended,
    Closed,
    Revoked,
    Withdrawn,
}

impl CertificateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CertificateStatus::Active => "active",
            CertificateStatus::Suspended => "suspended",
            CertificateStatus::Closed => "closed",
            CertificateStatus::Revoked => "revoked",
            CertificateStatus::Withdrawn => "withdrawn",
        }
    }
}

/// One issuance of a business's certificate. A status change is a new issuance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issuance {
    pub cert_id: String,
    pub status: CertificateStatus,
    pub status_effective_from: UnixMs,
    pub issued_at: UnixMs,
}

/// The issuance in force at `at`: the latest `status_effective_from` at or
/// before it (a revocation may take effect before it was issued).
pub fn issuance_in_force(history: &[Issuance], at: UnixMs) -> Option<&Issuance> {
    history.iter().filter(|i| i.status_effective_from <= at).max_by_key(|i| (i.status_effective_from, i.issued_at))
}

/// Whether a version sealed at `sealed_at`, by a key compromised at
/// `compromised_at` if ever, may be served at `now` (publishing section 3),
/// by the issuance in force now:
/// - none in force: nothing is served;
/// - `active`: served;
/// - `withdrawn`: nothing is served until verified again (P3.9);
/// - `suspended`, `closed`: nothing new is served, history stays valid
///   (P3.5): what was sealed before the status took effect;
/// - `revoked`: seals made from the effective date are invalid (P3.6):
///   what was sealed before it.
///
/// Whatever the status, nothing sealed after the key's compromise moment is
/// served; a seal at that instant stands (P3.38, P3.39).
pub fn serves(history: &[Issuance], sealed_at: UnixMs, compromised_at: Option<UnixMs>, now: UnixMs) -> bool {
    if compromised_at.is_some_and(|moment| sealed_at > moment) {
        return false;
    }
    let Some(in_force) = issuance_in_force(history, now) else { return false };
    match in_force.status {
        CertificateStatus::Active => true,
        CertificateStatus::Withdrawn => false,
        CertificateStatus::Suspended | CertificateStatus::Closed | CertificateStatus::Revoked => {
            sealed_at < in_force.status_effective_from
        }
    }
}

/// The moments after `now` at which `history` changes what [`serves`]
/// answers: a status that takes effect later.
pub fn serving_changes_after(history: &[Issuance], now: UnixMs) -> impl Iterator<Item = UnixMs> + '_ {
    history.iter().map(|i| i.status_effective_from).filter(move |at| *at > now)
}

/// Judges a seal's `cert_id` against the certificate history at `sealed_at`.
///
/// An unknown `cert_id` is `certificate_unknown`. The issuance in force at
/// `sealed_at` decides: `withdrawn` is `certificate_withdrawn`; `suspended`,
/// `closed` and `revoked` (and a `cert_id` other than the one in force) are
/// `certificate_not_in_force`.
pub fn judge_certificate(history: &[Issuance], cert_id: &str, sealed_at: UnixMs) -> Result<(), Reason> {
    if !history.iter().any(|i| i.cert_id == cert_id) {
        return Err(Reason::CertificateUnknown);
    }
    let Some(in_force) = issuance_in_force(history, sealed_at) else {
        return Err(Reason::CertificateNotInForce);
    };
    match in_force.status {
        CertificateStatus::Withdrawn => Err(Reason::CertificateWithdrawn),
        CertificateStatus::Active if in_force.cert_id == cert_id => Ok(()),
        _ => Err(Reason::CertificateNotInForce),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Alg, SigningKey};

    fn key() -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[1; 32]).unwrap()
    }

    fn seal_v2(hash: &str) -> SealV2 {
        SealV2 {
            v: 2,
            key_id: key().verifying_key().thumbprint(),
            cert_id: format!("sha256:{}", "ab".repeat(32)),
            hash: hash.into(),
            sealed_at: "2026-11-01T12:00:00.000Z".into(),
            record_type: "products".into(),
            ai_policy_version: 3,
            next_ai_policy_version: None,
        }
    }

    fn envelope<T: Serialize>(name: &str, payload: &T) -> Envelope {
        let bytes = crate::canonical::to_signed_bytes(payload).unwrap();
        Envelope::sign(&payload_type(name), &bytes, &[&key()])
    }

    // rule: P2.3.4, P9.4, R9.4
    #[test]
    fn record_seal_v2_verifies_and_checks_the_hash() {
        let record = br#"{"schema":"service/products/1"}"#;
        let env = envelope(SEAL_V2, &seal_v2(&crate::digest::sha256_prefixed(record)));
        let seal = verify_record_seal(&env, &key().verifying_key()).unwrap();
        assert_eq!(seal.ai_policy_version(), Some(3));
        assert!(check_hash(seal.hash(), record).is_ok());
        assert_eq!(check_hash(seal.hash(), b"other"), Err(Reason::HashMismatch));
    }

    // rule: P9.5, R9.4
    #[test]
    fn seal_v1_still_verifies() {
        let v1 = SealV1 {
            v: 1,
            key_id: key().verifying_key().thumbprint(),
            cert_id: "sha256:00".into(),
            hash: crate::digest::sha256_prefixed(b"x"),
            sealed_at: "2025-01-01T00:00:00.000Z".into(),
            record_type: "products".into(),
            terms_version: 1,
        };
        let seal = verify_record_seal(&envelope(SEAL_V1, &v1), &key().verifying_key()).unwrap();
        assert_eq!(seal.format(), 1);
        assert_eq!(seal.ai_policy_version(), None);
    }

    // rule: P9.15, P9.16, R9.10
    #[test]
    fn unknown_versions_types_and_members_are_refused() {
        let payload = seal_v2("sha256:00");
        assert_eq!(read_record_seal(&envelope("seal.v3", &payload)), Err(Reason::VersionUnknown));
        assert_eq!(read_record_seal(&envelope("receipt.v3", &payload)), Err(Reason::PayloadTypeMismatch));
        // `v` must agree with the payload type.
        let mut v3 = payload.clone();
        v3.v = 3;
        assert_eq!(read_record_seal(&envelope(SEAL_V2, &v3)), Err(Reason::VersionUnknown));
        // Extra member.
        let mut value = serde_json::to_value(&payload).unwrap();
        value["extra"] = serde_json::json!(1);
        assert_eq!(read_record_seal(&envelope(SEAL_V2, &value)), Err(Reason::PayloadMalformed));
        // Non-canonical bytes.
        let pretty = serde_json::to_vec_pretty(&payload).unwrap();
        let env = Envelope::sign(&payload_type(SEAL_V2), &pretty, &[&key()]);
        assert_eq!(read_record_seal(&env), Err(Reason::PayloadMalformed));
        // sealed_at without milliseconds.
        let mut coarse = payload;
        coarse.sealed_at = "2026-11-01T12:00:00Z".into();
        assert_eq!(read_record_seal(&envelope(SEAL_V2, &coarse)), Err(Reason::PayloadMalformed));
    }

    #[test]
    fn a_seal_naming_another_key_is_key_mismatch() {
        let env = envelope(SEAL_V2, &seal_v2("sha256:00"));
        let other = SigningKey::from_seed(Alg::Ed25519, &[2; 32]).unwrap().verifying_key();
        assert_eq!(verify_record_seal(&env, &other), Err(Reason::KeyMismatch));
    }

    // rule: P2.2.2, P2.2.3, P2.2.4, P2.7.4
    #[test]
    fn batch_seal_root_and_inclusion() {
        let records: Vec<Vec<u8>> = (0..13).map(|i| format!("record-{i}").into_bytes()).collect();
        let tree = merkle::BatchTree::from_records(&records);
        let batch = BatchSealV2 {
            v: 2,
            key_id: key().verifying_key().thumbprint(),
            cert_id: "sha256:00".into(),
            root: merkle::root_form(&tree.root()),
            tree_size: 13,
            seq: 7,
            sealed_at: "2026-11-01T12:00:00.000Z".into(),
            record_type: "products".into(),
            ai_policy_version: 3,
        };
        let env = envelope(BATCH_SEAL_V2, &batch);
        let seal = verify_batch_seal(&env, &key().verifying_key()).unwrap();
        assert!(check_batch_root(&seal, &records).is_ok());
        assert_eq!(check_batch_root(&seal, &records[..12]), Err(Reason::HashMismatch));
        let mut swapped = records.clone();
        swapped.swap(0, 1);
        assert_eq!(check_batch_root(&seal, &swapped), Err(Reason::HashMismatch));

        let membership = BatchMembership::new(env.clone(), 5, &tree.inclusion_proof(5).unwrap());
        assert!(membership.check_inclusion(&seal, &records[5]).is_ok());
        assert_eq!(membership.check_inclusion(&seal, &records[6]), Err(Reason::InclusionInvalid));
        let served = serde_json::to_value(ServedSeal::Batch(membership)).unwrap();
        assert!(matches!(serde_json::from_value::<ServedSeal>(served).unwrap(), ServedSeal::Batch(_)));
        let plain = serde_json::to_value(ServedSeal::Record(env)).unwrap();
        assert!(matches!(serde_json::from_value::<ServedSeal>(plain).unwrap(), ServedSeal::Record(_)));
    }

    // rule: P2.2.8, P8.7
    #[test]
    fn five_minute_window_both_ways() {
        let t = UnixMs(1_800_000_000_000);
        assert!(sealed_at_fresh(t, t.plus(SEALED_AT_WINDOW_MS)));
        assert!(!sealed_at_fresh(t, t.plus(SEALED_AT_WINDOW_MS + 1)));
        assert!(sealed_at_fresh(t.plus(SEALED_AT_WINDOW_MS), t));
        assert!(!sealed_at_fresh(t.plus(SEALED_AT_WINDOW_MS + 1), t));
    }

    // rule: P2.2.7
    #[test]
    fn seq_must_increase() {
        assert!(seq_increases(1, None));
        assert!(seq_increases(8, Some(7)));
        assert!(!seq_increases(7, Some(7)));
        assert!(!seq_increases(6, Some(7)));
    }

    // rule: P3.38, P3.39, P3.36
    #[test]
    fn key_validity_and_compromise() {
        let k = KeyValidity {
            valid_from: UnixMs(1000),
            valid_until: Some(UnixMs(5000)),
            revocation_effective_from: None,
            compromised_at: Some(UnixMs(3000)),
        };
        assert_eq!(k.judge(UnixMs(999)), Err(Reason::KeyNotValid));
        assert!(k.judge(UnixMs(3000)).is_ok());
        assert_eq!(k.judge(UnixMs(3001)), Err(Reason::KeyCompromised));
        let k = KeyValidity { compromised_at: None, revocation_effective_from: Some(UnixMs(4000)), ..k };
        assert!(k.judge(UnixMs(3999)).is_ok());
        assert_eq!(k.judge(UnixMs(4000)), Err(Reason::KeyNotValid));
        let k = KeyValidity { revocation_effective_from: None, ..k };
        assert!(k.judge(UnixMs(5000)).is_ok());
        assert_eq!(k.judge(UnixMs(5001)), Err(Reason::KeyNotValid));
    }

    // rule: P3.1, P3.2, P3.3, P3.7, P3.8, P2.2.9
    #[test]
    fn certificates_are_judged_at_sealed_at() {
        let history = vec![
            Issuance {
                cert_id: "c1".into(),
                status: CertificateStatus::Active,
                status_effective_from: UnixMs(100),
                issued_at: UnixMs(100),
            },
            // Withdrawn from 500, issued later at 900 (effective date precedes issue).
            Issuance {
                cert_id: "c2".into(),
                status: CertificateStatus::Withdrawn,
                status_effective_from: UnixMs(500),
                issued_at: UnixMs(900),
            },
        ];
        assert!(judge_certificate(&history, "c1", UnixMs(499)).is_ok());
        assert_eq!(judge_certificate(&history, "c1", UnixMs(500)), Err(Reason::CertificateWithdrawn));
        assert_eq!(judge_certificate(&history, "c1", UnixMs(50)), Err(Reason::CertificateNotInForce));
        assert_eq!(judge_certificate(&history, "c9", UnixMs(200)), Err(Reason::CertificateUnknown));
        let suspended = vec![
            history[0].clone(),
            Issuance {
                cert_id: "c3".into(),
                status: CertificateStatus::Suspended,
                status_effective_from: UnixMs(300),
                issued_at: UnixMs(300),
            },
        ];
        assert_eq!(judge_certificate(&suspended, "c1", UnixMs(301)), Err(Reason::CertificateNotInForce));
        assert_eq!(judge_certificate(&suspended, "c3", UnixMs(301)), Err(Reason::CertificateNotInForce));
    }

    fn issued(cert_id: &str, status: CertificateStatus, effective: i64, issued: i64) -> Issuance {
        Issuance {
            cert_id: cert_id.into(),
            status,
            status_effective_from: UnixMs(effective),
            issued_at: UnixMs(issued),
        }
    }

    // rule: P3.5, P3.6, P3.9, P3.38, P3.39
    #[test]
    fn what_is_served_follows_the_certificate_in_force_now_and_the_key() {
        use CertificateStatus::*;
        let active = issued("c1", Active, 100, 100);
        let served = |history: &[Issuance], sealed: i64, now: i64| serves(history, UnixMs(sealed), None, UnixMs(now));
        let only = std::slice::from_ref(&active);
        assert!(served(only, 200, 300));
        assert!(!served(only, 50, 90), "nothing in force yet");
        // Withdrawn from 500 (issued at 900): nothing at all, then served
        // again once verified again at 1000.
        let withdrawn = [active.clone(), issued("c2", Withdrawn, 500, 900)];
        assert!(served(&withdrawn, 200, 499));
        assert!(!served(&withdrawn, 200, 500) && !served(&withdrawn, 200, 950));
        let again = [withdrawn[0].clone(), withdrawn[1].clone(), issued("c3", Active, 1000, 1000)];
        assert!(served(&again, 200, 1000));
        // Suspended, closed, revoked from 500: history stays, nothing new.
        for status in [Suspended, Closed, Revoked] {
            let history = [active.clone(), issued("c2", status, 500, 600)];
            assert!(served(&history, 499, 700), "{status:?}: sealed before");
            assert!(!served(&history, 500, 700), "{status:?}: sealed from the moment");
        }
        // A key compromised at 400: what it sealed after is not served; a
        // seal at that instant stands.
        assert!(serves(only, UnixMs(400), Some(UnixMs(400)), UnixMs(700)));
        assert!(!serves(only, UnixMs(401), Some(UnixMs(400)), UnixMs(700)));
        let later: Vec<UnixMs> = serving_changes_after(&again, UnixMs(600)).collect();
        assert_eq!(later, [UnixMs(1000)]);
    }
}
