//! RocksDB: column families, postcard-encoded values, atomic write batches.
//!
//! Every value is postcard (a documented, stable serde format). JSON that
//! must be served byte for byte (records, envelopes, rows) is stored as bytes
//! inside those values, never re-encoded.

pub mod model;

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, DB, Direction, IteratorMode, Options, WriteBatch, WriteOptions};
use serde::{Serialize, de::DeserializeOwned};

/// Column families. One per kind of thing, named for it.
pub mod cf {
    pub const META: &str = "meta";
    pub const BUSINESSES: &str = "businesses";
    pub const CERTIFICATES: &str = "certificates";
    pub const INTEGRATION_KEYS: &str = "integration_keys";
    pub const PASSKEYS: &str = "passkeys";
    pub const MANDATES: &str = "mandates";
    pub const AI_POLICIES: &str = "ai_policies";
    pub const CUSTODY: &str = "custody";
    pub const COMPANIES: &str = "companies";
    pub const GROUPS: &str = "groups";
    pub const RETRIEVAL_KEYS: &str = "retrieval_keys";
    pub const BLOCKS: &str = "blocks";
    pub const TERMS: &str = "terms";
    pub const ALLOWANCES: &str = "allowances";
    pub const RECORDS: &str = "records";
    pub const VERSIONS: &str = "versions";
    pub const PUSHES: &str = "pushes";
    pub const PUSH_RESULTS: &str = "push_results";
    pub const ATTEMPTS: &str = "attempts";
    pub const SEQS: &str = "seqs";
    pub const IDEMPOTENCY: &str = "idempotency";
    /// Billed requests, one per (key id, nonce).
    pub const USAGE: &str = "usage";
    /// Billed requests counted per company and UTC day.
    pub const USAGE_DAYS: &str = "usage_days";
    /// Receipts this region issued, by its own sequence (served order).
    pub const RECEIPTS: &str = "receipts";
    /// Receipts by group and time: group, served ms, sequence.
    pub const RECEIPTS_BY_GROUP: &str = "receipts_by_group";
    /// Each receipt's served time and Merkle leaf hash, by its sequence:
    /// what folding reads, a fraction of the receipt's size.
    pub const RECEIPT_LEAVES: &str = "receipt_leaves";
    /// Each receipt's sequence by its leaf hash, written as it is stored, so
    /// a proof finds its part without the fold writing every place.
    pub const RECEIPT_SEQS: &str = "receipt_seqs";
    /// Analytics: business, hour, country, group → counts, folded from receipts.
    pub const ANALYTICS: &str = "analytics";
    /// Businesses whose authorised endpoints are suspended.
    pub const ENDPOINTS: &str = "endpoints";
    /// Claimed nonces by expiry: expires (Unix seconds), key id, nonce.
    pub const NONCES: &str = "nonces";
    pub const UPLOADS: &str = "uploads";
    /// Home-only index: business, type, record id.
    pub const CATALOGUE: &str = "catalogue";
    pub const REPLOG: &str = "replog";
    /// A read region's reports to home, in order: claims, usage, lease returns.
    pub const OUTBOX: &str = "outbox";
    /// Home's fan-out of claimed nonces, by sequence.
    pub const NONCE_FEED: &str = "nonce_feed";
    /// Home: allowance units set aside for regions, by lease id.
    pub const LEASES_GRANTED: &str = "leases_granted";
    /// A read region: the lease it serves each company from.
    pub const LEASES_HELD: &str = "leases_held";
    /// Folded receipt roots, by region and first receipt: a region's own,
    /// and at home every region's.
    pub const RECEIPT_ROOTS: &str = "receipt_roots";
    /// The key set home certified (replicated): its entries and document.
    pub const KEY_SET: &str = "key_set";
    /// Home: leaves waiting for the next hourly sequencing, by leaf hash.
    pub const TLOG_PENDING: &str = "tlog_pending";
    /// The transparency log (replicated): leaves by index, the index of each
    /// leaf hash, and every signed checkpoint by tree size.
    pub const TLOG_LEAVES: &str = "tlog_leaves";
    pub const TLOG_INDEX: &str = "tlog_index";
    pub const TLOG_CHECKPOINTS: &str = "tlog_checkpoints";
    /// A region's folded receipts: each receipt's leaf hash to its part and
    /// place, and each part's leaf hashes (for the first level of a proof).
    pub const RECEIPT_PLACES: &str = "receipt_places";
    pub const RECEIPT_PARTS: &str = "receipt_parts";

