//! The caller's own account: its group's receipts, its company's usage, and
//! the AI-company Terms (retrieval 4). Signed like every retrieval route;
//! never billed.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{Request, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use svc_core::problem::Code;
use svc_core::publish::cursor;
use svc_core::time::{DAY, UnixMs};

use super::{Caller, retrieval_signed};
use crate::actors::billing::{BillingMsg, day_of};
use crate::actors::receipt_log::group_key;
use crate::http::AppState;
use crate::http::body::DEFAULT_LIMIT;
use crate::http::problem::{ApiError, ApiResult};
use crate::store::model::{StoredReceipt, TermsVersion, UsageKind};
use crate::store::{be, cf, key};

/// Receipts in one page (R4.18).
pub const RECEIPTS_PAGE: usize = 100;
/// Index entries one page may pass over while filtering by key or company;
/// past that the page ends early with a cursor to go on from.
const RECEIPTS_SCAN: usize = 10_000;
/// The longest usage range, in days.
pub const USAGE_MAX_DAYS: i64 = 366;

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::detail(Code::RequestInvalid, detail)
}

fn query<T: DeserializeOwned>(uri: &Uri) -> ApiResult<T> {
    Query::try_from_uri(uri).map(|q| q.0).map_err(|e| invalid(e.body_text()))
}

async fn signed(state: &AppState, req: Request<Body>) -> ApiResult<(Caller, Uri, UnixMs)> {
    let now = state.clock.now();
    let uri = req.uri().clone();
    let caller = retrieval_signed(state, req, DEFAULT_LIMIT, now).await?;
    Ok((caller, uri, now))
}

