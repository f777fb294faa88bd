//! The key set (`GET /.well-known/keys`, publishing 4.2): every public key
//! the service signs with, each with its purpose, region and validity, and a
//! `jwks.v1` envelope over them dual-signed by the root key. Only the signed
//! payload is trusted; the plain `keys` array is a convenience copy.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::Reason;
use crate::dsse::{DualKey, Envelope, payload_type};
use crate::keys::{Alg, Jwk, VerifyingKey};
use crate::time::UnixMs;

pub const JWKS_V1: &str = "jwks.v1";
pub const KEY_CERTIFICATE_V1: &str = "key-certificate.v1";

/// What a key is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Root,
    Issuance,
    Statement,
    Projection,
    Sidecar,
    Receipt,
    LogCheckpoint,
}

/// One key of the set: its JWK and what the service says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    pub jwk: Jwk,
    pub kid: String,
    pub purpose: Purpose,
    /// The region whose key it is (receipt keys), else `None`.
    pub region: Option<String>,
    pub valid_from: UnixMs,
    pub valid_until: Option<UnixMs>,
    pub compromised_at: Option<UnixMs>,
}

impl KeyEntry {
    pub fn new(key: &VerifyingKey, purpose: Purpose, region: Option<&str>, valid_from: UnixMs) -> KeyEntry {
        KeyEntry {
            jwk: key.to_jwk(),
            kid: key.thumbprint(),
            purpose,
            region: region.map(str::to_owned),
            valid_from,
            valid_until: None,
            compromised_at: None,
        }
    }

    /// The JWK with the set's members beside it, as the spec lists them.
    pub fn to_value(&self) -> Value {
        let mut object = match serde_json::to_value(&self.jwk) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        object.insert("kid".into(), json!(self.kid));
        object.insert("purpose".into(), serde_json::to_value(self.purpose).unwrap_or(Value::Null));
        if let Some(region) = &self.region {
            object.insert("region".into(), json!(region));
        }
        object.insert("valid_from".into(), json!(self.valid_from.to_rfc3339_secs()));
        object.insert("valid_until".into(), json!(self.valid_until.map(UnixMs::to_rfc3339_secs)));
        if let Some(at) = self.compromised_at {
            object.insert("compromised_at".into(), json!(at.to_rfc3339_secs()));
        }
        Value::Object(object)
    }

    pub fn from_value(value: &Value) -> Result<KeyEntry, Reason> {
        let time = |name: &str| -> Result<Option<UnixMs>, Reason> {
            match value.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => UnixMs::parse_rfc3339(s).map(Some).ok_or(Reason::PayloadMalformed),
                Some(_) => Err(Reason::PayloadMalformed),
            }
        };
        let jwk: Jwk = serde_json::from_value(value.clone()).map_err(|_| Reason::PayloadMalformed)?;
        let kid = value.get("kid").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?.to_owned();
        if jwk.thumbprint() != kid {
            return Err(Reason::KeyMismatch);
        }
        Ok(KeyEntry {
            jwk,
            kid,
            purpose: serde_json::from_value(value.get("purpose").cloned().unwrap_or(Value::Null))
                .map_err(|_| Reason::PayloadMalformed)?,
            region: value.get("region").and_then(Value::as_str).map(str::to_owned),
            valid_from: time("valid_from")?.ok_or(Reason::PayloadMalformed)?,
            valid_until: time("valid_until")?,
            compromised_at: time("compromised_at")?,
        })
    }

    /// Whether the key may have signed something at `at`: inside its
    /// validity and before any compromise.
    pub fn valid_at(&self, at: UnixMs) -> bool {
        at >= self.valid_from
            && self.valid_until.is_none_or(|until| at < until)
            && self.compromised_at.is_none_or(|c| at < c)
    }
}

/// How long a key stays valid once its successor is listed: time for the
/// new key to reach the signer (a region's receipt key replicates to it)
/// and for caches of the key set (5 minutes) to see it.
pub const KEY_OVERLAP_MS: i64 = 60 * 60 * 1000;

/// Adds `key` as a receipt key of `region`, valid from `now`, to the set's
/// entries. The region's receipt keys still open close at `now` plus
/// [`KEY_OVERLAP_MS`], so old and new overlap while the region
/// switches. A key already in the set changes nothing (a region asks again
/// until it sees the answer). Returns whether the entries changed.
pub fn certify_receipt_key(entries: &mut Vec<KeyEntry>, key: &VerifyingKey, region: &str, now: UnixMs) -> bool {
    let kid = key.thumbprint();
    if entries.iter().any(|e| e.kid == kid) {
        return false;
    }
    succeed(entries, vec![KeyEntry::new(key, Purpose::Receipt, Some(region), now)], now);
    true
}

