//! The hosted public MCP server (`POST /v1/mcp/public`) spoken to as raw
//! Streamable HTTP through the real public router: sessions, every tool
//! against its HTTP route byte for byte, and every bad input answered.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};

const PATH: &str = "/v1/mcp/public";
/// A client of the revision before 2026-07-28, which opens sessions.
const LEGACY: &str = "2025-11-25";

fn mcp_post(session: Option<&str>, message: &Value) -> Request<Body> {
    mcp_post_bytes(session, serde_json::to_vec(message).unwrap(), "application/json, text/event-stream")
}

fn mcp_post_bytes(session: Option<&str>, body: Vec<u8>, accept: &str) -> Request<Body> {
    let mut builder = Request::post(PATH)
        .header("host", AUTHORITY)
        .header("content-type", "application/json")
        .header("accept", accept)
        .header("mcp-protocol-version", LEGACY);
    if let Some(id) = session {
        builder = builder.header("mcp-session-id", id);
    }
    let mut request = builder.body(Body::from(body)).unwrap();
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.1:50000".parse().unwrap()));
    request
}

/// One public router for a test: its MCP sessions live as long as it does,
/// as a node's do.
struct Surface {
    router: axum::Router,
}

impl Surface {
    fn of(home: &Home) -> Surface {
        Surface { router: svc_http::surfaces::public_router(home.state.clone()) }
    }

    async fn send(&self, request: Request<Body>) -> Answer {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer { status, headers, body, bytes }
    }
}

/// The JSON-RPC message an answer carries, as JSON or as the data of a
/// server-sent event.
pub fn message_of(answer: &Answer) -> Value {
    if !answer.body.is_null() {
        return answer.body.clone();
    }
    let text = String::from_utf8_lossy(&answer.bytes);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or(Value::Null)
}

fn initialize(client: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}})
}

fn end(session: &str) -> Request<Body> {
    let mut delete =
        Request::delete(PATH).header("host", AUTHORITY).header("mcp-session-id", session).body(Body::empty()).unwrap();
    delete
        .extensions_mut()
        .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.1:50000".parse().unwrap()));
    delete
}

/// Opens a session: `initialize`, then `notifications/initialized`.
async fn open(mcp: &Surface) -> String {
    let answer = mcp.send(mcp_post(None, &initialize("svc-test"))).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    let id = answer.headers.get("mcp-session-id").expect("the initialize answer carries Mcp-Session-Id");
    let id = id.to_str().unwrap().to_owned();
    assert_eq!(message_of(&answer)["result"]["serverInfo"]["name"], "svc-public");
    let done = mcp.send(mcp_post(Some(&id), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))).await;
    assert_eq!(done.status, 202);
    id
}

async fn call(mcp: &Surface, session: &str, tool: &str, arguments: Value) -> Value {
    let message =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let answer = mcp.send(mcp_post(Some(session), &message)).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    message_of(&answer)
}

/// The first text block of a tool result, and whether it was an error.
fn first_block(message: &Value) -> (String, bool) {
    let result = &message["result"];
    (result["content"][0]["text"].as_str().unwrap_or_default().to_owned(), result["isError"] == true)
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap()
}

