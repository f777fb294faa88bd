//! What a business reads back with `svc-business-read`: a push's status,
//! its catalogue and one record of it, its push attempts, and the seal
//! context its next seal needs.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_core::publish::cursor;
use svc_core::publish::outcome::{self as out, Outcome, PushStatus};
use svc_core::time::UnixMs;

use super::*;
use crate::region::parts::{HasClock, HasConfig, HasLimits, HasRegionPositions, HasRegistry, HasStore};

/// What `GET /v1/pushes/{push_id}` pages by.
#[derive(Deserialize)]
pub struct StatusQuery {
    pub outcome: Option<String>,
    pub cursor: Option<String>,
}

/// One of the business's pushes, with a page of its results.
pub fn push_status_of(
    state: &(impl HasStore + HasClock),
    caller: &BusinessCaller,
    push_id: &str,
    query: StatusQuery,
) -> Result<PushStatus> {
    let key = &caller.key;
    let outcome = match query.outcome.as_deref() {
        Some(o) => Some(Outcome::parse(o).ok_or_else(|| Error::detail(Code::RequestInvalid, "outcome"))?),
        None => None,
    };
    let push = state
        .store()
        .get::<PushRecord>(cf::PUSHES, &keys::push(push_id))?
        .filter(|p| p.business_uuid == key.business_uuid)
        .ok_or_else(|| Error::new(Code::NotFound))?;
    push_status(state, &push, true, outcome, query.cursor.as_deref())
}

/// Entries in one catalogue page.
pub const CATALOGUE_PAGE: usize = 1_000;

/// What `GET /v1/catalogue` pages by.
#[derive(Deserialize)]
pub struct CatalogueQuery {
    pub cursor: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// The business's records of one collection, a page at a time, within the
/// key's read-back budget.
pub fn catalogue(state: &(impl HasRegistry + HasLimits), caller: &BusinessCaller, q: CatalogueQuery) -> Result<Value> {
    let (key, now) = (&caller.key, caller.now);
    let kind = match q.kind.as_deref() {
        None => RecordType::Products,
        Some(name) => RecordType::from_name(name)
            .filter(|t| t.is_collection())
            .ok_or_else(|| Error::detail(Code::RequestInvalid, "type is a collection name"))?,
    };
    let after = match q.cursor.as_deref() {
        Some(c) => Some(cursor::decode(c).ok_or_else(|| Error::detail(Code::RequestInvalid, "cursor"))?),
        None => None,
    };
    // Read-back above 1,000 records a minute waits (P8.20).
    if let Err(wait_ms) = state.limits().catalogue_reads.judge(&key.key_id, now) {
        return Err(Error::retry_after(
            Code::RateLimited,
            wait_ms,
            "catalogue read-back is over 1,000 records a minute",
        ));
    }
    let ids = state.registry().catalogue_ids(&key.business_uuid, kind.name(), after.as_deref(), CATALOGUE_PAGE + 1)?;
    let more = ids.len() > CATALOGUE_PAGE;
    let mut entries = Vec::new();
    for id in ids.iter().take(CATALOGUE_PAGE) {
        if let Some(head) = state.registry().record_head(id)? {
            entries.push(
                json!({"record_id": head.record_id, "business_product_id": head.own_id, "type": head.record_type,
                "last_updated": head.last_updated.to_rfc3339_secs(), "source": head.source}),
            );
        }
    }
    let next_cursor = if more { ids.get(CATALOGUE_PAGE - 1).map(|id| cursor::encode(id)) } else { None };
    state.limits().catalogue_reads.spend(&key.key_id, now, entries.len() as u64);
    Ok(json!({"entries": entries, "next_cursor": next_cursor}))
}

/// The log sequence of the entry that last changed a record.
pub fn last_change(state: &impl HasStore, record_id: &str) -> Result<Option<u64>> {
    Ok(state.store().get(cf::RECORD_SEQS, record_id.as_bytes())?)
}

/// The regions, home first, whose index holds the change at `from` (and,
/// given `until`, not yet the change after it): a record as changed at
/// `from` is what they serve. Read regions say how far their index is
/// each time they pull home's log.
pub fn regions_serving<R>(state: &R, from: u64, until: Option<u64>) -> Result<Vec<String>>
where
    R: HasConfig + HasStore + HasRegionPositions,
{
    let own = crate::actors::indexer::indexed_seq(state.store())?;
    Ok(state.region_positions().serving((&state.config().region, own), from, until))
}

/// One record of the business, by record id or its own id, as sealed.
pub fn catalogue_record<R>(state: &R, caller: &BusinessCaller, id: &str) -> Result<Value>
where
    R: HasConfig + HasStore + HasRegistry + HasRegionPositions,
{
    let key = &caller.key;
    if id.is_empty() || id.chars().count() > 256 {
        return Err(Error::detail(Code::RequestInvalid, "the id is 1 to 256 characters"));
    }
    let record_id = if svc_core::ids::parse_record_id(id).is_some() {
        id.to_owned()
    } else {
        svc_core::ids::product_id(&key.business_uuid, id)
    };
    let head = state
        .registry()
        .record_head(&record_id)?
        .filter(|h| h.business_uuid == key.business_uuid && !matches!(h.state, RecordState::Deleted))
        .ok_or_else(|| Error::new(Code::NotFound))?;
    // The served version; a held newer one is not the record of truth yet.
    let generation = if head.live_generation > 0 { head.live_generation } else { head.generation };
    let version = state.registry().record_version(&record_id, generation)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let raw = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
    let serving =
        head.state == RecordState::Live && state.registry().serves(&head.business_uuid, &version, caller.now)?;
    // A record last changed before changes were recorded is held by every
    // region that is pulling (seq 0).
    let live_in =
        if serving { regions_serving(state, last_change(state, &record_id)?.unwrap_or(0), None)? } else { Vec::new() };
    Ok(json!({
        "record_id": head.record_id,
        "business_product_id": head.own_id,
        "type": head.record_type,
        "record": svc_core::b64::std_encode(&version.bytes),
        "seal": raw(&version.seal),
        "sidecar": raw(&version.sidecar),
        "live_in": live_in,
        "last_updated": head.last_updated.to_rfc3339_secs(),
        "source": head.source,
    }))
}

/// What `GET /v1/push-attempts` narrows by.
#[derive(Deserialize)]
pub struct AttemptsQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub status: Option<String>,
    pub cursor: Option<String>,
}

