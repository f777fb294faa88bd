//! The public documents about a business and the service's formats
//! (publishing 2.6, 4.2): certificates,
//! business keys with the signed `business-keys.v1` statement, key custody,
//! projection specifications and the AI policy key.

use serde_json::{Value, json};
use svc_core::dsse::{Envelope, payload_type};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use crate::region::parts::{HasClock, HasConfig, HasKeys, HasRegistry, HasSignedStatements};
use crate::service::{Error, Result};
pub use svc_store::model::Business;
use svc_store::model::{BusinessKey, CertificateIssuance};

/// Certificates and key lists change when an operator acts; five minutes
/// of caching keeps a CDN useful and a change visible soon.
pub const DOCUMENT_MAX_AGE: u32 = 300;
/// Projection specifications and the AI policy key are pinned by hash or
/// version: a day (P2.6.47).
pub const FORMAT_MAX_AGE: u32 = 86_400;

/// The issuance's signed payload (the certificate itself).
fn payload(issuance: &CertificateIssuance) -> Result<Value> {
    let envelope = Envelope::parse(&issuance.envelope).map_err(Error::internal)?;
    let bytes = envelope.payload_bytes().map_err(Error::internal)?;
    serde_json::from_slice(&bytes).map_err(Error::internal)
}

fn issuance_value(issuance: &CertificateIssuance) -> Result<Value> {
    let mut value = json!({
        "cert_id": issuance.cert_id,
        "status": issuance.status.as_str(),
        "status_effective_from": issuance.status_effective_from.to_rfc3339_secs(),
        "issued_at": issuance.issued_at.to_rfc3339_millis(),
        "certificate": serde_json::from_slice::<Value>(&issuance.envelope).map_err(Error::internal)?,
    });
    if let Some(reason) = &issuance.status_reason {
        value["status_reason"] = json!(reason);
    }
    Ok(value)
}

/// The certificate response: the issuance in force now, every earlier one
/// newest first. `None` for a uuid that is not a business's.
/// Whom a certificate names, as its page shows them.
pub struct Certified {
    /// `business` or `ai_company`.
    pub subject: &'static str,
    pub name: String,
    /// A business's country; an AI company's certificate names none.
    pub country: Option<String>,
}

fn certified(state: &impl HasRegistry, uuid: &str) -> Result<Option<Certified>> {
    if let Some(b) = state.registry().business(uuid)? {
        let country = Some(b.country);
        return Ok(Some(Certified { subject: "business", name: b.legal_name, country }));
    }
    Ok(state.registry().company(uuid)?.map(|c| Certified { subject: "ai_company", name: c.name, country: None }))
}

pub fn certificate_document(state: &impl HasRegistry, uuid: &str, now: UnixMs) -> Result<Option<(Certified, Value)>> {
    let Some(subject) = certified(state, uuid)? else { return Ok(None) };
    let mut history = state.registry().certificates(uuid)?;
    let Some(current) = state.registry().certificate_in_force(uuid, now)? else { return Ok(None) };
    // Earlier issuances only: a change issued later, not yet in force, is not history.
    history.retain(|c| c.cert_id != current.cert_id && c.issued_at <= current.issued_at);
    history.sort_by_key(|c| std::cmp::Reverse(c.issued_at));
    let mut document = issuance_value(&current)?;
    document["subject"] = json!(subject.subject);
    document["statement"] = payload(&current)?.get("statement").cloned().unwrap_or(Value::Null);
    document["history"] = Value::Array(history.iter().map(issuance_value).collect::<Result<_>>()?);
    Ok(Some((subject, document)))
}