/// Lists `successors` (valid from `now`) and closes every key they succeed
/// (same purpose, same region) at `now` plus [`KEY_OVERLAP_MS`]: the
/// old keys stay valid while signers switch and caches of the set (5
/// minutes) refresh, then only the new ones sign.
pub fn succeed(entries: &mut Vec<KeyEntry>, successors: Vec<KeyEntry>, now: UnixMs) {
    let closes = now.plus(KEY_OVERLAP_MS);
    for entry in entries.iter_mut() {
        if successors.iter().any(|s| s.purpose == entry.purpose && s.region == entry.region) {
            entry.valid_until = Some(entry.valid_until.map_or(closes, |until| until.min(closes)));
        }
    }
    entries.extend(successors);
}

/// Ends a service key: from `valid_until` it signs nothing new (a planned
/// retirement, after its successor is in the set), and with
/// `compromised_at` everything it signed from that moment is refused, even
/// if the moment precedes the change. A root key cannot be ended by the root
/// it belongs to (a new root is a new deployment's anchors); an unknown id is
/// `key_unknown`. A moment only ever moves earlier. Returns whether the
/// entries changed.
pub fn end_key(
    entries: &mut [KeyEntry],
    kid: &str,
    valid_until: Option<UnixMs>,
    compromised_at: Option<UnixMs>,
) -> Result<bool, Reason> {
    let entry = entries.iter_mut().find(|e| e.kid == kid).ok_or(Reason::KeyUnknown)?;
    if entry.purpose == Purpose::Root {
        return Err(Reason::KeyMismatch);
    }
    let earliest = |held: Option<UnixMs>, asked: Option<UnixMs>| match (held, asked) {
        (Some(h), Some(a)) => Some(h.min(a)),
        (h, a) => h.or(a),
    };
    let before = (entry.valid_until, entry.compromised_at);
    entry.valid_until = earliest(entry.valid_until, valid_until);
    entry.compromised_at = earliest(entry.compromised_at, compromised_at);
    Ok(before != (entry.valid_until, entry.compromised_at))
}

/// The key set document: the plain `keys` copy and the signed envelope.
/// `certificates` holds one root-signed `key-certificate.v1` per non-root key,
/// so a single key can be shown to someone holding only the root anchors.
pub fn document(entries: &[KeyEntry], issued_at: UnixMs, root: &DualKey) -> Value {
    let keys: Vec<Value> = entries.iter().map(KeyEntry::to_value).collect();
    let certificates: Vec<Value> = entries
        .iter()
        .filter(|e| e.purpose != Purpose::Root)
        .map(|e| {
            let payload = json!({"v": 1, "issued_at": issued_at.to_rfc3339_secs(), "key": e.to_value()});
            envelope_value(&root.sign(&payload_type(KEY_CERTIFICATE_V1), &signed_bytes(&payload)))
        })
        .collect();
    let payload = json!({"v": 1, "issued_at": issued_at.to_rfc3339_secs(), "keys": keys, "certificates": certificates});
    let signed = root.sign(&payload_type(JWKS_V1), &signed_bytes(&payload));
    json!({"keys": keys, "signed": envelope_value(&signed)})
}

fn signed_bytes(payload: &Value) -> Vec<u8> {
    // Strings, small integers and arrays of them: canonical form never fails.
    crate::canonical::to_signed_bytes(payload).unwrap_or_default()
}

fn envelope_value(envelope: &Envelope) -> Value {
    serde_json::to_value(envelope).unwrap_or(Value::Null)
}

/// The key of `purpose` with id `kid` among `entries` that was valid at `at`.
pub fn key_in(entries: &[KeyEntry], purpose: Purpose, kid: &str, at: UnixMs) -> Option<VerifyingKey> {
    let entry = entries.iter().find(|e| e.purpose == purpose && e.kid == kid && e.valid_at(at))?;
    VerifyingKey::from_jwk(&entry.jwk).ok()
}

/// The root's two public keys, pinned by whoever verifies offline.
#[derive(Debug, Clone)]
pub struct RootAnchors {
    pub classical: VerifyingKey,
    pub post_quantum: VerifyingKey,
}

/// A verified key set.
#[derive(Debug, Clone)]
pub struct KeySet {
    pub issued_at: UnixMs,
    pub keys: Vec<KeyEntry>,
}

impl KeySet {
    /// The key of `purpose` with id `kid` that was valid at `at`.
    pub fn key(&self, purpose: Purpose, kid: &str, at: UnixMs) -> Option<VerifyingKey> {
        key_in(&self.keys, purpose, kid, at)
    }

