//! Campaigns (the spec shows none): a business creates one with its terms
//! and the records it places, pauses, resumes or ends it; the operator
//! funds it. Every change is a replicated write, so each region knows what
//! it may place.

use svc_core::ads::campaign::{CampaignTerms, check};
use svc_core::ads::{Micros, Placement};
use svc_core::ids::RecordType;
use svc_core::problem::Code;

use crate::campaign_ledger;
use crate::region::parts::{HasClock, HasHome, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::error::invalid;
use crate::service::writes::apply;
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::cf;
use svc_store::model::*;

/// Records one campaign places.
pub const MAX_ITEMS: usize = 1_000;
/// Campaigns one business holds (ended ones included).
pub const MAX_CAMPAIGNS: usize = 200;

/// The record types a placement may list.
fn placeable(placement: Placement) -> &'static [RecordType] {
    match placement {
        Placement::Ad => &[RecordType::Ads],
        Placement::Sponsorship => &[RecordType::Products],
        Placement::Promotion => &[RecordType::Events, RecordType::Jobs, RecordType::Updates],
    }
}

/// Checks that each item is a live record of the business of a type the
/// placement lists.
pub fn check_items(
    state: &impl HasRegistry,
    business_uuid: &str,
    placement: Placement,
    items: &[String],
) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for id in items {
        let head = state.registry().record_head(id)?.filter(|h| h.business_uuid == business_uuid);
        match head {
            Some(h) if h.state == RecordState::Live && placeable(placement).contains(&h.record_type) => {}
            Some(h) if h.state == RecordState::Live => {
                return Err(invalid(format!(
                    "{id} is a record of {}, which this campaign does not place",
                    h.record_type.name()
                )));
            }
            _ => return Err(invalid(format!("{id} is no live record of this business"))),
        }
        if !out.contains(id) {
            out.push(id.clone());
        }
    }
    if out.len() > MAX_ITEMS {
        return Err(invalid(format!("a campaign places at most {MAX_ITEMS} records")));
    }
    Ok(out)
}

/// The business's campaigns, newest first.
pub fn of_business(state: &impl HasStore, business_uuid: &str) -> Result<Vec<Campaign>> {
    let mut all: Vec<Campaign> = all(state)?.into_iter().filter(|c| c.business_uuid == business_uuid).collect();
    all.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    Ok(all)
}

/// Every campaign (at most [`campaign_ledger::MAX_ALL_CAMPAIGNS`]).
pub fn all(state: &impl HasStore) -> Result<Vec<Campaign>> {
    Ok(campaign_ledger::all(state.store())?)
}

/// The token of the latest campaign change (none before the first).
pub fn changed(state: &impl HasStore) -> Result<Option<u64>> {
    Ok(campaign_ledger::changed(state.store())?)
}

/// The terms checked, every reason in one refusal.
pub fn checked(terms: &CampaignTerms) -> Result<svc_core::ads::campaign::Terms> {
    check(terms).map_err(|errors| {
        let reasons: Vec<String> = errors.iter().map(|(member, why)| format!("{member}: {why}")).collect();
        invalid(reasons.join("; "))
    })
}

/// Creates a campaign of `business_uuid`, active and unfunded: it places
/// nothing until the operator funds it. `sealed` is the `campaign.v1` a
/// person's passkey signed, if one did.
pub async fn create<R>(
    state: &R,
    business_uuid: &str,
    terms: &CampaignTerms,
    items: &[String],
    sealed: Vec<u8>,
) -> Result<Campaign>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    state.registry().business(business_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let checked = checked(terms)?;
    // What the business pays for an event is its net price grossed up by
    // the service's take: a budget short of that would never place anything.
    let charge = svc_core::ads::event_charge(checked.net_price, checked.basis, super::reservations::take_rate(state)?);
    if charge > checked.budget {
        return Err(invalid(format!(
            "budget: the budget does not cover one billable event, {} with the service's take",
            charge.to_decimal()
        )));
    }
    if of_business(state, business_uuid)?.len() >= MAX_CAMPAIGNS {
        return Err(invalid(format!("a business holds at most {MAX_CAMPAIGNS} campaigns")));
    }
    let items = check_items(state, business_uuid, checked.placement, items)?;
    let now = state.clock().now();
    let campaign = Campaign {
        campaign_id: format!("{}{}", campaign_ledger::CAMPAIGN_PREFIX, hex::encode(random::<12>())),
        business_uuid: business_uuid.to_owned(),
        terms: checked,
        items,
        state: CampaignState::Active,
        funded: Micros(0),
        created_at: now,
        updated_at: now,
        sealed,
    };
    let mut change = Change::new();
    change.require_absent(cf::CAMPAIGNS, campaign.campaign_id.as_bytes());
    campaign_ledger::put_campaign(&mut change, &campaign);
    apply(state, change).await?;
    Ok(campaign)
}

fn read(state: &impl HasStore, campaign_id: &str, business_uuid: Option<&str>) -> Result<Campaign> {
    state
        .store()
        .get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())?
        .filter(|c| business_uuid.is_none_or(|b| b == c.business_uuid))
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))
}

/// Writes a changed campaign, unless another change came first.
async fn rewrite(state: &(impl HasClock + HasHome), as_read: &Campaign, changed: Campaign) -> Result<Campaign> {
    let mut change = Change::new();
    change.require_unchanged(cf::CAMPAIGNS, as_read.campaign_id.as_bytes(), as_read);
    campaign_ledger::put_campaign(&mut change, &changed);
    apply(state, change).await?;
    Ok(changed)
}

/// The operator adds `amount` (dollars, a decimal string) to a campaign's
/// funds (the sandbox's are fictional).
pub async fn fund<R>(state: &R, campaign_id: &str, amount: &str) -> Result<Campaign>
where
    R: HasStore + HasClock + HasHome,
{
    let amount =
        Micros::parse(amount).filter(|a| a.0 > 0).ok_or_else(|| invalid("amount is more than zero dollars"))?;
    let as_read = read(state, campaign_id, None)?;
    let funded = Micros(as_read.funded.0.saturating_add(amount.0)).min(Micros::MAX);
    let changed = Campaign { funded, updated_at: state.clock().now(), ..as_read.clone() };
    rewrite(state, &as_read, changed).await
}

/// The business pauses, resumes or ends a campaign; an ended one stays ended.
pub async fn set_state<R>(state: &R, business_uuid: &str, campaign_id: &str, to: CampaignState) -> Result<Campaign>
where
    R: HasStore + HasClock + HasHome,
{
    let as_read = read(state, campaign_id, Some(business_uuid))?;
    if as_read.state == CampaignState::Ended && to != CampaignState::Ended {
        return Err(invalid("an ended campaign stays ended"));
    }
    let changed = Campaign { state: to, updated_at: state.clock().now(), ..as_read.clone() };
    rewrite(state, &as_read, changed).await
}
