//! A judged search's filter, read from one segment's columns: the country,
//! the caller's group (a business that blocked it is never a candidate),
//! and every clause. It answers for one document at a time, so a search can
//! take candidates in any order (by a sort key, or as text matches come) and
//! stop once it has enough. It means exactly what the tantivy query of the
//! same search means (`ShardReader::query`); a test holds the two together.

use std::ops::Bound;

use svc_core::search::{Condition, Scalar, SearchQuery};
use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocId, SegmentReader};

use super::held::RecordIds;
use super::schema::{VALUES, f64_column, id_hash, is_numeric, tie_column, value_key};

/// Some value of the document satisfies this.
enum Test {
    /// Its string is one of these term ordinals (sorted).
    Terms {
        column: StrColumn,
        ords: Vec<u64>,
    },
    Bool {
        column: Column<bool>,
        value: bool,
    },
    /// Its record id's hash is one of these (sorted): a 64-bit hash, so a
    /// record outside the set passes only by a collision, which the region
    /// catches when it marks the row (`service::retrieval::search`).
    Ids {
        column: Column<u64>,
        hashes: Vec<u64>,
    },
    Range {
        column: Column<f64>,
        low: Bound<f64>,
        high: Bound<f64>,
    },
    /// One of its points lies within the radius.
    Near {
        lats: Column<f64>,
        lngs: Column<f64>,
        lat: f64,
        lng: f64,
        radius_km: f64,
    },
}

impl Test {
    fn holds(&self, doc: DocId) -> bool {
        match self {
            Test::Terms { column, ords } => column.term_ords(doc).any(|o| ords.binary_search(&o).is_ok()),
            Test::Bool { column, value } => column.values_for_doc(doc).any(|v| v == *value),
            Test::Ids { column, hashes } => column.first(doc).is_some_and(|h| hashes.binary_search(&h).is_ok()),
            Test::Range { column, low, high } => column.values_for_doc(doc).any(|v| within(v, *low, *high)),
            Test::Near { lats, lngs, lat, lng, radius_km } => {
                let points: Vec<(f64, f64)> = lats.values_for_doc(doc).zip(lngs.values_for_doc(doc)).collect();
                svc_core::search::serve::any_within(&points, *lat, *lng, *radius_km)
            }
        }
    }
}

fn within(v: f64, low: Bound<f64>, high: Bound<f64>) -> bool {
    let above = match low {
        Bound::Included(l) => v >= l,
        Bound::Excluded(l) => v > l,
        Bound::Unbounded => true,
    };
    let below = match high {
        Bound::Included(h) => v <= h,
        Bound::Excluded(h) => v < h,
        Bound::Unbounded => true,
    };
    above && below
}

/// One clause of the filter: some test holds (`must`), or none does.
struct Check {
    any_of: Vec<Test>,
    must: bool,
}

/// A search's filter over one segment.
pub struct DocFilter {
    checks: Vec<Check>,
    /// A required value this segment never holds: nothing matches.
    never: bool,
}

/// Where a segment's columns are, and what terms they hold.
struct Columns<'a> {
    segment: &'a SegmentReader,
}

impl Columns<'_> {
    fn strings(&self, path: &str, values: &[&str]) -> Option<Test> {
        let column = self.segment.fast_fields().str(path).ok()??;
        let mut ords: Vec<u64> =
            values.iter().filter_map(|v| column.dictionary().term_ord(v.as_bytes()).ok().flatten()).collect();
        if ords.is_empty() {
            return None;
        }
        ords.sort_unstable();
        Some(Test::Terms { column, ords })
    }

    fn ids(&self, ids: &[String]) -> Option<Test> {
        let column = tie_column(self.segment)?;
        let mut hashes: Vec<u64> = ids.iter().map(|id| id_hash(id)).collect();
        if hashes.is_empty() {
            return None;
        }
        hashes.sort_unstable();
        Some(Test::Ids { column, hashes })
    }

    fn scalar(&self, key: &str, value: &Scalar) -> Option<Test> {
        let path = format!("{VALUES}.{key}");
        match value {
            Scalar::Str(s) => self.strings(&path, &[s]),
            Scalar::Bool(b) => {
                let column = self.segment.fast_fields().column_opt::<bool>(&path).ok()??;
                Some(Test::Bool { column, value: *b })
            }
            Scalar::Num(n) => self.range(key, Bound::Included(*n), Bound::Included(*n)),
        }
    }

    /// A range on a column; `None` when no value of the segment lies in
    /// it (by the column's least and greatest values).
    fn range(&self, key: &str, low: Bound<f64>, high: Bound<f64>) -> Option<Test> {
        let column = f64_column(self.segment, &format!("{VALUES}.{key}"))?;
        // Some value reaches the low bound, and some the high one.
        let meets =
            within(column.max_value(), low, Bound::Unbounded) && within(column.min_value(), Bound::Unbounded, high);
        meets.then_some(Test::Range { column, low, high })
    }
}