fn answer(result: ApiResult<Value>) -> Response {
    result.map(Json).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReceiptsQuery {
    from: Option<String>,
    to: Option<String>,
    key_id: Option<String>,
    ai_company_uuid: Option<String>,
    cursor: Option<String>,
}

fn timestamp(name: &str, value: Option<&str>) -> ApiResult<Option<UnixMs>> {
    value
        .map(|v| UnixMs::parse_rfc3339(v).ok_or_else(|| invalid(format!("{name} is an RFC 3339 timestamp"))))
        .transpose()
}

pub async fn receipts(State(state): State<AppState>, req: Request<Body>) -> Response {
    answer(receipts_route(&state, req).await)
}

/// The caller's group's receipts, oldest first, 100 a page. `key_id` and
/// `ai_company_uuid` narrow within the group; they never widen it.
async fn receipts_route(state: &AppState, req: Request<Body>) -> ApiResult<Value> {
    let (caller, uri, _) = signed(state, req).await?;
    let q: ReceiptsQuery = query(&uri)?;
    let from = timestamp("from", q.from.as_deref())?.unwrap_or(UnixMs(0));
    let to = timestamp("to", q.to.as_deref())?;
    let group = &caller.key.group_id;
    let prefix = key(&[group.as_bytes(), b""]);
    let mut start = group_key(group, from.0, 0);
    if let Some(c) = q.cursor.as_deref() {
        let position = cursor::decode(c).ok_or_else(|| invalid("cursor"))?;
        let (ms, seq) = position
            .split_once('-')
            .and_then(|(ms, seq)| Some((ms.parse::<i64>().ok()?, seq.parse::<u64>().ok()?)))
            .ok_or_else(|| invalid("cursor"))?;
        // Resume just past the last receipt of the previous page.
        start = start.max(group_key(group, ms, seq.saturating_add(1)));
    }
    let mut page = Vec::new();
    let mut scanned = 0;
    let mut last_position = None;
    let mut exhausted = false;
    'scan: while scanned < RECEIPTS_SCAN {
        let batch = state.store.scan::<()>(cf::RECEIPTS_BY_GROUP, &prefix, Some(&start), 1_000)?;
        if batch.is_empty() {
            exhausted = true;
            break;
        }
        for (k, ()) in &batch {
            scanned += 1;
            let tail = &k[prefix.len()..];
            let (Some(ms), Some(seq)) = (tail.get(..8), tail.get(8..16)) else { continue };
            let ms = i64::from_be_bytes(ms.try_into().unwrap_or_default());
            let seq = u64::from_be_bytes(seq.try_into().unwrap_or_default());
            if to.is_some_and(|to| ms > to.0) {
                exhausted = true;
                break 'scan;
            }
            last_position = Some(format!("{ms}-{seq}"));
            let Some(stored) = state.store.get::<StoredReceipt>(cf::RECEIPTS, &be(seq))? else { continue };
            let wanted = q.key_id.as_ref().is_none_or(|k| *k == stored.caller_key_id)
                && q.ai_company_uuid.as_ref().is_none_or(|c| *c == stored.company_uuid);
            if wanted {
                let envelope: Value = serde_json::from_slice(&stored.envelope).map_err(ApiError::internal)?;
                page.push(json!({
                    "receipt": envelope,
                    "retrieval_id": stored.retrieval_id,
                    "served_at": stored.served_at.to_rfc3339_millis(),
                    "caller_key_id": stored.caller_key_id,
                    "kind": match stored.kind { UsageKind::Search => "search", UsageKind::Fetch => "fetch" },
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageQuery {
    from: Option<String>,
    to: Option<String>,
}

fn day(name: &str, value: Option<&str>) -> ApiResult<Option<UnixMs>> {
    value.map(|v| UnixMs::parse_date(v).ok_or_else(|| invalid(format!("{name} is a date, YYYY-MM-DD")))).transpose()
}

pub async fn usage(State(state): State<AppState>, req: Request<Body>) -> Response {
    answer(usage_route(&state, req).await)
}

/// The caller's company's billed requests per UTC day (shape in the
/// README): the last 30 days unless `from` and `to` say otherwise.
async fn usage_route(state: &AppState, req: Request<Body>) -> ApiResult<Value> {
    let (caller, uri, now) = signed(state, req).await?;
    let q: UsageQuery = query(&uri)?;
    let to = day("to", q.to.as_deref())?.unwrap_or(now);
    let from = day("from", q.from.as_deref())?.unwrap_or(to.minus(29 * DAY));
    let (from_day, to_day) = (day_of(from), day_of(to));
    if from_day > to_day {
        return Err(invalid("from is after to"));
    }
    if (to.0 - from.0) / DAY >= USAGE_MAX_DAYS {
        return Err(invalid(format!("a usage range is at most {USAGE_MAX_DAYS} days")));
    }
    let company_uuid = caller.key.company_uuid.clone();
    let report = ractor::call!(state.billing, |reply| BillingMsg::Usage {
        company_uuid: company_uuid.clone(),
        from_day: from_day.clone(),
        to_day: to_day.clone(),
        reply
    })
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
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
        "environment": if state.config.environment.is_sandbox() { "sandbox" } else { "production" },
        "invoiced": !state.config.environment.is_sandbox(),
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

pub async fn terms_in_force(State(state): State<AppState>, req: Request<Body>) -> Response {
    answer(terms_in_force_route(&state, req).await)
}

/// The newest version already in effect; 404 when none is.
async fn terms_in_force_route(state: &AppState, req: Request<Body>) -> ApiResult<Value> {
    let (_, _, now) = signed(state, req).await?;
    let terms = state.registry.terms()?;
    let in_force = terms.iter().filter(|t| t.effective_from <= now).max_by_key(|t| (t.effective_from, t.version));
    in_force.map(terms_json).ok_or_else(|| ApiError::detail(Code::NotFound, "no Terms version is in force"))
}

pub async fn terms_version(State(state): State<AppState>, Path(version): Path<String>, req: Request<Body>) -> Response {
    answer(terms_version_route(&state, &version, req).await)
}

async fn terms_version_route(state: &AppState, version: &str, req: Request<Body>) -> ApiResult<Value> {
    signed(state, req).await?;
    let version: u64 = version.parse().map_err(|_| invalid("the Terms version is an integer"))?;
    let terms = state.registry.terms()?;
    terms.iter().find(|t| t.version == version).map(terms_json).ok_or_else(|| ApiError::new(Code::NotFound))
}
