//! `svc mcp`, the self-hosted billable server, as an AI company runs it: a
//! process with its own key file, driven by the official Python SDK over
//! stdio and over Streamable HTTP, against a sandbox region over TCP. Every
//! tool is called; the key's bytes appear in no log line and no answer; the
//! retries take only what was not served.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use svc_core::keys::SigningKey;
use svc_core::keyset;

use crate::live::{AUTHORITY, Live};
use crate::mcp_python::official_client;

async fn region() -> Live {
    Live::start(9, 20, 77).await
}

trait Runs {
    fn config(&self, name: &str, api: &str, extra: &str) -> PathBuf;
    async fn a_row(&self) -> Value;
    async fn billed(&self) -> u64;
    async fn receipts(&self) -> usize;
}

impl Runs for Live {
    /// A configuration file for `svc mcp` against `api`, with `extra` TOML lines.
    fn config(&self, name: &str, api: &str, extra: &str) -> PathBuf {
        let text = format!(
            "version = 1\nenvironment = \"sandbox\"\napi_base_url = \"{api}\"\npublic_base_url = \"http://{AUTHORITY}\"\n\
             source_line_base = \"https://verify.example\"\nkey = {{ file = \"{}\" }}\ncountry = \"{}\"\n\
             sandbox_key_grant = \"{}\"\nanchors_file = \"{}\"\n{extra}",
            self.key_file.display(),
            self.country,
            self.grant,
            self.anchors_file.display()
        );
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Waits until search serves the corpus; answers a row.
    async fn a_row(&self) -> Value {
        let body = json!({"filter": {"all": [{"country": self.country}]}, "sort_by": "published_at:desc", "limit": 1});
        for _ in 0..400 {
            let answer =
                self.client().call("POST", "/v1/products/search", body.to_string().into_bytes()).await.unwrap();
            if let Some(row) = answer.json()["rows"].get(0) {
                return row.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("the index never served the corpus");
    }

    /// What the service billed this company so far (`/v1/usage` totals).
    async fn billed(&self) -> u64 {
        let answer = self.client().call("GET", "/v1/usage", Vec::new()).await.unwrap();
        answer.json()["totals"]["billed"]
            .as_u64()
            .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&answer.bytes)))
    }

    /// Every receipt issued to this key so far.
    async fn receipts(&self) -> usize {
        let answer = self.client().call("GET", "/v1/receipts", Vec::new()).await.unwrap();
        answer.json()["receipts"].as_array().map_or(0, Vec::len)
    }
}

fn stdio(config: &Path) -> Value {
    json!({"command": env!("CARGO_BIN_EXE_svc"), "args": ["mcp", "--config", config], "env": {"SVC_LOG": "debug"}})
}

/// The secret forms of `key`: none may appear anywhere a test can read.
fn secrets(key: &SigningKey, key_file: &Path) -> Vec<String> {
    let seed = key.seed();
    let file: Value = serde_json::from_slice(&std::fs::read(key_file).unwrap()).unwrap();
    vec![
        svc_core::b64::url_encode(&seed),
        svc_core::b64::std_encode(&seed),
        hex::encode(seed),
        file["seed"].as_str().unwrap().to_owned(),
    ]
}

fn assert_no_secret(text: &str, secrets: &[String], what: &str) {
    for secret in secrets {
        assert!(!text.contains(secret.as_str()), "the private key appears in {what}");
    }
}

fn first(call: &Value) -> &str {
    call["blocks"][0].as_str().unwrap_or_default()
}

const TOOLS: [&str; 14] = [
    "ads_pool",
    "ai_policy",
    "ai_policy_key",
    "fetch",
    "receipts",
    "report",
    "search_business_files",
    "search_events",
    "search_jobs",
    "search_products",
    "search_updates",
    "terms",
    "usage",
    "verify",
];