// rule: R4.4.1, R4.4.2, R4.4.4, R4.4.5, R4.4.6, R4.4.11, P4.2.16, P4.2.17
#[tokio::test(flavor = "multi_thread")]
async fn the_public_server_lists_its_tools_and_each_answers_its_routes_body_byte_for_byte() {
    let home = Home::start().await;
    let shop = home.business("Lumen", products_scope(100)).await;
    let mcp = Surface::of(&home);
    let session = open(&mcp).await;
    assert!(session.starts_with("home."), "the id names the region that opened it: {session}");

    let listed = message_of(
        &mcp.send(mcp_post(Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))).await,
    );
    let mut names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["certificate", "keys", "log_checkpoint", "log_proof", "projection", "spec", "verify", "vocabularies"]
    );
    for tool in listed["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(
            tool["inputSchema"]["additionalProperties"], false,
            "arguments outside the schema are refused: {tool}"
        );
    }

    // Each tool against the route it mirrors; a refusal is the route's problem.
    let uuid = shop.uuid.as_str();
    let cases: Vec<(&str, Value, String)> = vec![
        ("certificate", json!({"business_uuid": uuid}), format!("/v1/certificates/{uuid}")),
        (
            "certificate",
            json!({"business_uuid": "0b6f6a1e-1c1d-4a3e-9b1f-6a0d1c2e3f40"}),
            "/v1/certificates/0b6f6a1e-1c1d-4a3e-9b1f-6a0d1c2e3f40".into(),
        ),
        ("keys", json!({}), "/.well-known/keys".into()),
        ("keys", json!({"business_uuid": uuid}), format!("/v1/certificates/{uuid}/keys")),
        ("keys", json!({"business_uuid": uuid, "custody": true}), format!("/v1/certificates/{uuid}/key-custody")),
        ("projection", json!({"record_type": "products", "version": "1"}), "/v1/projections/products/1".into()),
        ("projection", json!({"record_type": "products", "version": "9"}), "/v1/projections/products/9".into()),
        ("spec", json!({}), "/v1/verification-index".into()),
        ("log_checkpoint", json!({}), "/v1/log/checkpoint".into()),
        ("log_proof", json!({"from": 0}), "/v1/log/proof?from=0".into()),
        ("vocabularies", json!({}), "/v1/vocabularies".into()),
        ("vocabularies", json!({"name": "employment_types"}), "/v1/vocabularies/employment_types".into()),
        ("vocabularies", json!({"name": "colours"}), "/v1/vocabularies/colours".into()),
    ];
    for (tool, arguments, route) in cases {
        let http = home.send(get(&route)).await;
        let (text, is_error) = first_block(&call(&mcp, &session, tool, arguments.clone()).await);
        assert_eq!(is_error, http.status != 200, "{tool} {arguments}: {text}");
        assert_eq!(text.as_bytes(), http.bytes.as_slice(), "{tool} {arguments} answers {route}'s body byte for byte");
    }
    let index = home.send(get("/v1/verification-index")).await.body;
    assert!(
        index["vocabularies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "employment_types" && v["url"] == "/v1/vocabularies/employment_types")
    );

    // verify: the same judgement as POST /v1/verify, the statement signed afresh.
    let bad = json!({"record_base64": svc_core::b64::std_encode(b"{\"not\":\"sealed\"}"), "seal": {"payloadType": "x", "payload": "", "signatures": []}});
    let (text, is_error) = first_block(&call(&mcp, &session, "verify", bad.clone()).await);
    let http = home
        .send(
            Request::post("/v1/verify")
                .header("host", AUTHORITY)
                .header("content-type", "application/json")
                .body(Body::from(bad.to_string()))
                .unwrap(),
        )
        .await;
    let mut through_mcp: Value = serde_json::from_str(&text).unwrap();
    let mut through_http = http.body.clone();
    assert_eq!(is_error, http.status != 200, "{text}");
    through_mcp.as_object_mut().map(|o| o.remove("statement"));
    through_http.as_object_mut().map(|o| o.remove("statement"));
    assert_eq!(through_mcp, through_http);
    let (text, is_error) = first_block(&call(&mcp, &session, "verify", json!({"key_events": "sometimes"})).await);
    assert!(is_error);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["code"], "request_invalid");
}

