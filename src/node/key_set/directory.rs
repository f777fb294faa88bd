//! The key directory (publishing 2.6; its path is ours, P-NS-7): the live
//! retrieval keys of verified AI companies that opted in, while their
//! certificate is active, with `statement`, a `key-directory.v1` envelope
//! signed by the statement key (P-256 and ML-DSA-65) over `{v, issued_at,
//! companies}`. Home builds and signs it whenever what it covers changes
//! (and hourly, for a status issued for later), and it replicates: every
//! region serves the same signed document, and a client checks it offline.

use serde_json::{Value, json};
use svc_core::dsse::payload_type;
use svc_core::seal::CertificateStatus;
use svc_core::time::UnixMs;

use crate::registry::Registry;
use crate::replication::Change;
use crate::service_keys::ServiceKeys;
use svc_store::model::{Environment, RetrievalKey};
use svc_store::{Store, StoreResult, cf};

/// Where every region serves it.
pub const PATH: &str = "/v1/key-directory";
/// Its key in `key_set`: the signed document, as JSON.
pub const DOCUMENT: &[u8] = svc_store::keys::key_set::DIRECTORY;

/// What a directory is of: this deployment's environment (its keys), and
/// where its certificates are read (`certificate_url`).
#[derive(Debug, Clone)]
pub struct Scope {
    pub environment: Environment,
    pub verify_base: String,
}

/// How a key came to the directory: registered with the service by the
/// company (through the operator or, later, the AI-company portal).
const SOURCE: &str = "registration";

fn listed_key(key: &RetrievalKey) -> Option<Value> {
    let jwk: Value = serde_json::from_slice(&key.jwk).ok()?;
    let public = svc_core::keys::VerifyingKey::from_jwk(&serde_json::from_value(jwk.clone()).ok()?).ok()?;
    Some(json!({
        "key_id": key.key_id,
        "alg": public.alg().as_str(),
        "public_key": jwk,
        "source": SOURCE,
        "valid_from": key.registered_at.to_rfc3339_secs(),
        "valid_until": Value::Null,
    }))
}

/// The companies listed now, in uuid order, each with its live keys.
pub fn companies(registry: &Registry, scope: &Scope, now: UnixMs) -> StoreResult<Value> {
    let mut keys = registry.retrieval_keys()?;
    keys.retain(|k| k.revoked_at.is_none() && k.environment == scope.environment);
    let verify_base = scope.verify_base.trim_end_matches('/');
    let mut companies = Vec::new();
    for (uuid, _) in registry.directory_listings()? {
        let Some(company) = registry.company(&uuid)?.filter(|c| c.verified) else { continue };
        let active = registry.certificate_in_force(&uuid, now)?.is_some_and(|c| c.status == CertificateStatus::Active);
        if !active {
            continue;
        }
        let listed: Vec<Value> = keys.iter().filter(|k| k.company_uuid == uuid).filter_map(listed_key).collect();
        companies.push(json!({
            "ai_company_uuid": uuid,
            "name": company.name,
            "certificate_url": format!("{verify_base}/v1/certificates/{uuid}"),
            "keys": listed,
        }));
    }
    Ok(Value::Array(companies))
}

/// The document served now, if home has signed one.
pub fn document(store: &Store) -> StoreResult<Option<String>> {
    store.get(cf::key_set::DIRECTORY, DOCUMENT)
}

/// A change writing a newly signed document when the companies differ
/// from the signed one's; `None` when nothing changed.
pub fn renewal(store: &Store, keys: &ServiceKeys, companies: Value, now: UnixMs) -> StoreResult<Option<Change>> {
    let signed: Option<Value> = document(store)?.and_then(|d| serde_json::from_str(&d).ok());
    let key = keys.statement_key();
    let key_ids = [key.classical.verifying_key().thumbprint(), key.post_quantum.verifying_key().thumbprint()];
    // Signed again when what it lists changed, or the statement key did
    // (a retired key's signature stops verifying once the key is ended).
    let by_current_key = |d: &Value| {
        let signatures = d["statement"]["signatures"].as_array().cloned().unwrap_or_default();
        key_ids.iter().all(|id| signatures.iter().any(|s| s["keyid"] == id.as_str()))
    };
    if signed.as_ref().is_some_and(|d| d["companies"] == companies && by_current_key(d)) {
        return Ok(None);
    }
    let payload = json!({"v": 1, "issued_at": now.to_rfc3339_millis(), "companies": companies});
    let Ok(bytes) = svc_core::canonical::to_signed_bytes(&payload) else { return Ok(None) };
    let statement = key.sign(&payload_type("key-directory.v1"), &bytes);
    let mut document = payload;
    document["statement"] = json!(statement);
    let mut change = Change::new();
    change.put(cf::key_set::DIRECTORY, DOCUMENT, &document.to_string());
    Ok(Some(change))
}
