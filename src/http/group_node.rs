//! A member of home's group as a running node. Its Raft member and its
//! group listener run as long as the process; the region (home's actors
//! and listeners) runs on a member only while it leads.
//!
//! A member that does not lead keeps its public and admin addresses as a
//! standby: `/healthz` answers, `/readyz` is `503` naming the leader (so a
//! load balancer prefers the leader), home's public reads (the
//! transparency log, certificates, the key set, verification and verify
//! pages, the formats: `OwnCopy`) are answered from the member's own copy
//! of the group's state, leader or none, signed with home's keys, and
//! every other request (signed retrieval, which bills, included) is sent
//! on to the leader's matching
//! listener when the config names it, or is `503 unavailable` with
//! `Retry-After` while there is none (an election, or a leader without
//! `public_url`/`admin_url`). When leadership moves, the member
//! that gained it starts the region over its store once it applied every
//! committed write, and a member that lost it stops its region: home's
//! actors never run on two members' behalf at once for long, and a write
//! made on a member that no longer leads is refused by the group.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use openraft::{BasicNode, ServerState};
use serde_json::json;
use svc_client::transport::Transport;
use svc_clock::SharedClock;
use svc_consensus::member::{Member, Settings};
use svc_core::problem::Code;
use svc_node::config::NodeConfig;
use svc_node::region::StandbyIndex;
use svc_node::region::own_copy::{OwnCopy, OwnCopyError};
use svc_store::Store;
use tokio::sync::{Mutex, watch};

use crate::api::group::{GroupState, router};
use crate::api::listener::{bind, serve};
use crate::node::{Node, NodeError};

