//! What home does for its read regions, each under a MAC keyed by its own
//! token: it serves its replication log and its nonce feed, takes their
//! claims, their reports (usage, lease returns, receipt roots and keys) and
//! their receipts, and grants allowance leases. Reports and answers are postcard bytes.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use svc_core::keys::{Alg, VerifyingKey};
use svc_core::problem::Code;

use super::{Error, Result};
use crate::actors::ad_reservations::AdMsg;
use crate::actors::analytics::AnalyticsMsg;
use crate::actors::billing::BillingMsg;
use crate::actors::nonce_store::NonceMsg;
use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{
    HasAds, HasAnalytics, HasBilling, HasClock, HasConfig, HasHome, HasLinkReplays, HasMetrics, HasNonces, HasRegistry,
    HasStore,
};
use crate::replication::exchange::{
    self, AdFeedPage, ClaimsReport, FeedPage, LeaseAsk, Outgoing, ReceiptsShipment, ReceiptsTaken, Report,
};
use crate::replication::{chain_at, chained_after, encode_frames};
use svc_clock::monotonic;
use svc_core::{link, log_chain};
use svc_store::model::ReceiptRoot;
use svc_store::{Store, from_be};

pub use crate::replication::LOG_HEAD_HEADER;

/// Entries and bytes one answer carries at most.
const MAX_ENTRIES: usize = 1_000;
pub const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The largest body a region sends: a receipts shipment's envelopes, the
/// one envelope that may pass them, and their framing. Read only once the
/// head's MAC holds.
pub const MAX_REQUEST_BYTES: usize = exchange::SHIPMENT_BYTES + 1024 * 1024;
/// The longest a caught-up region is kept waiting for a new entry.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// A waiting poll looks again this often even when no bell rang, in case
/// a write reached the feed some other way than a batch put.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// A request on the link as a surface received it: who it says it is,
/// when it was made, its id, the body digest it declares, its MAC, and
/// what it asks.
pub struct LinkRequest<'a> {
    pub region: Option<&'a str>,
    pub at: Option<&'a str>,
    pub id: Option<&'a str>,
    pub body_sha256: Option<&'a str>,
    pub mac: Option<&'a str>,
    pub method: &'a str,
    /// The path and query.
    pub target: &'a str,
    /// The regions the connection's client certificate names (mutual TLS);
    /// none over plain HTTP.
    pub certified: Option<&'a [String]>,
}

/// A request home admitted from its head: the region it is, the body it
/// declared, and what the answer's MAC binds (`svc_core::link`).
pub struct Admitted {
    pub region: String,
    token: String,
    at: i64,
    target: String,
    body_sha256: String,
}

impl Admitted {
    /// The MAC of home's answer, for the region to check before using it.
    pub fn seal(&self, status: u16, head: Option<&str>, body: &[u8]) -> String {
        link::answer_mac(&self.token, self.at, &self.target, status, head, body)
    }

    /// The body read is the one the MAC'd head declared.
    pub fn check_body(&self, body: &[u8]) -> Result<()> {
        if link::body_digest(body) != self.body_sha256 {
            return Err(Error::detail(Code::Unauthorized, "the body is not the one the request declared"));
        }
        Ok(())
    }
}

