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

pub use super::document::PublicDocument;
use super::{Error, Result};
use crate::region::Region;

/// The dual-signed `jwks.v1` key set, as this region last read it.
pub fn key_set(state: &Region) -> Result<Arc<PublicDocument>> {
    state.key_set.document(state.clock.now()).ok_or_else(|| {
        // A read region that has not yet replicated home's key set.
        Error::retry_after(Code::Unavailable, 5_000, "this region has not received the key set from home yet")
    })
}
