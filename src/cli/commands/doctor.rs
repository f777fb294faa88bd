//! `svc doctor --config X`: what a production operator must check on a
//! node, read from its config and the machine it runs on, as a table (or
//! JSON when piped). Exits non-zero when any check fails.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use svc_core::time::UnixMs;
use svc_node::config::{NodeConfig, TlsConfig};

/// A certificate that expires within this many days fails: time enough to
/// renew it before clients refuse it.
const EXPIRES_SOON_DAYS: i64 = 14;
/// Within this many days it is a warning.
const RENEW_DAYS: i64 = 30;

/// What one check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One row of the answer.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub verdict: Verdict,
    pub detail: String,
}

fn check(name: &'static str, verdict: Verdict, detail: impl Into<String>) -> Check {
    Check { name, verdict, detail: detail.into() }
}

fn judged<E: std::fmt::Display>(name: &'static str, result: Result<String, E>) -> Check {
    match result {
        Ok(detail) => check(name, Verdict::Ok, detail),
        Err(e) => check(name, Verdict::Fail, e.to_string()),
    }
}

/// Every check of a node's config, in the order an operator reads them,
/// at `now`.
pub fn examine(config: &NodeConfig, now: UnixMs) -> Vec<Check> {
    let mut checks = vec![match config.environment {
        svc_store::model::Environment::Production => {
            judged("production profile", config.check_production().map(|()| "safe".to_owned()))
        }
        svc_store::model::Environment::Sandbox => {
            check("production profile", Verdict::Fail, "environment = \"sandbox\": not a production config")
        }
    }];
    checks.push(match (&config.tls, &config.plain_http_behind) {
        (Some(tls), _) => certificate(tls, now),
        (None, Some(proxy)) if config.allow_plain_http => {
            check("TLS", Verdict::Warn, format!("plain HTTP behind {proxy}: check its certificate there"))
        }
        (None, _) => check("TLS", Verdict::Fail, "no [tls]: every listener speaks plain HTTP"),
    });
    checks.push(link(config));
    checks.push(judged("tokens", config.check_secrets().map(|()| "each strong and its own".to_owned())));
    checks.push(match &config.key_encryption_key {
        Some(_) => check("key-encryption key", Verdict::Ok, "service keys are stored wrapped"),
        None => check("key-encryption key", Verdict::Fail, "none: service keys and hosted seeds are stored in clear"),
    });
    checks.push(match &config.url_blocklist {
        Some(_) => check("URL blocklist", Verdict::Ok, "records' URLs are looked up"),
        None => check("URL blocklist", Verdict::Fail, "none: records may link to flagged sites"),
    });
    checks.push(match &config.domain_assurance {
        Some(_) => check("domain assurance", Verdict::Ok, "businesses' domains are checked"),
        None => check("domain assurance", Verdict::Fail, "off: every domain stays unchecked"),
    });
    checks.push(match &config.ip_to_as_file {
        Some(path) => judged(
            "IP-to-AS table",
            svc_node::as_table::AsTable::load(path).map(|_| format!("{} reads", path.display())),
        ),
        None => check("IP-to-AS table", Verdict::Warn, "none: mandates naming AS numbers are refused"),
    });
    checks.push(backups(config, now));
    checks.push(clock_sync());
    checks
}

/// The certificate loads with its key, and is far from its end.
fn certificate(tls: &TlsConfig, now: UnixMs) -> Check {
    if let Err(e) = svc_http::tls::Certificates::load(tls) {
        return check("TLS", Verdict::Fail, e.to_string());
    }
    let Some(not_after) = not_after(&tls.cert) else {
        return check("TLS", Verdict::Fail, format!("{}: the certificate does not parse", tls.cert.display()));
    };
    let days = (not_after - now.0.div_euclid(1000)).div_euclid(86_400);
    let detail = format!("{} expires in {days} days", tls.cert.display());
    match days {
        ..0 => check("TLS", Verdict::Fail, format!("{}: expired", tls.cert.display())),
        d if d < EXPIRES_SOON_DAYS => check("TLS", Verdict::Fail, detail),
        d if d < RENEW_DAYS => check("TLS", Verdict::Warn, detail),
        _ => check("TLS", Verdict::Ok, detail),
    }
}

