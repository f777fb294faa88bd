//! A read region's calls to home's internal routes, over one HTTP/2
//! connection, each bounded in time so a partition never hangs a caller.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, header};
use serde::{Serialize, de::DeserializeOwned};
use svc_core::link;
use svc_core::time::UnixMs;

use super::exchange::{LeaseAsk, LeaseGrant, OutOfRange};
use svc_client::ClientError;
use svc_client::transport::{Answer, Transport};
use svc_clock::SharedClock;

/// How long a lease request may take: it holds up the request being served.
const LEASE_WAIT: Duration = Duration::from_secs(1);
/// After a failed lease request, requests needing one fail at once for
/// this long rather than each waiting on an unreachable home.
const LEASE_BACKOFF_MS: i64 = 1_000;

/// Why a call to home failed. The messages name the route, for the logs.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// A request that does not build.
    #[error("{0}")]
    Request(#[from] axum::http::Error),
    /// Home could not be reached, or its answer broke off.
    #[error("{0}")]
    Transport(#[from] ClientError),
    #[error("home did not answer {path} within {ms} ms")]
    Timeout { path: String, ms: u128 },
    #[error("home answered {path} with {status}")]
    Status { path: String, status: u16 },
    /// A request body that does not encode.
    #[error("{0}")]
    Encode(#[source] postcard::Error),
    #[error("home's answer to {path}: {source}")]
    Decode { path: String, source: postcard::Error },
    /// A value in home's answer out of range: never used.
    #[error("home's answer is out of range: {0}")]
    OutOfRange(#[from] OutOfRange),
    /// An answer whose MAC is not home's for the request: never used.
    #[error("the answer to {path} does not carry home's MAC for it")]
    Forged { path: String },
    /// Every forwarding slot to home is taken.
    #[error("{FORWARDS_IN_FLIGHT} requests are already on their way to home")]
    Busy,
    /// Lease requests fail fast for a moment after one failed.
    #[error("home was unreachable a moment ago")]
    BackingOff,
}

impl LinkError {
    /// Whether another member of home's group may answer what this one did
    /// not: it was unreachable, silent, or standing by.
    fn another_member_may_answer(&self) -> bool {
        matches!(self, LinkError::Transport(_) | LinkError::Timeout { .. } | LinkError::Status { status: 503, .. })
    }
}

/// Forwarded client requests in flight to home at once: below home's
/// streams per connection (128 by default), so clients can never take every
/// stream of the connection they use.
pub const FORWARDS_IN_FLIGHT: usize = 96;

/// Where a read region reaches home: its public port (for the client
/// requests it forwards) and its internal listener (for its own traffic),
/// for each member when home is a group (whichever leads answers).
pub struct HomeUrls<'a> {
    /// Each member's (public, internal) URLs; one for a home of one.
    pub members: Vec<(&'a str, &'a str)>,
    /// Whom to believe there over `https://`.
    pub trust: &'a svc_client::trust::Trust,
    /// Whom the internal address is believed to be (mutual TLS under the
    /// deployment's CA, or `trust` over plain HTTP).
    pub link_trust: &'a svc_client::trust::Trust,
}

/// A read region's two connections to home: one to home's internal
/// listener for its own traffic (the log, nonces, reports, leases), one to
/// its public port for the client requests it forwards. A flood of slow forwarded requests cannot hold up
/// replication, which shares no connection with them. When home is a
/// group, the region keeps the pair of each member and uses the member
/// that answered last; a member that does not answer (it stands by, or is
/// gone) sends it on to the next.
pub struct HomeLink {
    clock: SharedClock,
    /// Each member's (internal, public) connections.
    members: Vec<(Transport, Transport)>,
    /// The member that answered last.
    leading: AtomicUsize,
    forwards: tokio::sync::Semaphore,
    token: String,
    region: String,
    lease_units: i64,
    /// Lease requests fail fast until then (ms).
    lease_down_until: AtomicI64,
    /// Companies whose lease is being renewed in the background.
    renewing: Mutex<HashSet<String>>,
}

impl HomeLink {
    pub fn new(
        home: HomeUrls<'_>,
        token: String,
        region: String,
        lease_units: i64,
        clock: SharedClock,
    ) -> Result<Self, ClientError> {
        let members = home
            .members
            .iter()
            .map(|(public, internal)| {
                Ok((Transport::http2(internal, home.link_trust)?, Transport::http2(public, home.trust)?))
            })
            .collect::<Result<Vec<_>, ClientError>>()?;
        if members.is_empty() {
            return Err(ClientError::NotHttp { url: String::new() });
        }
        Ok(HomeLink {
            clock,
            members,
            leading: AtomicUsize::new(0),
            forwards: tokio::sync::Semaphore::new(FORWARDS_IN_FLIGHT),
            token,
            region,
            lease_units,
            lease_down_until: AtomicI64::new(0),
            renewing: Mutex::new(HashSet::new()),
        })
    }

    /// Sends a client's request on to home on the clients' connection, if
    /// one of its [`FORWARDS_IN_FLIGHT`] slots is free.
    pub async fn forward(
        &self,
        request: Request<Body>,
    ) -> Result<axum::http::Response<hyper::body::Incoming>, LinkError> {
        let _slot = self.forwards.try_acquire().map_err(|_| LinkError::Busy)?;
        Ok(self.member(self.leading.load(Ordering::Relaxed)).1.forward(request).await?)
    }

    /// The conversation secret home wrapped for this region, unwrapped with
    /// the region's own token; `None` if it is not home's for this region.
    pub fn unwrap_conversation_secret(&self, wrapped: &[u8]) -> Option<Vec<u8>> {
        svc_core::wrap::unwrap(&link::conversation_key(&self.token), self.region.as_bytes(), wrapped)
    }

    /// The region's clock, as its requests are stamped with it.
    pub fn now(&self) -> UnixMs {
        self.clock.now()
    }

    fn member(&self, at: usize) -> &(Transport, Transport) {
        &self.members[at % self.members.len()]
    }

    /// Sends a request to home under the region's MAC, within `wait`, and
    /// answers home's reply only if its MAC is home's for this request.
    /// When home is a group, a member that cannot be reached, does not
    /// answer in time or answers `503` sends the request on to the next
    /// (a fresh request: a new id and MAC), and the one that answers is
    /// used from then on.
    pub async fn send(
        &self,
        method: &str,
        path_and_query: &str,
        body: Vec<u8>,
        wait: Duration,
    ) -> Result<Answer, LinkError> {
        let first = self.leading.load(Ordering::Relaxed);
        let mut tried = 0;
        loop {
            let at = (first + tried) % self.members.len();
            match self.send_to(at, method, path_and_query, body.clone(), wait).await {
                Err(e) if tried + 1 < self.members.len() && e.another_member_may_answer() => tried += 1,
                answered => {
                    if answered.is_ok() && at != first {
                        self.leading.store(at, Ordering::Relaxed);
                        tracing::info!(member = at, "home's leading member moved: the link follows it");
                    }
                    return answered;
                }
            }
        }
    }

    async fn send_to(
        &self,
        member: usize,
        method: &str,
        path_and_query: &str,
        body: Vec<u8>,
        wait: Duration,
    ) -> Result<Answer, LinkError> {
        let at = self.clock.now().0;
        let id = hex::encode(svc_clock::random::<16>());
        let body_sha256 = link::body_digest(&body);
        let head = link::RequestHead {
            region: &self.region,
            method,
            target: path_and_query,
            at_ms: at,
            id: &id,
            body_sha256: &body_sha256,
        };
        let mac = link::request_mac(&self.token, &head);
        let request = Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(link::REGION_HEADER, &self.region)
            .header(link::AT_HEADER, at)
            .header(link::ID_HEADER, &id)
            .header(link::BODY_HEADER, &body_sha256)
            .header(link::MAC_HEADER, mac)
            .header(header::CONTENT_TYPE, "application/vnd.svc.postcard")
            .body(Body::from(body))?;
        let answer = tokio::time::timeout(wait, self.member(member).0.send(request))
            .await
            .map_err(|_| LinkError::Timeout { path: path_and_query.to_owned(), ms: wait.as_millis() })??;
        if answer.status != 200 {
            return Err(LinkError::Status { path: path_and_query.to_owned(), status: answer.status });
        }
        let header = |name: &str| answer.headers.get(name).and_then(|v| v.to_str().ok());
        let (presented, head) = (header(link::MAC_HEADER).unwrap_or(""), header(super::LOG_HEAD_HEADER));
        if !link::answer_mac_matches(&self.token, presented, (at, path_and_query), answer.status, head, &answer.bytes) {
            return Err(LinkError::Forged { path: path_and_query.to_owned() });
        }
        Ok(answer)
    }

    /// A postcard request and answer.
    pub async fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        method: &str,
        path_and_query: &str,
        body: Option<&Q>,
        wait: Duration,
    ) -> Result<A, LinkError> {
        let bytes = match body {
            Some(body) => postcard::to_stdvec(body).map_err(LinkError::Encode)?,
            None => Vec::new(),
        };
        let answer = self.send(method, path_and_query, bytes, wait).await?;
        postcard::from_bytes(&answer.bytes)
            .map_err(|source| LinkError::Decode { path: path_and_query.to_owned(), source })
    }

    /// Asks home for a lease of the company's allowance.
    pub async fn lease(&self, company_uuid: &str, now: UnixMs) -> Result<LeaseGrant, LinkError> {
        if now.0 < self.lease_down_until.load(Ordering::Relaxed) {
            return Err(LinkError::BackingOff);
        }
        let ask =
            LeaseAsk { region: self.region.clone(), company_uuid: company_uuid.to_owned(), units: self.lease_units };
        let grant = self.call::<_, LeaseGrant>("POST", "/internal/v1/lease", Some(&ask), LEASE_WAIT).await;
        let grant = grant.and_then(|g| g.check(&ask, now).map(|()| g).map_err(LinkError::OutOfRange));
        if grant.is_err() {
            self.lease_down_until.store(now.0 + LEASE_BACKOFF_MS, Ordering::Relaxed);
        }
        grant
    }

    /// Marks a background renewal for the company as started; false when
    /// one already runs.
    pub fn start_renewal(&self, company_uuid: &str) -> bool {
        self.renewing.lock().map(|mut set| set.insert(company_uuid.to_owned())).unwrap_or(false)
    }

    pub fn end_renewal(&self, company_uuid: &str) {
        if let Ok(mut set) = self.renewing.lock() {
            set.remove(company_uuid);
        }
    }
}
