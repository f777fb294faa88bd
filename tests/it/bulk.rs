//! Bulk files through HTTP: an upload address signed by the service, the
//! file POSTed to it as multipart/form-data, and an import that checks the
//! seal against the file before any record and runs as a queued push.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};
use svc_core::time::MINUTE;

use svc_client::bulk::{content_type, form, ndjson, upload_path};

async fn create_upload(home: &Home, b: &Business, idem: &str) -> Answer {
    let body = serde_json::to_vec(&json!({"record_type": "products"})).unwrap();
    home.signed(&b.key, "POST", "/v1/bulk-uploads", &body, "svc-push", &[("idempotency-key", idem)]).await
}

async fn send_file(home: &Home, upload: &Value, file: &[u8]) -> Answer {
    let path = upload_path(upload["url"].as_str().unwrap()).unwrap();
    let request = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", content_type())
        .body(Body::from(form(&upload["fields"], file)))
        .unwrap();
    home.send(request).await
}

async fn import(home: &Home, b: &Business, upload_id: &str, seal: &svc_core::dsse::Envelope) -> Answer {
    let body = serde_json::to_vec(&json!({"upload_id": upload_id, "batch_seal": seal})).unwrap();
    home.signed(&b.key, "POST", "/v1/bulk-imports", &body, "svc-push", &[]).await
}

async fn wait_settled(home: &Home, b: &Business, push_id: &str) -> Value {
    for _ in 0..400 {
        let status = home.signed(&b.key, "GET", &format!("/v1/pushes/{push_id}"), b"", "svc-business-read", &[]).await;
        if status.body["completed_at"].is_string() {
            return status.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("import {push_id} never settled");
}

// rule: P4.1.15, P4.1.16, P4.1.37, P4.1.38, P4.1.39, P4.1.40, P4.1.41, P4.1.42, P4.1.43, P4.1.45, P4.1.49, P4.1.51, P4.1.52, P4.1.3
#[tokio::test(flavor = "multi_thread")]
async fn an_uploaded_file_is_imported_as_a_queued_push() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    assert_eq!(upload.status, 200, "{:?}", upload.body);
    let upload_id = upload.body["upload_id"].as_str().unwrap().to_owned();
    assert!(svc_core::ids::is_upload_id(&upload_id));
    assert_eq!(upload.body["content_type"], "application/x-ndjson");
    assert_eq!(upload.body["max_bytes"], 268_435_456);
    assert_eq!(upload.body["max_records"], 100_000);
    for field in ["key", "Content-Type", "policy", "x-algorithm"] {
        assert!(upload.body["fields"][field].is_string(), "{field}");
    }
    // The same Idempotency-Key and request replays the first answer.
    assert_eq!(create_upload(&home, &b, "u-1").await.body, upload.body);

    let records: Vec<Vec<u8>> = (0..450).map(|i| product("Lumio", &format!("SKU-{i}"), "4.50")).collect();
    let stored = send_file(&home, &upload.body, &ndjson(&records)).await;
    assert_eq!(stored.status, 201, "{:?}", stored.body);
    assert_eq!(stored.body["records"], 450);
    assert_eq!(send_file(&home, &upload.body, &ndjson(&records)).await.status, 400, "one file per address");

    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let accepted = import(&home, &b, &upload_id, &seal).await;
    assert_eq!(accepted.status, 202, "{:?}", accepted.body);
    assert_eq!(accepted.body["source"], "bulk");
    let push_id = accepted.body["push_id"].as_str().unwrap().to_owned();
    assert_eq!(accepted.headers["location"], format!("/v1/pushes/{push_id}").as_str());
    let settled = wait_settled(&home, &b, &push_id).await;
    assert_eq!(settled["state"], "complete");
    assert_eq!(settled["counts"]["accepted"], 450);
    let ids = home.state.registry.catalogue_ids(&b.uuid, "products", None, usize::MAX).unwrap();
    assert_eq!(ids.len(), 450);
    let head = home.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-0")).unwrap().unwrap();
    assert_eq!(head.source, svc_store::model::RecordSource::Import);
    // The file is deleted once its import completes; asking again answers the status.
    assert!(!home.state.uploads.join(format!("{upload_id}.ndjson")).exists());
    let again = import(&home, &b, &upload_id, &seal).await;
    assert_eq!((again.status, again.body["state"].as_str()), (200, Some("complete")));
}

// rule: P4.1.50
#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_is_not_what_the_seal_names_fails_before_any_record() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    let upload_id = upload.body["upload_id"].as_str().unwrap().to_owned();
    let records: Vec<Vec<u8>> = (0..3).map(|i| product("Lumio", &format!("SKU-{i}"), "4.50")).collect();
    assert_eq!(send_file(&home, &upload.body, &ndjson(&records)).await.status, 201);
    let mut other = records.clone();
    other.swap(0, 1);
    let seal = home.batch_seal(&b, &other, 1, 0, home.clock.now());
    let accepted = import(&home, &b, &upload_id, &seal).await;
    assert_eq!(accepted.status, 202, "{:?}", accepted.body);
    let settled = wait_settled(&home, &b, accepted.body["push_id"].as_str().unwrap()).await;
    assert_eq!(settled["state"], "failed");
    assert_eq!(settled["error"]["code"], "seal_invalid");
    assert!(home.state.registry.catalogue_ids(&b.uuid, "products", None, usize::MAX).unwrap().is_empty());
}

