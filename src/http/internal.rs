//! Routes between the regions of one deployment, behind the shared
//! replication token: home serves its replication log to read regions.

use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use svc_core::problem::Code;

use super::AppState;
use super::admin::bearer_matches;
use super::problem::{ApiError, ApiResult};
use crate::replication::{LOG_HEAD_HEADER, encode_frames, entries_after};

/// Entries and bytes one answer carries at most.
const MAX_ENTRIES: usize = 1_000;
const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The longest a caught-up region is kept waiting for a new entry.
const MAX_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(25);

pub fn routes() -> Router<AppState> {
    Router::new().route("/internal/v1/log", get(log))
}

#[derive(Deserialize)]
struct LogQuery {
    /// The last sequence number the region applied.
    after: u64,
    /// How long to wait for an entry when there is none yet.
    #[serde(default)]
    wait_ms: u64,
}

/// Frames of the entries after `after`, oldest first; an empty body once
/// `wait_ms` passed with nothing new. `x-svc-log-head` is home's newest
/// sequence number, from which the region knows its lag.
async fn log(State(state): State<AppState>, headers: HeaderMap, query: Query<LogQuery>) -> ApiResult<Response> {
    let Some(replication) = state.config.replication.as_ref().filter(|_| state.home.is_some()) else {
        return Err(ApiError::new(Code::NotFound));
    };
    if !bearer_matches(&headers, &replication.token) {
        return Err(ApiError::new(Code::Unauthorized));
    }
    let until = Instant::now() + Duration::from_millis(query.wait_ms).min(MAX_WAIT);
    let entries = loop {
        let entries = entries_after(&state.store, query.after, MAX_ENTRIES).map_err(ApiError::internal)?;
        if !entries.is_empty() || Instant::now() >= until {
            break entries;
        }
        tokio::time::sleep(POLL).await;
    };
    let head = crate::replication::last_seq(&state.store).map_err(ApiError::internal)?;
    let body = encode_frames(&entries, MAX_BYTES);
    let mut response =
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/vnd.svc.log-frames"))], body).into_response();
    response.headers_mut().insert(LOG_HEAD_HEADER, HeaderValue::from(head));
    Ok(response)
}
