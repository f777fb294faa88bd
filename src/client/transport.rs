//! Sending requests to a node over HTTP or HTTPS (HTTP/1.1, or HTTP/2: by
//! ALPN over TLS, with prior knowledge over plain HTTP), and reading the
//! answer whole. Over TLS the server is believed as a [`Trust`] says.

use axum::body::Body;
use axum::http::{Request, Uri};
use http_body_util::BodyExt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;

use super::ClientError;
use super::trust::Trust;

/// An answer read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub bytes: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.bytes).unwrap_or(serde_json::Value::Null)
    }
}

/// A pooled HTTP client to one node. The request's `Host` header keeps the
/// public authority it was signed for; only the connection goes to `base`.
#[derive(Clone)]
pub struct Transport {
    base: Uri,
    http2: bool,
    client: Client<HttpsConnector<HttpConnector>, Body>,
}

impl Transport {
    /// A transport that trusts the system's roots over `https://`.
    pub fn new(base_url: &str) -> Result<Transport, ClientError> {
        Self::build(base_url, false, &Trust::system())
    }

    /// A transport that believes servers as `trust` says.
    pub fn trusting(base_url: &str, trust: &Trust) -> Result<Transport, ClientError> {
        Self::build(base_url, false, trust)
    }

    /// HTTP/2 only (by ALPN over TLS, with prior knowledge over plain
    /// HTTP): one connection multiplexes every request, as between the
    /// regions of a deployment.
    pub fn http2(base_url: &str, trust: &Trust) -> Result<Transport, ClientError> {
        Self::build(base_url, true, trust)
    }

    fn build(base_url: &str, http2: bool, trust: &Trust) -> Result<Transport, ClientError> {
        let base: Uri = base_url.parse().map_err(|source| ClientError::Url { url: base_url.to_owned(), source })?;
        if !matches!(base.scheme_str(), Some("http" | "https")) || base.authority().is_none() {
            return Err(ClientError::NotHttp { url: base_url.to_owned() });
        }
        // A node closes a keep-alive connection that waits 10 s for its next
        // request head (60 s of silence on HTTP/2). A pooled connection
        // reused just as the node closes it fails after the request left,
        // which cannot be told from a lost answer; so the pool lets idle
        // connections go well before a node would.
        let idle = if http2 { Duration::from_secs(30) } else { Duration::from_secs(4) };
        // A request is written in pieces (its head, then its body): with
        // Nagle's algorithm on, a piece waits for the peer to acknowledge
        // the one before, which a delayed ACK holds up to 40 ms.
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let tls = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(trust.client_config()).https_or_http();
        // ALPN offers only what the client will speak.
        let connector = match http2 {
            true => tls.enable_http2().wrap_connector(connector),
            false => tls.enable_all_versions().wrap_connector(connector),
        };
        let client = Client::builder(TokioExecutor::new())
            .http2_only(http2)
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(idle)
            .build(connector);
        Ok(Transport { base, http2, client })
    }

    /// The same transport, believing servers as `trust` says.
    pub fn with_trust(&self, trust: &Trust) -> Result<Transport, ClientError> {
        Self::build(&self.base.to_string(), self.http2, trust)
    }

    /// Sends a request whose URI is a path (and query) and streams the answer.
    pub async fn forward(
        &self,
        request: Request<Body>,
    ) -> Result<axum::http::Response<hyper::body::Incoming>, ClientError> {
        self.try_forward(request).await.map_err(|source| ClientError::Transport { base: self.base.to_string(), source })
    }

    /// Like [`forward`](Self::forward), with the client's error, which tells
    /// a refused connection (the request never left) from a failure after.
    pub async fn try_forward(
        &self,
        mut request: Request<Body>,
    ) -> Result<axum::http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        let path = request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let authority = self.base.authority().map(|a| a.as_str()).unwrap_or_default();
        let scheme = self.base.scheme_str().unwrap_or("http");
        // Base and path were both checked as URI parts: together they parse.
        if let Ok(uri) = format!("{scheme}://{authority}{path}").parse() {
            *request.uri_mut() = uri;
        }
        self.client.request(request).await
    }

    /// Sends a request whose URI is a path (and query).
    pub async fn send(&self, request: Request<Body>) -> Result<Answer, ClientError> {
        let response = self.forward(request).await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.map_err(ClientError::Body)?.to_bytes().to_vec();
        Ok(Answer { status, headers, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers each connection's first request and keeps it
    /// open, then closes it on the next without answering: what a node
    /// does when a request arrives just as it lets an idle connection go.
    async fn answers_once_per_connection() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    if stream.read(&mut buf).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    let _ = stream.write_all(answer.as_bytes()).await;
                    let _ = stream.read(&mut buf).await;
                });
            }
        });
        format!("http://{address}")
    }

    fn get() -> Request<Body> {
        Request::get("/").body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_connection_idle_past_the_pool_limit_is_not_reused() {
        let transport = Transport::new(&answers_once_per_connection().await).unwrap();
        assert_eq!(transport.send(get()).await.unwrap().status, 200);
        // Soon after, the pooled connection is reused and the server closes it.
        assert!(transport.send(get()).await.is_err(), "the double closes a reused connection");
        assert_eq!(transport.send(get()).await.unwrap().status, 200);
        // Idle past the pool's limit, a new connection is opened instead.
        tokio::time::sleep(Duration::from_millis(4_500)).await;
        assert_eq!(transport.send(get()).await.unwrap().status, 200);
    }
}
