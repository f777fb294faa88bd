//! The parts of a region a node reads straight from its own store, with no
//! actor running: what a member of home's group that does not lead answers
//! itself (the transparency log, certificates and the public documents),
//! from the copy of the group's state its Raft member applies.

use std::sync::Arc;

use svc_clock::SharedClock;
use svc_store::{Store, StoreResult};

use crate::config::NodeConfig;
use crate::registry::Registry;
use crate::transparency::LogView;

/// A node's own copy, read without actors. Cheap to clone.
#[derive(Clone)]
pub struct OwnCopy {
    config: Arc<NodeConfig>,
    store: Store,
    registry: Registry,
    clock: SharedClock,
    log: LogView,
}

impl OwnCopy {
    /// Reads the log's stored leaves into its tree (as a region's start
    /// does); later leaves are read in when an answer needs them.
    pub fn open(config: &NodeConfig, store: Store, clock: SharedClock) -> StoreResult<OwnCopy> {
        let log = LogView::open(store.clone(), crate::transparency::origin(&config.public_authority))?;
        Ok(OwnCopy { config: Arc::new(config.clone()), registry: Registry::new(store.clone()), store, clock, log })
    }
}

super::parts::held_parts! {
    OwnCopy:
    HasConfig: config -> Arc<NodeConfig>;
    HasStore: store -> Store;
    HasRegistry: registry -> Registry;
    HasClock: clock -> SharedClock;
    HasLog: log -> LogView;
}
