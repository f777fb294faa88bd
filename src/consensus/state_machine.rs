//! The group's state machine: the member's store. Committed entries are
//! applied in order, their writes and the last applied entry's id (with the
//! membership then, `meta.raft_applied`) in one synced write. A snapshot is
//! the group's whole state (every value but the member's own), read into
//! memory: the group keeps its log whole, so a snapshot is made or sent
//! only when a member asks for one.

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta,
    StorageError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use svc_store::{Store, StoreError, Write, cf, keys};

use crate::{Group, decoded, encoded, io};

/// What a member applied last, and the group's membership then.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Applied {
    last: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
}

/// A snapshot kept: what it covers, and its bytes.
type Kept = (SnapshotMeta<u64, BasicNode>, Vec<u8>);

/// A member's state machine: a handle on its store, and the last snapshot
/// it made or installed (kept in memory; after a restart, the next is made
/// when asked for).
#[derive(Clone)]
pub struct StateMachine {
    store: Store,
    snapshot: Arc<Mutex<Option<Kept>>>,
    /// Snapshots made since start, for each one's id.
    made: Arc<AtomicU64>,
}

impl StateMachine {
    pub fn new(store: Store) -> StateMachine {
        StateMachine { store, snapshot: Arc::default(), made: Arc::default() }
    }

    fn applied(&self) -> Result<Applied, StoreError> {
        let stored = self.store.get(cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)?;
        stored.map(|bytes| decoded(cf::meta::RAFT_APPLIED.name(), &bytes)).transpose().map(Option::unwrap_or_default)
    }

    /// A batch of the member's own tables recording `applied`.
    fn record<'s>(&'s self, applied: &Applied) -> svc_store::Batch<'s> {
        let mut own = self.store.batch_own();
        match encoded(applied) {
            Ok(bytes) => own.put(cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED, &bytes),
            Err(e) => own.fail(e),
        }
        own
    }

    fn keep(&self, meta: SnapshotMeta<u64, BasicNode>, data: Vec<u8>) {
        if let Ok(mut kept) = self.snapshot.lock() {
            *kept = Some((meta, data));
        }
    }
}

impl RaftStateMachine<Group> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        let applied = self.applied().map_err(io(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        Ok((applied.last, applied.membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<Group>> + Send,
        I::IntoIter: Send,
    {
        let mut applied = self.applied().map_err(io(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        let mut writes: Vec<Write> = Vec::new();
        let mut answers = Vec::new();
        for entry in entries {
            applied.last = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(proposal) => writes.extend(proposal.writes),
                EntryPayload::Membership(membership) => {
                    applied.membership = StoredMembership::new(Some(entry.log_id), membership)
                }
            }
            answers.push(());
        }
        if answers.is_empty() {
            return Ok(answers);
        }
        // In order, in one write: a later entry's write to a key wins.
        let own = self.record(&applied);
        self.store.apply_group_writes(&writes, own).map_err(io(ErrorSubject::StateMachine, ErrorVerb::Write))?;
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> StateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let failed = io(ErrorSubject::Snapshot(Some(meta.signature())), ErrorVerb::Write);
        let data = snapshot.into_inner();
        let state: Vec<Write> = decoded("snapshot", &data).map_err(&failed)?;
        let applied = Applied { last: meta.last_log_id, membership: meta.last_membership.clone() };
        self.store.replace_group_state(&state, self.record(&applied)).map_err(&failed)?;
        self.keep(meta.clone(), data);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Group>>, StorageError<u64>> {
        let kept = self.snapshot.lock().map(|kept| kept.clone()).unwrap_or_default();
        Ok(kept.map(|(meta, data)| Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }))
    }
}

impl RaftSnapshotBuilder<Group> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Group>, StorageError<u64>> {
        let failed = io(ErrorSubject::Snapshot(None), ErrorVerb::Read);
        let (state, applied) =
            self.store.group_state((cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)).map_err(&failed)?;
        let applied: Applied = applied
            .map(|bytes| decoded(cf::meta::RAFT_APPLIED.name(), &bytes))
            .transpose()
            .map_err(&failed)?
            .unwrap_or_default();
        let data = encoded(&state).map_err(&failed)?;
        let made = self.made.fetch_add(1, Ordering::Relaxed);
        let snapshot_id = match applied.last {
            Some(last) => format!("{last}-{made}"),
            None => format!("empty-{made}"),
        };
        let meta = SnapshotMeta { last_log_id: applied.last, last_membership: applied.membership, snapshot_id };
        self.keep(meta.clone(), data.clone());
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}
