//! Pinned root anchors: the two root keys (P-256 and ML-DSA-65) a caller
//! trusts the key set under, kept in a JSON file
//! (`svc client keys --anchors-out`).

use std::path::Path;

use serde_json::{Value, json};
use svc_core::keys::{Jwk, VerifyingKey};
use svc_core::keyset::RootAnchors;

use super::ClientError;

/// Reads pinned anchors.
pub fn read(path: &Path) -> Result<RootAnchors, ClientError> {
    let bytes = std::fs::read(path).map_err(|source| ClientError::Io { path: path.to_owned(), source })?;
    let pinned: Value = serde_json::from_slice(&bytes)
        .map_err(|source| ClientError::KeyFileFormat { path: path.to_owned(), source })?;
    let key = |name: &str| -> Result<VerifyingKey, ClientError> {
        let anchor =
            |detail: String| ClientError::Anchor { path: path.to_owned(), detail: format!("{name}: {detail}") };
        let jwk: Jwk = serde_json::from_value(pinned[name].clone()).map_err(|e| anchor(e.to_string()))?;
        VerifyingKey::from_jwk(&jwk).map_err(|e| anchor(e.to_string()))
    };
    Ok(RootAnchors { classical: key("classical")?, post_quantum: key("post_quantum")? })
}

/// The file's JSON for `anchors`.
pub fn document(anchors: &RootAnchors) -> Value {
    json!({"classical": anchors.classical.to_jwk(), "post_quantum": anchors.post_quantum.to_jwk()})
}