// rule: R4.4.13, R4.4.14, R4.4.15, R4.4.16, R4.4.17, R4.4.18, R4.4.19, R4.4.20, R4.4.21, R4.4.22
// rule: R4.4.33, R4.4.34, R4.4.41, R4.4.30, R4.4.31
#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_calls_every_tool_over_stdio_and_http_and_the_key_never_shows() {
    let region = region().await;
    let row = region.a_row().await;
    let record_id = row["record_id"].as_str().unwrap().to_owned();
    let secrets = secrets(&region.key, &region.key_file);
    let before = region.receipts().await;
    let calls = json!([
        {"tool": "search_products", "arguments": {"q": "*", "sort_by": "published_at:desc", "limit": 3}},
        {"tool": "search_products", "arguments": {"q": "*"}},
        {"tool": "search_business_files", "arguments": {"sort_by": "published_at:desc"}},
        {"tool": "search_events", "arguments": {"sort_by": "published_at:desc"}},
        {"tool": "search_jobs", "arguments": {"sort_by": "published_at:desc"}},
        {"tool": "search_updates", "arguments": {"sort_by": "published_at:desc"}},
        {"tool": "fetch", "arguments": {"record_id": record_id}},
        {"tool": "fetch", "arguments": {"record_id": "prd_0000000000000000000000000"}},
        {"tool": "verify", "arguments": {"record_base64": "e30="}},
        {"tool": "receipts", "arguments": {}},
        {"tool": "ai_policy", "arguments": {"ai_policy_bits": row["ai_policy_bits"]}},
        {"tool": "terms", "arguments": {}},
        {"tool": "ai_policy_key", "arguments": {}},
        {"tool": "usage", "arguments": {}},
        {"tool": "ads_pool", "arguments": {"country": region.country, "keywords": ["lamp"], "formats": ["card"], "sort_by": "random:asc", "session_ref": "s1"}},
        {"tool": "report", "arguments": {"kind": "ad_render", "idempotency_key": "r1", "body": {"render_token": "t", "format": "card", "session_ref": "s1"}}},
        {"tool": "report", "arguments": {"kind": "ad_click", "idempotency_key": "c1", "body": {"click_token": "t", "session_ref": "s1"}}},
        {"tool": "catalogue", "arguments": {}},
        {"tool": "fetch", "arguments": {"record_id": record_id, "surprise": 1}},
    ]);

    // Over stdio, as an MCP host launches it.
    let config = region.config("stdio.toml", &region.base_url(), "");
    let run = official_client(&json!({"server": stdio(&config), "mode": "legacy", "calls": calls})).await;
    let mut names: Vec<&str> = run["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, TOOLS, "the spec's tools and no catalogue, list or bulk tool");
    let answers = run["calls"].as_array().unwrap();
    let (search, check) = (&answers[0], answers[0]["blocks"][1].as_str().unwrap());
    assert_eq!(search["is_error"], false, "{search}");
    assert_eq!(serde_json::from_str::<Value>(check).unwrap()["offline_check"], "ok");
    assert_eq!(serde_json::from_str::<Value>(first(search)).unwrap()["rows"].as_array().unwrap().len(), 3);
    // A search the API refuses: its problem, inside a tool error.
    let refused: Value = serde_json::from_str(first(&answers[1])).unwrap();
    assert_eq!((answers[1]["is_error"].as_bool(), refused["code"].as_str()), (Some(true), Some("sort_required")));
    for typed in &answers[2..6] {
        assert_eq!(typed["is_error"], false, "{typed}");
    }
    // The fetch's first block is the body byte for byte: the receipt names
    // the SHA-256 of the exact record bytes inside it.
    let fetched = &answers[6];
    assert_eq!(fetched["is_error"], false, "{fetched}");
    let document = region.client().key_set().await.unwrap().json();
    let keys = keyset::verify(&document, &svc_client::anchors::read(&region.anchors_file).unwrap()).unwrap();
    svc_core::offline::check_fetch(first(fetched).as_bytes(), &keys, &region.key.verifying_key().thumbprint())
        .expect("the fetched bytes are the API's, byte for byte");
    let summary: Value = serde_json::from_str(fetched["blocks"][1].as_str().unwrap()).unwrap();
    assert!(
        summary["details"]["source_line"].as_str().unwrap_or_default().contains("verify=https://verify.example/"),
        "{summary} {}",
        first(fetched)
    );
    let missing: Value = serde_json::from_str(first(&answers[7])).unwrap();
    assert_eq!((answers[7]["is_error"].as_bool(), missing["code"].as_str()), (Some(true), Some("not_found")));
    assert_eq!(answers[8]["is_error"], true, "a record that is not sealed does not verify");
    let receipts: Value = serde_json::from_str(first(&answers[9])).unwrap();
    assert!(receipts["receipts"].as_array().unwrap().len() >= 2);
    let decoded: Value = serde_json::from_str(first(&answers[10])).unwrap();
    assert!(decoded.get("use").is_some() && decoded.get("blocked").is_some(), "{decoded}");
    for (i, code) in
        [(11, None), (12, None), (13, None), (14, None), (15, Some("token_invalid")), (16, Some("token_invalid"))]
    {
        let answer = &answers[i];
        match code {
            None => assert!(
                answer["is_error"] == false
                    || serde_json::from_str::<Value>(first(answer)).unwrap()["code"] == "not_found",
                "{answer}"
            ),
            Some(code) => assert_eq!(serde_json::from_str::<Value>(first(answer)).unwrap()["code"], code, "{answer}"),
        }
    }
    assert_eq!(answers[17]["is_error"], true, "an unknown tool");
    assert_eq!(answers[18]["is_error"], true, "arguments outside the schema");
    assert!(format!("{}", answers[18]).contains("surprise"), "{}", answers[18]);
    // Billed and receipted as the API is: a receipt for each answer that
    // carries one, and none for a refusal.
    let receipted = answers[..17]
        .iter()
        .filter(|a| serde_json::from_str::<Value>(first(a)).is_ok_and(|b| b.get("receipt").is_some()))
        .count();
    assert!(receipted >= 3, "the product search, the fetch and the ad pool");
    assert_eq!(region.receipts().await - before, receipted);
    let everything = format!("{}{}", run, run["stderr"]);
    assert_no_secret(&everything, &secrets, "the stdio run's log lines or tool answers");
    assert!(run["stderr"].as_str().unwrap().contains("svc mcp: serving"), "the server's log lines were read");

    // Over Streamable HTTP behind a bearer token.
    let token = "a-bearer-token-of-at-least-thirty-two-chars";
    let config = region.config(
        "http.toml",
        &region.base_url(),
        "[transport]\ntype = \"http\"\nport = 0\nbearer_token_env = \"SVC_MCP_TOKEN\"\n",
    );
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["mcp", "--config"])
        .arg(&config)
        .env("SVC_MCP_TOKEN", token)
        .env("SVC_LOG", "debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Its log lines are read as they come: a full pipe would stall it.
    let mut stderr = server.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await.unwrap();
        text
    });
    let mut stdout = tokio::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line).await.unwrap();
    let listen: Value = serde_json::from_str(&line).unwrap();
    let url = format!("http://{}/mcp", listen["mcp_listen"].as_str().unwrap());
    let unauthenticated =
        svc_client::transport::Transport::new(&format!("http://{}", listen["mcp_listen"].as_str().unwrap()))
            .unwrap()
            .send(
                axum::http::Request::post("/mcp")
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(axum::body::Body::from("{}"))
                    .unwrap(),
            )
            .await
            .unwrap();
    assert_eq!(unauthenticated.status, 401);
    let run =
        official_client(&json!({"server": {"url": url, "bearer": token}, "mode": "legacy", "calls": calls})).await;
    assert_eq!(run["tools"].as_array().unwrap().len(), 14);
    let answers = run["calls"].as_array().unwrap();
    assert_eq!(answers[0]["is_error"], false, "{}", answers[0]);
    svc_core::offline::check_fetch(first(&answers[6]).as_bytes(), &keys, &region.key.verifying_key().thumbprint())
        .unwrap();
    let auto =
        official_client(&json!({"server": {"url": url, "bearer": token}, "mode": "auto", "calls": [calls[0]]})).await;
    assert_eq!(auto["calls"][0]["is_error"], false, "the 2026-07-28 era too");
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let logs = logs.await.unwrap();
    assert!(logs.contains("svc mcp: serving"));
    assert_no_secret(&format!("{run}{auto}{logs}"), &secrets, "the HTTP run's log lines or tool answers");
}

