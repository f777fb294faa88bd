//! The transparency log's public routes (publishing 4.2; P-NS-9, P-NS-10):
//! `GET /v1/log/checkpoint` and `GET /v1/log/proof`. Every region answers
//! from its replicated copy of the log; a receipt's first level comes from
//! the region that served it, which alone holds its minute's receipts.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::merkle::{self, BatchTree, Hash};
use svc_core::problem::Code;
use svc_core::tlog::{self, path_value};

use super::AppState;
use super::problem::{ApiError, ApiResult};
use super::public::{PublicDocument, cached, json_document, query};
use crate::store::model::{LogCheckpoint, ReceiptPlace, ReceiptRoot};
use crate::store::{be, cf, from_be};

/// How long an answer about the newest checkpoint may be cached: the log
/// signs at most once a period, and a minute is a small delay.
const LATEST_MAX_AGE: u32 = 60;
/// An answer pinned to a tree size never changes.
const PINNED_MAX_AGE: u32 = 365 * 24 * 3600;

pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/log/checkpoint", get(checkpoint)).route("/v1/log/proof", get(proof))
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::detail(Code::RequestInvalid, detail)
}

fn not_found(detail: &str) -> ApiError {
    ApiError::detail(Code::NotFound, detail)
}

fn leaf_hash(text: &str, name: &str) -> ApiResult<Hash> {
    tlog::parse_leaf_name(text).ok_or_else(|| invalid(format!("{name} must be sha256: and 64 lower-case hex digits")))
}

/// The checkpoint asked for: the one signed at `tree_size`, else the newest.
fn signed_checkpoint(state: &AppState, tree_size: Option<u64>) -> ApiResult<LogCheckpoint> {
    match tree_size {
        Some(size) => {
            state.log.checkpoint(size)?.ok_or_else(|| not_found("no checkpoint was signed at that tree size"))
        }
        None => state.log.latest()?.ok_or_else(|| {
            ApiError::retry_after(Code::Unavailable, 5_000, "the log has not signed a checkpoint here yet")
        }),
    }
}

fn max_age(pinned: bool) -> u32 {
    if pinned { PINNED_MAX_AGE } else { LATEST_MAX_AGE }
}

