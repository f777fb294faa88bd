//! tantivy indexes: k shards per collection, each a directory of its own.
//! Writers live in the index shard actors; readers are shared by every
//! search. Blocking happens inside the query (a `MustNot` on the groups that
//! blocked the business), so a blocked row is never a candidate at all.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::Instant;

use svc_core::ids::RecordType;
use svc_core::search::{Direction, SearchQuery};
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, TantivyDocument};

use super::SearchError;
use super::collect::{Ranked, sort_and_cut};
use super::deferred_sync::Ledger;
use super::held::RecordIds;
use super::orders::SortOrders;
use super::plan::ShardPlan;
use super::rows::RowsBudget;
use super::shard::*;

/// Opens every shard under `dir`, their rows held in memory within
/// `rows_budget` bytes together.
pub fn open_all(dir: &Path, shards: usize, rows_budget: usize) -> Result<(SearchIndex, Vec<NamedOpener>), SearchError> {
    let mut readers: HashMap<RecordType, Vec<Arc<ShardReader>>> = HashMap::new();
    let mut writers = Vec::new();
    let ledger = Ledger::new(dir);
    let budget = RowsBudget::new(rows_budget);
    for collection in RecordType::COLLECTIONS {
        for n in 0..shards.max(1) {
            let (index, reader, fields, rows) =
                open(&dir.join(collection.name()).join(n.to_string()), collection, ledger.clone(), budget.clone())?;
            readers.entry(collection).or_default().push(Arc::new(ShardReader {
                reader: reader.clone(),
                fields: fields.clone(),
                orders: SortOrders::default(),
                rows,
            }));
            writers.push((collection, n, ShardOpener { index, reader, fields, ledger: ledger.clone() }));
        }
    }
    Ok((
        SearchIndex {
            shards: readers,
            count: shards.max(1),
            rows_budget: budget,
            walked: AtomicU64::new(0),
            whole: AtomicU64::new(0),
        },
        writers,
    ))
}

/// What a search found: signed rows in order, and whether the time budget
/// cut it short.
#[derive(Debug, Default)]
pub struct Hits {
    pub rows: Vec<Hit>,
    pub partial: bool,
}

/// A row found: its JSON text, served verbatim, and its ids' JSON text.
#[derive(Debug, PartialEq, Eq)]
pub struct Hit {
    pub row: Vec<u8>,
    pub ids: Vec<u8>,
}

/// The rows held in memory, as `/metrics` shows them.
#[derive(Debug, Default)]
pub struct RowsHeld {
    pub segments: usize,
    pub bytes: u64,
    pub budget_bytes: u64,
    /// Rows searches read from the doc store: a segment not held.
    pub from_store: u64,
}

/// Every shard's reader, by collection.
pub struct SearchIndex {
    shards: HashMap<RecordType, Vec<Arc<ShardReader>>>,
    count: usize,
    rows_budget: Arc<RowsBudget>,
    /// Segments answered by a walk, and by the whole query.
    walked: AtomicU64,
    whole: AtomicU64,
}

impl SearchIndex {
    pub fn shards_per_collection(&self) -> usize {
        self.count
    }

    /// Documents and segments per collection, as searches see them now.
    /// Every segment costs each search a term lookup and its own scorers,
    /// so the segment count is worth watching.
    pub fn documents(&self) -> Vec<(RecordType, u64, usize)> {
        let mut counts: Vec<(RecordType, u64, usize)> = self
            .shards
            .iter()
            .map(|(collection, shards)| {
                let searchers: Vec<tantivy::Searcher> = shards.iter().map(|s| s.reader.searcher()).collect();
                let docs = searchers.iter().map(|s| s.num_docs()).sum();
                let segments = searchers.iter().map(|s| s.segment_readers().len()).sum();
                (*collection, docs, segments)
            })
            .collect();
        counts.sort_by_key(|(c, _, _)| c.name());
        counts
    }

