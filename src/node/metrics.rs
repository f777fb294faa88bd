//! A node's metrics in the Prometheus text format (`GET /metrics` on the
//! admin listener). Each node has its own recorder, not the process-wide
//! one, so the regions `svc up` runs in one process keep their figures
//! apart. Counters and latencies are recorded as requests end; gauges
//! (replication, index, nonce store, outbox) are read when scraped.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use metrics::{Key, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// Latency buckets, in seconds: around the 20 ms fetch floor and the
/// search budget.
const LATENCY_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

const METADATA: Metadata<'static> = Metadata::new("svc", Level::INFO, Some("svc::metrics"));

#[derive(Clone)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
}

impl Default for Metrics {
    fn default() -> Self {
        let builder = PrometheusBuilder::new();
        // The buckets are constant and not empty: the builder accepts them.
        let builder = builder.set_buckets(LATENCY_BUCKETS).unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        Metrics { recorder: Arc::new(recorder), handle }
    }
}

fn key(name: &'static str, labels: &[(&'static str, String)]) -> Key {
    Key::from_parts(name, labels.iter().map(|(k, v)| Label::new(*k, v.clone())).collect::<Vec<_>>())
}

impl Metrics {
    pub fn count(&self, name: &'static str, labels: &[(&'static str, String)], n: u64) {
        self.recorder.register_counter(&key(name, labels), &METADATA).increment(n);
    }

    /// A counter kept elsewhere (an atomic), set to its total.
    pub fn total(&self, name: &'static str, labels: &[(&'static str, String)], value: u64) {
        self.recorder.register_counter(&key(name, labels), &METADATA).absolute(value);
    }

    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, String)], value: f64) {
        self.recorder.register_gauge(&key(name, labels), &METADATA).set(value);
    }

    fn observe(&self, name: &'static str, labels: &[(&'static str, String)], value: f64) {
        self.recorder.register_histogram(&key(name, labels), &METADATA).record(value);
    }

    /// The text exposition of everything recorded.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }
}

/// A request's method as a label from a fixed set: any other method (one
/// per request, if a caller likes) would grow a series each.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Counts each request by route, method and status, and times it by route
/// and status.
/// A request no route matched (a read region's forwarded writes, or a 404)
/// is labelled by what happened to it, so labels stay few.
pub async fn record(State(metrics): State<Metrics>, request: Request, next: Next) -> Response {
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) => path.as_str().to_owned(),
        None => "unmatched".to_owned(),
    };
    let method = method_label(request.method()).to_owned();
    let started = svc_clock::monotonic();
    let response = next.run(request).await;
    let code = response.status().as_u16().to_string();
    let elapsed = started.elapsed().as_secs_f64();
    metrics.count(
        "svc_http_requests_total",
        &[("route", route.clone()), ("method", method), ("code", code.clone())],
        1,
    );
    metrics.observe("svc_http_request_duration_seconds", &[("route", route), ("code", code)], elapsed);
    response
}
