//! Request signatures: the seven steps of RFC 9421 verification (in
//! `svc-core`) with this node's keys and its nonce store.

use axum::http::request::Parts;
use ractor::ActorRef;
use svc_core::http_sig::{self, Policy, Request, SigError, Verified};
use svc_core::keys::{Jwk, VerifyingKey};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use super::problem::ApiError;
use crate::actors::nonce_store::NonceMsg;

pub fn sig_error(e: SigError) -> ApiError {
    let code = match e {
        SigError::SignatureMissing => Code::SignatureMissing,
        SigError::SignatureInvalid => Code::SignatureInvalid,
        SigError::SignatureExpired => Code::SignatureExpired,
        SigError::KeyUnknown => Code::KeyUnknown,
        SigError::DigestMismatch => Code::DigestMismatch,
        SigError::NonceReused => Code::NonceReused,
    };
    ApiError::new(code)
}

/// The host a request addressed: `Host`, else the URI's authority.
pub fn authority(parts: &Parts) -> String {
    parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_default()
}

/// The sandbox bearer token standing in for a signature: only in the
/// sandbox, and only on a request that carries no signature. Production
/// never looks at it.
pub fn sandbox_bearer(sandbox: bool, headers: &axum::http::HeaderMap) -> Option<&str> {
    if !sandbox || headers.contains_key("signature-input") {
        return None;
    }
    headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

/// A JWK stored as JSON bytes, as a verifying key.
pub fn key_from_jwk(jwk: &[u8]) -> Option<VerifyingKey> {
    let jwk: Jwk = serde_json::from_slice(jwk).ok()?;
    VerifyingKey::from_jwk(&jwk).ok()
}

/// Verifying keys by their stored JWK text, for the signed routes. A JWK
/// names one key for good, so an entry never goes stale: whether the key
/// may sign is still read from its record on every request. Parsing the
/// JWK and decompressing its point was 2% of a loaded node's CPU.
#[derive(Default)]
pub struct JwkKeys {
    parsed: std::sync::Mutex<std::collections::HashMap<Vec<u8>, VerifyingKey>>,
}

impl JwkKeys {
    /// Entries held before the map starts over (keys in use come back).
    const MAX: usize = 10_000;

    pub fn get(&self, jwk: &[u8]) -> Option<VerifyingKey> {
        if let Some(key) = self.parsed.lock().ok()?.get(jwk) {
            return Some(key.clone());
        }
        let key = key_from_jwk(jwk)?;
        let mut parsed = self.parsed.lock().ok()?;
        if parsed.len() >= Self::MAX {
            parsed.clear();
        }
        parsed.insert(jwk.to_vec(), key.clone());
        Some(key)
    }
}

/// Verifies a request's signature for `tag`, then claims its nonce, and
/// answers the key record that signed.
///
/// `lookup_key` answers the registered, usable key for a key id: its record
/// and its public key. `None` is `key_unknown` (step 4).
pub async fn verify_signed<K>(
    parts: &Parts,
    body: &[u8],
    authority_expected: &str,
    tag: &str,
    now: UnixMs,
    nonces: &ActorRef<NonceMsg>,
    lookup_key: impl FnOnce(&str) -> Option<(K, VerifyingKey)>,
) -> Result<(Verified, K), ApiError> {
    let headers: Vec<(&str, &str)> =
        parts.headers.iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))).collect();
    let authority = authority(parts);
    let req = Request {
        method: parts.method.as_str(),
        authority: &authority,
        path: parts.uri.path(),
        query: parts.uri.query(),
        headers: &headers,
        body,
    };
    let policy = Policy { authority: authority_expected, tag, now_secs: now.as_secs() };
    // Step 7 (the nonce) is claimed below, after steps 1 to 6 passed here.
    let mut record = None;
    let lookup = |key_id: &str| {
        let (found, public) = lookup_key(key_id)?;
        record = Some(found);
        Some(public)
    };
    let verified = http_sig::verify(&req, &policy, lookup, |_, _, _| true).map_err(sig_error)?;
    let record = record.ok_or_else(|| sig_error(SigError::KeyUnknown))?;
    let claimed = ractor::call!(nonces, |reply| NonceMsg::Claim {
        key_id: verified.keyid.clone(),
        nonce: verified.nonce.clone(),
        expires_secs: verified.expires,
        now,
        reply,
    })
    .map_err(|e| ApiError::internal(format!("nonce store: {e}")))?;
    if !claimed {
        return Err(sig_error(SigError::NonceReused));
    }
    Ok((verified, record))
}
