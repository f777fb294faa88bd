//! Unauthenticated public routes (publishing 4.2): never rate-limited, CORS
//! `*` without credentials (preflight included), and cacheable by a CDN:
//! the key set here, the transparency log in `log`.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use svc_core::digest::sha256_hex;

use super::AppState;
use super::problem::ApiError;
use svc_core::problem::Code;

/// A public route's query, refused as an RFC 9457 problem when it does not parse.
pub fn query<T: serde::de::DeserializeOwned>(uri: &axum::http::Uri) -> Result<T, ApiError> {
    axum::extract::Query::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| ApiError::detail(Code::RequestInvalid, e.body_text()))
}

/// A public document, prepared once: its bytes and their ETag.
#[derive(Clone)]
pub struct PublicDocument {
    pub bytes: Bytes,
    pub etag: String,
}

impl PublicDocument {
    pub fn new(bytes: Bytes) -> PublicDocument {
        let etag = format!("\"{}\"", &sha256_hex(&bytes)[..32]);
        PublicDocument { bytes, etag }
    }
}

/// The public routes. Answers the statement key signs on demand (business
/// keys, verify statements, verify pages) come from home, which holds that
/// key; a read region forwards them (its fallback), and serves the rest
/// from its replicated copy.
pub fn routes(home: bool) -> Router<AppState> {
    let mut routes = Router::new()
        .route("/.well-known/keys", get(keys))
        .merge(super::log::routes())
        .merge(super::certificates::routes());
    if home {
        routes = routes
            .merge(super::certificates::statement_routes())
            .merge(super::verify::routes())
            .merge(super::verify_page::routes());
    }
    routes.layer(axum::middleware::from_fn(any_origin))
}

/// Every public answer, a problem included, may be read by any origin; a
/// preflight is answered here for every public route.
async fn any_origin(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.method() == Method::OPTIONS {
        return preflight().await;
    }
    let mut response = next.run(request).await;
    cors(response.headers_mut());
    response
}

fn cors(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
}

/// Answers a preflight for the public routes: GET, HEAD and POST (verify)
/// from anywhere, no credentials.
async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    cors(headers);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, POST, OPTIONS"));
    headers
        .insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("accept, content-type, if-none-match"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    response
}

/// A cacheable answer: `304` when the caller already holds it.
pub fn cached(
    document: &PublicDocument,
    request_headers: &HeaderMap,
    max_age: u32,
    content_type: &'static str,
) -> Response {
    let fresh = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == document.etag || t.trim() == "*"));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(document.bytes.clone()));
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    };
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&document.etag) {
        headers.insert(header::ETAG, etag);
    }
    if let Ok(control) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
        headers.insert(header::CACHE_CONTROL, control);
    }
    headers.insert(header::VARY, HeaderValue::from_static("accept, accept-encoding"));
    response
}

/// A JSON document answered as [`cached`].
pub fn json_document(value: &serde_json::Value, request_headers: &HeaderMap, max_age: u32) -> Response {
    cached(&PublicDocument::new(Bytes::from(value.to_string())), request_headers, max_age, "application/json")
}

/// `GET /.well-known/keys`: the dual-signed `jwks.v1` key set.
async fn keys(State(state): State<AppState>, method: Method, headers: HeaderMap) -> Response {
    let Some(document) = state.key_set.document(state.clock.now()) else {
        // A read region that has not yet replicated home's key set.
        let detail = "this region has not received the key set from home yet";
        return ApiError::retry_after(Code::Unavailable, 5_000, detail).into_response();
    };
    let mut response = cached(&document, &headers, 300, "application/json");
    if method == Method::HEAD {
        *response.body_mut() = Body::empty();
    }
    response
}
