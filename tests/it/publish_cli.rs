//! `svc client publish` (issue 30, item 4), run as a business developer
//! runs it, against a listening home: a CSV with broken rows judged locally
//! with the service's own reasons, the good rows published once in sealed
//! batches, and a run interrupted between sending a batch and hearing its
//! answer resumed with the same seal under the same Idempotency-Key.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

const HEADER: &str =
    "business_product_id,language,product_name,countries,brand,prices,on_sale,availability,product_url";

fn row(sku: &str, price: &str) -> String {
    format!("{sku},fr,Lampe {sku},FR,Lumen,FR:EUR:{price},false,in_stock,https://shop.example.com/p/{sku}")
}

/// 60 rows: three broken (a missing cell, a price that is not money, a
/// price item out of form) among 57 good ones.
fn csv() -> String {
    let mut lines = vec![HEADER.to_owned()];
    for i in 0..60 {
        lines.push(match i {
            7 => "l-7,fr,Lampe l-7,FR".to_owned(),
            20 => row("l-20", "douze"),
            41 => row("l-41", "9.90").replace("FR:EUR:9.90", "FR EUR 9.90"),
            _ => row(&format!("l-{i}"), "19.90"),
        });
    }
    lines.join("\n") + "\n"
}

fn publish(dir: &Path, base_url: &str, extra: &[&str]) -> (i32, String, String) {
    publish_with(dir, base_url, &[&["--batch", "55"], extra].concat(), &[])
}

/// A listening home, business Lumen's key file and the 60-row CSV in a
/// folder, and the node's address; the clock is the machine's, which the
/// command signs and seals by.
async fn lumen_with_a_csv() -> (Home, svc_http::node::Node, Business, tempfile::TempDir, String) {
    let (home, node) = Home::listening(|_| {}).await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    home.clock.set(svc_clock::SystemClock.now());
    let dir = tempfile::tempdir().unwrap();
    svc_client::keyfile::write(&dir.path().join("integration.json"), &business.key).unwrap();
    std::fs::write(dir.path().join("products.csv"), csv()).unwrap();
    let base_url = format!("http://{}", node.addr);
    (home, node, business, dir, base_url)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_csv_is_judged_locally_published_in_sealed_batches_and_resumed_with_the_same_keys() {
    let (home, node, business, dir, base_url) = lumen_with_a_csv().await;
    let state_path = dir.path().join("products.csv.publish-state.json");

    // A dry run sends nothing and names each broken row's line and reasons.
    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, out, err) =
        tokio::task::spawn_blocking(move || publish(&dir_path, &url, &["--dry-run"])).await.unwrap();
    assert_eq!(status, 2, "{out}{err}");
    assert!(out.contains("60 rows: 3 refused locally, 57 valid"), "{out}");
    let line = |n: u64, sku: &str, code: &str| {
        out.lines().any(|l| l.starts_with(&format!("{n} ")) && l.contains(sku) && l.contains(code))
    };
    assert!(line(9, "-", "row_unreadable"), "the short row, line 9:\n{out}");
    assert!(line(22, "l-20", "field_invalid") && out.contains("/prices/0/amount"), "as the service says it:\n{out}");
    assert!(line(43, "-", "row_unreadable") && out.contains("country:currency:amount"), "{out}");
    assert!(!state_path.exists(), "a dry run keeps no state");

    // The run: 57 good rows in two batches, the first over 50 records
    // (answered 202 and followed to its end), the second inline.
    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, out, err) = tokio::task::spawn_blocking(move || publish(&dir_path, &url, &[])).await.unwrap();
    assert_eq!(status, 2, "three rows refused:\n{out}{err}");
    assert!(out.contains("60 rows: 57 accepted, 3 refused locally"), "{out}\n{err}");
    let state: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let batches = state["batches"].as_array().unwrap();
    assert_eq!(batches.iter().map(|b| b["rows"].as_array().unwrap().len()).collect::<Vec<_>>(), [55, 2]);
    let catalogue =
        home.signed(&business.key, "GET", "/v1/catalogue?type=products", b"", "svc-business-read", &[]).await;
    assert_eq!(catalogue.body["entries"].as_array().unwrap().len(), 57, "{:?}", catalogue.body);

    // As if the command died after sending both batches and before writing
    // their answers: started again, it sends the same seals under the same
    // keys, and the service answers as it did the first time.
    let mut interrupted = state.clone();
    for i in [0, 1] {
        interrupted["batches"][i]["outcomes"] = Value::Null;
    }
    std::fs::write(&state_path, serde_json::to_vec(&interrupted).unwrap()).unwrap();
    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, out, err) = tokio::task::spawn_blocking(move || publish(&dir_path, &url, &[])).await.unwrap();
    assert_eq!(status, 2, "{out}{err}");
    assert!(err.contains("resuming"), "{err}");
    assert!(out.contains("60 rows: 57 accepted, 3 refused locally"), "replayed, not published again: {out}");
    let resumed: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    for i in 0..2 {
        assert_eq!(resumed["batches"][i]["idempotency_key"], state["batches"][i]["idempotency_key"]);
        assert_eq!(resumed["batches"][i]["seal"], state["batches"][i]["seal"]);
    }
    let attempts =
        home.signed(&business.key, "GET", "/v1/push-attempts?status=accepted", b"", "svc-business-read", &[]).await;
    assert_eq!(attempts.body["attempts"].as_array().unwrap().len(), 57, "each record published once");

    // A changed input is not resumed from another input's state.
    std::fs::write(dir.path().join("products.csv"), csv().replace("l-3,", "l-3b,")).unwrap();
    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, _, err) = tokio::task::spawn_blocking(move || publish(&dir_path, &url, &[])).await.unwrap();
    assert_eq!(status, 1);
    assert!(err.contains("another input"), "{err}");
    node.stop().await;
}

