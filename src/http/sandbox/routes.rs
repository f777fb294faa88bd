//! The sandbox's own admin route, `POST /admin/sandbox/republish`: the
//! nightly republish on demand. The node adds it to its admin router; the
//! sandbox is a client of the HTTP layer, which never calls it back.

use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router, extract::State};
use svc_core::problem::Code;

use crate::api::admin::Operator;
use svc_node::region::Region;
use svc_node::service::Error;

pub fn admin_routes(state: Region) -> Router {
    Router::new().route("/admin/sandbox/republish", post(republish)).with_state(state)
}

/// Republishes the sandbox corpus: new versions with the same ids and
/// bytes, through the business API as a business would. Answers once every
/// push has settled, or `202` while it still runs after 20 s.
async fn republish(State(state): State<Region>, _: Operator) -> Response {
    if !state.config.environment.is_sandbox() {
        return Error::detail(Code::RequestInvalid, "only a sandbox node holds the sandbox corpus").into_response();
    }
    match super::seed::republish_waiting(&state, std::time::Duration::from_secs(20)).await {
        Ok(Some(body)) => Json(body).into_response(),
        Ok(None) => {
            let running = serde_json::json!({"republishing": true,
                "detail": "still running; each batch's new versions appear as it settles"});
            (axum::http::StatusCode::ACCEPTED, Json(running)).into_response()
        }
        Err(e) => Error::detail(Code::RequestInvalid, e.to_string()).into_response(),
    }
}
