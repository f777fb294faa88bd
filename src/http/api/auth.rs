//! The signed request as the service reads it: RFC 9421's components and
//! the sandbox's stand-ins, taken from an HTTP request's head.

use axum::http::request::Parts;

/// The host a request addressed: `Host`, else the URI's authority.
pub fn authority(parts: &Parts) -> String {
    parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_default()
}

/// The header fields a signature may cover, as text.
pub fn header_fields(parts: &Parts) -> Vec<(&str, &str)> {
    parts.headers.iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))).collect()
}

/// Runs `then` with the request's credentials: what it signed, and its
/// bearer token and sandbox grant if it carries them.
pub async fn with_credentials<T>(
    parts: &Parts,
    body: &[u8],
    then: impl AsyncFnOnce(svc_node::service::auth::Credentials<'_>) -> T,
) -> T {
    let headers = header_fields(parts);
    let authority = authority(parts);
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let credentials = svc_node::service::auth::Credentials {
        request: svc_core::http_sig::Request {
            method: parts.method.as_str(),
            authority: &authority,
            path: parts.uri.path(),
            query: parts.uri.query(),
            headers: &headers,
            body,
        },
        bearer: header(axum::http::header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer ")),
        grant: header(svc_core::sandbox::GRANT_HEADER),
    };
    then(credentials).await
}

/// The token of an `Authorization: Bearer` header.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

/// A request's caller, once its body is read: the seven signing steps (or
/// the sandbox's bearer token), then the key's request rate.
pub async fn retrieval_caller(
    state: &svc_node::region::Region,
    parts: &axum::http::request::Parts,
    body: bytes::Bytes,
    now: svc_core::time::UnixMs,
    arrived: std::time::Instant,
) -> svc_node::service::Result<svc_node::service::retrieval::Caller> {
    with_credentials(parts, &body, async |credentials| {
        svc_node::service::retrieval::authenticate(state, credentials, body.clone(), now, arrived).await
    })
    .await
}
