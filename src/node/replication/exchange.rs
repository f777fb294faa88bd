//! What flows from read regions back to home, beside the log that flows out:
//! claimed nonces and usage events (so each (key id, nonce) is billed once
//! whichever regions served it, and a replay elsewhere is refused once the
//! fan-out lands), and allowance leases (so a region serves a prepay company
//! only against units home set aside for it).
//!
//! A region writes what it must report to its outbox in the same write as
//! the claim or the bill itself, so a crash loses nothing it answered; the
//! uplink ships the outbox in order and deletes it only once home took it.
//! Home takes a report idempotently, so a report sent twice counts once.
//! Claims have an outbox of their own, shipped the moment they are written:
//! the replay window is how long they take to go round, and a report that
//! waits on home's billing must not lengthen it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use svc_core::time::UnixMs;

use svc_store::cf::families;
use svc_store::model::{ReceiptRoot, StoredReceipt, UsageEvent};
use svc_store::{Batch, Store, StoreResult, Table, be, from_be};

/// A read region's reports to home, by sequence.
pub const OUTBOX: Table<Outgoing> = Table::new(families::OUTBOX, "be(seq)");
/// A read region's own claimed nonces until home holds them, by sequence.
pub const CLAIMS_OUT: Table<Claimed> = Table::new(families::CLAIMS_OUT, "be(seq)");
/// Home's fan-out of claimed nonces, by sequence.
pub const NONCE_FEED: Table<Claimed> = Table::new(families::NONCE_FEED, "be(seq)");
/// Home's ad facts, each with the region it came from, by sequence.
pub const AD_FEED: Table<(String, AdFact)> = Table::new(families::AD_FEED, "be(seq)");

/// A (key id, nonce) a region accepted, held until its signature expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    pub key_id: String,
    pub nonce: String,
    pub expires_secs: i64,
}

/// One thing a region reports to home, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outgoing {
    /// A claimed nonce, as builds before the claims outbox wrote them here
    /// (home still takes them; nothing writes them now).
    Claim(Claimed),
    /// A billed request, and the lease whose unit it spent (prepay only).
    Usage { event: UsageEvent, lease_id: Option<u64> },
    /// A lease the region no longer serves from; home credits back what
    /// was granted and not billed.
    Return { lease_id: u64 },
    /// A receipt key the region drew, for home to certify (its JWK as JSON).
    ReceiptKey { jwk: String },
    /// A folded minute of the region's receipts, for home to keep.
    ReceiptRoot(ReceiptRoot),
    /// A sandbox retrieval key's first request reached this region: home
    /// marks it introduced, so it no longer needs its grant anywhere.
    Introduced { key_id: String },
    /// A campaign's lease the region is done with, and what it spent of it
    /// (`svc_core::ads::reserve`): home settles its ledger.
    AdSettle { campaign_id: String, lease_id: u64, used: svc_core::ads::Micros },
    /// An accepted render or click, for the business's analytics.
    AdEvent(svc_store::model::AdEvent),
    /// What the other regions must know of the region's ads: home passes
    /// it on in its ad feed.
    AdFact(AdFact),
}

/// Something one region's ad actor saw that every region's judgements
/// depend on: the conversation rules (R3.11 to R3.13) and a key's pool pace
/// (R4.1.21) are one across regions. A region numbers its own, so home
/// takes each once however often a report is shipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdFact {
    pub seq: u64,
    pub at: UnixMs,
    pub kind: AdFactKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdFactKind {
    /// A render was accepted in a conversation (its digest) of an item.
    Rendered { conversation: String, item_id: String, key_id: String, charge: Option<Charge> },
    /// A click was accepted in a conversation of an item.
    Clicked { conversation: String, item_id: String, charge: Option<Charge> },
    /// A key asked for `pools` pools in a minute (since the last such fact).
    Pooled { key_id: String, minute: i64, pools: u64 },
}

impl AdFactKind {
    /// What the render or click charged, if anything.
    pub fn charge(&self) -> Option<&Charge> {
        match self {
            AdFactKind::Rendered { charge, .. } | AdFactKind::Clicked { charge, .. } => charge.as_ref(),
            AdFactKind::Pooled { .. } => None,
        }
    }
}

