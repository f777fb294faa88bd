//! Whom a client believes over `https://`: the system's roots, plus a CA
//! file the user names (a deployment's own, `--ca`). Read once, shared by
//! every transport made from it.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::ClientError;

/// The roots a client trusts, as rustls settings.
#[derive(Clone, Debug)]
pub struct Trust {
    config: Arc<rustls::ClientConfig>,
}

/// The system's roots, read once per process.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::debug!(%error, "a system root certificate was not read");
        }
        found.certs
    })
}

impl Trust {
    /// The system's roots alone, made once per process.
    pub fn system() -> Trust {
        static SYSTEM: OnceLock<Trust> = OnceLock::new();
        SYSTEM.get_or_init(|| Trust::build(None).expect("the system's roots need no file")).clone()
    }

    /// The system's roots, and every certificate in `ca` (PEM) when given.
    pub fn with_ca(ca: Option<&Path>) -> Result<Trust, ClientError> {
        match ca {
            None => Ok(Trust::system()),
            Some(_) => Trust::build(ca),
        }
    }

    fn build(ca: Option<&Path>) -> Result<Trust, ClientError> {
        let mut roots = rustls::RootCertStore::empty();
        // A system root rustls cannot use is passed over, as browsers do.
        let _ = roots.add_parsable_certificates(system_roots().iter().cloned());
        if let Some(path) = ca {
            let unread = |source: rustls::pki_types::pem::Error| ClientError::Ca {
                path: path.to_owned(),
                detail: source.to_string(),
            };
            let mut added = 0;
            for cert in CertificateDer::pem_file_iter(path).map_err(unread)? {
                roots
                    .add(cert.map_err(unread)?)
                    .map_err(|e| ClientError::Ca { path: path.to_owned(), detail: e.to_string() })?;
                added += 1;
            }
            if added == 0 {
                return Err(ClientError::Ca { path: path.to_owned(), detail: "no certificate in it".into() });
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| ClientError::Ca { path: ca.map(Path::to_owned).unwrap_or_default(), detail: e.to_string() })?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Trust { config: Arc::new(config) })
    }

    /// The settings, for one connector to set its ALPN on.
    pub(crate) fn client_config(&self) -> rustls::ClientConfig {
        (*self.config).clone()
    }
}
