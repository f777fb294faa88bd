//! Home's campaign ledgers as stored (`svc_core::ads::ledger`): one per
//! campaign, read with what the campaign may spend now, and the change a
//! grant or a settlement writes, applied by the one writer against the
//! ledger as read. Shared by the use cases (leases asked over the link) and
//! home's own ad-reservations actor (its leases handed back).

use svc_core::ads::Micros;
use svc_core::ads::ledger::{Ledger, LedgerError};
use svc_core::time::UnixMs;

use crate::replication::Change;
use svc_store::model::Campaign;
use svc_store::{Store, StoreResult, cf};

/// Campaign ids begin so; the `campaigns` family's one other key is
/// [`CAMPAIGNS_CHANGED`].
pub const CAMPAIGN_PREFIX: &str = "cmp_";
/// A token rewritten with every campaign change (replicated with it), so a
/// region reads the campaigns again only when one changed.
pub const CAMPAIGNS_CHANGED: &[u8] = b"~changed";

/// Every campaign stored, at most `limit`.
pub fn campaigns(store: &Store, limit: usize) -> StoreResult<Vec<Campaign>> {
    Ok(store
        .scan::<Campaign>(cf::CAMPAIGNS, CAMPAIGN_PREFIX.as_bytes(), None, limit)?
        .into_iter()
        .map(|(_, c)| c)
        .collect())
}

/// Writes `campaign` in `change`, with a new change token.
pub fn put_campaign(change: &mut Change, campaign: &Campaign) {
    change.put(cf::CAMPAIGNS, campaign.campaign_id.as_bytes(), campaign);
    touch_campaigns(change);
}

/// Removes a campaign and its ledger in `change`, with a new change token
/// (its business's data expired).
pub fn remove_campaign(change: &mut Change, campaign_id: &str) {
    change.delete(cf::CAMPAIGNS, campaign_id.as_bytes());
    change.delete(cf::CAMPAIGN_LEDGERS, campaign_id.as_bytes());
    touch_campaigns(change);
}

fn touch_campaigns(change: &mut Change) {
    change.put(cf::CAMPAIGNS_CHANGED, CAMPAIGNS_CHANGED, &u64::from_le_bytes(svc_clock::random::<8>()));
}

/// The key of a campaign's credit in home's `ad_book`: charges home gave
/// back because two regions made them for one conversation.
pub fn credit_key(campaign_id: &str) -> Vec<u8> {
    [b"credit\0".as_slice(), campaign_id.as_bytes()].concat()
}

/// What home credited back to a campaign so far.
pub fn credit(store: &Store, campaign_id: &str) -> StoreResult<Micros> {
    Ok(store.get::<Micros>(cf::ad_book::CREDIT, &credit_key(campaign_id))?.unwrap_or_default())
}

/// The key of what home leased a region of a campaign, in all, in home's
/// `ad_book`: the most it credits back for that region's charges.
pub fn granted_key(campaign_id: &str, region: &str) -> Vec<u8> {
    [b"granted\0".as_slice(), campaign_id.as_bytes(), &[0], region.as_bytes()].concat()
}

/// The key of what a region handed back unused of its settled leases of a
/// campaign, in home's `ad_book`: what it was leased less this is the most
/// it can have spent.
pub fn returned_key(campaign_id: &str, region: &str) -> Vec<u8> {
    [b"returned\0".as_slice(), campaign_id.as_bytes(), &[0], region.as_bytes()].concat()
}

/// The key of what home credited back of a region's charges to a campaign.
pub fn credited_key(campaign_id: &str, region: &str) -> Vec<u8> {
    [b"credited\0".as_slice(), campaign_id.as_bytes(), &[0], region.as_bytes()].concat()
}

/// A sum kept in home's `ad_book` under `key` (nothing is zero).
pub fn sum(store: &Store, table: svc_store::Table<Micros>, key: &[u8]) -> StoreResult<Micros> {
    Ok(store.get(table, key)?.unwrap_or_default())
}

/// The most one event of `campaign` can charge at any take rate: a
/// region's reported charge above it was never made.
pub fn largest_charge(campaign: &Campaign) -> Micros {
    svc_core::ads::event_charge(campaign.terms.net_price, campaign.terms.basis, svc_core::ads::MAX_TAKE_BPS)
}

/// The campaign's ledger as stored, and as it stands now: its spendable
/// amount follows the campaign's, plus what home credited back (that much
/// of what was spent was charged twice), and leases past their time are ended.
pub fn current(store: &Store, campaign: &Campaign, now: UnixMs) -> StoreResult<(Option<Ledger>, Ledger)> {
    let stored = store.get::<Ledger>(cf::CAMPAIGN_LEDGERS, campaign.campaign_id.as_bytes())?;
    let mut ledger = stored.clone().unwrap_or_default();
    let credit = credit(store, &campaign.campaign_id)?;
    ledger.spendable = Micros(campaign.spendable().0.saturating_add(credit.0));
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
    let Some(amount) = ledger.leases.iter().find(|l| l.lease_id == lease_id && l.region == region).map(|l| l.amount)
    else {
        return Ok(Err(NotSettled::NoLease));
    };
    Ok(match ledger.settle(lease_id, used) {
        Ok(()) => {
            let mut change = written(campaign_id, stored.as_ref(), &ledger);
            let key = returned_key(campaign_id, region);
            let returned = sum(store, cf::ad_book::RETURNED, &key)?.0.saturating_add(amount.saturating_sub(used).0);
            change.put(cf::ad_book::RETURNED, &key, &Micros(returned));
            Ok(change)
        }
        Err(LedgerError::UnknownLease) => Err(NotSettled::NoLease),
        Err(LedgerError::BadReport) => Err(NotSettled::BadUse),
    })
}

/// Campaigns a region reads to know what it places.
pub const MAX_ALL_CAMPAIGNS: usize = 100_000;

/// Every campaign (at most [`MAX_ALL_CAMPAIGNS`]).
pub fn all(store: &Store) -> StoreResult<Vec<Campaign>> {
    campaigns(store, MAX_ALL_CAMPAIGNS)
}

/// The token of the latest campaign change (none before the first).
pub fn changed(store: &Store) -> StoreResult<Option<u64>> {
    store.get::<u64>(cf::CAMPAIGNS_CHANGED, CAMPAIGNS_CHANGED)
}
