//! What the ad use cases ask of the region's ad-reservations actor, and the
//! leases of campaign money they fetch for it: from home's ledger over the
//! link at a read region, straight from it at home.

use std::sync::atomic::Ordering;
use std::time::Duration;

use svc_core::ads::Micros;
use svc_core::ads::ledger::{Held, Lease};

use super::ledger::{self, AdLeaseAsk};
use crate::actors::ad_reservations::{AdMsg, CONVERSATION_SECRET};
use crate::region::Region;
use crate::service::{Error, Result};
use crate::store::cf;

/// A lease asks for this many events' cost, so one lease serves a run of
/// pools; home grants less when less is left.
pub const LEASE_EVENTS: u64 = 20;
/// How long a lease ask may hold up the request that needs it.
const LEASE_WAIT: Duration = Duration::from_secs(1);

/// Asks home for a slice of `campaign_id`'s money worth [`LEASE_EVENTS`]
/// events of `cost` (home may grant more), and hands it to the actor; a
/// caller that waited while another took a lease tries that one first.
/// `false` when home has none left; an unreachable home is `503`.
pub async fn lease_more(state: &Region, campaign_id: &str, cost: Micros) -> Result<bool> {
    let slot = state.lease_asks.slot(campaign_id);
    let seen = slot.taken.load(Ordering::SeqCst);
    let _one = slot.ask.lock().await;
    if slot.taken.load(Ordering::SeqCst) != seen {
        return Ok(true);
    }
    let ask = AdLeaseAsk {
        region: state.config.region.clone(),
        campaign_id: campaign_id.to_owned(),
        want: Micros(cost.0.saturating_mul(LEASE_EVENTS)),
        event: cost,
    };
    let lease: Option<Lease> = match &state.replica {
        None => ledger::lease(state, &ask).await?,
        Some(replica) => replica
            .link
            .call("POST", "/internal/v1/ad-lease", Some(&ask), LEASE_WAIT)
            .await
            .map_err(|e| Error::retry_after(svc_core::problem::Code::Unavailable, 1_000, format!("home: {e}")))?,
    };
    let Some(lease) = lease else { return Ok(false) };
    let (campaign_id, now) = (campaign_id.to_owned(), state.clock.now());
    let held = Held::of(&lease);
    state.ads.call(|reply| AdMsg::TakeLease { campaign_id, lease: held, now, reply }).await??;
    slot.taken.fetch_add(1, Ordering::SeqCst);
    Ok(true)
}

/// The service's secret for conversation digests: home draws it, a read
/// region has it from home's ad feed (until then it serves no ads).
pub fn conversation_secret(state: &Region) -> Result<Vec<u8>> {
    state.store.get::<Vec<u8>>(cf::AD_BOOK, CONVERSATION_SECRET)?.ok_or_else(|| {
        let detail = "this region has not yet heard from home, whose secret keeps conversations one across regions";
        Error::retry_after(svc_core::problem::Code::Unavailable, 1_000, detail)
    })
}
