//! Home's campaign ledgers as stored (`svc_core::ads::ledger`): one per
//! campaign, read with what the campaign may spend now, and the change a
//! grant or a settlement writes, applied by the one writer against the
//! ledger as read. Shared by the use cases (leases asked over the link) and
//! home's own ad-reservations actor (its leases handed back).

use svc_core::ads::Micros;
use svc_core::ads::ledger::{Ledger, LedgerError};
use svc_core::time::UnixMs;

use crate::replication::Change;
use crate::store::model::Campaign;
use crate::store::{Store, StoreResult, cf};

/// The campaign's ledger as stored, and as it stands now: its spendable
/// amount follows the campaign's, and leases past their time are ended.
pub fn current(store: &Store, campaign: &Campaign, now: UnixMs) -> StoreResult<(Option<Ledger>, Ledger)> {
    let stored = store.get::<Ledger>(cf::CAMPAIGN_LEDGERS, campaign.campaign_id.as_bytes())?;
    let mut ledger = stored.clone().unwrap_or_default();
    ledger.spendable = campaign.spendable();
    ledger.expire(now);
    Ok((stored, ledger))
}

/// Writes `ledger` unless another change came first.
pub fn written(campaign_id: &str, as_read: Option<&Ledger>, ledger: &Ledger) -> Change {
    let mut change = Change::new();
    match as_read {
        Some(read) => change.require_unchanged(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes(), read),
        None => change.require_absent(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes()),
    };
    change.put(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes(), ledger);
    change
}

/// Why a settlement changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSettled {
    NoCampaign,
    /// Settled before, or expired and counted in full.
    NoLease,
    /// A use below what was reported, or above the lease.
    BadUse,
}

/// The change that takes lease `lease_id` back from `region` with `used`.
pub fn settle(
    store: &Store,
    now: UnixMs,
    region: &str,
    campaign_id: &str,
    lease_id: u64,
    used: Micros,
) -> StoreResult<Result<Change, NotSettled>> {
    let Some(campaign) = store.get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())? else {
        return Ok(Err(NotSettled::NoCampaign));
    };
    let (stored, mut ledger) = current(store, &campaign, now)?;
    if !ledger.leases.iter().any(|l| l.lease_id == lease_id && l.region == region) {
        return Ok(Err(NotSettled::NoLease));
    }
    Ok(match ledger.settle(lease_id, used) {
        Ok(()) => Ok(written(campaign_id, stored.as_ref(), &ledger)),
        Err(LedgerError::UnknownLease) => Err(NotSettled::NoLease),
        Err(LedgerError::BadReport) => Err(NotSettled::BadUse),
    })
}
