//! The MCP surfaces against the routes they wrap, side by side in one run,
//! on a sandbox home node in-process over real TCP:
//!
//! (a) a signed product search over raw HTTP (`POST /v1/products/search`)
//!     against the same search through `svc mcp` (Streamable HTTP, one
//!     session per connection), which signs it, sends it and checks the
//!     receipt and every row offline before answering;
//! (b) `POST /v1/verify` against the public server's `verify` tool.
//!
//! Each pair runs in turns (raw, MCP, raw, MCP, …) for `--rounds`, each turn
//! `--seconds` long, from `--connections` keep-alive connections; the
//! medians of the turns are printed, with the ratios.
//!
//! `cargo bench --bench mcp -- --connections 8 --seconds 5 --rounds 3`

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::{Answer, Transport};
use svc_clock::SystemClock;
use svc_core::keys::{Alg, SigningKey};
use svc_core::keyset::RootAnchors;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ensure_seeded};
use svc_node::config::NodeConfig;
use svc_store::cf;
use svc_store::model::RecordHead;

// Linked for its allocator: the bench allocates with mimalloc, as `svc node` does.
use svc as _;

#[path = "common/turns.rs"]
mod turns;
use turns::{Turn, arg, print_pair, turn};

const AUTHORITY: &str = "api.svc.localhost";

/// One turn of `tool` calls with `arguments` through the MCP server at
/// `base` and `path`, a session per connection.
async fn mcp_turn(
    base: &str,
    path: &str,
    tool: &'static str,
    arguments: &Value,
    connections: usize,
    run: Duration,
) -> Turn {
    let mut sessions = Vec::new();
    for _ in 0..connections {
        sessions.push(Arc::new(Session::open(base, path, None).await));
    }
    let sessions = std::sync::Mutex::new(sessions);
    turn(connections, run, || {
        let session = sessions.lock().unwrap().pop().unwrap();
        let arguments = arguments.clone();
        move || {
            let (session, arguments) = (session.clone(), arguments.clone());
            async move { assert!(session.call(tool, &arguments).await, "an MCP {tool} call failed") }
        }
    })
    .await
}

/// A Streamable HTTP session with one MCP server: initialize, then calls.
struct Session {
    transport: Transport,
    path: String,
    id: String,
    bearer: Option<String>,
}

impl Session {
    async fn post(
        transport: &Transport,
        path: &str,
        id: Option<&str>,
        bearer: Option<&str>,
        message: &Value,
    ) -> Answer {
        // No Host of its own: the connection's address (svc mcp accepts
        // only loopback hosts; the public server any).
        let mut request = axum::http::Request::post(path)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(id) = id {
            request = request.header("mcp-session-id", id);
        }
        if let Some(token) = bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        transport.send(request.body(axum::body::Body::from(message.to_string())).unwrap()).await.expect("answered")
    }

