//! Routes between the regions of one deployment, behind the shared
//! replication token: home serves its replication log and its nonce feed to
//! read regions, takes their reports (claims, usage, lease returns), and
//! grants allowance leases. Bodies are postcard.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use svc_core::keys::{Alg, VerifyingKey};
use svc_core::problem::Code;

use super::AppState;
use super::admin::bearer_matches;
use super::body::read_limited;
use super::problem::{ApiError, ApiResult};
use crate::actors::billing::BillingMsg;
use crate::actors::nonce_store::NonceMsg;
use crate::actors::publisher::PublisherMsg;
use crate::replication::exchange::{self, FeedPage, LeaseAsk, Outgoing, Report};
use crate::replication::{LOG_HEAD_HEADER, encode_frames, entries_after};
use crate::store::model::ReceiptRoot;

/// Entries and bytes one answer carries at most.
const MAX_ENTRIES: usize = 1_000;
const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The longest a caught-up region is kept waiting for a new entry.
const MAX_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(25);

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/internal/v1/log", get(log))
        .route("/internal/v1/nonces", get(nonces))
        .route("/internal/v1/report", post(report))
        .route("/internal/v1/lease", post(lease))
}

/// Home's link settings, once the caller showed the replication token.
fn admitted(state: &AppState, headers: &HeaderMap) -> ApiResult<()> {
    let Some(replication) = state.config.replication.as_ref().filter(|_| state.home.is_some()) else {
        return Err(ApiError::new(Code::NotFound));
    };
    if !bearer_matches(headers, &replication.token) {
        return Err(ApiError::new(Code::Unauthorized));
    }
    Ok(())
}

const POSTCARD: &str = "application/vnd.svc.postcard";

async fn read_postcard<T: DeserializeOwned>(state: &AppState, headers: &HeaderMap, body: Body) -> ApiResult<T> {
    let bytes = read_limited(headers, body, MAX_BYTES, state.clock.now()).await?;
    postcard::from_bytes(&bytes).map_err(|e| ApiError::detail(Code::RequestInvalid, format!("postcard: {e}")))
}

fn postcard_answer<T: Serialize>(value: &T) -> ApiResult<Response> {
    let bytes = postcard::to_stdvec(value).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static(POSTCARD))], bytes).into_response())
}

/// Waits until `fetch` finds something or `wait_ms` (at most 10 s) passed.
async fn long_poll<T>(wait_ms: u64, fetch: impl Fn() -> ApiResult<Vec<T>>) -> ApiResult<Vec<T>> {
    let until = Instant::now() + Duration::from_millis(wait_ms).min(MAX_WAIT);
    loop {
        let found = fetch()?;
        if !found.is_empty() || Instant::now() >= until {
            return Ok(found);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The claimed nonces after `after`, oldest first, and the feed's head.
async fn nonces(State(state): State<AppState>, headers: HeaderMap, query: Query<LogQuery>) -> ApiResult<Response> {
    admitted(&state, &headers)?;
    let entries = long_poll(query.wait_ms, || {
        exchange::feed_after(&state.store, query.after, MAX_ENTRIES * 10).map_err(ApiError::internal)
    })
    .await?;
    let snapshot = ractor::call!(state.nonces, NonceMsg::Observe).map_err(ApiError::internal)?;
    postcard_answer(&FeedPage { head: snapshot.feed_seq, entries })
}

/// A region's report: its receipt keys are certified, its claims join
/// home's nonce store (and so the feed), then its usage events and lease
/// returns are billed, in order.
async fn report(State(state): State<AppState>, req: axum::extract::Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    admitted(&state, &parts.headers)?;
    let report: Report = read_postcard(&state, &parts.headers, body).await?;
    let publisher = &state.home.as_ref().ok_or_else(|| ApiError::new(Code::NotFound))?.publisher;
    let mut roots = state.store.batch();
    for entry in &report.entries {
        match entry {
            Outgoing::ReceiptRoot(root) => {
                // Kept under the reporting region's name, whatever the root says.
                let root = ReceiptRoot { region: report.region.clone(), ..root.clone() };
                crate::actors::receipt_folder::keep_at_home(&mut roots, &root, state.clock.now());
            }
            Outgoing::Introduced { key_id } => {
                if let Some(key) = state.registry.retrieval_key(key_id).map_err(ApiError::internal)? {
                    crate::http::retrieval::mark_introduced(publisher, key, state.clock.now()).await?;
                }
            }
            Outgoing::ReceiptKey { jwk } => {
                let key = serde_json::from_str(jwk)
                    .ok()
                    .and_then(|jwk| VerifyingKey::from_jwk(&jwk).ok())
                    .filter(|key| key.alg() == Alg::Ed25519)
                    .ok_or_else(|| ApiError::detail(Code::RequestInvalid, "a receipt key must be an Ed25519 JWK"))?;
                let (region, now) = (report.region.clone(), state.clock.now());
                ractor::call!(publisher, |reply| PublisherMsg::CertifyReceiptKey { region, key, now, reply })
                    .map_err(ApiError::internal)?
                    .map_err(ApiError::internal)?;
            }
            // The nonce store and billing take these below.
            Outgoing::Claim(_) | Outgoing::Usage { .. } | Outgoing::Return { .. } => {}
        }
    }
    roots.commit().map_err(ApiError::internal)?;
    let claims =
        report.entries.iter().filter_map(|e| if let Outgoing::Claim(c) = e { Some(c.clone()) } else { None }).collect();
    ractor::call!(state.nonces, |reply| NonceMsg::Learn { claims, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let taken = ractor::call!(state.billing, |reply| BillingMsg::Take { report, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let reported = [("billed", taken.billed), ("already_billed", taken.already_billed)];
    for (outcome, n) in reported {
        state.metrics.count("svc_billing_reported_total", &[("outcome", outcome.to_owned())], n);
    }
    postcard_answer(&taken)
}

/// Sets allowance units aside for a region.
async fn lease(State(state): State<AppState>, req: axum::extract::Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    admitted(&state, &parts.headers)?;
    let ask: LeaseAsk = read_postcard(&state, &parts.headers, body).await?;
    let now = state.clock.now();
    let grant = ractor::call!(state.billing, |reply| BillingMsg::Grant { ask, now, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    postcard_answer(&grant)
}

#[derive(Deserialize)]
struct LogQuery {
    /// The last sequence number the region applied (or learned).
    after: u64,
    /// How long to wait for an entry when there is none yet.
    #[serde(default)]
    wait_ms: u64,
}

/// Frames of the entries after `after`, oldest first; an empty body once
/// `wait_ms` passed with nothing new. `x-svc-log-head` is home's newest
/// sequence number, from which the region knows its lag.
async fn log(State(state): State<AppState>, headers: HeaderMap, query: Query<LogQuery>) -> ApiResult<Response> {
    admitted(&state, &headers)?;
    let entries =
        long_poll(query.wait_ms, || entries_after(&state.store, query.after, MAX_ENTRIES).map_err(ApiError::internal))
            .await?;
    let head = crate::replication::last_seq(&state.store).map_err(ApiError::internal)?;
    let body = encode_frames(&entries, MAX_BYTES);
    let mut response =
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/vnd.svc.log-frames"))], body).into_response();
    response.headers_mut().insert(LOG_HEAD_HEADER, HeaderValue::from(head));
    Ok(response)
}
