//! DSSE envelopes: pre-authentication encoding, parse and serialise, sign and
//! verify, and the dual P-256 + ML-DSA-65 signatures of long-lived artefacts.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::b64;
use crate::keys::{Alg, SigningKey, VerifyingKey};

/// The prefix of every payload type svc issues or accepts.
pub const PAYLOAD_TYPE_PREFIX: &str = "application/vnd.service.";

/// `application/vnd.service.<name>+json`, for example `payload_type("seal.v2")`.
pub fn payload_type(name: &str) -> String {
    format!("{PAYLOAD_TYPE_PREFIX}{name}+json")
}

/// The short name (`seal.v2`) of one of svc's payload types, if it is one.
pub fn payload_type_name(payload_type: &str) -> Option<&str> {
    payload_type.strip_prefix(PAYLOAD_TYPE_PREFIX)?.strip_suffix("+json")
}

/// Classifies a payload type against the versions of `family` this verifier
/// knows: another family is `payload_type_mismatch`, an unknown version of the
/// family is `version_unknown`.
pub fn known_version(payload_type: &str, family: &str, known: &[u64]) -> Result<u64, Reason> {
    let name = payload_type_name(payload_type).ok_or(Reason::PayloadTypeMismatch)?;
    let version =
        name.strip_prefix(family).and_then(|rest| rest.strip_prefix(".v")).ok_or(Reason::PayloadTypeMismatch)?;
    match version.parse::<u64>() {
        Ok(v) if known.contains(&v) => Ok(v),
        _ => Err(Reason::VersionUnknown),
    }
}

/// DSSE v1 pre-authentication encoding:
/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + payload.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// One signature of an envelope. `authenticator_data` and `client_data_json`
/// appear on passkey (WebAuthn) signatures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub keyid: String,
    pub sig: String,
    #[serde(rename = "authenticatorData", skip_serializing_if = "Option::is_none", default)]
    pub authenticator_data: Option<String>,
    #[serde(rename = "clientDataJSON", skip_serializing_if = "Option::is_none", default)]
    pub client_data_json: Option<String>,
}

/// `{payloadType, payload, signatures}` with the payload base64-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<Signature>,
}

/// An envelope whose shape has been checked and whose payload is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub signatures: Vec<(String, Vec<u8>)>,
}

impl Envelope {
    /// Signs `payload` with every key given, in order.
    pub fn sign(payload_type: &str, payload: &[u8], keys: &[&SigningKey]) -> Envelope {
        let message = pae(payload_type, payload);
        Envelope {
            payload_type: payload_type.to_owned(),
            payload: b64::std_encode(payload),
            signatures: keys
                .iter()
                .map(|k| Signature {
                    keyid: k.verifying_key().thumbprint(),
                    sig: b64::std_encode(&k.sign(&message)),
                    authenticator_data: None,
                    client_data_json: None,
                })
                .collect(),
        }
    }

    /// Parses an envelope from JSON, refusing unknown members and bad base64.
    pub fn parse(json: &[u8]) -> Result<Envelope, Reason> {
        let envelope: Envelope = serde_json::from_slice(json).map_err(|_| Reason::EnvelopeMalformed)?;
        envelope.open()?;
        Ok(envelope)
    }

    pub fn from_value(value: &serde_json::Value) -> Result<Envelope, Reason> {
        let envelope = Envelope::deserialize(value).map_err(|_| Reason::EnvelopeMalformed)?;
        envelope.open()?;
        Ok(envelope)
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes payload and signatures; an envelope with no signature, or with
    /// anything not valid base64, is malformed.
    pub fn open(&self) -> Result<Opened, Reason> {
        let payload = b64::std_decode(&self.payload).ok_or(Reason::EnvelopeMalformed)?;
        if self.signatures.is_empty() || self.payload_type.is_empty() {
            return Err(Reason::EnvelopeMalformed);
        }
        let mut signatures = Vec::with_capacity(self.signatures.len());
        for s in &self.signatures {
            let sig = b64::std_decode(&s.sig).ok_or(Reason::EnvelopeMalformed)?;
            if s.keyid.is_empty() {
                return Err(Reason::EnvelopeMalformed);
            }
            signatures.push((s.keyid.clone(), sig));
        }
        Ok(Opened { payload_type: self.payload_type.clone(), payload, signatures })
    }

    /// The decoded payload, without checking any signature.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, Reason> {
        b64::std_decode(&self.payload).ok_or(Reason::EnvelopeMalformed)
    }

