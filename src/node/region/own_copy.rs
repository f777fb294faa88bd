//! The parts of a region a node reads straight from its own store, with no
//! actor running: what a member of home's group that does not lead answers
//! itself (the transparency log, certificates, the key set, the public
//! documents, and the verifications and business keys home's statement
//! key signs on demand), from the copy of the group's state its Raft
//! member applies. Home's keys are the same on every member: the first
//! leader drew them and the group holds them.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use svc_clock::SharedClock;
use svc_store::Store;

use super::key_view::{Certifier, KeyView};
use super::parts::HasKeys;
use crate::config::NodeConfig;
use crate::limits::Limits;
use crate::memo::{JwkKeys, SignedStatements};
use crate::page_cache::PageCache;
use crate::registry::Registry;
use crate::service_keys::{KeysError, ServiceKeys};
use crate::transparency::LogView;

/// How often a member that does not lead looks for the leader's key
/// rotations before it signs, as often as it re-reads the key set. The
/// key a rotation replaces stays valid for an hour, so what was signed
/// meanwhile still verifies.
const ROTATIONS_RECHECK_MS: i64 = 250;

/// Why a node's own copy cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum OwnCopyError {
    #[error(transparent)]
    Store(#[from] svc_store::StoreError),
    #[error(transparent)]
    Keys(#[from] KeysError),
    #[error("home's keys are not in this member's copy yet: the group's first leader draws them")]
    NoKeysYet,
}

/// A node's own copy, read without actors. Cheap to clone.
#[derive(Clone)]
pub struct OwnCopy {
    config: Arc<NodeConfig>,
    store: Store,
    registry: Registry,
    clock: SharedClock,
    log: LogView,
    keys: Arc<ServiceKeys>,
    /// When the stored rotations were last installed (`HasKeys`).
    rotations_read_at: Arc<AtomicI64>,
    key_set: KeyView,
    jwk_keys: Arc<JwkKeys>,
    signed_statements: Arc<SignedStatements>,
    limits: Arc<Limits>,
    verify_pages: Arc<PageCache>,
}

impl OwnCopy {
    /// Reads the log's stored leaves into its tree (as a region's start
    /// does), later leaves as an answer needs them, and home's keys;
    /// [`OwnCopyError::NoKeysYet`] before the group's first leader stored them.
    pub fn open(config: &NodeConfig, store: Store, clock: SharedClock) -> Result<OwnCopy, OwnCopyError> {
        let keys = ServiceKeys::load(&store, config.key_encryption_key.as_ref())?.ok_or(OwnCopyError::NoKeysYet)?;
        let log = LogView::open(store.clone(), crate::transparency::origin(&config.public_authority))?;
        let key_set = KeyView::open(store.clone(), &config.region, &keys, Certifier::Nobody)?;
        Ok(OwnCopy {
            config: Arc::new(config.clone()),
            registry: Registry::new(store.clone()),
            log,
            rotations_read_at: Arc::new(AtomicI64::new(clock.now().0)),
            keys: Arc::new(keys),
            key_set,
            jwk_keys: Arc::default(),
            signed_statements: Arc::default(),
            limits: Arc::new(Limits::new(config.retrieval_limits, config.verify_per_second)),
            verify_pages: Arc::default(),
            store,
            clock,
        })
    }
}

/// Home's keys, with the rotations the leader stored since they were last
/// read (at most every 250 ms): a member that does not lead signs with
/// the key the leader signs with.
impl HasKeys for OwnCopy {
    fn keys(&self) -> &Arc<ServiceKeys> {
        let now = self.clock.now().0;
        let read_at = self.rotations_read_at.load(Ordering::Relaxed);
        if now - read_at >= ROTATIONS_RECHECK_MS
            && self.rotations_read_at.compare_exchange(read_at, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
            && let Err(e) = self.keys.catch_up(&self.store)
        {
            tracing::warn!(error = %e, "the leader's key rotations could not be read: signing with the keys held");
        }
        &self.keys
    }
}

super::parts::held_parts! {
    OwnCopy:
    HasConfig: config -> Arc<NodeConfig>;
    HasStore: store -> Store;
    HasRegistry: registry -> Registry;
    HasClock: clock -> SharedClock;
    HasLog: log -> LogView;
    HasKeySet: key_set -> KeyView;
    HasJwkKeys: jwk_keys -> Arc<JwkKeys>;
    HasSignedStatements: signed_statements -> Arc<SignedStatements>;
    HasLimits: limits -> Arc<Limits>;
    HasVerifyPages: verify_pages -> Arc<PageCache>;
}