// The same file as one bulk file: an upload address, the file stored
// there, an import of it with its batch seal, followed to its end.
// rule: P4.1.37, P4.1.41, P4.1.42, P4.1.43, P4.1.49
#[tokio::test(flavor = "multi_thread")]
async fn with_bulk_the_good_rows_go_as_one_bulk_file_and_are_imported() {
    let (home, node, business, dir, base_url) = lumen_with_a_csv().await;
    let dir_path = dir.path().to_owned();
    let (status, out, err) =
        tokio::task::spawn_blocking(move || publish_with(&dir_path, &base_url, &["--bulk"], &[])).await.unwrap();
    assert_eq!(status, 2, "three rows refused:\n{out}{err}");
    assert!(out.contains("60 rows: 57 accepted, 3 refused locally"), "{out}\n{err}");
    let state: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("products.csv.publish-state.json")).unwrap()).unwrap();
    let batches = state["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 1, "one file: {state}");
    let upload_id = batches[0]["upload_id"].as_str().expect("sent as a bulk file");
    assert!(svc_core::ids::is_upload_id(upload_id), "{upload_id}");
    let catalogue =
        home.signed(&business.key, "GET", "/v1/catalogue?type=products", b"", "svc-business-read", &[]).await;
    assert_eq!(catalogue.body["entries"].as_array().unwrap().len(), 57, "{:?}", catalogue.body);
    let attempts = home.signed(&business.key, "GET", "/v1/push-attempts", b"", "svc-business-read", &[]).await;
    let sources: std::collections::BTreeSet<&str> =
        attempts.body["attempts"].as_array().unwrap().iter().filter_map(|a| a["source"].as_str()).collect();
    assert_eq!(sources, ["bulk"].into(), "{:?}", attempts.body);
    node.stop().await;
}

// rule: P4.1.4, P4.1.5
// In the sandbox a new key is known only once a request carries its grant:
// `svc client publish` sends it (`--grant` or SVC_SANDBOX_KEY), as every
// other client command does, and without it the key is unknown.
#[tokio::test(flavor = "multi_thread")]
async fn in_the_sandbox_publish_sends_the_keys_grant() {
    let (home, node) = Home::listening(|c| c.environment = svc_store::model::Environment::Sandbox).await;
    home.clock.set(svc_clock::SystemClock.now());
    let created = home
        .admin(
            "POST",
            "/admin/businesses",
            serde_json::json!({"legal_name": "Lumen", "country": "FR", "brands": ["Lumen"]}),
        )
        .await;
    let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[4; 32]).unwrap();
    let registered = home
        .admin(
            "POST",
            &format!("/admin/businesses/{uuid}/keys"),
            serde_json::json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}),
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let grant = registered.body["sandbox_key_grant"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    svc_client::keyfile::write(&dir.path().join("integration.json"), &key).unwrap();
    let rows = [HEADER.to_owned(), row("s-1", "9.90"), row("s-2", "19.90")].join("\n") + "\n";
    std::fs::write(dir.path().join("products.csv"), rows).unwrap();
    let base_url = format!("http://{}", node.addr);

    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, out, err) = tokio::task::spawn_blocking(move || publish(&dir_path, &url, &[])).await.unwrap();
    assert_ne!(status, 0, "{out}{err}");
    assert!(err.contains("key_unknown"), "without its grant the new key is unknown: {err}");

    let (dir_path, url) = (dir.path().to_owned(), base_url.clone());
    let (status, out, err) =
        tokio::task::spawn_blocking(move || publish_with(&dir_path, &url, &[], &["--grant", &grant])).await.unwrap();
    assert_eq!(status, 0, "{out}{err}");
    assert!(out.contains("2 rows: 2 accepted"), "{out}");
}

/// As [`publish`], with `before` given to `svc client` ahead of `publish`.
fn publish_with(dir: &Path, base_url: &str, after: &[&str], before: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["client", "--base-url", base_url, "--authority", AUTHORITY, "--key"])
        .arg(dir.join("integration.json"))
        .args(before)
        .arg("publish")
        .arg(dir.join("products.csv"))
        .args(after)
        .env("SVC_LOG", "warn")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}
