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

/// Why a request got no answer, for logs and the person who asked.
pub type OutboundError = String;

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
    pub clock: crate::clock::SharedClock,
}

impl Outbound {
    /// Trusts the web PKI's roots and the operator's own, if it names any.
    pub fn new(extra_roots_pem: Option<&Path>, bot: Option<Bot>) -> Result<Outbound, String> {
        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        if let Some(path) = extra_roots_pem {
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("{}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
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
        let host = url.host_str().ok_or("the URL has no host")?.to_owned();
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
            let signed = web_bot_auth::sign_request(&bot.key, &authority, &bot.agent, created, &crate::clock::random())
                .ok_or("the request's authority or agent is not printable ASCII")?;
            request = request
                .header("signature-agent", signed.signature_agent)
                .header("signature-input", signed.signature_input)
                .header("signature", signed.signature);
        }
        let request = request.body(Full::new(body)).map_err(|e| e.to_string())?;
        let tcp = tokio::net::TcpStream::connect(address).await.map_err(|e| format!("connecting: {e}"))?;
        let response = match url.scheme() {
            "https" => {
                let name = ServerName::try_from(host.trim_matches(['[', ']']).to_owned()).map_err(|e| e.to_string())?;
                let tls = self.tls.connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
                exchange(TokioIo::new(tls), request).await?
            }
            "http" => exchange(TokioIo::new(tcp), request).await?,
            other => return Err(format!("{other} is not http or https")),
        };
        let (parts, body) = response.into_parts();
        let declared = parts
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(format!("the answer is over {limit} bytes"));
        }
        let body = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|_| format!("the answer is over {limit} bytes, or its body broke off"))?
            .to_bytes();
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
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(connection);
    sender.send_request(request).await.map_err(|e| format!("HTTP: {e}"))
}
