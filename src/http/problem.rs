//! The HTTP face of `service::Error`: every error becomes an RFC 9457
//! `application/problem+json` answer, with `Retry-After` when it asks for a wait.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use svc_core::problem::Problem;

use crate::service::Error;

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        problem_response(&self.into_problem())
    }
}

pub fn problem_response(problem: &Problem) -> Response {
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, problem.to_json()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    if let Some(seconds) = problem.retry_after_seconds {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
