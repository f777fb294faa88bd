//! The public HTML pages rendered by headless Chromium (installed by
//! `.ci/setup`): the certificate page and the verify page show the
//! certificate's statement and status once a real browser engine has parsed
//! them, and with their content policy nothing else loads.

use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use svc_clock::SystemClock;
use svc_http::node::Node;
use svc_http::sandbox::seed::admin;
use svc_node::config::NodeConfig;

/// The DOM Chromium built from `url`, after running (nothing: no script).
fn rendered(url: &str) -> String {
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--dump-dom", url])
        .output()
        .expect("headless Chromium (apt install chromium; .ci/setup does)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

// rule: P4.2.1, P2.6.3, P2.6.8, P4.2.9
#[tokio::test(flavor = "multi_thread")]
async fn certificate_and_verify_pages_render_in_chromium_with_statement_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        NodeConfig::local_home(dir.path().join("home"), "127.0.0.1:0".parse().unwrap(), "127.0.0.1:0".parse().unwrap());
    let node = Node::start(config, Arc::new(SystemClock)).await.unwrap();
    let created =
        admin(&node.state, "POST", "/admin/businesses", json!({"legal_name": "Lumen & Fils", "country": "FR"}))
            .await
            .unwrap();
    let uuid = created["business_uuid"].as_str().unwrap().to_owned();
    let withdrawn = json!({"status": "withdrawn", "reason": "approval_reversed"});
    admin(&node.state, "POST", &format!("/admin/businesses/{uuid}/certificate-status"), withdrawn).await.unwrap();
    let base = format!("http://{}", node.addr);
    let (_, certificate) =
        svc_node::service::public::certificates::certificate_document(&node.state, &uuid, node.state.clock.now())
            .unwrap()
            .unwrap();
    let statement = certificate["statement"].as_str().unwrap().replace('&', "&amp;");

    let dom = rendered(&format!("{base}/v1/certificates/{uuid}?format=html"));
    assert!(dom.contains("<h1>Lumen &amp; Fils</h1>"), "{dom}");
    assert!(dom.contains(&statement), "the statement is shown: {dom}");
    assert!(dom.contains("<span class=\"status withdrawn\">withdrawn</span>"), "the status is shown: {dom}");
    assert!(dom.contains("approval_reversed") && dom.contains("History"), "{dom}");
    assert!(!dom.contains("<script"), "{dom}");

    // A sealed record's verify page: who published it, under which certificate.
    let corpus = svc_http::sandbox::corpus::generate(3, svc_http::sandbox::corpus::Sizes::products_only(1, 2));
    svc_http::sandbox::seed::ensure_seeded(&node.state, &corpus, &|_| {}).await.unwrap();
    let records = node.state.store.scan::<svc_store::model::RecordHead>(svc_store::cf::RECORDS, &[], None, 1).unwrap();
    let head = &records[0].1;
    let version = node.state.registry.record_version(&head.record_id, head.live_generation).unwrap().unwrap();
    let origin = svc_core::digest::sha256_prefixed(&version.bytes);
    let dom = rendered(&format!("{base}/v1/verify/{}?origin={origin}&format=html", head.record_id));
    assert!(dom.contains(&head.record_id) && dom.contains(&origin), "{dom}");
    assert!(dom.contains("<span class=\"status current\">current</span>"), "{dom}");
    assert!(dom.contains("<span class=\"status active\">active</span>"), "the certificate's status: {dom}");
    assert!(dom.contains("was verified by the service on"), "the certificate's statement: {dom}");

    let unknown = rendered(&format!("{base}/v1/certificates/00000000-0000-4000-8000-000000000000?format=html"));
    assert!(unknown.contains("<h1>Not found</h1>"), "{unknown}");
    node.stop().await;
}
