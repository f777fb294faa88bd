//! What a business seals, built the way a business's own system (Path A) or
//! its people's passkeys (Path B, mandates, AI policies) would.

use serde_json::{Value, json};
use svc_core::dsse::{Envelope, payload_type};
use svc_core::keys::SigningKey;
use svc_core::merkle::{BatchTree, root_form};
use svc_core::seal::{BatchSealV2, SealV2};
use svc_core::time::UnixMs;

use super::ClientError;

/// Who the business is to the service when it seals.
#[derive(Debug, Clone)]
pub struct SealContext {
    pub cert_id: String,
    pub ai_policy_version: u64,
}

/// A `batch-seal.v2` over the records' raw bytes, signed by the integration key.
pub fn batch_seal(
    key: &SigningKey,
    context: &SealContext,
    record_type: &str,
    records: &[Vec<u8>],
    seq: u64,
    sealed_at: UnixMs,
) -> Result<Envelope, ClientError> {
    let tree = BatchTree::from_records(records);
    let payload = BatchSealV2 {
        v: 2,
        key_id: key.verifying_key().thumbprint(),
        cert_id: context.cert_id.clone(),
        root: root_form(&tree.root()),
        tree_size: records.len() as u64,
        seq,
        sealed_at: sealed_at.to_rfc3339_millis(),
        record_type: record_type.to_owned(),
        ai_policy_version: context.ai_policy_version,
    };
    let bytes = svc_core::canonical::to_signed_bytes(&payload)?;
    Ok(Envelope::sign(&payload_type("batch-seal.v2"), &bytes, &[key]))
}

/// The `seal.v2` payload over `bytes`.
pub fn seal_v2_payload(
    key_id: &str,
    context: &SealContext,
    record_type: &str,
    bytes: &[u8],
    sealed_at: UnixMs,
    next_ai_policy_version: Option<u64>,
) -> Result<Vec<u8>, ClientError> {
    let payload = SealV2 {
        v: 2,
        key_id: key_id.to_owned(),
        cert_id: context.cert_id.clone(),
        hash: svc_core::digest::sha256_prefixed(bytes),
        sealed_at: sealed_at.to_rfc3339_millis(),
        record_type: record_type.to_owned(),
        ai_policy_version: context.ai_policy_version,
        next_ai_policy_version,
    };
    Ok(svc_core::canonical::to_signed_bytes(&payload)?)
}

/// A `seal.v2` signed by an integration key (withdraw and delete documents).
pub fn key_seal(
    key: &SigningKey,
    context: &SealContext,
    record_type: &str,
    bytes: &[u8],
    sealed_at: UnixMs,
) -> Result<Envelope, ClientError> {
    let payload = seal_v2_payload(&key.verifying_key().thumbprint(), context, record_type, bytes, sealed_at, None)?;
    Ok(Envelope::sign(&payload_type("seal.v2"), &payload, &[key]))
}

/// A software passkey: signs as a WebAuthn authenticator would for the
/// portal's relying party, so a person's ceremony can be scripted.
pub struct Passkey<'a> {
    pub key: &'a SigningKey,
    pub rp_id: &'a str,
    pub origin: &'a str,
}

impl Passkey<'_> {
    fn seal(&self, payload_type_name: &str, payload: &[u8]) -> Result<Envelope, ClientError> {
        svc_core::publish::webauthn::seal_with_passkey(
            self.key,
            self.rp_id,
            self.origin,
            &payload_type(payload_type_name),
            payload,
            1,
        )
        .map_err(ClientError::Passkey)
    }

    /// A `seal.v2` over one record's bytes (Path B, and AI policy records,
    /// which name the version they create).
    pub fn seal_record(
        &self,
        context: &SealContext,
        record_type: &str,
        bytes: &[u8],
        sealed_at: UnixMs,
        next_ai_policy_version: Option<u64>,
    ) -> Result<Envelope, ClientError> {
        let key_id = self.key.verifying_key().thumbprint();
        let payload = seal_v2_payload(&key_id, context, record_type, bytes, sealed_at, next_ai_policy_version)?;
        self.seal("seal.v2", &payload)
    }

    /// A `mandate.v1` for an integration key.
    /// An owner's or admin's confirmation of a held push (`publish` or `discard`).
    pub fn seal_release(
        &self,
        push_id: &str,
        business_uuid: &str,
        decision: &str,
        now: UnixMs,
    ) -> Result<Envelope, ClientError> {
        let payload = json!({"v": 1, "push_id": push_id, "business_uuid": business_uuid, "decision": decision,
            "confirmed_at": now.to_rfc3339_millis()});
        let bytes = svc_core::canonical::to_signed_bytes(&payload)?;
        self.seal(svc_core::publish::release::PUSH_RELEASE_V1, &bytes)
    }

    pub fn seal_mandate(&self, mandate: &Value) -> Result<Envelope, ClientError> {
        let bytes = svc_core::canonical::to_signed_bytes(mandate)?;
        self.seal("mandate.v1", &bytes)
    }
}

/// A mandate payload (publishing section 2.4).
#[allow(clippy::too_many_arguments)]
pub fn mandate_payload(
    mandate_id: &str,
    business_uuid: &str,
    key_id: &str,
    record_types: &[String],
    countries: &[String],
    records_per_hour: u64,
    bytes_per_day: u64,
    valid_from: UnixMs,
    valid_until: UnixMs,
) -> Value {
    json!({
        "v": 1,
        "mandate_id": mandate_id,
        "business_uuid": business_uuid,
        "key_id": key_id,
        "scope": {
            "record_types": record_types,
            "countries": countries,
            "directions": ["publish"],
            "caps": {"records_per_hour": records_per_hour, "bytes_per_day": bytes_per_day},
            "source_ip_allow_list": null,
        },
        "valid_from": valid_from.to_rfc3339_secs(),
        "valid_until": valid_until.to_rfc3339_secs(),
    })
}

/// The publish body `{batch_seal, records}`.
pub fn publish_body(seal: &Envelope, records: &[Vec<u8>]) -> Vec<u8> {
    let records: Vec<String> = records.iter().map(|r| svc_core::b64::std_encode(r)).collect();
    serde_json::to_vec(&json!({"batch_seal": seal, "records": records})).unwrap_or_default()
}
