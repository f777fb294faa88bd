//! A home region killed with SIGKILL in the middle of a background push
//! loses nothing it accepted and publishes nothing twice: the restarted
//! process resumes the push, and every record enters the replication log
//! exactly once.

use std::collections::HashMap;

use serde_json::Value;
use svc_client::admin::Admin;
use svc_client::sealing;
use svc_client::transport::Transport;
use svc_client::{Signer, Unsigned};
use svc_clock::{Clock, SystemClock};
use svc_core::keys::{Alg, SigningKey};
use svc_node::replication::{Op, entries_after};
use svc_store::{Store, cf};

use crate::process;

use process::{AUTHORITY, TOKEN, onboard, product, start};

async fn status(public: &Transport, signer: &Signer, push_id: &str) -> Value {
    let request = signer
        .sign_now(Unsigned::new("GET", &format!("/v1/pushes/{push_id}"), Vec::new()), SystemClock.now().as_secs())
        .unwrap();
    public.send(request).await.unwrap().json()
}

// rule: P4.1.33, P3.16, P3.17, P4.1.29
#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_push_then_restart_publishes_everything_once() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(dir.path(), "home", None);
    let (public_url, admin_url) = (first.public_url.clone(), first.admin_url.clone());
    let admin = Admin::new(&admin_url, TOKEN.into()).unwrap();
    let public = Transport::new(&public_url).unwrap();

    let key = SigningKey::from_seed(Alg::Ed25519, &[21; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[22; 32]).unwrap();
    let context = onboard(&admin, &key, &passkey).await;

    // A 10,000-record push: accepted (202), then processed chunk by chunk.
    let records: Vec<Vec<u8>> = (0..10_000).map(product).collect();
    let seal = sealing::batch_seal(&key, &context, "products", &records, 1, SystemClock.now()).unwrap();
    let push_signer = Signer::new(key.clone(), AUTHORITY, "svc-push");
    let read_signer = Signer::new(key.clone(), AUTHORITY, "svc-business-read");
    let request = push_signer
        .sign_now(
            Unsigned::new("POST", "/v1/publish/products", sealing::publish_body(&seal, &records))
                .header("idempotency-key", "kill-1"),
            SystemClock.now().as_secs(),
        )
        .unwrap();
    let accepted = public.send(request).await.unwrap();
    assert_eq!(accepted.status, 202, "{}", String::from_utf8_lossy(&accepted.bytes));
    let push_id = accepted.json()["push_id"].as_str().unwrap().to_owned();

    // Kill it once some chunks are committed and others are not.
    let mut killed_at = None;
    for _ in 0..6000 {
        let s = status(&public, &read_signer, &push_id).await;
        let done = s["progress"]["chunk"].as_u64().unwrap_or(0);
        if done >= 2 {
            killed_at = Some((done, s["completed_at"].is_null()));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    first.kill();
    let (chunks_done, unsettled) = killed_at.expect("the push made progress");
    assert!(unsettled && chunks_done < 50, "killed mid-push ({chunks_done} of 50 chunks)");

    // The restarted node resumes the push on its own.
    let second = start(dir.path(), "home", None);
    let public = Transport::new(&second.public_url).unwrap();
    let mut settled = Value::Null;
    for _ in 0..6000 {
        settled = status(&public, &read_signer, &push_id).await;
        if settled["completed_at"].is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(settled["state"], "complete", "{settled}");
    assert_eq!(settled["counts"]["accepted"], 10_000);
    assert_eq!(settled["counts"]["pending"], 0);
    second.kill();

    // Every record entered the replication log exactly once, at version 1.
    let store = Store::open(&dir.path().join("home").join("db")).unwrap();
    let mut published: HashMap<Vec<u8>, usize> = HashMap::new();
    for entry in entries_after(&store, 0, usize::MAX).unwrap() {
        for op in entry.ops {
            if let Op::Put { cf: name, key, .. } = op
                && name == cf::RECORDS.name()
            {
                *published.entry(key).or_default() += 1;
            }
        }
    }
    assert_eq!(published.len(), 10_000);
    assert!(published.values().all(|n| *n == 1), "a record was published twice");
}