fn parse_bound(text: &Option<String>, default: UnixMs) -> Result<UnixMs> {
    match text {
        None => Ok(default),
        Some(t) => UnixMs::parse_rfc3339(t)
            .or_else(|| UnixMs::parse_date(t))
            .ok_or_else(|| Error::detail(Code::RequestInvalid, format!("{t} is not RFC 3339 or a date"))),
    }
}

/// Result rows one attempts page passes over at most while filtering by
/// status; past that the page ends early with a cursor to go on from.
pub const ATTEMPTS_SCAN: usize = 10_000;

/// Where an attempts page stopped: the push (by when it arrived, as the
/// attempts family orders pushes) and the leaf to go on after.
struct AttemptPosition {
    received_ms: i64,
    push_id: String,
    leaf: u64,
}

impl AttemptPosition {
    fn text(&self) -> String {
        format!("{}:{}:{}", self.received_ms, self.push_id, self.leaf)
    }

    fn parse(text: &str) -> Option<AttemptPosition> {
        let mut parts = text.splitn(3, ':');
        let received_ms = parts.next()?.parse().ok()?;
        let push_id = parts.next()?.to_owned();
        let leaf = parts.next()?.parse().ok()?;
        Some(AttemptPosition { received_ms, push_id, leaf })
    }
}

