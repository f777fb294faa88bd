//! The transparency log through its public routes: seals, key events and
//! receipt minutes sequenced into signed C2SP checkpoints, inclusion proofs
//! (two levels for a receipt), consistency between checkpoints, and the log
//! kept across a restart.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};
use svc_core::dsse::Envelope;
use svc_core::merkle::{self, Hash};
use svc_core::tlog::{self, Checkpoint, ReceiptMinute, ReceiptProof, parse_path};
use svc_node::actors::receipt_folder::ReceiptFolderMsg;

const ORIGIN: &str = "api.svc.localhost/log";

fn get(path: &str) -> Request<Body> {
    Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap()
}

fn lamp_search() -> Value {
    json!({"collection": "products", "q": "lampe", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})
}

fn lamp(sku: &str) -> Vec<u8> {
    product("Lumen", sku, "19.90")
}

async fn sequence(home: &Home) -> Value {
    let answer = home.admin("POST", "/admin/log/sequence", json!({})).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// Opens a checkpoint note under home's log-checkpoint key.
fn open(home: &Home, note: &str) -> Checkpoint {
    Checkpoint::open(note, ORIGIN, &home.state.keys.checkpoint.verifying_key()).expect("a checkpoint home signed")
}

/// Asks for a leaf's proof and checks it against the checkpoint it names.
async fn proven(home: &Home, leaf: &[u8], tree_size: Option<u64>) -> (u64, Checkpoint, Value) {
    let name = tlog::leaf_name(leaf);
    let path = match tree_size {
        Some(size) => format!("/v1/log/proof?leaf_hash={name}&tree_size={size}"),
        None => format!("/v1/log/proof?leaf_hash={name}"),
    };
    let answer = home.send(get(&path)).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let checkpoint = open(home, answer.body["checkpoint"].as_str().unwrap());
    let index = answer.body["leaf_index"].as_u64().unwrap();
    let path = parse_path(&answer.body["inclusion_path"]).unwrap();
    checkpoint.check_inclusion(&merkle::leaf_hash(leaf), index, &path).expect("the leaf is in the checkpoint's tree");
    assert_eq!(answer.body["leaf"].as_str().unwrap().as_bytes(), leaf, "the leaf's bytes are served");
    (index, checkpoint, answer.body)
}

// rule: P4.2.14, P4.2.15, P4.2.39, P4.2.40, P4.2.41, P4.2.56, P8.19, P3.20
#[tokio::test(flavor = "multi_thread")]
async fn seals_keys_and_receipt_minutes_are_sequenced_into_signed_checkpoints_with_proofs() {
    let home = Home::start().await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    let records = vec![lamp("l-1"), lamp("l-2"), lamp("l-3")];
    let published = home.publish(&business, &records, "first").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let caller = home.caller("Reader").await;
    home.wait_indexed().await;
    let found = home.search(&caller, "/v1/search", lamp_search()).await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    assert_eq!(found.body["rows"].as_array().unwrap().len(), 3);

    // The batch seal's leaf: its envelope in canonical form, shared by its records.
    let fetched = home
        .signed(
            &caller.key,
            "GET",
            &format!("/v1/records/{}", found.body["rows"][0]["record_id"].as_str().unwrap()),
            b"",
            "svc-retrieval",
            &[],
        )
        .await;
    assert_eq!(fetched.status, 200, "{:?}", fetched.body);
    let batch_seal = Envelope::from_value(&fetched.body["seal"]["batch_seal"]).unwrap();
    let seal_leaf = tlog::seal_leaf(&batch_seal);
    assert_eq!(fetched.body["provenance"]["log_leaf"].as_str(), Some(tlog::leaf_name(&seal_leaf).as_str()));

    // A fresh seal is not in the log until the hour is sequenced.
    let early = home.send(get(&format!("/v1/log/proof?leaf_hash={}", tlog::leaf_name(&seal_leaf)))).await;
    assert_eq!(early.status, 404);
    assert_eq!(early.body["code"], "not_found");
    assert_eq!(early.headers["access-control-allow-origin"], "*", "a problem is open to any origin too");

    // The receipt's minute closes, is folded, and is queued for the log.
    home.clock.advance(90_000);
    let folded = home.state.receipt_folder.call(ReceiptFolderMsg::Fold).await.unwrap().unwrap();
    assert!(folded >= 1);
    let first = sequence(&home).await;
    let size1 = first["tree_size"].as_u64().unwrap();
    assert!(size1 >= 4, "a seal, four keys' events and a receipt minute at least: {first}");

    // The checkpoint, as JSON and as the bare note witnesses read.
    let cp = home.send(get("/v1/log/checkpoint")).await;
    assert_eq!(cp.status, 200);
    assert_eq!(cp.headers["access-control-allow-origin"], "*");
    assert_eq!(cp.headers["cache-control"], "public, max-age=60");
    assert_eq!(cp.body["origin"], ORIGIN);
    assert_eq!(cp.body["tree_size"], size1);
    let checkpoint1 = open(&home, cp.body["checkpoint"].as_str().unwrap());
    assert_eq!(checkpoint1.size, size1);
    assert_eq!(merkle::root_form(&checkpoint1.root), cp.body["root_hash"]);
    let mut note_request = get("/v1/log/checkpoint");
    note_request.headers_mut().insert("accept", "text/plain".parse().unwrap());
    let note = home.send(note_request).await;
    assert_eq!(note.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(String::from_utf8(note.bytes).unwrap(), cp.body["checkpoint"].as_str().unwrap());

    // The batch seal is in it.
    let (_, _, seal_answer) = proven(&home, &seal_leaf, None).await;
    assert_eq!(seal_answer["kind"], "seal");

    // The integration key's `key_added` event is in it.
    let key = home.state.registry.integration_key(&business.key_id).unwrap().unwrap();
    let added = tlog::key_added_leaf(&business.uuid, &business.key_id, "integration", key.valid_from);
    let (_, _, key_answer) = proven(&home, &added, None).await;
    assert_eq!(key_answer["kind"], "key_added");

    // The receipt, in two levels: in its minute, and the minute in the log.
    let receipt_bytes = svc_core::canonical::to_signed_bytes(&found.body["receipt"]).unwrap();
    let receipt_name = tlog::leaf_name(&receipt_bytes);
    let two = home.send(get(&format!("/v1/log/proof?receipt={receipt_name}"))).await;
    assert_eq!(two.status, 200, "{:?}", two.body);
    assert_eq!(two.body["region"], "home");
    let log = &two.body["log"];
    let minute = ReceiptMinute::parse(two.body["minute_leaf"].as_str().unwrap().as_bytes()).unwrap();
    let proof = ReceiptProof {
        index: two.body["index"].as_u64().unwrap(),
        path: parse_path(&two.body["path"]).unwrap(),
        minute,
        leaf_index: log["leaf_index"].as_u64().unwrap(),
        log_path: parse_path(&log["inclusion_path"]).unwrap(),
    };
    let at = open(&home, log["checkpoint"].as_str().unwrap());
    proof.check(&receipt_bytes, &at).expect("the receipt is proven into the checkpoint");
    let other = svc_core::canonical::to_signed_bytes(&json!({"not": "this receipt"})).unwrap();
    assert!(proof.check(&other, &at).is_err());

    // Nothing new: the same checkpoint, not a second one.
    assert_eq!(sequence(&home).await["tree_size"], size1);

    // More leaves; the new checkpoint is consistent with the first.
    home.clock.advance(3_600_000);
    let more = home.publish(&business, &[lamp("l-4")], "second").await;
    assert_eq!(more.status, 200, "{:?}", more.body);
    let size2 = sequence(&home).await["tree_size"].as_u64().unwrap();
    assert!(size2 > size1);
    let consistent = home.send(get(&format!("/v1/log/proof?from={size1}&to={size2}"))).await;
    assert_eq!(consistent.status, 200, "{:?}", consistent.body);
    assert_eq!(consistent.headers["cache-control"], "public, max-age=31536000", "pinned sizes never change");
    let checkpoint2 = open(&home, consistent.body["checkpoint"].as_str().unwrap());
    let path = parse_path(&consistent.body["consistency_path"]).unwrap();
    checkpoint1.check_consistency(&checkpoint2, &path).expect("the second checkpoint extends the first");
    let forged = Checkpoint { root: [7; 32], ..checkpoint1.clone() };
    assert_eq!(forged.check_consistency(&checkpoint2, &path), Err(svc_core::Reason::ConsistencyInvalid));
    // A leaf proven at the first checkpoint still is, at its size.
    let (_, pinned, _) = proven(&home, &seal_leaf, Some(size1)).await;
    assert_eq!(pinned, checkpoint1);

    // Refusals are problems.
    for bad in [
        "/v1/log/proof",
        "/v1/log/proof?leaf_hash=sha256:zz",
        "/v1/log/proof?from=0",
        "/v1/log/proof?leaf_hash=sha256:00&from=1",
        "/v1/log/checkpoint?format=xml",
        "/v1/log/proof?surprise=1",
    ] {
        let answer = home.send(get(bad)).await;
        assert_eq!(answer.status, 400, "{bad}: {:?}", answer.body);
        assert_eq!(answer.body["code"], "request_invalid", "{bad}");
    }
    let missing = home.send(get("/v1/log/checkpoint?tree_size=999999")).await;
    assert_eq!(missing.status, 404);
}

// rule: P4.2.39
#[tokio::test(flavor = "multi_thread")]
async fn waiting_leaves_and_the_log_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let home = Home::start_in(dir).await;
    let business = home.business("Lumen", products_scope(1_000)).await;
    let size1 = sequence(&home).await["tree_size"].as_u64().unwrap();
    let records = vec![lamp("l-1")];
    let seal = home.batch_seal(&business, &records, 1, 0, home.clock.now());
    let body = home.publish_body(&seal, &records);
    let published = home
        .signed(&business.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", "p")])
        .await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    home.state.stop_actors().await;
    let Home { dir, state, .. } = home;
    drop(state);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let home = Home::start_in(dir).await;
    assert_eq!(home.dir.path(), path);
    let size2 = sequence(&home).await["tree_size"].as_u64().unwrap();
    assert_eq!(size2, size1 + 1, "the seal queued before the restart is sequenced after it");
    let leaf: Hash = merkle::leaf_hash(&tlog::seal_leaf(&seal));
    let answer = home.send(get(&format!("/v1/log/proof?leaf_hash={}", merkle::root_form(&leaf)))).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let consistent = home.send(get(&format!("/v1/log/proof?from={size1}"))).await;
    let old = home.send(get(&format!("/v1/log/checkpoint?tree_size={size1}"))).await;
    let checkpoint1 = open(&home, old.body["checkpoint"].as_str().unwrap());
    let checkpoint2 = open(&home, consistent.body["checkpoint"].as_str().unwrap());
    checkpoint1
        .check_consistency(&checkpoint2, &parse_path(&consistent.body["consistency_path"]).unwrap())
        .expect("the log rebuilt after a restart extends what it signed before");
}