    /// The rows held in memory over every shard: segments, bytes, rows
    /// searches read from the doc store instead, and the budget.
    pub fn rows_held(&self) -> RowsHeld {
        let mut held = RowsHeld { budget_bytes: self.rows_budget.capacity() as u64, ..Default::default() };
        for (segments, bytes, from_store) in self.shards.values().flatten().map(|s| s.rows.held()) {
            held.segments += segments;
            held.bytes += bytes;
            held.from_store += from_store;
        }
        held
    }

    /// How many segments searches answered by a walk, and by the whole query.
    pub fn plans(&self) -> (u64, u64) {
        (self.walked.load(AtomicOrdering::Relaxed), self.whole.load(AtomicOrdering::Relaxed))
    }

    /// Runs a judged search for a caller's group, shard by shard and segment
    /// by segment, stopping at the deadline with what it has.
    ///
    /// Candidates come from the text's postings when there is a text, and
    /// otherwise from the first sort key's order; the filter is read from
    /// columns per candidate. A segment where walking the order would visit
    /// too much (a narrow filter) runs the whole query through tantivy.
    pub fn search(&self, q: &SearchQuery, group: &str, deadline: Instant) -> Result<Hits, SearchError> {
        self.run(q, group, &RecordIds::All, deadline, false)
    }

    /// A search held to `ids` beside its filter.
    pub fn search_within(
        &self,
        q: &SearchQuery,
        group: &str,
        ids: &RecordIds,
        deadline: Instant,
    ) -> Result<Hits, SearchError> {
        self.run(q, group, ids, deadline, false)
    }

    /// The same search run as one tantivy query per segment, as the
    /// planned search falls back to: what a test compares the plans with.
    #[cfg(test)]
    fn search_whole(
        &self,
        q: &SearchQuery,
        group: &str,
        ids: &RecordIds,
        deadline: Instant,
    ) -> Result<Hits, SearchError> {
        self.run(q, group, ids, deadline, true)
    }

