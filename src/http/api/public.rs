//! Unauthenticated public routes (publishing 4.2): never rate-limited, CORS
//! `*` without credentials (preflight included), and cacheable by a CDN.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::cacheable::cached;
use super::own_copy::FromOwnCopy;
use svc_node::region::Region;

/// The public routes. Answers home's keys sign on demand (business keys,
/// verify statements, verify pages, the bot directory) come from home,
/// which holds those keys; a read region forwards them (its fallback), and
/// serves the rest from its replicated copy.
pub fn routes(home: bool) -> Router<Region> {
    let mut routes = from_own_copy();
    if home {
        routes = routes.merge(signed_by_home());
    }
    routes.layer(axum::middleware::from_fn(any_origin))
}

/// The public routes a node answers from its own copy of the store, with
/// no actor: the transparency log, certificates, the key set, the formats
/// and the API's description.
fn from_own_copy<S: FromOwnCopy>() -> Router<S> {
    Router::new()
        .route("/openapi.json", get(openapi::<S>))
        .route("/.well-known/keys", get(keys::<S>))
        .merge(super::log::routes())
        .merge(super::certificates::routes())
}

/// The public routes home's keys sign on demand, from its own copy too.
fn signed_by_home<S: FromOwnCopy>() -> Router<S> {
    Router::new()
        .merge(super::certificates::statement_routes())
        .merge(super::verify::routes())
        .merge(super::verify_page::routes())
        .route(svc_core::web_bot_auth::DIRECTORY_PATH, get(bot_directory::<S>))
}

/// Every public route home answers, over `copy`, as the public routes
/// answer (any origin, preflights): what a standby member of home's group
/// serves itself rather than sending on to the leader.
pub fn own_copy_router<S: FromOwnCopy>(copy: S) -> Router {
    from_own_copy().merge(signed_by_home()).layer(axum::middleware::from_fn(any_origin)).with_state(copy)
}

/// `GET /openapi.json`: the public API's description, the same at every region.
async fn openapi<S: FromOwnCopy>(State(state): State<S>, headers: HeaderMap) -> Response {
    let document = super::openapi::document(&state.config().public_authority);
    super::cacheable::json_document(&document, &headers, 3600)
}

/// `GET /.well-known/http-message-signatures-directory` (home; a read
/// region forwards it): the key home's outbound fetches are signed with.
async fn bot_directory<S: FromOwnCopy>(State(state): State<S>, request: axum::extract::Request) -> Response {
    let (parts, _) = request.into_parts();
    let authority = super::auth::authority(&parts);
    match svc_node::service::public::bot_directory(&state, &authority) {
        Ok(directory) => {
            let mut response = Response::new(Body::from(directory.body));
            let headers = response.headers_mut();
            headers
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(svc_core::web_bot_auth::DIRECTORY_MEDIA_TYPE));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
            for (name, value) in [("signature-input", directory.signature_input), ("signature", directory.signature)] {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    headers.insert(name, value);
                }
            }
            response
        }
        Err(e) => e.into_response(),
    }
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
pub(super) async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    cors(headers);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, POST, OPTIONS"));
    headers
        .insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("accept, content-type, if-none-match"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    response
}

/// `GET /.well-known/keys`: the dual-signed `jwks.v1` key set.
async fn keys<S: FromOwnCopy>(State(state): State<S>, method: Method, headers: HeaderMap) -> Response {
    let document = match svc_node::service::public::key_set(&state) {
        Ok(document) => document,
        Err(e) => return e.into_response(),
    };
    let mut response = cached(&document, &headers, 300, "application/json");
    if method == Method::HEAD {
        *response.body_mut() = Body::empty();
    }
    response
}
