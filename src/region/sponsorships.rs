//! Which records a region places as paid rows (sponsored products,
//! promoted events, jobs and updates): the replicated campaigns, read once
//! per replicated sequence and kept between answers, so marking a row
//! costs a map lookup. Marking never moves a row (retrieval 1, rule 10).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::service::Result;
use crate::store::model::Campaign;

/// Each placed record's campaigns, as of a replicated sequence.
type Placed = Arc<HashMap<String, Vec<Arc<Campaign>>>>;

#[derive(Default)]
pub struct Sponsorships {
    held: Mutex<Option<(u64, Placed)>>,
}

impl Sponsorships {
    /// The campaigns placing records, as of replicated sequence `seq`.
    pub fn at(&self, state: &crate::region::Region, seq: u64) -> Result<Placed> {
        if let Ok(held) = self.held.lock()
            && let Some((at, placed)) = held.as_ref()
            && *at == seq
        {
            return Ok(placed.clone());
        }
        let mut placed: HashMap<String, Vec<Arc<Campaign>>> = HashMap::new();
        for campaign in crate::service::ads::campaigns::all(state)? {
            if campaign.terms.placement == svc_core::ads::Placement::Ad {
                continue;
            }
            let campaign = Arc::new(campaign);
            for item in &campaign.items {
                placed.entry(item.clone()).or_default().push(campaign.clone());
            }
        }
        let placed = Arc::new(placed);
        if let Ok(mut held) = self.held.lock() {
            *held = Some((seq, placed.clone()));
        }
        Ok(placed)
    }
}

/// Whether `record_id` is a paid row in a search of `country`.
pub fn sponsored(placed: &Placed, record_id: &str, country: &str) -> bool {
    placed.get(record_id).is_some_and(|campaigns| campaigns.iter().any(|c| c.places(record_id, country)))
}
