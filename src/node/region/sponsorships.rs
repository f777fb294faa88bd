//! Which records a region places as paid rows (sponsored products,
//! promoted events, jobs and updates) and which campaigns place ads in
//! pools: the replicated campaigns, read again
//! only after a campaign changed, and kept between answers, so marking a
//! row costs a map lookup. Marking never moves a row (retrieval 1, rule 10).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use svc_core::search::PaidRows;

use crate::error::Result;
use crate::region::parts::HasStore;
use svc_search::RecordIds;
use svc_store::model::Campaign;

/// What funded campaigns place, as last read.
#[derive(Default)]
pub struct Placements {
    /// Each record placed as a paid row, with its campaigns.
    pub rows: HashMap<String, Vec<Arc<Campaign>>>,
    /// The campaigns of ads, for pools.
    pub ads: Vec<Arc<Campaign>>,
}

type Placed = Arc<Placements>;

/// What was read: at which replicated sequence, after which campaign
/// change, and the placed records.
struct Read {
    seq: u64,
    changed: Option<u64>,
    placed: Placed,
}

#[derive(Default)]
pub struct Sponsorships {
    held: Mutex<Option<Read>>,
}

impl Sponsorships {
    /// The campaigns placing records, as of replicated sequence `seq`. A
    /// new sequence costs one read of the campaigns' change token; the
    /// campaigns are read again only when it moved.
    pub fn at(&self, state: &impl HasStore, seq: u64) -> Result<Placed> {
        let mut held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(read) = held.as_ref()
            && read.seq == seq
        {
            return Ok(read.placed.clone());
        }
        let changed = crate::campaign_ledger::changed(state.store())?;
        if let Some(read) = held.as_mut()
            && read.changed == changed
        {
            read.seq = seq;
            return Ok(read.placed.clone());
        }
        let mut placed = Placements::default();
        for campaign in crate::campaign_ledger::all(state.store())? {
            let campaign = Arc::new(campaign);
            if campaign.terms.placement == svc_core::ads::Placement::Ad {
                placed.ads.push(campaign);
                continue;
            }
            for item in &campaign.items {
                placed.rows.entry(item.clone()).or_default().push(campaign.clone());
            }
        }
        let placed = Arc::new(placed);
        *held = Some(Read { seq, changed, placed: placed.clone() });
        Ok(placed)
    }
}

/// The records a search of `country` admits by its `sponsored` clauses:
/// exactly those [`sponsored`] marks, from the same campaigns.
pub fn paid_rows(placed: &Placed, rows: PaidRows, country: &str) -> RecordIds {
    let paid = || placed.rows.keys().filter(|id| sponsored(placed, id, country)).cloned().collect();
    match rows {
        PaidRows::Any => RecordIds::All,
        PaidRows::Only => RecordIds::Only(paid()),
        PaidRows::Never => RecordIds::Except(paid()),
        PaidRows::None => RecordIds::Only(Vec::new()),
    }
}

/// Whether `record_id` is a paid row in a search of `country`.
pub fn sponsored(placed: &Placed, record_id: &str, country: &str) -> bool {
    placed.rows.get(record_id).is_some_and(|campaigns| campaigns.iter().any(|c| c.places(record_id, country)))
}
