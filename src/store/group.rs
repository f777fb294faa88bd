//! A store that belongs to home's group: its writes are committed through
//! the group's consensus before any member applies them.
//!
//! Once a node's store joined the group (`Store::join_group`), a batch it
//! commits is not written by the node: its writes, but those to the node's
//! own tables (`Table::own`: how far its index got, its disk probe), go to
//! the consensus as one [`Write`] list, which answers once a quorum of the
//! group holds them and this member applied them
//! (`Store::apply_group_writes`). Every member applies the same lists in
//! the same order, so every member's store holds what the others hold.

use serde::{Deserialize, Serialize};

use crate::StoreResult;

/// One write of a batch, as every member of the group applies it: a put's
/// value is the stored value (its version byte, then postcard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Write {
    Put {
        cf: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    Delete {
        cf: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Every key from `from` up to, not including, `to`.
    DeleteRange {
        cf: String,
        #[serde(with = "serde_bytes")]
        from: Vec<u8>,
        #[serde(with = "serde_bytes")]
        to: Vec<u8>,
    },
}

/// Where a member's batches go: the group's consensus.
pub trait Consensus: Send + Sync + 'static {
    /// Commits `writes` as one, and answers once this member applied them.
    /// It blocks: the store's callers write from their own threads, and the
    /// consensus runs on its own.
    fn commit(&self, writes: Vec<Write>) -> StoreResult<()>;
}
