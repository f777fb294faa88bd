//! A deployment's own certificate authority, with rcgen: `init` makes it;
//! `issue` makes (or renews) a region's or a listener's certificate from
//! it, for a node's `[tls]`. The clients of the deployment believe it with
//! `--ca <dir>/ca.pem` (nodes: `[tls].ca`). `svc ca`, `svc up --tls` and the
//! chaos runner's deployments use it.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// How long the CA is valid: the deployment's lifetime, near enough.
const CA_DAYS: i64 = 3_650;

/// Why a CA command failed.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: the CA is already there (renew certificates with `svc ca issue`)", .0.display())]
    Exists(PathBuf),
    #[error("{}: {source}", .path.display())]
    Certificate { path: PathBuf, source: rcgen::Error },
    #[error("{0}: a region or listener name is letters, digits, '-' and '_'")]
    Name(String),
    #[error("the clock is outside what a certificate can say")]
    Clock,
}

/// The CA's own names: its subject is read back from its file when it
/// issues, so these only have to be stable within one `init`.
fn ca_params(now: time::OffsetDateTime) -> Result<rcgen::CertificateParams, rcgen::Error> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params.distinguished_name.push(rcgen::DnType::CommonName, "svc deployment CA");
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    params.not_before = now;
    params.not_after = now + time::Duration::days(CA_DAYS);
    Ok(params)
}

pub fn init(dir: &Path) -> Result<Value, CaError> {
    let (cert_path, key_path) = (dir.join("ca.pem"), dir.join("ca-key.pem"));
    if cert_path.exists() {
        return Err(CaError::Exists(cert_path));
    }
    std::fs::create_dir_all(dir).map_err(|source| CaError::Io { path: dir.to_owned(), source })?;
    let failed = |source| CaError::Certificate { path: cert_path.clone(), source };
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = ca_params(now()?).and_then(|p| p.self_signed(&key)).map_err(failed)?;
    write(&key_path, key.serialize_pem().as_bytes(), true)?;
    write(&cert_path, cert.pem().as_bytes(), false)?;
    Ok(json!({"ca": cert_path, "ca_key": key_path}))
}

pub fn issue(dir: &Path, name: &str, region: bool, hosts: &[String], days: u32) -> Result<Value, CaError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(CaError::Name(name.to_owned()));
    }
    let (ca_path, ca_key_path) = (dir.join("ca.pem"), dir.join("ca-key.pem"));
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|source| CaError::Io { path: path.to_owned(), source });
    let (ca_pem, ca_key_pem) = (read(&ca_path)?, read(&ca_key_path)?);
    let ca_failed = |source| CaError::Certificate { path: ca_path.clone(), source };
    let ca_key = rcgen::KeyPair::from_pem(&ca_key_pem).map_err(ca_failed)?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_pem, ca_key).map_err(ca_failed)?;

    let (cert_path, key_path) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}-key.pem")));
    let failed = |source| CaError::Certificate { path: cert_path.clone(), source };
    let hosts: Vec<String> =
        if hosts.is_empty() { vec!["localhost".into(), "127.0.0.1".into()] } else { hosts.to_vec() };
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    for host in &hosts {
        let san = match host.parse::<IpAddr>() {
            Ok(ip) => rcgen::SanType::IpAddress(ip),
            Err(_) => rcgen::SanType::DnsName(host.clone().try_into().map_err(failed)?),
        };
        params.subject_alt_names.push(san);
    }
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    let mut purposes = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    if region {
        // A region is also home's client: its certificate names it there.
        purposes.push(rcgen::ExtendedKeyUsagePurpose::ClientAuth);
        let uri = format!("urn:svc:region:{name}");
        params.subject_alt_names.push(rcgen::SanType::URI(uri.try_into().map_err(failed)?));
    }
    params.extended_key_usages = purposes;
    let now = now()?;
    params.not_before = now;
    params.not_after = now + time::Duration::days(i64::from(days.max(1)));
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.signed_by(&key, &issuer).map_err(failed)?;
    // The chain: the certificate, then the CA that issued it.
    write(&key_path, key.serialize_pem().as_bytes(), true)?;
    write(&cert_path, format!("{}{}", cert.pem(), ca_pem).as_bytes(), false)?;
    Ok(json!({"cert": cert_path, "key": key_path, "hosts": hosts, "days": days.max(1)}))
}

fn now() -> Result<time::OffsetDateTime, CaError> {
    use svc_clock::Clock;
    let now = svc_clock::SystemClock.now();
    time::OffsetDateTime::from_unix_timestamp(now.0.div_euclid(1000)).map_err(|_| CaError::Clock)
}

/// Writes `bytes` whole: to a file beside `path`, renamed over it, so a
/// reader sees the old file or the new, never part of one. A key is
/// readable by its owner alone.
fn write(path: &Path, bytes: &[u8], secret: bool) -> Result<(), CaError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| CaError::Io { path: path.to_owned(), source };
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(&partial)
        .map_err(io)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(io)?;
    std::fs::rename(&partial, path).map_err(io)
}
