//! The public server's sessions: rmcp's local sessions, each id named after
//! the region that opened it, and no more of them than the node allows.
//!
//! The id is `{region}.{random}.{tag}`. A session lives in the memory of the
//! region that opened it, so the front door sends a request carrying an id
//! to the region the id names (`session_region`), whichever region is
//! nearest. The tag binds the id to the client address that opened it
//! (`svc_core::net::address_tag` under a secret drawn at start): presented
//! from another address, the id is as unknown as an ended one.
//!
//! Nobody can take every place: each client address (IPv6 by its /64) holds
//! at most its share of sessions, and a new session past a share or past
//! the node's cap ends the least recently active one there instead of being
//! refused. A session that never called a tool ends after a short idle time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};

/// Why a session could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
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

/// How many sessions, and how long the quiet ones live.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Sessions open at once on this node.
    pub cap: usize,
    /// Sessions one client address share holds at once.
    pub per_address: usize,
    /// A session with no request for this long ends (R4.4.8).
    pub idle: Duration,
    /// A session that never called a tool ends after this long idle.
    pub untouched: Duration,
}

/// What the node knows of a session beside rmcp's own state.
struct Held {
    share: String,
    active_at: Instant,
    called_tool: bool,
}

/// rmcp's [`LocalSessionManager`], opening sessions under region-named ids
/// within the limits. An id another region opened is simply not among this
/// one's: `404`, as for any unknown session.
pub struct RegionSessions {
    region: String,
    limits: SessionLimits,
    inner: LocalSessionManager,
    /// Opening is one at a time, so the counts checked are the counts kept.
    opening: tokio::sync::Mutex<()>,
    held: Mutex<HashMap<SessionId, Held>>,
    /// Keys the address tags; drawn at start, as sessions do not outlive the process.
    secret: [u8; 32],
}

impl RegionSessions {
    pub fn new(region: &str, limits: SessionLimits) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        let secret = svc_clock::random::<32>();
        let limits = SessionLimits { cap: limits.cap.max(1), per_address: limits.per_address.max(1), ..limits };
        Arc::new(RegionSessions {
            region: region.to_owned(),
            limits,
            inner,
            opening: tokio::sync::Mutex::new(()),
            held: Mutex::new(HashMap::new()),
            secret,
        })
    }

    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    pub fn cap(&self) -> usize {
        self.limits.cap
    }

    fn new_id(&self, client: &str) -> SessionId {
        let tag = svc_core::net::address_tag(&self.secret, client);
        SessionId::from(format!("{}.{}.{tag}", self.region, hex::encode(svc_clock::random::<16>())))
    }

    /// Whether `id` was opened from `client`'s address.
    pub fn bound_to(&self, id: &str, client: &str) -> bool {
        id.rsplit_once('.').is_some_and(|(_, tag)| tag == svc_core::net::address_tag(&self.secret, client))
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Held>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a request of session `id`: when, and whether it calls a tool.
    fn saw(&self, id: &SessionId, message: Option<&ClientJsonRpcMessage>) {
        let calls_tool = message.is_some_and(|m| {
            matches!(m, JsonRpcMessage::Request(JsonRpcRequest { request: ClientRequest::CallToolRequest(_), .. }))
        });
        if let Some(held) = self.held().get_mut(id) {
            held.active_at = Instant::now();
            held.called_tool |= calls_tool;
        }
    }

    /// The sessions to end before one more opens from `share`: those rmcp
    /// ended already (forgotten here), those that never called a tool and
    /// were quiet past `untouched`, then the least recently active of the
    /// share at its limit, and of the node at its cap.
    async fn make_room(&self, share: &str) -> Result<(), SessionsError> {
        let live: std::collections::HashSet<SessionId> = self.inner.sessions.read().await.keys().cloned().collect();
        let now = Instant::now();
        let mut ending = Vec::new();
        {
            let mut held = self.held();
            held.retain(|id, _| live.contains(id));
            let untouched = self.limits.untouched;
            ending.extend(
                held.iter()
                    .filter(|(_, h)| !h.called_tool && now.duration_since(h.active_at) >= untouched)
                    .map(|(id, _)| id.clone()),
            );
            let quietest = |ending: &[SessionId], of_share: bool| {
                held.iter()
                    .filter(|(id, h)| !ending.contains(id) && (!of_share || h.share == share))
                    .min_by_key(|(_, h)| h.active_at)
                    .map(|(id, _)| id.clone())
            };
            let of_share = held.iter().filter(|(id, h)| h.share == share && !ending.contains(id)).count();
            if of_share >= self.limits.per_address
                && let Some(id) = quietest(&ending, true)
            {
                ending.push(id);
            }
            if held.len() - ending.len() >= self.limits.cap
                && let Some(id) = quietest(&ending, false)
            {
                ending.push(id);
            }
            for id in &ending {
                held.remove(id);
            }
        }
        for id in ending {
            self.inner.close_session(&id).await?;
        }
        Ok(())
    }
}

