//! Business analytics (publishing 4.1, signed `svc-business-read`): daily
//! counts by country and AI group name, and who is asking in the last 30
//! days. Folded from this region's receipt log by the analytics actor.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::ads::Micros;
use svc_core::analytics::{self, Counts, MAX_DAILY_DAYS, WHO_IS_ASKING_DAYS};
use svc_core::problem::Code;
use svc_core::time::{DAY, UnixMs};

use super::BusinessCaller;
use crate::region::parts::{HasRegistry, HasStore};
use crate::service::{Error, Result};
use svc_store::model::{AdHourCounts, HourCounts};
use svc_store::{be, cf, keys};

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

/// One hour's counts: (hour, country, group id, counts).
type Hour = (UnixMs, Option<String>, String, Counts);

/// A business's hourly counts in `[from, until)`.
fn hours(state: &impl HasStore, business_uuid: &str, from: UnixMs, until: UnixMs) -> Result<Vec<Hour>> {
    let prefix = keys::prefix(&[business_uuid]);
    let mut start = prefix.clone();
    start.extend_from_slice(&be(from.0.max(0) as u64));
    let mut out = Vec::new();
    let mut add = |k: &[u8], counts: Counts| {
        let Some((hour, country, group)) = keys::parse_analytics(&k[prefix.len()..]) else { return true };
        if hour >= until.0 {
            return false;
        }
        out.push((UnixMs(hour), (!country.is_empty()).then_some(country), group, counts));
        true
    };
    state.store().walk(cf::ANALYTICS, &prefix, Some(&start), |k, c: HourCounts| {
        add(k, Counts { searches: c.searches, fetches: c.fetches, ..Counts::default() })
    })?;
    state.store().walk(cf::AD_ANALYTICS, &prefix, Some(&start), |k, c: AdHourCounts| {
        add(k, Counts { ad_renders: c.renders, ad_clicks: c.clicks, spend: c.spend, ..Counts::default() })
    })?;
    Ok(out)
}

/// Group names, looked up once each.
fn group_name(state: &impl HasRegistry, names: &mut BTreeMap<String, String>, group_id: &str) -> Result<String> {
    if let Some(name) = names.get(group_id) {
        return Ok(name.clone());
    }
    let name = state.registry().group(group_id)?.map(|g| g.name).unwrap_or_default();
    names.insert(group_id.to_owned(), name.clone());
    Ok(name)
}

/// The days `GET /v1/analytics/daily` covers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DailyQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

/// `from` and `to` are UTC dates, both inclusive (default: the 30 days to
/// `as_at`); at most 92 days.
pub fn daily(state: &(impl HasStore + HasRegistry), caller: &BusinessCaller, q: DailyQuery) -> Result<Value> {
    daily_of(state, &caller.key.business_uuid, caller.now, q)
}

/// [`daily`] for a business at `now`, whoever asks (the portal too).
pub fn daily_of(
    state: &(impl HasStore + HasRegistry),
    business_uuid: &str,
    now: UnixMs,
    q: DailyQuery,
) -> Result<Value> {
    let date = |name: &str, v: &Option<String>| -> Result<Option<UnixMs>> {
        v.as_deref()
            .map(|v| UnixMs::parse_date(v).ok_or_else(|| invalid(format!("{name} is a date, YYYY-MM-DD"))))
            .transpose()
    };
    let as_at = analytics::as_at(now);
    let to = date("to", &q.to)?.map_or(as_at, |d| d.plus(DAY).min(as_at));
    let from = date("from", &q.from)?.unwrap_or(UnixMs(to.0 - WHO_IS_ASKING_DAYS * DAY));
    if from > to {
        return Err(invalid("from is after to"));
    }
    if (to.0 - from.0) > MAX_DAILY_DAYS * DAY {
        return Err(invalid(format!("a range is at most {MAX_DAILY_DAYS} days")));
    }
    let hours = hours(state, business_uuid, from, to)?;
    let days = analytics::daily(hours.iter().map(|(h, c, g, n)| (*h, c.as_deref(), g.as_str(), *n)), from, to);
    let mut names = BTreeMap::new();
    let mut out = Vec::with_capacity(days.len());
    for ((date, country, group), counts) in days {
        out.push(json!({
            "date": date,
            "country": country,
            "ai_group": group_name(state, &mut names, &group)?,
            "searches": counts.searches,
            "fetches": counts.fetches,
            "ad_renders": counts.ad_renders,
            "ad_clicks": counts.ad_clicks,
            // svc takes no cut of a net price yet, so gross is what was charged.
            "spend_gross": {"amount": Micros(counts.spend).to_decimal(), "currency": "USD"},
        }));
    }
    Ok(json!({"as_at": as_at.to_rfc3339_secs(), "days": out}))
}

/// The country `GET /v1/analytics/who-is-asking` narrows to.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhoQuery {
    pub country: Option<String>,
}

/// The groups that asked in the 30 days to `as_at`, per country (fetches,
/// which name no country, under `null`); `country` narrows to one.
pub fn who_is_asking(state: &(impl HasStore + HasRegistry), caller: &BusinessCaller, q: WhoQuery) -> Result<Value> {
    who_is_asking_of(state, &caller.key.business_uuid, caller.now, q)
}

/// [`who_is_asking`] for a business at `now`, whoever asks.
pub fn who_is_asking_of(
    state: &(impl HasStore + HasRegistry),
    business_uuid: &str,
    now: UnixMs,
    q: WhoQuery,
) -> Result<Value> {
    if let Some(c) = &q.country
        && !svc_core::ids::is_country(c)
    {
        return Err(invalid("country is an ISO 3166-1 alpha-2 code"));
    }
    let as_at = analytics::as_at(now);
    let from = UnixMs(as_at.0 - WHO_IS_ASKING_DAYS * DAY);
    let mut groups: BTreeMap<(String, Option<String>), Counts> = BTreeMap::new();
    for (_, country, group, counts) in hours(state, business_uuid, from, as_at)? {
        if q.country.is_some() && country != q.country {
            continue;
        }
        *groups.entry((group, country)).or_default() += counts;
    }
    let mut names = BTreeMap::new();
    let mut out = Vec::with_capacity(groups.len());
    for ((group, country), counts) in groups {
        out.push(json!({
            "ai_group_id": group,
            "name": group_name(state, &mut names, &group)?,
            "country": country,
            "searches": counts.searches,
            "fetches": counts.fetches,
        }));
    }
    Ok(json!({"as_at": as_at.to_rfc3339_secs(), "window_days": WHO_IS_ASKING_DAYS, "groups": out}))
}
