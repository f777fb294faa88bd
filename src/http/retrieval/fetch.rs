//! Fetch of one record (retrieval 2.7): the sealed bytes verbatim with their
//! seal, sidecar, AI policy and provenance, and a receipt. Every kind of
//! absence answers one 404, never sooner than 20 ms after arrival.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, Request};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use svc_core::digest::sha256_prefixed;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::receipt::{Receipt, ReceiptRow};
use svc_core::seal::ServedSeal;
use svc_core::source_line::SourceLine;
use svc_core::time::UnixMs;

use super::{Caller, ServeTimes, Served, admit, deliver, retrieval_signed};
use crate::clock::random;
use crate::http::AppState;
use crate::http::body::DEFAULT_LIMIT;
use crate::http::problem::{ApiError, ApiResult, problem_response};
use crate::http::raw_json::{RawObject, json_response};
use crate::store::model::{RecordHead, RecordState, RecordVersion, UsageKind};

/// No 404 leaves sooner than this after the request arrived (R2.7.14), so
/// its timing says nothing about why the record is absent.
pub const NOT_FOUND_FLOOR: Duration = Duration::from_millis(20);

pub async fn fetch(State(state): State<AppState>, Path(record_id): Path<String>, req: Request<Body>) -> Response {
    let arrived = Instant::now();
    let path = req.uri().path().to_owned();
    match fetch_route(&state, &record_id, req).await {
        Ok(Some(response)) => response,
        Ok(None) => {
            tokio::time::sleep_until((arrived + NOT_FOUND_FLOOR).into()).await;
            problem_response(&Problem::new(Code::NotFound).instance(path))
        }
        Err(e) => e.into_response(),
    }
}

/// `None` is the one 404 (blocked, withdrawn, deleted, never existed,
/// malformed id, type not fetchable).
async fn fetch_route(state: &AppState, record_id: &str, req: Request<Body>) -> ApiResult<Option<Response>> {
    let now = state.clock.now();
    let caller = retrieval_signed(state, req, DEFAULT_LIMIT, now).await?;
    let held = admit(state, &caller, now).await?;
    let Some((head, version)) = served_version(state, &caller, record_id)? else { return Ok(None) };
    let retrieval_id = svc_core::ids::retrieval_id(&random());
    let at = state.serve_times.of(state, ServeTimes::seq(state)?, &head.business_uuid, now)?;
    let receipt = Receipt {
        retrieval_id: retrieval_id.clone(),
        served_at: now.to_rfc3339_millis(),
        region: state.config.region.clone(),
        request_hash: caller.request_hash(),
        country: None,
        rows: vec![ReceiptRow {
            id: head.record_id.clone(),
            adl_origin: None,
            row_sig: None,
            sha256: Some(sha256_prefixed(&version.bytes)),
            ai_policy_version: Some(at.bits.ai_policy_version),
            sponsored: None,
        }],
        key_id: String::new(),
        caller_key_id: Some(caller.key.key_id.clone()),
        sandbox: state.config.environment.is_sandbox(),
    };
    let body = fetched(state, &head, &version, at.endpoints_suspended, now)?;
    let served = Served {
        kind: UsageKind::Fetch,
        billable: true,
        cost: svc_core::limits::FETCH_COST,
        country: None,
        businesses: vec![head.business_uuid.clone()],
    };
    let envelope = deliver(state, &caller, held, receipt, served, now).await?;
    let mut body = body;
    body.raw("receipt", &envelope);
    let mut response = json_response(body.close());
    if let Ok(id) = HeaderValue::from_str(&retrieval_id) {
        response.headers_mut().insert("x-request-id", id);
    }
    Ok(Some(response))
}

/// The live version of a fetchable record the caller's group may see.
fn served_version(
    state: &AppState,
    caller: &Caller,
    record_id: &str,
) -> ApiResult<Option<(RecordHead, RecordVersion)>> {
    let fetchable = svc_core::ids::parse_record_id(record_id).is_some_and(RecordType::is_collection);
    if !fetchable {
        return Ok(None);
    }
    let Some(head) = state.registry.record_head(record_id)? else { return Ok(None) };
    if head.state != RecordState::Live || head.live_generation == 0 {
        return Ok(None);
    }
    if state.registry.blocks(&head.business_uuid, &caller.key.group_id)? {
        return Ok(None);
    }
    let Some(version) = state.registry.record_version(record_id, head.live_generation)? else { return Ok(None) };
    Ok(Some((head, version)))
}

/// The fetch response, all but its receipt.
fn fetched(
    state: &AppState,
    head: &RecordHead,
    version: &RecordVersion,
    endpoints_suspended: bool,
    now: UnixMs,
) -> ApiResult<RawObject> {
    let business_uuid = head.business_uuid.as_str();
    let mut out = RawObject::new();
    out.value("record_id", &head.record_id)?;
    out.value("business_uuid", &business_uuid)?;
    out.value("type", &head.record_type)?;
    out.value("published_at", &version.published_at.to_rfc3339_secs())?;
    out.raw("record", &version.bytes);
    out.raw("seal", &version.seal);
    out.raw("sidecar", &version.sidecar);

    match state.registry.ai_policy_at(business_uuid, now)? {
        Some(policy) => {
            let mut inner = RawObject::new();
            inner.value("version", &policy.version)?;
            inner.raw("record", &policy.bytes);
            inner.raw("seal", &policy.seal);
            out.raw("ai_policy", &inner.close());
        }
        None => out.raw("ai_policy", br#"{"version":0,"record":null,"seal":null}"#),
    }

    if head.record_type == RecordType::BusinessFiles.name() {
        let record: Value = serde_json::from_slice(&version.bytes).map_err(ApiError::internal)?;
        if let Some(represent) = record.get("represent") {
            out.value("represent", represent)?;
        }
        if record.get("endpoints").is_some() {
            let status = if endpoints_suspended { "suspended" } else { "live" };
            out.value("endpoints", &json!({"status": status}))?;
        }
    }

    let seal: ServedSeal = serde_json::from_slice(&version.seal).map_err(ApiError::internal)?;
    let row: Value = serde_json::from_slice(&version.row).map_err(ApiError::internal)?;
    let cert = state.registry.certificate_digest(business_uuid, now)?;
    let verify_base = state.config.verify_base_url.trim_end_matches('/');
    let origin = sha256_prefixed(&version.bytes);
    let source_line = SourceLine::new(&head.record_id, &origin, &cert, now, verify_base).render();
    out.value(
        "provenance",
        &json!({
            "certificate_url": format!("{verify_base}/v1/certificates/{business_uuid}"),
            "projection_version": row.get("adl_proj"),
            "log_leaf": seal.log_leaf(),
            "source_line": source_line,
        }),
    )?;
    Ok(out)
}