    /// Verifies a single-signer envelope of the expected payload type with
    /// `key`. The signature must name the key (`key_mismatch` otherwise).
    pub fn verify(&self, expected_type: &str, key: &VerifyingKey) -> Result<Vec<u8>, Reason> {
        let opened = self.open()?;
        if opened.payload_type != expected_type {
            return Err(Reason::PayloadTypeMismatch);
        }
        let keyid = key.thumbprint();
        let message = pae(&opened.payload_type, &opened.payload);
        let mut named = false;
        for (id, sig) in &opened.signatures {
            if *id == keyid {
                named = true;
                if key.verify(&message, sig) {
                    return Ok(opened.payload);
                }
            }
        }
        Err(if named { Reason::SignatureInvalid } else { Reason::KeyMismatch })
    }

    /// Verifies a long-lived artefact: a P-256 signature by `classical` and an
    /// ML-DSA-65 signature by `post_quantum`, both required.
    pub fn verify_dual(
        &self,
        expected_type: &str,
        classical: &VerifyingKey,
        post_quantum: &VerifyingKey,
    ) -> Result<Vec<u8>, Reason> {
        if classical.alg() != Alg::Es256 || post_quantum.alg() != Alg::MlDsa65 {
            return Err(Reason::KeyMismatch);
        }
        let opened = self.open()?;
        if opened.payload_type != expected_type {
            return Err(Reason::PayloadTypeMismatch);
        }
        let pq_id = post_quantum.thumbprint();
        if !opened.signatures.iter().any(|(id, _)| *id == pq_id) {
            return Err(Reason::PostQuantumRequired);
        }
        self.verify(expected_type, classical)?;
        self.verify(expected_type, post_quantum)
    }
}

/// A P-256 and an ML-DSA-65 key that sign long-lived artefacts together.
#[derive(Debug, Clone)]
pub struct DualKey {
    pub classical: SigningKey,
    pub post_quantum: SigningKey,
}

impl DualKey {
    pub fn from_seeds(classical: &[u8; 32], post_quantum: &[u8; 32]) -> Result<Self, crate::keys::KeyError> {
        Ok(DualKey {
            classical: SigningKey::from_seed(Alg::Es256, classical)?,
            post_quantum: SigningKey::from_seed(Alg::MlDsa65, post_quantum)?,
        })
    }

    pub fn sign(&self, payload_type: &str, payload: &[u8]) -> Envelope {
        Envelope::sign(payload_type, payload, &[&self.classical, &self.post_quantum])
    }

    pub fn verify(&self, envelope: &Envelope, expected_type: &str) -> Result<Vec<u8>, Reason> {
        envelope.verify_dual(expected_type, &self.classical.verifying_key(), &self.post_quantum.verifying_key())
    }

    /// Signs a short-lived statement (one answer's attestation, such as
    /// `verify-statement.v1`) with the P-256 half alone: two signatures are
    /// for long-lived artefacts (P2.1.5), and an ML-DSA-65 signature costs
    /// more than the judgement it would attest.
    pub fn sign_short_lived(&self, payload_type: &str, payload: &[u8]) -> Envelope {
        Envelope::sign(payload_type, payload, &[&self.classical])
    }

    /// Verifies a short-lived statement: the P-256 half's signature.
    pub fn verify_short_lived(&self, envelope: &Envelope, expected_type: &str) -> Result<Vec<u8>, Reason> {
        envelope.verify(expected_type, &self.classical.verifying_key())
    }
}

