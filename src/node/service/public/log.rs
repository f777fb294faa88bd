//! The transparency log as anyone reads it (publishing 4.2; P-NS-9,
//! P-NS-10): checkpoints, and inclusion, consistency and receipt proofs.
//! Every region answers
//! from its replicated copy of the log; a receipt's first level comes from
//! the region that served it, which alone holds its minute's receipts.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::cosign::cosigned_note;
use svc_core::merkle::{self, BatchTree, Hash};
use svc_core::problem::Code;
use svc_core::tiles::{TileKind, TileRef, entry_bundle};
use svc_core::tlog::{self, path_value};

use crate::region::parts::{HasConfig, HasLog, HasStore};
use crate::service::{Error, Result};
use svc_store::model::{LogCheckpoint, ReceiptPlace, ReceiptRoot};
use svc_store::{be, cf, from_be};

/// How long an answer about the newest checkpoint may be cached: the log
/// signs at most once a period, and a minute is a small delay.
pub const LATEST_MAX_AGE: u32 = 60;
/// An answer pinned to a tree size never changes.
pub const PINNED_MAX_AGE: u32 = 365 * 24 * 3600;
/// The tile layout's checkpoint: C2SP asks for no caching beyond a few
/// seconds, and witnesses' cosignatures arrive after the log signs.
pub const TILED_CHECKPOINT_MAX_AGE: u32 = 5;

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

fn not_found(detail: &str) -> Error {
    Error::detail(Code::NotFound, detail)
}

fn leaf_hash(text: &str, name: &str) -> Result<Hash> {
    tlog::parse_leaf_name(text).ok_or_else(|| invalid(format!("{name} must be sha256: and 64 lower-case hex digits")))
}

/// The checkpoint asked for: the one signed at `tree_size`, else the newest.
pub fn signed_checkpoint(state: &impl HasLog, tree_size: Option<u64>) -> Result<LogCheckpoint> {
    match tree_size {
        Some(size) => {
            state.log().checkpoint(size)?.ok_or_else(|| not_found("no checkpoint was signed at that tree size"))
        }
        None => state.log().latest()?.ok_or_else(|| {
            Error::retry_after(Code::Unavailable, 5_000, "the log has not signed a checkpoint here yet")
        }),
    }
}

/// How long an answer may be cached: forever when pinned to a tree size.
pub fn max_age(pinned: bool) -> u32 {
    if pinned { PINNED_MAX_AGE } else { LATEST_MAX_AGE }
}

/// A checkpoint as JSON: its origin, size, root, time and signed note.
pub fn checkpoint_value(state: &impl HasLog, signed: &LogCheckpoint) -> Value {
    json!({
        "origin": state.log().origin(),
        "tree_size": signed.size,
        "root_hash": merkle::root_form(&signed.root),
        "signed_at": signed.at.to_rfc3339_millis(),
        "checkpoint": signed.note,
    })
}

/// The newest checkpoint as tile clients and witnesses read it
/// (c2sp.org/tlog-tiles): the log's note, then every witness's cosignature
/// collected for its size so far.
pub fn cosigned_checkpoint(state: &impl HasLog) -> Result<String> {
    let signed = signed_checkpoint(state, None)?;
    let lines: Vec<String> = state.log().cosignatures(signed.size)?.into_iter().map(|c| c.line).collect();
    Ok(cosigned_note(&signed.note, &lines))
}

/// `GET /log/tile/<path>`: a hash tile or an entry bundle, as far as the
/// newest checkpoint here reaches. `path` is what follows `tile/`.
pub async fn tile(state: &impl HasLog, path: &str) -> Result<Vec<u8>> {
    let tile = TileRef::parse(path).map_err(|e| invalid(format!("tile/{path}: {e}")))?;
    let size = signed_checkpoint(state, None)?.size;
    let missing = || {
        not_found(&format!(
            "tile/{path} is not in the newest checkpoint here ({size} leaves); a tile is served once a checkpoint covers it"
        ))
    };
    match tile.kind {
        TileKind::Hashes { .. } => state.log().tile(&tile, size).await?.ok_or_else(missing),
        TileKind::Entries => {
            let leaves = state.log().entries(&tile, size)?.ok_or_else(missing)?;
            entry_bundle(leaves.iter().map(|leaf| leaf.data.as_slice()))
                .ok_or_else(|| Error::internal("a leaf is longer than an entry bundle frames"))
        }
    }
}

/// What `GET /v1/log/proof` asks for.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofQuery {
    pub leaf_hash: Option<String>,
    pub receipt: Option<String>,
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub tree_size: Option<u64>,
}

