//! The transparency log as standard tooling reads it (issue 30, item 2):
//! the C2SP tile layout read by an independent tile client (`tlog_tiles`,
//! a port of Go's sumdb/tlog) and notes checked by an independent note
//! verifier (`signed_note`); witnesses speaking c2sp.org/tlog-witness, one
//! honest (written here from the protocol's text, checking proofs with the
//! same independent crate), one that signs wrongly and one that answers late.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use serde_json::{Value, json};
use signed_note::{Note, StandardVerifier, Verifier, VerifierList};
use svc_core::keys::{Alg, SigningKey};
use svc_store::model::LeafKind;
use tlog_tiles::{HashReader, Tile, TileHashReader, TileReader};

const ORIGIN: &str = "api.svc.localhost/log";

/// Queues `n` leaves of made-up data and sequences them into a checkpoint.
async fn grow(home: &Home, from: usize, n: usize) -> Value {
    let mut batch = home.state.store.batch();
    for i in from..from + n {
        let data = format!("{{\"kind\":\"test\",\"n\":{i}}}").into_bytes();
        home.clock.advance(1);
        svc_node::transparency::queue_in_batch(&mut batch, LeafKind::Seal, data, home.clock.now());
    }
    batch.commit().unwrap();
    let answer = home.admin("POST", "/admin/log/sequence", json!({})).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// The note verifier a monitor configures from the log's published key.
fn log_verifier(home: &Home) -> StandardVerifier {
    let vkey = svc_core::tlog::verifier_key(ORIGIN, &home.state.keys.checkpoint.verifying_key()).unwrap();
    StandardVerifier::new(&vkey).unwrap()
}

/// The tile client's paths carry the tile height (Go's sumdb layout);
/// C2SP's omit it and call the data tiles `entries`.
fn c2sp_path(tile: &Tile) -> String {
    let path = tile.path();
    let rest = path.strip_prefix("tile/8/").expect("height 8");
    match rest.strip_prefix("data/") {
        Some(index) => format!("/log/tile/entries/{index}"),
        None => format!("/log/tile/{rest}"),
    }
}

/// Tiles fetched from the node's public routes, as a tile client asks.
struct Fetched {
    tiles: Mutex<HashMap<String, Vec<u8>>>,
    state: svc_node::region::Region,
}

impl Fetched {
    fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let request = Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap();
        let router = svc_http::surfaces::public_router(self.state.clone());
        tokio::runtime::Handle::current().block_on(async move {
            use http_body_util::BodyExt;
            use tower::ServiceExt;
            let response = router.oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            (status, response.into_body().collect().await.unwrap().to_bytes().to_vec())
        })
    }
}

impl TileReader for Fetched {
    fn height(&self) -> u8 {
        8
    }

    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        let mut out = Vec::new();
        for tile in tiles {
            let path = c2sp_path(tile);
            if let Some(bytes) = self.tiles.lock().unwrap().get(&path) {
                out.push(bytes.clone());
                continue;
            }
            let (status, bytes) = self.get(&path);
            assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&bytes));
            self.tiles.lock().unwrap().insert(path, bytes.clone());
            out.push(bytes);
        }
        Ok(out)
    }

    fn save_tiles(&self, _: &[Tile], _: &[Vec<u8>]) {}
}

