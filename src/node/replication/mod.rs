//! The replication log: the one write path.
//!
//! Everything a read region knows arrives as log entries: each entry is the
//! list of key/value writes the home region made to the replicated column
//! families, under one sequence number. Home appends entries in the same
//! atomic write as the change itself, so the log never misses a change and
//! never holds one that did not happen.

pub mod exchange;
pub mod link;
pub mod purge;

use serde::{Deserialize, Serialize};
use svc_core::log_chain::{self, Fork, Hash};
use svc_core::time::UnixMs;

use svc_store::{
    Batch, Family, Holds, Named, ReadyBatch, Store, StoreError, StoreResult, Table, be, cf, cf_named, from_be,
};

/// Home's replication log: each entry by its sequence.
pub const REPLOG: Table<Entry> = Table::new(cf::families::REPLOG, "be(seq)");

/// Column families whose writes replicate to read regions. The rest (pushes,
/// attempts, idempotency, usage, allowances, receipts, nonces, uploads) is the home region's own.
pub const REPLICATED: &[&str] = &[
    cf::CAMPAIGNS.name(),
    cf::AD_IMAGES.name(),
    cf::BUSINESSES.name(),
    cf::CERTIFICATES.name(),
    cf::INTEGRATION_KEYS.name(),
    cf::PASSKEYS.name(),
    cf::KEY_INDEX.name(),
    cf::MANDATES.name(),
    cf::AI_POLICIES.name(),
    cf::CUSTODY.name(),
    cf::COMPANIES.name(),
    cf::GROUPS.name(),
    cf::RETRIEVAL_KEYS.name(),
    cf::BILLING_PLANS.name(),
    cf::BLOCKS.name(),
    cf::TERMS.name(),
    cf::ENDPOINTS.name(),
    cf::RECORDS.name(),
    cf::VERSIONS.name(),
    cf::key_set::FAMILY,
    cf::TLOG_LEAVES.name(),
    cf::TLOG_INDEX.name(),
    cf::TLOG_CHECKPOINTS.name(),
    cf::TLOG_COSIGNATURES.name(),
    cf::PURGES.name(),
    cf::FRESHNESS.name(),
    cf::DOMAINS.name(),
    cf::DIRECTORY.name(),
    cf::EXPIRED_CALLERS.name(),
    cf::TERMS_ACCEPTED.name(),
];

/// One write of an entry. A put's `value` is the stored value itself
/// (`store::encode`: its table's version byte, then postcard), applied at a
/// region as it came.
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

/// An entry as a build before version bytes stored it (postcard, with its
/// puts' values bare), as this build stores it: each put's value given its
/// version byte, the entry versioned. The store's one-time migration
/// (`Store::open_migrating`) writes it in the old entry's place.
pub fn legacy_log_entry(bytes: &[u8]) -> svc_store::StoreResult<Vec<u8>> {
    let decode = |source| svc_store::StoreError::Decode { cf: crate::replication::REPLOG.name(), source };
    let mut entry: Entry = postcard::from_bytes(bytes).map_err(decode)?;
    for op in &mut entry.ops {
        if let Op::Put { value, .. } = op {
            value.insert(0, svc_store::VALUE_VERSION);
        }
    }
    svc_store::encode(REPLOG, &entry)
}

/// A change to make atomically: replicated writes (logged) and home-only ones.
#[derive(Debug, Default)]
pub struct Change {
    ops: Vec<Op>,
    local: Vec<Op>,
    /// Keys that must hold nothing when the change commits: checked by the
    /// one writer, so two registrations of one key cannot both succeed.
    absent: Vec<(Named, Vec<u8>)>,
    /// Keys that must still hold what was read (encoded), likewise checked
    /// by the one writer: a read-modify-write never undoes another's write.
    unchanged: Vec<(Named, Vec<u8>, Vec<u8>)>,
}

impl Change {
    pub fn new() -> Self {
        Change::default()
    }

    /// Commits only if `key` holds nothing in `cf` then; otherwise the
    /// commit is `StoreError::Exists` and writes nothing.
    pub fn require_absent(&mut self, cf: impl Family, key: &[u8]) -> &mut Self {
        self.absent.push((Named::of(cf), key.to_vec()));
        self
    }

    /// Commits only if `key` still holds `as_read` in `cf`; otherwise the
    /// commit is `StoreError::Changed` and writes nothing.
    pub fn require_unchanged<T: Serialize>(&mut self, cf: impl Holds<T>, key: &[u8], as_read: &T) -> &mut Self {
        let encoded = svc_store::encode(cf, as_read).unwrap_or_default();
        self.unchanged.push((Named::of(cf), key.to_vec(), encoded));
        self
    }

    /// Writes `value` under `key`; logged when `cf` replicates. (A value
    /// that fails to encode is left empty, and the commit refuses it.)
    pub fn put<T: Serialize>(&mut self, cf: impl Holds<T>, key: &[u8], value: &T) -> &mut Self {
        let value = svc_store::encode(cf, value).unwrap_or_default();
        let op = Op::Put { cf: cf.name().to_owned(), key: key.to_vec(), value };
        if REPLICATED.contains(&cf.name()) {
            self.ops.push(op)
        } else {
            self.local.push(op)
        }
        self
    }