/// Judged from the head alone, before a byte of the body is read: home, a
/// region it names, a time within the window, the region's MAC over the
/// head (the declared body digest among it), and an id not used before.
/// Anything else is `401`, and a replayed request changes nothing.
pub fn admit<R>(state: &R, request: &LinkRequest<'_>) -> Result<Admitted>
where
    R: HasConfig + HasClock + HasHome + HasLinkReplays,
{
    let Some(replication) = state.config().replication.as_ref().filter(|_| state.home_actors().is_some()) else {
        return Err(Error::new(Code::NotFound));
    };
    let refused = |why: &str| Error::detail(Code::Unauthorized, why.to_owned());
    let named = request.region.ok_or_else(|| refused("the request names no region"))?;
    let region = replication.regions.iter().find(|r| r.name == named).ok_or_else(|| refused("no such region"))?;
    // With TLS the certificate is the first factor and the MAC the second:
    // a region's stolen certificate or its stolen token alone does nothing.
    if state.config().tls.is_some() && !request.certified.is_some_and(|names| names.iter().any(|n| n == named)) {
        let shown = request.certified.map_or_else(|| "none".to_owned(), |names| format!("{names:?}"));
        return Err(Error::detail(
            Code::Unauthorized,
            format!("the client certificate names region {shown}; this request speaks for {named}"),
        ));
    }
    let at = request.at.and_then(|at| at.parse::<i64>().ok()).ok_or_else(|| refused("the request has no time"))?;
    let now = state.clock().now().0;
    if !link::fresh(at, now) {
        return Err(refused("the request's time is outside the window; are the clocks in step?"));
    }
    let id = request.id.filter(|id| link::valid_id(id)).ok_or_else(|| refused("the request has no valid id"))?;
    let body_sha256 = request.body_sha256.ok_or_else(|| refused("the request declares no body digest"))?;
    let head = link::RequestHead {
        region: &region.name,
        method: request.method,
        target: request.target,
        at_ms: at,
        id,
        body_sha256,
    };
    if !link::request_mac_matches(&region.token, request.mac.unwrap_or(""), &head) {
        return Err(refused("the request's MAC is not the region's"));
    }
    let first = state.link_replays().lock().unwrap_or_else(std::sync::PoisonError::into_inner).first_use(
        &region.name,
        id,
        at,
        now,
    );
    match first {
        Ok(()) => {}
        Err(link::Replay::Seen) => return Err(refused("this request was answered once already")),
        Err(link::Replay::BeforeStart) => {
            return Err(refused("the request was made before home started; send it again"));
        }
        Err(link::Replay::TooMany) => {
            return Err(Error::retry_after(Code::Unavailable, 1_000, "too many link requests in the window"));
        }
    }
    let (token, target, body_sha256) = (region.token.clone(), request.target.to_owned(), body_sha256.to_owned());
    Ok(Admitted { region: region.name.clone(), token, at, target, body_sha256 })
}

/// A region speaks for itself only: a report or lease naming another
/// region is refused, as a request with that region's token would need.
fn speaks_for(admitted: &str, named: &str) -> Result<()> {
    if admitted != named {
        let detail = format!("the token is region {admitted}'s; this names {named}");
        return Err(Error::detail(Code::Unauthorized, detail));
    }
    Ok(())
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::detail(Code::RequestInvalid, format!("postcard: {e}")))
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(value).map_err(Error::internal)
}

/// Waits until `fetch` finds something in `feed` or `wait_ms` (at most
/// 10 s) passed, looking again as soon as a write to the feed rings its
/// bell: a region hears of a new entry as soon as home stored it.
async fn long_poll<T>(
    store: &Store,
    feed: impl svc_store::Family,
    wait_ms: u64,
    fetch: impl Fn() -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    long_poll_looking(store, feed, wait_ms, LOOK_AGAIN, fetch).await
}

async fn long_poll_looking<T>(
    store: &Store,
    feed: impl svc_store::Family,
    wait_ms: u64,
    look_again: Duration,
    fetch: impl Fn() -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let until = monotonic() + Duration::from_millis(wait_ms).min(MAX_WAIT);
    // Listening starts before the first look, so a write between a look
    // and the wait still wakes it.
    let mut bell = store.bell(feed).ok_or_else(|| Error::internal(format!("{} has no bell", feed.name())))?;
    loop {
        bell.mark_unchanged();
        let found = fetch()?;
        let now = monotonic();
        if !found.is_empty() || now >= until {
            return Ok(found);
        }
        let wait = (until - now).min(look_again);
        if let Ok(Err(_closed)) = tokio::time::timeout(wait, bell.changed()).await {
            // The store is going away: no bell will ring, so just wait.
            tokio::time::sleep(wait).await;
        }
    }
}

