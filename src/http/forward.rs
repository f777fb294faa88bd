//! A read region's write path: every route it does not serve itself goes to
//! home as it came (method, path, headers, body, streamed both ways). The
//! signature names the deployment's shared authority, so home verifies it
//! as if it had been sent there. When home cannot be reached the answer is
//! 503 with `Retry-After`: the region never answers a write it did not hand
//! to home.

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
    match replica.link.home.forward(request).await {
        Ok(answer) => answer.map(Body::new),
        Err(e) => {
            tracing::warn!(error = %e, "home unreachable for a forwarded request");
            ApiError::retry_after(Code::Unavailable, RETRY_MS, "the home region cannot be reached").into_response()
        }
    }
}