    pub fn delete(&mut self, cf: impl Family, key: &[u8]) -> &mut Self {
        let op = Op::Delete { cf: cf.name().to_owned(), key: key.to_vec() };
        if REPLICATED.contains(&cf.name()) {
            self.ops.push(op)
        } else {
            self.local.push(op)
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.local.is_empty()
    }

    /// Takes this change's home-only writes to `cf` out of it, `per` to a
    /// change of their own: writes that may go to the store ahead of the
    /// rest, in several batches rather than one too large.
    pub fn split_local(&mut self, cf: impl Family, per: usize) -> Vec<Change> {
        let name = cf.name();
        let (taken, kept): (Vec<Op>, Vec<Op>) = std::mem::take(&mut self.local)
            .into_iter()
            .partition(|op| matches!(op, Op::Put { cf, .. } | Op::Delete { cf, .. } if cf == name));
        self.local = kept;
        let mut parts = Vec::new();
        let mut taken = taken.into_iter().peekable();
        while taken.peek().is_some() {
            parts.push(Change { local: taken.by_ref().take(per.max(1)).collect(), ..Change::default() });
        }
        parts
    }

    pub fn replicated_len(&self) -> usize {
        self.ops.len()
    }
}

/// Adds an op to a batch. A column family this build does not know, or a
/// value of a version it does not know, fails the batch (`put_raw` checks
/// the version byte); `apply_frames` refuses such an entry before this.
fn apply_op(batch: &mut Batch<'_>, op: &Op) {
    if crate::sabotage::on(crate::sabotage::Sabotage::IgnoredBlocks)
        && matches!(op, Op::Put { cf: name, .. } if name == cf::BLOCKS.name())
    {
        return;
    }
    if crate::sabotage::on(crate::sabotage::Sabotage::IgnoredCertificates)
        && let Op::Put { cf: name, value, .. } = op
        && name == cf::CERTIFICATES.name()
        && svc_store::decode(cf::CERTIFICATES, value)
            .is_ok_and(|c| c.status != svc_core::seal::CertificateStatus::Active)
    {
        return;
    }
    match op {
        Op::Put { cf, key, value } => match cf_named(cf) {
            Some(name) => batch.put_raw(name, key, value),
            None => batch.fail(StoreError::UnknownColumnFamily(cf.clone())),
        },
        Op::Delete { cf, key } => match cf_named(cf) {
            Some(name) => batch.delete(name, key),
            None => batch.fail(StoreError::UnknownColumnFamily(cf.clone())),
        },
    }
}

/// Why an entry cannot be applied here: a write to a column family this
/// build does not know, or a value of a version it does not know.
fn refusal(entry: &Entry) -> Option<String> {
    entry.ops.iter().find_map(|op| {
        let (name, value) = match op {
            Op::Put { cf, value, .. } => (cf, Some(value)),
            Op::Delete { cf, .. } => (cf, None),
        };
        let Some(known) = cf_named(name) else { return Some(format!("a write to unknown column family {name}")) };
        // Home logs only what replication owns; anything else in a frame is
        // not home's to send, and a region writes nothing else replicated.
        if !REPLICATED.contains(&known.name()) {
            return Some(format!("a write to column family {name}, which replication does not own"));
        }
        value.and_then(|v| svc_store::versioned_body(known.name(), v).err()).map(|e| e.to_string())
    })
}

/// The home region's side of the log: assigns sequence numbers. Only the
/// publisher actor holds one, so sequence numbers have a single writer.
pub struct LogWriter {
    store: Store,
    next_seq: u64,
    /// The running hash at `next_seq - 1`.
    chain: Hash,
    /// Writes every pipelined commit, in order, synced.
    committer: Option<Committer>,
}

/// A thread that writes batches in the order they came, each synced, and
/// answers each when it is on disk.
struct Committer {
    jobs: std::sync::mpsc::Sender<(ReadyBatch, std::sync::mpsc::SyncSender<StoreResult<()>>)>,
    /// The answer of the write still in flight, if one is.
    in_flight: Option<std::sync::mpsc::Receiver<StoreResult<()>>>,
    thread: std::thread::JoinHandle<()>,
}

impl LogWriter {
    pub fn open(store: Store) -> StoreResult<LogWriter> {
        let chain = chain_every_entry(&store)?;
        let next_seq = last_seq(&store)? + 1;
        Ok(LogWriter { store, next_seq, chain, committer: None })
    }

    /// Where the stored log ends: after a failed write, the next entry
    /// follows the last one written.
    fn read_back(&mut self) -> StoreResult<()> {
        let last = last_seq(&self.store)?;
        self.chain = chain_at(&self.store, last)?.ok_or(StoreError::Unchained { seq: last })?;
        self.next_seq = last + 1;
        Ok(())
    }

