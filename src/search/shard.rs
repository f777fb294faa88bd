//! One shard: its tantivy directory, the writer its actor owns, the reader
//! searches share, and a judged search translated into a tantivy query.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use svc_core::ids::RecordType;
use svc_core::search::fields::Kind;
use svc_core::search::{Condition, Scalar, SearchQuery};

use super::held::RecordIds;
use tantivy::DocSet;
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, RangeQuery, TermQuery, TermSetQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, Index, IndexReader, IndexWriter, ReloadPolicy, SegmentReader, Term};

use super::SearchError;
use super::collect::Near;
use super::deferred_sync::{DeferredSyncDirectory, Ledger, torn};
use super::doc::Blocked;
use super::orders::SortOrders;
use super::rows::{RowsBudget, ShardRows};
use super::schema::*;

/// One shard's writer: owned by its actor.
pub struct ShardWriter {
    pub(super) writer: IndexWriter,
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    /// What the index wrote since its last checkpoint.
    pub(super) ledger: Arc<Ledger>,
}

/// What opens a shard's writer from its directory: at a node's start, and
/// again when the supervisor restarts its actor (the old writer, dropped
/// with the actor, let go of the directory's lock).
#[derive(Clone)]
pub struct ShardOpener {
    pub(super) index: Index,
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    pub(super) ledger: Arc<Ledger>,
}

impl ShardOpener {
    pub fn writer(&self) -> Result<ShardWriter, SearchError> {
        let writer = self.index.writer_with_options(
            tantivy::indexer::IndexWriterOptions::builder()
                .num_worker_threads(1)
                .num_merge_threads(1)
                .memory_budget_per_thread(32_000_000)
                .build(),
        )?;
        writer.set_merge_policy(Box::new(super::merges::SettledFirst::default()));
        let (reader, fields, ledger) = (self.reader.clone(), self.fields.clone(), self.ledger.clone());
        Ok(ShardWriter { writer, reader, fields, ledger })
    }
}

/// One shard as searches see it.
pub struct ShardReader {
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    pub(super) orders: SortOrders,
    /// Its segments' rows, kept by its reader's warmer.
    pub(super) rows: Arc<ShardRows>,
}

pub(super) fn open(
    dir: &Path,
    collection: RecordType,
    ledger: Arc<Ledger>,
    budget: Arc<RowsBudget>,
) -> Result<(Index, IndexReader, Fields, Arc<ShardRows>), SearchError> {
    std::fs::create_dir_all(dir).map_err(|source| SearchError::Io { path: dir.to_owned(), source })?;
    let (schema, fields) = schema(collection);
    let directory = DeferredSyncDirectory::open(dir, ledger)
        .map_err(|source| SearchError::Directory { path: dir.to_owned(), source })?;
    // Rows are read back for every answer (up to 50 a search): an
    // uncompressed doc store makes that a copy rather than a decompression.
    // Small blocks, since each row read copies its whole block (the cache
    // rarely holds it: rows are read scattered over the whole store).
    let settings = tantivy::IndexSettings {
        docstore_compression: tantivy::store::Compressor::None,
        docstore_blocksize: 4_096,
        ..Default::default()
    };
    let index = Index::builder().schema(schema).settings(settings).open_or_create(directory)?;
    // Reloaded by the writer after each commit, so a search sees a commit
    // as soon as the shard acknowledged it; each reload first reads its new
    // segments' rows into memory.
    let rows = Arc::new(ShardRows::new(dir.to_owned(), (fields.row, fields.ids), budget));
    let warmer: Arc<dyn tantivy::Warmer> = rows.clone();
    let reader: IndexReader =
        index.reader_builder().reload_policy(ReloadPolicy::Manual).warmers(vec![Arc::downgrade(&warmer)]).try_into()?;
    Ok((index, reader, fields, rows))
}

impl ShardWriter {
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Removes then (re)adds documents, commits, and reloads the readers.
    /// A batch that fails (a full disk) is rolled back: the writer is made
    /// again from the directory's last commit, so the batch, sent again,
    /// applies once the disk has room; a writer tantivy killed never stays.
    pub fn apply(&mut self, upserts: Vec<Blocked>, deletes: Vec<String>) -> Result<(), SearchError> {
        let applied = self.try_apply(upserts, deletes);
        if applied.is_err() {
            self.reopen();
        }
        applied
    }