/// A page of home's log: the frames of the entries after `after`, oldest
/// first (none once `wait_ms` passed with nothing new), and its head: home's
/// newest sequence number, from which the region knows its lag, and home's
/// running hash at `after`, against which the region checks its history
/// (`svc_core::log_chain::head_value`).
pub struct LogPage {
    pub frames: Vec<u8>,
    pub head: String,
}

pub async fn log_page(state: &impl HasStore, after: u64, wait_ms: u64) -> Result<LogPage> {
    let entries = long_poll(state.store(), crate::replication::REPLOG, wait_ms, || {
        chained_after(state.store(), after, MAX_ENTRIES).map_err(Error::from)
    })
    .await?;
    let head = crate::replication::last_seq(state.store())?;
    let at_after = if after == 0 { None } else { chain_at(state.store(), after)? };
    Ok(LogPage { frames: encode_frames(&entries, MAX_BYTES), head: log_chain::head_value(head, at_after.as_ref()) })
}

/// The claimed nonces after `after`, oldest first, and the feed's head.
pub async fn nonce_feed(state: &(impl HasStore + HasNonces), after: u64, wait_ms: u64) -> Result<Vec<u8>> {
    let entries = long_poll(state.store(), crate::replication::exchange::NONCE_FEED, wait_ms, || {
        exchange::feed_after(state.store(), after, MAX_ENTRIES * 10).map_err(Error::from)
    })
    .await?;
    let snapshot = state.nonces().call(NonceMsg::Observe).await?;
    encode(&FeedPage { head: snapshot.feed_seq, entries })
}

/// The ad facts after `after`, oldest first, with the feed's head, the
/// service's conversation secret wrapped for `region` (under a key of its
/// own token: never in clear on the link) and the take rate in force.
pub async fn ad_feed<R>(state: &R, region: &str, after: u64, wait_ms: u64) -> Result<Vec<u8>>
where
    R: HasConfig + HasStore + HasHome,
{
    state.home()?;
    let entries = long_poll(state.store(), crate::replication::exchange::AD_FEED, wait_ms, || {
        exchange::ad_feed_after(state.store(), after, MAX_ENTRIES * 10).map_err(Error::from)
    })
    .await?;
    let head = state.store().last_key(crate::replication::exchange::AD_FEED)?.and_then(|k| from_be(&k)).unwrap_or(0);
    let secret = crate::service::ads::reservations::conversation_secret(state)?;
    let token = region_token(state, region)?;
    let nonce = svc_clock::random::<{ svc_core::wrap::NONCE_LEN }>();
    let wrapped_secret = svc_core::wrap::wrap(&link::conversation_key(token), region.as_bytes(), nonce, &secret);
    let take_bps = crate::service::ads::reservations::take_rate(state)?;
    encode(&AdFeedPage { head, wrapped_secret, take_bps, entries })
}

/// A region's token, as home's config holds it.
fn region_token<'s>(state: &'s impl HasConfig, region: &str) -> Result<&'s str> {
    let replication = state.config().replication.as_ref().ok_or_else(|| Error::new(Code::NotFound))?;
    let named = replication.regions.iter().find(|r| r.name == region);
    named.map(|r| r.token.as_str()).ok_or_else(|| Error::detail(Code::Unauthorized, "no such region"))
}