    /// The sequence number of the newest entry (0 before any), in flight
    /// included.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// The sequence number the next commit with replicated writes gets,
    /// once every commit before it is on disk (the writer is the only one).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    fn batch_of(&self, change: Change, at: UnixMs) -> StoreResult<(ReadyBatch, Option<(u64, Hash)>)> {
        // Every earlier commit is on disk (drained), so what is read here is
        // what the change would follow.
        for (cf, key) in &change.absent {
            if self.store.contains(*cf, key)? {
                return Err(svc_store::StoreError::Exists { cf: cf.name() });
            }
        }
        for (cf, key, encoded) in &change.unchanged {
            if !self.store.holds(*cf, key, encoded)? {
                return Err(svc_store::StoreError::Changed { cf: cf.name() });
            }
        }
        let mut batch = self.store.batch();
        for op in change.ops.iter().chain(change.local.iter()) {
            apply_op(&mut batch, op);
        }
        let seq = if change.ops.is_empty() {
            None
        } else {
            // Where each record last changed, for `live_in`.
            for op in &change.ops {
                if let Op::Put { cf: name, key, .. } = op
                    && name == cf::RECORDS.name()
                {
                    batch.put(cf::RECORD_SEQS, key, &self.next_seq);
                }
            }
            let entry = Entry { seq: self.next_seq, at, ops: change.ops };
            let stored = svc_store::encode(REPLOG, &entry)?;
            let chain = chained(&self.chain, entry.seq, &stored)?;
            batch.put_raw(REPLOG, &be(entry.seq), &stored);
            batch.put(cf::LOG_CHAIN, &be(entry.seq), &chain);
            Some((entry.seq, chain))
        };
        Ok((batch.ready()?, seq))
    }

    /// Takes the sequence number and running hash of an entry handed to
    /// the disk.
    fn advance(&mut self, logged: Option<(u64, Hash)>) -> Option<u64> {
        let (seq, chain) = logged?;
        self.next_seq = seq + 1;
        self.chain = chain;
        Some(seq)
    }

    /// Commits a change atomically, with its log entry when it has
    /// replicated writes, after every pipelined commit before it. Returns the
    /// entry's sequence number, if any.
    pub fn commit(&mut self, change: Change, at: UnixMs) -> StoreResult<Option<u64>> {
        self.drain()?;
        let (batch, logged) = self.batch_of(change, at)?;
        self.store.write_ready(batch, true)?;
        Ok(self.advance(logged))
    }

    /// Commits like [`commit`](Self::commit) but returns once the write is
    /// handed to the committer: the caller's next step (CPU work) overlaps
    /// this write's disk wait. At most one write is in flight, and the next
    /// commit or [`drain`](Self::drain) waits for it and reports its error,
    /// so a failed write never leaves a gap in the log.
    pub fn commit_pipelined(&mut self, change: Change, at: UnixMs) -> StoreResult<Option<u64>> {
        self.drain()?;
        let (batch, logged) = self.batch_of(change, at)?;
        let committer = match &mut self.committer {
            Some(c) => c,
            None => self.committer.insert(Committer::start(self.store.clone())?),
        };
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        if committer.jobs.send((batch, answer)).is_err() {
            // The thread is gone: nothing was written.
            self.committer = None;
            return Err(svc_store::StoreError::Closed);
        }
        committer.in_flight = Some(answered);
        Ok(self.advance(logged))
    }

