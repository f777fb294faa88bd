//! The publishing use cases (publishing-verification section 4.1): a
//! business's integration key publishes, withdraws and deletes (`svc-push`),
//! and reads back its catalogue, push attempts, push status, seal context
//! and analytics (`svc-business-read`).

mod analytics;
mod bulk;
pub mod freshness;
mod push;
mod read;
pub mod saves;

pub use analytics::{DailyQuery, WhoQuery, daily, daily_of, who_is_asking, who_is_asking_of};
pub use bulk::{UploadSink, create_import, create_upload, open_upload, upload_waiting};
pub use push::{end_documented, end_record, publish, publish_type};
pub use read::{
    AttemptsQuery, CatalogueQuery, StatusQuery, attempts, catalogue, catalogue_record, push_status_of, seal_context,
};

use std::net::IpAddr;

use bytes::Bytes;
use serde_json::Value;
use svc_core::digest::sha256;
use svc_core::dsse::Envelope;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::publish::cursor;
use svc_core::publish::outcome::{self as out, Outcome, PushState, PushStatus};
use svc_core::seal::{self, judge_certificate};
use svc_core::time::UnixMs;

use super::auth::{Credentials, verify_signed};
use super::{Error, Result};
use crate::actors::publisher::PublisherMsg;
use crate::memo::key_from_jwk;
use crate::publish::Refused;
use crate::region::parts::{HasAsTable, HasClock, HasConfig, HasHome, HasJwkKeys, HasNonces, HasRegistry, HasStore};
use svc_store::model::*;
use svc_store::{cf, key, keys};

pub const TAG_PUSH: &str = "svc-push";
pub const TAG_READ: &str = "svc-business-read";

/// A verified business request: the integration key that signed it, and
/// what the use cases read of the request beyond its body.
pub struct BusinessCaller {
    pub key: BusinessKey,
    pub body: Bytes,
    /// When the request arrived.
    pub now: UnixMs,
    /// The path it was sent to: part of what `Idempotency-Key` compares.
    pub path: String,
    /// The client's address, for a mandate's source allow-list.
    pub remote_ip: Option<IpAddr>,
    /// The `Idempotency-Key` header, as sent.
    pub idempotency_key: Option<String>,
}

/// The request as a surface received it, beyond its signature.
pub struct Origin {
    pub path: String,
    pub remote_ip: Option<IpAddr>,
    pub idempotency_key: Option<String>,
}

/// The gate of every publishing use case: the seven signing steps for
/// `tag` (or, in the sandbox, the key's bearer token for its first hour).
pub async fn authenticate<R>(
    state: &R,
    credentials: Credentials<'_>,
    tag: &str,
    body: Bytes,
    origin: Origin,
    now: UnixMs,
) -> Result<BusinessCaller>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasNonces + HasJwkKeys,
{
    let key = identify(state, &credentials, tag, now).await?;
    let Origin { path, remote_ip, idempotency_key } = origin;
    Ok(BusinessCaller { key, body, now, path, remote_ip, idempotency_key })
}

