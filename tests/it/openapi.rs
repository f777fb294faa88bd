//! The OpenAPI description (issue 30, item 1) against the routes that
//! exist: every route the public, retrieval and business routers register
//! (read from their source) is described, and every described operation is
//! served (answered by its handler, not by the router's "no such route").

use crate::common;

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::Request;
use common::*;
use svc_http::api::openapi::OPERATIONS;

/// Routes named by a constant rather than a literal.
const CONSTANTS: &[(&str, &str)] = &[
    ("svc_core::web_bot_auth::DIRECTORY_PATH", svc_core::web_bot_auth::DIRECTORY_PATH),
    ("svc_core::index::INDEX_PATH", svc_core::index::INDEX_PATH),
    ("svc_core::index::VOCABULARIES_PATH", svc_core::index::VOCABULARIES_PATH),
    ("svc_node::key_set::directory::PATH", "/v1/key-directory"),
];

/// Every `(method, path)` the HTTP surface's routers register, outside the
/// operator's, the regions' and home's group's own listeners.
fn registered() -> BTreeSet<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http/api");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if ["admin.rs", "internal.rs", "group.rs"].contains(&name.as_str()) {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for call in source.split(".route(").skip(1) {
            let call = call.split(";\n").next().unwrap();
            let call = call.split(".merge(").next().unwrap();
            let (target, rest) = call.split_once(',').unwrap();
            let target = target.trim();
            let route = match target.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                Some(literal) => literal.to_owned(),
                None => CONSTANTS.iter().find(|(c, _)| *c == target).unwrap_or_else(|| panic!("{target}")).1.to_owned(),
            };
            if route == "/metrics" {
                continue; // the admin listener's
            }
            let route = route.replace("{*", "{");
            let handlers = rest.split(".route(").next().unwrap();
            for method in ["get", "post", "put", "delete", "patch"] {
                let called = handlers.match_indices(&format!("{method}(")).any(|(i, _)| {
                    i == 0 || !handlers.as_bytes()[i - 1].is_ascii_alphanumeric() && handlers.as_bytes()[i - 1] != b'_'
                });
                if called {
                    found.insert((method.to_owned(), route.clone()));
                }
            }
        }
    }
    found
}

#[test]
fn every_registered_route_is_described_and_every_described_one_registered() {
    let described: BTreeSet<(String, String)> =
        OPERATIONS.iter().map(|o| (o.method.to_owned(), o.path.to_owned())).collect();
    let registered = registered();
    let missing: Vec<_> = registered.difference(&described).collect();
    let absent: Vec<_> = described.difference(&registered).collect();
    assert!(missing.is_empty(), "registered but not described: {missing:?}");
    assert!(absent.is_empty(), "described but not registered: {absent:?}");
    assert!(registered.len() >= 50, "{registered:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_described_operation_is_served_and_the_description_is_served_at_every_region() {
    let home = Home::start().await;
    let unmatched =
        home.send(Request::get("/v1/no-such-route").header("host", AUTHORITY).body(Body::empty()).unwrap()).await;
    assert_eq!(unmatched.status, 404);
    for operation in OPERATIONS {
        let path = operation.path.replace(['{', '}'], "").replace("path", "0/000");
        let request = Request::builder()
            .method(operation.method.to_uppercase().as_str())
            .uri(&path)
            .header("host", AUTHORITY)
            .body(Body::empty())
            .unwrap();
        let answer = home.send(request).await;
        if answer.status == 405 {
            // Only the bare DELETE of a record, refused by its own handler.
            assert_eq!(answer.body["code"], "method_not_allowed", "{} {path}", operation.method);
        }
        assert!(
            answer.bytes != unmatched.bytes || answer.status != unmatched.status,
            "{} {path} is answered as no route: {}",
            operation.method,
            answer.status
        );
    }
    let doc = home.get("/openapi.json").await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    assert_eq!(doc.body["servers"][0]["url"], format!("https://{AUTHORITY}"));
    assert_eq!(doc.body["paths"]["/v1/search"]["post"]["security"][0]["svc-retrieval"], serde_json::json!([]));
}