/// What a confirmation charged, so home can credit it back when another
/// region had charged the same conversation's render or click first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    pub campaign_id: String,
    pub amount: svc_core::ads::Micros,
    /// Where the business's analytics counted it.
    pub business_uuid: String,
    pub group_id: String,
    pub country: Option<String>,
}

impl Charge {
    fn check(&self) -> Result<(), OutOfRange> {
        check_id("a charge's campaign_id", &self.campaign_id)?;
        check_id("a charge's business_uuid", &self.business_uuid)?;
        check_id("a charge's group_id", &self.group_id)?;
        if self.country.as_deref().is_some_and(|c| !svc_core::ids::is_country(c)) {
            return Err(OutOfRange("a charge's country is not a country code".into()));
        }
        Ok(())
    }
}

impl AdFact {
    fn check(&self, now: UnixMs) -> Result<(), OutOfRange> {
        check_instant("an ad fact's time", self.at, now)?;
        match &self.kind {
            AdFactKind::Rendered { conversation, item_id, key_id, charge } => {
                check_id("a conversation", conversation)?;
                check_id("an item_id", item_id)?;
                check_id("a key_id", key_id)?;
                charge.as_ref().map_or(Ok(()), Charge::check)
            }
            AdFactKind::Clicked { conversation, item_id, charge } => {
                check_id("a conversation", conversation)?;
                check_id("an item_id", item_id)?;
                charge.as_ref().map_or(Ok(()), Charge::check)
            }
            AdFactKind::Pooled { key_id, minute, .. } => {
                check_id("a key_id", key_id)?;
                check_instant("a pooled minute", UnixMs(minute.saturating_mul(svc_core::time::MINUTE)), now)
            }
        }
    }
}

/// An ad fact as home passes it on: the region it came from (a region
/// skips its own) under the feed's sequence number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdFeedEntry {
    pub seq: u64,
    pub region: String,
    pub fact: AdFact,
}

/// A page of home's ad feed (`GET /internal/v1/ad-feed`): its newest
/// sequence number, the service's conversation secret (so every region
/// draws the same digest from a `session_ref`) wrapped under the asking
/// region's own key (`svc_core::link::conversation_key`), the take rate in
/// force, and the entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdFeedPage {
    pub head: u64,
    pub wrapped_secret: Vec<u8>,
    /// The take rate in force (basis points).
    pub take_bps: u32,
    pub entries: Vec<AdFeedEntry>,
}

impl AdFeedPage {
    /// Entries after `after`, in order, each fact in range; a wrapped
    /// secret of 32 bytes.
    pub fn check(&self, after: u64, now: UnixMs) -> Result<(), OutOfRange> {
        if self.wrapped_secret.len() != svc_core::wrap::NONCE_LEN + 32 + 16 {
            return Err(OutOfRange("home's wrapped conversation secret is not of 32 bytes".into()));
        }
        if self.take_bps > svc_core::ads::MAX_TAKE_BPS {
            return Err(OutOfRange(format!("a take rate of {} basis points is out of range", self.take_bps)));
        }
        let mut last = after;
        for entry in &self.entries {
            if entry.seq <= last {
                return Err(OutOfRange(format!("ad feed entry {} is not after {last}", entry.seq)));
            }
            last = entry.seq;
            check_id("an ad fact's region", &entry.region)?;
            entry.fact.check(now)?;
        }
        Ok(())
    }
}

/// A batch of a region's outbox, shipped to home (`POST /internal/v1/report`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub region: String,
    pub entries: Vec<Outgoing>,
}

/// A value a peer sent that is out of range, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OutOfRange(pub String);

impl From<OutOfRange> for String {
    fn from(out: OutOfRange) -> String {
        out.0
    }
}

/// The earliest instant a peer's value may name: before the service existed.
const EARLIEST: UnixMs = UnixMs(1_577_836_800_000); // 2020-01-01
/// How far past home's clock a region's stamp may be (clock skew).
const AHEAD_MS: i64 = 3_600_000;
/// The longest identifier a peer may send (key ids, uuids, nonces).
const MAX_ID: usize = 256;

fn check_id(what: &str, id: &str) -> Result<(), OutOfRange> {
    if id.is_empty() || id.len() > MAX_ID {
        return Err(OutOfRange(format!("{what} must be 1 to {MAX_ID} bytes")));
    }
    Ok(())
}