    fn run(
        &self,
        q: &SearchQuery,
        group: &str,
        ids: &RecordIds,
        deadline: Instant,
        whole: bool,
    ) -> Result<Hits, SearchError> {
        let Some(shards) = self.shards.get(&q.collection) else { return Ok(Hits::default()) };
        let mut found: Vec<(Ranked, usize, DocAddress)> = Vec::new();
        let directions: Vec<Direction> = q.sort.iter().map(|k| k.direction).collect();
        let mut partial = false;
        // One searcher per shard for the whole search: addresses stay valid.
        let searchers: Vec<tantivy::Searcher> = shards.iter().map(|s| s.reader.searcher()).collect();
        'shards: for (n, shard) in shards.iter().enumerate() {
            let searcher = &searchers[n];
            let mut plan = ShardPlan::new(shard, searcher, q, group, ids, whole);
            for (ord, segment) in searcher.segment_readers().iter().enumerate() {
                if svc_clock::monotonic() >= deadline {
                    partial = true;
                    break 'shards;
                }
                let (fruit, late, walked) = plan.segment(ord as u32, segment, deadline)?;
                let counter = if walked { &self.walked } else { &self.whole };
                counter.fetch_add(1, AtomicOrdering::Relaxed);
                found.extend(fruit.into_iter().map(|(key, doc)| (key, n, doc)));
                sort_and_cut(&mut found, q.limit, &directions);
                if late {
                    partial = true;
                    break 'shards;
                }
            }
        }
        let mut rows = Vec::with_capacity(found.len());
        for (_, n, address) in found {
            let shard = &shards[n];
            if let Some((row, ids)) = shard.rows.get(searchers[n].segment_reader(address.segment_ord), address.doc_id) {
                rows.push(Hit { row, ids });
                continue;
            }
            shard.rows.read_from_store();
            let doc: TantivyDocument = searchers[n].doc(address)?;
            let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).map(|t| t.as_bytes().to_vec());
            if let (Some(row), Some(ids)) = (text(shard.fields.row), text(shard.fields.ids)) {
                rows.push(Hit { row, ids });
            }
        }
        Ok(Hits { rows, partial })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Blocked, IndexDoc, Indexed};
    use crate::schema::id_hash;
    use svc_core::search::fields::Kind;
    use svc_core::search::{Condition, Scalar};

    #[test]
    fn an_index_laid_out_for_another_shard_count_is_rebuilt() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("index");
        assert!(prepare_layout(&dir, 1).unwrap(), "a missing index is fed from the start");
        std::fs::write(dir.join("products-0"), b"docs").unwrap();
        assert!(!prepare_layout(&dir, 1).unwrap(), "the same layout is kept");
        assert!(dir.join("products-0").exists());
        assert!(prepare_layout(&dir, 2).unwrap(), "another count rebuilds");
        assert!(!dir.join("products-0").exists());
        std::fs::remove_file(dir.join("layout")).unwrap();
        assert!(prepare_layout(&dir, 2).unwrap(), "an index from before the layout was recorded");
    }

    #[test]
    fn commits_wait_for_a_checkpoint_and_a_machine_restart_before_it_rebuilds_the_index() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("index");
        assert!(prepare_layout(&dir, 1).unwrap());
        let count = |dir: &Path| {
            let (index, _writers) = open_all(dir, 1, 64 << 20).unwrap();
            index.documents().iter().map(|(_, docs, _)| docs).sum::<u64>()
        };
        {
            let (_index, openers) = open_all(&dir, 1, 64 << 20).unwrap();
            let (_, _, opener) = openers.iter().find(|(c, _, _)| *c == RecordType::Products).unwrap();
            let writer = &mut opener.writer().unwrap();
            writer.apply(vec![tied("p1")], vec![]).unwrap();
            assert!(writer.unsynced(), "the commit did not wait for the disk");
            assert!(writer.checkpoint().unwrap());
            assert!(!writer.unsynced());
            writer.apply(vec![tied("p2")], vec![]).unwrap();
            assert!(writer.unsynced());
        }
        assert!(!prepare_layout(&dir, 1).unwrap(), "the process stopped, the machine did not: the writes are there");
        assert_eq!(count(&dir), 2);
        // As if the machine had restarted since the last write.
        std::fs::write(dir.join("unsynced"), "another boot").unwrap();
        assert!(prepare_layout(&dir, 1).unwrap(), "writes no checkpoint covered may be lost: rebuilt");
        assert_eq!(count(&dir), 0);
    }

    fn tied(id: &str) -> Blocked {
        let doc = IndexDoc {
            record_id: id.to_owned(),
            business_uuid: "b".into(),
            countries: vec!["FR".into()],
            texts: vec![("product_name", "same words".into())],
            filters: vec![("price_FR".into(), Indexed::Num(10.0))],
            points: vec![],
            row: id.as_bytes().to_vec(),
            ids: format!(r#"{{"record_id":"{id}","business_uuid":"b"}}"#),
        };
        (doc, vec![])
    }

    /// Searches a fresh one-shard index fed `batches` in order, one commit each.
    fn ranked(batches: &[&[&str]], sort: &str, text: Option<&str>, limit: usize) -> Vec<String> {
        let root = tempfile::tempdir().unwrap();
        let (index, writers) = open_all(root.path(), 1, 64 << 20).unwrap();
        let mut writer = writers.into_iter().find(|(c, _, _)| *c == RecordType::Products).unwrap().2.writer().unwrap();
        for batch in batches {
            writer.apply(batch.iter().map(|id| tied(id)).collect(), vec![]).unwrap();
        }
        let query = SearchQuery {
            collection: RecordType::Products,
            country: "FR".into(),
            text: text.map(str::to_owned),
            query_by: vec!["product_name"],
            clauses: vec![],
            sort: vec![svc_core::search::SortKey { field: sort.into(), direction: Direction::Desc }],
            limit,
            client_query_id: None,
            session_ref: None,
            topic_keywords: vec![],
        };
        let hits = index.search(&query, "g", svc_clock::monotonic() + std::time::Duration::from_secs(5)).unwrap();
        hits.rows.into_iter().map(|r| String::from_utf8(r.row).unwrap()).collect()
    }

    // The spec leaves ties open (R1.9: the caller orders); docs/REFERENCE.md records
    // this choice: a neutral hash of the record id, the same in every region.
    // Relevance alone keeps tantivy's pruned top-k, which picks among rows
    // tied at the cut by position; the rows it answers are still ordered
    // by the hash (limit 5 below takes every row).
    #[test]
    fn rows_tied_on_every_sort_key_come_out_in_one_order_whatever_the_segments() {
        let ids = ["p_a", "p_b", "p_c", "p_d", "p_e"];
        let mut by_hash = ids.to_vec();
        by_hash.sort_by_key(|id| id_hash(id));
        let reversed: Vec<&str> = ids.iter().rev().copied().collect();
        for (sort, text, limit) in [("price_FR", None, 3), ("_text_match", Some("same"), 5)] {
            let expected: Vec<String> = by_hash[..limit].iter().map(|s| s.to_string()).collect();
            let one_segment = ranked(&[&ids], sort, text, limit);
            let other_order = ranked(&[&reversed[..2], &reversed[2..]], sort, text, limit);
            assert_eq!(one_segment, expected, "{sort}");
            assert_eq!(other_order, expected, "{sort}: another history, the same rows in the same order");
        }
    }

    /// A products search of `FR` by price, ten rows at most: each row's text.
    fn rows_by_price(index: &SearchIndex) -> Vec<String> {
        let query = SearchQuery {
            collection: RecordType::Products,
            country: "FR".into(),
            text: None,
            query_by: vec![],
            clauses: vec![],
            sort: vec![svc_core::search::SortKey { field: "price_FR".into(), direction: Direction::Desc }],
            limit: 10,
            client_query_id: None,
            session_ref: None,
            topic_keywords: vec![],
        };
        let hits = index.search(&query, "g", svc_clock::monotonic() + std::time::Duration::from_secs(5)).unwrap();
        let mut rows: Vec<String> = hits.rows.into_iter().map(|r| String::from_utf8(r.row).unwrap()).collect();
        rows.sort();
        rows
    }

    // Issue 51, section 1: rows served from memory, not the doc store.
    #[test]
    fn hits_are_copied_from_rows_held_in_memory_and_a_merged_away_segment_lets_go_of_them() {
        let root = tempfile::tempdir().unwrap();
        let (index, writers) = open_all(root.path(), 1, 64 << 20).unwrap();
        let mut writer = writers.into_iter().find(|(c, _, _)| *c == RecordType::Products).unwrap().2.writer().unwrap();
        writer.apply(vec![tied("p1"), tied("p2")], vec![]).unwrap();
        let mut changed = tied("p2");
        changed.0.row = b"p2, second version".to_vec();
        writer.apply(vec![changed, tied("p3")], vec![]).unwrap();
        let expected = ["p1", "p2, second version", "p3"];
        assert_eq!(rows_by_price(&index), expected);
        let held = index.rows_held();
        assert_eq!(held.segments, 2, "each segment's rows were read as the reader reloaded");
        assert!(held.bytes > 0);
        assert_eq!(held.from_store, 0, "no hit's row was read from the doc store");

        assert!(writer.compact().unwrap());
        let held = index.rows_held();
        assert_eq!(held.segments, 1, "the merged-away segments' rows went with the reload");
        assert_eq!(rows_by_price(&index), expected, "the merged segment's rows, held before a search saw it");
        assert_eq!(index.rows_held().from_store, 0, "still none from the doc store");
    }

    // Issue 51, section 1: the rows' memory is bounded; what does not fit
    // is served from the doc store, the same rows.
    #[test]
    fn rows_beyond_the_budget_are_read_from_the_doc_store() {
        let root = tempfile::tempdir().unwrap();
        let (index, writers) = open_all(root.path(), 1, 1_000).unwrap();
        let mut writer = writers.into_iter().find(|(c, _, _)| *c == RecordType::Products).unwrap().2.writer().unwrap();
        writer.apply(vec![tied("p1"), tied("p2")], vec![]).unwrap();
        let mut big = tied("p3");
        big.0.row = vec![b'x'; 2_000];
        writer.apply(vec![big], vec![]).unwrap();
        let rows = rows_by_price(&index);
        assert_eq!(rows[..2], ["p1", "p2"]);
        assert_eq!(rows[2].len(), 2_000);
        let held = index.rows_held();
        assert_eq!(held.segments, 1, "the first segment fits, the second does not");
        assert!(held.bytes <= 1_000);
        assert_eq!(held.from_store, 1, "the row of the segment left out came from the doc store");
    }

    /// A product with a random price in some of its countries (not all:
    /// a row may lack one), a random availability, sale flag and date.
    fn random_product(rng: &mut svc_core::rng::Rng, n: usize) -> Blocked {
        const COUNTRIES: [&str; 4] = ["FR", "DE", "GB", "US"];
        let countries: Vec<String> = COUNTRIES.iter().filter(|_| rng.below(2) == 0).map(|c| c.to_string()).collect();
        let mut filters = Vec::new();
        for country in &countries {
            if rng.below(8) != 0 {
                filters.push((format!("price_{country}"), Indexed::Num(rng.below(40) as f64 * 2.5)));
            }
        }
        let availability = *rng.pick(&["in_stock", "preorder", "out_of_stock", "discontinued"]);
        filters.push(("availability".into(), Indexed::Str(availability.into())));
        filters.push(("on_sale".into(), Indexed::Bool(rng.below(3) == 0)));
        // Few distinct dates, so ties on the first key are common.
        filters.push(("published_at".into(), Indexed::Num(1_800_000_000.0 + rng.below(50) as f64)));
        let id = format!("p_{n}");
        let doc = IndexDoc {
            record_id: id.clone(),
            business_uuid: format!("b{}", rng.below(5)),
            countries,
            texts: vec![("product_name", rng.pick(&["lamp", "lamp oak", "oak table lamp", "table"]).to_string())],
            filters,
            points: vec![],
            ids: format!(r#"{{"record_id":"{id}","business_uuid":"b"}}"#),
            row: id.into_bytes(),
        };
        let blocked = if rng.below(6) == 0 { vec!["g_blocked".to_owned()] } else { vec![] };
        (doc, blocked)
    }

    fn random_search(rng: &mut svc_core::rng::Rng) -> SearchQuery {
        use svc_core::search::{Clause, SortKey as Key};
        let country = rng.pick(&["FR", "DE", "GB", "US", "IT"]).to_string();
        let price = format!("price_{country}");
        let mut clauses = Vec::new();
        let mut conditions = Vec::new();
        for _ in 0..rng.below(3) {
            let n = rng.below(40) as f64 * 2.5;
            conditions.push(match rng.below(5) {
                0 => Condition::Gte(n),
                1 => Condition::Gt(n),
                2 => Condition::Lt(n),
                3 => Condition::Lte(n),
                _ => Condition::Eq(Scalar::Num(n)),
            });
        }
        if !conditions.is_empty() {
            clauses.push(Clause { field: price.clone(), kind: Kind::Money, conditions });
        }
        let values = ["in_stock", "preorder", "out_of_stock", "unknown"];
        let some = |rng: &mut svc_core::rng::Rng| Scalar::Str(rng.pick(&values).to_string());
        let availability = match rng.below(6) {
            0 => Some(Condition::Eq(some(rng))),
            1 => Some(Condition::Ne(some(rng))),
            2 => Some(Condition::In(vec![some(rng), some(rng)])),
            3 => Some(Condition::Nin(vec![some(rng), some(rng)])),
            _ => None,
        };
        if let Some(condition) = availability {
            clauses.push(Clause { field: "availability".into(), kind: Kind::Str, conditions: vec![condition] });
        }
        if rng.below(4) == 0 {
            let condition = Condition::Eq(Scalar::Bool(rng.below(2) == 0));
            clauses.push(Clause { field: "on_sale".into(), kind: Kind::Bool, conditions: vec![condition] });
        }
        let direction = |rng: &mut svc_core::rng::Rng| {
            if rng.below(2) == 0 { Direction::Asc } else { Direction::Desc }
        };
        let (first, second) = if rng.below(2) == 0 { (price, "published_at") } else { ("published_at".into(), "x") };
        let text = (rng.below(2) == 0).then(|| rng.pick(&["lamp", "oak"]).to_string());
        let first = if text.is_some() && rng.below(2) == 0 { "_text_match".to_owned() } else { first };
        let mut sort = vec![Key { field: first, direction: direction(rng) }];
        if rng.below(2) == 0 {
            let field = if second == "x" { "price_FR".to_owned() } else { second.to_owned() };
            sort.push(Key { field, direction: direction(rng) });
        }
        SearchQuery {
            collection: RecordType::Products,
            country,
            text,
            query_by: vec!["product_name"],
            clauses,
            sort,
            limit: 1 + rng.below(25) as usize,
            client_query_id: None,
            session_ref: None,
            topic_keywords: vec![],
        }
    }

    // A search without text walks each segment's documents by its first
    // sort key and reads its filter from columns, and a text's numeric
    // conditions are read from columns too; each must answer exactly what
    // the whole tantivy query answers, blocked rows absent from both.
    // rule: R1.16, R2.2.29, R2.3.5, R2.3.10
    #[test]
    fn planned_searches_answer_what_the_whole_query_answers() {
        let root = tempfile::tempdir().unwrap();
        let (index, writers) = open_all(root.path(), 1, 64 << 20).unwrap();
        let mut writer = writers.into_iter().find(|(c, _, _)| *c == RecordType::Products).unwrap().2.writer().unwrap();
        let mut rng = svc_core::rng::Rng::new(7);
        // Several segments, rewritten and deleted rows among them.
        for batch in 0..4 {
            let upserts = (0..600).map(|n| random_product(&mut rng, batch * 400 + n)).collect();
            let deletes = (0..20).map(|_| format!("p_{}", rng.below(2_000))).collect();
            writer.apply(upserts, deletes).unwrap();
        }
        let deadline = svc_clock::monotonic() + std::time::Duration::from_secs(60);
        let (mut rows, mut walked) = (0, 0);
        for _ in 0..600 {
            let q = random_search(&mut rng);
            // Some searches are held to a few record ids, or kept from them.
            let some: Vec<String> = (0..rng.below(30)).map(|_| format!("p_{}", rng.below(2_000))).collect();
            let ids = match rng.below(4) {
                0 => RecordIds::Only(some),
                1 => RecordIds::Except(some),
                _ => RecordIds::All,
            };
            for group in ["g_blocked", "g_other"] {
                let planned = index.search_within(&q, group, &ids, deadline).unwrap();
                let whole = index.search_whole(&q, group, &ids, deadline).unwrap();
                assert_eq!(planned.rows, whole.rows, "{q:?} for {group} within {ids:?}");
                if let RecordIds::Only(only) = &ids {
                    let id =
                        |h: &Hit| serde_json::from_slice::<serde_json::Value>(&h.ids).unwrap()["record_id"].clone();
                    assert!(planned.rows.iter().all(|h| only.iter().any(|o| id(h) == o.as_str())), "held to {only:?}");
                }
                rows += planned.rows.len();
                walked += usize::from(!planned.rows.is_empty());
            }
        }
        assert!(rows > 2_000 && walked > 600, "the queries find rows: {rows} rows, {walked} answers");
        let (walks, _) = index.plans();
        assert!(walks > 1_000, "segments were walked: {:?}", index.plans());
        writer.compact().unwrap();
        let q = random_search(&mut rng);
        let all = RecordIds::All;
        assert_eq!(
            index.search(&q, "g", deadline).unwrap().rows,
            index.search_whole(&q, "g", &all, deadline).unwrap().rows
        );
    }
}
