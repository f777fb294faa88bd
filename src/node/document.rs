//! A public document prepared once for every caller: its bytes and their
//! ETag. The key set keeps its document this way; every public answer is
//! served from one.

use bytes::Bytes;
use svc_core::digest::sha256_hex;

/// A public document, prepared once: its bytes and their ETag.
#[derive(Clone)]
pub struct PublicDocument {
    pub bytes: Bytes,
    pub etag: String,
}

impl PublicDocument {
    pub fn new(bytes: Bytes) -> PublicDocument {
        let etag = format!("\"{}\"", &sha256_hex(&bytes)[..32]);
        PublicDocument { bytes, etag }
    }
}
