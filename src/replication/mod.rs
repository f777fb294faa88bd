//! The replication log: the one write path.
//!
//! Everything a read region knows arrives as log entries: each entry is the
//! list of key/value writes the home region made to the replicated column
//! families, under one sequence number. Home appends entries in the same
//! atomic write as the change itself, so the log never misses a change and
//! never holds one that did not happen.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use svc_core::time::UnixMs;

use crate::store::{Batch, Store, StoreResult, be, cf};

/// Column families whose writes replicate to read regions. The rest (pushes,
/// attempts, idempotency, usage, allowances, receipts, nonces, uploads) is the home region's own.
pub const REPLICATED: &[&str] = &[
    cf::BUSINESSES,
    cf::CERTIFICATES,
    cf::INTEGRATION_KEYS,
    cf::PASSKEYS,
    cf::MANDATES,
    cf::AI_POLICIES,
    cf::CUSTODY,
    cf::COMPANIES,
    cf::GROUPS,
    cf::RETRIEVAL_KEYS,
    cf::BLOCKS,
    cf::TERMS,
    cf::ENDPOINTS,
    cf::RECORDS,
    cf::VERSIONS,
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
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
}

/// One log entry: a sequence number, when home committed it, and its writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    pub at: UnixMs,
    pub ops: Vec<Op>,
}

/// A change to make atomically: replicated writes (logged) and home-only ones.
#[derive(Debug, Default)]
pub struct Change {
    ops: Vec<Op>,
    local: Vec<Op>,
}

impl Change {
    pub fn new() -> Self {
        Change::default()
    }

    /// Writes `value` under `key`; logged when `cf` replicates.
    pub fn put<T: Serialize>(&mut self, cf: &'static str, key: &[u8], value: &T) -> &mut Self {
        let value = postcard::to_stdvec(value).unwrap_or_default();
        let op = Op::Put { cf: cf.to_owned(), key: key.to_vec(), value };
        if REPLICATED.contains(&cf) {
            self.ops.push(op)
        } else {
            self.local.push(op)
        }
        self
    }

    pub fn delete(&mut self, cf: &'static str, key: &[u8]) -> &mut Self {
        let op = Op::Delete { cf: cf.to_owned(), key: key.to_vec() };
        if REPLICATED.contains(&cf) {
            self.ops.push(op)
        } else {
            self.local.push(op)
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.local.is_empty()
    }

    pub fn replicated_len(&self) -> usize {
        self.ops.len()
    }
}

fn apply_op(batch: &mut Batch<'_>, op: &Op) {
    match op {
        Op::Put { cf, key, value } => {
            if let Some(name) = cf::ALL.iter().find(|n| **n == cf.as_str()) {
                batch.put_raw(name, key, value);
            }
        }
        Op::Delete { cf, key } => {
            if let Some(name) = cf::ALL.iter().find(|n| **n == cf.as_str()) {
                batch.delete(name, key);
            }
        }
    }
}

/// The home region's side of the log: assigns sequence numbers. Only the
/// publisher actor holds one, so sequence numbers have a single writer.
pub struct LogWriter {
    store: Store,
    next_seq: u64,
}

impl LogWriter {
    pub fn open(store: Store) -> StoreResult<LogWriter> {
        let last = store.last_key(cf::REPLOG)?.and_then(|k| <[u8; 8]>::try_from(k.as_slice()).ok());
        let next_seq = last.map(u64::from_be_bytes).unwrap_or(0) + 1;
        Ok(LogWriter { store, next_seq })
    }

    /// The sequence number of the newest entry (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Commits a change atomically, with its log entry when it has
    /// replicated writes. Returns the entry's sequence number, if any.
    pub fn commit(&mut self, change: Change, at: UnixMs) -> StoreResult<Option<u64>> {
        let mut batch = self.store.batch();
        for op in change.ops.iter().chain(change.local.iter()) {
            apply_op(&mut batch, op);
        }
        let seq = if change.ops.is_empty() {
            None
        } else {
            let entry = Entry { seq: self.next_seq, at, ops: change.ops };
            batch.put(cf::REPLOG, &be(entry.seq), &entry);
            Some(entry.seq)
        };
        batch.commit()?;
        if seq.is_some() {
            self.next_seq += 1;
        }
        Ok(seq)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Entries from `after + 1` on, at most `limit` (what a region pulls).
pub fn entries_after(store: &Store, after: u64, limit: usize) -> StoreResult<Vec<Entry>> {
    let from = be(after.saturating_add(1));
    Ok(store.scan::<Entry>(cf::REPLOG, &[], Some(&from), limit)?.into_iter().map(|(_, e)| e).collect())
}

/// Decodes a replicated value (what `Change::put` encoded).
pub fn decode<T: DeserializeOwned>(value: &[u8]) -> Option<T> {
    postcard::from_bytes(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicated_writes_are_logged_in_the_same_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut log = LogWriter::open(store.clone()).unwrap();
        let mut change = Change::new();
        change.put(cf::BUSINESSES, b"b1", &"acme".to_string()).put(cf::PUSHES, b"p1", &1u64);
        assert_eq!(log.commit(change, UnixMs(5)).unwrap(), Some(1));
        let mut local_only = Change::new();
        local_only.put(cf::PUSHES, b"p2", &2u64);
        assert_eq!(log.commit(local_only, UnixMs(6)).unwrap(), None);

        let entries = entries_after(&store, 0, 10).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].ops.len(), 1, "home-only writes are not replicated");
        assert_eq!(store.get::<String>(cf::BUSINESSES, b"b1").unwrap().as_deref(), Some("acme"));
        assert_eq!(store.get::<u64>(cf::PUSHES, b"p2").unwrap(), Some(2));

        drop(log);
        let reopened = LogWriter::open(store.clone()).unwrap();
        assert_eq!(reopened.last_seq(), 1, "sequence numbers continue after a restart");
    }
}
