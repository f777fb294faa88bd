//! The production example (`deploy/production/`, issue 48 part 3): it
//! starts as shipped once its certificates and secrets are made, its
//! regions speak over mutual TLS, `svc doctor` passes it and names each
//! gap, and `environment = "production"` refuses each unsafe setting by
//! name. The test stands in for the hosts: every region's `/etc/svc` is one
//! folder, and the example's addresses become loopback ones.

use std::path::{Path, PathBuf};
use std::process::Command;

use axum::body::Body;
use axum::http::Request;
use serde_json::Value;
use svc_client::transport::Transport;
use svc_client::trust::Trust;

use crate::common::eventually;

/// The example's `/etc/svc`, with what an operator makes before the first
/// start: the CA and each region's certificate (`svc ca`), the secrets
/// (`svc secret`), the IP-to-AS table, and one backup.
struct Example {
    _dir: tempfile::TempDir,
    etc: PathBuf,
}

impl Example {
    fn new() -> Example {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let etc = root.join("etc/svc");
        std::fs::create_dir_all(etc.join("secrets")).unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/production");
        for region in ["home", "eu", "ap"] {
            let shipped = std::fs::read_to_string(repo.join(format!("{region}.toml"))).unwrap();
            // The hosts' folders under the test's root, and its ports.
            let text = shipped
                .replace("\"/var/", &format!("\"{}/var/", root.display()))
                .replace("0.0.0.0:443", "127.0.0.1:0")
                .replace("127.0.0.1:8443", "127.0.0.1:0")
                .replace("0.0.0.0:8444", "127.0.0.1:0");
            std::fs::write(etc.join(format!("{region}.toml")), text).unwrap();
        }
        let tls = etc.join("tls");
        svc::ca::init(&tls).unwrap();
        for region in ["home", "eu", "ap"] {
            svc::ca::issue(&tls, region, true, &[], 90).unwrap();
        }
        for secret in [
            "home-admin-token",
            "eu-admin-token",
            "ap-admin-token",
            "eu-replication-token",
            "ap-replication-token",
            "key-encryption-key",
        ] {
            std::fs::write(etc.join("secrets").join(secret), hex::encode(svc_clock::random::<32>())).unwrap();
        }
        std::fs::write(etc.join("ip-to-as.txt"), "203.0.113.0/24 AS64500\n").unwrap();
        let backups = root.join("var/backups/svc");
        std::fs::create_dir_all(&backups).unwrap();
        std::fs::write(backups.join("svc-home-20261129T031500Z.tar.gz"), b"a backup").unwrap();
        Example { _dir: dir, etc }
    }

    fn config(&self, region: &str) -> PathBuf {
        self.etc.join(format!("{region}.toml"))
    }

    /// Rewrites a region's config file.
    fn edit(&self, region: &str, change: impl FnOnce(String) -> String) {
        let path = self.config(region);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, change(text)).unwrap();
    }

    fn trust(&self) -> Trust {
        Trust::with_ca(Some(&self.etc.join("tls/ca.pem"))).unwrap()
    }
}

/// A top-level setting, placed before the file's first table.
fn with_setting(text: String, line: &str) -> String {
    text.replacen("environment = \"production\"\n", &format!("environment = \"production\"\n{line}\n"), 1)
}

/// The file without its `[tls]` table.
fn without_tls(text: String) -> String {
    let start = text.find("[tls]").unwrap();
    let end = start + text[start..].find("\n\n").unwrap();
    format!("{}{}", &text[..start], &text[end..])
}

async fn start(example: &Example, region: &str) -> svc_http::node::Node {
    let config = svc::commands::node_config(&example.config(region)).unwrap();
    config.check_production().unwrap();
    svc_http::node::Node::start(config, std::sync::Arc::new(svc_clock::SystemClock)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_production_example_starts_and_its_read_regions_replicate_over_mutual_tls() {
    let example = Example::new();
    let home = start(&example, "home").await;
    let (public, internal) = (format!("https://{}", home.addr), format!("https://{}", home.internal_addr.unwrap()));
    for region in ["eu", "ap"] {
        example.edit(region, |text| {
            text.replace("https://home.svc.example.net:8444", &internal)
                .replace("home_url = \"https://home.svc.example.net\"", &format!("home_url = \"{public}\""))
        });
    }
    let (eu, ap) = (start(&example, "eu").await, start(&example, "ap").await);
    let trust = example.trust();
    for node in [&eu, &ap] {
        let transport = Transport::http2(&format!("https://{}", node.addr), &trust).unwrap();
        eventually("the region replicates from home over mutual TLS and is ready", async || {
            let request = Request::get("/readyz").body(Body::empty()).unwrap();
            transport.send(request).await.is_ok_and(|a| a.status == 200)
        })
        .await;
    }
    assert!(svc_node::replication::last_seq(&eu.state.store).unwrap() >= 1, "eu applied home's log");
    for node in [ap, eu, home] {
        node.stop().await;
    }
}

/// `svc doctor --json` on a region's config: its exit code and its rows by
/// check name.
fn doctor(config: &Path) -> (i32, Vec<(String, String, String)>) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_svc")).args(["doctor", "--json", "--config"]).arg(config).output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    let rows = answer["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let cell = |name: &str| row[name].as_str().unwrap().to_owned();
            (cell("check"), cell("result"), cell("detail"))
        })
        .collect();
    assert_eq!(answer["ok"].as_bool(), Some(out.status.code() == Some(0)), "{answer}");
    (out.status.code().unwrap(), rows)
}

