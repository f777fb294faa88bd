//! Secrets kept or sent wrapped: AES-256-GCM under a 32-byte key, the
//! nonce before the ciphertext, and what the secret is for as associated
//! data, so a wrapped secret opens only under its key and for its purpose
//! (the conversation secret on one region's link, a seed in the store).
//! Pure: the nonce is passed in.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};

/// A nonce's length; a wrapped secret is this, then the ciphertext and tag.
pub const NONCE_LEN: usize = 12;

/// `secret` wrapped under `key` for `purpose`, with `nonce` (never used
/// twice with one key: draw it at random).
pub fn wrap(key: &[u8; 32], purpose: &[u8], nonce: [u8; NONCE_LEN], secret: &[u8]) -> Vec<u8> {
    let cipher = Aes256Gcm::new(key.into());
    let sealed = cipher
        .encrypt(&Nonce::from(nonce), Payload { msg: secret, aad: purpose })
        .expect("AES-GCM encrypts any message under 64 GiB");
    [nonce.as_slice(), &sealed].concat()
}

/// The secret `wrapped` holds, if it was wrapped under `key` for `purpose`
/// and not changed since.
pub fn unwrap(key: &[u8; 32], purpose: &[u8], wrapped: &[u8]) -> Option<Vec<u8>> {
    let (nonce, sealed) = (wrapped.get(..NONCE_LEN)?, wrapped.get(NONCE_LEN..)?);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
    Aes256Gcm::new(key.into()).decrypt(&Nonce::from(nonce), Payload { msg: sealed, aad: purpose }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_secret_opens_only_under_its_key_for_its_purpose() {
        let wrapped = wrap(&[1; 32], b"eu", [7; NONCE_LEN], b"the secret");
        assert!(!wrapped.windows(10).any(|w| w == b"the secret"), "not in clear");
        assert_eq!(unwrap(&[1; 32], b"eu", &wrapped).as_deref(), Some(&b"the secret"[..]));
        assert_eq!(unwrap(&[2; 32], b"eu", &wrapped), None, "another key");
        assert_eq!(unwrap(&[1; 32], b"ap", &wrapped), None, "another purpose");
        let mut changed = wrapped.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(unwrap(&[1; 32], b"eu", &changed), None, "changed");
        assert_eq!(unwrap(&[1; 32], b"eu", &wrapped[..5]), None, "cut short");
    }
}