// rule: R4.4.6, R4.4.7, R4.4.9, R4.4.10, R4.4.11
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_answered_clearly() {
    let home = Home::start().await;
    let mcp = Surface::of(&home);
    let session = open(&mcp).await;

    // GET is 405, naming what is allowed.
    let mut request = get(PATH);
    request.headers_mut().insert("accept", "text/event-stream".parse().unwrap());
    request.headers_mut().insert("mcp-session-id", session.parse().unwrap());
    let answer = mcp.send(request).await;
    assert_eq!(answer.status, 405);
    assert_eq!(answer.headers["allow"], "POST, DELETE");
    assert_eq!(answer.headers["content-type"], "application/problem+json");

    // A client must accept both JSON and server-sent events.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let answer = mcp.send(mcp_post_bytes(Some(&session), list.to_string().into_bytes(), "application/json")).await;
    assert_eq!(answer.status, 406);

    // Malformed JSON-RPC, an unknown tool, arguments outside the schema.
    let answer =
        mcp.send(mcp_post_bytes(Some(&session), b"{not json".to_vec(), "application/json, text/event-stream")).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body["error"]["code"], -32700, "a JSON-RPC parse error");
    let unknown = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search_products", "arguments": {}}});
    let answer = message_of(&mcp.send(mcp_post(Some(&session), &unknown)).await);
    assert!(answer["error"]["code"].is_i64() || answer["result"]["isError"] == true, "{answer}");
    let outside = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "certificate", "arguments": {"business_uuid": "x", "surprise": 1}}});
    let (text, is_error) = first_block(&message_of(&mcp.send(mcp_post(Some(&session), &outside)).await));
    assert!(is_error && text.contains("unknown field `surprise`"), "{text}");
    let wrong_type = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "log_checkpoint", "arguments": {"tree_size": "ten"}}});
    let (text, is_error) = first_block(&message_of(&mcp.send(mcp_post(Some(&session), &wrong_type)).await));
    assert!(is_error && text.contains("expected u64"), "{text}");

    // A message over the limit, declared: refused before it is read.
    let big = vec![b' '; svc_http::mcp::public::MAX_MESSAGE + 1];
    let answer = mcp.send(mcp_post_bytes(Some(&session), big, "application/json, text/event-stream")).await;
    assert_eq!(answer.status, 413);
    assert_eq!(answer.body["code"], "record_too_large");
    // ...and one sent in chunks, stopped at the limit.
    let chunks =
        futures::stream::iter((0..100).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 8 * 1024]))));
    let mut chunked = mcp_post(Some(&session), &list);
    *chunked.body_mut() = Body::from_stream(chunks);
    let answer = mcp.send(chunked).await;
    assert_eq!(answer.status, 413);
    assert_eq!(answer.body["code"], "record_too_large");

    // A request other than initialize without a session; an unknown session.
    assert_eq!(mcp.send(mcp_post(None, &list)).await.status / 100, 4);
    assert_eq!(mcp.send(mcp_post(Some("home.feedface"), &list)).await.status, 404);
    assert_eq!(mcp.send(mcp_post(Some("ap.feedface"), &list)).await.status, 404);

    // The id is bound to the address that opened it: from another, 404.
    let mut elsewhere = mcp_post(Some(&session), &list);
    elsewhere
        .extensions_mut()
        .insert(axum::extract::ConnectInfo::<std::net::SocketAddr>("127.0.0.2:50000".parse().unwrap()));
    assert_eq!(mcp.send(elsewhere).await.status, 404);
    assert_eq!(mcp.send(mcp_post(Some(&session), &list)).await.status, 200, "still open for its own address");

    // DELETE with the session id ends it; then it is 404.
    assert_eq!(mcp.send(end(&session)).await.status, 202);
    assert_eq!(mcp.send(mcp_post(Some(&session), &list)).await.status, 404);
}

// Nobody takes every place: one address opening session after session ends
// its own quietest, and past the node's cap a newcomer ends the quietest
// anywhere, rather than being told to wait; open sessions keep working.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_past_an_addresss_share_or_the_cap_end_the_quietest_not_the_newcomer() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.mcp.public_sessions = 20;
        config.mcp.sessions_per_address = 10;
    })
    .await;
    let mcp = Surface::of(&home);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let from = |at: &str, session: Option<&str>, message: &Value| {
        let mut request = mcp_post(session, message);
        let peer: std::net::SocketAddr = format!("{at}:50000").parse().unwrap();
        request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        request
    };
    let mut mine = Vec::new();
    for _ in 0..11 {
        let answer = mcp.send(from("127.0.0.1", None, &initialize("mine"))).await;
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        mine.push(answer.headers["mcp-session-id"].to_str().unwrap().to_owned());
    }
    assert_eq!(mcp.send(from("127.0.0.1", Some(&mine[0]), &list)).await.status, 404, "its quietest ended");
    assert_eq!(mcp.send(from("127.0.0.1", Some(&mine[10]), &list)).await.status, 200);
    let mut theirs = Vec::new();
    for _ in 0..10 {
        let answer = mcp.send(from("127.0.0.2", None, &initialize("theirs"))).await;
        theirs.push(answer.headers["mcp-session-id"].to_str().unwrap().to_owned());
    }
    // The node holds 20; a newcomer ends the quietest of all (mine[1]).
    let newcomer = mcp.send(from("127.0.0.3", None, &initialize("newcomer"))).await;
    assert_eq!(newcomer.status, 200);
    assert_eq!(mcp.send(from("127.0.0.1", Some(&mine[1]), &list)).await.status, 404);
    assert_eq!(mcp.send(from("127.0.0.2", Some(&theirs[0]), &list)).await.status, 200, "the others go on");
}

// rule: R4.4.8, R8.23
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_ends_and_frees_its_place() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.mcp.public_sessions = 1;
        config.mcp.session_idle_ms = 1000;
    })
    .await;
    assert_eq!(svc_node::config::McpConfig::default().session_idle_ms, 30 * 60 * 1000, "30 minutes unless configured");
    let mcp = Surface::of(&home);
    let session = open(&mcp).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Untouched (any request would be activity) for twice its idle time.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(mcp.send(mcp_post(Some(&session), &list)).await.status, 404, "an idle session ends");
    assert_eq!(mcp.send(mcp_post(None, &initialize("third"))).await.status, 200, "its place is free again");
}
