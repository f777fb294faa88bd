//! A member of home's group as a running node. Its Raft member and its
//! group listener run as long as the process; the region (home's actors
//! and listeners) runs on a member only while it leads.
//!
//! A member that does not lead keeps its public and admin addresses as a
//! standby: `/healthz` answers, `/readyz` is `503` naming the leader, and
//! every other request is `503 unavailable` with `Retry-After`, so a client
//! or a load balancer goes to the leader. When leadership moves, the member
//! that gained it starts the region over its store once it applied every
//! committed write, and a member that lost it stops its region: home's
//! actors never run on two members' behalf at once for long, and a write
//! made on a member that no longer leads is refused by the group.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use openraft::{BasicNode, ServerState};
use serde_json::json;
use svc_clock::SharedClock;
use svc_consensus::member::{Member, Settings};
use svc_core::problem::Code;
use svc_node::config::NodeConfig;
use svc_store::Store;
use tokio::sync::{Mutex, watch};

use crate::api::group::{GroupState, router};
use crate::api::listener::{bind, serve};
use crate::node::{Node, NodeError};

/// A running member of home's group.
pub struct GroupNode {
    pub member: Arc<Member>,
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
        let listener = bind(group.listen).map_err(|source| start_error(&format!("{}: {source}", group.listen)))?;
        let group_addr = listener.local_addr().map_err(|e| start_error(&e.to_string()))?;
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
        let mut tasks = vec![serve(listener, router(state), config.listener, tls, shutdown.subscribe())];
        if group.id == group.members.iter().map(|m| m.id).min().unwrap_or(group.id) {
            let members: BTreeMap<u64, BasicNode> =
                group.members.iter().map(|m| (m.id, BasicNode::new(&m.url))).collect();
            let initializing = member.clone();
            tokio::task::spawn_blocking(move || initializing.initialize(members))
                .await
                .map_err(|e| start_error(&e.to_string()))?
                .map_err(|e| start_error(&e.to_string()))?;
        }
        let leading = Arc::new(Mutex::new(None));
        let roles = Roles { config, clock, store, member: member.clone(), leading: leading.clone() };
        tasks.push(tokio::spawn(roles.run(shutdown.subscribe())));
        Ok(GroupNode { member, group_addr, leading, shutdown, tasks })
    }

    /// Stops the region (when leading), the standby, the group listener
    /// and the member.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(node) = self.leading.lock().await.take() {
            node.stop().await;
        }
        let member = self.member.clone();
        let _ = tokio::task::spawn_blocking(move || member.stop()).await;
    }
}

fn start_error(why: &str) -> NodeError {
    NodeError::Start(svc_node::region::StartError::Config(why.to_owned()))
}

/// What follows the group's leadership for one member.
struct Roles {
    config: NodeConfig,
    clock: SharedClock,
    store: Store,
    member: Arc<Member>,
    leading: Arc<Mutex<Option<Node>>>,
}

impl Roles {
    async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let id = self.config.home_group.as_ref().map_or(0, |g| g.id);
        let mut metrics = self.member.raft().metrics();
        let mut standby: Option<Standby> = None;
        loop {
            let (leads, leader) = {
                let seen = metrics.borrow_and_update();
                (seen.state == ServerState::Leader && seen.current_leader == Some(id), seen.current_leader)
            };
            let running = self.leading.lock().await.is_some();
            if leads && !running {
                if let Some(standby) = standby.take() {
                    standby.stop().await;
                }
                self.lead().await;
            } else if !leads {
                if let Some(node) = self.leading.lock().await.take() {
                    tracing::warn!(leader = ?leader, "this member no longer leads home's group: stopping its region");
                    node.stop().await;
                }
                match &standby {
                    Some(running) => {
                        running.leader.send_replace(leader);
                    }
                    None => standby = Some(Standby::start(&self.config, leader)),
                }
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { break },
                _ = shutdown.wait_for(|stop| *stop) => break,
            }
        }
        if let Some(standby) = standby {
            standby.stop().await;
        }
    }

    /// Starts the region once this leader applied every committed write.
    async fn lead(&self) {
        // A linearizable read waits until the leader applied what it
        // committed, the first entry of its term included.
        let member = self.member.clone();
        let applied = tokio::task::spawn_blocking(move || member.applied_all()).await;
        if !matches!(applied, Ok(Ok(()))) {
            tracing::warn!(?applied, "elected, but could not apply every committed write; standing by");
            return;
        }
        match Node::start_over(self.config.clone(), self.clock.clone(), self.store.clone()).await {
            Ok(node) => {
                tracing::info!("this member leads home's group: its region is up");
                *self.leading.lock().await = Some(node);
            }
            Err(e) => tracing::error!(error = %e, "this member leads home's group but its region did not start"),
        }
    }
}

/// A member's public and admin addresses while it does not lead.
struct Standby {
    leader: watch::Sender<Option<u64>>,
    shutdown: watch::Sender<bool>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl Standby {
    fn start(config: &NodeConfig, leader: Option<u64>) -> Standby {
        let (leader, seen) = watch::channel(leader);
        let (shutdown, _) = watch::channel(false);
        let tls = match config.tls.as_ref().map(crate::tls::Certificates::load) {
            Some(Ok(certificates)) => crate::tls::acceptor(certificates).ok(),
            _ => None,
        };
        let mut servers = Vec::new();
        for address in [config.listen, config.admin_listen] {
            match bind(address) {
                Ok(listener) => {
                    let router = standby_router(config.region.clone(), seen.clone());
                    servers.push(serve(listener, router, config.listener, tls.clone(), shutdown.subscribe()));
                }
                Err(e) => tracing::error!(%address, error = %e, "the standby could not listen"),
            }
        }
        Standby { leader, shutdown, servers }
    }

    async fn stop(self) {
        let _ = self.shutdown.send(true);
        for server in self.servers {
            let _ = server.await;
        }
    }
}

fn standby_router(region: String, leader: watch::Receiver<Option<u64>>) -> Router {
    let ready_region = region.clone();
    let ready_leader = leader.clone();
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
                async move {
                    let body =
                        json!({"ready": false, "region": region, "role": "home-standby", "group_leader": leader});
                    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
                }
            }),
        )
        .fallback(|| async { standing_by() })
}

/// Every request but health at a member that does not lead.
fn standing_by() -> Response {
    let refused = svc_node::service::Error::retry_after(
        Code::Unavailable,
        1_000,
        "this member of home's group does not lead it; ask the leader",
    );
    refused.into_response()
}
