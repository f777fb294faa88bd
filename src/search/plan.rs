//! How one shard answers a search, segment by segment: a walk by the first
//! sort key when there is no text, or the whole tantivy query.

use std::ops::Bound;
use std::time::Instant;

use svc_core::search::{Condition, Direction, Scalar, SearchQuery};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{EnableScoring, Query};
use tantivy::{DocAddress, DocId, Score, SegmentReader};

use super::SearchError;
use super::collect::*;
use super::filter::DocFilter;
use super::held::RecordIds;
use super::schema::*;
use super::shard::ShardReader;

/// How one shard answers a search, segment by segment.
pub(super) struct ShardPlan<'a> {
    pub(super) shard: &'a ShardReader,
    pub(super) searcher: &'a tantivy::Searcher,
    pub(super) q: &'a SearchQuery,
    pub(super) group: &'a str,
    pub(super) ids: &'a RecordIds,
    pub(super) collector: TopKeys,
    /// The whole query: built when a segment needs it.
    pub(super) whole: Option<(Box<dyn tantivy::query::Weight>, Vec<Near>)>,
    /// Every segment runs the whole query (the reference the walk matches).
    pub(super) always_whole: bool,
}

/// A segment's best candidates by the sort keys.
pub(super) type Fruit = Vec<(Ranked, DocAddress)>;