/// A key as the statement lists it; a passkey names the relying party it
/// signs for, so an offline checker can judge its assertions.
fn key_value(key: &BusinessKey, relying_party: &Value) -> Value {
    let passkey = key.kind == svc_store::model::KeyKind::Passkey;
    let jwk: Value = serde_json::from_slice(&key.jwk).unwrap_or(Value::Null);
    let cose = serde_json::from_value(jwk.clone())
        .ok()
        .and_then(|jwk| svc_core::keys::VerifyingKey::from_jwk(&jwk).ok())
        .filter(|_| passkey)
        .and_then(|k| k.cose_key())
        .map(|c| svc_core::b64::std_encode(&c));
    let mut value = json!({
        "key_id": key.key_id,
        "purpose": key.purpose,
        "kind": key.kind,
        "jwk": jwk,
        "cose": cose,
        "valid_from": key.valid_from.to_rfc3339_secs(),
        "valid_until": key.valid_until.map(UnixMs::to_rfc3339_secs),
        "revocation_effective_from": key.revocation_effective_from.map(UnixMs::to_rfc3339_secs),
    });
    if passkey {
        value["relying_party"] = relying_party.clone();
    }
    value
}

/// Every key of the business and the statement key's signed
/// `business-keys.v1` over them (the part to trust).
pub fn business_keys<R>(state: &R, uuid: &str) -> Result<Value>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasSignedStatements,
{
    let now = state.clock().now();
    state.registry().business(uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let cert = state.registry().certificate_in_force(uuid, now)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let registered = state.registry().business_keys(uuid)?;
    let party = json!({"id": state.config().passkey_rp_id, "origin": state.config().passkey_origin});
    let keys: Vec<Value> = registered.iter().map(|k| key_value(k, &party)).collect();
    // The statement is issued as at the newest change it covers, so the same
    // keys give the same bytes (and ETag) whenever they are asked for.
    let issued_at = registered
        .iter()
        .map(|k| k.registered_at.max(k.revocation_effective_from.unwrap_or(UnixMs(0))))
        .chain([cert.issued_at])
        .max()
        .unwrap_or(cert.issued_at);
    let statement = json!({"v": 1, "uuid": uuid, "cert_id": cert.cert_id, "issued_at": issued_at.to_rfc3339_millis(),
        "keys": keys});
    let bytes = svc_core::canonical::to_signed_bytes(&statement).map_err(Error::internal)?;
    // Signed once per change: the same keys give the same statement bytes,
    // and unauthenticated callers asking again cost a lookup, not a signature.
    let signed = state
        .signed_statements()
        .get_or_sign(&bytes, || state.keys().statement_key().sign(&payload_type("business-keys.v1"), &bytes));
    let document = json!({
        "uuid": uuid,
        "cert_id": cert.cert_id,
        "issued_at": issued_at.to_rfc3339_millis(),
        "keys": statement["keys"],
        "signed": signed,
    });
    Ok(document)
}

/// Every custody statement of the business, newest first, and the keys no
/// statement covers (`unstated`).
pub fn key_custody(state: &impl HasRegistry, uuid: &str) -> Result<Value> {
    state.registry().business(uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let mut statements = state.registry().custody_statements(uuid)?;
    statements.sort_by(|a, b| (b.issued_at, &b.statement_id).cmp(&(a.issued_at, &a.statement_id)));
    let listed: Vec<Value> = statements
        .iter()
        .map(|s| {
            Ok(json!({
                "key_id": s.key_id,
                "custody": s.custody,
                "effective_from": s.effective_from.to_rfc3339_millis(),
                "issued_at": s.issued_at.to_rfc3339_millis(),
                "statement_id": s.statement_id,
                "statement": serde_json::from_slice::<Value>(&s.envelope).map_err(Error::internal)?,
            }))
        })
        .collect::<Result<_>>()?;
    let unstated: Vec<String> = state
        .registry()
        .business_keys(uuid)?
        .into_iter()
        .filter(|k| !statements.iter().any(|s| s.key_id == k.key_id))
        .map(|k| k.key_id)
        .collect();
    Ok(json!({"uuid": uuid, "statements": listed, "unstated": unstated}))
}

/// A pinned projection specification.
pub fn projection(kind: &str, version: &str) -> Result<&'static Value> {
    let spec = svc_core::ids::RecordType::from_name(kind)
        .and_then(|kind| svc_core::projection::spec_by_version(kind, version));
    spec.map(|s| s.document()).ok_or_else(|| Error::detail(Code::NotFound, "no projection of that type and version"))
}

/// What each AI policy bit means.
pub fn ai_policy_key() -> Value {
    svc_core::ai_policy::key_document()
}
