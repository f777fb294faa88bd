//! Each segment's rows held in memory by document, so a search copies its
//! hits' rows rather than reading tantivy's doc store back per hit (a
//! block copied and a document decoded each; issue 51, section 1).
//!
//! Read by tantivy's warmer while a reader reloads, before the new searcher
//! is handed out, so no search waits on a segment's rows; a reload also
//! lets go of the rows of segments its searcher no longer holds (a search
//! still on an older searcher reads those from the doc store). A segment's
//! store is read with plain reads, not through the index's mapping, so its
//! pages are not held twice. Every shard's rows together stay within one
//! budget (`index_rows_memory_mib`); a segment that does not fit, or whose
//! store did not read, is served from the doc store as before.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use tantivy::directory::FileSlice;
use tantivy::directory::footer::Footer;
use tantivy::index::{SegmentComponent, SegmentId};
use tantivy::schema::{Field, Value};
use tantivy::store::StoreReader;
use tantivy::{DocId, Searcher, SearcherGeneration, SegmentReader, TantivyDocument, Warmer};
use tantivy_common::file_slice::WrapFile;

/// One segment's rows and ids texts, back to back in document order.
struct SegmentRows {
    bytes: Vec<u8>,
    /// Where each text ends: document `d`'s row ends at `ends[2d]`, its
    /// ids at `ends[2d + 1]`; each starts where the one before ended.
    ends: Vec<usize>,
}

impl SegmentRows {
    fn read(store: &StoreReader, max_doc: DocId, (row, ids): (Field, Field)) -> tantivy::Result<SegmentRows> {
        let mut rows = SegmentRows {
            bytes: Vec::with_capacity(store.space_usage().data_usage().get_bytes() as usize),
            ends: Vec::with_capacity(2 * max_doc as usize),
        };
        // Deleted documents too: a document's place is its id.
        for doc in store.iter::<TantivyDocument>(None) {
            let doc = doc?;
            for field in [row, ids] {
                rows.bytes.extend_from_slice(doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").as_bytes());
                rows.ends.push(rows.bytes.len());
            }
        }
        rows.bytes.shrink_to_fit();
        Ok(rows)
    }

    /// Document `doc`'s row and ids; `None` for a document it lacks or one
    /// stored without them.
    fn get(&self, doc: DocId) -> Option<(&[u8], &[u8])> {
        let at = 2 * doc as usize;
        let start = if at == 0 { 0 } else { *self.ends.get(at - 1)? };
        let (middle, end) = (*self.ends.get(at)?, *self.ends.get(at + 1)?);
        Some((&self.bytes[start..middle], &self.bytes[middle..end])).filter(|(r, i)| !r.is_empty() && !i.is_empty())
    }

    fn size(&self) -> usize {
        self.bytes.len() + self.ends.len() * size_of::<usize>()
    }
}

/// The memory every shard's rows may take together.
pub struct RowsBudget {
    capacity: usize,
    used: AtomicUsize,
}

impl RowsBudget {
    pub fn new(capacity: usize) -> Arc<RowsBudget> {
        Arc::new(RowsBudget { capacity, used: AtomicUsize::new(0) })
    }

    /// Takes `bytes` if they fit.
    fn take(&self, bytes: usize) -> bool {
        let fits = |used: usize| used.checked_add(bytes).filter(|total| *total <= self.capacity);
        self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, fits).is_ok()
    }