async fn identify<R>(state: &R, credentials: &Credentials<'_>, tag: &str, now: UnixMs) -> Result<BusinessKey>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasNonces + HasJwkKeys,
{
    let sandbox = state.config().environment.is_sandbox();
    // Sandbox only: the bearer token in place of a signature, for the
    // key's first hour.
    if let Some(token) = credentials.sandbox_bearer(sandbox) {
        let key =
            state.registry().integration_key_by_bearer(token, now)?.ok_or_else(|| Error::new(Code::KeyUnknown))?;
        note_use(state, &key.business_uuid, now)?;
        return introduce(state, key, now).await;
    }
    let authority = &state.config().public_authority;
    let lookup = |key_id: &str| usable_key(state, key_id, credentials.grant, now);
    let (_, key) = verify_signed(&credentials.request, authority, tag, now, state.nonces(), lookup).await?;
    if !sandbox {
        return Ok(key);
    }
    note_use(state, &key.business_uuid, now)?;
    introduce(state, key, now).await
}

/// Sandbox, at home: notes the UTC day a business used the service (a
/// request signed by its key, a portal session of its people), once a day;
/// its own data expires 90 days after the last (R1.42).
pub(crate) fn note_use<R>(state: &R, business_uuid: &str, now: UnixMs) -> Result<()>
where
    R: HasConfig + HasStore + HasRegistry + HasHome,
{
    if !state.config().environment.is_sandbox() || state.home_actors().is_none() {
        return Ok(());
    }
    let today = UnixMs(now.0 - now.0.rem_euclid(svc_core::time::DAY));
    if state.registry().business_last_used(business_uuid)?.is_some_and(|day| day >= today) {
        return Ok(());
    }
    Ok(state.store().put(cf::meta::BUSINESS_USED, &keys::business_used(business_uuid), &today)?)
}

/// Every step of the signature a head decides (headers, shape, window,
/// key, and the signature over the covered components) on a request whose
/// body is not read yet: an unsigned caller, an unknown key or a forged
/// signature is refused for the price of its head. `body_follows`: the
/// request declared a body. Answers the key id that signed.
pub fn judge_head<R>(
    state: &R,
    credentials: &Credentials<'_>,
    tag: &str,
    body_follows: bool,
    now: UnixMs,
) -> Result<String>
where
    R: HasConfig + HasRegistry + HasJwkKeys,
{
    let sandbox = state.config().environment.is_sandbox();
    if let Some(token) = credentials.sandbox_bearer(sandbox) {
        return match state.registry().integration_key_by_bearer(token, now)? {
            Some(key) => Ok(key.key_id),
            None => Err(Error::new(Code::KeyUnknown)),
        };
    }
    let policy =
        svc_core::http_sig::Policy { authority: &state.config().public_authority, tag, now_secs: now.as_secs() };
    let lookup = |key_id: &str| usable_key(state, key_id, credentials.grant, now).map(|(_, public)| public);
    svc_core::http_sig::judge_head(&credentials.request, &policy, body_follows, lookup).map_err(super::auth::sig_error)
}

/// The registered integration key that may sign now, with its public key.
fn usable_key<R>(
    state: &R,
    key_id: &str,
    grant: Option<&str>,
    now: UnixMs,
) -> Option<(BusinessKey, svc_core::keys::VerifyingKey)>
where
    R: HasConfig + HasRegistry + HasJwkKeys,
{
    let key = state.registry().integration_key(key_id).ok().flatten()?;
    if key.environment != state.config().environment || !key.live_at(now) {
        return None;
    }
    // A sandbox key the sandbox has not seen needs its grant.
    if let Some(credentials) = &key.sandbox
        && state.config().environment.is_sandbox()
        && !svc_core::sandbox::admits(credentials.introduced, Some(&credentials.grant), grant)
    {
        return None;
    }
    let public = state.jwk_keys().get(&key.jwk)?;
    Some((key, public))
}

/// The id of the mandate the sandbox grants a sandbox key: no passkey
/// sealed it (its envelope is empty).
pub const SANDBOX_GRANT: &str = "sandbox-grant";

/// The first request of a sandbox key registers it, with a sandbox mandate
/// for every collection and country. Later requests pass through.
async fn introduce(state: &impl HasHome, mut key: BusinessKey, now: UnixMs) -> Result<BusinessKey> {
    let Some(credentials) = key.sandbox.as_mut().filter(|c| !c.introduced) else { return Ok(key) };
    credentials.introduced = true;
    let mandate = MandateRecord {
        mandate_id: SANDBOX_GRANT.into(),
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
    change.put(cf::MANDATES, &keys::mandate(&key.key_id, &mandate.mandate_id), &mandate);
    state.home()?.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
    Ok(key)
}

/// The request's `Idempotency-Key`, checked; `required` on routes that must have one.
pub(crate) fn idempotency_key(caller: &BusinessCaller, required: bool) -> Result<Option<String>> {
    match &caller.idempotency_key {
        Some(k) if out::idempotency_key_valid(k) => Ok(Some(k.clone())),
        Some(_) => Err(Error::detail(Code::RequestInvalid, "Idempotency-Key is 1 to 255 visible ASCII characters")),
        None if required => Err(Error::detail(Code::RequestInvalid, "Idempotency-Key is required")),
        None => Ok(None),
    }
}

/// The key's live mandate for the type, honoured only from inside its
/// source allow-list (checked before the caps, so an outsider learns nothing
/// of them).
pub(crate) fn writing_mandate(
    state: &(impl HasRegistry + HasAsTable),
    record_type: RecordType,
    caller: &BusinessCaller,
) -> Result<MandateRecord> {
    let (key, now) = (&caller.key, caller.now);
    let mandate = state
        .registry()
        .live_mandate(&key.key_id, record_type.name(), now)?
        .ok_or_else(|| Error::detail(Code::OutOfScope, "the key has no live mandate for this record type"))?;
    let source_ok = match caller.remote_ip {
        Some(ip) => {
            let asn = state.as_table().as_ref().and_then(|table| table.asn(ip));
            svc_core::publish::mandate::allow_list_permits(&mandate.source_ip_allow_list, ip, asn)
        }
        None => mandate.source_ip_allow_list.is_none(),
    };
    if !source_ok {
        return Err(Error::new(Code::SourceNotAllowed));
    }
    Ok(mandate)
}

/// The AI policy version in force at `sealed_at` must be the one sealed.
pub(crate) fn check_ai_policy_version(
    state: &impl HasRegistry,
    business_uuid: &str,
    sealed: u64,
    sealed_at: UnixMs,
) -> Result<()> {
    let in_force = state.registry().ai_policy_at(business_uuid, sealed_at)?.map_or(0, |p| p.version);
    if sealed == in_force {
        return Ok(());
    }
    Err(Error::from(
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
) -> Result<()> {
    let history: Vec<_> = history.iter().map(CertificateIssuance::as_core).collect();
    match judge_certificate(&history, cert_id, sealed_at) {
        Ok(()) => Ok(()),
        Err(svc_core::Reason::CertificateWithdrawn) => Err(Error::new(Code::CertificateWithdrawn)),
        Err(r) => Err(seal_invalid(format!("certificate: {r}"))),
    }
}

pub(crate) fn seal_invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::SealInvalid, detail)
}

/// Everything a batch seal is judged by before a push is accepted, in the
/// spec's order: the verified business, the seal's signature by the signing
/// key, the key's validity at `sealed_at`, the Merkle root over the raw
/// records (when they are in the request), the certificate in force and the
/// AI policy version at `sealed_at`, and the mandate at `sealed_at`.
pub(crate) fn judge_batch_seal(
    state: &impl HasRegistry,
    key: &BusinessKey,
    mandate: &MandateRecord,
    batch_seal: &Value,
    record_type: RecordType,
    records: Option<&[Vec<u8>]>,
) -> Result<(Envelope, seal::BatchSealV2, UnixMs)> {
    let history = state.registry().certificates(&key.business_uuid)?;
    if state.registry().business(&key.business_uuid)?.is_none() || history.is_empty() {
        return Err(seal_invalid("the business is not verified"));
    }
    let envelope = Envelope::from_value(batch_seal).map_err(|r| seal_invalid(format!("batch seal: {r}")))?;
    let public = key_from_jwk(&key.jwk).ok_or_else(|| Error::internal("stored key"))?;
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
        return Err(Error::detail(Code::OutOfScope, "sealed outside the mandate's validity"));
    }
    Ok((envelope, batch, sealed_at))
}

/// What identifies "the same request" for `Idempotency-Key`: the path and
/// the body's bytes.
pub(crate) fn request_fingerprint(caller: &BusinessCaller) -> Vec<u8> {
    let mut all = caller.path.as_bytes().to_vec();
    all.extend_from_slice(&sha256(&caller.body));
    sha256(&all).to_vec()
}

/// The first answer given for this key and `Idempotency-Key`, when the
/// request is the same; a different request under the same key is refused.
pub(crate) fn replayed(
    state: &impl HasStore,
    key_id: &str,
    idem: &str,
    fingerprint: &[u8],
) -> Result<Option<IdempotentAnswer>> {
    let stored: Option<IdempotentAnswer> = state.store().get(cf::IDEMPOTENCY, &keys::idempotency(key_id, idem))?;
    match stored {
        Some(answer) if answer.fingerprint == fingerprint => Ok(Some(answer)),
        Some(_) => Err(Error::new(Code::IdempotencyKeyReused)),
        None => Ok(None),
    }
}

/// Keeps the first answer for an `Idempotency-Key`.
pub(crate) async fn remember(
    state: &(impl HasClock + HasHome),
    key_id: &str,
    idem: String,
    fingerprint: Vec<u8>,
    answer: &Answer,
) -> Result<()> {
    let answer = IdempotentAnswer {
        fingerprint,
        status: answer.status,
        body: answer.body.clone(),
        location: answer.location.clone(),
        at: state.clock().now(),
    };
    let key_id = key_id.to_owned();
    Ok(state.home()?.publisher.call(|reply| PublisherMsg::RememberAnswer { key_id, idem, answer, reply }).await??)
}

/// Visits a push's result rows in leaf order from leaf `first`, reading them
/// a slice at a time, until `visit` answers false: a page of a 100,000-record
/// import reads its page, not the whole push.
pub(crate) fn leaves_while(
    state: &impl HasStore,
    push_id: &str,
    first: u64,
    mut visit: impl FnMut(PushLeaf) -> bool,
) -> Result<()> {
    const SLICE: usize = 256;
    let prefix = key(&[push_id.as_bytes()]);
    let mut from = keys::push_leaf(push_id, first);
    loop {
        let rows: Vec<(Vec<u8>, PushLeaf)> = state.store().scan(cf::PUSH_LEAVES, &prefix, Some(&from), SLICE)?;
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
            Some(n) if full => from = keys::push_leaf(push_id, n),
            _ => return Ok(()),
        }
    }
}