/// A region's report: its receipt keys are certified, its claims join
/// home's nonce store (and so the feed), then its usage events and lease
/// returns are billed, in order.
pub async fn take_report<R>(state: &R, region: &str, body: &[u8]) -> Result<Vec<u8>>
where
    R: HasStore + HasRegistry + HasClock + HasHome + HasNonces + HasBilling + HasAds + HasAnalytics + HasMetrics,
{
    let report: Report = decode(body)?;
    speaks_for(region, &report.region)?;
    report.check(state.clock().now()).map_err(|e| Error::detail(Code::RequestInvalid, e))?;
    let publisher = &state.home_actors().as_ref().ok_or_else(|| Error::new(Code::NotFound))?.publisher;
    // A forged charge refuses the whole report before any of it is applied.
    for entry in &report.entries {
        if let Outgoing::AdFact(fact) = entry
            && let Some(charge) = fact.kind.charge()
        {
            crate::service::ads::ledger::check_charge(state, charge)?;
        }
    }
    let mut roots = state.store().batch();
    // What the nonce store, analytics and the ad actor take, in one pass.
    let (mut claims, mut events, mut facts) = (Vec::new(), Vec::new(), Vec::new());
    for entry in &report.entries {
        match entry {
            Outgoing::ReceiptRoot(root) => {
                // Kept under the reporting region's name, whatever the root says.
                let root = ReceiptRoot { region: report.region.clone(), ..root.clone() };
                crate::actors::receipt_folder::keep_at_home(&mut roots, &root, state.clock().now());
            }
            Outgoing::Introduced { key_id } => {
                if let Some(key) = state.registry().retrieval_key(key_id)? {
                    super::retrieval::mark_introduced(state.store(), publisher, key, state.clock().now()).await?;
                }
            }
            Outgoing::ReceiptKey { jwk } => {
                let key = serde_json::from_str(jwk)
                    .ok()
                    .and_then(|jwk| VerifyingKey::from_jwk(&jwk).ok())
                    .filter(|key| key.alg() == Alg::Ed25519)
                    .ok_or_else(|| Error::detail(Code::RequestInvalid, "a receipt key must be an Ed25519 JWK"))?;
                let (region, now) = (report.region.clone(), state.clock().now());
                publisher.call(|reply| PublisherMsg::CertifyReceiptKey { region, key, now, reply }).await??;
            }
            Outgoing::AdSettle { campaign_id, lease_id, used } => {
                let (region, now) = (&report.region, state.clock().now());
                // Shipped again after a lost answer, it finds its lease settled.
                if let Ok(change) =
                    crate::campaign_ledger::settle(state.store(), now, region, campaign_id, *lease_id, *used)?
                {
                    crate::service::writes::apply(state, change).await?;
                }
            }
            Outgoing::Claim(claim) => claims.push(claim.clone()),
            Outgoing::AdEvent(event) => events.push(event.clone()),
            Outgoing::AdFact(fact) => facts.push(fact.clone()),
            // Billing takes these below.
            Outgoing::Usage { .. } | Outgoing::Return { .. } => {}
        }
    }
    roots.commit()?;
    state.nonces().call(|reply| NonceMsg::Learn { claims, reply }).await??;
    if !events.is_empty() {
        let region = report.region.clone();
        state.analytics().call(|reply| AnalyticsMsg::TakeAdEvents { region, events, reply }).await??;
    }
    if !facts.is_empty() {
        let (region, now) = (report.region.clone(), state.clock().now());
        state.ads().call(|reply| AdMsg::Learn { region, facts, now, reply }).await??;
    }
    let taken = state.billing().call(|reply| BillingMsg::Take { report, reply }).await??;
    let reported = [("billed", taken.billed), ("already_billed", taken.already_billed)];
    for (outcome, n) in reported {
        state.metrics().count("svc_billing_reported_total", &[("outcome", outcome.to_owned())], n);
    }
    encode(&taken)
}

/// A region's own claims, shipped apart from its report: they join home's
/// nonce store and so the feed (a claim home holds is kept as it is).
pub async fn take_claims<R>(state: &R, region: &str, body: &[u8]) -> Result<Vec<u8>>
where
    R: HasClock + HasHome + HasNonces,
{
    let report: ClaimsReport = decode(body)?;
    speaks_for(region, &report.region)?;
    report.check(state.clock().now()).map_err(|e| Error::detail(Code::RequestInvalid, e))?;
    state.home_actors().as_ref().ok_or_else(|| Error::new(Code::NotFound))?;
    let claims = report.claims;
    state.nonces().call(|reply| NonceMsg::Learn { claims, reply }).await??;
    encode(&())
}

