//! The public MCP server across regions, over TCP: `svc up`'s home and two
//! read regions behind its front door. A session opened at one region is
//! reached through the door wherever the caller stands; a read region asks
//! home for what only home signs.

use serde_json::{Value, json};
use svc::commands::up::{Plan, Up};
use svc_client::transport::{Answer, Transport};
use svc_http::front_door::REGION_HEADER;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::ensure_seeded;

const LEGACY: &str = "2025-11-25";

async fn mcp(base: &str, session: Option<&str>, message: &Value) -> Answer {
    let mut request = axum::http::Request::post("/v1/mcp/public")
        .header("host", "api.svc.localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", LEGACY);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let request = request.body(axum::body::Body::from(message.to_string())).unwrap();
    Transport::new(base).unwrap().send(request).await.unwrap()
}

fn message(answer: &Answer) -> Value {
    String::from_utf8_lossy(&answer.bytes)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| answer.json())
}

fn region_of(answer: &Answer) -> String {
    answer.headers.get(REGION_HEADER).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

async fn open(base: &str) -> (String, Answer) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "regions", "version": "1"}}});
    let answer = mcp(base, None, &init).await;
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    let id = answer.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let done = mcp(base, Some(&id), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(done.status, 202);
    (id, answer)
}

async fn call(base: &str, session: &str, tool: &str, arguments: Value) -> (Answer, Value) {
    let answer = mcp(
        base,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}),
    )
    .await;
    let result = message(&answer)["result"].clone();
    (answer, result)
}

// rule: R4.4.1, R4.4.6, R4.4.7
#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_reached_through_the_front_door_from_anywhere_and_read_regions_ask_home() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::on_free_ports(dir.path().to_owned());
    let mut up = Up::start(&plan).await.unwrap();
    let door = format!("http://{}", up.door.addr);
    let url = |i: usize| format!("http://{}", up.nodes[i].addr);
    let corpus = generate(14, Sizes::products_only(1, 3));
    ensure_seeded(&up.nodes[0].state, &corpus, &|_| {}).await.unwrap();
    let uuid = up.nodes[0].state.registry.businesses().unwrap()[0].uuid.clone();

    // A session opened at ap, then used through the door, whose nearest
    // region is eu: the door sends it to ap, which the id names.
    let (at_ap, _) = open(&url(2)).await;
    assert!(at_ap.starts_with("ap."), "{at_ap}");
    let listed = mcp(&door, Some(&at_ap), &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await;
    assert_eq!(listed.status, 200);
    assert_eq!(region_of(&listed), "ap");
    assert_eq!(message(&listed)["result"]["tools"].as_array().unwrap().len(), 8);
    // At eu directly it is unknown: a session lives in one region.
    assert_eq!(
        mcp(&url(1), Some(&at_ap), &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})).await.status,
        404
    );

    // A read region asks home for what only home signs, and answers it as
    // its public route does.
    let (at_eu, _) = open(&url(1)).await;
    let mut keys = None;
    for _ in 0..400 {
        let (_, result) = call(&url(1), &at_eu, "keys", json!({"business_uuid": uuid})).await;
        if result["isError"] != true {
            keys = Some(result);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let keys = keys.expect("eu answers a business's keys, through home");
    let route = Transport::new(&url(1))
        .unwrap()
        .send(
            axum::http::Request::get(format!("/v1/certificates/{uuid}/keys"))
                .header("host", "api.svc.localhost")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(route.status, 200);
    assert_eq!(keys["content"][0]["text"].as_str().unwrap().as_bytes(), route.bytes.as_slice());
    let (_, verified) = call(&url(1), &at_eu, "verify", json!({"record_base64": "e30=", "seal": {}})).await;
    let statement: Value = serde_json::from_str(verified["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(statement.get("statement").is_some() || statement.get("code").is_some(), "{statement}");
    assert_eq!(verified["isError"] == true, statement.get("code").is_some());

    // ap goes down: its sessions are gone, and the door says so as for any
    // ended session (404), so the client opens a new one elsewhere.
    let ap = up.nodes.remove(2);
    ap.stop().await;
    let gone = mcp(&door, Some(&at_ap), &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})).await;
    assert_eq!(gone.status, 404);
    let (again, opened) = open(&door).await;
    assert_eq!(again.split('.').next(), Some(region_of(&opened).as_str()), "the id names the region that opened it");
    up.stop().await;
}
