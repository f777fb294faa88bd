//! The sidecar (`sidecar.v2`, and `sidecar.v1` which still verifies): what
//! the service checked when it accepted a record, signed by the sidecar key.
//!
//! The spec shows no format 1 members. We read format 1 as format 2 with
//! `terms_version` in place of `ai_policy_version`, the one change between
//! the seal's formats 1 and 2; this build issues format 2 only.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::dsse::{Envelope, payload_type};
use crate::keys::{SigningKey, VerifyingKey};

pub const SIDECAR_V1: &str = "sidecar.v1";
pub const SIDECAR_V2: &str = "sidecar.v2";

/// The scope the record was published under: a Path A mandate, or a Path B
/// person's grant at acceptance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolvedScope {
    /// `mandate` (Path A) or `grant` (Path B).
    pub basis: String,
    /// The mandate id or the grant id.
    pub id: String,
    pub record_types: Vec<String>,
    pub countries: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeoPoint {
    pub lat: f64,
    pub lng: f64,
}

/// Sidecar payload, format 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    pub v: u64,
    pub record_id: String,
    pub business_uuid: String,
    pub record_type: String,
    /// `sha256:` of the record's exact bytes.
    pub origin: String,
    /// 1 for the first accepted version, then one more per update.
    pub generation: u64,
    /// `A` (integration key under a mandate) or `B` (passkey).
    pub path: String,
    /// `sha256:` of the seal envelope's JSON as received.
    pub seal_digest: String,
    pub key_id: String,
    pub cert_id: String,
    pub certificate_status: String,
    pub ai_policy_version: u64,
    pub scope: ResolvedScope,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub batch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub leaf_index: Option<u64>,
    /// The coordinate the service geocoded for the record, if any.
    pub geocoded: Option<GeoPoint>,
    /// RFC 3339 millisecond UTC: when the service accepted it.
    pub accepted_at: String,
}

/// Sidecar payload, format 1: named the Terms version instead of the AI
/// policy's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SidecarV1 {
    pub v: u64,
    pub record_id: String,
    pub business_uuid: String,
    pub record_type: String,
    pub origin: String,
    pub generation: u64,
    pub path: String,
    pub seal_digest: String,
    pub key_id: String,
    pub cert_id: String,
    pub certificate_status: String,
    pub terms_version: u64,
    pub scope: ResolvedScope,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub batch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub leaf_index: Option<u64>,
    pub geocoded: Option<GeoPoint>,
    pub accepted_at: String,
}

/// A sidecar of either format, as a verifier reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum AnySidecar {
    V1(SidecarV1),
    V2(Sidecar),
}

impl AnySidecar {
    pub fn format(&self) -> u64 {
        match self {
            AnySidecar::V1(_) => 1,
            AnySidecar::V2(_) => 2,
        }
    }
    /// `sha256:` of the record's exact bytes.
    pub fn origin(&self) -> &str {
        match self {
            AnySidecar::V1(s) => &s.origin,
            AnySidecar::V2(s) => &s.origin,
        }
    }
    pub fn key_id(&self) -> &str {
        match self {
            AnySidecar::V1(s) => &s.key_id,
            AnySidecar::V2(s) => &s.key_id,
        }
    }
    pub fn scope(&self) -> &ResolvedScope {
        match self {
            AnySidecar::V1(s) => &s.scope,
            AnySidecar::V2(s) => &s.scope,
        }
    }
}

/// Signs a sidecar. Coordinates are floats, so they never hit the 2^53 rule.
pub fn make(sidecar: &Sidecar, key: &SigningKey) -> Result<Envelope, crate::canonical::CanonicalError> {
    let bytes = crate::canonical::to_signed_bytes(sidecar)?;
    Ok(Envelope::sign(&payload_type(SIDECAR_V2), &bytes, &[key]))
}