    pub const ALL: &[&str] = &[
        META,
        BUSINESSES,
        CERTIFICATES,
        INTEGRATION_KEYS,
        PASSKEYS,
        MANDATES,
        AI_POLICIES,
        CUSTODY,
        COMPANIES,
        GROUPS,
        RETRIEVAL_KEYS,
        BLOCKS,
        TERMS,
        ALLOWANCES,
        RECORDS,
        VERSIONS,
        PUSHES,
        PUSH_RESULTS,
        ATTEMPTS,
        SEQS,
        IDEMPOTENCY,
        USAGE,
        USAGE_DAYS,
        RECEIPTS,
        RECEIPTS_BY_GROUP,
        RECEIPT_LEAVES,
        RECEIPT_SEQS,
        ANALYTICS,
        ENDPOINTS,
        NONCES,
        UPLOADS,
        CATALOGUE,
        REPLOG,
        OUTBOX,
        NONCE_FEED,
        LEASES_GRANTED,
        LEASES_HELD,
        KEY_SET,
        RECEIPT_ROOTS,
        TLOG_PENDING,
        TLOG_LEAVES,
        TLOG_INDEX,
        TLOG_CHECKPOINTS,
        RECEIPT_PLACES,
        RECEIPT_PARTS,
    ];
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Rocks(#[from] rocksdb::Error),
    #[error("stored value does not decode: {0}")]
    Decode(#[from] postcard::Error),
    #[error("unknown column family {0}")]
    NoColumnFamily(&'static str),
    #[error("the log committer stopped")]
    Closed,
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A column family's options.
fn cf_options(name: &str) -> Options {
    let mut opts = Options::default();
    if name == cf::RECEIPTS {
        // Every answer writes a receipt of a few kilobytes: the bulk of what
        // a serving region writes. Its envelope is mostly base64, which LZ4
        // shrinks by a tenth at most, and compressing it was most of a
        // flush's CPU. A smaller memtable makes each flush short: a flush
        // takes a core from the workers for its length, and a long one
        // stalled answers for tens of milliseconds.
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_write_buffer_size(16 << 20);
        // Room for a flush that falls behind, before writes wait for it.
        opts.set_max_write_buffer_number(4);
    } else {
        opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    }
    opts
}

/// A node's embedded database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<DB>,
}

impl Store {
    pub fn open(path: &Path) -> StoreResult<Store> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.increase_parallelism(2);
        // Write files out a megabyte at a time: a flush that leaves tens of
        // megabytes dirty makes the kernel throttle every writer at once,
        // and the WAL appends of the serving path stall with it.
        opts.set_bytes_per_sync(1 << 20);
        opts.set_wal_bytes_per_sync(1 << 20);
        opts.set_recycle_log_file_num(4);
        opts.set_avoid_unnecessary_blocking_io(true);
        let cfs = cf::ALL.iter().map(|name| ColumnFamilyDescriptor::new(*name, cf_options(name)));
        let db = DB::open_cf_descriptors(&opts, path, cfs)?;
        Ok(Store { db: Arc::new(db) })
    }

    fn handle(&self, name: &'static str) -> StoreResult<&rocksdb::ColumnFamily> {
        self.db.cf_handle(name).ok_or(StoreError::NoColumnFamily(name))
    }

    pub fn get<T: DeserializeOwned>(&self, cf: &'static str, key: &[u8]) -> StoreResult<Option<T>> {
        match self.db.get_pinned_cf(self.handle(cf)?, key)? {
            Some(bytes) => Ok(Some(postcard::from_bytes(&bytes)?)),
            None => Ok(None),
        }
    }

    pub fn contains(&self, cf: &'static str, key: &[u8]) -> StoreResult<bool> {
        Ok(self.db.get_pinned_cf(self.handle(cf)?, key)?.is_some())
    }

    /// Every (key, value) whose key starts with `prefix`, in key order,
    /// starting at `from` (inclusive) when given, at most `limit`.
    pub fn scan<T: DeserializeOwned>(
        &self,
        cf: &'static str,
        prefix: &[u8],
        from: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<(Vec<u8>, T)>> {
        let start = from.unwrap_or(prefix);
        let iter = self.db.iterator_cf(self.handle(cf)?, IteratorMode::From(start, Direction::Forward));
        let mut out = Vec::new();
        for item in iter {
            let (key, value) = item?;
            if !key.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push((key.to_vec(), postcard::from_bytes(&value)?));
        }
        Ok(out)
    }

    /// The entry with the greatest key at or before `at`.
    pub fn at_or_before<T: DeserializeOwned>(&self, cf: &'static str, at: &[u8]) -> StoreResult<Option<(Vec<u8>, T)>> {
        let mut iter = self.db.iterator_cf(self.handle(cf)?, IteratorMode::From(at, Direction::Reverse));
        match iter.next() {
            Some(item) => {
                let (key, value) = item?;
                Ok(Some((key.to_vec(), postcard::from_bytes(&value)?)))
            }
            None => Ok(None),
        }
    }

    /// The last key of a column family (the highest sequence of a log).
    pub fn last_key(&self, cf: &'static str) -> StoreResult<Option<Vec<u8>>> {
        let mut iter = self.db.iterator_cf(self.handle(cf)?, IteratorMode::End);
        match iter.next() {
            Some(item) => Ok(Some(item?.0.to_vec())),
            None => Ok(None),
        }
    }

    pub fn batch(&self) -> Batch<'_> {
        Batch { store: self, batch: WriteBatch::default(), error: None }
    }

    /// A single put, synced.
    pub fn put<T: Serialize>(&self, cf: &'static str, key: &[u8], value: &T) -> StoreResult<()> {
        let mut batch = self.batch();
        batch.put(cf, key, value);
        batch.commit()
    }
}

/// An atomic group of writes. `commit` writes them all or none, synced to
/// disk: whatever a commit acknowledged survives a crash.
pub struct Batch<'a> {
    store: &'a Store,
    batch: WriteBatch,
    error: Option<StoreError>,
}

impl Batch<'_> {
    pub fn put<T: Serialize>(&mut self, cf: &'static str, key: &[u8], value: &T) {
        match (self.store.handle(cf), postcard::to_stdvec(value)) {
            (Ok(handle), Ok(bytes)) => self.batch.put_cf(handle, key, bytes),
            (Err(e), _) => self.error = Some(e),
            (_, Err(e)) => self.error = Some(e.into()),
        }
    }

