//! RFC 8785 (JCS) canonical JSON.
//!
//! Signed payloads must never carry an integer a verifier in another language
//! could round: [`to_signed_bytes`] refuses any number whose magnitude is
//! beyond 2^53 - 1 instead of letting the canonicaliser turn it into a float.

use serde::Serialize;
use serde_json::Value;

/// The largest integer every JSON implementation represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("integer beyond 2^53 at {0}")]
    UnsafeInteger(String),
    #[error("not representable as JSON: {0}")]
    NotJson(String),
}

/// The canonical bytes of any JSON value (numbers formatted as ECMAScript does).
pub fn canonicalize(value: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail: it has no non-string keys.
    serde_json_canonicalizer::to_vec(value).unwrap_or_default()
}

/// Canonical bytes of a value about to be signed or hashed: refuses unsafe integers.
pub fn to_signed_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let value = serde_json::to_value(value).map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    check_safe_numbers(&value, &mut String::new())?;
    Ok(canonicalize(&value))
}

/// Parses JSON text and returns its canonical form, refusing unsafe integers.
pub fn canonicalize_text(text: &[u8]) -> Result<Vec<u8>, CanonicalError> {
    let value: Value = serde_json::from_slice(text).map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    check_safe_numbers(&value, &mut String::new())?;
    Ok(canonicalize(&value))
}

/// Walks a value and refuses any number of magnitude above 2^53 - 1, reporting
/// its JSON pointer.
pub fn check_safe_numbers(value: &Value, pointer: &mut String) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            let safe = if let Some(u) = n.as_u64() {
                u <= MAX_SAFE_INTEGER
            } else if let Some(i) = n.as_i64() {
                i.unsigned_abs() <= MAX_SAFE_INTEGER
            } else {
                n.as_f64().is_some_and(|f| f.abs() <= MAX_SAFE_INTEGER as f64)
            };
            if safe { Ok(()) } else { Err(CanonicalError::UnsafeInteger(pointer.clone())) }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                check_safe_numbers(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(key));
                check_safe_numbers(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// RFC 6901 escaping of one reference token.
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// `sha256:` + hex of the canonical form of a value.
pub fn canonical_hash<T: Serialize + ?Sized>(value: &T) -> Result<String, CanonicalError> {
    Ok(crate::digest::sha256_prefixed(&to_signed_bytes(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_integers_beyond_two_to_the_53() {
        assert!(to_signed_bytes(&json!({"seq": 9007199254740991u64})).is_ok());
        let err = to_signed_bytes(&json!({"a": [1, {"seq": 9007199254740992u64}]})).unwrap_err();
        assert_eq!(err, CanonicalError::UnsafeInteger("/a/1/seq".into()));
        assert!(to_signed_bytes(&json!({"n": -9007199254740992i64})).is_err());
        // Parsed text: a literal too large for u64 arrives as a float and is still refused.
        assert!(canonicalize_text(br#"{"seq":123456789012345680000}"#).is_err());
        assert!(canonicalize_text(br#"{"price":19.99}"#).is_ok());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
    }
}