pub(crate) fn leaves(state: &impl HasStore, push_id: &str) -> Result<Vec<PushLeaf>> {
    let mut all = Vec::new();
    leaves_while(state, push_id, 0, |leaf| {
        all.push(leaf);
        true
    })?;
    Ok(all)
}

pub(crate) fn outcome_of(leaf: &PushLeaf) -> Outcome {
    leaf.outcome
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

pub(crate) fn publish_outcome(state: &impl HasStore, push: &PushRecord) -> Result<out::PublishOutcome> {
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

pub(crate) fn push_status(
    state: &(impl HasStore + HasClock),
    push: &PushRecord,
    with_page: bool,
    outcome: Option<Outcome>,
    cursor: Option<&str>,
) -> Result<PushStatus> {
    let now = state.clock().now();
    let push_state = push.state;
    let counts = push.outcome_counts();
    let stage = match push_state {
        PushState::Queued => out::Stage::Queued,
        PushState::Processing => out::Stage::Publishing,
        _ => out::Stage::Done,
    };
    let stalled = !push_state.is_settled() && out::is_stalled(push.last_step_at, now);
    let source = push.source;
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
                .ok_or_else(|| Error::detail(Code::RequestInvalid, "cursor"))?,
        )
    } else {
        None
    };
    Ok(PushStatus {
        push_id: push.push_id.clone(),
        batch_id: push.push_id.clone(),
        record_type: push.record_type.name().into(),
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

/// A publishing answer whose status the surface shows: 200 with an outcome,
/// 201, or 202 with where to poll. Kept as given for an `Idempotency-Key`.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub location: Option<String>,
}

impl Answer {
    pub fn ok(body: Vec<u8>) -> Self {
        Answer { status: 200, body, location: None }
    }

    pub fn accepted(body: Vec<u8>, location: String) -> Self {
        Answer { status: 202, body, location: Some(location) }
    }
}

impl From<IdempotentAnswer> for Answer {
    fn from(stored: IdempotentAnswer) -> Self {
        Answer { status: stored.status, body: stored.body, location: stored.location }
    }
}

/// What accepting a push came to: the first answer again (a resend under
/// its `Idempotency-Key`), or the push, new or resumed.
pub(crate) enum Accepted {
    Replay(Answer),
    Push { push_id: String, resumed: bool },
}

/// Hands a push to the publisher, which accepts it in one synced write (or
/// finds it already accepted), under a fresh batch id.
pub(crate) async fn accept_push(state: &impl HasHome, push: crate::publish::NewPush) -> Result<Accepted> {
    let push_id = svc_core::ids::batch_id(&svc_clock::random());
    let created =
        state.home()?.publisher.call(|reply| PublisherMsg::CreatePush(Box::new(push), push_id, reply)).await??;
    match created {
        Ok(crate::publish::Created::Replay(answer)) => Ok(Accepted::Replay(answer.into())),
        Ok(crate::publish::Created::New(push_id)) => Ok(Accepted::Push { push_id, resumed: false }),
        Ok(crate::publish::Created::Resume(push_id)) => Ok(Accepted::Push { push_id, resumed: true }),
        Err(refusal) => Err(refused(refusal)),
    }
}

/// A push the publisher refused, as the spec's problem.
pub(crate) fn refused(refusal: Refused) -> Error {
    match refusal {
        Refused::SeqNotIncreasing => {
            Error::detail(Code::SeqNotIncreasing, "seq is not above the last accepted one for this key")
        }
        Refused::SealedAtStale => seal_invalid("sealed_at is more than five minutes from receipt"),
        Refused::IdempotencyKeyReused => Error::new(Code::IdempotencyKeyReused),
    }
}
