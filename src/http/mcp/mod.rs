//! The MCP surfaces (retrieval 4.4), both on the official Rust SDK (`rmcp`):
//! `public`, the hosted public server every region serves, and `own`, the
//! billable server an AI company runs itself (`svc mcp`). A tool answers
//! what the matching HTTP route answers: its body byte for byte as the first
//! text block, and a refusal as its RFC 9457 problem inside a tool error.

pub mod public;
pub mod sessions;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use http_body_util::BodyExt;
use rmcp::model::{CallToolResult, ContentBlock};

use svc_node::service::Error;

/// The most of an answer a tool passes on: far above any route's answer.
pub const MAX_ANSWER: usize = 8 * 1024 * 1024;

/// A use case's answer as a tool result.
pub fn answer(result: svc_node::service::Result<String>) -> CallToolResult {
    match result {
        Ok(body) => CallToolResult::success(vec![ContentBlock::text(body)]),
        Err(e) => problem_answer(e),
    }
}

/// A refusal: its problem document, as the HTTP route would answer it.
pub fn problem_answer(error: Error) -> CallToolResult {
    let problem = error.into_problem();
    CallToolResult::error(vec![ContentBlock::text(String::from_utf8_lossy(&problem.to_json()).into_owned())])
}

/// An HTTP answer as a tool result: 2xx is success, anything else an error,
/// the body passed on byte for byte either way.
pub async fn body_answer(response: Response<Body>) -> CallToolResult {
    let ok = response.status().is_success();
    match http_body_util::Limited::new(response.into_body(), MAX_ANSWER).collect().await {
        Ok(body) => {
            let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
            if ok {
                CallToolResult::success(vec![ContentBlock::text(text)])
            } else {
                CallToolResult::error(vec![ContentBlock::text(text)])
            }
        }
        Err(e) => problem_answer(Error::internal(format!("the answer could not be read: {e}"))),
    }
}

/// A problem answer with a status the spec fixes outside any `code` (405).
pub fn status_problem(status: StatusCode, detail: &str) -> Response {
    let body = serde_json::json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("error"),
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/problem+json"));
    response
}
