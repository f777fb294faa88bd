//! Fetch of one record (retrieval 2.7): the sealed bytes verbatim with their
//! seal, sidecar, AI policy and provenance, and a receipt. Every kind of
//! absence answers one 404, never sooner than 20 ms after arrival.

use std::time::Duration;

use serde_json::{Value, json};
use svc_core::digest::sha256_prefixed;
use svc_core::ids::RecordType;
use svc_core::receipt::{Receipt, ReceiptRow};
use svc_core::seal::ServedSeal;
use svc_core::source_line::SourceLine;
use svc_core::time::UnixMs;

use super::Bills;
use super::{Answer, Caller, Served, admit, deliver};
use crate::region::ServeTimes;
use crate::region::parts::{HasConfig, HasRegistry, HasServeTimes, HasStore};
use crate::service::raw_json::RawObject;
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::model::{RecordHead, RecordState, RecordVersion, UsageKind};

/// No 404 leaves sooner than this after the request arrived (R2.7.14), so
/// its timing says nothing about why the record is absent.
pub const NOT_FOUND_FLOOR: Duration = Duration::from_millis(20);

/// A record fetched with its receipt. `None` is the one 404 (blocked,
/// withdrawn, deleted, never existed, malformed id, type not fetchable):
/// the surface answers it no sooner than [`NOT_FOUND_FLOOR`] after arrival.
pub async fn fetch<R>(state: &R, caller: &Caller, record_id: &str) -> Result<Option<Answer>>
where
    R: Bills + HasStore + HasRegistry + HasServeTimes,
{
    let now = caller.now;
    let held = admit(state, caller, now).await?;
    let Some((head, version)) = served_version(state, caller, record_id)? else { return Ok(None) };
    let retrieval_id = svc_core::ids::retrieval_id(&random());
    let seq = ServeTimes::seq(state.store());
    let at = state.serve_times().of(state.registry(), seq, &head.business_uuid, head.record_type, now)?;
    let receipt = Receipt {
        retrieval_id: retrieval_id.clone(),
        served_at: now.to_rfc3339_millis(),
        region: state.config().region.clone(),
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
        sandbox: state.config().environment.is_sandbox(),
    };
    let body = fetched(state, &head, &version, at.endpoints_suspended, now)?;
    let served = Served {
        kind: UsageKind::Fetch,
        billable: true,
        cost: svc_core::limits::FETCH_COST,
        country: None,
        businesses: vec![head.business_uuid.clone()],
    };
    let envelope = deliver(state, caller, held, receipt, served, now).await?;
    let mut body = body;
    body.raw("receipt", &envelope);
    Ok(Some(Answer { retrieval_id, body: body.close() }))
}

/// The live version of a fetchable record the caller's group may see.
fn served_version(
    state: &impl HasRegistry,
    caller: &Caller,
    record_id: &str,
) -> Result<Option<(RecordHead, RecordVersion)>> {
    let fetchable = svc_core::ids::parse_record_id(record_id).is_some_and(RecordType::is_collection);
    if !fetchable {
        return Ok(None);
    }
    let Some(head) = state.registry().record_head(record_id)? else { return Ok(None) };
    if head.state != RecordState::Live || head.live_generation == 0 {
        return Ok(None);
    }
    if state.registry().blocks(&head.business_uuid, &caller.key.group_id)? {
        return Ok(None);
    }
    let Some(version) = state.registry().record_version(record_id, head.live_generation)? else { return Ok(None) };
    // A withdrawn, suspended or closed business, or a compromised key, ends
    // serving exactly as a record that never existed (P3.5, P3.9, P3.38).
    if !state.registry().serves(&head.business_uuid, &version, caller.now)? {
        return Ok(None);
    }
    Ok(Some((head, version)))
}

/// The fetch response, all but its receipt.
fn fetched(
    state: &(impl HasConfig + HasRegistry),
    head: &RecordHead,
    version: &RecordVersion,
    endpoints_suspended: bool,
    now: UnixMs,
) -> Result<RawObject> {
    let business_uuid = head.business_uuid.as_str();
    let mut out = RawObject::new();
    out.value("record_id", &head.record_id)?;
    out.value("business_uuid", &business_uuid)?;
    out.value("type", &head.record_type)?;
    out.value("published_at", &version.published_at.to_rfc3339_secs())?;
    out.raw("record", &version.bytes);
    out.raw("seal", &version.seal);
    out.raw("sidecar", &version.sidecar);

    match state.registry().ai_policy_at(business_uuid, now)? {
        Some(policy) => {
            let mut inner = RawObject::new();
            inner.value("version", &policy.version)?;
            inner.raw("record", &policy.bytes);
            inner.raw("seal", &policy.seal);
            out.raw("ai_policy", &inner.close());
        }
        None => out.raw("ai_policy", br#"{"version":0,"record":null,"seal":null}"#),
    }

    if head.record_type == RecordType::BusinessFiles {
        let record: Value = serde_json::from_slice(&version.bytes).map_err(Error::internal)?;
        if let Some(represent) = record.get("represent") {
            out.value("represent", represent)?;
        }
        if record.get("endpoints").is_some() {
            let status = if endpoints_suspended { "suspended" } else { "live" };
            out.value("endpoints", &json!({"status": status}))?;
        }
    }

    let seal: ServedSeal = serde_json::from_slice(&version.seal).map_err(Error::internal)?;
    let row: Value = serde_json::from_slice(&version.row).map_err(Error::internal)?;
    let cert = state.registry().certificate_digest(business_uuid, now)?;
    let verify_base = state.config().verify_base_url.trim_end_matches('/');
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
