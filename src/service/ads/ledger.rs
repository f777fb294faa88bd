//! Home's side of a campaign's money (R4.1.19): one ledger per campaign,
//! kept only at home, from which each region leases a slice of what is left,
//! and to which it hands the lease back with what it used
//! (`svc_core::ads::ledger`). The one writer applies every change against
//! the ledger as read, so two regions' leases never both take the last cent.

use serde::{Deserialize, Serialize};
use svc_core::ads::Micros;
use svc_core::ads::ledger::{Lease, Ledger, LedgerError};
use svc_core::problem::Code;

use crate::region::Region;
use crate::replication::Change;
use crate::service::error::invalid;
use crate::service::writes::apply;
use crate::service::{Error, Result};
use crate::store::cf;
use crate::store::model::*;

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
}

/// A region hands a lease back with what it used of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdLeaseSettle {
    pub region: String,
    pub campaign_id: String,
    pub lease_id: u64,
    pub used: Micros,
}

/// The campaign's ledger as stored, or a new one; its spendable amount
/// follows the campaign's, and leases past their time are ended.
fn current(state: &Region, campaign: &Campaign) -> Result<(Option<Ledger>, Ledger)> {
    let stored = state.store.get::<Ledger>(cf::CAMPAIGN_LEDGERS, campaign.campaign_id.as_bytes())?;
    let mut ledger = stored.clone().unwrap_or_default();
    ledger.spendable = campaign.spendable();
    ledger.expire(state.clock.now());
    Ok((stored, ledger))
}

/// Writes `ledger` unless another change came first.
async fn write(state: &Region, campaign_id: &str, as_read: Option<&Ledger>, ledger: &Ledger) -> Result<()> {
    let mut change = Change::new();
    match as_read {
        Some(read) => change.require_unchanged(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes(), read),
        None => change.require_absent(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes()),
    };
    change.put(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes(), ledger);
    apply(state, change).await.map(|_| ())
}

/// Leases `region` up to what it asks of an active campaign's money left;
/// `None` when nothing is left.
pub async fn lease(state: &Region, ask: &AdLeaseAsk) -> Result<Option<Lease>> {
    state.home()?;
    if ask.want.0 == 0 {
        return Err(invalid("a lease asks for more than zero"));
    }
    let campaign = state
        .store
        .get::<Campaign>(cf::CAMPAIGNS, ask.campaign_id.as_bytes())?
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))?;
    if campaign.state != CampaignState::Active {
        return Ok(None);
    }
    let (stored, mut ledger) = current(state, &campaign)?;
    let lease = ledger.grant(&ask.region, ask.want, state.clock.now().plus(LEASE_MS));
    if lease.is_some() || stored.as_ref() != Some(&ledger) {
        write(state, &campaign.campaign_id, stored.as_ref(), &ledger).await?;
    }
    Ok(lease)
}

/// Takes a lease back from the region that holds it, with what it used.
pub async fn settle(state: &Region, settle: &AdLeaseSettle) -> Result<()> {
    state.home()?;
    let campaign = state
        .store
        .get::<Campaign>(cf::CAMPAIGNS, settle.campaign_id.as_bytes())?
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))?;
    let (stored, mut ledger) = current(state, &campaign)?;
    if !ledger.leases.iter().any(|l| l.lease_id == settle.lease_id && l.region == settle.region) {
        return Err(Error::detail(Code::NotFound, "no such lease of this region (settled, or expired and counted)"));
    }
    ledger.settle(settle.lease_id, settle.used).map_err(|e| match e {
        LedgerError::UnknownLease => Error::detail(Code::NotFound, "no such lease"),
        LedgerError::BadReport => invalid("a lease's use only grows, up to its amount"),
    })?;
    write(state, &campaign.campaign_id, stored.as_ref(), &ledger).await
}

/// A campaign's money as home counts it: spent, leased, and left.
pub fn standing(state: &Region, campaign: &Campaign) -> Result<(Micros, Micros, Micros)> {
    let (_, ledger) = current(state, campaign)?;
    let leased = Micros(ledger.leases.iter().map(|l| l.amount.0).sum());
    Ok((ledger.spent, leased, ledger.available()))
}