impl DocFilter {
    /// The whole filter.
    pub fn new(q: &SearchQuery, group: &str, ids: &RecordIds, segment: &SegmentReader) -> DocFilter {
        let columns = Columns { segment };
        let mut filter = DocFilter { checks: Vec::new(), never: false };
        filter.add(columns.strings("country", &[&q.country]).into_iter().collect(), true);
        filter.add(columns.strings("blocked", &[group]).into_iter().collect(), false);
        match ids {
            RecordIds::All => {}
            RecordIds::Only(ids) => filter.add(columns.ids(ids).into_iter().collect(), true),
            RecordIds::Except(ids) => filter.add(columns.ids(ids).into_iter().collect(), false),
        }
        filter.clauses(q, &columns, |_| true);
        filter
    }

    /// Only the numeric conditions (ranges, numbers, near), which a query
    /// may leave out (`is_numeric`).
    pub fn ranges(q: &SearchQuery, segment: &SegmentReader) -> DocFilter {
        let mut filter = DocFilter { checks: Vec::new(), never: false };
        filter.clauses(q, &Columns { segment }, is_numeric);
        filter
    }

    fn clauses(&mut self, q: &SearchQuery, columns: &Columns<'_>, wanted: impl Fn(&Condition) -> bool) {
        let (filter, segment) = (self, columns.segment);
        for clause in &q.clauses {
            let key = value_key(&clause.field);
            for condition in clause.conditions.iter().filter(|c| wanted(c)) {
                match condition {
                    Condition::Eq(v) => filter.add(columns.scalar(&key, v).into_iter().collect(), true),
                    Condition::Ne(v) => filter.add(columns.scalar(&key, v).into_iter().collect(), false),
                    Condition::In(vs) => filter.add(vs.iter().filter_map(|v| columns.scalar(&key, v)).collect(), true),
                    Condition::Nin(vs) => {
                        filter.add(vs.iter().filter_map(|v| columns.scalar(&key, v)).collect(), false)
                    }
                    Condition::Lt(_) | Condition::Lte(_) | Condition::Gt(_) | Condition::Gte(_) => {
                        let (low, high) = condition.bounds().unwrap_or((Bound::Unbounded, Bound::Unbounded));
                        filter.add(columns.range(&key, low, high).into_iter().collect(), true)
                    }
                    Condition::Near { lat, lng, radius_km } => {
                        // The bounding box first, as the index query narrows by it.
                        let ((lat_min, lat_max), (lng_min, lng_max)) =
                            svc_core::search::serve::bounding_box(*lat, *lng, *radius_km);
                        let (lat_key, lng_key) = (format!("{key}_lat"), format!("{key}_lng"));
                        let lat_box = columns.range(&lat_key, Bound::Included(lat_min), Bound::Included(lat_max));
                        let lng_box = columns.range(&lng_key, Bound::Included(lng_min), Bound::Included(lng_max));
                        filter.add(lat_box.into_iter().collect(), true);
                        filter.add(lng_box.into_iter().collect(), true);
                        let lats = f64_column(segment, &format!("{VALUES}.{lat_key}"));
                        let lngs = f64_column(segment, &format!("{VALUES}.{lng_key}"));
                        let near = lats.zip(lngs).map(|(lats, lngs)| Test::Near {
                            lats,
                            lngs,
                            lat: *lat,
                            lng: *lng,
                            radius_km: *radius_km,
                        });
                        filter.add(near.into_iter().collect(), true);
                    }
                }
            }
        }
    }

    fn add(&mut self, any_of: Vec<Test>, must: bool) {
        match (any_of.is_empty(), must) {
            // Required, and this segment holds none of it.
            (true, true) => self.never = true,
            // Excluded, and this segment holds none of it.
            (true, false) => {}
            (false, _) => self.checks.push(Check { any_of, must }),
        }
    }

    /// Nothing in this segment can match.
    pub fn is_never(&self) -> bool {
        self.never
    }

    pub fn matches(&self, doc: DocId) -> bool {
        !self.never && self.checks.iter().all(|c| c.any_of.iter().any(|t| t.holds(doc)) == c.must)
    }
}
