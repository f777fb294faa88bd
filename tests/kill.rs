//! A home region killed with SIGKILL in the middle of a background push
//! loses nothing it accepted and publishes nothing twice: the restarted
//! process resumes the push, and every record enters the replication log
//! exactly once.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use svc::cli::admin::Admin;
use svc::client::sealing::{self, Passkey, SealContext};
use svc::client::transport::Transport;
use svc::client::{Signer, Unsigned};
use svc::clock::{Clock, SystemClock};
use svc::replication::{Op, entries_after};
use svc::store::{Store, cf};
use svc_core::keys::{Alg, SigningKey};

const AUTHORITY: &str = "api.svc.localhost";
const TOKEN: &str = "kill-test-token";

/// Starts `svc node` on the data directory; answers the process and its
/// public and admin addresses.
fn start(dir: &std::path::Path) -> (Child, String, String) {
    let config = format!(
        r#"region = "home"
role = "home"
environment = "production"
data_dir = "{}"
listen = "127.0.0.1:0"
admin_listen = "127.0.0.1:0"
public_authority = "{AUTHORITY}"
verify_base_url = "http://verify.svc.localhost"
admin_token = "{TOKEN}"
passkey_rp_id = "portal.svc.localhost"
passkey_origin = "https://portal.svc.localhost"
"#,
        dir.join("node").display()
    );
    let path = dir.join("home.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["node", "--config"])
        .arg(&path)
        .env("SVC_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addresses: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    (
        child,
        format!("http://{}", addresses["listen"].as_str().unwrap()),
        format!("http://{}", addresses["admin_listen"].as_str().unwrap()),
    )
}

fn product(sku: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/products/1",
        "language": "fr",
        "business_product_id": format!("SKU-{sku}"),
        "product_name": format!("Lampe {sku}"),
        "countries": ["FR"],
        "brand": "Lumio",
        "prices": [{"country": "FR", "currency": "EUR", "amount": "12.50"}],
        "on_sale": false,
        "availability": "in_stock",
        "product_url": format!("https://lumio.example/p/{sku}"),
    }))
    .unwrap()
}

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
    let (mut first, public_url, admin_url) = start(dir.path());
    let admin = Admin::new(&admin_url, TOKEN.into()).unwrap();
    let public = Transport::new(&public_url).unwrap();

    // Onboard a business as its operator and its people would.
    let created = admin.call(
        "POST",
        "/admin/businesses",
        Some(json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"]})),
    );
    let created = created.await.unwrap();
    let uuid = created["business_uuid"].as_str().unwrap().to_owned();
    let key = SigningKey::from_seed(Alg::Ed25519, &[21; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[22; 32]).unwrap();
    let keys = format!("/admin/businesses/{uuid}/keys");
    admin
        .call("POST", &keys, Some(json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"})))
        .await
        .unwrap();
    let body = json!({"jwk": passkey.verifying_key().to_jwk(), "purpose": "sealing", "role": "owner"});
    admin.call("POST", &keys, Some(body)).await.unwrap();
    let now = SystemClock.now();
    let mandate = sealing::mandate_payload(
        "m-1",
        &uuid,
        &key.verifying_key().thumbprint(),
        &["products".into()],
        &["FR".into()],
        1_000_000,
        1 << 32,
        now.minus(60_000),
        now.plus(30 * svc_core::time::DAY),
    );
    let authenticator =
        Passkey { key: &passkey, rp_id: "portal.svc.localhost", origin: "https://portal.svc.localhost" };
    let envelope = authenticator.seal_mandate(&mandate).unwrap();
    admin.call("POST", "/admin/mandates", Some(json!({"envelope": envelope}))).await.unwrap();

    // A 10,000-record push: accepted (202), then processed chunk by chunk.
    let records: Vec<Vec<u8>> = (0..10_000).map(product).collect();
    let context = SealContext { cert_id: created["cert_id"].as_str().unwrap().to_owned(), ai_policy_version: 0 };
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
            first.kill().unwrap();
            first.wait().unwrap();
            killed_at = Some((done, s["completed_at"].is_null()));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (chunks_done, unsettled) = killed_at.expect("the push made progress");
    assert!(unsettled && chunks_done < 50, "killed mid-push ({chunks_done} of 50 chunks)");

    // The restarted node resumes the push on its own.
    let (mut second, public_url, _) = start(dir.path());
    let public = Transport::new(&public_url).unwrap();
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
    second.kill().unwrap();
    second.wait().unwrap();

    // Every record entered the replication log exactly once, at version 1.
    let store = Store::open(&dir.path().join("node").join("db")).unwrap();
    let mut published: HashMap<Vec<u8>, usize> = HashMap::new();
    for entry in entries_after(&store, 0, usize::MAX).unwrap() {
        for op in entry.ops {
            if let Op::Put { cf: name, key, .. } = op
                && name == cf::RECORDS
            {
                *published.entry(key).or_default() += 1;
            }
        }
    }
    assert_eq!(published.len(), 10_000);
    assert!(published.values().all(|n| *n == 1), "a record was published twice");
}
