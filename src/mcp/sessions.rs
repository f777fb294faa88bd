//! The public server's sessions: rmcp's local sessions, each id named after
//! the region that opened it, and no more of them than the node allows.
//!
//! The id is `{region}.{random}.{tag}`. A session lives in the memory of the
//! region that opened it, so the front door sends a request carrying an id
//! to the region the id names (`session_region`), whichever region is
//! nearest. The tag binds the id to the client address that opened it
//! (`svc_core::net::address_tag` under a secret drawn at start): presented
//! from another address, the id is as unknown as an ended one.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};

/// Why a session could not be opened or reached.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error("every public MCP session this node allows ({0}) is open")]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

tokio::task_local! {
    /// The client address of the request being served, for the session it may open.
    static OPENER: String;
}

/// Serves `future` (a request) on behalf of `client`: a session it opens is
/// bound to that address.
pub async fn on_behalf_of<F: std::future::Future>(client: String, future: F) -> F::Output {
    OPENER.scope(client, future).await
}

/// The region a session id names, if it names one.
pub fn session_region(id: &str) -> Option<&str> {
    id.split_once('.').map(|(region, _)| region).filter(|r| !r.is_empty())
}

/// rmcp's [`LocalSessionManager`], opening sessions under region-named ids
/// and no more than the cap. An id another region opened is simply not
/// among this one's: `404`, as for any unknown session.
pub struct RegionSessions {
    region: String,
    cap: usize,
    inner: LocalSessionManager,
    /// Opening is one at a time, so the count checked is the count kept.
    opening: tokio::sync::Mutex<()>,
    /// Keys the address tags; drawn at start, as sessions do not outlive the process.
    secret: [u8; 32],
}

impl RegionSessions {
    pub fn new(region: &str, cap: usize, idle: Duration) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        let secret = crate::clock::random::<32>();
        Arc::new(RegionSessions { region: region.to_owned(), cap, inner, opening: tokio::sync::Mutex::new(()), secret })
    }

    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    fn new_id(&self, client: &str) -> SessionId {
        let tag = svc_core::net::address_tag(&self.secret, client);
        SessionId::from(format!("{}.{}.{tag}", self.region, hex::encode(crate::clock::random::<16>())))
    }

    /// Whether `id` was opened from `client`'s address.
    pub fn bound_to(&self, id: &str, client: &str) -> bool {
        id.rsplit_once('.').is_some_and(|(_, tag)| tag == svc_core::net::address_tag(&self.secret, client))
    }
}

impl SessionManager for RegionSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one = self.opening.lock().await;
        if self.open().await >= self.cap {
            return Err(SessionsError::Full(self.cap));
        }
        let client = OPENER.try_with(Clone::clone).unwrap_or_default();
        let id = self.new_id(&client);
        let (handle, worker) = create_local_session(id.clone(), self.inner.session_config.clone());
        self.inner.sessions.write().await.insert(id.clone(), handle);
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R4.4.7
    #[tokio::test]
    async fn a_session_id_names_the_region_that_opened_it_and_the_cap_holds() {
        assert_eq!(session_region("eu.0b6f6a1e1c1d4a3e"), Some("eu"));
        assert_eq!(session_region("no-region-here"), None);
        assert_eq!(session_region(".x"), None);
        let sessions = RegionSessions::new("eu", 2, Duration::from_secs(60));
        let (first, _t1) = sessions.create_session().await.unwrap();
        assert_eq!(session_region(&first), Some("eu"));
        assert!(sessions.bound_to(&first, ""), "opened outside a request: the empty address");
        let (bound, _t2) = on_behalf_of("203.0.113.7".into(), sessions.create_session()).await.unwrap();
        assert!(sessions.bound_to(&bound, "203.0.113.7"));
        assert!(!sessions.bound_to(&bound, "203.0.113.8"));
        assert!(matches!(sessions.create_session().await, Err(SessionsError::Full(2))));
        assert!(!sessions.has_session(&SessionId::from("ap.abc")).await.unwrap());
        sessions.close_session(&first).await.unwrap();
        assert_eq!(sessions.open().await, 1);
        assert!(sessions.create_session().await.is_ok());
    }
}
