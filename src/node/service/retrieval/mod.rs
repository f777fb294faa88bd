//! The retrieval use cases (retrieval sections 2, 4, 5, 7 and 8): signed
//! searches and fetches, each answered with a format 3 receipt signed by
//! this region's key, plus the caller's receipts, usage and the Terms.
//!
//! Every use case starts from a [`Caller`] that [`authenticate`] admitted:
//! the seven signing steps, then the key's request rate. Those that can
//! bill (search, fetch) also judge the query-cost budget and reserve a unit
//! of the company's allowance before serving ([`admit`]), and deliver
//! through [`deliver`], which logs the receipt and settles the bill before
//! the answer leaves.

pub mod account;
mod fetch;
mod search;

pub use account::{
    RECEIPTS_PAGE, ReceiptsQuery, USAGE_MAX_DAYS, UsageQuery, receipts, terms_in_force, terms_version, usage,
};
pub use fetch::{NOT_FOUND_FLOOR, fetch};
pub use search::search;

use std::time::{Duration, Instant};

use bytes::Bytes;
use svc_core::http_sig::Verified;
use svc_core::problem::Code;
use svc_core::receipt::{self, Receipt};
use svc_core::time::UnixMs;

use super::auth::{Credentials, verify_signed};
use super::error::unavailable_because;
use super::{Error, Result};
use crate::actors::billing::{BillingMsg, Reservation, Reserved, Settled};
use crate::actors::mailbox::{Mailbox, MailboxError};
use crate::actors::publisher::PublisherMsg;
use crate::actors::receipt_log::ReceiptLogMsg;
use crate::region::parts::{
    HasBilling, HasClock, HasConfig, HasHome, HasJwkKeys, HasKeySet, HasLimits, HasMetrics, HasNonces, HasReceipts,
    HasRegistry, HasReplica, HasStore,
};
use crate::replication::Change;
use crate::replication::exchange::{LeaseGrant, Outgoing};
use svc_store::cf;
use svc_store::model::{RetrievalKey, StoredReceipt, UsageEvent, UsageKind};

/// What a billed answer reads from `admit` to `deliver`: the parts that hold
/// the caller's allowance, and that sign, keep and count its receipt.
pub trait Bills:
    HasBilling + HasClock + HasConfig + HasKeySet + HasLimits + HasMetrics + HasReceipts + HasReplica
{
}

impl<R> Bills for R where
    R: HasBilling + HasClock + HasConfig + HasKeySet + HasLimits + HasMetrics + HasReceipts + HasReplica
{
}

pub const TAG_RETRIEVAL: &str = "svc-retrieval";

/// How long a request waits for the billing actor before the allowance
/// counts as uncheckable (503, failing closed).
const BILLING_WAIT: Duration = Duration::from_secs(2);

/// What a 503 asks the caller to wait.
const UNAVAILABLE_RETRY_MS: u64 = 5_000;

/// A retrieval answer: its JSON text, and the retrieval id its receipt names.
pub struct Answer {
    pub retrieval_id: String,
    pub body: Vec<u8>,
}

/// A verified retrieval request: the key that signed it and its group.
pub struct Caller {
    pub key: RetrievalKey,
    /// `None` for a sandbox bearer token.
    pub verified: Option<Verified>,
    pub body: Bytes,
    /// When the request arrived, on the service's clock and the monotonic one.
    pub now: UnixMs,
    pub arrived: Instant,
}

impl Caller {
    pub(crate) fn request_hash(&self) -> String {
        self.verified.as_ref().map(Verified::request_hash).unwrap_or_default()
    }

    /// The nonce that makes this request billable once; a bearer request
    /// (sandbox only) has none, so its retrieval id stands in.
    fn nonce_or(&self, retrieval_id: &str) -> String {
        self.verified.as_ref().map_or_else(|| retrieval_id.to_owned(), |v| v.nonce.clone())
    }
}