    /// Writes bytes that are already postcard-encoded.
    pub fn put_raw(&mut self, cf: &'static str, key: &[u8], value: &[u8]) {
        match self.store.handle(cf) {
            Ok(handle) => self.batch.put_cf(handle, key, value),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn delete(&mut self, cf: &'static str, key: &[u8]) {
        match self.store.handle(cf) {
            Ok(handle) => self.batch.delete_cf(handle, key),
            Err(e) => self.error = Some(e),
        }
    }

    /// Deletes every key from `from` up to, not including, `to`: one range
    /// tombstone, however many keys it covers.
    pub fn delete_range(&mut self, cf: &'static str, from: &[u8], to: &[u8]) {
        match self.store.handle(cf) {
            Ok(handle) => self.batch.delete_range_cf(handle, from, to),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    pub fn commit(self) -> StoreResult<()> {
        self.write(true)
    }

    /// Commits without waiting for the disk: survives a crash of the process
    /// (the write-ahead log is in the operating system's hands) but not of the
    /// machine. For state that is cheap to lose that way, such as nonces.
    pub fn commit_unsynced(self) -> StoreResult<()> {
        self.write(false)
    }

    fn write(self, sync: bool) -> StoreResult<()> {
        let store = self.store.clone();
        store.write_ready(self.ready()?, sync)
    }

    /// The batch, checked, to be written later or from another thread.
    pub fn ready(self) -> StoreResult<ReadyBatch> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(ReadyBatch(self.batch)),
        }
    }
}

/// A checked batch of writes that owns its data.
pub struct ReadyBatch(WriteBatch);

impl Store {
    /// Writes a ready batch atomically; `sync` waits for the disk.
    pub fn write_ready(&self, batch: ReadyBatch, sync: bool) -> StoreResult<()> {
        let mut opts = WriteOptions::default();
        opts.set_sync(sync);
        self.db.write_opt(batch.0, &opts)?;
        Ok(())
    }
}

/// Key building: parts joined by 0x00, numbers big-endian so keys sort.
pub fn key(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(part);
    }
    out
}

pub fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// The number a key written with `be` holds (`None` for any other length).
pub fn from_be(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_atomic_and_scans_are_ordered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut batch = store.batch();
        for n in [3u64, 1, 2] {
            batch.put(cf::REPLOG, &be(n), &format!("entry {n}"));
        }
        batch.commit().unwrap();
        let all: Vec<(Vec<u8>, String)> = store.scan(cf::REPLOG, &[], None, 10).unwrap();
        assert_eq!(all.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(), ["entry 1", "entry 2", "entry 3"]);
        assert_eq!(store.last_key(cf::REPLOG).unwrap(), Some(be(3).to_vec()));
        drop(store);
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.get::<String>(cf::REPLOG, &be(2)).unwrap().as_deref(), Some("entry 2"));
    }
}