/// The share a client address (as the surface wrote it) is counted under.
fn share_of(client: &str) -> String {
    client.parse::<std::net::IpAddr>().map_or_else(|_| client.to_owned(), svc_core::limits::address_share)
}

impl SessionManager for RegionSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one = self.opening.lock().await;
        let client = OPENER.try_with(Clone::clone).unwrap_or_default();
        let share = share_of(&client);
        self.make_room(&share).await?;
        let id = self.new_id(&client);
        let (handle, worker) = create_local_session(id.clone(), self.inner.session_config.clone());
        self.inner.sessions.write().await.insert(id.clone(), handle);
        self.held().insert(id.clone(), Held { share, active_at: Instant::now(), called_tool: false });
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
        self.held().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.saw(id, Some(&message));
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.saw(id, Some(&message));
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.saw(id, None);
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

    fn limits(cap: usize, per_address: usize, untouched_ms: u64) -> SessionLimits {
        SessionLimits {
            cap,
            per_address,
            idle: Duration::from_secs(60),
            untouched: Duration::from_millis(untouched_ms),
        }
    }

    async fn open_from(sessions: &RegionSessions, client: &str) -> SessionId {
        on_behalf_of(client.into(), sessions.create_session()).await.unwrap().0
    }

    // rule: R4.4.7
    #[tokio::test]
    async fn a_session_id_names_the_region_that_opened_it_and_its_address() {
        assert_eq!(session_region("eu.0b6f6a1e1c1d4a3e"), Some("eu"));
        assert_eq!(session_region("no-region-here"), None);
        assert_eq!(session_region(".x"), None);
        let sessions = RegionSessions::new("eu", limits(2, 2, 60_000));
        let (first, _t1) = sessions.create_session().await.unwrap();
        assert_eq!(session_region(&first), Some("eu"));
        assert!(sessions.bound_to(&first, ""), "opened outside a request: the empty address");
        let bound = open_from(&sessions, "203.0.113.7").await;
        assert!(sessions.bound_to(&bound, "203.0.113.7"));
        assert!(!sessions.bound_to(&bound, "203.0.113.8"));
        assert!(!sessions.has_session(&SessionId::from("ap.abc")).await.unwrap());
        sessions.close_session(&first).await.unwrap();
        assert_eq!(sessions.open().await, 1);
    }

    // One address (an IPv6 one by its /64) opening session after session
    // ends its own quietest, never another's; past the node's cap the
    // quietest anywhere ends; a session that never called a tool ends soon.
    #[tokio::test]
    async fn an_address_holds_its_share_and_the_quietest_session_makes_room() {
        let sessions = RegionSessions::new("eu", limits(4, 2, 60_000));
        let other = open_from(&sessions, "198.51.100.1").await;
        let mine = open_from(&sessions, "2001:db8:1:2::1").await;
        let _second = open_from(&sessions, "2001:db8:1:2::2").await;
        let _third = open_from(&sessions, "2001:db8:1:2::3").await;
        assert!(!sessions.has_session(&mine).await.unwrap(), "the /64's quietest made room");
        assert!(sessions.has_session(&other).await.unwrap(), "another address's is untouched");
        sessions.saw(&other, None);
        let _a = open_from(&sessions, "203.0.113.1").await;
        let _b = open_from(&sessions, "203.0.113.2").await;
        assert_eq!(sessions.open().await, 4, "the node's cap");
        assert!(sessions.has_session(&other).await.unwrap(), "recently active, kept");

        let quick = RegionSessions::new("eu", limits(10, 10, 50));
        let idle = open_from(&quick, "198.51.100.1").await;
        let working = open_from(&quick, "198.51.100.2").await;
        quick.held().get_mut(&working).unwrap().called_tool = true;
        tokio::time::sleep(Duration::from_millis(80)).await;
        let _next = open_from(&quick, "198.51.100.3").await;
        assert!(!quick.has_session(&idle).await.unwrap(), "never called a tool: ended");
        assert!(quick.has_session(&working).await.unwrap(), "a working session lives its full idle time");
    }
}