/// The gate of every retrieval use case: the seven signing steps (section
/// 5), then the key's request rate. In the sandbox, a key not yet seen needs
/// its grant, and the one-hour bearer token stands in for a signature;
/// production reads neither.
pub async fn authenticate<R>(
    state: &R,
    credentials: Credentials<'_>,
    body: Bytes,
    now: UnixMs,
    arrived: Instant,
) -> Result<Caller>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasReplica + HasNonces + HasJwkKeys + HasLimits,
{
    let (key, verified) = identify(state, &credentials, now).await?;
    if let Err(wait_ms) = state.limits().request_rate.take(&key.key_id, now, 1) {
        return Err(Error::retry_after(Code::RateLimited, wait_ms, "the key's request rate is exceeded"));
    }
    Ok(Caller { key, verified, body, now, arrived })
}

async fn identify<R>(state: &R, credentials: &Credentials<'_>, now: UnixMs) -> Result<(RetrievalKey, Option<Verified>)>
where
    R: HasConfig + HasStore + HasRegistry + HasHome + HasReplica + HasNonces + HasJwkKeys,
{
    let sandbox = state.config().environment.is_sandbox();
    if let Some(token) = credentials.sandbox_bearer(sandbox) {
        let key = state.registry().retrieval_key_by_bearer(token, now)?.ok_or_else(|| Error::new(Code::KeyUnknown))?;
        let key = introduce(state, key, now).await?;
        return Ok((key, None));
    }
    let grant = credentials.grant;
    let registry = state.registry().clone();
    let jwk_keys = state.jwk_keys();
    let environment = state.config().environment;
    let authority = &state.config().public_authority;
    let (verified, key) =
        verify_signed(&credentials.request, authority, TAG_RETRIEVAL, now, state.nonces(), |key_id| {
            let key = registry.retrieval_key(key_id).ok().flatten()?;
            if key.environment != environment || key.revoked_at.is_some_and(|r| r <= now) {
                return None;
            }
            if sandbox && !svc_core::sandbox::admits(key.introduced, key.grant.as_deref(), grant) {
                return None;
            }
            let public = jwk_keys.get(&key.jwk)?;
            Some((key, public))
        })
        .await?;
    let key = if sandbox { introduce(state, key, now).await? } else { key };
    Ok((key, Some(verified)))
}

/// A sandbox key's first request registers it. Only home writes: a read
/// region reports it home (once), and keeps admitting the key with its
/// grant until the change comes back through the log.
async fn introduce<R>(state: &R, key: RetrievalKey, now: UnixMs) -> Result<RetrievalKey>
where
    R: HasStore + HasHome + HasReplica,
{
    if key.introduced {
        return Ok(key);
    }
    match (state.home_actors(), state.replica()) {
        (Some(home), _) => mark_introduced(state.store(), &home.publisher, key, now).await,
        (None, Some(replica)) => {
            let first = replica.introductions.lock().map(|mut asked| asked.insert(key.key_id.clone())).unwrap_or(true);
            if first {
                let mut batch = state.store().batch();
                replica.outbox.append(&mut batch, &Outgoing::Introduced { key_id: key.key_id.clone() });
                batch.commit().map_err(Error::internal)?;
            }
            Ok(key)
        }
        (None, None) => Ok(key),
    }
}

/// Home: records a sandbox key as introduced (a no-op when it already is).
pub async fn mark_introduced(
    store: &svc_store::Store,
    publisher: &crate::actors::mailbox::Mailbox<PublisherMsg>,
    mut key: RetrievalKey,
    now: UnixMs,
) -> Result<RetrievalKey> {
    if key.introduced {
        return Ok(key);
    }
    let as_read = key.clone();
    key.introduced = true;
    let mut change = Change::new();
    // A revocation written meanwhile is not undone.
    change.require_unchanged(cf::RETRIEVAL_KEYS, key.key_id.as_bytes(), &as_read);
    change.put(cf::RETRIEVAL_KEYS, key.key_id.as_bytes(), &key);
    match publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await? {
        Ok(_) => Ok(key),
        // A read region's report of the same key's first request marked it
        // between our read and this write: it is introduced, as asked. Any
        // other change (a revocation) still refuses.
        Err(crate::actors::error::ActorError::Store(svc_store::StoreError::Changed { .. })) => {
            let stored: Option<RetrievalKey> = store.get(cf::RETRIEVAL_KEYS, key.key_id.as_bytes())?;
            match stored {
                Some(stored) if stored == key => Ok(stored),
                _ => Err(Error::retry_after(
                    Code::Unavailable,
                    100,
                    "what this changes was changed meanwhile; ask again",
                )),
            }
        }
        Err(e) => Err(e.into()),
    }
}

fn unavailable(detail: &str) -> Error {
    Error::retry_after(Code::Unavailable, UNAVAILABLE_RETRY_MS, detail)
}

/// A unit of the caller's allowance, held while a billable route serves.
/// Dropped without [`deliver`], it goes back to the allowance.
pub struct Held {
    billing: Mailbox<BillingMsg>,
    reservation: Option<Reservation>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            let _ = self.billing.cast(BillingMsg::Release { reservation });
        }
    }
}