    fn give(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// One shard's rows by segment: the warmer its reader calls on reload.
pub struct ShardRows {
    dir: PathBuf,
    fields: (Field, Field),
    budget: Arc<RowsBudget>,
    /// By segment: its rows, or `None` for one left out (it did not fit,
    /// or did not read), which is not tried again while it lives.
    segments: RwLock<HashMap<SegmentId, Option<SegmentRows>>>,
    /// Rows a search read from the doc store instead (a segment not held).
    from_store: AtomicU64,
}

impl ShardRows {
    /// For the shard in `dir`, holding the `row` and `ids` stored fields,
    /// within `budget`.
    pub fn new(dir: PathBuf, fields: (Field, Field), budget: Arc<RowsBudget>) -> ShardRows {
        ShardRows { dir, fields, budget, segments: RwLock::default(), from_store: AtomicU64::new(0) }
    }

    /// A document's row and ids, copied out of memory.
    pub fn get(&self, segment: &SegmentReader, doc: DocId) -> Option<(Vec<u8>, Vec<u8>)> {
        let segments = self.segments.read().ok()?;
        let (row, ids) = segments.get(&segment.segment_id())?.as_ref()?.get(doc)?;
        Some((row.to_vec(), ids.to_vec()))
    }

    /// Counts a row read from the doc store.
    pub fn read_from_store(&self) {
        self.from_store.fetch_add(1, Ordering::Relaxed);
    }

    /// Segments held, the bytes they take, and rows read from the doc store.
    pub fn held(&self) -> (usize, u64, u64) {
        let segments = self.segments.read().map(|s| {
            let held: Vec<&SegmentRows> = s.values().flatten().collect();
            (held.len(), held.iter().map(|r| r.size() as u64).sum())
        });
        let (count, bytes) = segments.unwrap_or_default();
        (count, bytes, self.from_store.load(Ordering::Relaxed))
    }

    /// Reads a segment's rows if they fit the budget; `None` if not.
    fn load(&self, searcher: &Searcher, segment: &SegmentReader) -> tantivy::Result<Option<SegmentRows>> {
        let meta = searcher.index().new_segment_meta(segment.segment_id(), segment.max_doc());
        let file = std::fs::File::open(self.dir.join(meta.relative_path(SegmentComponent::Store)))?;
        // The directory's footer (its checksum) follows the store's bytes.
        let (_, store) = Footer::extract_footer(FileSlice::new(Arc::new(WrapFile::new(file)?)))?;
        let store = StoreReader::open(store, 0)?;
        // At most the store's bytes (the documents' other fields too) and
        // the ends; what the rows did not take goes back.
        let most =
            store.space_usage().data_usage().get_bytes() as usize + 2 * segment.max_doc() as usize * size_of::<usize>();
        if !self.budget.take(most) {
            return Ok(None);
        }
        match SegmentRows::read(&store, segment.max_doc(), self.fields) {
            Ok(rows) if rows.size() <= most => {
                self.budget.give(most - rows.size());
                Ok(Some(rows))
            }
            // Larger than the bound it was charged (a store compressed by
            // other settings): not held.
            Ok(_) => {
                self.budget.give(most);
                Ok(None)
            }
            Err(e) => {
                self.budget.give(most);
                Err(e)
            }
        }
    }
}

impl Warmer for ShardRows {
    /// Never fails the reload: a segment left out is read from its doc
    /// store, as before rows were held.
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        let live: HashSet<SegmentId> = searcher.segment_readers().iter().map(SegmentReader::segment_id).collect();
        if let Ok(mut held) = self.segments.write() {
            held.retain(|id, rows| {
                let keep = live.contains(id);
                if let (false, Some(rows)) = (keep, rows) {
                    self.budget.give(rows.size());
                }
                keep
            });
        }
        for segment in searcher.segment_readers() {
            let id = segment.segment_id();
            if self.segments.read().is_ok_and(|held| held.contains_key(&id)) {
                continue;
            }
            // A segment left out is not tried again while it lives.
            let rows = match self.load(searcher, segment) {
                Ok(Some(rows)) => Some(rows),
                Ok(None) => {
                    tracing::info!(dir = %self.dir.display(), segment = %id.short_uuid_string(),
                        "a segment's rows do not fit index_rows_memory_mib; its searches read them from the doc store");
                    None
                }
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), segment = %id.short_uuid_string(), error = %e,
                        "a segment's rows did not read into memory; its searches read them from the doc store");
                    None
                }
            };
            match self.segments.write() {
                Ok(mut held) => {
                    held.insert(id, rows);
                }
                Err(_) => self.budget.give(rows.map_or(0, |r| r.size())),
            }
        }
        Ok(())
    }

    /// Nothing to collect: each reload already let go of the segments its
    /// searcher no longer holds.
    fn garbage_collect(&self, _live_generations: &[&SearcherGeneration]) {}
}

impl Drop for ShardRows {
    fn drop(&mut self) {
        let held =
            self.segments.get_mut().map(|held| held.values().flatten().map(SegmentRows::size).sum()).unwrap_or(0);
        self.budget.give(held);
    }
}