impl<'a> ShardPlan<'a> {
    pub(super) fn new(
        shard: &'a ShardReader,
        searcher: &'a tantivy::Searcher,
        q: &'a SearchQuery,
        group: &'a str,
        ids: &'a RecordIds,
        always_whole: bool,
    ) -> ShardPlan<'a> {
        let keys: Vec<SortKey> = q
            .sort
            .iter()
            .map(|k| match k.field.as_str() {
                "_text_match" => SortKey { column: None, direction: k.direction },
                field => SortKey { column: Some(format!("{VALUES}.{}", value_key(field))), direction: k.direction },
            })
            .collect();
        let collector = TopKeys { limit: q.limit, keys, near: Vec::new() };
        ShardPlan { shard, searcher, q, group, ids, collector, whole: None, always_whole }
    }

    pub(super) fn scoring(&self) -> EnableScoring<'a> {
        if self.q.text.is_some() {
            EnableScoring::enabled_from_searcher(self.searcher)
        } else {
            EnableScoring::disabled_from_searcher(self.searcher)
        }
    }

    /// The segment's best candidates, whether the deadline cut them short,
    /// and whether a walk found them.
    pub(super) fn segment(
        &mut self,
        ord: u32,
        segment: &SegmentReader,
        deadline: Instant,
    ) -> Result<(Fruit, bool, bool), SearchError> {
        // A text's matches come from its postings, which tantivy intersects
        // with the filter's best; a walk suits the filter alone.
        if self.always_whole || self.q.text.is_some() {
            return Ok((self.run_whole(ord, segment)?, false, false));
        }
        let filter = DocFilter::new(self.q, self.group, self.ids, segment);
        if filter.is_never() {
            return Ok((Vec::new(), false, true));
        }
        let mut top = self.collector.for_segment(ord, segment)?;
        match self.walk(segment, &filter, &mut top, deadline) {
            Walked::Done => Ok((top.harvest(), false, true)),
            Walked::Late => Ok((top.harvest(), true, true)),
            Walked::TooFar => Ok((self.run_whole(ord, segment)?, false, false)),
        }
    }

    /// Walks the segment best first by the first sort key, offering each
    /// match, until `limit` are held and the next document sorts after the
    /// last of them on that key (ties on it are settled by the other keys).
    pub(super) fn walk(
        &self,
        segment: &SegmentReader,
        filter: &DocFilter,
        top: &mut TopKeysSegment,
        deadline: Instant,
    ) -> Walked {
        let Some(SortKey { column: Some(column), direction }) = self.collector.keys.first() else {
            return Walked::TooFar;
        };
        let limit = self.q.limit.max(1);
        let country = &self.q.country;
        let order = self.shard.orders.get(
            segment,
            column,
            country,
            || self.shard.country_docs(segment, country),
            self.searcher,
        );
        // A walk visits about limit / (share of the country matching); past
        // a quarter of the country, the postings of a narrow filter are cheaper.
        let budget = (order.len() / 4).max(4 * limit);
        let range = self.first_key_range();
        let (mut matched, mut cut): (usize, Option<Option<f64>>) = (0, None);
        for (visited, (value, doc)) in order.walk(*direction == Direction::Desc, range).enumerate() {
            if cut.is_some_and(|c| !same(c, value)) {
                return Walked::Done;
            }
            if visited % 1024 == 1023 {
                if svc_clock::monotonic() >= deadline {
                    return Walked::Late;
                }
                if cut.is_none() && visited >= budget {
                    return Walked::TooFar;
                }
            }
            if !segment.is_deleted(doc) && filter.matches(doc) {
                top.collect(doc, 0.0);
                matched += 1;
                if matched == limit {
                    cut = Some(value);
                }
            }
        }
        Walked::Done
    }

    /// The bounds every match has on the first sort key's own field, from
    /// the clauses on it.
    pub(super) fn first_key_range(&self) -> Option<(Bound<f64>, Bound<f64>)> {
        let field = &self.q.sort.first()?.field;
        let mut range: Option<(Bound<f64>, Bound<f64>)> = None;
        for clause in self.q.clauses.iter().filter(|c| &c.field == field) {
            for condition in &clause.conditions {
                let (low, high) = match condition {
                    Condition::Eq(Scalar::Num(n)) => (Bound::Included(*n), Bound::Included(*n)),
                    other => match other.bounds() {
                        Some(bounds) => bounds,
                        None => continue,
                    },
                };
                let (l, h) = range.unwrap_or((Bound::Unbounded, Bound::Unbounded));
                range = Some((tighter(l, low, true), tighter(h, high, false)));
            }
        }
        range
    }

    /// The whole query through tantivy, for one segment. For a text, the
    /// numeric conditions are read from columns per match instead: a range
    /// over a column most rows lack costs tantivy a pass over the column
    /// before the first match, which the text's few matches do not need.
    pub(super) fn run_whole(&mut self, ord: u32, segment: &SegmentReader) -> Result<Fruit, SearchError> {
        let ranges_in_query = self.always_whole || self.q.text.is_none();
        if self.whole.is_none() {
            let (query, near) = self.shard.query(self.q, self.group, self.ids, ranges_in_query)?;
            self.whole = Some((query.weight(self.scoring())?, near));
        }
        let Some((weight, near)) = &self.whole else { return Ok(Vec::new()) };
        let collector = TopKeys { limit: self.q.limit, keys: self.collector.keys.clone(), near: near.clone() };
        let mut top = collector.for_segment(ord, segment)?;
        if !ranges_in_query {
            top.filter = Some(DocFilter::ranges(self.q, segment));
        }
        let alive = segment.alive_bitset();
        let mut offer = |doc: DocId, score: Score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                top.collect(doc, score);
            }
        };
        if collector.requires_scoring() {
            weight.for_each(segment, &mut offer)?;
        } else {
            weight.for_each_no_score(segment, &mut |docs| docs.iter().for_each(|d| offer(*d, 0.0)))?;
        }
        Ok(top.harvest())
    }
}

/// How a walk ended.
pub(super) enum Walked {
    /// It holds the segment's best rows.
    Done,
    /// The deadline came first: it holds what it found.
    Late,
    /// It would visit too much; the whole query answers instead.
    TooFar,
}

/// Two first-key values that sort together.
pub(super) fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (None, None) => true,
        _ => false,
    }
}

/// The narrower of two bounds on one side of a range.
pub(super) fn tighter(a: Bound<f64>, b: Bound<f64>, low: bool) -> Bound<f64> {
    let value = |x: &Bound<f64>| match x {
        Bound::Included(v) | Bound::Excluded(v) => Some(*v),
        Bound::Unbounded => None,
    };
    match (value(&a), value(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) if x == y => {
            if matches!(a, Bound::Excluded(_)) {
                a
            } else {
                b
            }
        }
        (Some(x), Some(y)) => {
            if (x > y) == low {
                a
            } else {
                b
            }
        }
    }
}
