//! The transparency log's public routes (publishing 4.2; P-NS-9, P-NS-10):
//! `GET /v1/log/checkpoint` and `GET /v1/log/proof` (`service::public::log`),
//! and the same log as c2sp.org/tlog-tiles lays it out under the prefix its
//! origin names (`/log`): `checkpoint`, `tile/<L>/<N>[.p/<W>]` and
//! `tile/entries/<N>[.p/<W>]`.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use svc_core::problem::Code;

use super::cacheable::{cached, json_document, query};
use super::own_copy::FromOwnCopy;
use svc_node::region::parts::HasLog;
use svc_node::service::public::PublicDocument;
use svc_node::service::public::log::{self, ProofQuery, max_age};
use svc_node::service::{Error, Result};

/// Served from any node's own copy (a standby member of home's group too).
pub fn routes<S: FromOwnCopy>() -> Router<S> {
    Router::new()
        .route("/v1/log/checkpoint", get(checkpoint::<S>))
        .route("/v1/log/proof", get(proof::<S>))
        .route("/log/checkpoint", get(tiled_checkpoint::<S>))
        .route("/log/tile/{*path}", get(tile::<S>))
}

/// `GET /log/checkpoint`: the newest signed note with its cosignatures.
async fn tiled_checkpoint<S: FromOwnCopy>(State(state): State<S>, headers: HeaderMap) -> Response {
    match log::cosigned_checkpoint(&state) {
        Ok(note) => cached(
            &PublicDocument::new(Bytes::from(note)),
            &headers,
            log::TILED_CHECKPOINT_MAX_AGE,
            "text/plain; charset=utf-8",
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /log/tile/…`: a tile's bytes never change, so they are cached for good.
async fn tile<S: FromOwnCopy>(State(state): State<S>, Path(path): Path<String>, headers: HeaderMap) -> Response {
    match log::tile(&state, &path).await {
        Ok(bytes) => {
            cached(&PublicDocument::new(Bytes::from(bytes)), &headers, log::PINNED_MAX_AGE, "application/octet-stream")
        }
        Err(e) => e.into_response(),
    }
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
async fn checkpoint<S: FromOwnCopy>(State(state): State<S>, uri: Uri, headers: HeaderMap) -> Response {
    checkpoint_answer(&state, &uri, &headers).unwrap_or_else(IntoResponse::into_response)
}

fn checkpoint_answer(state: &impl HasLog, uri: &Uri, headers: &HeaderMap) -> Result<Response> {
    let q: CheckpointQuery = query(uri)?;
    let signed = log::signed_checkpoint(state, q.tree_size)?;
    let pinned = q.tree_size.is_some();
    let accepts_text = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/plain") && !a.contains("application/json"));
    let json = || json_document(&log::checkpoint_value(state, &signed), headers, max_age(pinned));
    match q.format.as_deref() {
        Some("note") => {}
        Some("json") => return Ok(json()),
        Some(other) => return Err(Error::detail(Code::RequestInvalid, format!("format is note or json, not {other}"))),
        None if accepts_text => {}
        None => return Ok(json()),
    }
    let document = PublicDocument::new(Bytes::from(signed.note));
    Ok(cached(&document, headers, max_age(pinned), "text/plain; charset=utf-8"))
}

/// `GET /v1/log/proof`: a leaf's inclusion, a receipt's two levels, or the
/// consistency between two tree sizes.
async fn proof<S: FromOwnCopy>(State(state): State<S>, uri: Uri, headers: HeaderMap) -> Response {
    let answer = match query::<ProofQuery>(&uri) {
        Ok(q) => log::proof(&state, q).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok((value, pinned)) => json_document(&value, &headers, max_age(pinned)),
        Err(e) => e.into_response(),
    }
}
