//! Whom a client believes over `https://`: the system's roots, plus a CA
//! file the user names (a deployment's own, `--ca`). Read once, shared by
//! every transport made from it.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};

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
        let mut roots = match ca {
            Some(path) => deployment_roots(path)?,
            None => rustls::RootCertStore::empty(),
        };
        // A system root rustls cannot use is passed over, as browsers do.
        let _ = roots.add_parsable_certificates(system_roots().iter().cloned());
        let settings = |e: rustls::Error| ClientError::Ca {
            path: ca.map(Path::to_owned).unwrap_or_default(),
            detail: e.to_string(),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)
            .map_err(settings)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Trust { config: Arc::new(config) })
    }

    /// The trust of one end of the link between regions (mutual TLS): the
    /// deployment's CA alone, not the system's roots; the server's
    /// certificate must name `peer_region` (`urn:svc:region:<name>`), and
    /// this end shows its own certificate (`own`: chain and key files).
    pub fn link(ca: &Path, peer_region: &str, own: (&Path, &Path)) -> Result<Trust, ClientError> {
        let roots = Arc::new(deployment_roots(ca)?);
        let refused = |e: rustls::Error| ClientError::Ca { path: ca.to_owned(), detail: e.to_string() };
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
            .build()
            .map_err(|e| ClientError::Ca { path: ca.to_owned(), detail: e.to_string() })?;
        let verifier = Arc::new(NamesRegion { inner: verifier, region: peer_region.to_owned() });
        let (cert, key) = own;
        let (chain, key) = read_pair(cert, key).map_err(|(path, e)| ClientError::Ca { path, detail: e.to_string() })?;
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(VERSIONS)
            .map_err(refused)?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_auth_cert(chain, key)
            .map_err(|e| ClientError::Ca { path: cert.to_owned(), detail: e.to_string() })?;
        Ok(Trust { config: Arc::new(config) })
    }

    /// The settings, for one connector to set its ALPN on.
    pub fn client_config(&self) -> rustls::ClientConfig {
        (*self.config).clone()
    }
}

/// The TLS versions every end of the project speaks, newest first.
pub const VERSIONS: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];

/// The crypto every end of the project uses: ring.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of a CA file (PEM): a deployment's own roots.
pub fn deployment_roots(path: &Path) -> Result<rustls::RootCertStore, ClientError> {
    let refused = |detail: String| ClientError::Ca { path: path.to_owned(), detail };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| refused(e.to_string()))? {
        roots.add(cert.map_err(|e| refused(e.to_string()))?).map_err(|e| refused(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(refused("no certificate in it".into()));
    }
    Ok(roots)
}

/// A certificate chain (PEM, end-entity first) and its private key, each
/// read from its file; a file that does not read is named with its error.
pub fn read_pair(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), (std::path::PathBuf, rustls::pki_types::pem::Error)>
{
    let unread = |path: &Path| {
        let path = path.to_owned();
        move |e| (path, e)
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(unread(cert))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(unread(cert))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(unread(key))?;
    Ok((chain, key))
}

/// The first certificate of a chain file (PEM): its end-entity one.
pub fn leaf(path: &Path) -> Option<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path).ok()?.next()?.ok()
}

/// The URI a certificate carries for the region it speaks for.
pub const REGION_URI_PREFIX: &str = "urn:svc:region:";

/// The regions a certificate names in its subject alternative names
/// (`urn:svc:region:<name>`); none for a certificate that does not parse.
pub fn regions_named(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else { return Vec::new() };
    let Ok(Some(names)) = parsed.subject_alternative_name() else { return Vec::new() };
    names
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::URI(uri) => uri.strip_prefix(REGION_URI_PREFIX).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// The deployment CA's judgement of a server, and then its name: only the
/// region this end expects may answer for it.
#[derive(Debug)]
struct NamesRegion {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    region: String,
}

/// A link certificate that chains to the CA but names another region.
#[derive(Debug, thiserror::Error)]
#[error("the certificate names region {named:?}, not {expected:?}")]
struct OtherRegion {
    named: Vec<String>,
    expected: String,
}

impl ServerCertVerifier for NamesRegion {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now)?;
        let named = regions_named(end_entity);
        if !named.contains(&self.region) {
            let other = OtherRegion { named, expected: self.region.clone() };
            return Err(rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(other)))));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, signed)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, signed)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
