//! Routes between the regions of one deployment, on home's internal
//! listener, each region behind its own token (`service::internal`).
//! Bodies are postcard.

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::auth::bearer;
use super::body::read_limited;
use crate::region::Region;
use crate::service::Result;
use crate::service::internal::{self, LOG_HEAD_HEADER, MAX_BYTES};

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/internal/v1/log", get(log))
        .route("/internal/v1/nonces", get(nonces))
        .route("/internal/v1/report", post(report))
        .route("/internal/v1/lease", post(lease))
}

const POSTCARD: &str = "application/vnd.svc.postcard";

fn postcard_answer(bytes: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static(POSTCARD))], bytes).into_response()
}

#[derive(Deserialize)]
struct LogQuery {
    /// The last sequence number the region applied (or learned).
    after: u64,
    /// How long to wait for an entry when there is none yet.
    #[serde(default)]
    wait_ms: u64,
}

async fn log(State(state): State<Region>, headers: HeaderMap, query: Query<LogQuery>) -> Result<Response> {
    internal::admit(&state, bearer(&headers))?;
    let page = internal::log_page(&state, query.after, query.wait_ms).await?;
    let content_type = HeaderValue::from_static("application/vnd.svc.log-frames");
    let mut response = ([(header::CONTENT_TYPE, content_type)], page.frames).into_response();
    response.headers_mut().insert(LOG_HEAD_HEADER, HeaderValue::from(page.head));
    Ok(response)
}

async fn nonces(State(state): State<Region>, headers: HeaderMap, query: Query<LogQuery>) -> Result<Response> {
    internal::admit(&state, bearer(&headers))?;
    Ok(postcard_answer(internal::nonce_feed(&state, query.after, query.wait_ms).await?))
}

async fn report(State(state): State<Region>, req: Request) -> Result<Response> {
    let (parts, body) = req.into_parts();
    let region = internal::admit(&state, bearer(&parts.headers))?;
    let body = read_limited(&parts.headers, body, MAX_BYTES, state.clock.now()).await?;
    Ok(postcard_answer(internal::take_report(&state, &region, &body).await?))
}

async fn lease(State(state): State<Region>, req: Request) -> Result<Response> {
    let (parts, body) = req.into_parts();
    let region = internal::admit(&state, bearer(&parts.headers))?;
    let body = read_limited(&parts.headers, body, MAX_BYTES, state.clock.now()).await?;
    Ok(postcard_answer(internal::grant_lease(&state, &region, &body).await?))
}
