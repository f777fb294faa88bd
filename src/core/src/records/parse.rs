//! Parsing a record's bytes into a `serde_json::Value` while noticing what
//! serde_json would hide: a duplicate member name (serde_json silently keeps
//! the last one, so two readers could see two different records) and a number
//! no other language reads exactly (magnitude beyond 2^53 - 1).
//!
//! Parsing goes on after such a finding so that every reason is reported.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{ErrorCode, RecordError};
use crate::canonical::{MAX_SAFE_INTEGER, escape_pointer_token};

/// Parses `bytes`; `None` (with a `record_malformed` error) when they are not
/// UTF-8 JSON. Duplicates and unsafe numbers are added to `errors`.
pub(super) fn parse(bytes: &[u8], errors: &mut Vec<RecordError>) -> Option<Value> {
    if let Err(e) = std::str::from_utf8(bytes) {
        let detail = format!("not UTF-8 (invalid byte at offset {})", e.valid_up_to());
        errors.push(RecordError::new(ErrorCode::RecordMalformed, "", detail));
        return None;
    }
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed =
        Seed { pointer: String::new(), found: &found }.deserialize(&mut de).and_then(|value| de.end().map(|()| value));
    match parsed {
        Ok(value) => {
            errors.extend(found.into_inner());
            Some(value)
        }
        Err(e) => {
            errors.push(RecordError::new(ErrorCode::RecordMalformed, "", format!("not JSON: {e}")));
            None
        }
    }
}

/// Builds a `Value` for the member at `pointer`, recording findings in `found`.
struct Seed<'f> {
    pointer: String,
    found: &'f RefCell<Vec<RecordError>>,
}

impl Seed<'_> {
    fn unsafe_number(&self) {
        let detail = "number beyond 2^53 - 1 in magnitude";
        self.found.borrow_mut().push(RecordError::new(ErrorCode::RecordMalformed, self.pointer.clone(), detail));
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        // serde_json's own depth limit (128) bounds the recursion.
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            self.unsafe_number();
        }
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        if v > MAX_SAFE_INTEGER {
            self.unsafe_number();
        }
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // An integer literal too large for u64 arrives here as a float.
        if !v.is_finite() || v.abs() > MAX_SAFE_INTEGER as f64 {
            self.unsafe_number();
        }
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let pointer = format!("{}/{}", self.pointer, items.len());
            match seq.next_element_seed(Seed { pointer, found: self.found })? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let pointer = format!("{}/{}", self.pointer, escape_pointer_token(&key));
            let value = access.next_value_seed(Seed { pointer: pointer.clone(), found: self.found })?;
            if map.contains_key(&key) {
                let detail = format!("duplicate member name {key:?}");
                self.found.borrow_mut().push(RecordError::new(ErrorCode::RecordMalformed, pointer, detail));
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}
