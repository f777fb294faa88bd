//! Who is asking: the seven steps of RFC 9421 verification (in `svc-core`)
//! with this node's keys and its nonce store, and the sandbox's bearer
//! token. A surface hands over the request as signed ([`Credentials`]);
//! the area's use cases (retrieval, publishing) look up the key.

use svc_core::http_sig::{self, Policy, Request, SigError, Verified};
use svc_core::keys::{Jwk, VerifyingKey};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use crate::actors::nonce_store::NonceMsg;
use crate::service::Error;

pub fn sig_error(e: SigError) -> Error {
    let code = match e {
        SigError::SignatureMissing => Code::SignatureMissing,
        SigError::SignatureInvalid => Code::SignatureInvalid,
        SigError::SignatureExpired => Code::SignatureExpired,
        SigError::KeyUnknown => Code::KeyUnknown,
        SigError::DigestMismatch => Code::DigestMismatch,
        SigError::NonceReused => Code::NonceReused,
    };
    Error::new(code)
}

/// A request as a surface received it: its signed components, and the
/// sandbox's stand-ins for a signature.
pub struct Credentials<'a> {
    /// What RFC 9421 covers: method, authority, path, query, headers, body.
    pub request: Request<'a>,
    /// The token of an `Authorization: Bearer` header, if any.
    pub bearer: Option<&'a str>,
    /// The sandbox key grant header, if any.
    pub grant: Option<&'a str>,
}

impl Credentials<'_> {
    /// The sandbox bearer token standing in for a signature: only in the
    /// sandbox, and only on a request that carries no signature. Production
    /// never looks at it.
    pub fn sandbox_bearer(&self, sandbox: bool) -> Option<&str> {
        let signed = self.request.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("signature-input"));
        if !sandbox || signed { None } else { self.bearer }
    }
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

/// Statements the statement key signed, by the digest of their bytes: a
/// public statement is signed once per change, however often it is asked
/// for. Bounded like [`JwkKeys`]; an entry never goes stale, since the
/// bytes name what was signed.
#[derive(Default)]
pub struct SignedStatements {
    signed: std::sync::Mutex<std::collections::HashMap<[u8; 32], svc_core::dsse::Envelope>>,
}

impl SignedStatements {
    const MAX: usize = 10_000;

    pub fn get_or_sign(
        &self,
        bytes: &[u8],
        sign: impl FnOnce() -> svc_core::dsse::Envelope,
    ) -> svc_core::dsse::Envelope {
        let digest = svc_core::digest::sha256(bytes);
        if let Some(found) = self.signed.lock().ok().and_then(|m| m.get(&digest).cloned()) {
            return found;
        }
        let envelope = sign();
        if let Ok(mut signed) = self.signed.lock() {
            if signed.len() >= Self::MAX {
                signed.clear();
            }
            signed.insert(digest, envelope.clone());
        }
        envelope
    }
}

/// Verifies a request's signature for `tag`, then claims its nonce, and
/// answers the key record that signed.
///
/// `lookup_key` answers the registered, usable key for a key id: its record
/// and its public key. `None` is `key_unknown` (step 4).
pub async fn verify_signed<K>(
    req: &Request<'_>,
    authority_expected: &str,
    tag: &str,
    now: UnixMs,
    nonces: &crate::actors::mailbox::Mailbox<NonceMsg>,
    lookup_key: impl FnOnce(&str) -> Option<(K, VerifyingKey)>,
) -> Result<(Verified, K), Error> {
    let policy = Policy { authority: authority_expected, tag, now_secs: now.as_secs() };
    // Step 7 (the nonce) is claimed below, after steps 1 to 6 passed here.
    let mut record = None;
    let lookup = |key_id: &str| {
        let (found, public) = lookup_key(key_id)?;
        record = Some(found);
        Some(public)
    };
    let verified = http_sig::verify(req, &policy, lookup, |_, _, _| true).map_err(sig_error)?;
    let record = record.ok_or_else(|| sig_error(SigError::KeyUnknown))?;
    let claimed = nonces
        .call(|reply| NonceMsg::Claim {
            key_id: verified.keyid.clone(),
            nonce: verified.nonce.clone(),
            expires_secs: verified.expires,
            now,
            reply,
        })
        .await?
        .map_err(|e| {
            tracing::error!(error = %e, "a nonce claim was not recorded");
            Error::retry_after(Code::Unavailable, 1_000, "the nonce store cannot record claims; ask again")
        })?;
    if !claimed {
        return Err(sig_error(SigError::NonceReused));
    }
    Ok((verified, record))
}

/// Whether `presented` is the `expected` bearer token (the operator's, or
/// the regions' replication token). Digests are compared, so the time the
/// comparison takes says nothing about the token.
pub fn token_matches(presented: Option<&str>, expected: &str) -> bool {
    use svc_core::digest::sha256_prefixed;
    presented.is_some_and(|token| sha256_prefixed(token.as_bytes()) == sha256_prefixed(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use svc_core::dsse::Envelope;
    use svc_core::keys::{Alg, SigningKey};

    use super::SignedStatements;

    // A statement asked for again is not signed again; other bytes are.
    #[test]
    fn a_statement_is_signed_once_per_change() {
        let statements = SignedStatements::default();
        let key = SigningKey::from_seed(Alg::Ed25519, &[3; 32]).unwrap();
        let signings = std::cell::Cell::new(0);
        let sign = |bytes: &[u8]| {
            signings.set(signings.get() + 1);
            Envelope::sign("t", bytes, &[&key])
        };
        let first = statements.get_or_sign(b"keys v1", || sign(b"keys v1"));
        let again = statements.get_or_sign(b"keys v1", || sign(b"keys v1"));
        assert_eq!((first, signings.get()), (again, 1));
        statements.get_or_sign(b"keys v2", || sign(b"keys v2"));
        assert_eq!(signings.get(), 2, "a change is signed anew");
    }
}
