//! The public use cases (publishing 2.6, 4.2): no caller to authenticate,
//! nothing billed. The key set, certificates and business keys, projection
//! specifications, the transparency log's checkpoints and proofs, and
//! verification of a record by anyone.

pub mod certificates;
pub mod log;
pub mod verify;
pub mod verify_page;

use std::sync::Arc;

use svc_core::problem::Code;

use super::{Error, Result};
pub use crate::document::PublicDocument;
use crate::region::parts::{HasClock, HasKeySet, HasKeys, HasStore};

/// The dual-signed `jwks.v1` key set, as this region last read it.
pub fn key_set(state: &(impl HasClock + HasKeySet)) -> Result<Arc<PublicDocument>> {
    state.key_set().document(state.clock().now()).ok_or_else(|| {
        // A read region that has not yet replicated home's key set.
        Error::retry_after(Code::Unavailable, 5_000, "this region has not received the key set from home yet")
    })
}

/// The key directory home signed last (`key_set::directory`), as every
/// region holds it, its bytes as signed and stored; 503 at a region that
/// has not received it yet.
pub fn key_directory(state: &impl HasStore) -> Result<crate::document::PublicDocument> {
    let unavailable =
        || Error::retry_after(Code::Unavailable, 5_000, "this region has not received the key directory yet");
    let document = crate::key_set::directory::document(state.store())?.ok_or_else(unavailable)?;
    Ok(crate::document::PublicDocument::new(bytes::Bytes::from(document)))
}

/// Home's Web Bot Auth key directory as asked at `authority`: the JWK set
/// of the key its outbound requests are signed with, and the answer's
/// `Signature-Input` and `Signature` over that authority.
pub struct BotDirectory {
    pub body: Vec<u8>,
    pub signature_input: String,
    pub signature: String,
}

pub fn bot_directory(state: &(impl HasKeys + HasClock), authority: &str) -> Result<BotDirectory> {
    use svc_core::web_bot_auth;
    let key = &state.keys().web_bot_auth;
    let created = state.clock().now().0.div_euclid(1000);
    let (signature_input, signature) = web_bot_auth::sign_directory(key, authority, created)
        .ok_or_else(|| Error::detail(Code::RequestInvalid, "the Host header is not printable ASCII"))?;
    Ok(BotDirectory { body: web_bot_auth::directory(&[key.verifying_key()]), signature_input, signature })
}

/// The verification index (P4.2.16; served at `GET /v1/verification-index`, P-NS-8).
pub fn verification_index() -> serde_json::Value {
    svc_core::index::verification_index()
}

/// `GET /v1/vocabularies` without a name, one vocabulary with one.
pub fn vocabularies(name: Option<&str>) -> Result<serde_json::Value> {
    match name {
        None => Ok(svc_core::index::vocabulary_list()),
        Some(name) => svc_core::index::vocabulary(name)
            .map(|v| v.document().clone())
            .ok_or_else(|| Error::detail(Code::NotFound, format!("no vocabulary is called {name}"))),
    }
}
