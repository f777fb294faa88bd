//! The sidecar (`sidecar.v2`): what the service checked when it accepted a
//! record, signed by the sidecar key.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::dsse::{Envelope, payload_type};
use crate::keys::{SigningKey, VerifyingKey};

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

/// Signs a sidecar. Coordinates are floats, so they never hit the 2^53 rule.
pub fn make(sidecar: &Sidecar, key: &SigningKey) -> Result<Envelope, crate::canonical::CanonicalError> {
    let bytes = crate::canonical::to_signed_bytes(sidecar)?;
    Ok(Envelope::sign(&payload_type(SIDECAR_V2), &bytes, &[key]))
}

pub fn verify(envelope: &Envelope, key: &VerifyingKey) -> Result<Sidecar, Reason> {
    // Format 1 sidecars were never issued by this implementation.
    crate::dsse::known_version(&envelope.payload_type, "sidecar", &[2])?;
    let payload = envelope.verify(&payload_type(SIDECAR_V2), key)?;
    let sidecar: Sidecar = serde_json::from_slice(&payload).map_err(|_| Reason::PayloadMalformed)?;
    if sidecar.v != 2 {
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
        assert_eq!(verify(&env, &key.verifying_key()).unwrap(), sample());
        let mut other = env.clone();
        other.payload_type = payload_type("sidecar.v3");
        assert_eq!(verify(&other, &key.verifying_key()), Err(Reason::VersionUnknown));
    }
}
