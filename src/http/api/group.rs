//! Home's group's messages between its members (`svc_node::group`), on
//! each member's internal listener: read within their limit, checked, and
//! answered by the member's Raft node. Bodies are postcard.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use svc_clock::SharedClock;
use svc_consensus::member::Member;
use svc_core::link;
use svc_node::group::{self, MAX_MESSAGE_BYTES, Signed};
use svc_node::service::Result;

use super::body::read_limited;

/// What a member's listener answers the others with.
#[derive(Clone)]
pub struct GroupState {
    pub member: Arc<Member>,
    /// The group's token, which every member's messages are signed under.
    pub token: String,
    /// The members' numbers.
    pub members: Vec<u64>,
    pub clock: SharedClock,
}

pub fn router(state: GroupState) -> Router {
    Router::new().route("/internal/v1/group/{rpc}", post(message)).with_state(state)
}

async fn message(State(state): State<GroupState>, Path(rpc): Path<String>, req: Request) -> Result<Response> {
    let (parts, body) = req.into_parts();
    let now = state.clock.now();
    let body = read_limited(&parts.headers, body, MAX_MESSAGE_BYTES, now).await?;
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let signed = Signed {
        signer: header(link::REGION_HEADER),
        at_ms: header(link::AT_HEADER).parse().unwrap_or(i64::MIN),
        id: header(link::ID_HEADER),
        body_sha256: header(link::BODY_HEADER),
        mac: header(link::MAC_HEADER),
    };
    let answer = group::answer(&state.member, &state.token, &state.members, now.0, &rpc, &signed, &body).await?;
    Ok(([(header::CONTENT_TYPE, "application/vnd.svc.postcard")], answer).into_response())
}
