//! The group's Raft log and vote, in the member's own RocksDB tables
//! (`raft_log` by index; `meta.raft_vote`, `raft_committed`, `raft_purged`):
//! each write synced before openraft is told it is durable.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{Entry, ErrorSubject, ErrorVerb, LogId, LogState, RaftLogReader, StorageError, Vote};
use svc_store::{Store, StoreError, Table, be, cf, keys};

use crate::{Group, decoded, encoded, io};

/// A member's Raft log: a handle on its store.
#[derive(Clone)]
pub struct LogStore {
    store: Store,
}

impl LogStore {
    pub fn new(store: Store) -> LogStore {
        LogStore { store }
    }

    fn read<T: serde::de::DeserializeOwned>(&self, table: Table<Vec<u8>>, key: &[u8]) -> Result<Option<T>, StoreError> {
        self.store.get(table, key)?.map(|bytes| decoded(table.schema().table, &bytes)).transpose()
    }

    fn write<T: serde::Serialize>(&self, table: Table<Vec<u8>>, key: &[u8], value: &T) -> Result<(), StoreError> {
        let mut batch = self.store.batch_own();
        batch.put(table, key, &encoded(value)?);
        batch.commit()
    }

    fn last_entry(&self) -> Result<Option<Entry<Group>>, StoreError> {
        let Some(key) = self.store.last_key(cf::RAFT_LOG)? else { return Ok(None) };
        self.read(cf::RAFT_LOG, &key)
    }
}

impl LogStore {
    /// The entries of `range` in order, stopping once `budget` stored bytes
    /// were read (the first entry always comes, however large).
    fn entries(&self, range: impl RangeBounds<u64>, budget: usize) -> Result<Vec<Entry<Group>>, StoreError> {
        let start = match range.start_bound() {
            Bound::Included(n) => *n,
            Bound::Excluded(n) => n.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let (mut entries, mut read, mut failed) = (Vec::new(), 0usize, None);
        let walked = self.store.walk(cf::RAFT_LOG, &[], Some(&be(start)), |_, bytes: Vec<u8>| {
            if !entries.is_empty() && read + bytes.len() > budget {
                return false;
            }
            read += bytes.len();
            match decoded::<Entry<Group>>(cf::RAFT_LOG.name(), &bytes) {
                Ok(entry) if range.contains(&entry.log_id.index) => {
                    entries.push(entry);
                    true
                }
                Ok(_) => false,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        });
        walked.and(failed.map_or(Ok(()), Err))?;
        Ok(entries)
    }
}

impl RaftLogReader<Group> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<Group>>, StorageError<u64>> {
        self.entries(range, usize::MAX).map_err(io(ErrorSubject::Logs, ErrorVerb::Read))
    }

    /// What replication sends next: entries up to one message's budget
    /// (`MAX_APPEND_BYTES`). Reading the whole range openraft asks for (up
    /// to `MAX_ENTRIES` batches of megabytes each) to send only the first
    /// few would read and decode the same entries again for every message.
    async fn limited_get_log_entries(&mut self, start: u64, end: u64) -> Result<Vec<Entry<Group>>, StorageError<u64>> {
        self.entries(start..end, crate::MAX_APPEND_BYTES).map_err(io(ErrorSubject::Logs, ErrorVerb::Read))
    }
}

impl RaftLogStorage<Group> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<Group>, StorageError<u64>> {
        let read = io(ErrorSubject::Logs, ErrorVerb::Read);
        let last_purged_log_id: Option<LogId<u64>> =
            self.read(cf::meta::RAFT_PURGED, keys::meta::RAFT_PURGED).map_err(&read)?;
        let last = self.last_entry().map_err(&read)?.map(|entry| entry.log_id);
        Ok(LogState { last_purged_log_id, last_log_id: last.or(last_purged_log_id) })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.write(cf::meta::RAFT_VOTE, keys::meta::RAFT_VOTE, vote).map_err(io(ErrorSubject::Vote, ErrorVerb::Write))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        self.read(cf::meta::RAFT_VOTE, keys::meta::RAFT_VOTE).map_err(io(ErrorSubject::Vote, ErrorVerb::Read))
    }

    async fn save_committed(&mut self, committed: Option<LogId<u64>>) -> Result<(), StorageError<u64>> {
        self.write(cf::meta::RAFT_COMMITTED, keys::meta::RAFT_COMMITTED, &committed)
            .map_err(io(ErrorSubject::Store, ErrorVerb::Write))
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        let committed: Option<Option<LogId<u64>>> = self
            .read(cf::meta::RAFT_COMMITTED, keys::meta::RAFT_COMMITTED)
            .map_err(io(ErrorSubject::Store, ErrorVerb::Read))?;
        Ok(committed.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<Group>) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<Group>> + Send,
        I::IntoIter: Send,
    {
        let mut batch = self.store.batch_own();
        for entry in entries {
            match encoded(&entry) {
                Ok(bytes) => batch.put(cf::RAFT_LOG, &be(entry.log_id.index), &bytes),
                Err(e) => batch.fail(e),
            }
        }
        // Synced: openraft counts an entry towards a quorum once told here.
        let written = batch.commit();
        callback.log_io_completed(written.as_ref().map(|_| ()).map_err(|e| std::io::Error::other(e.to_string())));
        written.map_err(io(ErrorSubject::Logs, ErrorVerb::Write))
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut batch = self.store.batch_own();
        batch.delete_range(cf::RAFT_LOG, &be(log_id.index), &be(u64::MAX));
        batch.commit().map_err(io(ErrorSubject::Logs, ErrorVerb::Delete))
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut batch = self.store.batch_own();
        match encoded(&log_id) {
            Ok(bytes) => batch.put(cf::meta::RAFT_PURGED, keys::meta::RAFT_PURGED, &bytes),
            Err(e) => batch.fail(e),
        }
        batch.delete_range(cf::RAFT_LOG, &be(0), &be(log_id.index.saturating_add(1)));
        batch.commit().map_err(io(ErrorSubject::Logs, ErrorVerb::Delete))
    }
}
