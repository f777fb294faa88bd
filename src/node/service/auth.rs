//! Who is asking: the seven steps of RFC 9421 verification (in `svc-core`)
//! with this node's keys and its nonce store, and the sandbox's bearer
//! token. A surface hands over the request as signed ([`Credentials`]);
//! the area's use cases (retrieval, publishing) look up the key.

use svc_core::http_sig::{self, Policy, Request, SigError, Verified};
use svc_core::keys::VerifyingKey;
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use crate::actors::nonce_store::{ClaimAnswer, NonceMsg};
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
    let unverified = http_sig::prepare(req, &policy, lookup).map_err(sig_error)?;
    let record = record.ok_or_else(|| sig_error(SigError::KeyUnknown))?;
    // Step 6 in the nonce store, in one batch with the requests that queue
    // beside this one, then step 7 there: the nonce is claimed only if the
    // signature holds.
    let signed = unverified.signed().ok_or_else(|| sig_error(SigError::SignatureInvalid))?;
    let verified = unverified.judged(true).map_err(sig_error)?;
    let claimed = nonces
        .call(|reply| NonceMsg::Claim {
            key_id: verified.keyid.clone(),
            nonce: verified.nonce.clone(),
            expires_secs: verified.expires,
            now,
            signed: Some(Box::new(signed)),
            reply,
        })
        .await?
        .map_err(|e| {
            tracing::error!(error = %e, "a nonce claim was not recorded");
            Error::retry_after(Code::Unavailable, 1_000, "the nonce store cannot record claims; ask again")
        })?;
    match claimed {
        ClaimAnswer::Fresh => {}
        ClaimAnswer::Reused => return Err(sig_error(SigError::NonceReused)),
        ClaimAnswer::SignatureInvalid => return Err(sig_error(SigError::SignatureInvalid)),
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
