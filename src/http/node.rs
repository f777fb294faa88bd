//! A running node: its store, actors and HTTP servers, started together and
//! stopped together.

use std::net::SocketAddr;

use tokio::sync::watch;

use crate::api::listener::serve;
use svc_clock::SharedClock;
use svc_node::config::{NodeConfig, Role};
use svc_node::region::{Region, StartError};

/// Why a node did not start: its region, or its TLS files.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Start(#[from] StartError),
    /// Boxed: a node's start error is carried up through every command's.
    #[error("TLS: {0}")]
    Tls(Box<crate::tls::TlsError>),
}

impl From<crate::tls::TlsError> for NodeError {
    fn from(error: crate::tls::TlsError) -> Self {
        NodeError::Tls(Box::new(error))
    }
}

pub struct Node {
    pub state: Region,
    pub addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// Home's listener for its read regions, when it has one.
    pub internal_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl Node {
    /// Starts a node and its listeners: public, admin, and at home the
    /// internal one when configured.
    pub async fn start(config: NodeConfig, clock: SharedClock) -> Result<Node, NodeError> {
        let store = svc_node::region::open_store(&config).map_err(NodeError::Start)?;
        Self::start_over(config, clock, store).await
    }

    /// Starts a node over its store, opened already (by a member of home's
    /// group, which keeps it open while it does not lead).
    pub async fn start_over(
        config: NodeConfig,
        clock: SharedClock,
        store: svc_store::Store,
    ) -> Result<Node, NodeError> {
        let bound = |addr: SocketAddr| move |source| StartError::Listen { addr, source };
        let listener = crate::api::listener::bind(config.listen).map_err(bound(config.listen))?;
        let admin_listener = crate::api::listener::bind(config.admin_listen).map_err(bound(config.admin_listen))?;
        let addr = listener.local_addr().map_err(bound(config.listen))?;
        let admin_addr = admin_listener.local_addr().map_err(bound(config.admin_listen))?;
        let (internal_listener, internal_addr) = match config.internal_listen.filter(|_| config.role == Role::Home) {
            Some(at) => {
                let listener = crate::api::listener::bind(at).map_err(bound(at))?;
                let addr = listener.local_addr().map_err(bound(at))?;
                (Some(listener), Some(addr))
            }
            None => (None, None),
        };
        // The certificate loads before anything starts: a node whose TLS
        // files do not read does not come up half-served.
        let certificates = config.tls.as_ref().map(crate::tls::Certificates::load).transpose()?;
        let tls = certificates.clone().map(crate::tls::acceptor).transpose()?;
        // Home's internal listener is mutual TLS (check_link_tls names the CA).
        let link_tls = match (&certificates, config.tls.as_ref().and_then(|tls| tls.ca.as_deref())) {
            (Some(certificates), Some(ca)) => Some(crate::tls::link_acceptor(certificates.clone(), ca)?),
            _ => None,
        };
        let state = svc_node::region::start_over(config, clock, store).await.map_err(NodeError::Start)?;
        let (shutdown, _) = watch::channel(false);
        let limits = state.config.listener;
        let mut servers = vec![
            serve(listener, crate::surfaces::public_router(state.clone()), limits, tls.clone(), shutdown.subscribe()),
            serve(admin_listener, admin_router(&state), limits, tls.clone(), shutdown.subscribe()),
        ];
        if let Some(listener) = internal_listener {
            let router = crate::api::internal_router(state.clone());
            servers.push(serve(listener, router, limits, link_tls, shutdown.subscribe()));
        }
        if let Some(certificates) = certificates {
            servers.push(crate::tls::watch(certificates, shutdown.subscribe()));
        }
        if state.config.environment.is_sandbox() && state.config.role == Role::Home {
            servers.push(tokio::spawn(crate::sandbox::nightly::run(state.clone(), shutdown.subscribe())));
        }
        Ok(Node { state, addr, admin_addr, internal_addr, shutdown, servers })
    }

    /// Stops accepting, drains in-flight requests, then stops the actors.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for server in self.servers {
            let _ = server.await;
        }
        self.state.stop_actors().await;
    }
}

/// The operator's admin API with the sandbox's own route, which the
/// sandbox adds from above the HTTP layer.
pub fn admin_router(state: &svc_node::region::Region) -> axum::Router {
    crate::api::admin_router(state.clone()).merge(crate::sandbox::routes::admin_routes(state.clone()))
}
