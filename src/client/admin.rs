//! The operator's admin API, as a client: one bearer-token call at a time
//! (`svc admin`, the chaos runner, tests that drive a node process).

use serde_json::Value;

use super::ClientError;
use super::transport::Transport;

/// A connection to the admin API.
pub struct Admin {
    transport: Transport,
    trust: super::trust::Trust,
    token: String,
}

impl Admin {
    pub fn new(url: &str, token: String) -> Result<Admin, ClientError> {
        Ok(Admin { transport: Transport::new(url)?, trust: super::trust::Trust::system(), token })
    }

    /// The same connection, believing the node's certificate as `trust` says.
    pub fn trusting(mut self, trust: &super::trust::Trust) -> Result<Admin, ClientError> {
        self.transport = self.transport.with_trust(trust)?;
        self.trust = trust.clone();
        Ok(self)
    }

    /// Whom it believes: another node of the same operator may be asked so.
    pub fn trust(&self) -> &super::trust::Trust {
        &self.trust
    }

    /// The token it presents: another node of the same operator may take it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// One admin call; a problem answer becomes an error carrying its body.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, ClientError> {
        let bytes = body.map(|b| serde_json::to_vec(&b).unwrap_or_default()).unwrap_or_default();
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(bytes))?;
        let answer = self.transport.send(request).await?;
        if (200..300).contains(&answer.status) {
            Ok(answer.json())
        } else {
            let body = String::from_utf8_lossy(&answer.bytes).into_owned();
            Err(ClientError::Status { status: answer.status, path: path.to_owned(), body })
        }
    }
}
