//! The one error type of the use cases. A refusal carries the spec's problem
//! (its `Code`, detail and retry hint); a failure on the service's side says
//! which part failed. Each surface maps it once: HTTP to an RFC 9457 body
//! (below: axum's `IntoResponse` must be implemented beside the type, by
//! Rust's orphan rule), MCP to a tool error by `code()`.

use std::fmt::Display;

use svc_core::problem::{Code, Problem};

use crate::actors::error::ActorError;
use crate::actors::mailbox::MailboxError;
use svc_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A refusal the spec names: the caller's request, not the service, is
    /// at fault, or the service asks it to come back later.
    #[error("{}: {}", .0.code.as_str(), .0.detail.as_deref().unwrap_or(.0.code.title()))]
    Refused(Box<Problem>),
    /// The store failed.
    #[error("storage: {0}")]
    Store(StoreError),
    /// An actor stopped, or failed what it was asked.
    #[error("{actor}: {reason}")]
    Actor { actor: &'static str, reason: String },
    /// Anything else that failed on the service's side.
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code) -> Self {
        Error::Refused(Box::new(Problem::new(code)))
    }

    pub fn detail(code: Code, detail: impl Into<String>) -> Self {
        Error::Refused(Box::new(Problem::new(code).detail(detail)))
    }

    pub fn retry_after(code: Code, ms: u64, detail: impl Into<String>) -> Self {
        Error::Refused(Box::new(Problem::new(code).detail(detail).retry_after_ms(ms)))
    }

    pub fn internal(error: impl Display) -> Self {
        Error::Internal(error.to_string())
    }

    /// A failed call to an actor: `map_err(Error::actor("billing"))`.
    pub fn actor<E: Display>(actor: &'static str) -> impl Fn(E) -> Self {
        move |e| Error::Actor { actor, reason: e.to_string() }
    }

    /// The spec's code for this error: `internal` for every failure on the
    /// service's side.
    pub fn code(&self) -> Code {
        match self {
            Error::Refused(problem) => problem.code,
            _ => Code::Internal,
        }
    }

    /// The problem a caller is shown. A failure on the service's side is
    /// logged here, once, and shown as a bare `internal` problem: its cause
    /// is for the operator, not the caller.
    pub fn into_problem(self) -> Problem {
        match self {
            Error::Refused(problem) => *problem,
            failure => {
                tracing::error!(error = %failure, "internal error");
                Problem::new(Code::Internal)
            }
        }
    }
}

/// A full mailbox, or an actor not running (failed, and not back yet),
/// asks the caller to come back in a second; an actor that took too long
/// is a failure on the service's side.
impl From<MailboxError> for Error {
    fn from(error: MailboxError) -> Self {
        match error {
            MailboxError::Full(_) | MailboxError::Stopped(_) => {
                unavailable_because(1_000, "the service is busy; ask again in a second", error)
            }
            MailboxError::Timeout(actor) => Error::Actor { actor: "mailbox", reason: format!("{actor}: timed out") },
        }
    }
}

/// A change's precondition that did not hold is the caller's answer: a
/// key registered already, or a record changed since it was read (ask
/// again); RocksDB failing (a full disk) is `503`; any other store failure
/// (a value that does not decode) is the service's.
impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Exists { .. } => Error::detail(Code::RequestInvalid, "this key is already registered"),
            StoreError::Changed { .. } => {
                Error::retry_after(Code::Unavailable, 100, "what this changes was changed meanwhile; ask again")
            }
            // RocksDB itself failed: a full disk, or the store in a
            // background error until it recovers. The caller may ask again;
            // `/readyz` says why meanwhile.
            StoreError::Rocks(e) => {
                tracing::error!(error = %e, "the store refused an operation");
                Error::retry_after(Code::Unavailable, 5_000, "the store cannot take this now; ask again")
            }
            // Home's group is electing a leader, or this member stopped
            // leading: the write took no effect here; ask the leader.
            StoreError::NotLeader { .. } | StoreError::Group(_) => {
                tracing::warn!(error = %error, "home's group did not take a write");
                Error::retry_after(Code::Unavailable, 1_000, "home is electing a leader; ask again")
            }
            other => Error::Store(other),
        }
    }
}

/// What an actor could not do: the store's failure stays typed, a full or
/// stopped mailbox on the way stays a 503, anything else is internal.
impl From<ActorError> for Error {
    fn from(error: ActorError) -> Self {
        match error {
            ActorError::Store(e) => Error::from(e),
            ActorError::Mailbox(e) => Error::from(e),
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<Problem> for Error {
    fn from(problem: Problem) -> Self {
        Error::Refused(Box::new(problem))
    }
}

/// `503 unavailable` with `Retry-After`, whose cause is the operator's:
/// logged here, once; the caller is told only `detail`, never the cause's
/// text (an actor's name, a path, home's internal route).
pub fn unavailable_because(retry_after_ms: u64, detail: &str, cause: impl Display) -> Error {
    tracing::warn!(cause = %cause, "{detail}");
    Error::retry_after(Code::Unavailable, retry_after_ms, detail)
}

/// A `400 request_invalid` saying why.
pub fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

/// The HTTP face of an error: an RFC 9457 `application/problem+json`
/// answer, with `Retry-After` when it asks for a wait.
impl axum::response::IntoResponse for Error {
    fn into_response(self) -> axum::response::Response {
        problem_response(&self.into_problem())
    }
}

pub fn problem_response(problem: &Problem) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, problem.to_json()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    if let Some(seconds) = problem.retry_after_seconds {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_code_and_failures_show_internal() {
        let refused = Error::retry_after(Code::Unavailable, 1_500, "home is away");
        assert_eq!(refused.code(), Code::Unavailable);
        let problem = refused.into_problem();
        assert_eq!(problem.retry_after_seconds, Some(2));
        let failed = Error::actor::<&str>("billing")("stopped");
        assert_eq!(failed.code(), Code::Internal);
        assert!(failed.to_string().contains("billing"));
        let problem = failed.into_problem();
        assert_eq!(problem.code, Code::Internal);
        assert_eq!(problem.detail, None, "the cause stays in the log");
        let busy = Error::from(MailboxError::Stopped("billing".into())).into_problem();
        assert_eq!(busy.code, Code::Unavailable);
        assert!(!busy.detail.unwrap_or_default().contains("billing"), "an actor's name stays in the log");
    }
}
