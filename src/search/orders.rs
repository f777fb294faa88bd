//! Each segment's documents of one country in the order of a sort key,
//! built once per segment, key and country and kept while the segment
//! lives. (By country, since every search names one, and a sort key may go
//! with the country: a market's products can all be older than another's.) A search sorted by a
//! field then walks its documents best first and stops once it holds its
//! rows, instead of visiting every match: what index sorting does for one
//! key, for every key a collection sorts by.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use tantivy::columnar::Cardinality;
use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader};

use super::schema::f64_column;

/// A segment's documents by one sort column.
pub struct SortOrder {
    /// Documents with a value, by their first value, lowest first.
    present: Vec<(f64, DocId)>,
    /// Documents without one: they sort last whatever the direction.
    missing: Vec<DocId>,
    /// At most one value per document, so a range on the column bounds
    /// where its matches lie in `present`.
    single_valued: bool,
}

impl SortOrder {
    /// The order of `docs` (ascending ids) by `column`.
    fn build(segment: &SegmentReader, column: &str, docs: Vec<DocId>) -> SortOrder {
        let Some(values) = f64_column(segment, column) else {
            return SortOrder { present: Vec::new(), missing: docs, single_valued: true };
        };
        let mut present = Vec::with_capacity(docs.len());
        let mut missing = Vec::new();
        for doc in docs {
            match values.first(doc) {
                Some(v) => present.push((v, doc)),
                None => missing.push(doc),
            }
        }
        present.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        SortOrder { present, missing, single_valued: values.get_cardinality() != Cardinality::Multivalued }
    }

    /// How many documents it orders.
    pub fn len(&self) -> usize {
        self.present.len() + self.missing.len()
    }

    /// The documents best first, with their first values: ascending or
    /// descending, then those without a value. A single-valued column
    /// bounded by `range` (which a match must satisfy) gives only the
    /// documents within it.
    pub fn walk(
        &self,
        descending: bool,
        range: Option<(Bound<f64>, Bound<f64>)>,
    ) -> Box<dyn Iterator<Item = (Option<f64>, DocId)> + '_> {
        let (mut from, mut to) = (0, self.present.len());
        let mut missing: &[DocId] = &self.missing;
        if let Some((low, high)) = range.filter(|_| self.single_valued) {
            from = match low {
                Bound::Included(l) => self.present.partition_point(|(v, _)| *v < l),
                Bound::Excluded(l) => self.present.partition_point(|(v, _)| *v <= l),
                Bound::Unbounded => 0,
            };
            to = match high {
                Bound::Included(h) => self.present.partition_point(|(v, _)| *v <= h),
                Bound::Excluded(h) => self.present.partition_point(|(v, _)| *v < h),
                Bound::Unbounded => self.present.len(),
            };
            to = to.max(from);
            // A document without a value satisfies no range.
            missing = &[];
        }
        let present = self.present[from..to].iter().map(|(v, d)| (Some(*v), *d));
        let missing = missing.iter().map(|d| (None, *d));
        if descending { Box::new(present.rev().chain(missing)) } else { Box::new(present.chain(missing)) }
    }
}

/// The orders built so far, by segment, column and country.
#[derive(Default)]
pub struct SortOrders {
    built: Mutex<HashMap<(SegmentId, String, String), Arc<SortOrder>>>,
}

impl SortOrders {
    /// The order of `segment`'s documents in `country` by `column`, built
    /// on first use from `country_docs`. Orders of segments the searcher no
    /// longer holds (merged away) are dropped then.
    pub fn get(
        &self,
        segment: &SegmentReader,
        column: &str,
        country: &str,
        country_docs: impl FnOnce() -> Vec<DocId>,
        searcher: &Searcher,
    ) -> Arc<SortOrder> {
        let key = (segment.segment_id(), column.to_owned(), country.to_owned());
        if let Some(order) = self.built.lock().ok().and_then(|b| b.get(&key).cloned()) {
            return order;
        }
        // Built outside the lock: another search may build it too, once.
        let order = Arc::new(SortOrder::build(segment, column, country_docs()));
        let live: Vec<SegmentId> = searcher.segment_readers().iter().map(SegmentReader::segment_id).collect();
        if let Ok(mut built) = self.built.lock() {
            built.retain(|(id, _, _), _| live.contains(id));
            built.insert(key, order.clone());
        }
        order
    }
}