/// A stub region in front of the real one: it answers each search from
/// `script` in turn (a status, or `None` to pass it on), counts the
/// searches it saw and the nonces they carried.
struct Stub {
    addr: std::net::SocketAddr,
    searches: Arc<AtomicUsize>,
    nonces: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn stub(upstream: String, script: Vec<Option<u16>>, hang: bool) -> Stub {
    use axum::response::IntoResponse;
    let searches = Arc::new(AtomicUsize::new(0));
    let nonces = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (seen, kept) = (searches.clone(), nonces.clone());
    let transport = svc_client::transport::Transport::new(&upstream).unwrap();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (seen, kept, transport, script) = (seen.clone(), kept.clone(), transport.clone(), script.clone());
        async move {
            if request.uri().path().ends_with("/search") {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let input = request
                    .headers()
                    .get("signature-input")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                kept.lock().unwrap().push(input);
                if hang {
                    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                }
                if let Some(Some(status)) = script.get(n) {
                    let mut answer = (axum::http::StatusCode::from_u16(*status).unwrap(), "{\"code\":\"unavailable\"}")
                        .into_response();
                    answer.headers_mut().insert("retry-after", "1".parse().unwrap());
                    return answer;
                }
            }
            match transport.forward(request).await {
                Ok(answer) => answer.map(axum::body::Body::new),
                Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Stub { addr, searches, nonces }
}

// rule: R4.4.35, R4.4.36, R4.4.37, R4.4.39, R5.15
#[tokio::test(flavor = "multi_thread")]
async fn a_503_then_200_is_one_bill_and_one_receipt_each_attempt_signed_afresh() {
    let region = region().await;
    region.a_row().await;
    let (before, billed_before) = (region.receipts().await, region.billed().await);
    let stub = stub(region.base_url(), vec![Some(503), Some(502), None], false).await;
    let config = region.config(
        "retry.toml",
        &format!("http://{}", stub.addr),
        "retry = { max_attempts = 3, max_delay_ms = 1500 }\n",
    );
    let search = json!({"tool": "search_products", "arguments": {"sort_by": "published_at:desc", "limit": 2}});
    let run = official_client(&json!({"server": stdio(&config), "mode": "legacy", "calls": [search]})).await;
    let answer = &run["calls"][0];
    assert_eq!(answer["is_error"], false, "{answer}");
    let details: Value = serde_json::from_str(answer["blocks"][1].as_str().unwrap()).unwrap();
    assert_eq!(details["details"]["attempts"], 3);
    assert_eq!(stub.searches.load(Ordering::SeqCst), 3, "503 (after Retry-After), 502, then served");
    let nonces = stub.nonces.lock().unwrap().clone();
    assert_eq!(
        nonces.iter().collect::<std::collections::HashSet<_>>().len(),
        3,
        "each attempt signed afresh: {nonces:?}"
    );
    assert_eq!(region.receipts().await - before, 1, "one receipt");
    assert_eq!(region.billed().await - billed_before, 1, "one bill");
}

// rule: R4.4.40, R4.4.38
#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_timed_out_after_it_was_sent_is_never_retried() {
    let region = region().await;
    region.a_row().await;
    let stub = stub(region.base_url(), Vec::new(), true).await;
    let config = region.config(
        "timeout.toml",
        &format!("http://{}", stub.addr),
        "timeout_ms = 500\nretry = { max_attempts = 3, max_delay_ms = 100 }\n",
    );
    let search = json!({"tool": "search_products", "arguments": {"sort_by": "published_at:desc"}});
    let run = official_client(&json!({"server": stdio(&config), "mode": "legacy", "calls": [search]})).await;
    let answer = &run["calls"][0];
    assert_eq!(answer["is_error"], true);
    let problem: Value = serde_json::from_str(first(answer)).unwrap();
    assert_eq!(problem["code"], "unavailable");
    assert!(problem["detail"].as_str().unwrap().contains("not retried"), "{problem}");
    assert_eq!(stub.searches.load(Ordering::SeqCst), 1, "sent once, never again");

    // A connection refused before anything was sent is retried, up to max_attempts.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config =
        region.config("closed.toml", &format!("http://{closed}"), "retry = { max_attempts = 3, max_delay_ms = 50 }\n");
    let run = official_client(&json!({"server": stdio(&config), "mode": "legacy", "calls": [search]})).await;
    let problem: Value = serde_json::from_str(first(&run["calls"][0])).unwrap();
    assert!(problem["detail"].as_str().unwrap().contains("after 3 attempt(s)"), "{problem}");
}

// rule: R4.4.27, R4.4.31, R4.4.32
#[tokio::test(flavor = "multi_thread")]
async fn svc_mcp_refuses_a_configuration_the_spec_forbids_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let base = "version = 1\napi_base_url = \"http://127.0.0.1:9\"\nanchors_file = \"anchors.json\"\nkey = { file = \"key.json\" }\n";
    let cases = [
        (format!("{base}sandbox_key_grant = \"svc_sbxk1.x\"\n"), "refused with environment = \"production\""),
        (format!("{base}[transport]\ntype = \"http\"\nhost = \"0.0.0.0\"\n"), "bearer_token_env is required"),
        (base.replace("key = { file = \"key.json\" }", "key = { file = \"key.json\", jwk = {} }"), "unknown field"),
    ];
    for (i, (text, refusal)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
            .args(["mcp", "--config"])
            .arg(&path)
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(refusal), "{stderr}");
    }
}
