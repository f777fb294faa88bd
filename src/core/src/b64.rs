//! Base64 forms used by the spec: standard with padding (DSSE, Content-Digest)
//! and URL-safe without padding (JWK members, nonces, thumbprints).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

pub fn std_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Strict standard base64: padding required, no whitespace.
pub fn std_decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

pub fn url_encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn url_decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}
