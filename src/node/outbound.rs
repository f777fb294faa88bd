//! The service's own outbound HTTP: one request to an address already
//! chosen (the caller decides which addresses it may reach), over HTTPS
//! with rustls and the web PKI's roots plus the operator's, or plain HTTP
//! where the caller allows it; no redirect followed, the answer's body
//! capped while it is read. Ad images and witnesses' cosignatures go
//! through here. Each request is signed the Web Bot Auth way when the
//! client has the service's outbound key (`svc_core::web_bot_auth`), so a
//! site can tell the service's fetches from anyone's.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{HeaderMap, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;
use svc_core::web_bot_auth;

/// Why the client could not be made, or a request got no answer (for
/// logs and the person who asked).
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("{}: {source}", .path.display())]
    RootsUnread { path: std::path::PathBuf, source: rustls::pki_types::pem::Error },
    #[error("{}: {source}", .path.display())]
    RootRefused { path: std::path::PathBuf, source: rustls::Error },
    #[error("TLS settings: {0}")]
    Settings(rustls::Error),
    #[error("the URL has no host")]
    NoHost,
    #[error("the request's authority or agent is not printable ASCII")]
    Unsignable,
    #[error("{0}")]
    Request(hyper::http::Error),
    #[error("connecting: {0}")]
    Connect(std::io::Error),
    #[error("{0}")]
    ServerName(rustls::pki_types::InvalidDnsNameError),
    #[error("TLS: {0}")]
    Handshake(std::io::Error),
    #[error("{0} is not http or https")]
    Scheme(String),
    #[error("HTTP: {0}")]
    Http(hyper::Error),
    #[error("the answer is over {0} bytes")]
    TooLarge(usize),
    #[error("the answer is over {0} bytes, or its body broke off")]
    BrokeOff(usize),
}

/// An answer: its status, headers and body (within the caller's cap).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The client: its TLS settings and signing identity, shared by every request.
pub struct Outbound {
    tls: tokio_rustls::TlsConnector,
    bot: Option<Bot>,
}

/// Who signs outbound requests: the key, the `Signature-Agent` origin whose
/// directory lists it, and the clock the signature's time comes from.
#[derive(Clone)]
pub struct Bot {
    pub key: svc_core::keys::SigningKey,
    pub agent: String,
    pub clock: svc_clock::SharedClock,
}

impl Outbound {
    /// Trusts the web PKI's roots and the operator's own, if it names any.
    pub fn new(extra_roots_pem: Option<&Path>, bot: Option<Bot>) -> Result<Outbound, OutboundError> {
        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        if let Some(path) = extra_roots_pem {
            let unread = |source| OutboundError::RootsUnread { path: path.to_owned(), source };
            for cert in rustls::pki_types::CertificateDer::pem_file_iter(path).map_err(unread)? {
                let cert = cert.map_err(unread)?;
                roots.add(cert).map_err(|source| OutboundError::RootRefused { path: path.to_owned(), source })?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(OutboundError::Settings)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Outbound { tls: tokio_rustls::TlsConnector::from(Arc::new(tls)), bot })
    }

    /// Sends `request` (its target the URL's path and query) to `address`,
    /// the host `url` names, and reads at most `limit` bytes of the answer.
    pub async fn send(
        &self,
        address: SocketAddr,
        url: &url::Url,
        request: hyper::http::request::Builder,
        body: Bytes,
        limit: usize,
    ) -> Result<Answer, OutboundError> {
        let host = url.host_str().ok_or(OutboundError::NoHost)?.to_owned();
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let mut request = request.uri(target).header(hyper::header::HOST, &authority);
        if let Some(bot) = &self.bot {
            let created = bot.clock.now().0.div_euclid(1000);
            let signed = web_bot_auth::sign_request(&bot.key, &authority, &bot.agent, created, &svc_clock::random())
                .ok_or(OutboundError::Unsignable)?;
            request = request
                .header("signature-agent", signed.signature_agent)
                .header("signature-input", signed.signature_input)
                .header("signature", signed.signature);
        }
        let request = request.body(Full::new(body)).map_err(OutboundError::Request)?;
        let tcp = tokio::net::TcpStream::connect(address).await.map_err(OutboundError::Connect)?;
        let response = match url.scheme() {
            "https" => {
                let name = ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
                    .map_err(OutboundError::ServerName)?;
                let tls = self.tls.connect(name, tcp).await.map_err(OutboundError::Handshake)?;
                exchange(TokioIo::new(tls), request).await?
            }
            "http" => exchange(TokioIo::new(tcp), request).await?,
            other => return Err(OutboundError::Scheme(other.to_owned())),
        };
        let (parts, body) = response.into_parts();
        let declared = parts
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(OutboundError::TooLarge(limit));
        }
        let body = Limited::new(body, limit).collect().await.map_err(|_| OutboundError::BrokeOff(limit))?.to_bytes();
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }
}

async fn exchange<T>(
    io: TokioIo<T>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, OutboundError>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.map_err(OutboundError::Http)?;
    tokio::spawn(connection);
    sender.send_request(request).await.map_err(OutboundError::Http)
}
