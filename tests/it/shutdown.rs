//! A `svc node` process stopped with SIGTERM: it stops accepting, lets the
//! requests in flight finish, stops its actors, persists their state and
//! exits 0; restarted on the same data, it still refuses a nonce it claimed.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;
use svc_clock::{Clock, SystemClock};

use crate::process;

use process::{AUTHORITY, TOKEN, ai_company, region_token, start};

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_requests_in_flight_and_keeps_what_was_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let mut home = start(dir.path(), "home", None);
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let key = ai_company(&admin, "Calm AI", 37, None).await;
    let client = RetrievalClient::new(&home.public_url, AUTHORITY, key.clone(), None).unwrap();
    let search = serde_json::to_vec(&json!({"collection": "products", "filter": {"all": [{"country": "FR"}]},
        "sort_by": "published_at:desc", "limit": 1}))
    .unwrap();
    let (created, nonce) = (SystemClock.now().as_secs(), "drain-test-nonce-0123456789abcdef".to_owned());
    let answer = client.call_as("POST", "/v1/search", search.clone(), created, &nonce).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));

    // A request in flight: a long poll of the log that holds for 1.5 s.
    let api = Transport::new(home.internal_url.as_deref().unwrap()).unwrap();
    let long_poll = tokio::spawn(async move {
        let path = format!("/internal/v1/log?after={}&wait_ms=1500", u64::MAX - 1);
        let request = crate::common::link_request("GET", &path, "eu", &region_token("eu"), Vec::new());
        let sent = Instant::now();
        (api.send(request).await, sent.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    home.signal("TERM");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // No new connection is taken while it drains.
    let refused = Transport::new(&home.public_url).unwrap();
    let fresh = refused.send(Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert!(fresh.is_err(), "a new connection was served while draining");
    let (answer, took) = long_poll.await.unwrap();
    let answer = answer.expect("the request in flight was answered, not cut");
    assert_eq!(answer.status, 200);
    assert!(took >= Duration::from_millis(1400), "it ran its course: {took:?}");
    let status = tokio::task::spawn_blocking(move || home.child.wait().unwrap()).await.unwrap();
    assert!(status.success(), "exit status {status}");
    assert!(signalled.elapsed() < Duration::from_secs(10));

    // Restarted, it still holds the nonce.
    let home = start(dir.path(), "home", None);
    let client = RetrievalClient::new(&home.public_url, AUTHORITY, key, None).unwrap();
    let replay = client.call_as("POST", "/v1/search", search, created, &nonce).await.unwrap();
    assert_eq!(replay.status, 401, "{}", String::from_utf8_lossy(&replay.bytes));
    assert_eq!(replay.json()["code"], "nonce_reused");
    home.kill();
}
