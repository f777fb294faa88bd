//! `POST /v1/verify` (publishing 4.2): the body read within its limit and
//! judged by `service::public::verify`.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

use super::body::{VERIFY_LIMIT, read_limited};
use super::own_copy::FromOwnCopy;
use svc_node::service::Result;
use svc_node::service::public::verify;

pub fn routes<S: FromOwnCopy>() -> Router<S> {
    Router::new().route("/v1/verify", post(verify_route::<S>))
}

async fn verify_route<S: FromOwnCopy>(State(state): State<S>, request: Request) -> Response {
    judge(&state, request).await.map(Json).into_response()
}

async fn judge<S: FromOwnCopy>(state: &S, request: Request) -> Result<serde_json::Value> {
    let (parts, body) = request.into_parts();
    let client = crate::forwarded::client_ip(&parts.extensions, &parts.headers, &state.config().trusted_proxies);
    let bytes = read_limited(&parts.headers, body, VERIFY_LIMIT, state.clock().now()).await?;
    verify::judge(state, client, &bytes).await
}