    /// Waits until every commit is on disk. On a failed write the sequence
    /// is read back from the store, so the next entry follows the last one
    /// written.
    pub fn drain(&mut self) -> StoreResult<()> {
        let Some(answered) = self.committer.as_mut().and_then(|c| c.in_flight.take()) else { return Ok(()) };
        let written = answered.recv().unwrap_or(Err(svc_store::StoreError::Closed));
        if written.is_err() {
            self.read_back()?;
        }
        written
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

impl Committer {
    fn start(store: Store) -> StoreResult<Committer> {
        let (jobs, incoming) = std::sync::mpsc::channel::<(ReadyBatch, std::sync::mpsc::SyncSender<StoreResult<()>>)>();
        let thread = std::thread::Builder::new()
            .name("log-committer".into())
            .spawn(move || {
                for (batch, answer) in incoming {
                    let _ = answer.send(store.write_ready(batch, true));
                }
            })
            .map_err(|_| svc_store::StoreError::Closed)?;
        Ok(Committer { jobs, in_flight: None, thread })
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // Whatever was handed over is written before the writer goes, and
        // the committer lets go of the store before this returns: a store
        // closed by a stray thread while the process exits aborts RocksDB.
        let _ = self.drain();
        if let Some(Committer { jobs, thread, .. }) = self.committer.take() {
            drop(jobs);
            let _ = thread.join();
        }
    }
}

/// Entries from `after + 1` on, at most `limit` (what a region pulls).
pub fn entries_after(store: &Store, after: u64, limit: usize) -> StoreResult<Vec<Entry>> {
    let from = be(after.saturating_add(1));
    Ok(store.scan::<Entry>(crate::replication::REPLOG, &[], Some(&from), limit)?.into_iter().map(|(_, e)| e).collect())
}

/// The header by which home tells a region its newest sequence number.
pub const LOG_HEAD_HEADER: &str = "x-svc-log-head";

/// The newest sequence number in this store's log (0 before any).
pub fn last_seq(store: &Store) -> StoreResult<u64> {
    Ok(store.last_key(crate::replication::REPLOG)?.and_then(|k| from_be(&k)).unwrap_or(0))
}

/// The running hash after an entry whose stored value is `stored`, over
/// the entry's postcard bytes (the value without its version byte).
fn chained(previous: &Hash, seq: u64, stored: &[u8]) -> StoreResult<Hash> {
    Ok(log_chain::next(previous, seq, svc_store::versioned_body(REPLOG.name(), stored)?))
}

/// The running hash at entry `seq` (the genesis hash before any), if this
/// store holds one there.
pub fn chain_at(store: &Store, seq: u64) -> StoreResult<Option<Hash>> {
    if seq == 0 {
        return Ok(Some(log_chain::GENESIS));
    }
    store.get(cf::LOG_CHAIN, &be(seq))
}

/// Home: gives every entry that has no running hash its hash (a log written
/// before running hashes, once), and answers the hash at the last entry.
fn chain_every_entry(store: &Store) -> StoreResult<Hash> {
    const PAGE: usize = 1024;
    let mut through = store.last_key(cf::LOG_CHAIN)?.and_then(|k| from_be(&k)).unwrap_or(0);
    let mut chain = chain_at(store, through)?.unwrap_or(log_chain::GENESIS);
    loop {
        let page = store.scan::<Entry>(REPLOG, &[], Some(&be(through + 1)), PAGE)?;
        let Some((_, last)) = page.last() else { return Ok(chain) };
        let last = last.seq;
        let mut batch = store.batch();
        for (_, entry) in &page {
            chain = chained(&chain, entry.seq, &svc_store::encode(REPLOG, entry)?)?;
            batch.put(cf::LOG_CHAIN, &be(entry.seq), &chain);
        }
        batch.commit()?;
        through = last;
    }
}

/// Entries from `after + 1` on, at most `limit`, each with its running
/// hash (what a region pulls).
pub fn chained_after(store: &Store, after: u64, limit: usize) -> StoreResult<Vec<(Entry, Hash)>> {
    let entries = entries_after(store, after, limit)?;
    // Written with each entry in one batch, so every entry read has one.
    let from = be(after.saturating_add(1));
    let hashes = store.scan::<Hash>(cf::LOG_CHAIN, &[], Some(&from), entries.len())?;
    entries
        .into_iter()
        .zip(hashes)
        .map(|(entry, (key, hash))| match from_be(&key) {
            Some(seq) if seq == entry.seq => Ok((entry, hash)),
            _ => Err(StoreError::Unchained { seq: entry.seq }),
        })
        .collect()
}

/// Entries as frames (`svc_core::frames`, whose payload version 2 is the
/// entry's running hash then the postcard [`Entry`]), stopping before
/// `max_bytes` unless that leaves none.
pub fn encode_frames(entries: &[(Entry, Hash)], max_bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (entry, hash) in entries {
        let payload = postcard::to_extend(entry, hash.to_vec()).unwrap_or_default();
        if !out.is_empty() && out.len() + payload.len() > max_bytes {
            break;
        }
        svc_core::frames::encode(entry.seq, &payload, &mut out);
    }
    out
}

/// Judges a page of home's log before any of it is applied
/// (`log_chain::judge`): the region asked for what follows `after`, and the
/// page's head said `head` and home's running hash at `after`. A region
/// that kept no hash there (its log applied before running hashes) keeps
/// home's from now on.
pub fn judge_page(store: &Store, after: u64, head: u64, home_at_after: Option<Hash>) -> StoreResult<Result<(), Fork>> {
    let own = if after == 0 { None } else { store.get(cf::LOG_CHAIN, &be(after))? };
    let judged = log_chain::judge(after, own.as_ref(), head, home_at_after.as_ref());
    if judged.is_ok()
        && own.is_none()
        && after > 0
        && let Some(home) = home_at_after
    {
        store.put(cf::LOG_CHAIN, &be(after), &home)?;
    }
    Ok(judged)
}

/// Records that this region found home's history different from its own:
/// it applies nothing more, across restarts, until an operator rebuilds it
/// (`deploy/OPERATING.md`). Answers what it recorded.
pub fn mark_forked(store: &Store, fork: &Fork) -> StoreResult<String> {
    let reason = fork.to_string();
    store.put(cf::meta::LOG_FORK, svc_store::keys::meta::LOG_FORK, &reason)?;
    Ok(reason)
}

/// Why this region stopped applying home's log, if it did.
pub fn forked(store: &Store) -> StoreResult<Option<String>> {
    store.get(cf::meta::LOG_FORK, svc_store::keys::meta::LOG_FORK)
}

/// What a read region did with an answer of frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The last sequence number now applied.
    pub last: u64,
    pub entries: usize,
    /// Why reading stopped before the end; nothing from there on was applied.
    pub refused: Option<String>,
}

/// Applies the frames that follow the store's last entry, in one synced
/// write: each entry's writes, the entry itself and home's running hash at
/// it, under home's sequence numbers, so the region's indexer tails its own
/// log as home's does. The
/// first cut, corrupt, out-of-sequence or undecodable frame, or one of a
/// version this build does not know (the frame's, or a value's in it), ends
/// the write; what follows is fetched again.
pub fn apply_frames(store: &Store, bytes: &[u8]) -> StoreResult<Applied> {
    let after = last_seq(store)?;
    let (frames, stopped) = svc_core::frames::decode(bytes, after);
    let mut refused = stopped.map(|e| e.to_string());
    let mut batch = store.batch();
    let mut last = after;
    let mut entries = 0;
    for (seq, payload) in frames {
        let decoded =
            payload.split_first_chunk::<32>().map(|(hash, entry)| (*hash, postcard::from_bytes::<Entry>(entry)));
        let (hash, entry) = match decoded {
            Some((hash, Ok(entry))) if entry.seq == seq => (hash, entry),
            _ => {
                refused = Some(format!("frame {seq} does not hold entry {seq}"));
                break;
            }
        };
        if let Some(why) = refusal(&entry) {
            refused = Some(format!("frame {seq} holds {why}"));
            break;
        }
        for op in &entry.ops {
            apply_op(&mut batch, op);
        }
        batch.put(crate::replication::REPLOG, &be(seq), &entry);
        batch.put(cf::LOG_CHAIN, &be(seq), &hash);
        last = seq;
        entries += 1;
    }
    if entries > 0 {
        store.write_ready(batch.ready()?, true)?;
        crate::faults::crash_point(crate::faults::CrashPoint::FramesApplied);
    }
    Ok(Applied { last, entries, refused })
}

#[cfg(test)]
mod tests {
    use super::*;

