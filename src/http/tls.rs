//! TLS on a node's listeners and the front door's: rustls, TLS 1.3 and 1.2,
//! HTTP/2 or HTTP/1.1 by ALPN, from the certificate chain and key files the
//! config names. The files are read again on `SIGHUP`, and when either
//! changes (looked at every few seconds): each handshake takes the pair in
//! force when it begins, so open connections are never dropped, and a pair
//! that does not load is logged and the one in force kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use svc_client::trust::{VERSIONS, provider};
use svc_node::config::TlsConfig;

/// How often the files' modification times are looked at.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// Why a certificate and key pair did not load.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{}: {source}", .path.display())]
    Unread { path: PathBuf, source: rustls::pki_types::pem::Error },
    #[error("{}: no certificate in it", .0.display())]
    NoCertificate(PathBuf),
    #[error("{} and {}: {source}", .cert.display(), .key.display())]
    Refused { cert: PathBuf, key: PathBuf, source: rustls::Error },
    #[error("TLS settings: {0}")]
    Settings(rustls::Error),
    #[error("{}: {detail}", .path.display())]
    Ca { path: PathBuf, detail: String },
}

/// The pair in force, and the files it is read from.
#[derive(Debug)]
pub struct Certificates {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    /// When each file was last changed, as last read.
    stamps: RwLock<(Option<SystemTime>, Option<SystemTime>)>,
}

impl Certificates {
    /// Reads the pair the config names.
    pub fn load(config: &TlsConfig) -> Result<Arc<Certificates>, TlsError> {
        let current = read_pair(&config.cert, &config.key)?;
        Ok(Arc::new(Certificates {
            cert: config.cert.clone(),
            key: config.key.clone(),
            current: RwLock::new(Arc::new(current)),
            stamps: RwLock::new(stamps(&config.cert, &config.key)),
        }))
    }

    /// Reads the pair again and puts it in force; on failure the pair in
    /// force stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let stamped = stamps(&self.cert, &self.key);
        let pair = read_pair(&self.cert, &self.key)?;
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(pair);
        *self.stamps.write().unwrap_or_else(std::sync::PoisonError::into_inner) = stamped;
        Ok(())
    }

    /// Whether either file changed since it was last read.
    fn changed(&self) -> bool {
        *self.stamps.read().unwrap_or_else(std::sync::PoisonError::into_inner) != stamps(&self.cert, &self.key)
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
    }
}

fn stamps(cert: &Path, key: &Path) -> (Option<SystemTime>, Option<SystemTime>) {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    (modified(cert), modified(key))
}

fn read_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let (chain, private) =
        svc_client::trust::read_pair(cert, key).map_err(|(path, source)| TlsError::Unread { path, source })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate(cert.to_owned()));
    }
    CertifiedKey::from_der(chain, private, &provider()).map_err(|source| TlsError::Refused {
        cert: cert.to_owned(),
        key: key.to_owned(),
        source,
    })
}

/// The acceptor of a node's public and admin listeners: TLS 1.3 and 1.2,
/// `h2` then `http/1.1` by ALPN, the pair in force from `certificates`.
pub fn acceptor(certificates: Arc<Certificates>) -> Result<TlsAcceptor, TlsError> {
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(TlsError::Settings)?
        .with_no_client_auth()
        .with_cert_resolver(certificates);
    Ok(with_alpn(config))
}

/// The acceptor of home's internal listener (mutual TLS): as [`acceptor`],
/// and the client must show a certificate the deployment's CA (`ca`, alone)
/// issued for client use; a client without one is refused in the
/// handshake, before a byte of a request is read. Which region it names is
/// judged per request ([`PeerRegions`]).
pub fn link_acceptor(certificates: Arc<Certificates>, ca: &Path) -> Result<TlsAcceptor, TlsError> {
    let roots = svc_client::trust::deployment_roots(ca)
        .map_err(|e| TlsError::Ca { path: ca.to_owned(), detail: e.to_string() })?;
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| TlsError::Ca { path: ca.to_owned(), detail: e.to_string() })?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(TlsError::Settings)?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(certificates);
    Ok(with_alpn(config))
}

fn with_alpn(mut config: rustls::ServerConfig) -> TlsAcceptor {
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

/// The regions a connection's client certificate names (a request
/// extension on a mutual-TLS listener), for the link to hold a region to
/// the name its certificate gives.
#[derive(Debug, Clone, Default)]
pub struct PeerRegions(pub Arc<[String]>);

impl PeerRegions {
    /// What the client certificate of a finished handshake names.
    pub fn of(connection: &rustls::ServerConnection) -> Option<PeerRegions> {
        let leaf = connection.peer_certificates()?.first()?;
        Some(PeerRegions(svc_client::trust::regions_named(leaf).into()))
    }
}

/// Reads the pair again on `SIGHUP`, and when a file changes, until
/// `shutdown` turns true.
pub fn watch(certificates: Arc<Certificates>, mut shutdown: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    // Listening before this returns: a SIGHUP sent once the node is up is
    // never the default action's (the end of the process).
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    tokio::spawn(async move {
        loop {
            let hangup = async {
                match hangups.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            let asked = tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => return,
                _ = hangup => true,
                _ = tokio::time::sleep(LOOK_EVERY) => false,
            };
            if asked || certificates.changed() {
                match certificates.reload() {
                    Ok(()) => tracing::info!(cert = %certificates.cert.display(), "TLS certificate read again"),
                    Err(e) => tracing::error!(error = %e, "TLS certificate not read again; the one in force stays"),
                }
            }
        }
    })
}
