//! HTTP: one router per surface, one module per resource, one error type.

pub mod admin;
pub mod auth;
pub mod body;
pub mod bulk;
pub mod business;
pub mod problem;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use ractor::ActorRef;

use crate::actors::nonce_store::NonceMsg;
use crate::actors::publisher::PublisherMsg;
use crate::actors::push_worker::PushWorkerMsg;
use crate::blocklist::Blocklist;
use crate::clock::SharedClock;
use crate::config::NodeConfig;
use crate::registry::Registry;
use crate::service_keys::ServiceKeys;
use crate::store::Store;

/// What every handler can reach. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<NodeConfig>,
    pub store: Store,
    pub registry: Registry,
    pub keys: Arc<ServiceKeys>,
    pub clock: SharedClock,
    pub publisher: ActorRef<PublisherMsg>,
    pub push_worker: ActorRef<PushWorkerMsg>,
    pub nonces: ActorRef<NonceMsg>,
    pub blocklist: Option<Arc<Blocklist>>,
    /// Where bulk files are kept.
    pub uploads: std::path::PathBuf,
    /// Catalogue records read per key in the last minute (the read-back
    /// limit). Kept in memory: a restart forgets at most a minute of reads.
    pub catalogue_reads:
        Arc<std::sync::Mutex<std::collections::HashMap<String, svc_core::publish::read_rate::ReadWindow>>>,
}

impl AppState {
    /// What running a push inline needs.
    pub fn push_runner(&self) -> crate::actors::push_worker::PushRunner {
        crate::actors::push_worker::PushRunner {
            store: self.store.clone(),
            publisher: self.publisher.clone(),
            clock: self.clock.clone(),
            blocklist: self.blocklist.clone(),
            uploads: self.uploads.clone(),
        }
    }
}

/// The public API: business routes (and, as they land, retrieval and
/// verification routes).
pub fn public_router(state: AppState) -> Router {
    business::routes().merge(bulk::routes()).with_state(state)
}

/// The operator's admin API.
pub fn admin_router(state: AppState) -> Router {
    admin::routes().with_state(state)
}

/// The client address of a request, as the server saw it.
pub fn remote_ip(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}
