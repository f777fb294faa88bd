//! The retrieval API's routes (retrieval sections 2, 4, 5, 7 and 8): each
//! authenticates with the [`Retrieval`] extractor, calls one use case of
//! `service::retrieval`, and maps its answer.

use axum::Json;
use axum::Router;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};

use super::body::{DEFAULT_LIMIT, read_limited};
use super::raw_json::json_response;
use svc_clock::monotonic;
use svc_node::region::Region;
use svc_node::service::error::problem_response;
use svc_node::service::retrieval::{self, Caller, ReceiptsQuery, UsageQuery};
use svc_node::service::{Error, Result};

/// The retrieval routes. Usage is counted, and every region's receipts
/// kept, at home, so a read region leaves `/v1/usage` and `/v1/receipts`
/// to its forwarder.
pub fn routes(home: bool) -> Router<Region> {
    let routes = Router::new()
        .route("/v1/search", post(|s, c| search(s, None, c)))
        .route("/v1/products/search", post(|s, c| search(s, Some(RecordType::Products), c)))
        .route("/v1/business-files/search", post(|s, c| search(s, Some(RecordType::BusinessFiles), c)))
        .route("/v1/events/search", post(|s, c| search(s, Some(RecordType::Events), c)))
        .route("/v1/jobs/search", post(|s, c| search(s, Some(RecordType::Jobs), c)))
        .route("/v1/updates/search", post(|s, c| search(s, Some(RecordType::Updates), c)))
        .route("/v1/records/{record_id}", get(fetch))
        .route("/v1/terms", get(terms_in_force))
        .route("/v1/terms/{version}", get(terms_version))
        .merge(super::ads::routes());
    if home { routes.route("/v1/usage", get(usage)).route("/v1/receipts", get(receipts)) } else { routes }
}

/// A retrieval request that passed the gate: the seven signing steps (or the
/// sandbox's bearer token), then the key's request rate.
pub struct Retrieval(pub Caller);

impl FromRequest<Region> for Retrieval {
    type Rejection = Error;

    async fn from_request(req: Request, state: &Region) -> Result<Self> {
        let arrived = monotonic();
        let now = state.clock.now();
        let (parts, body) = req.into_parts();
        let body = read_limited(&parts.headers, body, DEFAULT_LIMIT, now).await?;
        Ok(Retrieval(super::auth::retrieval_caller(state, &parts, body, now, arrived).await?))
    }
}

/// A query string read into `T`; an unknown or malformed member is 400.
fn query<T: DeserializeOwned>(uri: &axum::http::Uri) -> Result<T> {
    Query::try_from_uri(uri).map(|q| q.0).map_err(|e| Error::detail(Code::RequestInvalid, e.body_text()))
}

async fn search(State(state): State<Region>, typed: Option<RecordType>, Retrieval(caller): Retrieval) -> Response {
    match retrieval::search(&state, &caller, typed).await {
        Ok(answer) => json_response(answer.body),
        Err(e) => e.into_response(),
    }
}

async fn fetch(
    State(state): State<Region>,
    Path(record_id): Path<String>,
    uri: axum::http::Uri,
    Retrieval(caller): Retrieval,
) -> Response {
    match retrieval::fetch(&state, &caller, &record_id).await {
        Ok(Some(answer)) => {
            let mut response = json_response(answer.body);
            if let Ok(id) = HeaderValue::from_str(&answer.retrieval_id) {
                response.headers_mut().insert("x-request-id", id);
            }
            response
        }
        Ok(None) => {
            tokio::time::sleep_until((caller.arrived + retrieval::NOT_FOUND_FLOOR).into()).await;
            problem_response(&Problem::new(Code::NotFound).instance(uri.path()))
        }
        Err(e) => e.into_response(),
    }
}

async fn receipts(State(state): State<Region>, uri: axum::http::Uri, Retrieval(caller): Retrieval) -> Response {
    query::<ReceiptsQuery>(&uri).and_then(|q| retrieval::receipts(&state, &caller, q)).map(Json).into_response()
}

async fn usage(State(state): State<Region>, uri: axum::http::Uri, Retrieval(caller): Retrieval) -> Response {
    let answer = match query::<UsageQuery>(&uri) {
        Ok(q) => retrieval::usage(&state, &caller, q).await,
        Err(e) => Err(e),
    };
    answer.map(Json).into_response()
}

async fn terms_in_force(State(state): State<Region>, Retrieval(caller): Retrieval) -> Response {
    retrieval::terms_in_force(&state, &caller).map(Json).into_response()
}

async fn terms_version(State(state): State<Region>, Path(version): Path<String>, Retrieval(_): Retrieval) -> Response {
    retrieval::terms_version(&state, &version).map(Json).into_response()
}