/// A running member of home's group.
pub struct GroupNode {
    pub member: Arc<Member>,
    /// The member's store: the group's state as this member applied it.
    pub store: Store,
    /// Where it takes the others' Raft messages.
    pub group_addr: SocketAddr,
    /// The region, while this member leads.
    pub leading: Arc<Mutex<Option<Node>>>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl GroupNode {
    /// Opens the store, starts the member and its group listener, makes
    /// the group on its first start (the member of the lowest number), and
    /// leads or stands by as the group decides.
    pub async fn start(config: NodeConfig, clock: SharedClock) -> Result<GroupNode, NodeError> {
        let group = config.home_group.clone().ok_or_else(|| start_error("no [home_group] section"))?;
        group.check(config.allow_plain_http).map_err(svc_node::region::StartError::from)?;
        let store = svc_node::region::open_store(&config)?;
        let joining = || -> svc_store::StoreResult<bool> {
            Ok(store.holds_group_state()? && !svc_consensus::member::was_a_member(&store)?)
        };
        // A store that held data before its group was made (a lone home's)
        // has no log of it: only the member that makes the group may take
        // it, and sends the others a snapshot of it (`Roles::grow`); any
        // other member would have it replaced by the group's state.
        let lone_data = joining().map_err(|e| start_error(&e.to_string()))?;
        let lowest = group.members.iter().map(|m| m.id).min().unwrap_or(group.id);
        if lone_data && group.id != lowest {
            return Err(start_error(&format!(
                "this store holds data and was never in a group: give it to member {lowest}, which makes the \
                 group and sends it to the others, and start member {} over an empty data_dir",
                group.id
            )));
        }
        let trust = match &config.tls {
            Some(tls) => {
                let ca = tls.ca.as_deref().ok_or_else(|| start_error("[home_group] over TLS needs tls.ca"))?;
                let home = config.replication.as_ref().map_or("home", |r| r.home_region.as_str());
                svc_client::trust::Trust::link(ca, home, (&tls.cert, &tls.key))
                    .map_err(|e| start_error(&e.to_string()))?
            }
            None => svc_client::trust::Trust::system(),
        };
        let settings = Settings {
            id: group.id,
            heartbeat_ms: group.heartbeat_ms,
            election_ms: (group.election_ms[0], group.election_ms[1]),
            commit_timeout: Duration::from_millis(group.commit_timeout_ms),
            snapshots: config.data_dir.join("group-snapshots"),
            snapshot_every: group.snapshot_every,
            logs_kept: group.logs_kept,
        };
        let network =
            svc_node::group::Network { id: group.id, token: group.token.clone(), trust, clock: clock.clone() };
        let member = {
            let store = store.clone();
            tokio::task::spawn_blocking(move || Member::start(&settings, store, network))
                .await
                .map_err(|e| start_error(&e.to_string()))?
                .map_err(|e| start_error(&e.to_string()))?
        };
        let (shutdown, _) = watch::channel(false);
        let tls = match &config.tls {
            Some(tls) => {
                let certificates = crate::tls::Certificates::load(tls)?;
                let ca = tls.ca.as_deref().ok_or_else(|| start_error("[home_group] over TLS needs tls.ca"))?;
                Some(crate::tls::link_acceptor(certificates, ca)?)
            }
            None => None,
        };
        let ids: Vec<u64> = group.members.iter().map(|m| m.id).collect();
        let state =
            GroupState { member: member.clone(), token: group.token.clone(), members: ids, clock: clock.clone() };
        // On the member's runtime: see `Member::runtime`.
        let (listener_task, group_addr) = {
            let _on_member = member.runtime().enter();
            let listener = bind(group.listen).map_err(|source| start_error(&format!("{}: {source}", group.listen)))?;
            let group_addr = listener.local_addr().map_err(|e| start_error(&e.to_string()))?;
            (serve(listener, router(state), config.listener, tls, shutdown.subscribe()), group_addr)
        };
        let mut tasks = vec![listener_task];
        if group.id == lowest {
            let mut members = raft_nodes(&group);
            // A lone home's store: a group of this member, which as its
            // leader adds the others.
            if lone_data {
                tracing::info!(
                    "this store holds data and no group yet: a group of this member, which then adds the others"
                );
                members.retain(|id, _| *id == group.id);
            }
            let initializing = member.clone();
            let made = tokio::task::spawn_blocking(move || initializing.initialize(members)).await;
            let failed = match made {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = failed {
                // Its listener and Raft node go with it.
                let _ = shutdown.send(true);
                for task in tasks {
                    let _ = task.await;
                }
                let _ = tokio::task::spawn_blocking(move || member.stop()).await;
                return Err(start_error(&why));
            }
        }
        let leading = Arc::new(Mutex::new(None));
        let roles = Roles {
            config,
            clock,
            store: store.clone(),
            member: member.clone(),
            leading: leading.clone(),
            growing: Arc::default(),
        };
        tasks.push(tokio::spawn(roles.run(shutdown.subscribe())));
        Ok(GroupNode { member, store, group_addr, leading, shutdown, tasks })
    }

    /// Stops the region (when leading), the standby, the group listener
    /// and the member. Each part has `STOP_WAIT` to stop; one that has
    /// not is named in the log and left behind, so a stop always ends.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            if tokio::time::timeout(STOP_WAIT, task).await.is_err() {
                tracing::error!("a task of this member (its roles or its group listener) did not stop in time");
            }
        }
        if let Some(node) = self.leading.lock().await.take()
            && tokio::time::timeout(STOP_WAIT, node.stop()).await.is_err()
        {
            tracing::error!("this member's region did not stop in time");
        }
        let member = self.member.clone();
        if tokio::time::timeout(STOP_WAIT, tokio::task::spawn_blocking(move || member.stop())).await.is_err() {
            tracing::error!("this member's Raft did not stop in time");
        }
    }
}

/// How long a stop waits for each part of a member.
const STOP_WAIT: Duration = Duration::from_secs(30);

fn start_error(why: &str) -> NodeError {
    NodeError::Start(svc_node::region::StartError::Config(why.to_owned()))
}

