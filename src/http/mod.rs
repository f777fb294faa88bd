//! HTTP: one router per surface, one module per resource, one error type.

pub mod admin;
pub mod auth;
pub mod body;
pub mod business;
pub mod cacheable;
pub mod certificates;
pub mod forward;
pub mod health;
pub mod internal;
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
/// health, and at home the internal log route. A read region serves
/// retrieval and public routes itself and forwards everything else to home.
pub fn public_router(state: Region) -> Router {
    let served =
        retrieval::routes(state.home.is_some()).merge(public::routes(state.home.is_some())).merge(health::routes());
    let routed = if state.home.is_some() {
        served.merge(business::routes()).merge(internal::routes())
    } else {
        served.fallback(forward::to_home)
    };
    let recorded = axum::middleware::from_fn_with_state(state.metrics.clone(), crate::metrics::record);
    routed.layer(recorded).with_state(state)
}

/// The operator's admin API, and `/metrics` for Prometheus.
pub fn admin_router(state: Region) -> Router {
    admin::routes().merge(health::metrics_route()).with_state(state)
}

/// The client address of a request, as the server saw it.
pub fn remote_ip(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}