// rule: P4.1.38, P4.1.41, P4.1.53
#[tokio::test(flavor = "multi_thread")]
async fn the_upload_address_is_judged_by_its_signed_policy() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    let file = ndjson(&[product("Lumio", "SKU-1", "1.00")]);

    let mut forged = upload.body.clone();
    forged["fields"]["x-signature"] = json!(svc_core::b64::url_encode(&[7u8; 64]));
    let refused = send_file(&home, &forged, &file).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")));

    let mut missing = upload.body.clone();
    missing["fields"].as_object_mut().unwrap().remove("policy");
    assert_eq!(send_file(&home, &missing, &file).await.status, 400);

    let too_many = "e30=\n".repeat(100_001);
    let over = send_file(&home, &upload.body, too_many.as_bytes()).await;
    assert_eq!(over.status, 400, "{:?}", over.body);

    // Valid one hour.
    home.clock.advance(61 * MINUTE);
    let late = send_file(&home, &upload.body, &file).await;
    assert_eq!(late.status, 400);
    assert!(late.body["detail"].as_str().unwrap().contains("expired"), "{:?}", late.body);
}

// The form's fields before the file are read piece by piece and refused as
// soon as one is too long or there are too many: a field never costs more
// than its limit.
#[tokio::test(flavor = "multi_thread")]
async fn upload_form_fields_are_bounded_while_streaming() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    let file = ndjson(&[product("Lumio", "SKU-1", "1.00")]);

    let mut long = upload.body.clone();
    long["fields"]["padding"] = json!("x".repeat(8 * 1024 + 1));
    let refused = send_file(&home, &long, &file).await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);
    assert!(refused.body["detail"].as_str().unwrap().contains("padding is over 8192 bytes"), "{:?}", refused.body);

    let mut many = upload.body.clone();
    for n in 0..40 {
        many["fields"][format!("extra-{n}")] = json!("x");
    }
    let refused = send_file(&home, &many, &file).await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);
    assert!(refused.body["detail"].as_str().unwrap().contains("more than 32 fields"), "{:?}", refused.body);

    // The form as the service signed it still goes through.
    assert_eq!(send_file(&home, &upload.body, &file).await.status, 201);
}

// rule: P4.1.48, P4.1.56
#[tokio::test(flavor = "multi_thread")]
async fn an_import_over_the_caps_is_refused_before_the_file_is_read() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(10)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    let upload_id = upload.body["upload_id"].as_str().unwrap().to_owned();
    let records: Vec<Vec<u8>> = (0..11).map(|i| product("Lumio", &format!("SKU-{i}"), "4.50")).collect();
    assert_eq!(send_file(&home, &upload.body, &ndjson(&records)).await.status, 201);
    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let refused = import(&home, &b, &upload_id, &seal).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (429, Some("rate_limited")));
    assert!(refused.headers.contains_key("retry-after"));
}

// rule: P4.1.44
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_needs_a_live_mandate_for_the_type() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100)).await;
    let body = serde_json::to_vec(&json!({"record_type": "events"})).unwrap();
    let refused = home.signed(&b.key, "POST", "/v1/bulk-uploads", &body, "svc-push", &[("idempotency-key", "e")]).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (403, Some("out_of_scope")));
}

/// How many bulk files the retention actor has deleted.
async fn bulk_files_expired(home: &Home) -> u64 {
    home.state.retention.call(svc_node::actors::retention::RetentionMsg::Observe).await.unwrap().bulk_files_expired
}

// rule: P4.1.45, P8.13
#[tokio::test(flavor = "multi_thread")]
async fn a_bulk_file_never_imported_is_deleted_seven_days_after_its_upload() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| config.retention_every_ms = 50).await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let upload = create_upload(&home, &b, "u-1").await;
    let upload_id = upload.body["upload_id"].as_str().unwrap().to_owned();
    let records: Vec<Vec<u8>> = (0..3).map(|i| product("Lumio", &format!("SKU-{i}"), "4.50")).collect();
    assert_eq!(send_file(&home, &upload.body, &ndjson(&records)).await.status, 201);
    let file = home.state.uploads.join(format!("{upload_id}.ndjson"));

    // Kept for 7 days: a minute short of them, several passes leave it.
    home.clock.advance(7 * svc_core::time::DAY - MINUTE);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(file.exists(), "a file younger than 7 days is kept");
    assert_eq!(bulk_files_expired(&home).await, 0);

    home.clock.advance(2 * MINUTE);
    for _ in 0..200 {
        if !file.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!file.exists(), "the file is deleted once 7 days have passed");
    assert_eq!(bulk_files_expired(&home).await, 1);
    // Its upload is gone with it: an import names no upload now.
    let seal = home.batch_seal(&b, &records, 1, 0, home.clock.now());
    let refused = import(&home, &b, &upload_id, &seal).await;
    assert_eq!((refused.status, refused.body["code"].as_str()), (400, Some("request_invalid")), "{:?}", refused.body);
}
