//! `svc node` processes for the tests that kill them: start one from a
//! configuration, and onboard a business through the admin API over TCP.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use svc::cli::admin::Admin;
use svc::client::sealing::{self, Passkey, SealContext};
use svc::clock::{Clock, SystemClock};
use svc_core::keys::SigningKey;

pub const AUTHORITY: &str = "api.svc.localhost";
pub const TOKEN: &str = "process-test-token-of-thirty-two-chars";

/// A read region's own token on home's internal routes.
pub fn region_token(region: &str) -> String {
    format!("{region}-replication-token-of-thirty-two-chars")
}

/// A running `svc node`: the process and its public and admin addresses,
/// and home's internal one.
pub struct Process {
    pub child: Child,
    pub public_url: String,
    pub admin_url: String,
    pub internal_url: Option<String>,
}

impl Process {
    /// SIGKILL, then reap.
    pub fn kill(self) {}

    /// Sends `signal` (`STOP`, `CONT`) to the process: a stopped node keeps
    /// its sockets open and answers nothing, as a stalled or cut-off host.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("sh").arg("-c").arg(format!("kill -{signal} {}", self.child.id())).status().unwrap();
        assert!(status.success(), "kill -{signal}");
    }
}

impl Drop for Process {
    /// A test that fails leaves no node behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `svc node` for `region` with its data under `dir`. A read region
/// pulls from `home`, with its own token; home knows `eu` and `ap`.
pub fn start(dir: &std::path::Path, region: &str, home: Option<&Process>) -> Process {
    start_with(dir, region, home, "")
}

/// Like [`start`], with more `[replication]` settings (TOML lines).
pub fn start_with(dir: &std::path::Path, region: &str, home: Option<&Process>, replication: &str) -> Process {
    let (role, internal_listen, link, regions) = match home {
        Some(home) => (
            "read",
            "",
            format!(
                "home_url = \"{}\"\ninternal_url = \"{}\"\ntoken = \"{}\"\n",
                home.public_url,
                home.internal_url.as_deref().unwrap(),
                region_token(region)
            ),
            String::new(),
        ),
        None => (
            "home",
            "internal_listen = \"127.0.0.1:0\"\n",
            String::new(),
            ["eu", "ap"]
                .map(|r| format!("[[replication.regions]]\nname = \"{r}\"\ntoken = \"{}\"\n", region_token(r)))
                .concat(),
        ),
    };
    let config = format!(
        r#"region = "{region}"
role = "{role}"
environment = "production"
data_dir = "{}"
listen = "127.0.0.1:0"
admin_listen = "127.0.0.1:0"
{internal_listen}public_authority = "{AUTHORITY}"
verify_base_url = "http://verify.svc.localhost"
admin_token = "{TOKEN}"
passkey_rp_id = "portal.svc.localhost"
passkey_origin = "https://portal.svc.localhost"

[replication]
{link}{replication}
{regions}"#,
        dir.join(region).display()
    );
    let path = dir.join(format!("{region}.toml"));
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
    Process {
        child,
        public_url: format!("http://{}", addresses["listen"].as_str().unwrap()),
        admin_url: format!("http://{}", addresses["admin_listen"].as_str().unwrap()),
        internal_url: addresses["internal_listen"].as_str().map(|a| format!("http://{a}")),
    }
}

/// A verified AI company that accepted the Terms, with one group and one
/// Ed25519 retrieval key drawn from `seed`; a prepay allowance when given.
/// Answers the key.
pub async fn ai_company(admin: &Admin, name: &str, seed: u8, prepay: Option<i64>) -> SigningKey {
    let body = json!({"name": name, "verified": true, "terms_accepted": 1});
    let company = admin.call("POST", "/admin/companies", Some(body)).await.unwrap();
    let uuid = company["ai_company_uuid"].as_str().unwrap();
    if let Some(remaining) = prepay {
        let allowance = json!({"ai_company_uuid": uuid, "prepay": true, "remaining": remaining});
        admin.call("POST", "/admin/allowances", Some(allowance)).await.unwrap();
    }
    let group =
        admin.call("POST", &format!("/admin/companies/{uuid}/groups"), Some(json!({"name": "bots"}))).await.unwrap();
    let key = SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[seed; 32]).unwrap();
    let path = format!("/admin/groups/{}/retrieval-keys", group["ai_group_id"].as_str().unwrap());
    admin.call("POST", &path, Some(json!({"jwk": key.verifying_key().to_jwk()}))).await.unwrap();
    key
}

/// A French product of the business `Lumio`.
pub fn product(sku: usize) -> Vec<u8> {
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

/// Onboards `Lumio` (FR) as its operator and its people would: the
/// business, its integration key and owner passkey, and a products mandate
/// sealed by the passkey. Answers the seal context of its batches.
pub async fn onboard(admin: &Admin, key: &SigningKey, passkey: &SigningKey) -> SealContext {
    let created = admin.call(
        "POST",
        "/admin/businesses",
        Some(json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"]})),
    );
    let created = created.await.unwrap();
    let uuid = created["business_uuid"].as_str().unwrap().to_owned();
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
    let authenticator = Passkey { key: passkey, rp_id: "portal.svc.localhost", origin: "https://portal.svc.localhost" };
    let envelope = authenticator.seal_mandate(&mandate).unwrap();
    admin.call("POST", "/admin/mandates", Some(json!({"envelope": envelope}))).await.unwrap();
    SealContext { cert_id: created["cert_id"].as_str().unwrap().to_owned(), ai_policy_version: 0 }
}