/// Reads the `v` member of a JSON payload and checks it is one of `known`.
pub fn payload_version(payload: &[u8], known: &[u64]) -> Result<serde_json::Value, Reason> {
    let value: serde_json::Value = serde_json::from_slice(payload).map_err(|_| Reason::PayloadMalformed)?;
    let v = value.get("v").and_then(serde_json::Value::as_u64).ok_or(Reason::PayloadMalformed)?;
    if !known.contains(&v) {
        return Err(Reason::VersionUnknown);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(alg: Alg, n: u8) -> SigningKey {
        SigningKey::from_seed(alg, &[n; 32]).unwrap()
    }

    // rule: P2.1.4
    #[test]
    fn pae_matches_the_dsse_protocol() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn sign_and_verify_with_each_algorithm() {
        for alg in [Alg::Ed25519, Alg::Es256, Alg::MlDsa65] {
            let k = key(alg, 1);
            let env = Envelope::sign(&payload_type("seal.v2"), b"{\"v\":2}", &[&k]);
            let parsed = Envelope::parse(&env.to_json()).unwrap();
            assert_eq!(parsed, env);
            assert_eq!(env.verify(&payload_type("seal.v2"), &k.verifying_key()).unwrap(), b"{\"v\":2}");
            assert_eq!(env.verify(&payload_type("seal.v1"), &k.verifying_key()), Err(Reason::PayloadTypeMismatch));
            assert_eq!(env.verify(&payload_type("seal.v2"), &key(alg, 2).verifying_key()), Err(Reason::KeyMismatch));
        }
    }

    #[test]
    fn tampered_payload_is_signature_invalid() {
        let k = key(Alg::Ed25519, 1);
        let mut env = Envelope::sign("t", b"abc", &[&k]);
        env.payload = b64::std_encode(b"abd");
        assert_eq!(env.verify("t", &k.verifying_key()), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn malformed_envelopes() {
        assert_eq!(Envelope::parse(b"{}"), Err(Reason::EnvelopeMalformed));
        assert_eq!(
            Envelope::parse(br#"{"payloadType":"t","payload":"@@","signatures":[{"keyid":"k","sig":""}]}"#),
            Err(Reason::EnvelopeMalformed)
        );
        assert_eq!(
            Envelope::parse(br#"{"payloadType":"t","payload":"","signatures":[]}"#),
            Err(Reason::EnvelopeMalformed)
        );
        assert_eq!(
            Envelope::parse(br#"{"payloadType":"t","payload":"","signatures":[{"keyid":"k","sig":""}],"x":1}"#),
            Err(Reason::EnvelopeMalformed)
        );
    }

    // rule: P2.1.5, P2.1.6
    #[test]
    fn long_lived_artefacts_need_both_signatures() {
        let dual = DualKey::from_seeds(&[4; 32], &[5; 32]).unwrap();
        let t = payload_type("certificate.v1");
        let env = dual.sign(&t, b"{\"v\":1}");
        assert_eq!(env.signatures.len(), 2);
        assert!(dual.verify(&env, &t).is_ok());

        let mut classical_only = env.clone();
        classical_only.signatures.truncate(1);
        assert_eq!(dual.verify(&classical_only, &t), Err(Reason::PostQuantumRequired));

        let mut pq_only = env.clone();
        pq_only.signatures.remove(0);
        assert_eq!(dual.verify(&pq_only, &t), Err(Reason::KeyMismatch));

        let mut bad_pq = env.clone();
        bad_pq.signatures[1].sig = env.signatures[0].sig.clone();
        assert_eq!(dual.verify(&bad_pq, &t), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn payload_type_families() {
        assert_eq!(known_version(&payload_type("seal.v2"), "seal", &[1, 2]), Ok(2));
        assert_eq!(known_version(&payload_type("seal.v9"), "seal", &[1, 2]), Err(Reason::VersionUnknown));
        assert_eq!(known_version(&payload_type("batch-seal.v2"), "seal", &[1, 2]), Err(Reason::PayloadTypeMismatch));
        assert_eq!(known_version("text/plain", "seal", &[1, 2]), Err(Reason::PayloadTypeMismatch));
    }

    #[test]
    fn unknown_payload_versions_are_refused() {
        assert!(payload_version(b"{\"v\":2}", &[1, 2]).is_ok());
        assert_eq!(payload_version(b"{\"v\":3}", &[1, 2]), Err(Reason::VersionUnknown));
        assert_eq!(payload_version(b"[]", &[1, 2]), Err(Reason::PayloadMalformed));
    }
}
