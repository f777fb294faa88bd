//! Routes between the regions of one deployment, on home's internal
//! listener, each region's requests and home's answers under a MAC keyed
//! by that region's token (`svc_core::link`, `service::internal`).
//! Bodies are postcard.

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use svc_core::link;

use super::body::read_limited;
use crate::tls::PeerRegions;
use svc_node::region::Region;
use svc_node::service::Result;
use svc_node::service::internal::{self, Admitted, LOG_HEAD_HEADER, LinkRequest, MAX_REQUEST_BYTES};

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/internal/v1/log", get(log))
        .route("/internal/v1/nonces", get(nonces))
        .route("/internal/v1/ad-feed", get(ad_feed))
        .route("/internal/v1/report", post(report))
        .route("/internal/v1/claims", post(claims))
        .route("/internal/v1/lease", post(lease))
        .route("/internal/v1/ad-lease", post(ad_lease))
        .route("/internal/v1/ad-settle", post(ad_settle))
        .route("/internal/v1/receipts", post(receipts))
}

const POSTCARD: &str = "application/vnd.svc.postcard";

/// The link request a head carries (`svc_core::link`'s headers).
fn link_request(parts: &Parts) -> LinkRequest<'_> {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    LinkRequest {
        region: header(link::REGION_HEADER),
        at: header(link::AT_HEADER),
        id: header(link::ID_HEADER),
        body_sha256: header(link::BODY_HEADER),
        mac: header(link::MAC_HEADER),
        method: parts.method.as_str(),
        target: parts.uri.path_and_query().map_or("/", |p| p.as_str()),
        certified: parts.extensions.get::<PeerRegions>().map(|regions| &*regions.0),
    }
}

/// A `200` answer with its MAC, so the region uses only what home said.
fn sealed(admitted: &Admitted, content_type: &'static str, head: Option<String>, bytes: Vec<u8>) -> Response {
    let mac = admitted.seal(200, head.as_deref(), &bytes);
    let mut response = ([(header::CONTENT_TYPE, HeaderValue::from_static(content_type))], bytes).into_response();
    if let Some(head) = head.and_then(|h| HeaderValue::try_from(h).ok()) {
        response.headers_mut().insert(LOG_HEAD_HEADER, head);
    }
    if let Ok(mac) = HeaderValue::from_str(&mac) {
        response.headers_mut().insert(link::MAC_HEADER, mac);
    }
    response
}

#[derive(Deserialize)]
struct LogQuery {
    /// The last sequence number the region applied (or learned).
    after: u64,
    /// How long to wait for an entry when there is none yet.
    #[serde(default)]
    wait_ms: u64,
    /// The last sequence number the region's index applied (log pulls).
    #[serde(default)]
    indexed: Option<u64>,
}

async fn log(State(state): State<Region>, req: Request) -> Result<Response> {
    let (parts, _) = req.into_parts();
    let admitted = admitted_poll(&state, &parts)?;
    let query = query(&parts)?;
    if let Some(indexed) = query.indexed {
        state.region_positions.saw(&admitted.region, indexed);
    }
    let page = internal::log_page(&state, query.after, query.wait_ms).await?;
    Ok(sealed(&admitted, "application/vnd.svc.log-frames", Some(page.head), page.frames))
}

async fn nonces(State(state): State<Region>, req: Request) -> Result<Response> {
    let (parts, _) = req.into_parts();
    let admitted = admitted_poll(&state, &parts)?;
    let query = query(&parts)?;
    Ok(sealed(&admitted, POSTCARD, None, internal::nonce_feed(&state, query.after, query.wait_ms).await?))
}

async fn ad_feed(State(state): State<Region>, req: Request) -> Result<Response> {
    let (parts, _) = req.into_parts();
    let admitted = admitted_poll(&state, &parts)?;
    let query = query(&parts)?;
    let page = internal::ad_feed(&state, &admitted.region, query.after, query.wait_ms).await?;
    Ok(sealed(&admitted, POSTCARD, None, page))
}

fn query(parts: &Parts) -> Result<LogQuery> {
    Query::<LogQuery>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .map_err(|e| svc_node::service::Error::detail(svc_core::problem::Code::RequestInvalid, e.body_text()))
}

/// A postcard body from a region: its head judged whole (MAC, id, the
/// declared digest), then read within the limit and checked against it.
async fn admitted_body(state: &Region, req: Request) -> Result<(Admitted, bytes::Bytes)> {
    let (parts, body) = req.into_parts();
    let admitted = internal::admit(state, &link_request(&parts))?;
    let body = read_limited(&parts.headers, body, MAX_REQUEST_BYTES, state.clock.now()).await?;
    admitted.check_body(&body)?;
    Ok((admitted, body))
}

/// A poll's head judged whole; it has no body.
fn admitted_poll(state: &Region, parts: &Parts) -> Result<Admitted> {
    let admitted = internal::admit(state, &link_request(parts))?;
    admitted.check_body(&[])?;
    Ok(admitted)
}

async fn report(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::take_report(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}

async fn claims(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::take_claims(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}

async fn receipts(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::take_receipts(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}

async fn ad_lease(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::grant_ad_lease(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}

async fn ad_settle(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::settle_ad_lease(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}

async fn lease(State(state): State<Region>, req: Request) -> Result<Response> {
    let (admitted, body) = admitted_body(&state, req).await?;
    let answer = internal::grant_lease(&state, &admitted.region, &body).await?;
    Ok(sealed(&admitted, POSTCARD, None, answer))
}
