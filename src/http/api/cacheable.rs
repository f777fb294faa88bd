//! How public answers go out: cacheable by a CDN (ETag, `304`,
//! `Cache-Control`), as JSON or as a self-contained HTML page, with their
//! query strings read strictly.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use svc_core::problem::Code;

use svc_node::service::public::PublicDocument;
use svc_node::service::{Error, Result};

/// A public route's query, refused as an RFC 9457 problem when it does not parse.
pub fn query<T: serde::de::DeserializeOwned>(uri: &axum::http::Uri) -> Result<T> {
    axum::extract::Query::try_from_uri(uri).map(|q| q.0).map_err(|e| Error::detail(Code::RequestInvalid, e.body_text()))
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

/// Whether the caller asked for the HTML page: `?format=html`, or a
/// browser's `Accept` that puts HTML before JSON.
pub fn wants_html(format: Option<&str>, headers: &HeaderMap) -> Result<bool> {
    match format {
        Some("html") => Ok(true),
        Some("json") => Ok(false),
        Some(other) => Err(Error::detail(Code::RequestInvalid, format!("format is html or json, not {other}"))),
        None => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
            let html = accept.find("text/html");
            let json = accept.find("application/json");
            Ok(html.is_some_and(|h| json.is_none_or(|j| h < j)))
        }
    }
}

/// An HTML page: self-contained, and forbidden by its own policy to load or
/// run anything.
pub fn html_answer(status: StatusCode, page: String, headers: &HeaderMap, max_age: u32) -> Response {
    let mut response = if status == StatusCode::OK {
        cached(&PublicDocument::new(Bytes::from(page)), headers, max_age, "text/html; charset=utf-8")
    } else {
        let mut r = (status, page).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        r
    };
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; img-src data:"),
    );
    response
}