fn check_instant(what: &str, at: UnixMs, now: UnixMs) -> Result<(), OutOfRange> {
    if at < EARLIEST || at > now.plus(AHEAD_MS) {
        return Err(OutOfRange(format!("{what} {} is outside 2020 to an hour from now", at.0)));
    }
    Ok(())
}

impl Report {
    /// Every value in range, as home judges a peer's words before any of
    /// them reaches an actor: nothing a region sends can panic one.
    pub fn check(&self, now: UnixMs) -> Result<(), OutOfRange> {
        check_id("region", &self.region)?;
        for entry in &self.entries {
            match entry {
                Outgoing::Claim(claim) => claim.check(now)?,
                Outgoing::Usage { event, .. } => {
                    if event.region != self.region {
                        return Err(OutOfRange(format!(
                            "a usage event of region {} in {}'s report",
                            event.region, self.region
                        )));
                    }
                    for (what, id) in [
                        ("company_uuid", &event.company_uuid),
                        ("group_id", &event.group_id),
                        ("key_id", &event.key_id),
                        ("nonce", &event.nonce),
                        ("retrieval_id", &event.retrieval_id),
                    ] {
                        check_id(what, id)?;
                    }
                    check_instant("a usage event's time", event.at, now)?;
                }
                Outgoing::Return { .. } => {}
                Outgoing::ReceiptKey { jwk } => {
                    if jwk.len() > 4096 {
                        return Err(OutOfRange("a receipt key's JWK is over 4 KiB".into()));
                    }
                }
                Outgoing::Introduced { key_id } => check_id("an introduced key_id", key_id)?,
                Outgoing::AdSettle { campaign_id, .. } => check_id("a settled lease's campaign_id", campaign_id)?,
                Outgoing::AdEvent(event) => {
                    check_id("an ad event's business_uuid", &event.business_uuid)?;
                    check_id("an ad event's group_id", &event.group_id)?;
                    if event.country.as_deref().is_some_and(|c| !svc_core::ids::is_country(c)) {
                        return Err(OutOfRange("an ad event's country is not a country code".into()));
                    }
                    check_instant("an ad event's time", event.at, now)?;
                }
                Outgoing::AdFact(fact) => fact.check(now)?,
                Outgoing::ReceiptRoot(root) => {
                    check_instant("a receipt root's minute", root.minute, now)?;
                    if root.first_seq > root.last_seq {
                        return Err(OutOfRange("a receipt root's first_seq is after its last_seq".into()));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Receipts one shipment carries at most.
pub const SHIPMENT_MAX: usize = 500;
/// Envelope bytes one shipment carries at most (home reads 16 MiB at most);
/// a single larger receipt still goes alone.
pub const SHIPMENT_BYTES: usize = 8 << 20;
/// The largest receipt envelope home keeps (a search's is a few KiB).
const ENVELOPE_MAX: usize = 256 * 1024;
/// The most businesses one receipt names (a search answers at most 50 rows).
const BUSINESSES_MAX: usize = 100;

/// A run of a region's receipts in its receipt order, from `first_seq`, for
/// home to keep (`POST /internal/v1/receipts`): a group's receipts then
/// list whole at home, even after the region that issued them is lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptsShipment {
    pub region: String,
    pub first_seq: u64,
    pub receipts: Vec<StoredReceipt>,
}

/// Home's answer: the last of the region's receipts it holds. The region
/// ships on from there (a shipment that left a gap is not taken).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptsTaken {
    pub through: u64,
}

impl ReceiptsShipment {
    /// Every value in range and the receipts numbered on from `first_seq`.
    pub fn check(&self, now: UnixMs) -> Result<(), OutOfRange> {
        check_id("region", &self.region)?;
        if self.first_seq == 0 || self.receipts.len() > SHIPMENT_MAX {
            return Err(OutOfRange(format!("a shipment starts at a receipt after 0 and holds at most {SHIPMENT_MAX}")));
        }
        for (i, receipt) in self.receipts.iter().enumerate() {
            if receipt.seq != self.first_seq.saturating_add(i as u64) {
                return Err(OutOfRange(format!("receipt {} is not number {} of the shipment", receipt.seq, i)));
            }
            for (what, id) in [
                ("group_id", &receipt.group_id),
                ("company_uuid", &receipt.company_uuid),
                ("caller_key_id", &receipt.caller_key_id),
                ("retrieval_id", &receipt.retrieval_id),
            ] {
                check_id(what, id)?;
            }
            for business in &receipt.businesses {
                check_id("a business_uuid", business)?;
            }
            if let Some(country) = &receipt.country {
                check_id("country", country)?;
            }
            check_instant("a receipt's served_at", receipt.served_at, now)?;
            if receipt.envelope.len() > ENVELOPE_MAX || receipt.businesses.len() > BUSINESSES_MAX {
                return Err(OutOfRange(format!("receipt {} is larger than any answer", receipt.seq)));
            }
        }
        Ok(())
    }
}

/// A region's own claims, shipped apart from its report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimsReport {
    pub region: String,
    pub claims: Vec<Claimed>,
}

/// Claims one `ClaimsReport` carries at most.
pub const CLAIMS_MAX: usize = 2_000;

impl ClaimsReport {
    /// Every value in range, as `Report::check` judges a report's claims.
    pub fn check(&self, now: UnixMs) -> Result<(), OutOfRange> {
        check_id("region", &self.region)?;
        if self.claims.len() > CLAIMS_MAX {
            return Err(OutOfRange(format!("a claims report carries at most {CLAIMS_MAX} claims")));
        }
        self.claims.iter().try_for_each(|claim| claim.check(now))
    }
}

impl Claimed {
    fn check(&self, now: UnixMs) -> Result<(), OutOfRange> {
        check_id("a claim's key_id", &self.key_id)?;
        check_id("a claim's nonce", &self.nonce)?;
        if self.expires_secs < 0 || self.expires_secs > now.as_secs() + AHEAD_MS / 1000 {
            return Err(OutOfRange(format!("a claim's expiry {} is out of range", self.expires_secs)));
        }
        Ok(())
    }
}

impl FeedPage {
    /// A region judges home's words too: entries after `after`, in order,
    /// each claim in range.
    pub fn check(&self, after: u64, now: UnixMs) -> Result<(), OutOfRange> {
        let mut last = after;
        for entry in &self.entries {
            if entry.seq <= last {
                return Err(OutOfRange(format!("feed entry {} is not after {last}", entry.seq)));
            }
            last = entry.seq;
            entry.claimed.check(now)?;
        }
        Ok(())
    }
}

impl LeaseGrant {
    /// A grant answers the ask: the same company, units within what was
    /// asked, an expiry within a day.
    pub fn check(&self, ask: &LeaseAsk, now: UnixMs) -> Result<(), OutOfRange> {
        if self.company_uuid != ask.company_uuid {
            return Err(OutOfRange(format!(
                "a grant for {} answers an ask for {}",
                self.company_uuid, ask.company_uuid
            )));
        }
        if !(0..=ask.units).contains(&self.units) {
            return Err(OutOfRange(format!("{} units granted for {} asked", self.units, ask.units)));
        }
        if self.expires_at < now.minus(AHEAD_MS) || self.expires_at > now.plus(24 * AHEAD_MS) {
            return Err(OutOfRange(format!("a lease expiring at {} is out of range", self.expires_at.0)));
        }
        Ok(())
    }
}

/// The most units one lease may ask for.
pub const MAX_LEASE_UNITS: i64 = 1_000_000;

impl LeaseAsk {
    pub fn check(&self) -> Result<(), OutOfRange> {
        check_id("region", &self.region)?;
        check_id("company_uuid", &self.company_uuid)?;
        if !(1..=MAX_LEASE_UNITS).contains(&self.units) {
            return Err(OutOfRange(format!("units must be 1 to {MAX_LEASE_UNITS}")));
        }
        Ok(())
    }
}

/// What home made of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTaken {
    /// Usage events counted now.
    pub billed: u64,
    /// Usage events whose (key id, nonce) was counted before.
    pub already_billed: u64,
}

/// A region's request for allowance units (`POST /internal/v1/lease`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseAsk {
    pub region: String,
    pub company_uuid: String,
    pub units: i64,
}

/// Home's answer: units set aside for the region until `expires_at`. A
/// company without a prepay allowance gets `prepay: false` and no units: the
/// region serves it and reports usage. A prepay company whose allowance is
/// spent gets zero units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseGrant {
    pub lease_id: u64,
    pub company_uuid: String,
    pub prepay: bool,
    pub units: i64,
    pub expires_at: UnixMs,
}

