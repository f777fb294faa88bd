//! Structured, correlated logs (issue 30, item 6): a request keeps its
//! W3C `traceparent` trace id, every log line written while it is served
//! is a JSON object carrying it, its answer names the span in
//! `traceresponse`, and the node keeps it for `GET /admin/traces/{id}`.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};

/// A log writer into memory, for reading the lines back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn traced(path: &str, traceparent: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path).header("host", AUTHORITY);
    if let Some(value) = traceparent {
        request = request.header("traceparent", value);
    }
    let mut request = request.body(Body::empty()).unwrap();
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.1:50000".parse().unwrap()));
    request
}

// The log's subscriber is set for the test's thread, where the router's
// future runs (the actors' lines, on other threads, are not read here).
#[tokio::test(flavor = "multi_thread")]
async fn a_request_keeps_its_trace_in_every_log_line_its_answer_and_the_nodes_recent_requests() {
    let home = Home::start().await;
    let captured = Captured::default();
    let subscriber = svc::logs::json(tracing_subscriber::EnvFilter::new("svc=debug"), captured.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    let answer = home.send(traced("/v1/log/tile/0/zzz", Some(&format!("00-{TRACE}-{PARENT}-01")))).await;
    let unknown = home.send(traced("/healthz", Some("00-zz-not-a-trace"))).await;
    drop(guard);

    // The answer names this node's span in the caller's trace.
    let response = answer.headers["traceresponse"].to_str().unwrap().to_owned();
    let span = response.strip_prefix(&format!("00-{TRACE}-")).and_then(|r| r.strip_suffix("-01")).expect(&response);
    assert_eq!(span.len(), 16);
    assert_ne!(span, PARENT, "a span of its own");
    // A malformed traceparent starts a new trace.
    let fresh = unknown.headers["traceresponse"].to_str().unwrap();
    assert!(fresh.starts_with("00-") && !fresh.contains(TRACE), "{fresh}");

    // Every line is a JSON object; the request's line carries its trace.
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let served: Vec<&Value> = lines.iter().filter(|l| l["fields"]["message"] == "request served").collect();
    assert_eq!(served.len(), 2, "{text}");
    assert_eq!(served[0]["span"]["trace_id"], TRACE);
    assert_eq!(served[0]["span"]["span_id"], span);
    assert_eq!(served[0]["fields"]["status"], 404);
    assert_eq!(served[0]["fields"]["path"], "/v1/log/tile/0/zzz");

    // The node keeps it: one hop, its parent the caller's span.
    let kept = home.admin("GET", &format!("/admin/traces/{TRACE}"), json!({})).await;
    assert_eq!(kept.status, 200, "{:?}", kept.body);
    let hops = kept.body["served"].as_array().unwrap();
    assert_eq!(hops.len(), 1, "{hops:?}");
    assert_eq!(hops[0]["span_id"], span);
    assert_eq!(hops[0]["parent_span_id"], PARENT);
    assert_eq!(hops[0]["region"], "home");
    assert_eq!(hops[0]["status"], 404);
    for bad in ["xyz", "00000000000000000000000000000000", "4BF92F3577B34DA6A3CE929D0E0E4736"] {
        let refused = home.admin("GET", &format!("/admin/traces/{bad}"), json!({})).await;
        assert_eq!(refused.status, 400, "{bad}");
        assert_eq!(refused.body["code"], "request_invalid");
    }
}