/// Checks a sidecar of either format under the sidecar key; its `v` must be
/// its payload type's.
pub fn verify(envelope: &Envelope, key: &VerifyingKey) -> Result<AnySidecar, Reason> {
    let format = crate::dsse::known_version(&envelope.payload_type, "sidecar", &[1, 2])?;
    let payload = envelope.verify(&envelope.payload_type, key)?;
    let malformed = |_| Reason::PayloadMalformed;
    let (v, sidecar) = match format {
        1 => serde_json::from_slice::<SidecarV1>(&payload).map(|s| (s.v, AnySidecar::V1(s))).map_err(malformed)?,
        _ => serde_json::from_slice::<Sidecar>(&payload).map(|s| (s.v, AnySidecar::V2(s))).map_err(malformed)?,
    };
    if v != format {
        return Err(Reason::VersionUnknown);
    }
    Ok(sidecar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;

    fn sample() -> Sidecar {
        Sidecar {
            v: 2,
            record_id: "svc_aaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
            business_uuid: "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c".into(),
            record_type: "products".into(),
            origin: crate::digest::sha256_prefixed(b"r"),
            generation: 1,
            path: "A".into(),
            seal_digest: crate::digest::sha256_prefixed(b"s"),
            key_id: "k".into(),
            cert_id: "c".into(),
            certificate_status: "active".into(),
            ai_policy_version: 2,
            scope: ResolvedScope {
                basis: "mandate".into(),
                id: "m".into(),
                record_types: vec!["products".into()],
                countries: vec!["FR".into()],
            },
            batch_id: Some("bat_000000000000000000000000".into()),
            leaf_index: Some(4),
            geocoded: Some(GeoPoint { lat: 48.85, lng: 2.35 }),
            accepted_at: "2026-11-01T12:00:00.000Z".into(),
        }
    }

    // rule: R2.7.5, R2.7.6, P9.10
    #[test]
    fn sidecar_v2_round_trip() {
        let key = SigningKey::from_seed(Alg::Ed25519, &[3; 32]).unwrap();
        let env = make(&sample(), &key).unwrap();
        assert_eq!(env.payload_type, "application/vnd.service.sidecar.v2+json");
        assert_eq!(verify(&env, &key.verifying_key()).unwrap(), AnySidecar::V2(sample()));
        let mut other = env.clone();
        other.payload_type = payload_type("sidecar.v3");
        assert_eq!(verify(&other, &key.verifying_key()), Err(Reason::VersionUnknown));
    }

    /// Format 1, as this module reads it: format 2 naming `terms_version`.
    fn v1_payload() -> serde_json::Value {
        let mut payload = serde_json::to_value(sample()).unwrap();
        let object = payload.as_object_mut().unwrap();
        let version = object.remove("ai_policy_version").unwrap();
        object.insert("terms_version".into(), version);
        object.insert("v".into(), 1.into());
        payload
    }

    // rule: P9.10
    #[test]
    fn a_format_1_sidecar_still_verifies_and_its_v_must_match_its_type() {
        let key = SigningKey::from_seed(Alg::Ed25519, &[3; 32]).unwrap();
        let sign = |name: &str, payload: &serde_json::Value| {
            let bytes = crate::canonical::to_signed_bytes(payload).unwrap();
            Envelope::sign(&payload_type(name), &bytes, &[&key])
        };
        let read = verify(&sign(SIDECAR_V1, &v1_payload()), &key.verifying_key()).unwrap();
        assert_eq!(read.format(), 1);
        assert_eq!((read.origin(), read.key_id()), (sample().origin.as_str(), "k"));
        assert_eq!(read.scope(), &sample().scope);
        // A format 2 payload under the format 1 type, or the other way round.
        let v2 = serde_json::to_value(sample()).unwrap();
        assert_eq!(verify(&sign(SIDECAR_V1, &v2), &key.verifying_key()), Err(Reason::PayloadMalformed));
        assert_eq!(verify(&sign(SIDECAR_V2, &v1_payload()), &key.verifying_key()), Err(Reason::PayloadMalformed));
        let mut relabelled = v1_payload();
        relabelled["v"] = 2.into();
        assert_eq!(verify(&sign(SIDECAR_V1, &relabelled), &key.verifying_key()), Err(Reason::VersionUnknown));
        // Signed by another key.
        let other = SigningKey::from_seed(Alg::Ed25519, &[4; 32]).unwrap();
        assert!(verify(&sign(SIDECAR_V1, &v1_payload()), &other.verifying_key()).is_err());
    }
}