/// One claimed nonce as home fans it out (`GET /internal/v1/nonces`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEntry {
    pub seq: u64,
    pub claimed: Claimed,
}

/// A page of home's nonce feed, with its newest sequence number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedPage {
    pub head: u64,
    pub entries: Vec<FeedEntry>,
}

/// Sequence numbers of a column family written in order by more than one
/// actor (a region's outbox; home's nonce feed).
pub struct Sequence<T = Outgoing> {
    table: Table<T>,
    last: Arc<AtomicU64>,
}

impl<T> Clone for Sequence<T> {
    fn clone(&self) -> Self {
        Sequence { table: self.table, last: self.last.clone() }
    }
}

impl<T: Serialize> Sequence<T> {
    /// Continues after the last key stored in `table`.
    pub fn open(store: &Store, table: Table<T>) -> StoreResult<Sequence<T>> {
        let last = store.last_key(table)?.and_then(|k| from_be(&k)).unwrap_or(0);
        Ok(Sequence { table, last: Arc::new(AtomicU64::new(last)) })
    }

    /// Adds `value` under the next sequence number to `batch`.
    pub fn append(&self, batch: &mut Batch<'_>, value: &T) -> u64 {
        let seq = self.last.fetch_add(1, Ordering::Relaxed) + 1;
        batch.put(self.table, &be(seq), value);
        seq
    }

