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
///
/// Written here over `serde_json::Value` rather than through a generic JCS
/// serializer: that one re-parsed every object key and buffered every member,
/// which made it most of the cost of signing a sidecar.
pub fn canonicalize(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // RFC 8785 §3.2.3 orders keys by UTF-16 code units. UTF-8 byte
            // order agrees for ASCII keys, which is nearly every key.
            if members.iter().all(|(k, _)| k.is_ascii()) {
                if !members.is_sorted_by_key(|m| m.0) {
                    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                }
            } else {
                members.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            }
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

/// ECMAScript `Number.prototype.toString` (RFC 8785 §3.2.2.3). Integers
/// within 2^53 print as themselves; anything else goes through the double.
fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) {
    let exact = n
        .as_u64()
        .filter(|u| *u <= MAX_SAFE_INTEGER)
        .map(|u| u as i128)
        .or_else(|| n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER).map(|i| i as i128));
    match exact {
        Some(i) => out.extend_from_slice(i.to_string().as_bytes()),
        None => {
            let float = n.as_f64().filter(|f| f.is_finite()).unwrap_or(0.0);
            out.extend_from_slice(ryu_js::Buffer::new().format_finite(float).as_bytes());
        }
    }
}

/// RFC 8785 §3.2.2.2 string escaping, which is exactly serde_json's: the two
/// short escapes for `"` and `\\`, `\b \f \n \r \t`, other controls as
/// lowercase `\u00xx`, everything else literal.
fn write_string(text: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Canonical bytes of a value about to be signed or hashed: refuses unsafe integers.
pub fn to_signed_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let value = serde_json::to_value(value).map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    check_safe_numbers(&value)?;
    Ok(canonicalize(&value))
}

/// Parses JSON text and returns its canonical form, refusing unsafe integers.
pub fn canonicalize_text(text: &[u8]) -> Result<Vec<u8>, CanonicalError> {
    let value: Value = serde_json::from_slice(text).map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    check_safe_numbers(&value)?;
    Ok(canonicalize(&value))
}

/// Refuses any number of magnitude above 2^53 - 1, reporting its JSON pointer.
pub fn check_safe_numbers(value: &Value) -> Result<(), CanonicalError> {
    match unsafe_number_path(value) {
        None => Ok(()),
        Some(mut tokens) => {
            tokens.reverse();
            Err(CanonicalError::UnsafeInteger(tokens.iter().map(|t| format!("/{}", escape_pointer_token(t))).collect()))
        }
    }
}

/// The reference tokens (innermost first) of the first unsafe number; the
/// pointer is built only when one is found.
fn unsafe_number_path(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Number(n) => {
            let safe = if let Some(u) = n.as_u64() {
                u <= MAX_SAFE_INTEGER
            } else if let Some(i) = n.as_i64() {
                i.unsigned_abs() <= MAX_SAFE_INTEGER
            } else {
                n.as_f64().is_some_and(|f| f.abs() <= MAX_SAFE_INTEGER as f64)
            };
            if safe { None } else { Some(Vec::new()) }
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            unsafe_number_path(item).map(|mut tokens| {
                tokens.push(i.to_string());
                tokens
            })
        }),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            unsafe_number_path(item).map(|mut tokens| {
                tokens.push(key.clone());
                tokens
            })
        }),
        _ => None,
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
