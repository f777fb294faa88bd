//! What a listener lets in at once: a cap on requests in flight for each
//! kind of work, so one kind (held uploads, a flood of verifications)
//! cannot take the slots of another, and a deadline on every request, its
//! body read included.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use svc_core::problem::Code;
use tokio::sync::Semaphore;

use svc_node::config::ListenerLimits;
use svc_node::service::Error;

/// The public MCP server's path: a verification route, admitted as one.
pub const MCP_PUBLIC_PATH: &str = "/v1/mcp/public";
/// The kinds of work a request can ask for, each with its own cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteClass {
    Publish,
    Upload,
    Verify,
    Retrieval,
    Internal,
    Other,
}

impl RouteClass {
    const ALL: [RouteClass; 6] = [
        RouteClass::Publish,
        RouteClass::Upload,
        RouteClass::Verify,
        RouteClass::Retrieval,
        RouteClass::Internal,
        RouteClass::Other,
    ];

    pub fn of(path: &str) -> RouteClass {
        let under = |prefix: &str| path.starts_with(prefix);
        if under("/v1/publish/") || under("/v1/bulk-") {
            RouteClass::Publish
        } else if under("/v1/uploads/") {
            RouteClass::Upload
        } else if path == "/v1/verify" || path == MCP_PUBLIC_PATH {
            RouteClass::Verify
        } else if path.ends_with("/search") || under("/v1/records/") || under("/v1/receipts") {
            RouteClass::Retrieval
        } else if under("/internal/") {
            RouteClass::Internal
        } else {
            RouteClass::Other
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RouteClass::Publish => "publish",
            RouteClass::Upload => "upload",
            RouteClass::Verify => "verify",
            RouteClass::Retrieval => "retrieval",
            RouteClass::Internal => "internal",
            RouteClass::Other => "other",
        }
    }
}

/// One listener's caps and deadlines.
pub struct Admission {
    slots: [Arc<Semaphore>; 6],
    request_timeout: Duration,
    upload_timeout: Duration,
}

impl Admission {
    pub fn new(limits: &ListenerLimits) -> Admission {
        let caps = limits.in_flight;
        let cap = |class: RouteClass| match class {
            RouteClass::Publish => caps.publish,
            RouteClass::Upload => caps.upload,
            RouteClass::Verify => caps.verify,
            RouteClass::Retrieval => caps.retrieval,
            RouteClass::Internal => caps.internal,
            RouteClass::Other => caps.other,
        };
        Admission {
            slots: RouteClass::ALL.map(|class| Arc::new(Semaphore::new(cap(class).max(1)))),
            request_timeout: Duration::from_millis(limits.request_timeout_ms),
            upload_timeout: Duration::from_millis(limits.upload_timeout_ms),
        }
    }

    fn slots(&self, class: RouteClass) -> &Arc<Semaphore> {
        // ALL lists the classes in declaration order.
        &self.slots[class as usize]
    }
}

/// Takes a slot of the request's class, or answers `503` at once; then
/// answers `503` if the request is not done within its deadline.
pub async fn admit(State(admission): State<Arc<Admission>>, request: Request, next: Next) -> Response {
    let class = RouteClass::of(request.uri().path());
    let Ok(_slot) = admission.slots(class).clone().try_acquire_owned() else {
        let detail = format!("too many {} requests in flight here; ask again", class.name());
        return Error::retry_after(Code::Unavailable, 1_000, detail).into_response();
    };
    let within = if class == RouteClass::Upload { admission.upload_timeout } else { admission.request_timeout };
    match tokio::time::timeout(within, next.run(request)).await {
        Ok(answer) => answer,
        Err(_) => {
            let detail = format!("the request was not done within {} ms", within.as_millis());
            Error::retry_after(Code::Unavailable, 1_000, detail).into_response()
        }
    }
}
