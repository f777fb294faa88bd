//! Sending requests to a node over HTTP (HTTP/1.1 or, with prior knowledge,
//! HTTP/2), and reading the answer whole.

use axum::body::Body;
use axum::http::{Request, Uri};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::ClientError;

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
    client: Client<HttpConnector, Body>,
}

impl Transport {
    pub fn new(base_url: &str) -> Result<Transport, ClientError> {
        Self::build(base_url, false)
    }

    /// HTTP/2 with prior knowledge: one connection multiplexes every
    /// request, as between the regions of a deployment.
    pub fn http2(base_url: &str) -> Result<Transport, ClientError> {
        Self::build(base_url, true)
    }

    fn build(base_url: &str, http2: bool) -> Result<Transport, ClientError> {
        let base: Uri = base_url.parse().map_err(|source| ClientError::Url { url: base_url.to_owned(), source })?;
        if base.scheme_str() != Some("http") || base.authority().is_none() {
            return Err(ClientError::NotHttp { url: base_url.to_owned() });
        }
        let client = Client::builder(TokioExecutor::new()).http2_only(http2).build_http();
        Ok(Transport { base, client })
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
        // Base and path were both checked as URI parts: together they parse.
        if let Ok(uri) = format!("http://{authority}{path}").parse() {
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
