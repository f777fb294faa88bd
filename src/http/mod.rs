//! HTTP: one router per surface, one module per resource, one error type.

pub mod admin;
pub mod admission;
pub mod auth;
pub mod body;
pub mod business;
pub mod cacheable;
pub mod certificates;
pub mod forward;
pub mod health;
pub mod internal;
pub mod listener;
pub mod log;
pub mod pages;
pub mod problem;
pub mod public;
pub mod raw_json;
pub mod retrieval;
pub mod verify;
pub mod verify_page;

use std::net::SocketAddr;

use axum::Router;

use crate::region::Region;

/// The public API: business, retrieval and public verification routes,
/// and health. A read region serves retrieval and public routes itself and
/// forwards everything else to home. The routes between regions are never
/// here: they are on home's internal listener ([`internal_router`]).
pub fn public_router(state: Region) -> Router {
    let served = retrieval::routes(state.home.is_some())
        .merge(public::routes(state.home.is_some()))
        .merge(crate::mcp::public::routes(&state))
        .merge(health::routes());
    let routed =
        if state.home.is_some() { served.merge(business::routes()) } else { served.fallback(forward::to_home) };
    let recorded = axum::middleware::from_fn_with_state(state.metrics.clone(), crate::metrics::record);
    routed.layer(recorded).with_state(state)
}

/// Home's routes for its read regions, each behind its own token.
pub fn internal_router(state: Region) -> Router {
    let recorded = axum::middleware::from_fn_with_state(state.metrics.clone(), crate::metrics::record);
    internal::routes().layer(recorded).with_state(state)
}

/// The operator's admin API, and `/metrics` for Prometheus.
pub fn admin_router(state: Region) -> Router {
    admin::routes().merge(health::metrics_route()).with_state(state)
}

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
