//! A read region's write path: every route it does not serve itself goes to
//! home as it came (method, path, headers, body, streamed both ways). The
//! signature names the deployment's shared authority, so home verifies it
//! as if it had been sent there. When home cannot be reached the answer is
//! 503 with `Retry-After`, and so is a write home does not answer within
//! `forward_timeout_ms`: the region never answers a write it did not hand
//! to home.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use svc_core::problem::Code;

use super::AppState;
use super::problem::ApiError;

/// How soon a caller may try a write again after home was unreachable.
const RETRY_MS: u64 = 5_000;

pub async fn to_home(State(state): State<AppState>, request: Request) -> Response {
    let Some(replica) = &state.replica else {
        return ApiError::new(Code::NotFound).into_response();
    };
    let wait = state.config.replication.as_ref().map_or(10_000, |r| r.forward_timeout_ms);
    match tokio::time::timeout(Duration::from_millis(wait), replica.link.home.forward(request)).await {
        Ok(Ok(answer)) => answer.map(Body::new),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "home unreachable for a forwarded request");
            ApiError::retry_after(Code::Unavailable, RETRY_MS, "the home region cannot be reached").into_response()
        }
        // Home may still act on it: a retry with the same idempotency key
        // gets the first answer, so nothing is done twice.
        Err(_) => {
            tracing::warn!(wait_ms = wait, "home did not answer a forwarded request in time");
            ApiError::retry_after(Code::Unavailable, RETRY_MS, "the home region did not answer in time").into_response()
        }
    }
}