    /// The receipt key `kid` of `region`, valid at `at`: a receipt signed by
    /// another region's key does not verify.
    pub fn receipt_key(&self, kid: &str, region: &str, at: UnixMs) -> Option<VerifyingKey> {
        let entry = self.keys.iter().find(|e| {
            e.purpose == Purpose::Receipt && e.kid == kid && e.region.as_deref() == Some(region) && e.valid_at(at)
        })?;
        VerifyingKey::from_jwk(&entry.jwk).ok()
    }

    /// The root anchors the set names (trust on first use, or to compare
    /// against anchors pinned some other way).
    pub fn anchors(&self) -> Option<RootAnchors> {
        let root = |alg: Alg| {
            self.keys
                .iter()
                .filter(|e| e.purpose == Purpose::Root)
                .filter_map(|e| VerifyingKey::from_jwk(&e.jwk).ok())
                .find(|k| k.alg() == alg)
        };
        Some(RootAnchors { classical: root(Alg::Es256)?, post_quantum: root(Alg::MlDsa65)? })
    }
}

/// Verifies a key set document against pinned root anchors; only what the
/// signed payload says is returned.
pub fn verify(document: &Value, anchors: &RootAnchors) -> Result<KeySet, Reason> {
    let envelope = Envelope::from_value(document.get("signed").ok_or(Reason::EnvelopeMalformed)?)?;
    let payload = envelope.verify_dual(&payload_type(JWKS_V1), &anchors.classical, &anchors.post_quantum)?;
    let payload = crate::dsse::payload_version(&payload, &[1])?;
    let issued_at = payload
        .get("issued_at")
        .and_then(Value::as_str)
        .and_then(UnixMs::parse_rfc3339)
        .ok_or(Reason::PayloadMalformed)?;
    let keys = payload
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(Reason::PayloadMalformed)?
        .iter()
        .map(KeyEntry::from_value)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(KeySet { issued_at, keys })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::SigningKey;

    fn root(n: u8) -> DualKey {
        DualKey::from_seeds(&[n; 32], &[n + 1; 32]).unwrap()
    }

    fn anchors(root: &DualKey) -> RootAnchors {
        RootAnchors { classical: root.classical.verifying_key(), post_quantum: root.post_quantum.verifying_key() }
    }

    fn set(root: &DualKey, receipt: &SigningKey) -> Value {
        let t = UnixMs(1_795_000_000_000);
        let mut entries = vec![
            KeyEntry::new(&root.classical.verifying_key(), Purpose::Root, None, t),
            KeyEntry::new(&root.post_quantum.verifying_key(), Purpose::Root, None, t),
            KeyEntry::new(&receipt.verifying_key(), Purpose::Receipt, Some("eu-west"), t),
        ];
        entries[2].compromised_at = Some(t.plus(1_000));
        document(&entries, t, root)
    }

    // rule: P2.6.34, P3.38, P3.39
    #[test]
    fn a_service_key_ends_by_retirement_or_compromise_and_never_later() {
        let t = UnixMs(1_795_000_000_000);
        let root = root(1);
        let projection = SigningKey::from_seed(Alg::Ed25519, &[4; 32]).unwrap().verifying_key();
        let mut entries = vec![
            KeyEntry::new(&root.classical.verifying_key(), Purpose::Root, None, t),
            KeyEntry::new(&projection, Purpose::Projection, None, t),
        ];
        let kid = projection.thumbprint();
        assert_eq!(end_key(&mut entries, &kid, Some(t.plus(5_000)), None), Ok(true));
        assert!(entries[1].valid_at(t.plus(4_999)) && !entries[1].valid_at(t.plus(5_000)));
        assert_eq!(end_key(&mut entries, &kid, Some(t.plus(9_000)), None), Ok(false), "never later");
        assert_eq!(end_key(&mut entries, &kid, None, Some(t.plus(1_000))), Ok(true));
        assert!(entries[1].valid_at(t.plus(999)) && !entries[1].valid_at(t.plus(1_000)), "compromised from then");
        let root_kid = entries[0].kid.clone();
        assert_eq!(end_key(&mut entries, &root_kid, Some(t), None), Err(Reason::KeyMismatch));
        assert_eq!(end_key(&mut entries, "nope", Some(t), None), Err(Reason::KeyUnknown));
    }

    #[test]
    fn a_signed_set_names_each_key_with_its_purpose_region_and_validity() {
        let root = root(1);
        let receipt = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
        let doc = set(&root, &receipt);
        let verified = verify(&doc, &anchors(&root)).expect("the root's signature holds");
        let kid = receipt.verifying_key().thumbprint();
        let t = verified.issued_at;
        assert_eq!(verified.key(Purpose::Receipt, &kid, t), Some(receipt.verifying_key()));
        assert_eq!(verified.key(Purpose::Receipt, &kid, t.plus(1_000)), None, "compromised from then on");
        assert_eq!(verified.key(Purpose::Projection, &kid, t), None, "purpose matters");
        assert_eq!(verified.key(Purpose::Receipt, &kid, t.minus(1)), None, "not valid before");
        let entry = &verified.keys[2];
        assert_eq!(entry.region.as_deref(), Some("eu-west"));
        assert_eq!(doc["keys"][2]["purpose"], "receipt");
        assert_eq!(doc["keys"][2]["kty"], "OKP");
        let anchors_named = verified.anchors().unwrap();
        assert_eq!(anchors_named.classical, root.classical.verifying_key());
        // One key certificate per non-root key.
        let payload: Value =
            serde_json::from_slice(&Envelope::from_value(&doc["signed"]).unwrap().payload_bytes().unwrap()).unwrap();
        assert_eq!(payload["certificates"].as_array().unwrap().len(), 1);
    }

    // rule: P2.6.37
    #[test]
    fn a_receipt_key_answers_only_for_its_own_region() {
        let root = root(1);
        let receipt = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
        let verified = verify(&set(&root, &receipt), &anchors(&root)).unwrap();
        let kid = receipt.verifying_key().thumbprint();
        let t = verified.issued_at;
        assert_eq!(verified.receipt_key(&kid, "eu-west", t), Some(receipt.verifying_key()));
        assert_eq!(verified.receipt_key(&kid, "ap-south", t), None, "another region's receipt");
        assert_eq!(verified.receipt_key(&kid, "eu-west", t.plus(1_000)), None, "compromised");
    }

    #[test]
    fn a_new_receipt_key_overlaps_the_old_one_then_takes_over() {
        let old = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap().verifying_key();
        let new = SigningKey::from_seed(Alg::Ed25519, &[10; 32]).unwrap().verifying_key();
        let other = SigningKey::from_seed(Alg::Ed25519, &[11; 32]).unwrap().verifying_key();
        let t0 = UnixMs(1_795_000_000_000);
        let mut entries = Vec::new();
        assert!(certify_receipt_key(&mut entries, &old, "eu", t0));
        assert!(certify_receipt_key(&mut entries, &other, "ap", t0));
        assert!(!certify_receipt_key(&mut entries, &old, "eu", t0.plus(5)), "asked again: no change");
        let t1 = t0.plus(86_400_000);
        assert!(certify_receipt_key(&mut entries, &new, "eu", t1));
        let set = KeySet { issued_at: t1, keys: entries.clone() };
        let (old_kid, new_kid) = (old.thumbprint(), new.thumbprint());
        // Before the rotation only the old key; during the overlap both;
        // after it only the new one. Old receipts verify for ever.
        assert!(set.receipt_key(&old_kid, "eu", t0.plus(1)).is_some());
        assert!(set.receipt_key(&new_kid, "eu", t0.plus(1)).is_none());
        let during = t1.plus(KEY_OVERLAP_MS - 1);
        assert!(set.receipt_key(&old_kid, "eu", during).is_some());
        assert!(set.receipt_key(&new_kid, "eu", during).is_some());
        let after = t1.plus(KEY_OVERLAP_MS);
        assert!(set.receipt_key(&old_kid, "eu", after).is_none());
        assert!(set.receipt_key(&new_kid, "eu", after).is_some());
        assert!(set.receipt_key(&other.thumbprint(), "ap", after).is_some(), "other regions untouched");
        assert_eq!(entries.iter().filter(|e| e.valid_until.is_none()).count(), 2);
    }

    #[test]
    fn another_root_or_an_edited_payload_is_refused() {
        let receipt = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
        let doc = set(&root(1), &receipt);
        assert!(verify(&doc, &anchors(&root(3))).is_err(), "not the pinned root");
        let mut edited = doc.clone();
        let mut envelope = Envelope::from_value(&doc["signed"]).unwrap();
        let mut payload: Value = serde_json::from_slice(&envelope.payload_bytes().unwrap()).unwrap();
        payload["keys"][2]["region"] = json!("us-east");
        envelope.payload = crate::b64::std_encode(&serde_json::to_vec(&payload).unwrap());
        edited["signed"] = serde_json::to_value(&envelope).unwrap();
        assert!(verify(&edited, &anchors(&root(1))).is_err(), "an edited payload");
    }
}