impl Held {
    /// No allowance unit: a route never billed (an ad pool) is served with
    /// whatever allowance is left.
    pub fn unbilled(state: &impl HasBilling) -> Held {
        Held { billing: state.billing().clone(), reservation: None }
    }
}

/// Before a billable route serves: the query-cost budget, then the
/// company's allowance. A spent budget is 429, a spent prepay allowance
/// 402, and an allowance that cannot be checked 503 (fail closed).
pub async fn admit<R>(state: &R, caller: &Caller, now: UnixMs) -> Result<Held>
where
    R: HasClock + HasReplica + HasLimits + HasBilling,
{
    if let Err(wait_ms) = state.limits().query_cost.judge(&caller.key.key_id, now) {
        return Err(Error::retry_after(Code::RateLimited, wait_ms, "the key's per-minute query-cost budget is spent"));
    }
    let company_uuid = &caller.key.company_uuid;
    let mut asked = false;
    loop {
        match reserve(state, company_uuid, now).await? {
            Reserved::Unit { reservation, renew } => {
                if renew {
                    renew_lease(state, company_uuid);
                }
                return Ok(Held { billing: state.billing().clone(), reservation: Some(reservation) });
            }
            Reserved::Exhausted => {
                return Err(Error::detail(Code::AllowanceExhausted, "the prepaid allowance is spent"));
            }
            // A read region without a lease in force asks home once; when
            // home cannot be reached, the allowance cannot be checked.
            Reserved::NeedLease if !asked => {
                asked = true;
                let Some(replica) = state.replica() else { return Err(unavailable("no lease at home")) };
                match replica.link.lease(company_uuid, now).await {
                    Ok(grant) => hold_lease(state.billing(), grant, now).await?,
                    Err(e) => {
                        tracing::warn!(error = %e, "no allowance lease from home");
                        return Err(unavailable("the allowance cannot be checked: home is unreachable"));
                    }
                }
            }
            Reserved::NeedLease => return Err(unavailable("the allowance cannot be checked")),
        }
    }
}

async fn reserve(state: &impl HasBilling, company_uuid: &str, now: UnixMs) -> Result<Reserved> {
    let company_uuid = company_uuid.to_owned();
    let reserved =
        state.billing().call_within(|reply| BillingMsg::Reserve { company_uuid, now, reply }, Some(BILLING_WAIT)).await;
    match reserved {
        Ok(Ok(reserved)) => Ok(reserved),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "allowance check failed");
            Err(unavailable("the allowance cannot be checked"))
        }
        Err(e) => {
            tracing::error!(error = %e, "billing actor unreachable");
            Err(unavailable("the allowance cannot be checked"))
        }
    }
}

async fn hold_lease(billing: &Mailbox<BillingMsg>, grant: LeaseGrant, now: UnixMs) -> Result<()> {
    Ok(billing.call(|reply| BillingMsg::Hold { grant, now, reply }).await??)
}

/// Asks home for a fresh lease in the background, one at a time per company.
fn renew_lease<R>(state: &R, company_uuid: &str)
where
    R: HasClock + HasReplica + HasBilling,
{
    let Some(replica) = state.replica() else { return };
    if !replica.link.start_renewal(company_uuid) {
        return;
    }
    let (replica, clock, billing) = (replica.clone(), state.clock().clone(), state.billing().clone());
    let company_uuid = company_uuid.to_owned();
    tokio::spawn(async move {
        let now = clock.now();
        match replica.link.lease(&company_uuid, now).await {
            Ok(grant) => {
                if let Err(e) = hold_lease(&billing, grant, now).await {
                    tracing::warn!(code = ?e.code(), "a renewed lease was not kept");
                }
            }
            Err(e) => tracing::debug!(error = %e, "lease renewal failed"),
        }
        replica.link.end_renewal(&company_uuid);
    });
}