    pub fn last(&self) -> u64 {
        self.last.load(Ordering::Relaxed)
    }
}

/// A region's outbox: what it still has to report to home.
pub fn outbox(store: &Store) -> StoreResult<Sequence> {
    Sequence::open(store, OUTBOX)
}

/// A region's outbox of its own claims.
pub fn claims_out(store: &Store) -> StoreResult<Sequence<Claimed>> {
    Sequence::open(store, CLAIMS_OUT)
}

/// Up to `max` claims waiting to go home, oldest first, with their keys.
pub fn claims_pending(store: &Store, max: usize) -> StoreResult<Vec<(Vec<u8>, Claimed)>> {
    store.scan::<Claimed>(CLAIMS_OUT, &[], None, max)
}

/// Home's feed of claimed nonces.
pub fn nonce_feed(store: &Store) -> StoreResult<Sequence<Claimed>> {
    Sequence::open(store, NONCE_FEED)
}

/// Home's feed of ad facts, its own and its regions' (`AdFeedEntry`
/// without its sequence number, which is its key).
pub fn ad_feed(store: &Store) -> StoreResult<Sequence<(String, AdFact)>> {
    Sequence::open(store, AD_FEED)
}

/// The ad feed's entries after `after`, oldest first.
pub fn ad_feed_after(store: &Store, after: u64, max: usize) -> StoreResult<Vec<AdFeedEntry>> {
    let from = be(after.saturating_add(1));
    let rows = store.scan::<(String, AdFact)>(AD_FEED, &[], Some(&from), max)?;
    Ok(rows
        .into_iter()
        .filter_map(|(k, (region, fact))| Some(AdFeedEntry { seq: from_be(&k)?, region, fact }))
        .collect())
}

/// Up to `max` outbox entries, oldest first, with their keys.
pub fn pending(store: &Store, max: usize) -> StoreResult<Vec<(Vec<u8>, Outgoing)>> {
    store.scan::<Outgoing>(OUTBOX, &[], None, max)
}

/// Deletes what home took from a region's outbox (`OUTBOX`) or claims
/// outbox (`CLAIMS_OUT`). Not synced: after a crash the entries are
/// shipped again, and home takes each once.
pub fn forget_taken(store: &Store, cf: impl svc_store::Family, keys: &[Vec<u8>]) -> StoreResult<()> {
    let mut batch = store.batch();
    for k in keys {
        batch.delete(cf, k);
    }
    batch.commit_unsynced()
}

