//! What a region keeps between ad pools: live ad versions and each ad's
//! live generation, and its lease asks to home in flight.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::registry::Registry;
use svc_store::StoreResult;
use svc_store::model::{RecordState, RecordVersion};

/// Live ad versions a region keeps between pools (a version never
/// changes once written, so it is kept by id and generation), and each
/// ad's live generation and business as of one replicated sequence.
#[derive(Default)]
pub struct AdVersions {
    held: std::sync::Mutex<HashMap<(String, u64), Arc<RecordVersion>>>,
    heads: std::sync::Mutex<(u64, HashMap<String, Option<Live>>)>,
}

/// An ad's live generation and its business.
pub type Live = (u64, String);

/// Versions kept at most; past it the cache starts again.
const MAX_KEPT_VERSIONS: usize = 20_000;

impl AdVersions {
    /// The ad's live generation and business at replicated sequence `seq`
    /// (`None`: not live).
    pub fn live(&self, registry: &Registry, seq: u64, ad_id: &str) -> StoreResult<Option<Live>> {
        {
            let heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
            if heads.0 == seq
                && let Some(live) = heads.1.get(ad_id)
            {
                return Ok(live.clone());
            }
        }
        let live = registry
            .record_head(ad_id)?
            .filter(|h| h.state == RecordState::Live && h.live_generation > 0)
            .map(|h| (h.live_generation, h.business_uuid));
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        if heads.0 != seq || heads.1.len() >= MAX_KEPT_VERSIONS {
            *heads = (seq, HashMap::new());
        }
        heads.1.insert(ad_id.to_owned(), live.clone());
        Ok(live)
    }

    pub fn get(&self, registry: &Registry, ad_id: &str, generation: u64) -> StoreResult<Option<Arc<RecordVersion>>> {
        let key = (ad_id.to_owned(), generation);
        if let Some(version) = self.held.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(Some(version.clone()));
        }
        let Some(version) = registry.record_version(ad_id, generation)? else { return Ok(None) };
        let version = Arc::new(version);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= MAX_KEPT_VERSIONS {
            held.clear();
        }
        held.insert(key, version.clone());
        Ok(Some(version))
    }
}

/// Campaigns whose lease asks a region remembers at most (then it forgets
/// them all: an ask in flight finishes, and at worst one more is made).
const MAX_ASK_SLOTS: usize = 100_000;

/// A region's lease asks, one at a time per campaign: pools that find too
/// little at once wait for the ask under way instead of each making one.
#[derive(Default)]
pub struct LeaseAsks {
    slots: std::sync::Mutex<HashMap<String, Arc<AskSlot>>>,
}

#[derive(Default)]
pub struct AskSlot {
    /// Leases taken through this slot so far.
    pub taken: AtomicU64,
    /// Held by the one ask under way.
    pub ask: tokio::sync::Mutex<()>,
}

impl LeaseAsks {
    pub fn slot(&self, campaign_id: &str) -> Arc<AskSlot> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.len() >= MAX_ASK_SLOTS && !slots.contains_key(campaign_id) {
            slots.clear();
        }
        slots.entry(campaign_id.to_owned()).or_default().clone()
    }
}