    fn try_apply(&mut self, upserts: Vec<Blocked>, deletes: Vec<String>) -> Result<(), SearchError> {
        for id in deletes.iter().chain(upserts.iter().map(|(d, _)| &d.record_id)) {
            self.writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
        for (doc, blocked) in upserts {
            self.writer.add_document(document(&self.fields, &doc, &blocked))?;
        }
        self.writer.commit()?;
        Ok(self.reader.reload()?)
    }

    /// Makes the writer again from the directory's last commit (tantivy's
    /// rollback: new worker threads, the same lock).
    pub fn reopen(&mut self) {
        if let Err(e) = self.writer.rollback() {
            tracing::warn!(error = %e, "the index writer could not be made again; the next batch tries");
        }
    }

    /// Makes the index's writes durable (every shard's: they share one
    /// ledger); `false` while a merge is still writing.
    pub fn checkpoint(&self) -> Result<bool, SearchError> {
        self.ledger.checkpoint().map_err(|source| SearchError::Io { path: self.ledger.root().to_owned(), source })
    }

    pub fn unsynced(&self) -> bool {
        self.ledger.unsynced()
    }

    /// Whether writes have waited `age` or more for a checkpoint.
    pub fn checkpoint_due(&self, age: std::time::Duration) -> bool {
        self.ledger.due(age)
    }

    /// Merges every segment into one, and answers whether it merged: when
    /// there was more than one, or one still holding deleted documents. A
    /// search pays for each segment (its term lookups, scorers and
    /// buffers), so a shard at rest is best as a single segment; and a
    /// deleted record's row leaves the index's files only when its segment
    /// is rewritten without it.
    pub fn compact(&mut self) -> Result<bool, SearchError> {
        let metas = self.writer.index().searchable_segment_metas()?;
        if metas.len() < 2 && metas.iter().all(|m| m.num_deleted_docs() == 0) {
            return Ok(false);
        }
        let segments: Vec<_> = metas.iter().map(|m| m.id()).collect();
        if let Err(e) = self.writer.merge(&segments).wait() {
            // A merge that failed on a full disk may have killed the writer.
            drop(metas);
            self.reopen();
            return Err(e.into());
        }
        // A segment's files stay while anything holds its meta: these
        // metas, and the searchers, which let go on reload.
        drop(metas);
        self.reader.reload()?;
        self.writer.garbage_collect_files().wait()?;
        Ok(true)
    }
}

/// A shard's writer's opener with its collection and number.
pub type NamedOpener = (RecordType, usize, ShardOpener);

/// Opens (or creates) every shard under `dir`: the writers for the actors,
/// the readers for searches.
/// Bumped whenever the index schema changes, so an older index is rebuilt.
pub(super) const SCHEMA_VERSION: u32 = 6;

/// Makes the index directory hold `shards` shards per collection. An index
/// laid out for another count (or from before the layout was recorded, when
/// two was the default) is removed, and `true` is answered, as for a missing
/// index: the caller re-feeds it from the replication log, the index being
/// derived data.
pub fn prepare_layout(dir: &Path, shards: usize) -> Result<bool, SearchError> {
    let marker = dir.join("layout");
    let wanted = format!("shards={}\nschema={SCHEMA_VERSION}\n", shards.max(1));
    let found = std::fs::read_to_string(&marker).ok();
    let rebuilt = match found {
        // No index at all (a new node, or a store restored without its
        // index): fed from the start too.
        None if !dir.exists() => true,
        // The machine stopped before index writes reached the disk.
        Some(found) if found == wanted && !torn(dir) => false,
        _ => {
            std::fs::remove_dir_all(dir).map_err(|source| SearchError::Io { path: dir.to_owned(), source })?;
            true
        }
    };
    std::fs::create_dir_all(dir).map_err(|source| SearchError::Io { path: dir.to_owned(), source })?;
    std::fs::write(&marker, wanted).map_err(|source| SearchError::Io { path: marker.clone(), source })?;
    Ok(rebuilt)
}

pub(super) fn json_term(fields: &Fields, key: &str) -> Term {
    Term::from_field_json_path(fields.values, key, false)
}

pub(super) fn scalar_term(fields: &Fields, key: &str, value: &Scalar) -> Box<dyn Query> {
    let mut term = json_term(fields, key);
    match value {
        Scalar::Str(s) => term.append_type_and_str(s),
        Scalar::Bool(b) => term.append_type_and_fast_value(*b),
        Scalar::Num(n) => {
            return range(fields, key, Bound::Included(*n), Bound::Included(*n));
        }
    }
    Box::new(TermQuery::new(term, IndexRecordOption::Basic))
}

pub(super) fn range(fields: &Fields, key: &str, low: Bound<f64>, high: Bound<f64>) -> Box<dyn Query> {
    let bound = |b: Bound<f64>| {
        b.map(|v| {
            let mut term = json_term(fields, key);
            term.append_type_and_fast_value(v);
            term
        })
    };
    Box::new(RangeQuery::new(bound(low), bound(high)))
}

pub(super) fn any_of(queries: Vec<Box<dyn Query>>) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(queries.into_iter().map(|q| (Occur::Should, q)).collect()))
}

