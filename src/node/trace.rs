//! Requests followed across nodes (W3C Trace Context). Every public
//! request gets a span: its trace is the caller's `traceparent` when one is
//! well formed (the front door and a forwarding read region send one),
//! else a new one. The span is a `tracing` span, so each log line written
//! while the request is served carries `trace_id`; it is sent on with a
//! request forwarded to home, named back in `traceresponse`, and kept in a
//! bounded list of this node's recent requests, which `GET
//! /admin/traces/{trace_id}` reads and `svc admin trace` merges across nodes.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use svc_core::time::UnixMs;
use svc_core::trace_context::{HEADER, RESPONSE_HEADER, TraceParent};
use tracing::Instrument;

use svc_clock::SharedClock;

/// Requests a node remembers for `svc admin trace`: about a megabyte.
pub const RECENT: usize = 4096;

tokio::task_local! {
    static CURRENT: Hop;
}

/// This node's hop of a trace: the trace, its own span, and the span
/// of the hop before it, if one sent the header.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    pub trace: TraceParent,
    pub span: [u8; 8],
    pub from: Option<[u8; 8]>,
}

impl Hop {
    /// The hop for a request carrying `headers`.
    pub fn start(headers: &HeaderMap) -> Hop {
        let received = headers.get(HEADER).and_then(|v| v.to_str().ok()).and_then(TraceParent::parse);
        let span = nonzero();
        match received {
            Some(trace) => Hop { trace, span, from: Some(trace.parent_id) },
            None => Hop { trace: TraceParent { trace_id: nonzero(), parent_id: span, flags: 0 }, span, from: None },
        }
    }

    /// The `traceparent` a request this hop sends on carries.
    pub fn header(&self) -> String {
        self.trace.child(self.span)
    }
}

fn nonzero<const N: usize>() -> [u8; N] {
    loop {
        let id: [u8; N] = svc_clock::random();
        if id.iter().any(|b| *b != 0) {
            return id;
        }
    }
}

/// The hop of the request being served on this task, if any.
pub fn current() -> Option<Hop> {
    CURRENT.try_with(|hop| *hop).ok()
}

/// Sets `traceparent` on a request this node sends on while serving one.
pub fn propagate(headers: &mut HeaderMap) {
    if let Some(hop) = current()
        && let Ok(value) = HeaderValue::from_str(&hop.header())
    {
        headers.insert(HEADER, value);
    }
}

/// One request this node served, as `svc admin trace` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Served {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub region: String,
    pub method: String,
    pub route: String,
    pub path: String,
    pub status: u16,
    /// RFC 3339, written when read: the request path only keeps the instant.
    #[serde(serialize_with = "rfc3339")]
    pub started_at: UnixMs,
    pub duration_ms: f64,
}

fn rfc3339<S: serde::Serializer>(at: &UnixMs, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.to_rfc3339_millis())
}

/// The node's recent requests, oldest first, at most [`RECENT`].
#[derive(Default)]
pub struct Recent {
    served: Mutex<VecDeque<([u8; 16], Served)>>,
}

impl Recent {
    fn keep(&self, trace: [u8; 16], served: Served) {
        let mut list = self.served.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() == RECENT {
            list.pop_front();
        }
        list.push_back((trace, served));
    }

    /// Every kept request of one trace, in the order they began here.
    pub fn of(&self, trace: &[u8; 16]) -> Vec<Served> {
        let list = self.served.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().filter(|(t, _)| t == trace).map(|(_, s)| s.clone()).collect()
    }
}

/// What the middleware needs of its node: its region's name, its clock and
/// where its recent requests are kept.
#[derive(Clone)]
pub struct Tracer {
    pub region: String,
    pub clock: SharedClock,
    pub recent: std::sync::Arc<Recent>,
}

/// Path parameters that are secrets (an invitation's token, a bulk
/// upload's id): never written to a trace or a log line.
const SECRET_PARAMS: &[&str] = &["{token}", "{upload_id}"];

/// `path` with the segments its route names as secrets replaced.
fn redacted(route: &str, path: &str) -> String {
    if !SECRET_PARAMS.iter().any(|secret| route.contains(secret)) {
        return path.to_owned();
    }
    let segments = route.split('/').zip(path.split('/'));
    segments.map(|(r, p)| if SECRET_PARAMS.contains(&r) { "[redacted]" } else { p }).collect::<Vec<_>>().join("/")
}

/// The middleware: the request's hop around everything that serves it.
pub async fn layer(State(state): State<Tracer>, request: Request, next: Next) -> Response {
    let hop = Hop::start(request.headers());
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_owned();
    let (method, path) = (request.method().to_string(), redacted(&route, request.uri().path()));
    let started_at = state.clock.now();
    let started = svc_clock::monotonic();
    let trace_id = hop.trace.trace_hex();
    let span = tracing::info_span!("request", trace_id = %trace_id, span_id = %hex::encode(hop.span));
    let mut response = CURRENT.scope(hop, next.run(request).instrument(span.clone())).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = response.status().as_u16();
    span.in_scope(|| tracing::debug!(%method, %path, status, duration_ms, "request served"));
    if let Ok(value) = HeaderValue::from_str(&hop.header()) {
        response.headers_mut().insert(RESPONSE_HEADER, value);
    }
    let served = Served {
        trace_id,
        span_id: hex::encode(hop.span),
        parent_span_id: hop.from.map(hex::encode),
        region: state.region.clone(),
        method,
        route,
        path,
        status,
        started_at,
        duration_ms,
    };
    state.recent.keep(hop.trace.trace_id, served);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_path_never_reaches_a_trace() {
        let route = "/portal/invitations/{token}/begin";
        assert_eq!(redacted(route, "/portal/invitations/s3cr3t/begin"), "/portal/invitations/[redacted]/begin");
        assert_eq!(redacted("/v1/uploads/{upload_id}", "/v1/uploads/up_123"), "/v1/uploads/[redacted]");
        assert_eq!(redacted("/v1/records/{record_id}", "/v1/records/svc_1"), "/v1/records/svc_1", "ids are no secrets");
    }
}
