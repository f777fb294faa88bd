//! Projections: from a validated record to the signed row the search index
//! serves (retrieval 2.4, publishing 2.6 and 4.2).
//!
//! Each collection has one projection specification, version `<collection>/1`.
//! Its document (`version`, `spec_version`, `record_type`, `field_map`,
//! `rules`, `unsigned_fields`, `serve_time_fields`, `definition`, `sha256`) is
//! served at `/v1/projections/{type}/{version}`; `sha256` is `sha256:` + hex of
//! the RFC 8785 form of the document without its `sha256` member, and that
//! value is the `adl_proj` of every row of the version (P2.6.43).
//!
//! A row holds `record_id`, `business_uuid`, `business_name`, `type`, the
//! collection's fields, `published_at` (Unix seconds), `adl_origin`,
//! `adl_proj`, `adl_key_id` and `adl_row_sig`. The signature covers the RFC
//! 8785 form of the row without `adl_row_sig` and without every unsigned and
//! serve-time member. Where retrieval 2.4 lists three serve-time members and
//! publishing 4.2 strips only two (RULES appendix item 1), the specification's
//! own `unsigned_fields` and `serve_time_fields` are the authority: all five are
//! stripped before signing and before verifying.

mod rows;
mod specs;

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::Reason;
use crate::canonical::{CanonicalError, canonicalize, to_signed_bytes};
use crate::digest::sha256_prefixed;
use crate::ids::RecordType;
use crate::keys::{Alg, SigningKey, VerifyingKey};
use crate::records::ValidRecord;
use crate::time::UnixMs;

/// `spec_version` of every specification document this module writes.
pub const SPEC_VERSION: u64 = 1;
/// Row members the projection leaves unsigned (R2.4.17).
pub const UNSIGNED_FIELDS: [&str; 2] = ["sponsorship_id", "excluded_groups"];
/// Row members set at serve time, outside the signature (R2.4.15).
pub const SERVE_TIME_FIELDS: [&str; 3] = ["ai_policy_bits", "sponsored", "freshness_expectation"];
/// The row member holding the signature.
pub const SIGNATURE_MEMBER: &str = "adl_row_sig";
/// The projection version of each collection, as `adl_proj` names it.
pub const VERSIONS: [(RecordType, &str); 6] = [
    (RecordType::Products, "products/1"),
    (RecordType::BusinessFiles, "business_files/1"),
    (RecordType::Events, "events/1"),
    (RecordType::Jobs, "jobs/1"),
    (RecordType::Updates, "updates/1"),
    // An ad's row (R2.8.10) travels in its ad item, never in a search.
    (RecordType::Ads, "ads/1"),
];

/// One projection specification.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionSpec {
    pub record_type: RecordType,
    /// `products/1`, …
    pub version: &'static str,
    /// `sha256:` + hex of the canonical document without `sha256`: the rows' `adl_proj`.
    pub sha256: String,
    document: Value,
}

impl ProjectionSpec {
    /// The full document, `sha256` included, as served.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// The `{version}` path segment (`1`).
    pub fn version_number(&self) -> &'static str {
        self.version.rsplit('/').next().unwrap_or(self.version)
    }
}

fn all() -> &'static [ProjectionSpec] {
    static SPECS: OnceLock<Vec<ProjectionSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        VERSIONS
            .iter()
            .filter_map(|&(kind, version)| {
                let mut document = specs::document(kind)?;
                let sha256 = sha256_prefixed(&canonicalize(&document));
                if let Value::Object(map) = &mut document {
                    map.insert("sha256".into(), Value::String(sha256.clone()));
                }
                Some(ProjectionSpec { record_type: kind, version, sha256, document })
            })
            .collect()
    })
}

/// Every specification, in collection order.
pub fn specs() -> &'static [ProjectionSpec] {
    all()
}

/// The current specification of a collection; `None` for a type that is not one.
pub fn spec(kind: RecordType) -> Option<&'static ProjectionSpec> {
    all().iter().find(|s| s.record_type == kind)
}

/// The specification a row's `adl_proj` names. An unknown hash is `None`: it
/// is refused, never guessed (R9.9).
pub fn spec_by_hash(adl_proj: &str) -> Option<&'static ProjectionSpec> {
    all().iter().find(|s| s.sha256 == adl_proj)
}

/// The specification of `kind` at `version`, given as the path segment (`1`)
/// or in full (`products/1`).
pub fn spec_by_version(kind: RecordType, version: &str) -> Option<&'static ProjectionSpec> {
    all().iter().find(|s| s.record_type == kind && (s.version == version || s.version_number() == version))
}

/// What the service knows about a record at publish time, beyond its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionContext {
    pub record_id: String,
    pub business_uuid: String,
    pub business_name: String,
    pub published_at: UnixMs,
    /// An ad's row also holds its seal and its images' hashes (R2.8.10).
    pub ad: Option<AdParts>,
}

/// What an ad's row holds beyond its record's members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdParts {
    /// The business's seal envelope over the record (`adl_origin_seal`).
    pub origin_seal: Value,
    /// `adl_creative`: each fetched image's slot and `sha256:` hash.
    pub creative: Map<String, Value>,
}