fn row<'a>(rows: &'a [(String, String, String)], check: &str) -> &'a (String, String, String) {
    rows.iter().find(|r| r.0 == check).unwrap_or_else(|| panic!("no {check} row in {rows:?}"))
}

#[test]
fn svc_doctor_passes_the_production_example_and_names_each_gap() {
    let example = Example::new();
    for region in ["home", "eu", "ap"] {
        let (code, rows) = doctor(&example.config(region));
        // The machine's clock is the one thing the example does not set.
        let clock_fails = row(&rows, "clock sync").1 == "FAIL";
        for (check, result, detail) in &rows {
            assert!(result == "ok" || check == "clock sync", "{region}: {check} is {result}: {detail}");
        }
        assert_eq!(code, i32::from(clock_fails), "{region}: {rows:?}");
        // Issued for 90 days a moment ago.
        let tls = &row(&rows, "TLS").2;
        assert!(tls.ends_with("expires in 89 days") || tls.ends_with("expires in 90 days"), "{rows:?}");
        assert_eq!(row(&rows, "mutual TLS link").2, format!("the certificate names region {region}"));
    }

    // Each gap fails its own row, and the whole answer.
    let home = example.config("home");
    svc::ca::issue(&example.etc.join("tls"), "home", true, &[], 5).unwrap();
    example.edit("home", |text| text.replace("key_encryption_key_file = \"secrets/key-encryption-key\"\n", ""));
    std::fs::remove_file(example.etc.join("../../var/backups/svc/svc-home-20261129T031500Z.tar.gz")).unwrap();
    // The eu certificate where home's should be: it names another region.
    example.edit("home", |text| {
        text.replace(
            "cert = \"tls/home.pem\"\nkey = \"tls/home-key.pem\"",
            "cert = \"tls/eu.pem\"\nkey = \"tls/eu-key.pem\"",
        )
    });
    let (code, rows) = doctor(&home);
    assert_eq!(code, 1);
    assert_eq!(row(&rows, "TLS").1, "ok", "eu's certificate has 90 days: {rows:?}");
    let link = row(&rows, "mutual TLS link");
    assert_eq!((link.1.as_str(), link.2.contains("[\"eu\"], not home")), ("FAIL", true), "{link:?}");
    assert_eq!(row(&rows, "key-encryption key").1, "FAIL");
    assert_eq!(row(&rows, "backups").1, "FAIL");
    example.edit("home", |text| {
        text.replace(
            "cert = \"tls/eu.pem\"\nkey = \"tls/eu-key.pem\"",
            "cert = \"tls/home.pem\"\nkey = \"tls/home-key.pem\"",
        )
    });
    let (_, rows) = doctor(&home);
    let tls = row(&rows, "TLS");
    let soon = tls.2.ends_with("expires in 4 days") || tls.2.ends_with("expires in 5 days");
    assert_eq!((tls.1.as_str(), soon), ("FAIL", true), "{tls:?}");
    example.edit("home", |text| text.replace("environment = \"production\"", "environment = \"sandbox\""));
    assert_eq!(row(&doctor(&home).1, "production profile").1, "FAIL");
}

/// `svc node` on a region's config: it must not start, and its error
/// names `setting`.
fn refused(config: &Path, setting: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["node", "--config"])
        .arg(config)
        .env("SVC_LOG", "error")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("{setting}: refused with environment = \"production\"")), "{setting}: {said}");
    assert!(out.stdout.is_empty(), "it never announced its listeners: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn the_production_example_refuses_each_unsafe_setting_by_name() {
    let example = Example::new();
    let home = example.config("home");
    let shipped = std::fs::read_to_string(&home).unwrap();
    let unsafe_settings: [(&str, String); 4] = [
        ("tls", without_tls(shipped.clone())),
        ("plain_http_behind", with_setting(without_tls(shipped.clone()), "allow_plain_http = true")),
        ("fault_injection", with_setting(shipped.clone(), "fault_injection = true")),
        ("ad_images.allow_private_addresses", format!("{shipped}\n[ad_images]\nallow_private_addresses = true\n")),
    ];
    for (setting, text) in unsafe_settings {
        std::fs::write(&home, text).unwrap();
        refused(&home, setting);
    }
    // Plain HTTP is allowed only when the config names the proxy in front.
    let behind = with_setting(
        without_tls(shipped),
        "allow_plain_http = true\nplain_http_behind = \"haproxy on lb-1.example.net\"",
    );
    std::fs::write(&home, behind).unwrap();
    svc::commands::node_config(&home).unwrap().check_production().unwrap();
}

/// Plain HTTP only where the config says so, in any environment: the
/// localhost deployment's home without its `allow_plain_http` line does not
/// start, and says what to write.
#[test]
fn a_node_without_tls_that_does_not_say_plain_http_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("regions/home.toml")).unwrap();
    assert!(shipped.contains("\nallow_plain_http = true\n"), "the shipped file says it");
    let unsaid = shipped
        .replace("\nallow_plain_http = true\n", "\n")
        .replace("data/home", &dir.path().join("home").display().to_string());
    let config = dir.path().join("home.toml");
    std::fs::write(&config, unsaid).unwrap();
    std::fs::create_dir(dir.path().join("secrets")).unwrap();
    for secret in ["home-admin-token", "eu-replication-token", "ap-replication-token"] {
        std::fs::write(dir.path().join("secrets").join(secret), hex::encode(svc_clock::random::<32>())).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_svc")).args(["node", "--config"]).arg(&config).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("say allow_plain_http = true"), "{said}");
}
