//! The caller's own account: its group's receipts, its company's usage, and
//! the AI-company Terms (retrieval 4). Signed like every retrieval route;
//! never billed.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::problem::Code;
use svc_core::publish::cursor;
use svc_core::time::{DAY, UnixMs};

use super::Caller;
use crate::actors::billing::{BillingMsg, day_of};
use crate::region::parts::{HasBilling, HasConfig, HasRegistry, HasStore};
use crate::service::{Error, Result};
use svc_store::model::{StoredReceipt, TermsVersion, UsageKind};
use svc_store::{be, cf, keys};

/// Receipts in one page (R4.18).
pub const RECEIPTS_PAGE: usize = 100;
/// Index entries one page may pass over while filtering by key or company;
/// past that the page ends early with a cursor to go on from.
const RECEIPTS_SCAN: usize = 10_000;
/// The longest usage range, in days.
pub const USAGE_MAX_DAYS: i64 = 366;

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

/// What `GET /v1/receipts` narrows by.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptsQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub key_id: Option<String>,
    pub ai_company_uuid: Option<String>,
    pub cursor: Option<String>,
}

fn timestamp(name: &str, value: Option<&str>) -> Result<Option<UnixMs>> {
    value
        .map(|v| UnixMs::parse_rfc3339(v).ok_or_else(|| invalid(format!("{name} is an RFC 3339 timestamp"))))
        .transpose()
}

/// Where one of a group's receipts is: its served time and sequence, and
/// the read region that issued it (none: this node's own receipt log).
struct Position {
    ms: i64,
    seq: u64,
    region: Option<String>,
}

impl Position {
    /// Reads the part of a `receipts_by_group` key after the group's prefix.
    fn of_key(tail: &[u8]) -> Option<Position> {
        let (ms, seq, region) = keys::parse_receipt_by_group(tail)?;
        Some(Position { ms, seq, region })
    }

    fn key(&self, group: &str) -> Vec<u8> {
        match &self.region {
            None => keys::receipt_by_group(group, self.ms, self.seq),
            Some(region) => keys::region_receipt_by_group(group, self.ms, self.seq, region),
        }
    }

    /// The cursor's text: `ms-seq`, or `ms-seq-region`.
    fn text(&self) -> String {
        match &self.region {
            None => format!("{}-{}", self.ms, self.seq),
            Some(region) => format!("{}-{}-{region}", self.ms, self.seq),
        }
    }

    fn parse(text: &str) -> Option<Position> {
        let mut parts = text.splitn(3, '-');
        let ms = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        let region = parts.next().map(str::to_owned);
        Some(Position { ms, seq, region })
    }
}

/// The caller's group's receipts, oldest first, 100 a page: at home, those
/// every region issued (a read region's once it shipped them, within a
/// second or so); a read region forwards the route to home. `key_id` and
/// `ai_company_uuid` narrow within the group; they never widen it.
pub fn receipts(state: &impl HasStore, caller: &Caller, q: ReceiptsQuery) -> Result<Value> {
    group_receipts(state, &caller.key.group_id, q)
}

/// One group's receipts, a page at a time (the route above, and the
/// AI-company portal's receipts and their download).
pub fn group_receipts(state: &impl HasStore, group: &str, q: ReceiptsQuery) -> Result<Value> {
    let from = timestamp("from", q.from.as_deref())?.unwrap_or(UnixMs(0));
    let to = timestamp("to", q.to.as_deref())?;
    let prefix = keys::prefix(&[group]);
    let mut start = keys::receipt_by_group(group, from.0, 0);
    if let Some(c) = q.cursor.as_deref() {
        let position = cursor::decode(c).and_then(|p| Position::parse(&p)).ok_or_else(|| invalid("cursor"))?;
        // Resume just past the last receipt of the previous page.
        let mut after = position.key(group);
        after.push(0);
        start = start.max(after);
    }
    let mut page = Vec::new();
    let mut scanned = 0;
    let mut last_position = None;
    let mut exhausted = false;
    'scan: while scanned < RECEIPTS_SCAN {
        let batch = state.store().scan::<()>(cf::RECEIPTS_BY_GROUP, &prefix, Some(&start), 1_000)?;
        if batch.is_empty() {
            exhausted = true;
            break;
        }
        for (k, ()) in &batch {
            scanned += 1;
            let Some(position) = Position::of_key(&k[prefix.len()..]) else { continue };
            if to.is_some_and(|to| position.ms > to.0) {
                exhausted = true;
                break 'scan;
            }
            let stored: Option<StoredReceipt> = match &position.region {
                None => state.store().get(cf::RECEIPTS, &be(position.seq))?,
                Some(region) => state.store().get(cf::REGION_RECEIPTS, &keys::region_receipt(region, position.seq))?,
            };
            last_position = Some(position.text());
            let Some(stored) = stored else { continue };
            let wanted = q.key_id.as_ref().is_none_or(|k| *k == stored.caller_key_id)
                && q.ai_company_uuid.as_ref().is_none_or(|c| *c == stored.company_uuid);
            if wanted {
                let envelope: Value = serde_json::from_slice(&stored.envelope).map_err(Error::internal)?;
                page.push(json!({
                    "receipt": envelope,
                    "retrieval_id": stored.retrieval_id,
                    "served_at": stored.served_at.to_rfc3339_millis(),
                    "caller_key_id": stored.caller_key_id,
                    "kind": match stored.kind { UsageKind::Search => "search", UsageKind::Fetch => "fetch", UsageKind::Pool => "pool" },
                }));
                if page.len() == RECEIPTS_PAGE {
                    break 'scan;
                }
            }
        }
        let Some((last, ())) = batch.last() else { break };
        start = last.clone();
        start.push(0);
        if batch.len() < 1_000 {
            exhausted = true;
            break;
        }
    }
    // A full page, or a scan cut short, may have more behind it.
    let next_cursor = if exhausted { None } else { last_position.map(|p| cursor::encode(&p)) };
    Ok(json!({"receipts": page, "next_cursor": next_cursor}))
}