/// Keeps a run of a region's receipts (the analytics actor writes them,
/// with their counts); answers the last of the region's receipts home holds.
pub async fn take_receipts<R>(state: &R, region: &str, body: &[u8]) -> Result<Vec<u8>>
where
    R: HasClock + HasHome + HasAnalytics,
{
    let shipment: ReceiptsShipment = decode(body)?;
    speaks_for(region, &shipment.region)?;
    shipment.check(state.clock().now()).map_err(|e| Error::detail(Code::RequestInvalid, e))?;
    state.home_actors().as_ref().ok_or_else(|| Error::new(Code::NotFound))?;
    let through = state.analytics().call(|reply| AnalyticsMsg::TakeRegion { shipment, reply }).await??;
    encode(&ReceiptsTaken { through })
}

/// A slice of a campaign's money for the asking region (`ads::ledger`).
pub async fn grant_ad_lease<R>(state: &R, region: &str, body: &[u8]) -> Result<Vec<u8>>
where
    R: HasConfig + HasStore + HasClock + HasHome,
{
    let ask: crate::service::ads::ledger::AdLeaseAsk = decode(body)?;
    speaks_for(region, &ask.region)?;
    encode(&crate::service::ads::ledger::lease(state, &ask).await?)
}

/// A region hands a campaign's lease back with what it used.
pub async fn settle_ad_lease<R>(state: &R, region: &str, body: &[u8]) -> Result<Vec<u8>>
where
    R: HasStore + HasClock + HasHome,
{
    let settle: crate::service::ads::ledger::AdLeaseSettle = decode(body)?;
    speaks_for(region, &settle.region)?;
    crate::service::ads::ledger::settle(state, &settle).await?;
    encode(&())
}

/// Sets allowance units aside for a region.
pub async fn grant_lease(state: &(impl HasClock + HasBilling), region: &str, body: &[u8]) -> Result<Vec<u8>> {
    let ask: LeaseAsk = decode(body)?;
    speaks_for(region, &ask.region)?;
    ask.check().map_err(|e| Error::detail(Code::RequestInvalid, e))?;
    let now = state.clock().now();
    let grant = state.billing().call(|reply| BillingMsg::Grant { ask, now, reply }).await??;
    encode(&grant)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_store::be;

    /// The poll waits up to 10 s and would not look again by itself within
    /// the hour: only the bell can make it answer before its wait is over.
    #[tokio::test]
    async fn a_waiting_poll_answers_when_the_feed_is_written_not_when_its_wait_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fetch = {
            let store = store.clone();
            move || {
                Ok(if store.contains(crate::replication::exchange::AD_FEED, &be(1))? { vec![7u64] } else { Vec::new() })
            }
        };
        let started = monotonic();
        let waiting = tokio::spawn({
            let store = store.clone();
            let hour = Duration::from_secs(3_600);
            async move { long_poll_looking(&store, crate::replication::exchange::AD_FEED, 10_000, hour, fetch).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "nothing was in the feed yet");
        // Any bytes of a stored value ring the bell; the feed's type is not the test's.
        let mut batch = store.batch();
        batch.put_raw(crate::replication::exchange::AD_FEED, &be(1), &svc_store::encode_value(&7u64).unwrap());
        batch.commit().unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), vec![7]);
        assert!(started.elapsed() < MAX_WAIT, "the poll answered only when its wait was over");
    }

    #[tokio::test]
    async fn a_poll_with_nothing_new_answers_empty_when_its_wait_is_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fetch = || Ok(Vec::<u64>::new());
        assert!(long_poll(&store, crate::replication::REPLOG, 30, fetch).await.unwrap().is_empty());
        assert!(
            long_poll(&store, svc_store::cf::RECORDS, 30, fetch).await.is_err(),
            "a family without a bell is refused"
        );
    }
}
