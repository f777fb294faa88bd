//! SHA-256 forms: the `sha256:<hex>` identifier form and RFC 9530 `Content-Digest`.

use sha2::{Digest, Sha256};

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

/// `sha256:` followed by 64 lowercase hex digits.
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// The spec's `Sha256` form: `^sha256:[0-9a-f]{64}$`.
pub fn is_sha256_form(text: &str) -> bool {
    parse_sha256_form(text).is_some()
}

/// The 32 bytes named by a `sha256:<hex>` string, if it has exactly that form.
pub fn parse_sha256_form(text: &str) -> Option<[u8; 32]> {
    let hex_part = text.strip_prefix("sha256:")?;
    if hex_part.len() != 64 || !hex_part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_part, &mut out).ok()?;
    Some(out)
}

/// RFC 9530 `Content-Digest` value for a body: `sha-256=:<base64>:`.
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-256=:{}:", crate::b64::std_encode(&sha256(body)))
}

/// Whether a received `Content-Digest` header names the SHA-256 of `body`.
///
/// The header is an RFC 8941 dictionary; only its `sha-256` member is judged,
/// and a header without one does not match (we never trust a weaker digest).
pub fn content_digest_matches(header: &str, body: &[u8]) -> bool {
    use sfv::{Dictionary, ListEntry, Parser};
    let Ok(dict) = Parser::new(header).parse::<Dictionary>() else {
        return false;
    };
    let expected = sha256(body);
    dict.iter().any(|(name, entry)| {
        name.as_str() == "sha-256"
            && matches!(entry, ListEntry::Item(item)
                if item.bare_item.as_byte_sequence() == Some(expected.as_slice()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_form() {
        let h = sha256_prefixed(b"");
        assert_eq!(h, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert!(is_sha256_form(&h));
        assert!(!is_sha256_form(&h.to_uppercase()));
        assert!(!is_sha256_form("sha256:abc"));
    }

    // rule: R5.16
    #[test]
    fn content_digest_matches_only_the_same_body() {
        let header = content_digest(b"{\"q\":\"*\"}");
        assert!(content_digest_matches(&header, b"{\"q\":\"*\"}"));
        assert!(!content_digest_matches(&header, b"{\"q\":\"x\"}"));
        assert!(!content_digest_matches("sha-512=:AAAA:", b""));
        assert!(!content_digest_matches("garbage", b""));
        let both = format!("sha-512=:AAAA:, {header}");
        assert!(content_digest_matches(&both, b"{\"q\":\"*\"}"));
    }
}
