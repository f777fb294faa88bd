//! Home's group: the members of the home region agree on one sequence of
//! store writes through Raft (openraft 0.9, its v2 storage traits), kept in
//! RocksDB beside the state they change.
//!
//! Each entry of the group's log is one batch the leader's store committed
//! (`svc_store::Write`s). Every member applies the committed entries to its
//! own store in order, with the id of the last one applied in the same
//! write (`state_machine`), so a restarted member resumes where it stopped
//! and every member's store holds the same values. The leader's store
//! hands its batches to [`member::Member`], which answers once a quorum
//! holds them and the leader applied them: a write is acknowledged only
//! when losing a member cannot lose it. Every `Settings::snapshot_every`
//! entries a member writes its state to a snapshot file and its log is
//! purged but for the newest `Settings::logs_kept` entries: a member
//! further behind (or new, or with its disk lost) takes the snapshot.

pub mod log_store;
pub mod member;
pub mod state_machine;

use serde::{Deserialize, Serialize};

openraft::declare_raft_types!(
    /// The group's types: a log entry proposes store writes; members are
    /// known by number and reached at an address.
    pub Group:
        D = Proposal,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        SnapshotData = tokio::fs::File,
);

/// About the most bytes of entries one message to a member carries (one
/// entry, however large, always goes): a message must arrive and be
/// written within a heartbeat, which is also how long openraft waits for
/// it, or it is sent again and again.
pub const MAX_APPEND_BYTES: usize = 1 << 20;

/// What one entry of the group's log proposes: one batch's writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub writes: Vec<svc_store::Write>,
}

impl Proposal {
    /// About how many bytes the proposal carries: its keys and values.
    pub fn bytes(&self) -> usize {
        use svc_store::Write;
        let one = |write: &Write| match write {
            Write::Put { cf, key, value } => cf.len() + key.len() + value.len(),
            Write::Delete { cf, key } => cf.len() + key.len(),
            Write::DeleteRange { cf, from, to } => cf.len() + from.len() + to.len(),
        };
        self.writes.iter().map(one).sum()
    }
}

/// A store failure as openraft takes it: what failed, and how.
fn io(
    subject: openraft::ErrorSubject<u64>,
    verb: openraft::ErrorVerb,
) -> impl Fn(svc_store::StoreError) -> openraft::StorageError<u64> {
    move |error| openraft::StorageIOError::new(subject.clone(), verb, openraft::AnyError::new(&error)).into()
}

/// A value of the group's own tables, as stored (postcard).
fn encoded<T: Serialize>(value: &T) -> Result<Vec<u8>, svc_store::StoreError> {
    postcard::to_stdvec(value).map_err(svc_store::StoreError::Encode)
}

fn decoded<T: serde::de::DeserializeOwned>(table: &'static str, bytes: &[u8]) -> Result<T, svc_store::StoreError> {
    postcard::from_bytes(bytes).map_err(|source| svc_store::StoreError::Decode { cf: table, source })
}

#[cfg(test)]
mod tests;
