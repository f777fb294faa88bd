//! JSON answers written member by member, so stored JSON text (sealed
//! records, signed rows, envelopes) goes in verbatim, never parsed and
//! re-serialised.

use serde::Serialize;

use crate::service::{Error, Result};

/// A JSON object being written.
pub struct RawObject(Vec<u8>);

impl Default for RawObject {
    fn default() -> Self {
        Self::new()
    }
}

impl RawObject {
    pub fn new() -> Self {
        RawObject(b"{".to_vec())
    }

    pub fn key(&mut self, name: &str) {
        if self.0.len() > 1 {
            self.0.push(b',');
        }
        self.0.extend_from_slice(&serde_json::to_vec(name).unwrap_or_default());
        self.0.push(b':');
    }

    /// JSON text as stored (a record, a seal, an envelope).
    pub fn raw(&mut self, name: &str, json_text: &[u8]) {
        self.key(name);
        self.0.extend_from_slice(json_text);
    }

    pub fn value(&mut self, name: &str, value: &impl Serialize) -> Result<()> {
        self.key(name);
        serde_json::to_writer(&mut self.0, value).map_err(Error::internal)
    }

    /// An array of JSON texts as stored (signed rows).
    pub fn raw_array<'a>(&mut self, name: &str, items: impl IntoIterator<Item = &'a [u8]>) {
        self.key(name);
        self.0.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.0.push(b',');
            }
            self.0.extend_from_slice(item);
        }
        self.0.push(b']');
    }

    /// The object's text, closed.
    pub fn close(mut self) -> Vec<u8> {
        self.0.push(b'}');
        self.0
    }
}
