//! One error type for every route: an RFC 9457 problem with the spec's code.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use svc_core::problem::{Code, Problem};

/// A refusal or failure, answered as `application/problem+json`.
#[derive(Debug, Clone)]
pub struct ApiError(pub Box<Problem>);

impl ApiError {
    pub fn new(code: Code) -> Self {
        ApiError(Box::new(Problem::new(code)))
    }

    pub fn detail(code: Code, detail: impl Into<String>) -> Self {
        ApiError(Box::new(Problem::new(code).detail(detail)))
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "internal error");
        ApiError(Box::new(Problem::new(Code::Internal)))
    }

    pub fn retry_after(code: Code, ms: u64, detail: impl Into<String>) -> Self {
        ApiError(Box::new(Problem::new(code).detail(detail).retry_after_ms(ms)))
    }

    pub fn code(&self) -> Code {
        self.0.code
    }
}

impl From<Problem> for ApiError {
    fn from(p: Problem) -> Self {
        ApiError(Box::new(p))
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        problem_response(&self.0)
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

pub type ApiResult<T> = Result<T, ApiError>;
