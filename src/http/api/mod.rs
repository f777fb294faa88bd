//! HTTP: one router per surface, one module per resource, one error type.

pub mod admin;
pub mod admission;
pub mod ads;
pub mod auth;
pub mod body;
pub mod business;
pub mod cacheable;
pub mod certificates;
pub mod forward;
pub mod group;
pub mod health;
pub mod internal;
pub mod listener;
pub mod log;
pub mod openapi;
pub mod own_copy;
pub mod pages;
pub mod public;
pub mod raw_json;
pub mod retrieval;
pub mod verify;
pub mod verify_page;

use axum::Router;

use svc_node::region::Region;

/// The public API: business, retrieval and public verification routes,
/// and health, with the surfaces built on this layer (`served`: served by
/// every region; `at_home`: by home only). A read region serves retrieval
/// and public routes itself and forwards everything else to home. The
/// routes between regions are never here: they are on home's internal
/// listener ([`internal_router`]). `crate::surfaces` composes it.
pub fn public_router_with(state: Region, served: Router<Region>, at_home: Router<Region>) -> Router {
    let served = retrieval::routes(state.home.is_some())
        .merge(public::routes(state.home.is_some()))
        .merge(served)
        .merge(health::routes());
    let routed = if state.home.is_some() {
        served.merge(business::routes()).merge(at_home).fallback(no_route)
    } else {
        served.fallback(forward::to_home)
    };
    // A method a route does not take is a problem too, not a bare 405.
    let routed = routed.method_not_allowed_fallback(method_not_allowed);
    let recorded = axum::middleware::from_fn_with_state(state.metrics.clone(), svc_node::metrics::record);
    let tracer = svc_node::trace::Tracer {
        region: state.config.region.clone(),
        clock: state.clock.clone(),
        recent: state.traces.clone(),
    };
    let traced = axum::middleware::from_fn_with_state(tracer, svc_node::trace::layer);
    routed.layer(recorded).layer(traced).with_state(state)
}

async fn no_route(uri: axum::http::Uri) -> svc_node::service::Error {
    svc_node::service::Error::detail(svc_core::problem::Code::NotFound, format!("no route is {}", uri.path()))
}

/// A method the matched route does not take: a CORS preflight of a route
/// anyone may call is answered as the public routes answer one; anything
/// else is a `405` problem.
async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
    matched: Option<axum::extract::MatchedPath>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let public = matched.is_some_and(|m| {
        let route = m.as_str().replace("{*", "{");
        openapi::OPERATIONS.iter().any(|o| o.path == route && o.caller == openapi::Caller::Anyone)
    });
    if method == axum::http::Method::OPTIONS && public {
        return public::preflight().await;
    }
    let detail = format!("{} does not take {method}", uri.path());
    svc_node::service::Error::detail(svc_core::problem::Code::MethodNotAllowed, detail).into_response()
}

/// Home's routes for its read regions, each behind its own token.
pub fn internal_router(state: Region) -> Router {
    let recorded = axum::middleware::from_fn_with_state(state.metrics.clone(), svc_node::metrics::record);
    internal::routes().layer(recorded).with_state(state)
}

/// The operator's admin API, and `/metrics` for Prometheus.
pub fn admin_router(state: Region) -> Router {
    admin::routes().merge(health::metrics_route()).with_state(state)
}
