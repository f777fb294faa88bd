//! The business API (publishing-verification section 4.1): publish, withdraw
//! and delete with `svc-push`; catalogue, push attempts, push status and seal
//! context with `svc-business-read`.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::digest::sha256;
use svc_core::dsse::Envelope;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::publish::caps::UsageLedger;
use svc_core::publish::mandate::Caps;
use svc_core::publish::outcome::{self as out, AnswerMode, Outcome, PushState, PushStatus};
use svc_core::publish::{cursor, documents};
use svc_core::seal::{self, judge_certificate};
use svc_core::time::UnixMs;

use super::AppState;
use super::auth::{key_from_jwk, sandbox_bearer, verify_signed};
use super::body::{DEFAULT_LIMIT, PUBLISH_LIMIT, read_limited};
use super::problem::{ApiError, ApiResult};
use crate::actors::publisher::PublisherMsg;
use crate::actors::push_worker::{PushWorkerMsg, run_push};
use crate::clock::random;
use crate::publish::{Created, NewPush, PushRecords, Refused, leaf_key, push_key};
use crate::store::model::*;
use crate::store::{cf, key};

pub const TAG_PUSH: &str = "svc-push";
pub const TAG_READ: &str = "svc-business-read";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/publish/{kind}", post(publish))
        .route("/v1/publish/{kind}/withdraw", post(withdraw))
        .route("/v1/publish/{kind}/delete", post(delete_record))
        .route("/v1/records/{record_id}", delete(bare_delete))
        .route("/v1/catalogue", get(catalogue))
        .route("/v1/catalogue/{id}", get(catalogue_record).delete(bare_delete))
        .route("/v1/push-attempts", get(push_attempts))
        .route("/v1/pushes/{push_id}", get(push_status_handler))
        .route("/v1/seal-context", get(seal_context))
        .route("/v1/analytics/daily", get(super::analytics::daily))
        .route("/v1/analytics/who-is-asking", get(super::analytics::who_is_asking))
}

/// A bare DELETE is refused: a sealed document is required (P1.4, P7.16).
async fn bare_delete() -> ApiError {
    ApiError::detail(Code::MethodNotAllowed, "send a sealed document to POST /v1/publish/products/delete")
}

/// A verified business request: the integration key that signed it.
pub(super) struct Signed {
    pub key: BusinessKey,
    pub body: bytes::Bytes,
    pub parts: axum::http::request::Parts,
}

pub(super) async fn signed(
    state: &AppState,
    req: Request<Body>,
    tag: &str,
    limit: usize,
    now: UnixMs,
) -> ApiResult<Signed> {
    let (parts, body) = req.into_parts();
    let body = read_limited(&parts.headers, body, limit, now).await?;
    let sandbox = state.config.environment.is_sandbox();
    // Sandbox only: the bearer token in place of a signature, for the
    // key's first hour.
    if let Some(token) = sandbox_bearer(sandbox, &parts.headers) {
        let key =
            state.registry.integration_key_by_bearer(token, now)?.ok_or_else(|| ApiError::new(Code::KeyUnknown))?;
        let key = introduce(state, key, now).await?;
        return Ok(Signed { key, body, parts });
    }
    let grant = parts.headers.get(svc_core::sandbox::GRANT_HEADER).and_then(|v| v.to_str().ok());
    let registry = state.registry.clone();
    let jwk_keys = &state.jwk_keys;
    let environment = state.config.environment;
    let (_, key) = verify_signed(&parts, &body, &state.config.public_authority, tag, now, &state.nonces, |key_id| {
        let key = registry.integration_key(key_id).ok().flatten()?;
        if key.environment != environment || !key.live_at(now) {
            return None;
        }
        // A sandbox key the sandbox has not seen needs its grant.
        if let Some(credentials) = &key.sandbox
            && sandbox
            && !svc_core::sandbox::admits(credentials.introduced, Some(&credentials.grant), grant)
        {
            return None;
        }
        let public = jwk_keys.get(&key.jwk)?;
        Some((key, public))
    })
    .await?;
    let key = if sandbox { introduce(state, key, now).await? } else { key };
    Ok(Signed { key, body, parts })
}

