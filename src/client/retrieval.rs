//! An AI company's side of the retrieval API: every call signed afresh with
//! its retrieval key (tag `svc-retrieval`), the sandbox grant sent while the
//! key may still need introducing, and the key set fetched unsigned.

use svc_core::keys::SigningKey;

use super::transport::{Answer, Transport};
use super::{ClientError, Signer, Unsigned};

pub const TAG_RETRIEVAL: &str = "svc-retrieval";

pub struct RetrievalClient {
    transport: Transport,
    signer: Signer,
    /// The sandbox grant (`svc_sbxk1.`…), sent on every call: production
    /// ignores it, and the sandbox needs it until it has seen the key.
    grant: Option<String>,
}

impl RetrievalClient {
    pub fn new(base_url: &str, authority: &str, key: SigningKey, grant: Option<String>) -> Result<Self, ClientError> {
        Ok(RetrievalClient {
            transport: Transport::new(base_url)?,
            signer: Signer::new(key, authority, TAG_RETRIEVAL),
            grant,
        })
    }

    /// The same client, believing the node's certificate as `trust` says.
    pub fn trusting(mut self, trust: &crate::trust::Trust) -> Result<Self, ClientError> {
        self.transport = self.transport.with_trust(trust)?;
        Ok(self)
    }

    pub fn key_id(&self) -> String {
        self.signer.key.verifying_key().thumbprint()
    }

    /// A signed call; `body` empty for a GET.
    pub async fn call(&self, method: &str, path_and_query: &str, body: Vec<u8>) -> Result<Answer, ClientError> {
        self.call_with(method, path_and_query, body, &[]).await
    }

    /// A signed call with more headers (an ad confirmation's `Idempotency-Key`).
    pub async fn call_with(
        &self,
        method: &str,
        path_and_query: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<Answer, ClientError> {
        let mut unsigned = Unsigned::new(method, path_and_query, body);
        for (name, value) in headers {
            unsigned = unsigned.header(name, value);
        }
        if let Some(grant) = &self.grant {
            unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
        }
        let now = svc_clock::Clock::now(&svc_clock::SystemClock).as_secs();
        let request = self.signer.sign_now(unsigned, now)?;
        self.transport.send(request).await
    }

    /// A call signed at `created` with `nonce`: the same arguments give the
    /// same signed request, so a test or a benchmark can replay it.
    pub async fn call_as(
        &self,
        method: &str,
        path_and_query: &str,
        body: Vec<u8>,
        created: i64,
        nonce: &str,
    ) -> Result<Answer, ClientError> {
        let mut unsigned = Unsigned::new(method, path_and_query, body);
        if let Some(grant) = &self.grant {
            unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
        }
        self.transport.send(self.signer.sign(unsigned, created, nonce)?).await
    }

    /// `GET /.well-known/keys`, unauthenticated.
    pub async fn key_set(&self) -> Result<Answer, ClientError> {
        self.public_get("/.well-known/keys").await
    }

    /// An unauthenticated `GET` of a public route.
    pub async fn public_get(&self, path_and_query: &str) -> Result<Answer, ClientError> {
        let request = axum::http::Request::get(path_and_query)
            .header("host", self.signer.authority.as_str())
            .body(axum::body::Body::empty())?;
        self.transport.send(request).await
    }

    /// The log's origin at this deployment.
    pub fn log_origin(&self) -> String {
        format!("{}/log", self.signer.authority)
    }
}