impl AdParts {
    /// The parts an ad row names, to re-run its projection.
    pub fn of_row(row: &Map<String, Value>) -> Option<AdParts> {
        Some(AdParts {
            origin_seal: row.get("adl_origin_seal")?.clone(),
            creative: row.get("adl_creative")?.as_object()?.clone(),
        })
    }
}

/// Builds and signs the row of a record (R2.4.7 to R2.4.13).
///
/// `key` is the projection key; rows are Ed25519 only, and [`verify_row`]
/// refuses a row signed by any other algorithm.
pub fn project(record: &ValidRecord, ctx: &ProjectionContext, key: &SigningKey) -> Map<String, Value> {
    let mut row = unsigned_row(record, ctx, &key.verifying_key().thumbprint());
    // A row from a valid record has only safe numbers, so the checked and the
    // plain canonical forms agree; the plain one cannot fail.
    let signature = key.sign(&canonicalize(&Value::Object(signed_part(&row))));
    row.insert(SIGNATURE_MEMBER.into(), Value::String(crate::b64::std_encode(&signature)));
    row
}

/// The row without its signature.
fn unsigned_row(record: &ValidRecord, ctx: &ProjectionContext, key_id: &str) -> Map<String, Value> {
    let kind = record.record_type();
    let mut row = Map::new();
    row.insert("record_id".into(), ctx.record_id.clone().into());
    row.insert("business_uuid".into(), ctx.business_uuid.clone().into());
    row.insert("business_name".into(), ctx.business_name.clone().into());
    row.insert("type".into(), kind.name().into());
    rows::collection_fields(kind, record.fields(), &mut row);
    if let Some(ad) = &ctx.ad {
        row.insert("adl_origin_seal".into(), ad.origin_seal.clone());
        row.insert("adl_creative".into(), Value::Object(ad.creative.clone()));
    }
    row.insert("published_at".into(), ctx.published_at.as_secs().into());
    row.insert("adl_origin".into(), record.origin().into());
    if let Some(spec) = spec(kind) {
        row.insert("adl_proj".into(), spec.sha256.clone().into());
    }
    row.insert("adl_key_id".into(), key_id.into());
    row
}

/// The row without `adl_row_sig` and without every unsigned and serve-time member.
fn signed_part(row: &Map<String, Value>) -> Map<String, Value> {
    let mut part = row.clone();
    for name in std::iter::once(SIGNATURE_MEMBER).chain(UNSIGNED_FIELDS).chain(SERVE_TIME_FIELDS) {
        part.remove(name);
    }
    part
}

/// The canonical bytes `adl_row_sig` signs: RFC 8785 of the row without
/// `adl_row_sig`, unsigned and serve-time members. Refuses unsafe numbers.
pub fn signed_bytes(row: &Map<String, Value>) -> Result<Vec<u8>, CanonicalError> {
    to_signed_bytes(&Value::Object(signed_part(row)))
}

/// Verifies a row as served, offline (P4.2.51): the projection version from
/// `adl_proj` (unknown: `projection_unknown`, R9.9), the key from `adl_key_id`
/// (unknown: `key_unknown`; not Ed25519 or not that thumbprint:
/// `key_mismatch`), then `adl_row_sig` over the signed part
/// (`row_signature_invalid`). A row whose `type` is not its projection's is
/// `record_type_mismatch`.
pub fn verify_row(row: &Map<String, Value>, key_for: impl Fn(&str) -> Option<VerifyingKey>) -> Result<(), Reason> {
    let spec = row.get("adl_proj").and_then(Value::as_str).and_then(spec_by_hash).ok_or(Reason::ProjectionUnknown)?;
    if row.get("type").and_then(Value::as_str) != Some(spec.record_type.name()) {
        return Err(Reason::RecordTypeMismatch);
    }
    let key_id = row.get("adl_key_id").and_then(Value::as_str).ok_or(Reason::KeyUnknown)?;
    let key = key_for(key_id).ok_or(Reason::KeyUnknown)?;
    if key.alg() != Alg::Ed25519 || key.thumbprint() != key_id {
        return Err(Reason::KeyMismatch);
    }
    let signature = row
        .get(SIGNATURE_MEMBER)
        .and_then(Value::as_str)
        .and_then(crate::b64::std_decode)
        .ok_or(Reason::RowSignatureInvalid)?;
    let message = signed_bytes(row).map_err(|_| Reason::RowSignatureInvalid)?;
    if key.verify(&message, &signature) { Ok(()) } else { Err(Reason::RowSignatureInvalid) }
}

/// Whether re-running the projection of `record` gives exactly the signed part
/// of `row` (the verify check "re-running the projection gives that row").
/// The key id is taken from the row, since re-running cannot sign.
pub fn rerun_matches(record: &ValidRecord, ctx: &ProjectionContext, row: &Map<String, Value>) -> bool {
    let Some(key_id) = row.get("adl_key_id").and_then(Value::as_str) else {
        return false;
    };
    let expected = unsigned_row(record, ctx, key_id);
    match (signed_bytes(row), signed_bytes(&expected)) {
        (Ok(served), Ok(rerun)) => served == rerun,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