/// What follows the group's leadership for one member. Its region runs
/// while Raft says it leads and a quorum of the group answered it within
/// twice the longest election timeout (a lease; 4 s by default): a leader
/// cut off from the others keeps that title in Raft until it hears of a
/// newer term, and would otherwise go on for as long as the cut lasts
/// answering reads from a state the others moved past and taking writes it
/// can never commit.
/// Without the lease it stands by (`503`, no leader to send requests on
/// to) until a quorum answers again. Between the election on the other
/// side and the lease's end, both serve reads: this is not a linearizable
/// read lease.
struct Roles {
    config: NodeConfig,
    clock: SharedClock,
    store: Store,
    member: Arc<Member>,
    leading: Arc<Mutex<Option<Node>>>,
    /// Set while a task adds the members the group lacks (one at a time).
    growing: Arc<std::sync::atomic::AtomicBool>,
}

impl Roles {
    async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let id = self.config.home_group.as_ref().map_or(0, |g| g.id);
        // A leader no quorum has answered for this long has likely been
        // replaced on the other side of a partition: it stops serving (see
        // `Roles`' doc). Twice the longest election timeout, so a leader
        // whose followers are only slow for a moment keeps its region.
        let lease_ms = self.config.home_group.as_ref().map_or(4_000, |g| 2 * g.election_ms[1]);
        let mut metrics = self.member.raft().metrics();
        let mut standby: Option<Standby> = None;
        loop {
            let (leads, leader) = {
                let seen = metrics.borrow_and_update();
                let heard = seen.millis_since_quorum_ack.is_none_or(|ms| ms <= lease_ms);
                (seen.state == ServerState::Leader && seen.current_leader == Some(id) && heard, seen.current_leader)
            };
            let running = self.leading.lock().await.is_some();
            // Set while this member leads without a region: when to try again.
            let mut retry = None;
            if leads && !running {
                if let Some(standby) = standby.take() {
                    standby.stop().await;
                }
                // A leader whose region did not start (its port still
                // taken, say) tries again on a timer of its own, not only
                // when the group's metrics next move.
                if !self.lead().await {
                    retry = Some(tokio::time::Instant::now() + LEAD_RETRY);
                }
            } else if !leads {
                if let Some(node) = self.leading.lock().await.take() {
                    tracing::warn!(leader = ?leader, "this member no longer leads home's group: stopping its region");
                    node.stop().await;
                }
                // A leader without its lease knows no other to send to.
                let leader = leader.filter(|l| *l != id);
                match &standby {
                    Some(running) => {
                        running.leader.send_replace(leader);
                    }
                    None => standby = Some(Standby::start(&self.config, &self.store, &self.clock, leader).await),
                }
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { break },
                _ = tokio::time::sleep_until(retry.unwrap_or_else(tokio::time::Instant::now)), if retry.is_some() => {}
                _ = shutdown.wait_for(|stop| *stop) => break,
            }
        }
        if let Some(standby) = standby {
            standby.stop().await;
        }
    }

    /// Starts the region once this leader applied every committed write;
    /// false when it did not start.
    async fn lead(&self) -> bool {
        // A linearizable read waits until the leader applied what it
        // committed, the first entry of its term included.
        let member = self.member.clone();
        let applied = tokio::task::spawn_blocking(move || member.applied_all()).await;
        if !matches!(applied, Ok(Ok(()))) {
            tracing::warn!(?applied, "elected, but could not apply every committed write yet");
            return false;
        }
        match Node::start_over(self.config.clone(), self.clock.clone(), self.store.clone()).await {
            Ok(node) => {
                tracing::info!("this member leads home's group: its region is up");
                *self.leading.lock().await = Some(node);
                self.grow();
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "this member leads home's group but its region did not start");
                false
            }
        }
    }

    /// While this member leads a group short of the members its config
    /// names (a lone home made a group of itself), adds them, trying again
    /// until every one votes or it no longer leads.
    fn grow(&self) {
        let Some(group) = &self.config.home_group else { return };
        let members = raft_nodes(group);
        let growing = self.growing.clone();
        if members.keys().all(|id| self.member.voters().contains(id)) || growing.swap(true, Relaxed) {
            return;
        }
        let member = self.member.clone();
        tokio::spawn(async move {
            grow_while_leading(member, members).await;
            growing.store(false, Relaxed);
        });
    }
}