impl ShardReader {
    /// The documents of a segment offered in a country, deleted ones too.
    pub(super) fn country_docs(&self, segment: &SegmentReader, country: &str) -> Vec<DocId> {
        let term = Term::from_field_text(self.fields.country, country);
        let postings = segment
            .inverted_index(self.fields.country)
            .ok()
            .and_then(|index| index.read_postings(&term, IndexRecordOption::Basic).ok().flatten());
        let mut docs = Vec::new();
        if let Some(mut postings) = postings {
            let mut doc = postings.doc();
            while doc != tantivy::TERMINATED {
                docs.push(doc);
                doc = postings.advance();
            }
        }
        docs
    }

    pub(super) fn text_query(
        &self,
        text: &str,
        query_by: &[&'static str],
    ) -> Result<Option<Box<dyn Query>>, SearchError> {
        let fields: Vec<Field> =
            self.fields.texts.iter().filter(|(n, _)| query_by.contains(n)).map(|(_, f)| *f).collect();
        if fields.is_empty() {
            return Ok(None);
        }
        // Each word folded, as it is and as each language stems it.
        let tokens = super::text::query_terms(text);
        if tokens.is_empty() {
            return Ok(None);
        }
        // Any token in any of the fields; BM25 sums what matched. One flat
        // union: each union scorer allocates its own buffers per segment.
        let terms = tokens
            .iter()
            .flat_map(|token| {
                fields.iter().map(move |f| {
                    Box::new(TermQuery::new(Term::from_field_text(*f, token), IndexRecordOption::WithFreqs))
                        as Box<dyn Query>
                })
            })
            .collect();
        Ok(Some(any_of(terms)))
    }

    /// The whole search as one tantivy query, and its near conditions for
    /// the collector. Without `ranges`, numeric conditions are left out, for
    /// the caller to check from columns ([`DocFilter::ranges`]).
    pub(super) fn query(
        &self,
        q: &SearchQuery,
        group: &str,
        ids: &RecordIds,
        ranges: bool,
    ) -> Result<(Box<dyn Query>, Vec<Near>), SearchError> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(Term::from_field_text(f.country, &q.country), IndexRecordOption::Basic)),
            ),
            (
                Occur::MustNot,
                Box::new(TermQuery::new(Term::from_field_text(f.blocked, group), IndexRecordOption::Basic)),
            ),
        ];
        let id_terms = |ids: &[String]| -> Box<dyn Query> {
            Box::new(TermSetQuery::new(ids.iter().map(|id| Term::from_field_text(f.id, id))))
        };
        match ids {
            RecordIds::All => {}
            RecordIds::Only(ids) => clauses.push((Occur::Must, id_terms(ids))),
            RecordIds::Except(ids) => clauses.push((Occur::MustNot, id_terms(ids))),
        }
        match &q.text {
            Some(text) => match self.text_query(text, &q.query_by)? {
                Some(query) => clauses.push((Occur::Must, query)),
                // A text with no searchable token matches nothing.
                None => clauses.push((Occur::MustNot, Box::new(AllQuery))),
            },
            None => clauses.push((Occur::Must, Box::new(AllQuery))),
        }
        let mut near = Vec::new();
        for clause in &q.clauses {
            let key = value_key(&clause.field);
            for condition in clause.conditions.iter().filter(|c| ranges || !is_numeric(c)) {
                match condition {
                    Condition::Eq(v) => clauses.push((Occur::Must, scalar_term(f, &key, v))),
                    Condition::Ne(v) => clauses.push((Occur::MustNot, scalar_term(f, &key, v))),
                    Condition::In(vs) => {
                        clauses.push((Occur::Must, any_of(vs.iter().map(|v| scalar_term(f, &key, v)).collect())))
                    }
                    Condition::Nin(vs) => {
                        for v in vs {
                            clauses.push((Occur::MustNot, scalar_term(f, &key, v)));
                        }
                    }
                    Condition::Lt(_) | Condition::Lte(_) | Condition::Gt(_) | Condition::Gte(_) => {
                        let (low, high) = condition.bounds().unwrap_or((Bound::Unbounded, Bound::Unbounded));
                        clauses.push((Occur::Must, range(f, &key, low, high)))
                    }
                    Condition::Near { lat, lng, radius_km } => {
                        debug_assert_eq!(clause.kind, Kind::Geo);
                        // The index narrows by the bounding box; the collector
                        // keeps only points truly within the radius.
                        let ((lat_min, lat_max), (lng_min, lng_max)) =
                            svc_core::search::serve::bounding_box(*lat, *lng, *radius_km);
                        let (lat_key, lng_key) = (format!("{key}_lat"), format!("{key}_lng"));
                        clauses.push((
                            Occur::Must,
                            range(f, &lat_key, Bound::Included(lat_min), Bound::Included(lat_max)),
                        ));
                        clauses.push((
                            Occur::Must,
                            range(f, &lng_key, Bound::Included(lng_min), Bound::Included(lng_max)),
                        ));
                        near.push(Near { lat_key, lng_key, lat: *lat, lng: *lng, radius_km: *radius_km });
                    }
                }
            }
        }
        Ok((Box::new(BooleanQuery::new(clauses)), near))
    }
}