/// The first request of a sandbox key registers it, with a sandbox mandate
/// for every collection and country. Later requests pass through.
async fn introduce(state: &AppState, mut key: BusinessKey, now: UnixMs) -> ApiResult<BusinessKey> {
    let Some(credentials) = key.sandbox.as_mut().filter(|c| !c.introduced) else { return Ok(key) };
    credentials.introduced = true;
    let mandate = MandateRecord {
        mandate_id: "sandbox-grant".into(),
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        envelope: Vec::new(),
        record_types: RecordType::COLLECTIONS.iter().map(|t| t.name().to_owned()).collect(),
        countries: svc_core::ids::countries().map(str::to_owned).collect(),
        records_per_hour: 100_000,
        bytes_per_day: 1 << 30,
        source_ip_allow_list: None,
        // From the key's registration, so a seal made before this first
        // request is inside it.
        valid_from: key.registered_at,
        valid_until: key.registered_at.plus(svc_core::publish::mandate::MAX_VALIDITY_MS),
        revoked_at: None,
    };
    let mut change = crate::replication::Change::new();
    change.put(cf::INTEGRATION_KEYS, key.key_id.as_bytes(), &key);
    change.put(cf::MANDATES, &crate::registry::keys::mandate(&key.key_id, &mandate.mandate_id), &mandate);
    ractor::call!(state.home()?.publisher, |reply| PublisherMsg::Apply { change, now, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(key)
}

pub(super) fn idempotency_key(headers: &HeaderMap, required: bool) -> ApiResult<Option<String>> {
    match headers.get("idempotency-key").map(|v| v.to_str().map(str::to_owned)) {
        Some(Ok(k)) if out::idempotency_key_valid(&k) => Ok(Some(k)),
        Some(_) => Err(ApiError::detail(Code::RequestInvalid, "Idempotency-Key is 1 to 255 visible ASCII characters")),
        None if required => Err(ApiError::detail(Code::RequestInvalid, "Idempotency-Key is required")),
        None => Ok(None),
    }
}

fn publish_type(kind: &str) -> ApiResult<RecordType> {
    match RecordType::from_path_segment(kind) {
        Some(RecordType::Products) => Ok(RecordType::Products),
        Some(t) if t.is_collection() => Err(ApiError::detail(
            Code::RequestInvalid,
            "only products are published through this route; other types through the business portal",
        )),
        _ => Err(ApiError::new(Code::NotFound)),
    }
}

/// The key's live mandate for the type, honoured only from inside its
/// source allow-list (checked before the caps, so an outsider learns nothing
/// of them).
pub(super) fn writing_mandate(
    state: &AppState,
    key: &BusinessKey,
    record_type: RecordType,
    parts: &axum::http::request::Parts,
    now: UnixMs,
) -> ApiResult<MandateRecord> {
    let mandate = state
        .registry
        .live_mandate(&key.key_id, record_type.name(), now)?
        .ok_or_else(|| ApiError::detail(Code::OutOfScope, "the key has no live mandate for this record type"))?;
    let source_ok = match super::remote_ip(&parts.extensions) {
        Some(ip) => svc_core::publish::mandate::allow_list_permits(&mandate.source_ip_allow_list, ip, None),
        None => mandate.source_ip_allow_list.is_none(),
    };
    if !source_ok {
        return Err(ApiError::new(Code::SourceNotAllowed));
    }
    Ok(mandate)
}

/// The AI policy version in force at `sealed_at` must be the one sealed.
pub(crate) fn check_ai_policy_version(
    state: &AppState,
    business_uuid: &str,
    sealed: u64,
    sealed_at: UnixMs,
) -> ApiResult<()> {
    let in_force = state.registry.ai_policy_at(business_uuid, sealed_at)?.map_or(0, |p| p.version);
    if sealed == in_force {
        return Ok(());
    }
    Err(ApiError::from(
        Problem::new(Code::SealInvalid)
            .detail(format!("the AI policy version in force at sealed_at is {in_force}"))
            .ai_policy_version(in_force),
    ))
}

/// The certificate a seal names must be the one in force at `sealed_at`: a
/// withdrawal is `certificate_withdrawn`, anything else not in force is
/// `seal_invalid`.
pub(crate) fn check_certificate_in_force(
    history: &[CertificateIssuance],
    cert_id: &str,
    sealed_at: UnixMs,
) -> ApiResult<()> {
    let history: Vec<_> = history.iter().map(CertificateIssuance::as_core).collect();
    match judge_certificate(&history, cert_id, sealed_at) {
        Ok(()) => Ok(()),
        Err(svc_core::Reason::CertificateWithdrawn) => Err(ApiError::new(Code::CertificateWithdrawn)),
        Err(r) => Err(seal_invalid(format!("certificate: {r}"))),
    }
}

pub(crate) fn seal_invalid(detail: impl Into<String>) -> ApiError {
    ApiError::detail(Code::SealInvalid, detail)
}

/// Everything a batch seal is judged by before a push is accepted, in the
/// spec's order: the verified business, the seal's signature by the signing
/// key, the key's validity at `sealed_at`, the Merkle root over the raw
/// records (when they are in the request), the certificate in force and the
/// AI policy version at `sealed_at`, and the mandate at `sealed_at`.
pub(super) fn judge_batch_seal(
    state: &AppState,
    key: &BusinessKey,
    mandate: &MandateRecord,
    batch_seal: &Value,
    record_type: RecordType,
    records: Option<&[Vec<u8>]>,
) -> ApiResult<(Envelope, seal::BatchSealV2, UnixMs)> {
    let history = state.registry.certificates(&key.business_uuid)?;
    if state.registry.business(&key.business_uuid)?.is_none() || history.is_empty() {
        return Err(seal_invalid("the business is not verified"));
    }
    let envelope = Envelope::from_value(batch_seal).map_err(|r| seal_invalid(format!("batch seal: {r}")))?;
    let public = key_from_jwk(&key.jwk).ok_or_else(|| ApiError::internal("stored key"))?;
    let batch = seal::verify_batch_seal(&envelope, &public).map_err(|r| seal_invalid(format!("batch seal: {r}")))?;
    if batch.record_type != record_type.name() {
        return Err(seal_invalid("the batch seal names another record type"));
    }
    let sealed_at = UnixMs::parse_rfc3339_millis_utc(&batch.sealed_at).ok_or_else(|| seal_invalid("sealed_at"))?;
    key.validity().judge(sealed_at).map_err(|r| seal_invalid(format!("the key at sealed_at: {r}")))?;
    if let Some(records) = records {
        seal::check_batch_root(&batch, records).map_err(|_| seal_invalid("root does not match the records"))?;
    }
    check_certificate_in_force(&history, &batch.cert_id, sealed_at)?;
    check_ai_policy_version(state, &key.business_uuid, batch.ai_policy_version, sealed_at)?;
    if !mandate.live_at(sealed_at) {
        return Err(ApiError::detail(Code::OutOfScope, "sealed outside the mandate's validity"));
    }
    Ok((envelope, batch, sealed_at))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishBody {
    batch_seal: Value,
    records: Vec<String>,
}

async fn publish(State(state): State<AppState>, Path(kind): Path<String>, req: Request<Body>) -> Response {
    match publish_inner(&state, &kind, req).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn publish_inner(state: &AppState, kind: &str, req: Request<Body>) -> ApiResult<Response> {
    let received_at = state.clock.now();
    let record_type = publish_type(kind)?;
    let Signed { key, body, parts } = signed(state, req, TAG_PUSH, PUBLISH_LIMIT, received_at).await?;
    let idem = idempotency_key(&parts.headers, true)?;

    // Mandate and caps, judged before the body is parsed.
    let mandate = writing_mandate(state, &key, record_type, &parts, received_at)?;
    let caps = Caps { records_per_hour: mandate.records_per_hour, bytes_per_day: mandate.bytes_per_day };
    let ledger: UsageLedger = state.store.get(cf::USAGE, key.key_id.as_bytes())?.unwrap_or_default();
    if let Err(retry) = ledger.judge(received_at, body.len() as u64, &caps) {
        return Err(ApiError::retry_after(Code::RateLimited, retry.0.max(1) as u64, "the mandate's caps are reached"));
    }

    let parsed: PublishBody = serde_json::from_slice(&body)
        .map_err(|e| ApiError::detail(Code::RequestInvalid, format!("body is {{batch_seal, records}}: {e}")))?;
    out::check_records(&parsed.records).map_err(|d| ApiError::detail(Code::RequestInvalid, d))?;
    let mut records = Vec::with_capacity(parsed.records.len());
    for (i, r) in parsed.records.iter().enumerate() {
        records.push(
            svc_core::b64::std_decode(r)
                .ok_or_else(|| ApiError::detail(Code::RequestInvalid, format!("records/{i} is not base64")))?,
        );
    }

    let (envelope, batch, sealed_at) =
        judge_batch_seal(state, &key, &mandate, &parsed.batch_seal, record_type, Some(&records))?;
    let request_fp = request_fingerprint(&parts, &body);
    if let Some(idem) = &idem
        && let Some(answer) = replayed(state, &key.key_id, idem, &request_fp)?
    {
        return Ok(answer);
    }
    let background = state.home()?.push_worker.get_status() == ractor::ActorStatus::Running;
    if out::answer_mode(records.len(), background) == AnswerMode::Unavailable {
        let mut problem = Problem::new(Code::Unavailable).detail("background processing is unavailable; resend later");
        problem.retry_after_ms = Some(out::FALLBACK_RETRY_AFTER_SECONDS * 1000);
        problem.retry_after_seconds = Some(out::FALLBACK_RETRY_AFTER_SECONDS);
        return Err(ApiError::from(problem));
    }
    let record_count = records.len();
    let push = NewPush {
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        record_type,
        seq: batch.seq,
        source: "api",
        received_at,
        batch_seal_json: envelope.to_json(),
        batch_seal: batch,
        mandate,
        records: PushRecords::Inline(records),
        sealed_at_fresh: seal::sealed_at_fresh(sealed_at, received_at),
        idempotency: idem.clone().map(|k| (k, request_fp.clone())),
        body_bytes: body.len() as u64,
    };
    let push_id = svc_core::ids::batch_id(&random());
    let created =
        ractor::call!(state.home()?.publisher, |reply| PublisherMsg::CreatePush(Box::new(push), push_id, reply))
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
    let push_id = match created {
        Ok(Created::Replay(answer)) => return Ok(stored_answer(&answer)),
        Ok(Created::New(ref id)) | Ok(Created::Resume(ref id)) => id.clone(),
        Err(Refused::SeqNotIncreasing) => {
            return Err(ApiError::detail(
                Code::SeqNotIncreasing,
                "seq is not above the last accepted one for this key",
            ));
        }
        Err(Refused::SealedAtStale) => return Err(seal_invalid("sealed_at is more than five minutes from receipt")),
        Err(Refused::IdempotencyKeyReused) => return Err(ApiError::new(Code::IdempotencyKeyReused)),
    };

    let resumed = matches!(created, Ok(Created::Resume(_)));
    let push =
        state.store.get::<PushRecord>(cf::PUSHES, &push_key(&push_id))?.ok_or_else(|| ApiError::internal("push"))?;
    let settled = push.completed_at.is_some();
    // A resend of a push still being processed is only reported; a stalled one is resumed.
    let run = !settled && (!resumed || out::is_stalled(push.last_step_at, state.clock.now()));
    let (status, body, location) = match (settled, out::answer_mode(record_count, background)) {
        (false, _) if !run => {
            let status = push_status(state, &push, false, None, None)?;
            (StatusCode::ACCEPTED, serde_json::to_vec(&status).unwrap_or_default(), Some(out::status_url(&push_id)))
        }
        (false, AnswerMode::Background) => {
            state.home()?.push_worker.send_message(PushWorkerMsg::Run(push_id.clone())).map_err(ApiError::internal)?;
            let status = push_status(state, &push, false, None, None)?;
            (StatusCode::ACCEPTED, serde_json::to_vec(&status).unwrap_or_default(), Some(out::status_url(&push_id)))
        }
        _ => {
            let push = if settled {
                push
            } else {
                // Its own task: a client that stops waiting (a forwarded
                // request timing out) must not leave the push half run,
                // where a resend would only report it until it stalls.
                let (runner, id) = (state.push_runner()?, push_id.clone());
                tokio::spawn(async move { run_push(&runner, &id).await })
                    .await
                    .map_err(ApiError::internal)?
                    .map_err(ApiError::internal)?
            };
            (StatusCode::OK, serde_json::to_vec(&publish_outcome(state, &push)?).unwrap_or_default(), None)
        }
    };
    if let Some(idem) = idem {
        remember(state, &key.key_id, idem, request_fp, status, &body, location.clone()).await?;
    }
    Ok(json_response(status, body, location))
}

/// What identifies "the same request" for `Idempotency-Key`: the path and
/// the body's bytes.
pub(super) fn request_fingerprint(parts: &axum::http::request::Parts, body: &[u8]) -> Vec<u8> {
    let mut all = parts.uri.path().as_bytes().to_vec();
    all.extend_from_slice(&sha256(body));
    sha256(&all).to_vec()
}

/// The first answer given for this key and `Idempotency-Key`, when the
/// request is the same; a different request under the same key is refused.
pub(super) fn replayed(state: &AppState, key_id: &str, idem: &str, fingerprint: &[u8]) -> ApiResult<Option<Response>> {
    let stored: Option<IdempotentAnswer> =
        state.store.get(cf::IDEMPOTENCY, &crate::store::key(&[key_id.as_bytes(), idem.as_bytes()]))?;
    match stored {
        Some(answer) if answer.fingerprint == fingerprint => Ok(Some(stored_answer(&answer))),
        Some(_) => Err(ApiError::new(Code::IdempotencyKeyReused)),
        None => Ok(None),
    }
}

/// Keeps the first answer for an `Idempotency-Key`.
pub(super) async fn remember(
    state: &AppState,
    key_id: &str,
    idem: String,
    fingerprint: Vec<u8>,
    status: StatusCode,
    body: &[u8],
    location: Option<String>,
) -> ApiResult<()> {
    let answer =
        IdempotentAnswer { fingerprint, status: status.as_u16(), body: body.to_vec(), location, at: state.clock.now() };
    let key_id = key_id.to_owned();
    ractor::call!(state.home()?.publisher, |reply| PublisherMsg::RememberAnswer { key_id, idem, answer, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

pub(super) fn json_response(status: StatusCode, body: Vec<u8>, location: Option<String>) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(location) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

pub(super) fn stored_answer(answer: &IdempotentAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    json_response(status, answer.body.clone(), answer.location.clone())
}

/// Visits a push's result rows in leaf order from leaf `first`, reading them
/// a slice at a time, until `visit` answers false: a page of a 100,000-record
/// import reads its page, not the whole push.
fn leaves_while(state: &AppState, push_id: &str, first: u64, mut visit: impl FnMut(PushLeaf) -> bool) -> ApiResult<()> {
    const SLICE: usize = 256;
    let prefix = key(&[push_id.as_bytes()]);
    let mut from = leaf_key(push_id, first);
    loop {
        let rows: Vec<(Vec<u8>, PushLeaf)> = state.store.scan(cf::PUSH_RESULTS, &prefix, Some(&from), SLICE)?;
        let full = rows.len() == SLICE;
        let mut next = None;
        for (k, leaf) in rows {
            if k.len() != prefix.len() + 9 {
                continue;
            }
            next = Some(leaf.leaf_index + 1);
            if !visit(leaf) {
                return Ok(());
            }
        }
        match next {
            Some(n) if full => from = leaf_key(push_id, n),
            _ => return Ok(()),
        }
    }
}

fn leaves(state: &AppState, push_id: &str) -> ApiResult<Vec<PushLeaf>> {
    let mut all = Vec::new();
    leaves_while(state, push_id, 0, |leaf| {
        all.push(leaf);
        true
    })?;
    Ok(all)
}

fn outcome_of(leaf: &PushLeaf) -> Outcome {
    Outcome::parse(&leaf.outcome).unwrap_or(Outcome::Pending)
}

fn errors_of(leaf: &PushLeaf) -> Vec<out::RecordError> {
    leaf.errors
        .iter()
        .map(|(code, pointer, detail)| out::RecordError {
            code: code.clone(),
            pointer: pointer.clone(),
            detail: detail.clone(),
        })
        .collect()
}

fn publish_outcome(state: &AppState, push: &PushRecord) -> ApiResult<out::PublishOutcome> {
    let results = leaves(state, &push.push_id)?
        .iter()
        .map(|leaf| {
            let errors = errors_of(leaf);
            out::RecordResult {
                leaf_index: leaf.leaf_index,
                outcome: outcome_of(leaf),
                record_id: leaf.record_id.clone(),
                version: leaf.version,
                sha256: leaf.sha256.clone(),
                seal_digest: leaf.seal_digest.clone(),
                errors: (!errors.is_empty()).then_some(errors),
            }
        })
        .collect();
    Ok(out::PublishOutcome { batch_id: push.push_id.clone(), seq: push.seq, held: push.held, results })
}

pub(super) fn push_status(
    state: &AppState,
    push: &PushRecord,
    with_page: bool,
    outcome: Option<Outcome>,
    cursor: Option<&str>,
) -> ApiResult<PushStatus> {
    let now = state.clock.now();
    let push_state = match push.state.as_str() {
        "processing" => PushState::Processing,
        "complete" => PushState::Complete,
        "held" => PushState::Held,
        "failed" => PushState::Failed,
        _ => PushState::Queued,
    };
    let counts = push.outcome_counts();
    let stage = match push_state {
        PushState::Queued => out::Stage::Queued,
        PushState::Processing => out::Stage::Publishing,
        _ => out::Stage::Done,
    };
    let stalled = !push_state.is_settled() && out::is_stalled(push.last_step_at, now);
    let source = if push.source == "bulk" { out::Source::Bulk } else { out::Source::Api };
    let page = if with_page {
        // Read from the cursor's leaf until one result past a page is found.
        let after = cursor.and_then(cursor::decode).and_then(|c| c.parse::<u64>().ok());
        let mut results: Vec<out::StatusResult> = Vec::new();
        leaves_while(state, &push.push_id, after.map_or(0, |a| a.saturating_add(1)), |leaf| {
            if outcome.is_none_or(|o| o == outcome_of(&leaf)) {
                results.push(out::StatusResult {
                    leaf_index: leaf.leaf_index,
                    outcome: outcome_of(&leaf),
                    business_product_id: leaf.business_product_id.clone(),
                    errors: errors_of(&leaf),
                });
            }
            results.len() <= out::RESULTS_PAGE
        })?;
        Some(
            out::results_page(&results, outcome, cursor)
                .ok_or_else(|| ApiError::detail(Code::RequestInvalid, "cursor"))?,
        )
    } else {
        None
    };
    Ok(PushStatus {
        push_id: push.push_id.clone(),
        batch_id: push.push_id.clone(),
        record_type: push.record_type.clone(),
        seq: push.seq,
        source,
        mode: out::Mode::Queued,
        state: push_state,
        held: push.held,
        held_reasons: push.held_reasons.clone(),
        records: push.records,
        counts,
        progress: out::Progress { stage, chunk: push.chunks_done, chunks: push.chunks },
        received_at: push.received_at.to_rfc3339_millis(),
        updated_at: push.updated_at.to_rfc3339_millis(),
        completed_at: push.completed_at.map(|t| t.to_rfc3339_millis()),
        error: push.error.clone().map(|code| out::PushError { code }),
        status_url: out::status_url(&push.push_id),
        poll_after_seconds: out::poll_after_seconds(push_state, counts.pending),
        stalled,
        resume: stalled.then(|| out::resume_instruction(source).to_owned()),
        page,
    })
}

#[derive(Deserialize)]
struct StatusQuery {
    outcome: Option<String>,
    cursor: Option<String>,
}

async fn push_status_route(state: &AppState, push_id: &str, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, parts, .. } = signed(state, req, TAG_READ, DEFAULT_LIMIT, now).await?;
    let query: StatusQuery =
        Query::try_from_uri(&parts.uri).map_err(|e| ApiError::detail(Code::RequestInvalid, e.to_string()))?.0;
    let outcome = match query.outcome.as_deref() {
        Some(o) => Some(Outcome::parse(o).ok_or_else(|| ApiError::detail(Code::RequestInvalid, "outcome"))?),
        None => None,
    };
    let push = state
        .store
        .get::<PushRecord>(cf::PUSHES, &push_key(push_id))?
        .filter(|p| p.business_uuid == key.business_uuid)
        .ok_or_else(|| ApiError::new(Code::NotFound))?;
    let status = push_status(state, &push, true, outcome, query.cursor.as_deref())?;
    Ok(Json(status).into_response())
}

async fn push_status_handler(
    State(state): State<AppState>,
    Path(push_id): Path<String>,
    req: Request<Body>,
) -> Response {
    push_status_route(&state, &push_id, req).await.unwrap_or_else(IntoResponse::into_response)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentBody {
    document_base64: String,
    seal: Value,
}

async fn end_route(state: &AppState, kind: &str, req: Request<Body>, delete: bool) -> ApiResult<Response> {
    let now = state.clock.now();
    let record_type = publish_type(kind)?;
    let Signed { key, body, parts } = signed(state, req, TAG_PUSH, DEFAULT_LIMIT, now).await?;
    let mandate = writing_mandate(state, &key, record_type, &parts, now)?;
    let doc: DocumentBody = serde_json::from_slice(&body)
        .map_err(|e| ApiError::detail(Code::RequestInvalid, format!("body is {{document_base64, seal}}: {e}")))?;
    let bytes = svc_core::b64::std_decode(&doc.document_base64)
        .ok_or_else(|| ApiError::detail(Code::RequestInvalid, "document_base64 is not base64"))?;
    let envelope = Envelope::from_value(&doc.seal).map_err(|r| seal_invalid(format!("seal: {r}")))?;
    let public = key_from_jwk(&key.jwk).ok_or_else(|| ApiError::internal("stored key"))?;
    let seal = match seal::verify_record_seal(&envelope, &public).map_err(|r| seal_invalid(format!("seal: {r}")))? {
        seal::RecordSeal::V2(s) => s,
        seal::RecordSeal::V1(_) => return Err(seal_invalid("documents are sealed with seal.v2")),
    };
    documents::check_document_seal(&bytes, &seal, record_type).map_err(|r| seal_invalid(format!("document: {r}")))?;
    let document = documents::read_document(&bytes).map_err(|d| ApiError::detail(Code::RequestInvalid, d))?;
    let wanted = if delete { documents::Action::Delete } else { documents::Action::Withdraw };
    if document.action != wanted {
        return Err(ApiError::detail(Code::RequestInvalid, format!("this route takes action {}", wanted.as_str())));
    }
    let sealed_at = UnixMs::parse_rfc3339_millis_utc(&seal.sealed_at).ok_or_else(|| seal_invalid("sealed_at"))?;
    if !seal::sealed_at_fresh(sealed_at, now) {
        return Err(seal_invalid("sealed_at is more than five minutes from receipt"));
    }
    key.validity().judge(sealed_at).map_err(|r| seal_invalid(format!("the key at sealed_at: {r}")))?;
    if !mandate.live_at(sealed_at) {
        return Err(ApiError::detail(Code::OutOfScope, "sealed outside the mandate's validity"));
    }
    check_ai_policy_version(state, &key.business_uuid, seal.ai_policy_version, sealed_at)?;
    check_certificate_in_force(&state.registry.certificates(&key.business_uuid)?, &seal.cert_id, sealed_at)?;
    let (business_uuid, record_id) = (key.business_uuid.clone(), document.record_id.clone());
    let seal_json = envelope.to_json();
    let ended = ractor::call!(state.home()?.publisher, |reply| PublisherMsg::EndRecord {
        business_uuid,
        record_id,
        delete,
        seal_json,
        now,
        reply
    })
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    if ended.is_none() {
        return Err(ApiError::detail(Code::NotFound, "no live record of this business has that id"));
    }
    Ok(Json(json!({"record_id": document.record_id, "action": wanted.as_str(), "live_in": []})).into_response())
}

async fn withdraw(State(state): State<AppState>, Path(kind): Path<String>, req: Request<Body>) -> Response {
    end_route(&state, &kind, req, false).await.unwrap_or_else(IntoResponse::into_response)
}

async fn delete_record(State(state): State<AppState>, Path(kind): Path<String>, req: Request<Body>) -> Response {
    end_route(&state, &kind, req, true).await.unwrap_or_else(IntoResponse::into_response)
}

/// Entries in one catalogue page.
pub const CATALOGUE_PAGE: usize = 1_000;

#[derive(Deserialize)]
struct CatalogueQuery {
    cursor: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

async fn catalogue_route(state: &AppState, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, parts, .. } = signed(state, req, TAG_READ, DEFAULT_LIMIT, now).await?;
    let q: CatalogueQuery =
        Query::try_from_uri(&parts.uri).map_err(|e| ApiError::detail(Code::RequestInvalid, e.to_string()))?.0;
    let kind = match q.kind.as_deref() {
        None => RecordType::Products,
        Some(name) => RecordType::from_name(name)
            .filter(|t| t.is_collection())
            .ok_or_else(|| ApiError::detail(Code::RequestInvalid, "type is a collection name"))?,
    };
    let after = match q.cursor.as_deref() {
        Some(c) => Some(cursor::decode(c).ok_or_else(|| ApiError::detail(Code::RequestInvalid, "cursor"))?),
        None => None,
    };
    // Read-back above 1,000 records a minute waits (P8.20).
    if let Err(wait_ms) = state.limits.catalogue_reads.judge(&key.key_id, now) {
        return Err(ApiError::retry_after(
            Code::RateLimited,
            wait_ms,
            "catalogue read-back is over 1,000 records a minute",
        ));
    }
    let ids = state.registry.catalogue_ids(&key.business_uuid, kind.name(), after.as_deref(), CATALOGUE_PAGE + 1)?;
    let more = ids.len() > CATALOGUE_PAGE;
    let mut entries = Vec::new();
    for id in ids.iter().take(CATALOGUE_PAGE) {
        if let Some(head) = state.registry.record_head(id)? {
            entries.push(
                json!({"record_id": head.record_id, "business_product_id": head.own_id, "type": head.record_type,
                "last_updated": head.last_updated.to_rfc3339_secs(), "source": head.source}),
            );
        }
    }
    let next_cursor = if more { ids.get(CATALOGUE_PAGE - 1).map(|id| cursor::encode(id)) } else { None };
    state.limits.catalogue_reads.spend(&key.key_id, now, entries.len() as u64);
    Ok(Json(json!({"entries": entries, "next_cursor": next_cursor})).into_response())
}

async fn catalogue(State(state): State<AppState>, req: Request<Body>) -> Response {
    catalogue_route(&state, req).await.unwrap_or_else(IntoResponse::into_response)
}

async fn catalogue_record_route(state: &AppState, id: &str, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, .. } = signed(state, req, TAG_READ, DEFAULT_LIMIT, now).await?;
    if id.is_empty() || id.chars().count() > 256 {
        return Err(ApiError::detail(Code::RequestInvalid, "the id is 1 to 256 characters"));
    }
    let record_id = if svc_core::ids::parse_record_id(id).is_some() {
        id.to_owned()
    } else {
        svc_core::ids::product_id(&key.business_uuid, id)
    };
    let head = state
        .registry
        .record_head(&record_id)?
        .filter(|h| h.business_uuid == key.business_uuid && !matches!(h.state, RecordState::Deleted))
        .ok_or_else(|| ApiError::new(Code::NotFound))?;
    // The served version; a held newer one is not the record of truth yet.
    let generation = if head.live_generation > 0 { head.live_generation } else { head.generation };
    let version =
        state.registry.record_version(&record_id, generation)?.ok_or_else(|| ApiError::new(Code::NotFound))?;
    let raw = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
    let live_in: Vec<&str> = if head.state == RecordState::Live { vec![state.config.region.as_str()] } else { vec![] };
    Ok(Json(json!({
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
    .into_response())
}

async fn catalogue_record(State(state): State<AppState>, Path(id): Path<String>, req: Request<Body>) -> Response {
    catalogue_record_route(&state, &id, req).await.unwrap_or_else(IntoResponse::into_response)
}

#[derive(Deserialize)]
struct AttemptsQuery {
    from: Option<String>,
    to: Option<String>,
    status: Option<String>,
    cursor: Option<String>,
}

fn parse_bound(text: &Option<String>, default: UnixMs) -> ApiResult<UnixMs> {
    match text {
        None => Ok(default),
        Some(t) => UnixMs::parse_rfc3339(t)
            .or_else(|| UnixMs::parse_date(t))
            .ok_or_else(|| ApiError::detail(Code::RequestInvalid, format!("{t} is not RFC 3339 or a date"))),
    }
}

async fn attempts_route(state: &AppState, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, parts, .. } = signed(state, req, TAG_READ, DEFAULT_LIMIT, now).await?;
    let q: AttemptsQuery =
        Query::try_from_uri(&parts.uri).map_err(|e| ApiError::detail(Code::RequestInvalid, e.to_string()))?.0;
    let from = parse_bound(&q.from, UnixMs(0))?;
    let to = parse_bound(&q.to, UnixMs(i64::MAX))?;
    let status = match q.status.as_deref() {
        Some(s) => Some(Outcome::parse(s).ok_or_else(|| ApiError::detail(Code::RequestInvalid, "status"))?),
        None => None,
    };
    // Position: "<push_id>:<leaf>" of the last attempt returned.
    let after = match q.cursor.as_deref() {
        Some(c) => Some(cursor::decode(c).ok_or_else(|| ApiError::detail(Code::RequestInvalid, "cursor"))?),
        None => None,
    };
    let prefix = crate::registry::keys::prefix(&[&key.business_uuid]);
    let mut start = prefix.clone();
    start.extend_from_slice(&crate::store::be(from.0.max(0) as u64));
    let pushes: Vec<(Vec<u8>, ())> = state.store.scan(cf::ATTEMPTS, &prefix, Some(&start), usize::MAX)?;
    let mut attempts = Vec::new();
    let mut passed = after.is_none();
    let mut next_cursor = None;
    for (k, ()) in pushes {
        let push_id = String::from_utf8_lossy(&k[prefix.len() + 9..]).into_owned();
        let Some(push) = state.store.get::<PushRecord>(cf::PUSHES, &push_key(&push_id))? else { continue };
        if push.received_at >= to {
            break;
        }
        let mut full = false;
        leaves_while(state, &push_id, 0, |leaf| {
            let position = format!("{push_id}:{}", leaf.leaf_index);
            if !passed {
                passed = after.as_deref() == Some(position.as_str());
                return true;
            }
            if status.is_some_and(|s| s != outcome_of(&leaf)) {
                return true;
            }
            if attempts.len() == out::RESULTS_PAGE {
                next_cursor = attempts.last().and_then(|a: &Value| a["_position"].as_str().map(cursor::encode));
                full = true;
                return false;
            }
            let reason = leaf.errors.first().map(|(code, _, _)| code.clone());
            attempts.push(json!({"batch_id": push_id, "leaf_index": leaf.leaf_index,
                "received_at": push.received_at.to_rfc3339_millis(), "source": push.source, "key_id": push.key_id,
                "business_product_id": leaf.business_product_id, "product_name": leaf.product_name,
                "outcome": leaf.outcome, "reason": reason, "_position": position}));
            true
        })?;
        if full {
            break;
        }
    }
    for a in &mut attempts {
        a.as_object_mut().map(|o| o.remove("_position"));
    }
    Ok(Json(json!({"attempts": attempts, "next_cursor": next_cursor})).into_response())
}

async fn push_attempts(State(state): State<AppState>, req: Request<Body>) -> Response {
    attempts_route(&state, req).await.unwrap_or_else(IntoResponse::into_response)
}

async fn seal_context_route(state: &AppState, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, .. } = signed(state, req, TAG_READ, DEFAULT_LIMIT, now).await?;
    let cert = state.registry.certificate_in_force(&key.business_uuid, now)?;
    let policy = state.registry.ai_policy_at(&key.business_uuid, now)?;
    let version = policy.as_ref().map_or(0, |p| p.version);
    Ok(Json(json!({
        "business_uuid": key.business_uuid,
        "cert_id": cert.as_ref().map(|c| c.cert_id.clone()),
        "certificate_status": cert.as_ref().map(|c| c.status.as_str()),
        "ai_policy_version": version,
        "ai_policy_live_from": policy.as_ref().map(|p| p.live_from.to_rfc3339_secs()),
        "ai_policy_record_id": policy.as_ref().map(|p| p.record_id.clone()),
        "next_ai_policy_version": version + 1,
    }))
    .into_response())
}

async fn seal_context(State(state): State<AppState>, req: Request<Body>) -> Response {
    seal_context_route(&state, req).await.unwrap_or_else(IntoResponse::into_response)
}