fn entries(bundle: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bundle;
    while !rest.is_empty() {
        let n = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        out.push(&rest[2..2 + n]);
        rest = &rest[2 + n..];
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn an_independent_tile_client_reads_and_proves_the_log_from_its_tiles() {
    let home = Home::start().await;
    let before = home.get("/log/checkpoint").await;
    let first = String::from_utf8(before.bytes).unwrap();
    let start = first.lines().nth(1).unwrap().parse::<usize>().unwrap();
    let sequenced = grow(&home, 0, 256 * 3 + 44 - start).await;
    let size = sequenced["tree_size"].as_u64().unwrap();
    assert_eq!(size, 812);

    let checkpoint = home.get("/log/checkpoint").await;
    assert_eq!(checkpoint.status, 200);
    assert_eq!(checkpoint.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(checkpoint.headers["cache-control"], "public, max-age=5");
    let note = Note::from_bytes(&checkpoint.bytes).unwrap();
    let verifiers = VerifierList::new(vec![Box::new(log_verifier(&home))]);
    note.verify(&verifiers).expect("the log's signature verifies under an independent note verifier");
    let parsed = tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap();
    assert_eq!((parsed.origin(), parsed.size()), (ORIGIN, size));

    let state = home.state.clone();
    let root = *parsed.hash();
    tokio::task::spawn_blocking(move || {
        let fetched = Fetched { tiles: Mutex::default(), state };
        let reader = TileHashReader::new(size, root, &fetched);
        // The root from tiles alone equals the signed one (each tile is
        // checked against it as it is read).
        assert_eq!(tlog_tiles::tree_hash(size, &reader).unwrap(), root);
        let read: Vec<String> = fetched.tiles.lock().unwrap().keys().cloned().collect();
        assert!(read.iter().any(|p| p.ends_with("/003.p/44")), "the rightmost level 0 tile is partial: {read:?}");
        // Entries come from their bundles, hash to the level 0 tiles, and
        // prove into the checkpoint from tiles alone.
        for n in 0..4u64 {
            let width = if n < 3 { 256 } else { size - 768 };
            let (status, bytes) = fetched.get(&c2sp_path(&Tile::new(8, 0, n, width as u32, true)));
            assert_eq!(status, 200);
            let leaves = entries(&bytes);
            assert_eq!(leaves.len() as u64, width);
            for (i, leaf) in leaves.iter().enumerate() {
                let index = n * 256 + i as u64;
                let stored = reader.read_hashes(&[tlog_tiles::stored_hash_index(0, index)]).unwrap();
                assert_eq!(stored[0], tlog_tiles::record_hash(leaf), "entry {index} hashes to its tile hash");
                if i == 0 || i == leaves.len() - 1 {
                    let proof = tlog_tiles::prove_record(size, index, &reader).unwrap();
                    tlog_tiles::check_record(&proof, size, root, index, tlog_tiles::record_hash(leaf)).unwrap();
                }
            }
        }
    })
    .await
    .unwrap();

    // Tiles never change: cached for good, as bytes.
    let tile = home.get("/log/tile/0/000").await;
    assert_eq!(tile.status, 200);
    assert_eq!(tile.bytes.len(), 8192);
    assert_eq!(tile.headers["content-type"], "application/octet-stream");
    assert_eq!(tile.headers["cache-control"], "public, max-age=31536000");
    let level1 = home.get("/log/tile/1/000.p/3").await;
    assert_eq!(level1.bytes.len(), 96);
    let older = home.get("/log/tile/0/003.p/20").await;
    assert_eq!(older.status, 200, "a partial tile of an older tree is still served");
    assert_eq!(&older.bytes[..], &home.get("/log/tile/0/003.p/44").await.bytes[..20 * 32]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_or_absent_tile_is_a_problem() {
    let home = Home::start().await;
    grow(&home, 0, 10).await;
    for path in [
        "/log/tile/00/000",
        "/log/tile/64/000",
        "/log/tile/0/1",
        "/log/tile/0/x000/001",
        "/log/tile/0/000.p/0",
        "/log/tile/0/000.p/256",
        "/log/tile/0/000.p/01",
        "/log/tile/entries/000.p",
        "/log/tile/8/0/000",
        "/log/tile/data/000",
        "/log/tile/0/x999/x999/x999/x999/x999/x999/x999/x999/999",
        "/log/tile/0/000/",
    ] {
        let answer = home.get(path).await;
        assert_eq!(answer.status, 400, "{path}");
        assert_eq!(answer.body["code"], "request_invalid", "{path}");
        assert_eq!(answer.headers["content-type"], "application/problem+json", "{path}");
    }
    for path in ["/log/tile/0/000", "/log/tile/0/000.p/255", "/log/tile/1/000.p/1", "/log/tile/entries/001.p/1"] {
        let answer = home.get(path).await;
        assert_eq!(answer.status, 404, "{path}: beyond the newest checkpoint");
        assert_eq!(answer.body["code"], "not_found", "{path}");
    }
}

/// A witness written from c2sp.org/tlog-witness: it trusts the log's note
/// key, keeps the size it last cosigned, checks the consistency proof with
/// the independent tile crate, and answers an Ed25519 `cosignature/v1`.
#[derive(Clone)]
struct TestWitness {
    name: String,
    key: Arc<SigningKey>,
    /// The log's verifier key, set once the home it trusts has started.
    log: Arc<Mutex<String>>,
    cosigned: Arc<Mutex<(u64, [u8; 32])>>,
    asked: Arc<Mutex<Vec<String>>>,
    behaviour: Behaviour,
}

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Honest,
    SignsWrongly,
    Late,
}

impl TestWitness {
    fn vkey(&self) -> String {
        let id = &svc_core::digest::sha256(&[self.name.as_bytes(), b"\n\x04", &self.public()].concat())[..4];
        format!(
            "{}+{}+{}",
            self.name,
            hex::encode(id),
            svc_core::b64::std_encode(&[&[4u8][..], &self.public()].concat())
        )
    }

    fn public(&self) -> Vec<u8> {
        match self.key.verifying_key() {
            svc_core::keys::VerifyingKey::Ed25519(k) => k.as_bytes().to_vec(),
            _ => unreachable!(),
        }
    }

    fn answer(&self, body: &str) -> (StatusCode, Vec<(&'static str, &'static str)>, String) {
        self.asked.lock().unwrap().push(body.to_owned());
        let (head, note) = body.split_once("\n\n").unwrap();
        let mut lines = head.lines();
        let old: u64 = lines.next().unwrap().strip_prefix("old ").unwrap().parse().unwrap();
        let proof: Vec<tlog_tiles::Hash> =
            lines.map(|l| tlog_tiles::Hash(svc_core::b64::std_decode(l).unwrap().try_into().unwrap())).collect();
        let note = Note::from_bytes(note.as_bytes()).unwrap();
        let log = StandardVerifier::new(&self.log.lock().unwrap()).unwrap();
        let verifiers = VerifierList::new(vec![Box::new(log)]);
        if note.verify(&verifiers).is_err() {
            return (StatusCode::FORBIDDEN, vec![], String::new());
        }
        let checkpoint = tlog_tiles::Checkpoint::from_bytes(note.text()).unwrap();
        let mut cosigned = self.cosigned.lock().unwrap();
        if old != cosigned.0 {
            return (StatusCode::CONFLICT, vec![("content-type", "text/x.tlog.size")], format!("{}\n", cosigned.0));
        }
        let new = (checkpoint.size(), checkpoint.hash().0);
        if old == new.0 && cosigned.1 != new.1 {
            return (StatusCode::CONFLICT, vec![], String::new());
        }
        if old > 0
            && old < new.0
            && tlog_tiles::check_tree(&proof, new.0, *checkpoint.hash(), old, tlog_tiles::Hash(cosigned.1)).is_err()
        {
            return (StatusCode::UNPROCESSABLE_ENTITY, vec![], String::new());
        }
        *cosigned = new;
        let timestamp: u64 = 1_795_341_600;
        let message = [format!("cosignature/v1\ntime {timestamp}\n").as_bytes(), note.text()].concat();
        let mut signature = self.key.sign(&message);
        if self.behaviour == Behaviour::SignsWrongly {
            signature[0] ^= 1;
        }
        let id = &svc_core::digest::sha256(&[self.name.as_bytes(), b"\n\x04", &self.public()].concat())[..4];
        let raw = [id, &timestamp.to_be_bytes()[..], &signature].concat();
        let line = format!("\u{2014} {} {}\n", self.name, svc_core::b64::std_encode(&raw));
        (StatusCode::OK, vec![], line)
    }

    async fn serve(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/w", listener.local_addr().unwrap());
        let app = axum::Router::new().route(
            "/w/add-checkpoint",
            axum::routing::post(move |body: String| {
                let witness = self.clone();
                async move {
                    if witness.behaviour == Behaviour::Late {
                        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                    }
                    let (status, headers, body) = witness.answer(&body);
                    let mut response = axum::response::Response::new(Body::from(body));
                    *response.status_mut() = status;
                    for (name, value) in headers {
                        response.headers_mut().insert(name, value.parse().unwrap());
                    }
                    response
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }
}

/// The cosignature/v1 verifier a client configures for one witness.
#[derive(Clone)]
struct CosignatureVerifier {
    name: String,
    id: u32,
    key: svc_core::keys::VerifyingKey,
}

impl Verifier for CosignatureVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        if sig.len() != 72 {
            return false;
        }
        let timestamp = u64::from_be_bytes(sig[..8].try_into().unwrap());
        let message = [format!("cosignature/v1\ntime {timestamp}\n").as_bytes(), msg].concat();
        self.key.verify(&message, &sig[8..])
    }
}

fn witness(name: &str, seed: u8, behaviour: Behaviour) -> TestWitness {
    TestWitness {
        name: name.into(),
        key: Arc::new(SigningKey::from_seed(Alg::Ed25519, &[seed; 32]).unwrap()),
        log: Arc::default(),
        cosigned: Arc::default(),
        asked: Arc::default(),
        behaviour,
    }
}

async fn cosign(home: &Home) -> Value {
    let answer = home.admin("POST", "/admin/log/cosign", json!({})).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

#[tokio::test(flavor = "multi_thread")]
async fn witnesses_cosign_each_checkpoint_and_a_failing_one_is_left_out_and_counted() {
    let (honest, wrong, late, knowing) = (
        witness("witness.test/honest", 1, Behaviour::Honest),
        witness("witness.test/wrong", 2, Behaviour::SignsWrongly),
        witness("witness.test/late", 3, Behaviour::Late),
        witness("witness.test/knowing", 4, Behaviour::Honest),
    );
    let mut configured = Vec::new();
    for w in [&honest, &wrong, &late, &knowing] {
        let url = w.clone().serve().await;
        configured.push(svc_node::config::WitnessConfig { key: w.vkey(), url, timeout_ms: 500 });
    }
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.log_witnesses.witness = configured;
        config.log_witnesses.every_ms = 3_600_000;
    })
    .await;
    // The witnesses trust the log's checkpoint key, drawn at its first start.
    let log_vkey = svc_core::tlog::verifier_key(ORIGIN, &home.state.keys.checkpoint.verifying_key()).unwrap();
    for w in [&honest, &wrong, &late, &knowing] {
        *w.log.lock().unwrap() = log_vkey.clone();
    }
    let first = grow(&home, 0, 5).await;
    let size = first["tree_size"].as_u64().unwrap();
    // This witness cosigned this size before (home has not heard): it
    // answers 409 with its size, and home asks again from there.
    let root: [u8; 32] = svc_core::digest::parse_sha256_form(first["root_hash"].as_str().unwrap()).unwrap();
    *knowing.cosigned.lock().unwrap() = (size, root);

    let states = cosign(&home).await;
    let by_name =
        |name: &str| states["witnesses"].as_array().unwrap().iter().find(|w| w["name"] == name).unwrap().clone();
    assert_eq!(by_name("witness.test/honest")["cosigned_size"], size);
    assert_eq!(by_name("witness.test/knowing")["cosigned_size"], size);
    assert_eq!(by_name("witness.test/wrong")["last_failure"], "bad_signature");
    assert_eq!(by_name("witness.test/late")["last_failure"], "timeout");
    assert_eq!(knowing.asked.lock().unwrap().len(), 2, "asked from 0, then from the size it named");

    let served = |home: &Home| {
        let home_state = home.state.clone();
        async move {
            let request = Request::get("/log/checkpoint").header("host", AUTHORITY).body(Body::empty()).unwrap();
            use http_body_util::BodyExt;
            use tower::ServiceExt;
            let response = svc_http::surfaces::public_router(home_state).oneshot(request).await.unwrap();
            String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
        }
    };
    let verifiers_of = |ws: &[&TestWitness]| -> Vec<CosignatureVerifier> {
        ws.iter()
            .map(|w| {
                let id = u32::from_be_bytes(
                    svc_core::digest::sha256(&[w.name.as_bytes(), b"\n\x04", &w.public()].concat())[..4]
                        .try_into()
                        .unwrap(),
                );
                CosignatureVerifier { name: w.name.clone(), id, key: w.key.verifying_key() }
            })
            .collect()
    };
    let check = |text: &str, expect: &[&str]| {
        let note = Note::from_bytes(text.as_bytes()).unwrap();
        let mut list: Vec<Box<dyn Verifier>> = vec![Box::new(log_verifier(&home))];
        for v in verifiers_of(&[&honest, &knowing]) {
            list.push(Box::new(v));
        }
        let (verified, unverified) = note.verify(&VerifierList::new(list)).expect("every known signature verifies");
        let mut names: Vec<String> = verified.iter().map(|s| s.name().to_owned()).collect();
        names.sort();
        assert_eq!(names, expect);
        assert!(unverified.is_empty(), "no line from a witness that failed");
    };
    check(&served(&home).await, &[ORIGIN, "witness.test/honest", "witness.test/knowing"]);

    // The next checkpoint: each honest witness gets the consistency proof
    // from the size it cosigned, and checks it.
    let second = grow(&home, 5, 300).await;
    assert_eq!(served(&home).await.lines().filter(|l| l.starts_with('\u{2014}')).count(), 1, "not cosigned yet");
    cosign(&home).await;
    let asked = honest.asked.lock().unwrap().last().unwrap().clone();
    assert!(asked.starts_with(&format!("old {size}\n")), "{asked}");
    assert!(asked.lines().nth(1).is_some_and(|l| l.len() == 44), "a proof line follows");
    assert_eq!(honest.cosigned.lock().unwrap().0, second["tree_size"].as_u64().unwrap());
    check(&served(&home).await, &[ORIGIN, "witness.test/honest", "witness.test/knowing"]);

    // The JSON checkpoint route and proofs are unchanged: the log's own note.
    let json_checkpoint = home.get("/v1/log/checkpoint").await;
    assert_eq!(json_checkpoint.body["checkpoint"].as_str().unwrap().matches('\u{2014}').count(), 1);

    let metrics = home.admin("GET", "/metrics", json!({})).await;
    let text = String::from_utf8(metrics.bytes).unwrap();
    for want in [
        r#"svc_witness_failures_total{witness="witness.test/wrong",reason="bad_signature"} 2"#,
        r#"svc_witness_failures_total{witness="witness.test/late",reason="timeout"} 2"#,
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    assert!(text.contains(&format!(
        r#"svc_witness_cosigned_size{{witness="witness.test/honest"}} {}"#,
        second["tree_size"].as_u64().unwrap()
    )));
}