/// When the chain's first certificate ends, in Unix seconds.
fn not_after(path: &Path) -> Option<i64> {
    let leaf = svc_client::trust::leaf(path)?;
    let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref()).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

/// The link between regions is mutual TLS, and this node's certificate
/// names its region.
fn link(config: &NodeConfig) -> Check {
    if config.replication.is_none() {
        return check("mutual TLS link", Verdict::Ok, "no link to another region");
    }
    if let Err(e) = config.check_link_tls() {
        return check("mutual TLS link", Verdict::Fail, e.to_string());
    }
    let Some(tls) = &config.tls else {
        return check("mutual TLS link", Verdict::Fail, "the link is plain HTTP: add [tls] with tls.ca");
    };
    let named =
        svc_client::trust::leaf(&tls.cert).map(|leaf| svc_client::trust::regions_named(&leaf)).unwrap_or_default();
    if named.contains(&config.region) {
        check("mutual TLS link", Verdict::Ok, format!("the certificate names region {}", config.region))
    } else {
        let detail = format!(
            "the certificate names {named:?}, not {}: issue it with `svc ca issue --region {}`",
            config.region, config.region
        );
        check("mutual TLS link", Verdict::Fail, detail)
    }
}

/// The newest file in the backups folder is within the schedule.
fn backups(config: &NodeConfig, now: UnixMs) -> Check {
    let Some(backups) = &config.backups else {
        return check("backups", Verdict::Fail, "no [backups]: nothing says where they go or how often");
    };
    let newest = std::fs::read_dir(&backups.dir)
        .ok()
        .and_then(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()?.modified().ok()).max());
    let Some(newest) = newest else {
        return check("backups", Verdict::Fail, format!("{}: no backup in it", backups.dir.display()));
    };
    let newest = newest.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let age = Duration::from_millis(u64::try_from(now.0 - newest).unwrap_or(0));
    let hours = age.as_secs() / 3600;
    let detail = format!("the newest in {} is {hours} h old", backups.dir.display());
    if age > Duration::from_secs(u64::from(backups.every_hours) * 3600) {
        check("backups", Verdict::Fail, format!("{detail}; one is due every {} h", backups.every_hours))
    } else {
        check("backups", Verdict::Ok, detail)
    }
}

/// Whether the kernel says the clock is synchronised (NTP or PTP): a
/// request's window and a receipt's time rest on it.
fn clock_sync() -> Check {
    // SAFETY: ntp_adjtime with modes 0 only reads the kernel's state into
    // the zeroed struct it is given.
    let state = unsafe {
        let mut timex: libc::timex = std::mem::zeroed();
        libc::ntp_adjtime(&mut timex)
    };
    match state {
        libc::TIME_ERROR => check("clock sync", Verdict::Fail, "the kernel says the clock is not synchronised"),
        -1 => check("clock sync", Verdict::Warn, "the clock's state could not be read"),
        _ => check("clock sync", Verdict::Ok, "synchronised"),
    }
}

/// The checks as JSON: each row, and whether all passed.
pub fn answer(checks: &[Check]) -> Value {
    let rows: Vec<Value> =
        checks.iter().map(|c| json!({"check": c.name, "result": c.verdict.word(), "detail": c.detail})).collect();
    json!({"ok": passed(checks), "checks": rows})
}

/// The checks as a table a person reads.
pub fn table(checks: &[Check]) -> String {
    let rows: Vec<Vec<String>> =
        checks.iter().map(|c| vec![c.name.to_owned(), c.verdict.word().to_owned(), c.detail.clone()]).collect();
    super::output::table(&["check", "result", "detail"], &rows)
}

/// No check failed (a warning passes).
pub fn passed(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.verdict != Verdict::Fail)
}