/// Every member the config names, as Raft knows them: by number, at the
/// URL of its group listener.
fn raft_nodes(group: &svc_node::config::HomeGroupConfig) -> BTreeMap<u64, BasicNode> {
    group.members.iter().map(|m| (m.id, BasicNode::new(&m.url))).collect()
}

/// How long a leader whose region did not start waits to try again.
const LEAD_RETRY: Duration = Duration::from_secs(1);

/// How long a leader growing its group waits for each step (a snapshot, a
/// new member catching up), and then before it tries again.
const GROW_WAIT: Duration = Duration::from_secs(120);
const GROW_RETRY: Duration = Duration::from_secs(5);

/// Adds `members` to the group `member` leads, trying again every few
/// seconds until every one votes or it no longer leads.
async fn grow_while_leading(member: Arc<Member>, members: BTreeMap<u64, BasicNode>) {
    loop {
        let (growing, want) = (member.clone(), members.clone());
        match tokio::task::spawn_blocking(move || growing.grow(want, GROW_WAIT)).await {
            Ok(Ok(())) => {
                tracing::info!("home's group has every member its config names");
                return;
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "home's group could not add the members its config names yet"),
            Err(e) => tracing::warn!(error = %e, "growing home's group stopped"),
        }
        tokio::time::sleep(GROW_RETRY).await;
        if member.raft().metrics().borrow().state != ServerState::Leader {
            return;
        }
    }
}

/// A member's public and admin addresses while it does not lead, and the
/// search index it keeps meanwhile.
struct Standby {
    leader: watch::Sender<Option<u64>>,
    shutdown: watch::Sender<bool>,
    servers: Vec<tokio::task::JoinHandle<()>>,
    index: Option<StandbyIndex>,
}

impl Standby {
    async fn start(config: &NodeConfig, store: &Store, clock: &SharedClock, leader: Option<u64>) -> Standby {
        // Without it the member still stands by; once elected, its region
        // indexes what it lacks.
        let index = match StandbyIndex::start(config, store, clock).await {
            Ok(index) => Some(index),
            Err(e) => {
                tracing::error!(error = %e, "the standby could not open its search index");
                None
            }
        };
        let (leader, seen) = watch::channel(leader);
        let (shutdown, _) = watch::channel(false);
        let tls = match config.tls.as_ref().map(crate::tls::Certificates::load) {
            Some(Ok(certificates)) => crate::tls::acceptor(certificates).ok(),
            _ => None,
        };
        let copy: Arc<std::sync::OnceLock<OwnCopy>> = Arc::default();
        let mut servers = vec![open_own_copy(config, store, clock, copy.clone(), shutdown.subscribe())];
        let listeners = [(config.listen, Listener::Public), (config.admin_listen, Listener::Admin)];
        for (address, listener) in listeners {
            match bind(address) {
                Ok(bound) => {
                    let relay = Relay::to_leaders(config, listener, seen.clone(), shutdown.subscribe());
                    let mut router = standby_router(config.region.clone(), store.clone(), copy.clone(), relay);
                    if let Listener::Public = listener {
                        router = PublicStandby::router(copy.clone(), router);
                    }
                    servers.push(serve(bound, router, config.listener, tls.clone(), shutdown.subscribe()));
                }
                Err(e) => tracing::error!(%address, error = %e, "the standby could not listen"),
            }
        }
        Standby { leader, shutdown, servers, index }
    }

    /// Stops the listeners, then the index's actors, which let go of the
    /// index for the region to open.
    async fn stop(self) {
        let _ = self.shutdown.send(true);
        for server in self.servers {
            let _ = server.await;
        }
        if let Some(index) = self.index {
            index.stop().await;
        }
    }
}