/// The region's receipt key, which signs receipts and ad tokens: only a key
/// the key set names signs, so what it signs verifies.
pub(crate) fn receipt_signer(state: &impl HasKeySet, now: UnixMs) -> Result<svc_core::receipt::ReceiptSigner> {
    state.key_set().signer(now).ok_or_else(|| unavailable("this region's receipt key is not certified yet"))
}

/// What a billable route served.
pub struct Served {
    pub kind: UsageKind,
    /// Billable: a search with rows, a fetch with its record.
    pub billable: bool,
    pub cost: u64,
    /// The country a search named.
    pub country: Option<String>,
    /// The businesses whose records were served, each once.
    pub businesses: Vec<String>,
}

/// Signs the receipt, logs it, and settles the bill, in that order; only
/// then may the answer leave. Answers the receipt envelope's JSON text, the
/// same bytes the receipt log stored.
pub async fn deliver<R>(
    state: &R,
    caller: &Caller,
    mut held: Held,
    receipt: Receipt,
    served: Served,
    now: UnixMs,
) -> Result<Vec<u8>>
where
    R: HasConfig + HasLimits + HasBilling + HasReceipts + HasKeySet + HasMetrics,
{
    let retrieval_id = receipt.retrieval_id.clone();
    let signer = receipt_signer(state, now)?;
    let envelope = receipt::make(receipt, &signer).map_err(Error::internal)?;
    let stored = StoredReceipt {
        seq: 0,
        group_id: caller.key.group_id.clone(),
        company_uuid: caller.key.company_uuid.clone(),
        caller_key_id: caller.key.key_id.clone(),
        retrieval_id: retrieval_id.clone(),
        kind: served.kind,
        served_at: now,
        country: served.country,
        businesses: served.businesses,
        // Canonical (RFC 8785): the bytes served are the bytes folded into
        // the receipt's minute, and anyone who parsed them can rebuild them.
        envelope: svc_core::canonical::to_signed_bytes(&envelope).map_err(Error::internal)?,
    };
    let envelope_json = stored.envelope.clone();
    state.receipts().call(|reply| ReceiptLogMsg::Append { receipt: Box::new(stored), reply }).await??;
    let event = served.billable.then(|| UsageEvent {
        company_uuid: caller.key.company_uuid.clone(),
        group_id: caller.key.group_id.clone(),
        key_id: caller.key.key_id.clone(),
        nonce: caller.nonce_or(&retrieval_id),
        kind: served.kind,
        retrieval_id,
        region: state.config().region.clone(),
        at: now,
    });
    let Some(reservation) = held.reservation.take() else {
        if served.billable {
            return Err(Error::internal("an allowance unit was delivered twice"));
        }
        return Ok(envelope_json);
    };
    let kept = reservation.clone();
    let settled =
        state.billing().call_within(|reply| BillingMsg::Settle { reservation, event, reply }, Some(BILLING_WAIT)).await;
    if let Err(MailboxError::Full(_) | MailboxError::Stopped(_)) = &settled {
        // Never delivered: the unit goes back to billing when `held` drops.
        held.reservation = Some(kept);
    }
    match settled {
        Ok(Ok(settled)) => {
            let outcome = match settled {
                Settled::Billed => "billed",
                Settled::AlreadyBilled => "already_billed",
                Settled::Released => "not_billable",
            };
            state.metrics().count("svc_billing_events_total", &[("outcome", outcome.to_owned())], 1);
        }
        // A billable answer that cannot be billed is not served.
        Ok(Err(e)) => return Err(unavailable_because(UNAVAILABLE_RETRY_MS, "the request could not be billed", e)),
        Err(e) => return Err(unavailable_because(UNAVAILABLE_RETRY_MS, "the request could not be billed", e)),
    }
    state.limits().query_cost.spend(&caller.key.key_id, now, served.cost);
    Ok(envelope_json)
}
