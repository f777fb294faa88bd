//! Opaque page cursors for the catalogue, push attempts and push results.
//!
//! A cursor is base64url (no padding) of the JSON `{"v":1,"p":position}`. The
//! position is the caller's own key (a record id, a leaf index, an attempt
//! key); the version lets the form change without misreading old cursors.
//! Cursors are not secret or signed: each read is scoped to the caller's own
//! business anyway, so a forged cursor only moves within what it may see.
//!
//! A cursor over 512 characters (P4.1.10) or one that does not decode is
//! refused, never guessed at. Positions should stay under about 360 bytes so
//! their cursor fits.

use serde::{Deserialize, Serialize};

use crate::b64;

/// The longest cursor accepted (P4.1.10).
pub const MAX_CURSOR: usize = 512;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    v: u64,
    p: String,
}

/// The cursor for a position.
pub fn encode(position: &str) -> String {
    let body = Body { v: 1, p: position.to_owned() };
    // A struct of a number and a string always serialises.
    b64::url_encode(&serde_json::to_vec(&body).unwrap_or_default())
}

/// The position a cursor names, or `None` when it is too long, not base64url,
/// or not a cursor of this version.
pub fn decode(cursor: &str) -> Option<String> {
    if cursor.is_empty() || cursor.len() > MAX_CURSOR {
        return None;
    }
    let bytes = b64::url_decode(cursor)?;
    // A cursor is always an object; serde would also read a struct from an array.
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let body: Body = serde_json::from_slice(&bytes).ok()?;
    (body.v == 1).then_some(body.p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // rule: P4.1.10
    #[test]
    fn round_trips_and_is_opaque() {
        for position in ["", "svc_5cgnjqct4zat4oeqlfuxmnkc3y", "42", "2026-11-01T12:00:00Z|bat_00|7", "é\"\\/"] {
            let cursor = encode(position);
            assert!(cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{cursor}");
            assert_eq!(decode(&cursor).as_deref(), Some(position));
        }
    }

    // rule: P4.1.10
    #[test]
    fn over_512_characters_is_refused() {
        let fits = "x".repeat(370);
        assert!(encode(&fits).len() <= MAX_CURSOR);
        assert_eq!(decode(&encode(&fits)), Some(fits));
        let long = "x".repeat(400);
        assert!(encode(&long).len() > MAX_CURSOR);
        assert_eq!(decode(&encode(&long)), None);
        assert_eq!(decode(&"A".repeat(513)), None);
    }

    #[test]
    fn undecodable_cursors_are_refused() {
        assert_eq!(decode(""), None);
        assert_eq!(decode("!!!"), None);
        assert_eq!(decode(&b64::url_encode(b"42")), None);
        assert_eq!(decode(&b64::url_encode(br#"{"v":2,"p":"x"}"#)), None);
        assert_eq!(decode(&b64::url_encode(br#"{"v":1,"p":"x","q":1}"#)), None);
        assert_eq!(decode(&b64::url_encode(br#"[1,"x"]"#)), None);
        // Padded or standard-alphabet forms are not this cursor's spelling.
        let padded = format!("{}=", encode("ab"));
        assert_eq!(decode(&padded), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn decode_never_panics(text in ".{0,600}", bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&text);
            let _ = decode(&b64::url_encode(&bytes));
        }

        #[test]
        fn every_short_position_round_trips(position in ".{0,100}") {
            prop_assert_eq!(decode(&encode(&position)), Some(position));
        }
    }
}
