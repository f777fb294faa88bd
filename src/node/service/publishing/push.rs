//! Publishing through the API: a sealed batch of products (inline, or run
//! in the background when large), and a sealed withdraw or delete document.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::dsse::Envelope;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::publish::caps::UsageLedger;
use svc_core::publish::documents;
use svc_core::publish::mandate::Caps;
use svc_core::publish::outcome::{self as out, AnswerMode};
use svc_core::seal;

use super::*;
use crate::actors::push_worker::{PushWorkerMsg, run_push};
use crate::publish::{NewPush, PushRecords};
use crate::region::parts::{
    HasAsTable, HasBlocklist, HasClock, HasConfig, HasHome, HasRegionPositions, HasRegistry, HasStore, HasUploads,
};

/// The record type a publishing path names: only products are published
/// through the API. Judged before the signature.
pub fn publish_type(kind: &str) -> Result<RecordType> {
    match RecordType::from_path_segment(kind) {
        Some(RecordType::Products) => Ok(RecordType::Products),
        Some(t) if t.is_collection() => Err(Error::detail(
            Code::RequestInvalid,
            "only products are published through this route; other types through the business portal",
        )),
        _ => Err(Error::new(Code::NotFound)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishBody {
    batch_seal: Value,
    records: Vec<String>,
}

/// A sealed batch (publishing 4.1): judged whole (mandate, caps, seal), then
/// accepted as a push and run inline, or in the background when large.
pub async fn publish<R>(state: &R, caller: &BusinessCaller, record_type: RecordType) -> Result<Answer>
where
    R: HasStore + HasRegistry + HasClock + HasHome + HasBlocklist + HasAsTable + HasUploads,
{
    let (key, body, received_at) = (&caller.key, &caller.body, caller.now);
    let idem = idempotency_key(caller, true)?;

    // Mandate and caps, judged before the body is parsed.
    let mandate = writing_mandate(state, record_type, caller)?;
    let caps = Caps { records_per_hour: mandate.records_per_hour, bytes_per_day: mandate.bytes_per_day };
    let ledger: UsageLedger = state.store().get(cf::USAGE_LEDGERS, key.key_id.as_bytes())?.unwrap_or_default();
    if let Err(retry) = ledger.judge(received_at, body.len() as u64, &caps) {
        return Err(Error::retry_after(Code::RateLimited, retry.0.max(1) as u64, "the mandate's caps are reached"));
    }

    let parsed: PublishBody = serde_json::from_slice(body)
        .map_err(|e| Error::detail(Code::RequestInvalid, format!("body is {{batch_seal, records}}: {e}")))?;
    out::check_records(&parsed.records).map_err(|d| Error::detail(Code::RequestInvalid, d))?;
    let mut records = Vec::with_capacity(parsed.records.len());
    for (i, r) in parsed.records.iter().enumerate() {
        records.push(
            svc_core::b64::std_decode(r)
                .ok_or_else(|| Error::detail(Code::RequestInvalid, format!("records/{i} is not base64")))?,
        );
    }

    let (envelope, batch, sealed_at) =
        judge_batch_seal(state, key, &mandate, &parsed.batch_seal, record_type, Some(&records))?;
    let request_fp = request_fingerprint(caller);
    if let Some(idem) = &idem
        && let Some(answer) = replayed(state, &key.key_id, idem, &request_fp)?
    {
        return Ok(answer.into());
    }
    let background = state.home()?.push_worker.is_running();
    if out::answer_mode(records.len(), background) == AnswerMode::Unavailable {
        let mut problem = Problem::new(Code::Unavailable).detail("background processing is unavailable; resend later");
        problem.retry_after_ms = Some(out::FALLBACK_RETRY_AFTER_SECONDS * 1000);
        problem.retry_after_seconds = Some(out::FALLBACK_RETRY_AFTER_SECONDS);
        return Err(Error::from(problem));
    }
    let record_count = records.len();
    let push = NewPush {
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        record_type,
        seq: batch.seq,
        source: svc_core::publish::outcome::Source::Api,
        received_at,
        batch_seal_json: envelope.to_json(),
        batch_seal: batch,
        mandate,
        records: PushRecords::Inline(records),
        sealed_at_fresh: seal::sealed_at_fresh(sealed_at, received_at),
        idempotency: idem.clone().map(|k| (k, request_fp.clone())),
        body_bytes: body.len() as u64,
    };
    let (push_id, resumed) = match accept_push(state, push).await? {
        Accepted::Replay(answer) => return Ok(answer),
        Accepted::Push { push_id, resumed } => (push_id, resumed),
    };
    let push =
        state.store().get::<PushRecord>(cf::PUSHES, &keys::push(&push_id))?.ok_or_else(|| Error::internal("push"))?;
    let settled = push.completed_at.is_some();
    // A resend of a push still being processed is only reported; a stalled one is resumed.
    let run = !settled && (!resumed || out::is_stalled(push.last_step_at, state.clock().now()));
    let answer = match (settled, out::answer_mode(record_count, background)) {
        (false, _) if !run => {
            let status = push_status(state, &push, false, None, None)?;
            Answer::accepted(serde_json::to_vec(&status).unwrap_or_default(), out::status_url(&push_id))
        }
        (false, AnswerMode::Background) => {
            state.home()?.push_worker.cast(PushWorkerMsg::Run(push_id.clone()))?;
            let status = push_status(state, &push, false, None, None)?;
            Answer::accepted(serde_json::to_vec(&status).unwrap_or_default(), out::status_url(&push_id))
        }
        _ => {
            let push = if settled {
                push
            } else {
                // Its own task: a client that stops waiting (a forwarded
                // request timing out) must not leave the push half run,
                // where a resend would only report it until it stalls.
                let (runner, id) = (crate::region::parts::push_runner(state)?, push_id.clone());
                tokio::spawn(async move { run_push(&runner, &id).await }).await.map_err(Error::internal)??
            };
            Answer::ok(serde_json::to_vec(&publish_outcome(state, &push)?).unwrap_or_default())
        }
    };
    if let Some(idem) = idem {
        remember(state, &key.key_id, idem, request_fp, &answer).await?;
    }
    Ok(answer)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentBody {
    document_base64: String,
    seal: Value,
}

/// A sealed withdraw (`delete` false) or delete document for one record.
pub async fn end_record<R>(state: &R, caller: &BusinessCaller, record_type: RecordType, delete: bool) -> Result<Value>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasAsTable + HasRegionPositions,
{
    let (key, now) = (&caller.key, caller.now);
    let mandate = writing_mandate(state, record_type, caller)?;
    let doc: DocumentBody = serde_json::from_slice(&caller.body)
        .map_err(|e| Error::detail(Code::RequestInvalid, format!("body is {{document_base64, seal}}: {e}")))?;
    let bytes = svc_core::b64::std_decode(&doc.document_base64)
        .ok_or_else(|| Error::detail(Code::RequestInvalid, "document_base64 is not base64"))?;
    let envelope = Envelope::from_value(&doc.seal).map_err(|r| seal_invalid(format!("seal: {r}")))?;
    let public = key_from_jwk(&key.jwk).ok_or_else(|| Error::internal("stored key"))?;
    let seal = match seal::verify_record_seal(&envelope, &public).map_err(|r| seal_invalid(format!("seal: {r}")))? {
        seal::RecordSeal::V2(s) => s,
        seal::RecordSeal::V1(_) => return Err(seal_invalid("documents are sealed with seal.v2")),
    };
    documents::check_document_seal(&bytes, &seal, record_type).map_err(|r| seal_invalid(format!("document: {r}")))?;
    let document = documents::read_document(&bytes).map_err(|d| Error::detail(Code::RequestInvalid, d))?;
    let wanted = if delete { documents::Action::Delete } else { documents::Action::Withdraw };
    if document.action != wanted {
        return Err(Error::detail(Code::RequestInvalid, format!("this route takes action {}", wanted.as_str())));
    }
    let sealed_at = UnixMs::parse_rfc3339_millis_utc(&seal.sealed_at).ok_or_else(|| seal_invalid("sealed_at"))?;
    if !seal::sealed_at_fresh(sealed_at, now) {
        return Err(seal_invalid("sealed_at is more than five minutes from receipt"));
    }
    key.validity().judge(sealed_at).map_err(|r| seal_invalid(format!("the key at sealed_at: {r}")))?;
    if !mandate.live_at(sealed_at) {
        return Err(Error::detail(Code::OutOfScope, "sealed outside the mandate's validity"));
    }
    check_ai_policy_version(state, &key.business_uuid, seal.ai_policy_version, sealed_at)?;
    check_certificate_in_force(&state.registry().certificates(&key.business_uuid)?, &seal.cert_id, sealed_at)?;
    end_documented(state, &key.business_uuid, &document, envelope.to_json(), now, delete).await
}

/// Ends a record a sealed document names, whoever sealed it (an integration
/// key under a mandate, or a person's passkey in the portal), once its seal
/// was judged: the record leaves serving in every region, and the answer
/// names the regions that still served it.
pub async fn end_documented<R>(
    state: &R,
    business_uuid: &str,
    document: &documents::Document,
    seal_json: Vec<u8>,
    now: UnixMs,
    delete: bool,
) -> Result<Value>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasRegionPositions,
{
    let wanted = if delete { documents::Action::Delete } else { documents::Action::Withdraw };
    let (business_uuid, record_id) = (business_uuid.to_owned(), document.record_id.clone());
    // Where the record was served before this change, for `live_in`.
    let was_live = state.registry().record_head(&record_id)?.is_some_and(|h| h.state == RecordState::Live);
    let served_from = super::read::last_change(state, &record_id)?;
    let ended = state
        .home()?
        .publisher
        .call(|reply| PublisherMsg::EndRecord {
            business_uuid: business_uuid.clone(),
            record_id,
            delete,
            seal_json,
            now,
            reply,
        })
        .await??;
    if ended.is_none() {
        // Said plainly, so a client retrying a delete knows it already took.
        let head = state.registry().record_head(&document.record_id)?.filter(|h| h.business_uuid == business_uuid);
        let detail = match head.map(|h| h.state) {
            Some(RecordState::Deleted) => "this record is already deleted",
            Some(RecordState::Withdrawn) => "this record is already withdrawn",
            _ => "no live record of this business has that id",
        };
        return Err(Error::detail(Code::NotFound, detail));
    }
    // The regions that still serve it: their index has not applied this
    // change yet (out of serving in every region within seconds).
    let live_in = if was_live {
        let ended_at = super::read::last_change(state, &document.record_id)?;
        super::read::regions_serving(state, served_from.unwrap_or(0), ended_at)?
    } else {
        Vec::new()
    };
    Ok(json!({"record_id": document.record_id, "action": wanted.as_str(), "live_in": live_in}))
}
