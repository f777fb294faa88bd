//! What the portal shows of a business's records: its catalogue by type,
//! and a record's live bytes to edit.

use svc_core::ids::RecordType;
use svc_core::problem::Code;

use super::Signed;
use crate::region::parts::{HasClock, HasRegistry, HasStore};
use crate::service::{Error, Result};
use svc_store::model::*;
use svc_store::{cf, keys};

/// The most records of one type a portal page lists.
pub const PAGE: usize = 200;

/// One line of the portal's catalogue.
#[derive(Debug, Clone)]
pub struct Listed {
    pub record_id: String,
    pub own_id: String,
    pub state: RecordState,
    pub source: RecordSource,
    pub last_updated: String,
}

/// The business's records of `kind`: those in its catalogue, then those it
/// withdrew (to delete or publish again), each in record id order and at
/// most [`PAGE`] of each.
pub fn list(state: &(impl HasStore + HasRegistry), signed: &Signed, kind: RecordType) -> Result<Vec<Listed>> {
    let prefix = keys::prefix(&[&signed.account_uuid, kind.name()]);
    let mut out = Vec::new();
    let mut entries = state.store().scan::<()>(cf::CATALOGUE, &prefix, None, PAGE)?;
    entries.extend(state.store().scan::<()>(cf::WITHDRAWN, &prefix, None, PAGE)?);
    for (key, ()) in entries {
        let record_id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
        if let Some(head) = state.registry().record_head(&record_id)? {
            out.push(Listed {
                record_id,
                own_id: head.own_id,
                state: head.state,
                source: head.source,
                last_updated: head.last_updated.to_rfc3339_secs(),
            });
        }
    }
    Ok(out)
}

/// The live bytes of one of the business's records, to edit.
pub fn live_bytes(state: &impl HasRegistry, signed: &Signed, record_id: &str) -> Result<(RecordType, Vec<u8>)> {
    let head = state
        .registry()
        .record_head(record_id)?
        .filter(|h| h.business_uuid == signed.account_uuid && h.live_generation > 0)
        .ok_or_else(|| Error::new(Code::NotFound))?;
    let version =
        state.registry().record_version(record_id, head.live_generation)?.ok_or_else(|| Error::new(Code::NotFound))?;
    if version.bytes.is_empty() {
        return Err(Error::detail(Code::NotFound, "this record was deleted"));
    }
    Ok((head.record_type, version.bytes))
}

/// One of the business's records as the portal shows it after a save.
#[derive(Debug, Clone)]
pub struct Shown {
    pub record_id: String,
    pub record_type: RecordType,
    pub own_id: String,
    pub state: RecordState,
    pub version: u64,
    pub sha256: Option<String>,
    pub last_updated: String,
    /// The live version's bytes (`None` once deleted or never live).
    pub bytes: Option<Vec<u8>>,
}

pub fn show(state: &impl HasRegistry, signed: &Signed, record_id: &str) -> Result<Shown> {
    let head = state
        .registry()
        .record_head(record_id)?
        .filter(|h| h.business_uuid == signed.account_uuid)
        .ok_or_else(|| Error::new(Code::NotFound))?;
    let version = state.registry().record_version(record_id, head.live_generation)?;
    let bytes = version.map(|v| v.bytes).filter(|bytes| !bytes.is_empty());
    let sha256 = bytes.as_deref().map(svc_core::digest::sha256_prefixed);
    Ok(Shown {
        record_id: head.record_id,
        record_type: head.record_type,
        own_id: head.own_id,
        state: head.state,
        version: head.live_generation,
        sha256,
        last_updated: head.last_updated.to_rfc3339_secs(),
        bytes,
    })
}

/// A label (a date, a group name) with its searches and fetches.
pub type Tally = (String, u64, u64);

/// What the analytics page draws.
pub struct Figures {
    pub as_at: String,
    /// Per date, only those with counts.
    pub days: Vec<Tally>,
    /// Per asking group name, over 30 days.
    pub groups: Vec<Tally>,
    /// Per date with any: the business's ad renders, clicks and spend.
    pub ads: Vec<AdDay>,
}

/// A day's ad renders, clicks and spend (micro-dollars).
pub type AdDay = (String, u64, u64, svc_core::ads::Micros);

/// Searches and fetches of the business's records per day, summed over
/// countries and groups (the portal's chart), and per asking group over 30
/// days.
pub fn analytics<R>(state: &R, signed: &Signed) -> Result<Figures>
where
    R: HasStore + HasRegistry + HasClock,
{
    use crate::service::publishing::{DailyQuery, WhoQuery, daily_of, who_is_asking_of};
    let now = state.clock().now();
    let daily = daily_of(state, &signed.account_uuid, now, DailyQuery { from: None, to: None })?;
    let mut days: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    let mut ads: std::collections::BTreeMap<String, (u64, u64, u64)> = std::collections::BTreeMap::new();
    for day in daily["days"].as_array().into_iter().flatten() {
        let date = day["date"].as_str().unwrap_or_default().to_owned();
        let entry = days.entry(date.clone()).or_default();
        entry.0 += day["searches"].as_u64().unwrap_or(0);
        entry.1 += day["fetches"].as_u64().unwrap_or(0);
        let (renders, clicks) = (day["ad_renders"].as_u64().unwrap_or(0), day["ad_clicks"].as_u64().unwrap_or(0));
        let spend = day["spend_gross"]["amount"].as_str().and_then(svc_core::ads::Micros::parse).unwrap_or_default();
        if renders + clicks + spend.0 > 0 {
            let entry = ads.entry(date).or_default();
            (entry.0, entry.1, entry.2) = (entry.0 + renders, entry.1 + clicks, entry.2 + spend.0);
        }
    }
    let who = who_is_asking_of(state, &signed.account_uuid, now, WhoQuery { country: None })?;
    let mut groups: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    for group in who["groups"].as_array().into_iter().flatten() {
        let entry = groups.entry(group["name"].as_str().unwrap_or_default().to_owned()).or_default();
        entry.0 += group["searches"].as_u64().unwrap_or(0);
        entry.1 += group["fetches"].as_u64().unwrap_or(0);
    }
    let as_at = daily["as_at"].as_str().unwrap_or_default().to_owned();
    Ok(Figures {
        as_at,
        days: days.into_iter().map(|(d, (s, f))| (d, s, f)).collect(),
        groups: groups.into_iter().map(|(g, (s, f))| (g, s, f)).collect(),
        ads: ads.into_iter().map(|(d, (r, c, m))| (d, r, c, svc_core::ads::Micros(m))).collect(),
    })
}
