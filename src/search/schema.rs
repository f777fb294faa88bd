//! The index document: its fields, how a signed row becomes one, and the
//! columns searches read back per document.

use std::collections::HashMap;

use svc_core::ids::RecordType;
use svc_core::search::{Condition, Scalar};
use tantivy::columnar::{Column, DynamicColumn, NumericalType};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, JsonObjectOptions, OwnedValue, STORED, STRING, Schema, TEXT, TextFieldIndexing,
};
use tantivy::{DocId, SegmentReader, TantivyDocument};

use super::doc::{IndexDoc, Indexed};

/// The JSON field holding filter and sort values.
pub(super) const VALUES: &str = "f";

/// The key of a row field inside the values object (no dots, so paths are plain).
pub(super) fn value_key(field: &str) -> String {
    field.replace('.', "_")
}

#[derive(Clone)]
pub struct Fields {
    pub id: Field,
    pub country: Field,
    pub blocked: Field,
    pub row: Field,
    /// The row's ids as a short JSON text (`RowIds`).
    pub ids: Field,
    /// A hash of the record id: the last sort key, so rows tied on every
    /// requested key come out in the same order in every region.
    pub tie: Field,
    pub values: Field,
    pub texts: Vec<(&'static str, Field)>,
}

pub(super) fn schema(collection: RecordType) -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING);
    // Fast too: a search's filter reads them per candidate (`filter.rs`).
    let country = builder.add_text_field("country", STRING | FAST);
    let blocked = builder.add_text_field("blocked", STRING | FAST);
    // Stored as text: tantivy reads a stored bytes value back a byte at a
    // time (a fifth of a search's CPU), a text in one copy.
    let row = builder.add_text_field("row", STORED);
    let ids = builder.add_text_field("ids", STORED);
    let tie = builder.add_u64_field("tie", FAST);
    let values = builder.add_json_field(
        VALUES,
        JsonObjectOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default().set_tokenizer("raw").set_index_option(IndexRecordOption::Basic),
            )
            .set_fast("raw"),
    );
    let texts = svc_core::search::fields::collection(collection)
        .map(|c| c.text_fields)
        .unwrap_or(&[])
        .iter()
        .map(|name| (*name, builder.add_text_field(&format!("t_{}", value_key(name)), TEXT)))
        .collect();
    (builder.build(), Fields { id, country, blocked, row, ids, tie, values, texts })
}

/// The first eight bytes of a record id's SHA-256.
pub(super) fn id_hash(record_id: &str) -> u64 {
    let digest = svc_core::digest::sha256(record_id.as_bytes());
    u64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
}

/// Which shard of a collection a record lives in.
pub fn shard_of(record_id: &str, shards: usize) -> usize {
    (id_hash(record_id) % shards.max(1) as u64) as usize
}

pub(super) fn document(fields: &Fields, doc: &IndexDoc, blocked: &[String]) -> TantivyDocument {
    let mut out = TantivyDocument::default();
    out.add_text(fields.id, &doc.record_id);
    for country in &doc.countries {
        out.add_text(fields.country, country);
    }
    for group in blocked {
        out.add_text(fields.blocked, group);
    }
    match std::str::from_utf8(&doc.row) {
        Ok(row) => {
            out.add_text(fields.row, row);
            out.add_text(fields.ids, &doc.ids);
        }
        // Rows are JSON text; one that is not is never served, and must not
        // stall the index behind it.
        Err(_) => tracing::error!(record_id = %doc.record_id, "an indexed row is not UTF-8 text"),
    }
    out.add_u64(fields.tie, id_hash(&doc.record_id));
    for (name, text) in &doc.texts {
        if let Some((_, field)) = fields.texts.iter().find(|(n, _)| n == name) {
            out.add_text(*field, text);
        }
    }
    // Every number as f64, so range bounds and columns have one type.
    let mut values: HashMap<String, Vec<OwnedValue>> = HashMap::new();
    for (name, value) in &doc.filters {
        let v = match value {
            Indexed::Str(s) => OwnedValue::Str(s.clone()),
            Indexed::Bool(b) => OwnedValue::Bool(*b),
            Indexed::Num(n) => OwnedValue::F64(*n),
        };
        values.entry(value_key(name)).or_default().push(v);
    }
    for (name, lat, lng) in &doc.points {
        values.entry(format!("{}_lat", value_key(name))).or_default().push(OwnedValue::F64(*lat));
        values.entry(format!("{}_lng", value_key(name))).or_default().push(OwnedValue::F64(*lng));
    }
    let object =
        values.into_iter().map(|(k, mut v)| (k, if v.len() == 1 { v.remove(0) } else { OwnedValue::Array(v) }));
    out.add_field_value(fields.values, &OwnedValue::Object(object.collect()));
    out
}

/// A condition a range over a number column decides.
pub(super) fn is_numeric(condition: &Condition) -> bool {
    !matches!(
        condition,
        Condition::Eq(Scalar::Str(_) | Scalar::Bool(_)) | Condition::Ne(Scalar::Str(_) | Scalar::Bool(_))
    ) && !matches!(condition, Condition::In(_) | Condition::Nin(_))
}

pub(super) fn tie_column(segment: &SegmentReader) -> Option<Column<u64>> {
    segment.fast_fields().u64("tie").ok()
}

pub(super) fn tie_of(column: &Option<Column<u64>>, doc: DocId) -> u64 {
    column.as_ref().and_then(|c| c.first(doc)).unwrap_or(u64::MAX)
}

pub(super) fn f64_column(segment: &SegmentReader, path: &str) -> Option<Column<f64>> {
    let handles = segment.fast_fields().dynamic_column_handles(path).ok()?;
    handles.into_iter().find_map(|h| match h.open().ok()?.coerce_numerical(NumericalType::F64)? {
        DynamicColumn::F64(column) => Some(column),
        _ => None,
    })
}
