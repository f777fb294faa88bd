//! The public documents about a business and the service's formats
//! (publishing 2.6, 4.2): certificates (JSON, or a self-contained HTML page),
//! business keys, key custody, projection specifications and the AI policy key.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use svc_core::problem::Code;

use super::cacheable::{cached, html_answer, json_document, query, wants_html};
use super::own_copy::FromOwnCopy;
use super::pages;
use svc_node::service::Error;
use svc_node::service::public::certificates::{self, DOCUMENT_MAX_AGE, FORMAT_MAX_AGE};

/// What every region serves from its replicated copy, and a standby
/// member of home's group from its own.
pub fn routes<S: FromOwnCopy>() -> Router<S> {
    Router::new()
        .route("/v1/certificates/{uuid}", get(certificate::<S>))
        .route("/v1/certificates/{uuid}/key-custody", get(key_custody::<S>))
        .route("/v1/projections/{kind}/{version}", get(projection))
        .route("/v1/ai-policy-key", get(ai_policy_key))
        .route(svc_core::index::INDEX_PATH, get(verification_index))
        .route(svc_node::key_set::directory::PATH, get(key_directory::<S>))
        .route(svc_core::index::VOCABULARIES_PATH, get(vocabulary_list))
        .route("/v1/vocabularies/{name}", get(vocabulary))
}

/// What only home answers, because the statement key signs it fresh: a read
/// region forwards these.
pub fn statement_routes<S: FromOwnCopy>() -> Router<S> {
    Router::new().route("/v1/certificates/{uuid}/keys", get(business_keys::<S>))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormatQuery {
    format: Option<String>,
}

fn not_found(html: bool, headers: &HeaderMap) -> Response {
    if html {
        return html_answer(StatusCode::NOT_FOUND, pages::not_found(), headers, 0);
    }
    Error::new(Code::NotFound).into_response()
}

/// `GET /v1/certificates/{uuid}`: JSON, or the HTML page by `Accept` or
/// `?format=html`.
async fn certificate<S: FromOwnCopy>(
    State(state): State<S>,
    Path(uuid): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let html = match query::<FormatQuery>(&uri).and_then(|q| wants_html(q.format.as_deref(), &headers)) {
        Ok(html) => html,
        Err(e) => return e.into_response(),
    };
    let (subject, document) = match certificates::certificate_document(&state, &uuid, state.clock().now()) {
        Ok(Some(found)) => found,
        Ok(None) => return not_found(html, &headers),
        Err(e) => return e.into_response(),
    };
    if html {
        return html_answer(StatusCode::OK, pages::certificate(&subject, &document), &headers, DOCUMENT_MAX_AGE);
    }
    json_document(&document, &headers, DOCUMENT_MAX_AGE)
}

/// `GET /v1/certificates/{uuid}/keys`.
async fn business_keys<S: FromOwnCopy>(
    State(state): State<S>,
    Path(uuid): Path<String>,
    headers: HeaderMap,
) -> Response {
    match certificates::business_keys(&state, &uuid) {
        Ok(document) => json_document(&document, &headers, DOCUMENT_MAX_AGE),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/certificates/{uuid}/key-custody`.
async fn key_custody<S: FromOwnCopy>(State(state): State<S>, Path(uuid): Path<String>, headers: HeaderMap) -> Response {
    match certificates::key_custody(&state, &uuid) {
        Ok(document) => json_document(&document, &headers, DOCUMENT_MAX_AGE),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/projections/{type}/{version}`: the pinned specification.
async fn projection(Path((kind, version)): Path<(String, String)>, headers: HeaderMap) -> Response {
    match certificates::projection(&kind, &version) {
        Ok(spec) => json_document(spec, &headers, FORMAT_MAX_AGE),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/ai-policy-key`: what each AI policy bit means.
async fn ai_policy_key(headers: HeaderMap) -> Response {
    json_document(&certificates::ai_policy_key(), &headers, FORMAT_MAX_AGE)
}

/// `GET /v1/key-directory`: the signed directory of AI companies' keys.
async fn key_directory<S: FromOwnCopy>(State(state): State<S>, headers: HeaderMap) -> Response {
    match svc_node::service::public::key_directory(&state) {
        Ok(document) => cached(&document, &headers, DOCUMENT_MAX_AGE, "application/json"),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/verification-index`: every payload type, specification and
/// vocabulary with its version, URL and hash.
async fn verification_index(headers: HeaderMap) -> Response {
    json_document(&svc_node::service::public::verification_index(), &headers, FORMAT_MAX_AGE)
}

/// `GET /v1/vocabularies`.
async fn vocabulary_list(headers: HeaderMap) -> Response {
    vocabulary_answer(None, &headers)
}

/// `GET /v1/vocabularies/{name}`.
async fn vocabulary(Path(name): Path<String>, headers: HeaderMap) -> Response {
    vocabulary_answer(Some(&name), &headers)
}

fn vocabulary_answer(name: Option<&str>, headers: &HeaderMap) -> Response {
    match svc_node::service::public::vocabularies(name) {
        Ok(document) => json_document(&document, headers, FORMAT_MAX_AGE),
        Err(e) => e.into_response(),
    }
}