/// How many outbox entries wait, and how many claims. Shipped entries are
/// deleted from the oldest on, so they are the run from the first key to
/// the last.
pub fn pending_count(store: &Store) -> StoreResult<(u64, u64)> {
    let run = |cf: svc_store::Named, first: Option<Vec<u8>>| -> StoreResult<u64> {
        let Some(first) = first else { return Ok(0) };
        let seq = |k: &[u8]| from_be(k).unwrap_or(0);
        let last = store.last_key(cf)?.map_or(0, |k| seq(&k));
        Ok(last.saturating_sub(seq(&first)) + 1)
    };
    let outbox = run(OUTBOX.named(), pending(store, 1)?.into_iter().next().map(|(k, _)| k))?;
    let claims = run(CLAIMS_OUT.named(), claims_pending(store, 1)?.into_iter().next().map(|(k, _)| k))?;
    Ok((outbox, claims))
}

/// The feed entries after `after`, oldest first.
pub fn feed_after(store: &Store, after: u64, max: usize) -> StoreResult<Vec<FeedEntry>> {
    let from = be(after.saturating_add(1));
    let rows = store.scan::<Claimed>(NONCE_FEED, &[], Some(&from), max)?;
    Ok(rows.into_iter().filter_map(|(k, claimed)| Some(FeedEntry { seq: from_be(&k)?, claimed })).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_continue_after_a_restart_and_the_feed_pages_from_a_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let feed = nonce_feed(&store).unwrap();
        let mut batch = store.batch();
        for n in 0..3 {
            let claimed = Claimed { key_id: "k".into(), nonce: format!("n{n}"), expires_secs: 10 };
            feed.append(&mut batch, &claimed);
        }
        batch.commit().unwrap();
        let reopened = nonce_feed(&store).unwrap();
        assert_eq!(reopened.last(), 3);
        let page = feed_after(&store, 1, 10).unwrap();
        assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(page[0].claimed.nonce, "n1");
    }

    #[test]
    fn the_outbox_counts_what_waits_after_the_uplink_took_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(pending_count(&store).unwrap(), (0, 0));
        let outbox = outbox(&store).unwrap();
        let mut batch = store.batch();
        for lease_id in 1..=5 {
            outbox.append(&mut batch, &Outgoing::Return { lease_id });
        }
        batch.commit().unwrap();
        assert_eq!(pending_count(&store).unwrap(), (5, 0));
        let mut shipped = store.batch();
        for (k, _) in pending(&store, 2).unwrap() {
            shipped.delete(OUTBOX, &k);
        }
        shipped.commit().unwrap();
        assert_eq!(pending_count(&store).unwrap(), (3, 0));
    }

    // A region judges home's words as home judges a region's: a feed page
    // out of order or a grant that answers another ask is never used.
    #[test]
    fn home_answers_out_of_range_are_refused() {
        let now = UnixMs(1_800_000_000_000);
        let claim = |seq: u64| FeedEntry {
            seq,
            claimed: Claimed { key_id: "k".into(), nonce: "n".repeat(20), expires_secs: now.as_secs() },
        };
        let page = |seqs: &[u64]| FeedPage { head: 9, entries: seqs.iter().map(|s| claim(*s)).collect() };
        assert!(page(&[4, 5, 9]).check(3, now).is_ok());
        assert!(page(&[3]).check(3, now).is_err(), "not after the cursor");
        assert!(page(&[5, 4]).check(3, now).is_err(), "out of order");
        let mut far = page(&[4]);
        far.entries[0].claimed.expires_secs = i64::MAX;
        assert!(far.check(3, now).is_err());

        let ask = LeaseAsk { region: "eu".into(), company_uuid: "c".into(), units: 10 };
        let grant =
            LeaseGrant { lease_id: 1, company_uuid: "c".into(), prepay: true, units: 10, expires_at: now.plus(60_000) };
        assert!(grant.check(&ask, now).is_ok());
        for bad in [
            LeaseGrant { units: 11, ..grant.clone() },
            LeaseGrant { units: -1, ..grant.clone() },
            LeaseGrant { company_uuid: "d".into(), ..grant.clone() },
            LeaseGrant { expires_at: UnixMs(i64::MAX), ..grant.clone() },
        ] {
            assert!(bad.check(&ask, now).is_err(), "{bad:?}");
        }
    }
}