/// One of: a leaf's inclusion proof (`leaf_hash`, optionally at
/// `tree_size`); a receipt's two levels (`receipt`: in its minute, the
/// minute in the log), at the region that served it; the consistency proof
/// between two tree sizes (`from`, optionally `to`). Answers the proof and
/// whether it is pinned to a tree size (and so never changes).
pub async fn proof<R>(state: &R, q: ProofQuery) -> Result<(Value, bool)>
where
    R: HasConfig + HasStore + HasLog,
{
    match (&q.leaf_hash, &q.receipt, q.from) {
        (Some(leaf), None, None) if q.to.is_none() => {
            Ok((inclusion(state, leaf_hash(leaf, "leaf_hash")?, q.tree_size).await?, q.tree_size.is_some()))
        }
        (None, Some(receipt), None) if q.to.is_none() && q.tree_size.is_none() => {
            Ok((receipt_proof(state, leaf_hash(receipt, "receipt")?).await?, false))
        }
        (None, None, Some(from)) if q.tree_size.is_none() => {
            Ok((consistency(state, from, q.to).await?, q.to.is_some()))
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
pub async fn log_inclusion(state: &impl HasLog, leaf: &Hash, tree_size: Option<u64>) -> Result<Option<Value>> {
    if state.log().find(leaf)?.is_none() {
        return Ok(None);
    }
    let signed = signed_checkpoint(state, tree_size)?;
    let proven = state.log().prove(leaf, &signed).await?;
    Ok(proven.map(|(index, path)| inclusion_value(index, &path, &signed)))
}

async fn inclusion(state: &impl HasLog, leaf: Hash, tree_size: Option<u64>) -> Result<Value> {
    let mut value = log_inclusion(state, &leaf, tree_size)
        .await?
        .ok_or_else(|| not_found("not in the log (yet): leaves are sequenced once an hour"))?;
    let index = value["leaf_index"].as_u64().unwrap_or_default();
    let stored = state.log().leaf(index)?.ok_or_else(|| Error::internal("indexed leaf missing"))?;
    value["leaf_hash"] = json!(merkle::root_form(&leaf));
    value["kind"] = json!(stored.kind);
    value["leaf"] = json!(String::from_utf8_lossy(&stored.data));
    value["sequenced_at"] = json!(stored.sequenced_at.to_rfc3339_millis());
    Ok(value)
}

async fn consistency(state: &impl HasLog, from: u64, to: Option<u64>) -> Result<Value> {
    let signed = signed_checkpoint(state, to)?;
    if from == 0 || from > signed.size {
        return Err(invalid(format!("from must be between 1 and {}", signed.size)));
    }
    let path = state.log().consistency(from, signed.size).await?.ok_or_else(|| Error::internal("log tree short"))?;
    Ok(json!({
        "from": from,
        "to": signed.size,
        "consistency_path": path_value(&path),
        "checkpoint": signed.note,
    }))
}

/// A receipt served here: its place in its minute part, and the part's leaf
/// in the log (absent, with `reason`, until home sequences it).
async fn receipt_proof<R>(state: &R, receipt: Hash) -> Result<Value>
where
    R: HasConfig + HasStore + HasLog,
{
    let unknown = "no receipt served here has that hash, or its minute is not folded yet (a minute is folded about \
                   10 s after it ends); ask the region the receipt names";
    // Receipts folded before sequences were kept by leaf have their place.
    let (place, leaves) = match state.store().get::<ReceiptPlace>(cf::RECEIPT_PLACES, &receipt)? {
        Some(place) => {
            let leaves: Vec<Hash> =
                state.store().get(cf::RECEIPT_PARTS, &be(place.first_seq))?.ok_or_else(|| not_found(unknown))?;
            (place, leaves)
        }
        None => {
            // A part is a run of consecutive receipts: the one that starts
            // at or before this receipt holds it, if it is folded.
            let seq: u64 = state.store().get(cf::RECEIPT_SEQS, &receipt)?.ok_or_else(|| not_found(unknown))?;
            let (key, leaves): (Vec<u8>, Vec<Hash>) =
                state.store().at_or_before(cf::RECEIPT_PARTS, &be(seq))?.ok_or_else(|| not_found(unknown))?;
            let first_seq = from_be(&key).ok_or_else(|| Error::internal("malformed receipt part key"))?;
            let index = seq - first_seq;
            if leaves.get(index as usize) != Some(&receipt) {
                return Err(not_found(unknown));
            }
            (ReceiptPlace { first_seq, index }, leaves)
        }
    };
    let key = svc_store::keys::receipt_root(&state.config().region, place.first_seq);
    let root: ReceiptRoot = state.store().get(cf::RECEIPT_ROOTS, &key)?.ok_or_else(|| not_found(unknown))?;
    let path = BatchTree::from_leaf_hashes(&leaves)
        .inclusion_proof(place.index as usize)
        .ok_or_else(|| Error::internal("receipt place outside its part"))?;
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