    // A bulk file's leaves leave the change a part at a time; the rest of
    // the change (replicated and home-only) stays for its own write.
    #[test]
    fn a_change_s_home_only_writes_to_one_table_split_into_parts_of_a_size() {
        let mut change = Change::new();
        for i in 0..2_500u64 {
            change.delete(cf::PUSH_LEAVES, &i.to_be_bytes());
        }
        change.delete(cf::PUSHES, b"push");
        change.delete(cf::BUSINESSES, b"b");
        let parts = change.split_local(cf::PUSH_LEAVES, 1_000);
        assert_eq!(parts.iter().map(|p| p.local.len()).collect::<Vec<_>>(), [1_000, 1_000, 500]);
        assert!(parts.iter().all(|p| p.ops.is_empty()));
        assert_eq!((change.local.len(), change.ops.len()), (1, 1), "the push and the replicated write stay");
        assert!(change.split_local(cf::PUSH_LEAVES, 1_000).is_empty());
    }

    #[test]
    fn a_change_that_requires_a_key_absent_writes_nothing_once_the_key_holds_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut log = LogWriter::open(store.clone()).unwrap();
        let register = |n: u64| {
            let mut change = Change::new();
            change.require_absent(cf::TLOG_INDEX, b"b1").put(cf::TLOG_INDEX, b"b1", &n).put(cf::RECORD_SEQS, b"p", &n);
            change
        };
        assert_eq!(log.commit(register(1), UnixMs(5)).unwrap(), Some(1));
        let second = log.commit_pipelined(register(2), UnixMs(6));
        assert!(matches!(second, Err(StoreError::Exists { cf: "tlog_index" })), "{second:?}");
        log.drain().unwrap();
        assert_eq!(store.get::<u64>(cf::TLOG_INDEX, b"b1").unwrap(), Some(1));
        assert_eq!(store.get::<u64>(cf::RECORD_SEQS, b"p").unwrap(), Some(1), "nothing of the refused change");
        assert_eq!(entries_after(&store, 0, 10).unwrap().len(), 1, "no log entry for it");

        // A read-modify-write commits only over what it read.
        let mut stale = Change::new();
        stale.require_unchanged(cf::TLOG_INDEX, b"b1", &7u64).put(cf::TLOG_INDEX, b"b1", &8u64);
        assert!(matches!(log.commit(stale, UnixMs(8)), Err(StoreError::Changed { cf: "tlog_index" })));
        let mut fresh = Change::new();
        fresh.require_unchanged(cf::TLOG_INDEX, b"b1", &1u64).put(cf::TLOG_INDEX, b"b1", &8u64);
        assert_eq!(log.commit(fresh, UnixMs(9)).unwrap(), Some(2));
        assert_eq!(store.get::<u64>(cf::TLOG_INDEX, b"b1").unwrap(), Some(8));
    }

    #[test]
    fn replicated_writes_are_logged_in_the_same_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut log = LogWriter::open(store.clone()).unwrap();
        let mut change = Change::new();
        change.put(cf::FRESHNESS, b"b1", &"acme".to_string()).put(cf::RECORD_SEQS, b"p1", &1u64);
        assert_eq!(log.commit(change, UnixMs(5)).unwrap(), Some(1));
        let mut local_only = Change::new();
        local_only.put(cf::RECORD_SEQS, b"p2", &2u64);
        assert_eq!(log.commit(local_only, UnixMs(6)).unwrap(), None);

