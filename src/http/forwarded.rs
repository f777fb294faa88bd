//! Who sent a request, as every surface (HTTP routes, the MCP server, the
//! front door) reads it: the TCP peer, or behind a trusted proxy the address
//! it forwarded in `X-Forwarded-For`; and the header a proxy adds before it
//! passes a request on.

use std::net::SocketAddr;

/// The header every proxy of a deployment (front door, read region) adds
/// the address it received a request from to.
pub const FORWARDED_FOR: &str = "x-forwarded-for";

/// The client's address: the TCP peer, or behind a trusted proxy the
/// address that proxy forwarded (`svc_core::net::client_address`).
pub fn client_ip(
    extensions: &axum::http::Extensions,
    headers: &axum::http::HeaderMap,
    trusted: &[svc_core::net::Cidr],
) -> Option<std::net::IpAddr> {
    let peer = peer(extensions)?;
    let forwarded: Vec<&str> = headers.get_all(FORWARDED_FOR).iter().filter_map(|v| v.to_str().ok()).collect();
    Some(svc_core::net::client_address(peer, &forwarded, trusted))
}

/// The TCP peer of a request, as the listener saw it.
pub fn peer(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// Adds the address a request came from (`peer`) to its `X-Forwarded-For`,
/// before a proxy sends it on.
pub fn forward_for(headers: &mut axum::http::HeaderMap, peer: Option<std::net::IpAddr>) {
    let Some(peer) = peer else { return };
    let mut hops: Vec<String> =
        headers.get_all(FORWARDED_FOR).iter().filter_map(|v| Some(v.to_str().ok()?.to_owned())).collect();
    hops.push(peer.to_string());
    let joined = hops.join(", ");
    headers.remove(FORWARDED_FOR);
    if let Ok(value) = axum::http::HeaderValue::from_str(&joined) {
        headers.insert(FORWARDED_FOR, value);
    }
}

/// What a proxy (the front door, a standby of home's group) answers when
/// the node it sent a request to failed after the request may have reached
/// it: no whole answer. A `503` would say the request was not served, and
/// a client would sign it again and be billed twice; instead the answer's
/// body fails before its first byte, so HTTP/1.1 cuts the connection and
/// HTTP/2 resets the stream after a `502` head. Either way the caller has
/// no answer to read (svc's clients report a transport error), as with the
/// failed node's own connection, and asks `GET /v1/receipts`, or retries
/// under the same Idempotency-Key, which the service answers once.
pub fn outcome_unknown() -> axum::response::Response {
    let cut = futures::stream::once(async {
        Err::<bytes::Bytes, _>(std::io::Error::other("the node serving this request failed mid-request"))
    });
    let mut cut = axum::response::Response::new(axum::body::Body::from_stream(cut));
    *cut.status_mut() = axum::http::StatusCode::BAD_GATEWAY;
    cut
}

/// The request a proxy sends on for `parts` and `body`: the same method,
/// target and headers but `Connection`, the caller's address added to
/// `X-Forwarded-For`, and the trace carried on as `hop`.
pub fn onward(
    parts: &axum::http::request::Parts,
    body: axum::body::Body,
    hop: &svc_node::trace::Hop,
) -> axum::http::Request<axum::body::Body> {
    let mut onward = axum::http::Request::new(body);
    *onward.method_mut() = parts.method.clone();
    *onward.uri_mut() = parts.uri.clone();
    *onward.headers_mut() = parts.headers.clone();
    let headers = onward.headers_mut();
    headers.remove(axum::http::header::CONNECTION);
    if let Ok(value) = axum::http::HeaderValue::from_str(&hop.header()) {
        headers.insert(svc_core::trace_context::HEADER, value);
    }
    forward_for(headers, peer(&parts.extensions));
    onward
}