fn json_answer(value: &Value, headers: &HeaderMap, pinned: bool) -> Response {
    json_document(value, headers, max_age(pinned))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointQuery {
    tree_size: Option<u64>,
    format: Option<String>,
}

/// `GET /v1/log/checkpoint[?tree_size=N][&format=note]`: JSON by default;
/// the bare C2SP note with `format=note` or `Accept: text/plain`, which is
/// what witnesses read.
async fn checkpoint(State(state): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    checkpoint_route(&state, &uri, &headers).unwrap_or_else(IntoResponse::into_response)
}

fn checkpoint_route(state: &AppState, uri: &Uri, headers: &HeaderMap) -> ApiResult<Response> {
    let q: CheckpointQuery = query(uri)?;
    let signed = signed_checkpoint(state, q.tree_size)?;
    let pinned = q.tree_size.is_some();
    let accepts_text = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/plain") && !a.contains("application/json"));
    match q.format.as_deref() {
        Some("note") => {}
        Some("json") => return Ok(json_answer(&checkpoint_value(state, &signed), headers, pinned)),
        Some(other) => return Err(invalid(format!("format is note or json, not {other}"))),
        None if accepts_text => {}
        None => return Ok(json_answer(&checkpoint_value(state, &signed), headers, pinned)),
    }
    let document = PublicDocument::new(Bytes::from(signed.note));
    Ok(cached(&document, headers, max_age(pinned), "text/plain; charset=utf-8"))
}

fn checkpoint_value(state: &AppState, signed: &LogCheckpoint) -> Value {
    json!({
        "origin": state.log.origin(),
        "tree_size": signed.size,
        "root_hash": merkle::root_form(&signed.root),
        "signed_at": signed.at.to_rfc3339_millis(),
        "checkpoint": signed.note,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProofQuery {
    leaf_hash: Option<String>,
    receipt: Option<String>,
    from: Option<u64>,
    to: Option<u64>,
    tree_size: Option<u64>,
}

/// `GET /v1/log/proof` with one of:
/// - `leaf_hash=sha256:…[&tree_size=N]`: a leaf's inclusion proof;
/// - `receipt=sha256:…`: a receipt's two levels (in its minute, the minute
///   in the log), at the region that served it;
/// - `from=M[&to=N]`: the consistency proof between two tree sizes.
async fn proof(State(state): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    proof_route(&state, &uri, &headers).await.unwrap_or_else(IntoResponse::into_response)
}

async fn proof_route(state: &AppState, uri: &Uri, headers: &HeaderMap) -> ApiResult<Response> {
    let q: ProofQuery = query(uri)?;
    match (&q.leaf_hash, &q.receipt, q.from) {
        (Some(leaf), None, None) if q.to.is_none() => {
            let value = inclusion(state, leaf_hash(leaf, "leaf_hash")?, q.tree_size).await?;
            Ok(json_answer(&value, headers, q.tree_size.is_some()))
        }
        (None, Some(receipt), None) if q.to.is_none() && q.tree_size.is_none() => {
            let value = receipt_proof(state, leaf_hash(receipt, "receipt")?).await?;
            Ok(json_answer(&value, headers, false))
        }
        (None, None, Some(from)) if q.tree_size.is_none() => {
            let value = consistency(state, from, q.to).await?;
            Ok(json_answer(&value, headers, q.to.is_some()))
        }
        _ => Err(invalid("give leaf_hash (and optionally tree_size), receipt, or from (and optionally to)")),
    }
}

/// A leaf's place in a checkpoint's tree, as every proof answer gives it.
pub fn inclusion_value(index: u64, path: &[Hash], checkpoint: &LogCheckpoint) -> Value {
    json!({
        "leaf_index": index,
        "tree_size": checkpoint.size,
        "inclusion_path": path_value(path),
        "checkpoint": checkpoint.note,
    })
}

/// A leaf's index and audit path at a signed checkpoint.
async fn log_inclusion(state: &AppState, leaf: &Hash, tree_size: Option<u64>) -> ApiResult<Option<Value>> {
    if state.log.find(leaf)?.is_none() {
        return Ok(None);
    }
    let signed = signed_checkpoint(state, tree_size)?;
    let proven = state.log.prove(leaf, &signed).await?;
    Ok(proven.map(|(index, path)| inclusion_value(index, &path, &signed)))
}

async fn inclusion(state: &AppState, leaf: Hash, tree_size: Option<u64>) -> ApiResult<Value> {
    let mut value = log_inclusion(state, &leaf, tree_size)
        .await?
        .ok_or_else(|| not_found("not in the log (yet): leaves are sequenced once an hour"))?;
    let index = value["leaf_index"].as_u64().unwrap_or_default();
    let stored = state.log.leaf(index)?.ok_or_else(|| ApiError::internal("indexed leaf missing"))?;
    value["leaf_hash"] = json!(merkle::root_form(&leaf));
    value["kind"] = json!(stored.kind);
    value["leaf"] = json!(String::from_utf8_lossy(&stored.data));
    value["sequenced_at"] = json!(stored.sequenced_at.to_rfc3339_millis());
    Ok(value)
}

async fn consistency(state: &AppState, from: u64, to: Option<u64>) -> ApiResult<Value> {
    let signed = signed_checkpoint(state, to)?;
    if from == 0 || from > signed.size {
        return Err(invalid(format!("from must be between 1 and {}", signed.size)));
    }
    let path = state.log.consistency(from, signed.size).await?.ok_or_else(|| ApiError::internal("log tree short"))?;
    Ok(json!({
        "from": from,
        "to": signed.size,
        "consistency_path": path_value(&path),
        "checkpoint": signed.note,
    }))
}

/// A receipt served here: its place in its minute part, and the part's leaf
/// in the log (absent, with `reason`, until home sequences it).
async fn receipt_proof(state: &AppState, receipt: Hash) -> ApiResult<Value> {
    let unknown = "no receipt served here has that hash, or its minute is not folded yet (a minute is folded about \
                   10 s after it ends); ask the region the receipt names";
    // Receipts folded before sequences were kept by leaf have their place.
    let (place, leaves) = match state.store.get::<ReceiptPlace>(cf::RECEIPT_PLACES, &receipt)? {
        Some(place) => {
            let leaves: Vec<Hash> =
                state.store.get(cf::RECEIPT_PARTS, &be(place.first_seq))?.ok_or_else(|| not_found(unknown))?;
            (place, leaves)
        }
        None => {
            // A part is a run of consecutive receipts: the one that starts
            // at or before this receipt holds it, if it is folded.
            let seq: u64 = state.store.get(cf::RECEIPT_SEQS, &receipt)?.ok_or_else(|| not_found(unknown))?;
            let (key, leaves): (Vec<u8>, Vec<Hash>) =
                state.store.at_or_before(cf::RECEIPT_PARTS, &be(seq))?.ok_or_else(|| not_found(unknown))?;
            let first_seq = from_be(&key).ok_or_else(|| ApiError::internal("malformed receipt part key"))?;
            let index = seq - first_seq;
            if leaves.get(index as usize) != Some(&receipt) {
                return Err(not_found(unknown));
            }
            (ReceiptPlace { first_seq, index }, leaves)
        }
    };
    let key = crate::actors::receipt_folder::root_key(&state.config.region, place.first_seq);
    let root: ReceiptRoot = state.store.get(cf::RECEIPT_ROOTS, &key)?.ok_or_else(|| not_found(unknown))?;
    let path = BatchTree::from_leaf_hashes(&leaves)
        .inclusion_proof(place.index as usize)
        .ok_or_else(|| ApiError::internal("receipt place outside its part"))?;
    let minute = crate::transparency::minute_of(&root).leaf();
    let log = log_inclusion(state, &merkle::leaf_hash(&minute), None).await?;
    Ok(json!({
        "receipt": merkle::root_form(&receipt),
        "region": root.region,
        "index": place.index,
        "path": path_value(&path),
        "minute_leaf": String::from_utf8_lossy(&minute),
        "log": log,
        "reason": if log.is_none() { Value::from("not_in_log") } else { Value::Null },
    }))
}