        let entries = entries_after(&store, 0, 10).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].ops.len(), 1, "home-only writes are not replicated");
        assert_eq!(store.get::<String>(cf::FRESHNESS, b"b1").unwrap().as_deref(), Some("acme"));
        assert_eq!(store.get::<u64>(cf::RECORD_SEQS, b"p2").unwrap(), Some(2));

        drop(log);
        let reopened = LogWriter::open(store.clone()).unwrap();
        assert_eq!(reopened.last_seq(), 1, "sequence numbers continue after a restart");
    }

    #[test]
    fn a_region_applies_frames_once_in_order_and_refuses_what_follows_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let home = Store::open(&dir.path().join("home")).unwrap();
        let region = Store::open(&dir.path().join("region")).unwrap();
        let mut log = LogWriter::open(home.clone()).unwrap();
        for i in 1..=4u64 {
            let mut change = Change::new();
            change.put(cf::TLOG_INDEX, &be(i), &i).put(cf::RECORD_SEQS, &be(i), &i);
            log.commit(change, UnixMs(i as i64)).unwrap();
        }
        let entries = chained_after(&home, 0, 10).unwrap();
        let mut bytes = encode_frames(&entries[..2], usize::MAX);
        let good = bytes.len();
        bytes.extend(encode_frames(&entries[2..], usize::MAX));
        // A flipped byte in the third frame: two entries apply, the rest waits.
        bytes[good + 14] ^= 0x40;
        let applied = apply_frames(&region, &bytes).unwrap();
        assert_eq!((applied.last, applied.entries), (2, 2));
        assert!(applied.refused.unwrap().contains("checksum"));
        assert_eq!(region.get::<u64>(cf::TLOG_INDEX, &be(3)).unwrap(), None, "nothing of a corrupt frame lands");
        // Fetched again from where it stopped: the same frames twice apply once.
        let again = encode_frames(&chained_after(&home, 2, 10).unwrap(), usize::MAX);
        assert_eq!(apply_frames(&region, &again).unwrap(), Applied { last: 4, entries: 2, refused: None });
        let replay = apply_frames(&region, &again).unwrap();
        assert_eq!((replay.last, replay.entries), (4, 0));
        assert!(replay.refused.unwrap().contains("expected"), "a replayed frame is out of sequence");
        assert_eq!(region.get::<u64>(cf::TLOG_INDEX, &be(4)).unwrap(), Some(4));
        assert_eq!(region.get::<u64>(cf::RECORD_SEQS, &be(4)).unwrap(), None, "home-only writes stay home");
        assert_eq!(chained_after(&region, 0, 10).unwrap(), entries, "the region's log is home's, hashes too");
    }

    /// Commits `n` entries, the `i`th writing `value(i)`, at time `i`.
    fn commit_entries(log: &mut LogWriter, range: std::ops::RangeInclusive<u64>, value: impl Fn(u64) -> u64) {
        for i in range {
            let mut change = Change::new();
            change.put(cf::TLOG_INDEX, &be(i), &value(i));
            log.commit_pipelined(change, UnixMs(i as i64)).unwrap();
        }
        log.drain().unwrap();
    }

    fn hashes(store: &Store) -> Vec<Hash> {
        chained_after(store, 0, usize::MAX).unwrap().into_iter().map(|(_, hash)| hash).collect()
    }

    #[test]
    fn the_running_hash_is_the_same_for_the_same_history_and_survives_a_restart_and_an_older_log() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Store::open(&dir.path().join("a")).unwrap(), Store::open(&dir.path().join("b")).unwrap());
        commit_entries(&mut LogWriter::open(a.clone()).unwrap(), 1..=3, |i| i);
        let mut log_b = LogWriter::open(b.clone()).unwrap();
        commit_entries(&mut log_b, 1..=2, |i| i);
        drop(log_b);
        // Reopened, the writer continues the chain where it stopped.
        commit_entries(&mut LogWriter::open(b.clone()).unwrap(), 3..=3, |i| i);
        assert_eq!(hashes(&a), hashes(&b), "one history, one running hash");
        assert_eq!(hashes(&a).len(), 3);
        let expected = entries_after(&a, 0, 10).unwrap().iter().fold(log_chain::GENESIS, |hash, entry| {
            log_chain::next(&hash, entry.seq, &postcard::to_stdvec(entry).unwrap())
        });
        assert_eq!(hashes(&a)[2], expected, "over each entry's postcard bytes as committed");

        // Another history from the second entry on differs there and after.
        let c = Store::open(&dir.path().join("c")).unwrap();
        commit_entries(&mut LogWriter::open(c.clone()).unwrap(), 1..=3, |i| if i == 1 { 1 } else { 10 + i });
        assert_eq!(hashes(&c)[0], hashes(&a)[0]);
        assert_ne!(hashes(&c)[1], hashes(&a)[1]);
        assert_ne!(hashes(&c)[2], hashes(&a)[2]);

        // A log written before running hashes is given them at open, the
        // same as if they had been written with it.
        let mut older = a.batch();
        for seq in 2..=3 {
            older.delete(cf::LOG_CHAIN, &be(seq));
        }
        older.commit().unwrap();
        let before = hashes(&b);
        let mut reopened = LogWriter::open(a.clone()).unwrap();
        assert_eq!(hashes(&a), before);
        commit_entries(&mut reopened, 4..=4, |i| i);
        commit_entries(&mut LogWriter::open(b.clone()).unwrap(), 4..=4, |i| i);
        assert_eq!(hashes(&a), hashes(&b));
    }

    #[test]
    fn a_region_refuses_a_home_restored_behind_it_or_with_another_history_and_says_so_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| Store::open(&dir.path().join(name)).unwrap();
        let (home, region) = (open("home"), open("region"));
        commit_entries(&mut LogWriter::open(home.clone()).unwrap(), 1..=3, |i| i);
        let page = |store: &Store, after: u64| {
            let head = last_seq(store).unwrap();
            (head, if after == 0 { None } else { chain_at(store, after).unwrap() })
        };
        let (head, at) = page(&home, 0);
        assert_eq!(judge_page(&region, 0, head, at).unwrap(), Ok(()));
        apply_frames(&region, &encode_frames(&chained_after(&home, 0, 10).unwrap(), usize::MAX)).unwrap();
        let (head, at) = page(&home, 3);
        assert_eq!(judge_page(&region, 3, head, at).unwrap(), Ok(()), "the same history goes on");

        // Home restored from a backup taken at entry 2: behind the region.
        let restored = open("restored");
        commit_entries(&mut LogWriter::open(restored.clone()).unwrap(), 1..=2, |i| i);
        let (head, at) = page(&restored, 3);
        assert_eq!(judge_page(&region, 3, head, at).unwrap(), Err(Fork::HomeBehind { head: 2, applied: 3 }));
        // And once it wrote on, another entry 3 and 4: its hash at 3 differs.
        commit_entries(&mut LogWriter::open(restored.clone()).unwrap(), 3..=4, |i| 100 + i);
        let (head, at) = page(&restored, 3);
        let fork = judge_page(&region, 3, head, at).unwrap().unwrap_err();
        assert!(matches!(fork, Fork::Differs { seq: 3, .. }), "{fork}");
        // Had the region applied that page, it would hold restored's entry 4
        // after the old entry 3: the merge the judgement prevents.
        let reason = mark_forked(&region, &fork).unwrap();
        assert_eq!(forked(&region).unwrap().as_deref(), Some(reason.as_str()));
        drop(region);
        assert!(forked(&open("region")).unwrap().unwrap().contains("differs"), "kept across a restart");

        // A region whose log came before running hashes keeps home's hash
        // where it resumes, and is judged against it from then on.
        let older = open("older");
        apply_frames(&older, &encode_frames(&chained_after(&home, 0, 10).unwrap(), usize::MAX)).unwrap();
        let mut forget = older.batch();
        forget.delete(cf::LOG_CHAIN, &be(3));
        forget.commit().unwrap();
        let (head, at) = page(&home, 3);
        assert_eq!(judge_page(&older, 3, head, at).unwrap(), Ok(()));
        assert_eq!(older.get(cf::LOG_CHAIN, &be(3)).unwrap(), at);
        let (head, at) = page(&restored, 3);
        assert!(judge_page(&older, 3, head, at).unwrap().is_err());
    }

    #[test]
    fn pipelined_commits_land_in_order_with_no_gap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut log = LogWriter::open(store.clone()).unwrap();
        for i in 0..5u64 {
            let mut change = Change::new();
            change.put(cf::TLOG_INDEX, &be(i), &i);
            assert_eq!(log.commit_pipelined(change, UnixMs(i as i64)).unwrap(), Some(i + 1));
        }
        assert_eq!(log.last_seq(), 5, "the write in flight has its number");
        // A plain commit waits for the pipelined ones, then follows them.
        let mut change = Change::new();
        change.put(cf::TLOG_INDEX, b"last", &99u64);
        assert_eq!(log.commit(change, UnixMs(9)).unwrap(), Some(6));
        let seqs: Vec<u64> = entries_after(&store, 0, 10).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6]);
        let mut change = Change::new();
        change.put(cf::TLOG_INDEX, b"after", &1u64);
        log.commit_pipelined(change, UnixMs(10)).unwrap();
        drop(log);
        assert_eq!(store.get::<u64>(cf::TLOG_INDEX, b"after").unwrap(), Some(1), "dropping the writer drains it");
    }

    #[test]
    fn a_region_refuses_a_frame_or_a_value_of_an_unknown_version_and_applies_nothing_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let region = Store::open(dir.path()).unwrap();
        let put = |seq: u64, value: Vec<u8>| Entry {
            seq,
            at: UnixMs(seq as i64),
            ops: vec![Op::Put { cf: cf::TLOG_INDEX.name().into(), key: be(seq).to_vec(), value }],
        };
        let known = |n: u64| svc_store::encode_value(&n).unwrap();
        // A frame's payload: a running hash, then the entry.
        let payload = |entry: &Entry| postcard::to_extend(entry, vec![7u8; 32]).unwrap();
        let mut bytes = Vec::new();
        svc_core::frames::encode(1, &payload(&put(1, known(1))), &mut bytes);
        // A frame of a newer version: the reader stops at it, naming it.
        let newer = svc_core::frames::VERSION + 1;
        svc_core::frames::encode_versioned(2, newer, &payload(&put(2, known(2))), &mut bytes);
        let applied = apply_frames(&region, &bytes).unwrap();
        assert_eq!((applied.last, applied.entries), (1, 1));
        assert!(applied.refused.as_deref().unwrap().contains(&format!("frame 2 has version {newer}")), "{applied:?}");
        assert_eq!(region.get::<u64>(cf::TLOG_INDEX, &be(2)).unwrap(), None);

        // A frame this build reads, holding a value of a newer version.
        let mut value = known(2);
        value[0] = svc_store::VALUE_VERSION + 1;
        let mut bytes = Vec::new();
        svc_core::frames::encode(2, &payload(&put(2, value)), &mut bytes);
        let applied = apply_frames(&region, &bytes).unwrap();
        assert_eq!((applied.last, applied.entries), (1, 0));
        let refused = applied.refused.unwrap();
        assert!(refused.contains("frame 2 holds") && refused.contains("tlog_index has version 2"), "{refused}");

        // And a write to a column family this build does not know.
        let unknown_cf = Entry {
            seq: 2,
            at: UnixMs(2),
            ops: vec![Op::Put { cf: "tomorrow".into(), key: b"k".to_vec(), value: known(2) }],
        };
        let mut bytes = Vec::new();
        svc_core::frames::encode(2, &payload(&unknown_cf), &mut bytes);
        let applied = apply_frames(&region, &bytes).unwrap();
        assert_eq!(applied.entries, 0);
        assert!(applied.refused.unwrap().contains("unknown column family tomorrow"));

        // And a write to a family the store has but replication does not
        // own (a region's own nonces): a frame is never a way in.
        let home_only = Entry {
            seq: 2,
            at: UnixMs(2),
            ops: vec![Op::Put { cf: cf::NONCES.name().into(), key: b"k".to_vec(), value: known(2) }],
        };
        let mut bytes = Vec::new();
        svc_core::frames::encode(2, &payload(&home_only), &mut bytes);
        let applied = apply_frames(&region, &bytes).unwrap();
        assert_eq!(applied.entries, 0);
        assert!(applied.refused.unwrap().contains("replication does not own"));
        assert!(!region.contains(cf::NONCES.named(), b"k").unwrap());
        assert_eq!(last_seq(&region).unwrap(), 1, "nothing past the last good frame is logged");
    }

    #[test]
    fn a_store_written_before_version_bytes_is_migrated_once_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let block = svc_store::model::Block {
            business_uuid: "b1".into(),
            group_id: "g1".into(),
            since: svc_core::time::UnixMs(5),
        };
        fn old<T: serde::Serialize>(value: &T) -> Vec<u8> {
            postcard::to_stdvec(value).unwrap()
        }
        // A log entry whose put carries the value as that build stored it.
        let entry = |seq: u64| Entry {
            seq,
            at: svc_core::time::UnixMs(seq as i64),
            ops: vec![Op::Put {
                cf: cf::BLOCKS.name().into(),
                key: svc_store::keys::block("b1", "g1"),
                value: old(&block),
            }],
        };
        svc_store::testing::legacy_store(
            dir.path(),
            &[
                (cf::BLOCKS.name(), &svc_store::keys::block("b1", "g1")[..], old(&block)),
                (cf::meta::INDEX_APPLIED_SEQ.name(), svc_store::keys::meta::INDEX_APPLIED_SEQ, old(&42u64)),
                (crate::replication::REPLOG.name(), &be(1)[..], old(&entry(1))),
                (crate::replication::REPLOG.name(), &be(2)[..], old(&entry(2))),
                // A marker an older build stored with an empty value.
                (cf::NONCES.name(), &svc_store::keys::nonce(7, "k", "n")[..], Vec::new()),
            ],
        );
        // A bare open does not know an entry's shape, and says so.
        let bare = tempfile::tempdir().unwrap();
        svc_store::testing::legacy_store(
            bare.path(),
            &[(crate::replication::REPLOG.name(), &be(1)[..], old(&entry(1)))],
        );
        assert!(matches!(Store::open(bare.path()), Err(svc_store::StoreError::LegacyLog)));
        let store = Store::open_migrating(dir.path(), svc_store::MemoryBudget::DEFAULT, legacy_log_entry).unwrap();
        let check = |store: &Store| {
            assert_eq!(
                store.get::<svc_store::model::Block>(cf::BLOCKS, &svc_store::keys::block("b1", "g1")).unwrap(),
                Some(block.clone())
            );
            assert_eq!(
                store.get::<u64>(cf::meta::INDEX_APPLIED_SEQ, svc_store::keys::meta::INDEX_APPLIED_SEQ).unwrap(),
                Some(42)
            );
            // The log's entries, and the values they carry, read as this
            // build writes them (a region is sent them so, and applies them).
            let log = entries_after(store, 0, 10).unwrap();
            assert_eq!(log.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
            for e in &log {
                let Op::Put { cf: name, value, .. } = &e.ops[0] else { panic!("a put") };
                assert_eq!(name, cf::BLOCKS.name());
                assert_eq!(svc_store::decode(cf::BLOCKS, value).unwrap(), block);
            }
            assert_eq!(store.scan::<()>(cf::NONCES, &[], None, 10).unwrap().len(), 1);
            for name in cf::ALL {
                assert_eq!(
                    store.get::<u8>(cf::meta::SCHEMA, &svc_store::keys::schema(name)).unwrap(),
                    Some(svc_store::SCHEMA_VERSION),
                    "{name}"
                );
                assert!(!store.contains(cf::meta::MIGRATING, &svc_store::keys::migrating(name)).unwrap(), "{name}");
            }
        };
        check(&store);
        drop(store);
        // Opened again, nothing is given a second byte.
        check(&Store::open(dir.path()).unwrap());
    }
}
