//! `GET /v1/verify/{record_id}?origin=sha256:…` (publishing 4.2): the page a
//! source line points to, as JSON or HTML (`service::public::verify_page`).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use svc_core::problem::Code;

use super::cacheable::{html_answer, query, wants_html};
use super::own_copy::FromOwnCopy;
use super::pages;
use svc_node::service::Error;
use svc_node::service::public::verify_page::{self, PageQuery};

pub fn routes<S: FromOwnCopy>() -> Router<S> {
    Router::new().route("/v1/verify/{record_id}", get(verify_page::<S>))
}

async fn verify_page<S: FromOwnCopy>(
    State(state): State<S>,
    Path(record_id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let (uri, headers) = (&parts.uri, &parts.headers);
    let client = crate::forwarded::client_ip(&parts.extensions, headers, &state.config().trusted_proxies);
    let asked = query::<PageQuery>(uri);
    let html = asked.as_ref().ok().and_then(|q| wants_html(q.format.as_deref(), headers).ok());
    let found = asked.and_then(|q| verify_page::page_for(&state, client, &record_id, q));
    let headers = &parts.headers;
    match found {
        Ok(Some(document)) if html == Some(true) => html_answer(StatusCode::OK, pages::verify(&document), headers, 0),
        Ok(Some(document)) => axum::Json(document).into_response(),
        // The same answer for an id never seen and a hash that is not its.
        Ok(None) if html == Some(true) => html_answer(StatusCode::NOT_FOUND, pages::not_found(), headers, 0),
        Ok(None) => Error::new(Code::NotFound).into_response(),
        Err(e) => e.into_response(),
    }
}
