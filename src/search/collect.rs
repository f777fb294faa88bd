//! The top-k collector: candidates ranked by the sort keys (then the
//! record id's hash), with exact near checks, stopping at the deadline.

use std::cmp::Ordering;

use svc_core::search::Direction;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocAddress, DocId, Score, SegmentReader};

use super::filter::DocFilter;
use super::schema::*;

/// A near condition, checked exactly per candidate.
#[derive(Clone)]
pub(super) struct Near {
    pub(super) lat_key: String,
    pub(super) lng_key: String,
    pub(super) lat: f64,
    pub(super) lng: f64,
    pub(super) radius_km: f64,
}

#[derive(Clone)]
pub(super) struct SortKey {
    /// `None` for `_text_match` (the BM25 score).
    pub(super) column: Option<String>,
    pub(super) direction: Direction,
}

/// A sort value; a missing one sorts last whatever the direction.
pub(super) type SortValue = Option<f64>;

/// A candidate's sort values, one per sort key (at most three; unused ones
/// stay `None` and are never compared). Held inline: no allocation per doc.
pub(super) type SortValues = [SortValue; svc_core::search::MAX_SORT_KEYS];

/// A candidate's sort values and its tie-break (the record id's hash).
pub(super) type Ranked = (SortValues, u64);

pub(super) fn compare(a: &Ranked, b: &Ranked, directions: &[Direction]) -> Ordering {
    for ((x, y), direction) in a.0.iter().zip(&b.0).zip(directions) {
        let order = match (x, y) {
            (Some(x), Some(y)) => {
                let o = x.partial_cmp(y).unwrap_or(Ordering::Equal);
                if *direction == Direction::Desc { o.reverse() } else { o }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.1.cmp(&b.1)
}

pub(super) fn sort_and_cut<T>(items: &mut Vec<(Ranked, T, DocAddress)>, limit: usize, directions: &[Direction]) {
    items.sort_by(|a, b| {
        compare(&a.0, &b.0, directions).then_with(|| (a.2.segment_ord, a.2.doc_id).cmp(&(b.2.segment_ord, b.2.doc_id)))
    });
    items.truncate(limit);
}

/// Keeps the best `limit` candidates by the sort keys.
pub(super) struct TopKeys {
    pub(super) limit: usize,
    pub(super) keys: Vec<SortKey>,
    pub(super) near: Vec<Near>,
}

/// A near condition's point columns in one segment, and its centre and radius.
pub(super) type NearColumns = (Option<Column<f64>>, Option<Column<f64>>, f64, f64, f64);

pub(super) struct TopKeysSegment {
    pub(super) ord: u32,
    pub(super) limit: usize,
    pub(super) directions: Vec<Direction>,
    pub(super) columns: Vec<Option<Option<Column<f64>>>>,
    pub(super) ties: Option<Column<u64>>,
    pub(super) near: Vec<NearColumns>,
    /// Conditions left out of the query, checked per candidate.
    pub(super) filter: Option<DocFilter>,
    pub(super) found: Vec<(Ranked, (), DocAddress)>,
    /// The last kept candidate once `limit` are kept: a later doc must beat
    /// it to be worth keeping.
    pub(super) worst: Option<Ranked>,
}

impl Collector for TopKeys {
    type Fruit = Vec<(Ranked, DocAddress)>;
    type Child = TopKeysSegment;

    fn for_segment(&self, ord: u32, segment: &SegmentReader) -> tantivy::Result<TopKeysSegment> {
        Ok(TopKeysSegment {
            ord,
            limit: self.limit,
            directions: self.keys.iter().map(|k| k.direction).collect(),
            columns: self.keys.iter().map(|k| k.column.as_ref().map(|c| f64_column(segment, c))).collect(),
            ties: tie_column(segment),
            near: self
                .near
                .iter()
                .map(|n| {
                    (
                        f64_column(segment, &format!("{VALUES}.{}", n.lat_key)),
                        f64_column(segment, &format!("{VALUES}.{}", n.lng_key)),
                        n.lat,
                        n.lng,
                        n.radius_km,
                    )
                })
                .collect(),
            filter: None,
            found: Vec::new(),
            worst: None,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.keys.iter().any(|k| k.column.is_none())
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let directions: Vec<Direction> = self.keys.iter().map(|k| k.direction).collect();
        let mut all: Vec<(Ranked, (), DocAddress)> = fruits.into_iter().flatten().map(|(k, d)| (k, (), d)).collect();
        sort_and_cut(&mut all, self.limit, &directions);
        Ok(all.into_iter().map(|(k, (), d)| (k, d)).collect())
    }
}

impl SegmentCollector for TopKeysSegment {
    type Fruit = Vec<(Ranked, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if self.filter.as_ref().is_some_and(|f| !f.matches(doc)) {
            return;
        }
        for (lat_column, lng_column, lat, lng, radius) in &self.near {
            let (Some(lats), Some(lngs)) = (lat_column, lng_column) else { return };
            let points: Vec<(f64, f64)> = lats.values_for_doc(doc).zip(lngs.values_for_doc(doc)).collect();
            if !svc_core::search::serve::any_within(&points, *lat, *lng, *radius) {
                return;
            }
        }
        let mut values: SortValues = Default::default();
        for (slot, c) in values.iter_mut().zip(&self.columns) {
            *slot = match c {
                None => Some(f64::from(score)),
                Some(column) => column.as_ref().and_then(|c| c.first(doc)),
            };
        }
        let key = (values, tie_of(&self.ties, doc));
        if let Some(worst) = &self.worst
            && compare(&key, worst, &self.directions) != Ordering::Less
        {
            return;
        }
        self.found.push((key, (), DocAddress::new(self.ord, doc)));
        // Cut now and then so a broad match stays within memory.
        if self.found.len() >= self.limit.max(1) * 8 {
            sort_and_cut(&mut self.found, self.limit, &self.directions);
            if self.found.len() == self.limit {
                self.worst = self.found.last().map(|(k, _, _)| *k);
            }
        }
    }

    fn harvest(mut self) -> Self::Fruit {
        sort_and_cut(&mut self.found, self.limit, &self.directions);
        self.found.into_iter().map(|(k, (), d)| (k, d)).collect()
    }
}