/// Opens the member's own copy of the group's state into `copy`, off the
/// async threads. Home's keys reach a member's copy only once the group's
/// first leader drew them, so it tries again every second until then (or
/// until the standby stops).
fn open_own_copy(
    config: &NodeConfig,
    store: &Store,
    clock: &SharedClock,
    copy: Arc<std::sync::OnceLock<OwnCopy>>,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let (config, store, clock) = (config.clone(), store.clone(), clock.clone());
    tokio::spawn(async move {
        loop {
            let (config, store, clock) = (config.clone(), store.clone(), clock.clone());
            match tokio::task::spawn_blocking(move || OwnCopy::open(&config, store, clock)).await {
                Ok(Ok(opened)) => {
                    let _ = copy.set(opened);
                    return;
                }
                Ok(Err(OwnCopyError::NoKeysYet)) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "the standby cannot read its own copy: it sends requests on"),
                Err(e) => tracing::error!(error = %e, "opening the standby's own copy stopped"),
            }
            tokio::select! {
                _ = tokio::time::sleep(OWN_COPY_RETRY) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    })
}

/// How long a standby waits before it opens its own copy again.
const OWN_COPY_RETRY: Duration = Duration::from_secs(1);

/// A standby's public listener: the public reads it answers from its own
/// copy of the group's state, leader or none, once that opened, and
/// everything else (everything, until then) sent on.
#[derive(Clone)]
struct PublicStandby {
    copy: Arc<std::sync::OnceLock<OwnCopy>>,
    /// The standby's router alone.
    relaying: Router,
    /// The same with the copy's routes, made once the copy opened.
    with_copy: Arc<std::sync::OnceLock<Router>>,
}

impl PublicStandby {
    fn router(copy: Arc<std::sync::OnceLock<OwnCopy>>, relaying: Router) -> Router {
        let public = PublicStandby { copy, relaying, with_copy: Arc::default() };
        Router::new().fallback(answer_from_own_copy).with_state(public)
    }

    /// The router that answers now.
    fn current(&self) -> Router {
        match self.copy.get() {
            Some(copy) => self
                .with_copy
                .get_or_init(|| self.relaying.clone().merge(crate::api::public::own_copy_router(copy.clone())))
                .clone(),
            None => self.relaying.clone(),
        }
    }
}

async fn answer_from_own_copy(State(public): State<PublicStandby>, request: Request) -> Response {
    use tower::ServiceExt;
    match public.current().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Which of a member's listeners a standby's listener stands for.
#[derive(Clone, Copy)]
enum Listener {
    Public,
    Admin,
}

/// Marks a request a standby sent on to the leader, with the standby's id:
/// a member that takes one back (both thinking the other leads, for the
/// moment of an election) answers `503` rather than sending it round.
pub const RELAYED_HEADER: &str = "x-svc-relayed-by-member";

/// How long a standby waits for the leader to start answering.
const RELAY_WAIT: Duration = Duration::from_secs(30);

/// Where a standby's listener sends requests on: the same listener of the
/// member that leads.
#[derive(Clone)]
struct Relay {
    own: u64,
    leader: watch::Receiver<Option<u64>>,
    to: Arc<BTreeMap<u64, Transport>>,
    /// The standby stopping (this member was elected): requests it is
    /// still relaying end at once, so its listeners let go of the ports
    /// the member's region is about to take.
    stopping: watch::Receiver<bool>,
}

impl Relay {
    /// Each other member's `listener`, as the config names it; a member
    /// whose URL is missing or unusable is left out (its requests: `503`).
    fn to_leaders(
        config: &NodeConfig,
        listener: Listener,
        leader: watch::Receiver<Option<u64>>,
        stopping: watch::Receiver<bool>,
    ) -> Relay {
        let own = config.home_group.as_ref().map_or(0, |g| g.id);
        let trust = match svc_client::trust::Trust::with_ca(config.tls.as_ref().and_then(|t| t.ca.as_deref())) {
            Ok(trust) => trust,
            Err(e) => {
                tracing::error!(error = %e, "the standby cannot believe the other members' certificates");
                return Relay { own, leader, to: Arc::default(), stopping };
            }
        };
        let mut to = BTreeMap::new();
        for member in config.home_group.iter().flat_map(|g| &g.members).filter(|m| m.id != own) {
            let url = match listener {
                Listener::Public => member.public_url.as_deref(),
                Listener::Admin => member.admin_url.as_deref(),
            };
            match url.map(|url| Transport::trusting(url, &trust)) {
                Some(Ok(transport)) => {
                    to.insert(member.id, transport);
                }
                Some(Err(e)) => tracing::error!(member = member.id, error = %e, "a member's URL is unusable"),
                None => {}
            }
        }
        Relay { own, leader, to: Arc::new(to), stopping }
    }
}

fn standby_router(region: String, store: Store, copy: Arc<std::sync::OnceLock<OwnCopy>>, relay: Relay) -> Router {
    let ready_region = region.clone();
    let ready_leader = relay.leader.clone();
    Router::new()
        .route(
            "/healthz",
            get(move || async move { axum::Json(json!({"status": "ok", "region": region, "role": "home-standby"})) }),
        )
        .route(
            "/readyz",
            get(move || {
                let leader = *ready_leader.borrow();
                let region = ready_region.clone();
                // How far the member's own search index got, and whether it
                // answers home's public reads itself yet.
                let indexed = svc_node::actors::indexer::indexed_seq(&store).ok();
                let own_copy = copy.get().is_some();
                async move {
                    let body = json!({"ready": false, "region": region, "role": "home-standby",
                        "group_leader": leader, "indexed_seq": indexed, "own_copy": own_copy});
                    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
                }
            }),
        )
        .fallback(relay_to_leader)
        .with_state(relay)
}

/// Sends a request on to the leader's listener, as a proxy would: the
/// caller's address joins `X-Forwarded-For` (the leader believes it when
/// it lists the members among `trusted_proxies`), and the trace goes on.
async fn relay_to_leader(State(relay): State<Relay>, request: Request) -> Response {
    let leader = *relay.leader.borrow();
    let Some(transport) = leader.filter(|id| *id != relay.own).and_then(|id| relay.to.get(&id)) else {
        return standing_by("this member of home's group does not lead it, and knows no leader to send the request to");
    };
    if request.headers().contains_key(RELAYED_HEADER) {
        return standing_by("another member sent this request here, but this member does not lead: ask again");
    }
    let (parts, body) = request.into_parts();
    let hop = svc_node::trace::Hop::start(&parts.headers);
    let mut onward = crate::forwarded::onward(&parts, body, &hop);
    onward.headers_mut().insert(RELAYED_HEADER, HeaderValue::from(relay.own));
    let mut stopping = relay.stopping.clone();
    let relayed = tokio::select! {
        relayed = tokio::time::timeout(RELAY_WAIT, transport.try_forward(onward)) => relayed,
        _ = stopping.wait_for(|stop| *stop) => return crate::forwarded::outcome_unknown(),
    };
    match relayed {
        Ok(Ok(answer)) => answer.map(Body::new),
        Ok(Err(e)) if e.is_connect() => {
            tracing::warn!(leader = ?leader, error = %e, "the standby could not reach the leader");
            standing_by("the member leading home's group cannot be reached from this one")
        }
        // The leader may have acted on it: no answer rather than a refusal.
        Ok(Err(e)) => {
            tracing::warn!(leader = ?leader, error = %e, "the leader failed mid-request");
            crate::forwarded::outcome_unknown()
        }
        Err(_) => {
            tracing::warn!(leader = ?leader, "the leader did not answer in time");
            crate::forwarded::outcome_unknown()
        }
    }
}

/// A request a standby cannot send on.
fn standing_by(why: &str) -> Response {
    svc_node::service::Error::retry_after(Code::Unavailable, 1_000, why.to_owned()).into_response()
}
