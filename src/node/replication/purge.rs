//! Purging deleted records' bytes from this node's copy of the log.
//!
//! A delete clears every version's bytes in the store at once; the log
//! entries written before it still hold them, and a region that joins
//! later would receive them. Each node rewrites those entries in place:
//! a version keeps its seal (the fingerprint), a head keeps its ids.

use std::collections::{HashMap, HashSet};

use svc_store::model::{Purge, RecordHead, RecordVersion};
use svc_store::{Store, StoreResult, be, cf, decode, encode, keys};

use super::{Entry, Op};

/// Entries read and rewritten per write.
const PAGE: usize = 256;

/// What one sweep purges: the version keys, and each record's purged
/// generations (a later push of the same id is not purged).
#[derive(Debug, Default)]
pub struct Pending {
    versions: HashSet<Vec<u8>>,
    records: HashMap<Vec<u8>, u64>,
}

impl Pending {
    pub fn new(purges: &[Purge]) -> Pending {
        let mut pending = Pending::default();
        for purge in purges {
            for generation in 1..=purge.generations {
                pending.versions.insert(keys::version(&purge.record_id, generation));
            }
            pending.records.insert(purge.record_id.as_bytes().to_vec(), purge.generations);
        }
        pending
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The purged value of one put, or `None` when it holds nothing to purge.
    fn scrub(&self, family: &str, key: &[u8], value: &[u8]) -> StoreResult<Option<Vec<u8>>> {
        if family == cf::VERSIONS.name() && self.versions.contains(key) {
            let mut version: RecordVersion = decode(cf::VERSIONS, value)?;
            if !version.purge_content() {
                return Ok(None);
            }
            return encode(cf::VERSIONS, &version).map(Some);
        }
        if family == cf::RECORDS.name()
            && let Some(generations) = self.records.get(key)
        {
            let mut head: RecordHead = decode(cf::RECORDS, value)?;
            if head.generation > *generations || head.prices.is_empty() {
                return Ok(None);
            }
            head.prices.clear();
            return encode(cf::RECORDS, &head).map(Some);
        }
        Ok(None)
    }

    /// Purges one entry in place; answers whether anything changed.
    pub fn scrub_entry(&self, entry: &mut Entry) -> StoreResult<bool> {
        let mut changed = false;
        for op in &mut entry.ops {
            if let Op::Put { cf: family, key, value } = op
                && let Some(purged) = self.scrub(family, key, value)?
            {
                *value = purged;
                changed = true;
            }
        }
        Ok(changed)
    }
}

/// What a sweep rewrote: how many entries, and the first and last of them
/// (the span of the log whose old values a compaction then drops).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub entries: u64,
    pub span: Option<(u64, u64)>,
}

/// Rewrites every entry up to `through` that still holds a purged
/// record's bytes. Only entries already written are read, so the log's one
/// writer is never raced on a key.
pub fn sweep(store: &Store, pending: &Pending, through: u64) -> StoreResult<Swept> {
    let mut swept = Swept::default();
    let mut from = 1u64;
    while !pending.is_empty() && from <= through {
        let page = store.scan::<Entry>(crate::replication::REPLOG, &[], Some(&be(from)), PAGE)?;
        let Some(last) = page.last().map(|(_, e)| e.seq) else { break };
        let mut batch = store.batch();
        for (key, mut entry) in page.into_iter().filter(|(_, e)| e.seq <= through) {
            if pending.scrub_entry(&mut entry)? {
                batch.put(crate::replication::REPLOG, &key, &entry);
                swept.entries += 1;
                let first = swept.span.map_or(entry.seq, |(first, _)| first);
                swept.span = Some((first, entry.seq));
            }
        }
        batch.commit()?;
        from = last + 1;
    }
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::time::UnixMs;
    use svc_store::encode_value;

    fn version(record_id: &str, generation: u64) -> RecordVersion {
        RecordVersion {
            record_id: record_id.into(),
            generation,
            bytes: b"{\"product_name\":\"Secret lamp\"}".to_vec(),
            seal: b"{\"seal\":1}".to_vec(),
            sidecar: b"sidecar".to_vec(),
            row: b"row".to_vec(),
            published_at: UnixMs(1),
            push_id: "bat_1".into(),
        }
    }

    fn put(family: &str, key: Vec<u8>, value: Vec<u8>) -> Op {
        Op::Put { cf: family.into(), key, value }
    }

    #[test]
    fn only_the_purged_generations_lose_their_bytes_and_the_seal_stays() {
        let purge = Purge { record_id: "r1".into(), generations: 1, deleted_at: UnixMs(5) };
        let pending = Pending::new(&[purge]);
        let later = version("r1", 2);
        let other = version("r2", 1);
        let mut entry = Entry {
            seq: 3,
            at: UnixMs(2),
            ops: vec![
                put(cf::VERSIONS.name(), keys::version("r1", 1), encode_value(&version("r1", 1)).unwrap()),
                put(cf::VERSIONS.name(), keys::version("r1", 2), encode_value(&later).unwrap()),
                put(cf::VERSIONS.name(), keys::version("r2", 1), encode_value(&other).unwrap()),
            ],
        };
        assert!(pending.scrub_entry(&mut entry).unwrap());
        let read = |i: usize| match &entry.ops[i] {
            Op::Put { value, .. } => decode::<RecordVersion>(cf::VERSIONS, value).unwrap(),
            Op::Delete { .. } => unreachable!(),
        };
        let purged = read(0);
        assert!(purged.bytes.is_empty() && purged.row.is_empty() && purged.sidecar.is_empty());
        assert_eq!(purged.seal, b"{\"seal\":1}", "the fingerprint stays");
        assert_eq!(read(1), later, "a version after the delete is another record's bytes");
        assert_eq!(read(2), other);
        assert!(!pending.scrub_entry(&mut entry).unwrap(), "a purged entry is left alone");
    }

    #[test]
    fn a_sweep_rewrites_the_entries_that_held_the_bytes_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut log = super::super::LogWriter::open(store.clone()).unwrap();
        for (record, generation) in [("r1", 1), ("r2", 1), ("r1", 2)] {
            let mut change = super::super::Change::new();
            change.put(cf::VERSIONS, &keys::version(record, generation), &version(record, generation));
            log.commit(change, UnixMs(1)).unwrap();
        }
        let pending = Pending::new(&[Purge { record_id: "r1".into(), generations: 2, deleted_at: UnixMs(5) }]);
        assert_eq!(sweep(&store, &pending, 3).unwrap(), Swept { entries: 2, span: Some((1, 3)) });
        assert_eq!(sweep(&store, &pending, 3).unwrap(), Swept::default(), "a second sweep finds nothing left");
        let entries = super::super::entries_after(&store, 0, 10).unwrap();
        let bytes = |e: &Entry| match &e.ops[0] {
            Op::Put { value, .. } => decode::<RecordVersion>(cf::VERSIONS, value).unwrap().bytes,
            Op::Delete { .. } => unreachable!(),
        };
        assert!(bytes(&entries[0]).is_empty() && bytes(&entries[2]).is_empty());
        assert!(!bytes(&entries[1]).is_empty(), "another record keeps its bytes");
    }
}