/// The days `GET /v1/usage` covers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

fn day(name: &str, value: Option<&str>) -> Result<Option<UnixMs>> {
    value.map(|v| UnixMs::parse_date(v).ok_or_else(|| invalid(format!("{name} is a date, YYYY-MM-DD")))).transpose()
}

/// The caller's company's billed requests per UTC day (shape in the
/// docs/REFERENCE.md): the last 30 days unless `from` and `to` say otherwise.
pub async fn usage(state: &(impl HasConfig + HasBilling), caller: &Caller, q: UsageQuery) -> Result<Value> {
    company_usage(state, &caller.key.company_uuid, caller.now, q).await
}

/// A company's billed requests per UTC day (the route above, and the
/// AI-company portal's usage and bills).
pub async fn company_usage(
    state: &(impl HasConfig + HasBilling),
    company_uuid: &str,
    now: UnixMs,
    q: UsageQuery,
) -> Result<Value> {
    let to = day("to", q.to.as_deref())?.unwrap_or(now);
    let from = day("from", q.from.as_deref())?.unwrap_or(to.minus(29 * DAY));
    let (from_day, to_day) = (day_of(from), day_of(to));
    if from_day > to_day {
        return Err(invalid("from is after to"));
    }
    if (to.0 - from.0) / DAY >= USAGE_MAX_DAYS {
        return Err(invalid(format!("a usage range is at most {USAGE_MAX_DAYS} days")));
    }
    let company_uuid = company_uuid.to_owned();
    let report = state
        .billing()
        .call(|reply| BillingMsg::Usage {
            company_uuid: company_uuid.clone(),
            from_day: from_day.clone(),
            to_day: to_day.clone(),
            reply,
        })
        .await??;
    let (mut searches, mut fetches) = (0, 0);
    let days: Vec<Value> = report
        .days
        .iter()
        .map(|(date, counts)| {
            searches += counts.searches;
            fetches += counts.fetches;
            json!({"date": date, "searches": counts.searches, "fetches": counts.fetches,
                   "billed": counts.searches + counts.fetches})
        })
        .collect();
    let allowance = match report.allowance {
        Some(a) if a.prepay => json!({"prepay": true, "remaining": a.remaining}),
        _ => json!({"prepay": false}),
    };
    Ok(json!({
        "ai_company_uuid": company_uuid,
        "environment": if state.config().environment.is_sandbox() { "sandbox" } else { "production" },
        "invoiced": !state.config().environment.is_sandbox(),
        "from": from_day,
        "to": to_day,
        "days": days,
        "totals": {"searches": searches, "fetches": fetches, "billed": searches + fetches},
        "allowance": allowance,
    }))
}

fn terms_json(terms: &TermsVersion) -> Value {
    json!({
        "version": terms.version,
        "effective_from": terms.effective_from.to_rfc3339_secs(),
        "sha256": terms.sha256,
        "text": terms.text,
    })
}

/// The newest version already in effect; 404 when none is.
pub fn terms_in_force(state: &impl HasRegistry, caller: &Caller) -> Result<Value> {
    let in_force = state.registry().terms_in_force(caller.now)?;
    in_force.as_ref().map(terms_json).ok_or_else(|| Error::detail(Code::NotFound, "no Terms version is in force"))
}

/// One Terms version, in force or not.
pub fn terms_version(state: &impl HasRegistry, version: &str) -> Result<Value> {
    let version: u64 = version.parse().map_err(|_| invalid("the Terms version is an integer"))?;
    let terms = state.registry().terms()?;
    terms.iter().find(|t| t.version == version).map(terms_json).ok_or_else(|| Error::new(Code::NotFound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_a_receipt_of_this_node_or_of_a_region_and_reads_back() {
        let group = "grp_1";
        for (ms, seq, region) in [(5, 7, None), (5, 7, Some("eu-west")), (0, u64::MAX, Some("ap"))] {
            let position = Position { ms, seq, region: region.map(str::to_owned) };
            let read = Position::parse(&position.text()).unwrap();
            assert_eq!((read.ms, read.seq, read.region.as_deref()), (ms, seq, region));
            let key = position.key(group);
            let tail = &key[keys::prefix(&[group]).len()..];
            let back = Position::of_key(tail).unwrap();
            assert_eq!((back.ms, back.seq, back.region.as_deref()), (ms, seq, region));
        }
        // A region's receipt of the same millisecond and number sorts after this node's.
        let own = Position { ms: 5, seq: 7, region: None }.key(group);
        let eu = Position { ms: 5, seq: 7, region: Some("eu".into()) }.key(group);
        let next = Position { ms: 5, seq: 8, region: None }.key(group);
        assert!(own < eu && eu < next);
        assert!(Position::parse("5").is_none() && Position::parse("x-1").is_none());
    }
}
