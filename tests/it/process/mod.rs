//! `svc node` processes for the tests that kill them: start one from a
//! configuration, and onboard a business through the admin API over TCP.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use svc_client::admin::Admin;
use svc_client::sealing::SealContext;
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
    launch(dir, region, home, replication, &Site::default())
}

/// A node of a sandbox deployment, with fault injection on
/// (`/admin/faults/*`) when `faulty`: production refuses it.
pub fn start_sandbox(dir: &std::path::Path, region: &str, home: Option<&Process>, faulty: bool) -> Process {
    let site = Site { fault_injection: faulty, sandbox: true, ..Site::default() };
    launch(dir, region, home, "", &site)
}

/// Where a node listens, the passkey relying party it judges seals by, and
/// whether it takes injected faults.
pub struct Site {
    pub listen: String,
    pub rp_id: String,
    pub origin: String,
    pub fault_injection: bool,
    /// The sandbox environment; production otherwise.
    pub sandbox: bool,
}

impl Site {
    fn environment(&self) -> &'static str {
        if self.sandbox { "sandbox" } else { "production" }
    }

    /// Plain HTTP only where the config says so: here, on loopback, with
    /// the test itself in a production proxy's place.
    fn plain_http(&self) -> &'static str {
        match self.sandbox {
            true => "allow_plain_http = true\n",
            false => "allow_plain_http = true\nplain_http_behind = \"none: a test on loopback\"\n",
        }
    }
}

impl Default for Site {
    fn default() -> Site {
        Site {
            listen: "127.0.0.1:0".into(),
            rp_id: "portal.svc.localhost".into(),
            origin: "https://portal.svc.localhost".into(),
            fault_injection: false,
            sandbox: false,
        }
    }
}

/// A home whose business portal a browser reaches at
/// `http://localhost:<port>/portal/` (a secure context without TLS).
pub fn start_portal_home(dir: &std::path::Path, port: u16) -> Process {
    let site = Site {
        listen: format!("127.0.0.1:{port}"),
        rp_id: "localhost".into(),
        origin: format!("http://localhost:{port}"),
        fault_injection: false,
        sandbox: false,
    };
    launch(dir, "home", None, "", &site)
}

/// A read region of a portal home: it judges seals by the same relying party.
pub fn start_portal_region(dir: &std::path::Path, region: &str, home: &Process, port: u16) -> Process {
    let site = Site { rp_id: "localhost".into(), origin: format!("http://localhost:{port}"), ..Site::default() };
    launch(dir, region, Some(home), "", &site)
}

fn launch(dir: &std::path::Path, region: &str, home: Option<&Process>, replication: &str, site: &Site) -> Process {
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
environment = "{}"
{}data_dir = "{}"
listen = "{}"
admin_listen = "127.0.0.1:0"
{internal_listen}public_authority = "{AUTHORITY}"
verify_base_url = "http://verify.svc.localhost"
admin_token = "{TOKEN}"
passkey_rp_id = "{}"
passkey_origin = "{}"
fault_injection = {}

[replication]
{link}{replication}
{regions}"#,
        site.environment(),
        site.plain_http(),
        dir.join(region).display(),
        site.listen,
        site.rp_id,
        site.origin,
        site.fault_injection,
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
    svc::chaos::setup::ai_company(admin, name, seed, prepay).await.unwrap().key
}

pub use svc::chaos::setup::product;

/// Onboards `Lumio` (FR) with a passkey-sealed products mandate; answers
/// the seal context of its batches.
pub async fn onboard(admin: &Admin, key: &SigningKey, passkey: &SigningKey) -> SealContext {
    svc::chaos::setup::onboard(admin, key, passkey).await.unwrap().context
}
