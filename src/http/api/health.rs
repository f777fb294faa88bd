//! `/healthz` (the process answers) and `/readyz` (the region serves fresh
//! data); `/metrics` (on the admin listener) with the same figures for
//! Prometheus, behind the operator's token. What each says is `service::ops`.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use svc_node::region::Region;
use svc_node::service::ops;

pub fn routes() -> Router<Region> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz))
}

async fn healthz(State(state): State<Region>) -> Response {
    Json(ops::health(&state)).into_response()
}

async fn readyz(State(state): State<Region>) -> Response {
    let (ready, body) = ops::readiness(&state).await;
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body)).into_response()
}

pub fn metrics_route() -> Router<Region> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(_: super::admin::Operator, State(state): State<Region>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], ops::metrics_text(&state).await).into_response()
}