/// Every record the business's pushes carried, one result each, a page at
/// a time. A page starts where the cursor stopped (never from the range's
/// start again) and passes over at most [`ATTEMPTS_SCAN`] results.
pub fn attempts(state: &impl HasStore, caller: &BusinessCaller, q: AttemptsQuery) -> Result<Value> {
    let key = &caller.key;
    let from = parse_bound(&q.from, UnixMs(0))?;
    let to = parse_bound(&q.to, UnixMs(i64::MAX))?;
    let status = match q.status.as_deref() {
        Some(s) => Some(Outcome::parse(s).ok_or_else(|| Error::detail(Code::RequestInvalid, "status"))?),
        None => None,
    };
    let after = match q.cursor.as_deref() {
        Some(c) => Some(
            cursor::decode(c)
                .and_then(|p| AttemptPosition::parse(&p))
                .ok_or_else(|| Error::detail(Code::RequestInvalid, "cursor"))?,
        ),
        None => None,
    };
    let prefix = keys::prefix(&[&key.business_uuid]);
    let mut start = match &after {
        Some(a) => keys::attempt(&key.business_uuid, UnixMs(a.received_ms), &a.push_id),
        None => keys::attempt(&key.business_uuid, UnixMs(from.0.max(0)), ""),
    };
    let mut attempts = Vec::new();
    let mut passed = 0usize;
    let mut stopped: Option<AttemptPosition> = None;
    'pushes: loop {
        let batch: Vec<(Vec<u8>, ())> = state.store().scan(cf::ATTEMPTS, &prefix, Some(&start), 256)?;
        let Some((last, ())) = batch.last() else { break };
        let (mut next_start, more) = (last.clone(), batch.len() == 256);
        next_start.push(0);
        for (k, ()) in &batch {
            let push_id = String::from_utf8_lossy(&k[prefix.len() + 9..]).into_owned();
            let Some(push) = state.store().get::<PushRecord>(cf::PUSHES, &keys::push(&push_id))? else { continue };
            if push.received_at >= to {
                break 'pushes;
            }
            let first = match &after {
                Some(a) if a.push_id == push_id => a.leaf + 1,
                _ => 0,
            };
            let received_ms = push.received_at.0;
            let mut cut = false;
            leaves_while(state, &push_id, first, |leaf| {
                let here = AttemptPosition { received_ms, push_id: push_id.clone(), leaf: leaf.leaf_index };
                if passed == ATTEMPTS_SCAN || attempts.len() == out::RESULTS_PAGE {
                    cut = true;
                    return false;
                }
                passed += 1;
                if status.is_none_or(|s| s == outcome_of(&leaf)) {
                    let reason = leaf.errors.first().map(|(code, _, _)| code.clone());
                    attempts.push(json!({"batch_id": push_id, "leaf_index": leaf.leaf_index,
                        "received_at": push.received_at.to_rfc3339_millis(), "source": push.source,
                        "key_id": push.key_id, "business_product_id": leaf.business_product_id,
                        "product_name": leaf.product_name, "outcome": leaf.outcome, "reason": reason}));
                }
                stopped = Some(here);
                true
            })?;
            if cut {
                let next_cursor = stopped.as_ref().map(|p| cursor::encode(&p.text()));
                return Ok(json!({"attempts": attempts, "next_cursor": next_cursor}));
            }
        }
        if !more {
            break;
        }
        start = next_start;
    }
    Ok(json!({"attempts": attempts, "next_cursor": null}))
}

/// What the business's next seal names: the certificate and AI policy in force.
pub fn seal_context(state: &impl HasRegistry, caller: &BusinessCaller) -> Result<Value> {
    let (key, now) = (&caller.key, caller.now);
    let cert = state.registry().certificate_in_force(&key.business_uuid, now)?;
    let policy = state.registry().ai_policy_at(&key.business_uuid, now)?;
    let version = policy.as_ref().map_or(0, |p| p.version);
    Ok(json!({
        "business_uuid": key.business_uuid,
        "cert_id": cert.as_ref().map(|c| c.cert_id.clone()),
        "certificate_status": cert.as_ref().map(|c| c.status.as_str()),
        "ai_policy_version": version,
        "ai_policy_live_from": policy.as_ref().map(|p| p.live_from.to_rfc3339_secs()),
        "ai_policy_record_id": policy.as_ref().map(|p| p.record_id.clone()),
        "next_ai_policy_version": version + 1,
    }))
}
