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

/// Values derived from bytes that name them for good, kept so the work is
/// done once: such an entry never goes stale. At most 10,000 are held;
/// past that the map starts over (values in use come back).
pub struct Memo<K, V> {
    made: std::sync::Mutex<std::collections::HashMap<K, V>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo { made: std::sync::Mutex::default() }
    }
}

impl<K: Eq + std::hash::Hash, V: Clone> Memo<K, V> {
    const MAX: usize = 10_000;

    pub fn get_or_make<Q>(&self, key: &Q, make: impl FnOnce() -> V) -> V
    where
        K: std::borrow::Borrow<Q>,
        Q: ToOwned<Owned = K> + Eq + std::hash::Hash + ?Sized,
    {
        // A poisoned lock only means another caller panicked mid-insert;
        // the map is still a map.
        let lock = || self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = lock().get(key) {
            return found.clone();
        }
        let value = make();
        let mut made = lock();
        if made.len() >= Self::MAX {
            made.clear();
        }
        made.insert(key.to_owned(), value.clone());
        value
    }
}

/// Verifying keys by their stored JWK text, for the signed routes. A JWK
/// names one key for good (or none, if it does not parse): whether the key
/// may sign is still read from its record on every request. Parsing the
/// JWK and decompressing its point was 2% of a loaded node's CPU.
#[derive(Default)]
pub struct JwkKeys(Memo<Vec<u8>, Option<VerifyingKey>>);

impl JwkKeys {
    pub fn get(&self, jwk: &[u8]) -> Option<VerifyingKey> {
        self.0.get_or_make(jwk, || key_from_jwk(jwk))
    }
}

/// Statements the statement key signed, by the digest of their bytes: a
/// public statement is signed once per change, however often it is asked
/// for, since the bytes name what was signed.
#[derive(Default)]
pub struct SignedStatements(Memo<[u8; 32], svc_core::dsse::Envelope>);

impl SignedStatements {
    pub fn get_or_sign(
        &self,
        bytes: &[u8],
        sign: impl FnOnce() -> svc_core::dsse::Envelope,
    ) -> svc_core::dsse::Envelope {
        self.0.get_or_make(&svc_core::digest::sha256(bytes), sign)
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

/// Whether `presented` is the `expected` bearer token (the operator's).
/// Digests are compared, so the time the comparison takes says nothing
/// about the token.
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
