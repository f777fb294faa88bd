//! The business's pushes as the portal shows them, and the decision on a
//! push the price-shock rule held (publishing 3: "held for an owner or
//! admin"): publish it as sealed, or discard it.

use svc_core::publish::release::{Decision, Release, release_payload_type};
use svc_core::time::DAY;

use svc_core::problem::Code;
use svc_core::time::UnixMs;

use super::{SEALERS, Signed};
use crate::region::parts::{HasClock, HasHome, HasStore};
use crate::replication::Change;
use crate::service::{Error, Result};
use svc_store::model::*;
use svc_store::{cf, keys};

/// How far back the pushes page looks, and how many it shows.
pub const WINDOW_DAYS: i64 = 30;
pub const SHOWN: usize = 50;
/// Pushes passed over to find them (one attempt row each).
const SCANNED: usize = 10_000;

/// The business's pushes of the last 30 days, newest first, at most 50.
pub fn recent(state: &(impl HasStore + HasClock), signed: &Signed) -> Result<Vec<PushRecord>> {
    let prefix = keys::prefix(&[&signed.account_uuid]);
    let since = state.clock().now().0.saturating_sub(WINDOW_DAYS * DAY).max(0);
    let start = keys::attempt(&signed.account_uuid, svc_core::time::UnixMs(since), "");
    let rows: Vec<(Vec<u8>, ())> = state.store().scan(cf::ATTEMPTS, &prefix, Some(&start), SCANNED)?;
    let mut out = Vec::new();
    for (key, ()) in rows.iter().rev().take(SHOWN) {
        let push_id = String::from_utf8_lossy(&key[prefix.len() + 9..]).into_owned();
        if let Some(push) = state.store().get::<PushRecord>(cf::PUSHES, &keys::push(&push_id))? {
            out.push(push);
        }
    }
    Ok(out)
}

/// One push and a page of its attempts (one per record, in leaf order),
/// as `GET /v1/push-attempts` reports them; the leaf the next page starts
/// at, if there is one.
pub struct Attempts {
    pub push: PushRecord,
    pub leaves: Vec<PushLeaf>,
    pub next: Option<u64>,
}

/// Attempts a page shows.
pub const ATTEMPTS_PAGE: usize = 100;

/// A page of one of the business's pushes' attempts, from leaf `from`.
pub fn attempts(state: &impl HasStore, signed: &Signed, push_id: &str, from: u64) -> Result<Attempts> {
    let push = state
        .store()
        .get::<PushRecord>(cf::PUSHES, &keys::push(push_id))?
        .filter(|p| p.business_uuid == signed.account_uuid)
        .ok_or_else(|| Error::new(Code::NotFound))?;
    let mut leaves = Vec::new();
    let mut next = None;
    crate::service::publishing::leaves_while(state, push_id, from, |leaf| {
        if leaves.len() == ATTEMPTS_PAGE {
            next = Some(leaf.leaf_index);
            return false;
        }
        leaves.push(leaf);
        true
    })?;
    Ok(Attempts { push, leaves, next })
}

/// What the portal tells a person about pushes their systems made while
/// they were away: each push that finished, or was held for a decision,
/// after `since`, newest first.
pub fn notices(state: &(impl HasStore + HasClock), signed: &Signed) -> Result<Vec<PushRecord>> {
    let seen = state.store().get::<UnixMs>(cf::NOTICES_SEEN, &keys::person(&signed.account_uuid, &signed.person_id))?;
    // Without a mark, the last day's.
    let since = seen.unwrap_or(state.clock().now().minus(DAY));
    let mut out = recent(state, signed)?;
    // A held push settles twice: held, then published or discarded.
    out.retain(|p| p.state.is_settled() && p.updated_at > since);
    Ok(out)
}

/// Marks every notice so far as read.
pub async fn dismiss_notices(state: &(impl HasClock + HasHome), signed: &Signed) -> Result<()> {
    let mut change = Change::new();
    let now = state.clock().now();
    change.put(cf::NOTICES_SEEN, &keys::person(&signed.account_uuid, &signed.person_id), &now);
    super::apply(state, change).await
}

/// The `push-release.v1` payload a person is about to seal for one of the
/// business's pushes.
pub fn release(state: &impl HasClock, signed: &Signed, push_id: &str, publish: bool) -> Result<(Vec<u8>, String)> {
    signed.require(SEALERS, "deciding on a held push")?;
    let release = Release {
        v: 1,
        push_id: push_id.to_owned(),
        business_uuid: signed.account_uuid.clone(),
        decision: if publish { Decision::Publish } else { Decision::Discard },
        confirmed_at: state.clock().now().to_rfc3339_millis(),
    };
    let payload = release.to_payload().map_err(|r| super::invalid(format!("the release: {r}")))?;
    Ok((payload, release_payload_type()))
}
