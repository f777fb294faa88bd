//! The business's pushes as the portal shows them, and the decision on a
//! push the price-shock rule held (publishing 3: "held for an owner or
//! admin"): publish it as sealed, or discard it.

use svc_core::publish::release::{Decision, Release, release_payload_type};
use svc_core::time::DAY;

use super::{SEALERS, Signed};
use crate::region::Region;
use crate::service::Result;
use crate::store::model::*;
use crate::store::{cf, keys};

/// How far back the pushes page looks, and how many it shows.
pub const WINDOW_DAYS: i64 = 30;
pub const SHOWN: usize = 50;
/// Pushes passed over to find them (one attempt row each).
const SCANNED: usize = 10_000;

/// The business's pushes of the last 30 days, newest first, at most 50.
pub fn recent(state: &Region, signed: &Signed) -> Result<Vec<PushRecord>> {
    let prefix = keys::prefix(&[&signed.business_uuid]);
    let since = state.clock.now().0.saturating_sub(WINDOW_DAYS * DAY).max(0);
    let start = keys::attempt(&signed.business_uuid, svc_core::time::UnixMs(since), "");
    let rows: Vec<(Vec<u8>, ())> = state.store.scan(cf::ATTEMPTS, &prefix, Some(&start), SCANNED)?;
    let mut out = Vec::new();
    for (key, ()) in rows.iter().rev().take(SHOWN) {
        let push_id = String::from_utf8_lossy(&key[prefix.len() + 9..]).into_owned();
        if let Some(push) = state.store.get::<PushRecord>(cf::PUSHES, &keys::push(&push_id))? {
            out.push(push);
        }
    }
    Ok(out)
}

/// The `push-release.v1` payload a person is about to seal for one of the
/// business's pushes.
pub fn release(state: &Region, signed: &Signed, push_id: &str, publish: bool) -> Result<(Vec<u8>, String)> {
    signed.require(SEALERS, "deciding on a held push")?;
    let release = Release {
        v: 1,
        push_id: push_id.to_owned(),
        business_uuid: signed.business_uuid.clone(),
        decision: if publish { Decision::Publish } else { Decision::Discard },
        confirmed_at: state.clock.now().to_rfc3339_millis(),
    };
    let payload = release.to_payload().map_err(|r| super::invalid(format!("the release: {r}")))?;
    Ok((payload, release_payload_type()))
}
