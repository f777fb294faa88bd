//! What the ad use cases ask of the region's ad-reservations actor, and the
//! leases of campaign money they fetch for it: from home's ledger over the
//! link at a read region, straight from it at home.

use std::sync::atomic::Ordering;
use std::time::Duration;

use svc_core::ads::Micros;
use svc_core::ads::ledger::{Held, Lease};

use super::ledger::{self, AdLeaseAsk};
use crate::actors::ad_reservations::{AdMsg, CONVERSATION_SECRET, TAKE_BPS};
use crate::region::parts::{HasAds, HasClock, HasConfig, HasHome, HasLeaseAsks, HasReplica, HasStore};
use crate::service::{Error, Result};
use svc_store::cf;

/// A lease asks for this many events' cost, so one lease serves a run of
/// pools; home grants less when less is left.
pub const LEASE_EVENTS: u64 = 20;
/// How long a lease ask may hold up the request that needs it.
const LEASE_WAIT: Duration = Duration::from_secs(1);

/// Asks home for a slice of `campaign_id`'s money worth [`LEASE_EVENTS`]
/// events of `cost` (home may grant more), and hands it to the actor; a
/// caller that waited while another took a lease tries that one first.
/// `false` when home has none left; an unreachable home is `503`.
pub async fn lease_more<R>(state: &R, campaign_id: &str, cost: Micros) -> Result<bool>
where
    R: HasConfig + HasStore + HasClock + HasHome + HasReplica + HasAds + HasLeaseAsks,
{
    let slot = state.lease_asks().slot(campaign_id);
    let seen = slot.taken.load(Ordering::SeqCst);
    let _one = slot.ask.lock().await;
    if slot.taken.load(Ordering::SeqCst) != seen {
        return Ok(true);
    }
    let ask = AdLeaseAsk {
        region: state.config().region.clone(),
        campaign_id: campaign_id.to_owned(),
        want: Micros(cost.0.saturating_mul(LEASE_EVENTS)),
        event: cost,
    };
    let lease: Option<Lease> = match state.replica() {
        None => ledger::lease(state, &ask).await?,
        Some(replica) => {
            replica.link.call("POST", "/internal/v1/ad-lease", Some(&ask), LEASE_WAIT).await.map_err(|e| {
                crate::service::error::unavailable_because(1_000, "home cannot lease the campaign's money now", e)
            })?
        }
    };
    let Some(lease) = lease else { return Ok(false) };
    let (campaign_id, now) = (campaign_id.to_owned(), state.clock().now());
    let held = Held::of(&lease);
    state.ads().call(|reply| AdMsg::TakeLease { campaign_id, lease: held, now, reply }).await??;
    slot.taken.fetch_add(1, Ordering::SeqCst);
    Ok(true)
}

/// What a read region serves no ads without until home's ad feed brings it.
fn not_heard_from_home() -> Error {
    let detail = "this region has not yet heard from home, whose ad feed brings the conversation secret and take rate";
    Error::retry_after(svc_core::problem::Code::Unavailable, 1_000, detail)
}

/// The service's secret for conversation digests: home draws it, a read
/// region has it from home's ad feed.
pub fn conversation_secret(state: &impl HasStore) -> Result<Vec<u8>> {
    state.store().get::<Vec<u8>>(cf::ad_book::CONVERSATION_SECRET, CONVERSATION_SECRET)?.ok_or_else(not_heard_from_home)
}

/// The take rate in force (basis points): home's config, at a read region
/// from home's ad feed.
pub fn take_rate(state: &impl HasStore) -> Result<u32> {
    state.store().get::<u32>(cf::ad_book::TAKE_BPS, TAKE_BPS)?.ok_or_else(not_heard_from_home)
}
