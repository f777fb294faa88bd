//! Home's side of a campaign's money (R4.1.19): one ledger per campaign,
//! kept only at home, from which each region leases a slice of what is left,
//! and to which it hands the lease back with what it used
//! (`svc_core::ads::ledger`). The one writer applies every change against
//! the ledger as read, so two regions' leases never both take the last cent.

use serde::{Deserialize, Serialize};
use svc_core::ads::Micros;
use svc_core::ads::ledger::{Ask, Lease, Ledger};
use svc_core::problem::Code;

use crate::campaign_ledger::{self, NotSettled};
use crate::region::parts::{HasClock, HasConfig, HasHome, HasStore};
use crate::service::error::invalid;
use crate::service::writes::apply;
use crate::service::{Error, Result};
use svc_store::cf;
use svc_store::model::*;

/// How long a lease lasts: longer than a pool's ten-minute reserve, which
/// is only taken from a lease that outlives it (`svc_core::ads::reserve`);
/// a lost region's slice is counted in full once this has passed.
pub const LEASE_MS: i64 = 20 * svc_core::time::MINUTE;

/// A region's ask for a slice of a campaign's money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdLeaseAsk {
    pub region: String,
    pub campaign_id: String,
    pub want: Micros,
    /// One event's cost: a lease is whole events.
    pub event: Micros,
}

/// A region hands a lease back with what it used of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdLeaseSettle {
    pub region: String,
    pub campaign_id: String,
    pub lease_id: u64,
    pub used: Micros,
}

fn current(state: &(impl HasStore + HasClock), campaign: &Campaign) -> Result<(Option<Ledger>, Ledger)> {
    Ok(campaign_ledger::current(state.store(), campaign, state.clock().now())?)
}

async fn write(
    state: &(impl HasClock + HasHome),
    campaign_id: &str,
    as_read: Option<&Ledger>,
    ledger: &Ledger,
) -> Result<()> {
    apply(state, campaign_ledger::written(campaign_id, as_read, ledger)).await.map(|_| ())
}

/// Leases `region` up to what it asks of an active campaign's money left;
/// `None` when nothing is left.
pub async fn lease<R>(state: &R, ask: &AdLeaseAsk) -> Result<Option<Lease>>
where
    R: HasConfig + HasStore + HasClock + HasHome,
{
    state.home()?;
    if ask.event.0 == 0 || ask.want < ask.event {
        return Err(invalid("a lease asks for one event's cost or more, and an event costs more than zero"));
    }
    let campaign = state
        .store()
        .get::<Campaign>(cf::CAMPAIGNS, ask.campaign_id.as_bytes())?
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))?;
    if campaign.state != CampaignState::Active {
        return Ok(None);
    }
    let (stored, mut ledger) = current(state, &campaign)?;
    if crate::sabotage::on(crate::sabotage::Sabotage::UnboundedAdLeases) {
        ledger.spendable = Micros(ledger.spendable.0.saturating_mul(4));
    }
    let regions = 1 + state.config().replication.as_ref().map_or(0, |r| r.regions.len());
    let asked = Ask { region: &ask.region, want: ask.want, event: ask.event, regions };
    let lease = ledger.grant(asked, state.clock().now().plus(LEASE_MS));
    if let Some(granted) = &lease {
        // What the region was leased in all bounds what home ever credits
        // back of its charges.
        let mut change = campaign_ledger::written(&campaign.campaign_id, stored.as_ref(), &ledger);
        let key = campaign_ledger::granted_key(&campaign.campaign_id, &ask.region);
        let before = campaign_ledger::sum(state.store(), cf::ad_book::GRANTED, &key)?;
        change.put(cf::ad_book::GRANTED, &key, &Micros(before.0.saturating_add(granted.amount.0)));
        apply(state, change).await?;
    } else if stored.as_ref() != Some(&ledger) {
        write(state, &campaign.campaign_id, stored.as_ref(), &ledger).await?;
    }
    Ok(lease)
}

/// A charge a region reports (with the render or click that made it) is
/// one event of a campaign that exists, at most what an event of it can
/// cost: anything else was never made, and the report is refused whole.
pub fn check_charge(state: &impl HasStore, charge: &crate::replication::exchange::Charge) -> Result<()> {
    let campaign = state
        .store()
        .get::<Campaign>(cf::CAMPAIGNS, charge.campaign_id.as_bytes())?
        .ok_or_else(|| invalid(format!("a charge names campaign {}, which does not exist", charge.campaign_id)))?;
    let most = campaign_ledger::largest_charge(&campaign);
    if charge.amount.0 == 0 || charge.amount > most {
        return Err(invalid(format!(
            "a charge of {} micros to campaign {} is outside 1 to {} (one event at most)",
            charge.amount.0, charge.campaign_id, most.0
        )));
    }
    Ok(())
}

/// Takes a lease back from the region that holds it, with what it used.
pub async fn settle<R>(state: &R, settle: &AdLeaseSettle) -> Result<()>
where
    R: HasStore + HasClock + HasHome,
{
    state.home()?;
    let (region, now) = (&settle.region, state.clock().now());
    match campaign_ledger::settle(state.store(), now, region, &settle.campaign_id, settle.lease_id, settle.used)? {
        Ok(change) => apply(state, change).await.map(|_| ()),
        Err(NotSettled::NoCampaign) => Err(Error::detail(Code::NotFound, "no such campaign")),
        Err(NotSettled::NoLease) => {
            Err(Error::detail(Code::NotFound, "no such lease of this region (settled, or expired and counted)"))
        }
        Err(NotSettled::BadUse) => Err(invalid("a lease's use only grows, up to its amount")),
    }
}

/// A campaign's money as home counts it: spent (less what was charged
/// twice and credited back), leased, and left.
pub fn standing(state: &(impl HasStore + HasClock), campaign: &Campaign) -> Result<(Micros, Micros, Micros)> {
    let (_, ledger) = current(state, campaign)?;
    let leased = Micros(ledger.leases.iter().map(|l| l.amount.0).sum());
    let credit = crate::campaign_ledger::credit(state.store(), &campaign.campaign_id)?;
    Ok((ledger.spent.saturating_sub(credit), leased, ledger.available()))
}