    async fn open(base: &str, path: &str, bearer: Option<String>) -> Session {
        let transport = Transport::new(base).unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let answer = Self::post(&transport, path, None, bearer.as_deref(), &init).await;
        let id = answer.headers["mcp-session-id"].to_str().unwrap().to_owned();
        Self::post(
            &transport,
            path,
            Some(&id),
            bearer.as_deref(),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        Session { transport, path: path.to_owned(), id, bearer }
    }

    /// Calls a tool; answers whether its result was not an error.
    async fn call(&self, tool: &str, arguments: &Value) -> bool {
        let message = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let answer = Self::post(&self.transport, &self.path, Some(&self.id), self.bearer.as_deref(), &message).await;
        let text = String::from_utf8_lossy(&answer.bytes);
        text.contains("\"isError\":false")
    }
}

fn main() {
    let connections = arg("--connections", 8) as usize;
    let seconds = arg("--seconds", 5);
    let rounds = arg("--rounds", 3) as usize;
    let products = arg("--products", 2_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = NodeConfig::local_home(dir.path().join("home"), "127.0.0.1:0".parse().unwrap(), "127.0.0.1:0".parse().unwrap());
        config.retrieval_limits.requests_per_second = 1_000_000;
        config.retrieval_limits.query_cost_per_minute = u64::MAX / 4;
        config.verify_per_second = 1_000_000;
        let node = Node::start(config, Arc::new(SystemClock)).await.unwrap();
        let state = node.state.clone();
        let corpus = generate(5, Sizes::products_only(4, products as usize / 4));
        let country = corpus.businesses[0].country.clone();
        ensure_seeded(&state, &corpus, &|_| {}).await.unwrap();
        let company = admin(&state, "POST", "/admin/companies", json!({"name": "Bench AI"})).await.unwrap();
        let uuid = company["ai_company_uuid"].as_str().unwrap();
        let group = admin(&state, "POST", &format!("/admin/companies/{uuid}/groups"), json!({"name": "bench"})).await.unwrap();
        let key = SigningKey::from_seed(Alg::Ed25519, &[9; 32]).unwrap();
        let group_id = group["ai_group_id"].as_str().unwrap();
        let reg = admin(&state, "POST", &format!("/admin/groups/{group_id}/retrieval-keys"), json!({"jwk": key.verifying_key().to_jwk()}))
            .await
            .unwrap();
        let grant = reg["sandbox_key_grant"].as_str().unwrap().to_owned();
        let base = format!("http://{}", node.addr);
        let search = json!({"filter": {"all": [{"country": country}]}, "sort_by": "published_at:desc", "limit": 10});
        let client = Arc::new(RetrievalClient::new(&base, AUTHORITY, key.clone(), Some(grant.clone())).unwrap());
        for _ in 0..400 {
            let answer = client.call("POST", "/v1/products/search", search.to_string().into_bytes()).await.unwrap();
            if answer.json()["rows"].as_array().is_some_and(|r| r.len() == 10) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }

        // svc mcp, in-process, over Streamable HTTP.
        let key_file = dir.path().join("ai.json");
        svc_client::keyfile::write(&key_file, &key).unwrap();
        let anchors = RootAnchors { classical: state.keys.root.classical.verifying_key(), post_quantum: state.keys.root.post_quantum.verifying_key() };
        let anchors_file = dir.path().join("anchors.json");
        std::fs::write(&anchors_file, svc_client::anchors::document(&anchors).to_string()).unwrap();
        let own_config: svc::own_mcp::config::OwnConfig = toml::from_str(&format!(
            "version = 1\nenvironment = \"sandbox\"\napi_base_url = \"{base}\"\npublic_base_url = \"http://{AUTHORITY}\"\n\
             key = {{ file = \"{}\" }}\nanchors_file = \"{}\"\nsandbox_key_grant = \"{grant}\"\n[transport]\ntype = \"http\"\nport = 0\n",
            key_file.display(),
            anchors_file.display()
        ))
        .unwrap();
        let transport = own_config.transport.clone();
        let own = svc::own_mcp::own(own_config, &svc_client::trust::Trust::system()).unwrap();
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let (own_addr, _served) = svc::own_mcp::serve_http(own, &transport, None, shutdown).await.unwrap();
        let own_base = format!("http://{own_addr}");

        // (a) search: raw HTTP against svc mcp.
        let run = Duration::from_secs(seconds);
        let (mut raw, mut mcp) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            raw.push(
                turn(connections, run, || {
                    let (client, body) = (client.clone(), search.to_string().into_bytes());
                    move || {
                        let (client, body) = (client.clone(), body.clone());
                        async move {
                            let answer = client.call("POST", "/v1/products/search", body).await.unwrap();
                            assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
                        }
                    }
                })
                .await,
            );
            mcp.push(mcp_turn(&own_base, "/mcp", "search_products", &search, connections, run).await);
        }
        let title = format!("search, {products} products, 10 rows, {connections} connections, median of {rounds} turns of {seconds} s");
        print_pair(&title, ("raw HTTP", &raw), ("svc mcp", &mcp));

        // What svc mcp adds of its own per search: the offline check alone,
        // on one core.
        let answer = client.call("POST", "/v1/products/search", search.to_string().into_bytes()).await.unwrap();
        let body: Value = serde_json::from_slice(&answer.bytes).unwrap();
        let document = client.key_set().await.unwrap().json();
        let keys = svc_core::keyset::verify(&document, &anchors).unwrap();
        let me = key.verifying_key().thumbprint();
        let started = Instant::now();
        let mut checks = 0u32;
        while started.elapsed() < Duration::from_secs(2) {
            std::hint::black_box(svc_core::offline::check_search(&body, &keys, &me).unwrap());
            checks += 1;
        }
        println!(
            "  the offline check of one answer (receipt and 10 rows), one core: {:.0} µs",
            started.elapsed().as_secs_f64() * 1e6 / f64::from(checks)
        );

        // (b) public verify: POST /v1/verify against the public server's tool.
        let records = state.store.scan::<RecordHead>(cf::RECORDS, &[], None, 1).unwrap();
        let head = &records[0].1;
        let version = state.registry.record_version(&head.record_id, head.live_generation).unwrap().unwrap();
        let verify = json!({
            "record_base64": svc_core::b64::std_encode(&version.bytes),
            "seal": serde_json::from_slice::<Value>(&version.seal).unwrap(),
            "row": serde_json::from_slice::<Value>(&version.row).unwrap(),
            "sidecar": serde_json::from_slice::<Value>(&version.sidecar).unwrap(),
        });
        let (mut raw, mut mcp) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            raw.push(
                turn(connections, run, || {
                    let (transport, body) = (Transport::new(&base).unwrap(), verify.to_string());
                    move || {
                        let request = axum::http::Request::post("/v1/verify")
                            .header("host", AUTHORITY)
                            .header("content-type", "application/json")
                            .body(axum::body::Body::from(body.clone()))
                            .unwrap();
                        let transport = transport.clone();
                        async move { assert_eq!(transport.send(request).await.unwrap().status, 200) }
                    }
                })
                .await,
            );
            mcp.push(mcp_turn(&base, "/v1/mcp/public", "verify", &verify, connections, run).await);
        }
        let title = format!("verify (product, batch seal, row, sidecar), {connections} connections, median of {rounds} turns of {seconds} s");
        print_pair(&title, ("POST /v1/verify", &raw), ("public MCP", &mcp));
        node.stop().await;
    });
}
