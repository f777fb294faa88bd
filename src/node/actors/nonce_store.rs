//! Claims (key id, nonce) pairs: each is accepted once, held until its
//! signature expires, and persisted so a restart still refuses it.
//!
//! Across regions: a read region writes each claim to its claims outbox in
//! the same write (the claim uplink ships it home at once); home writes each claim it
//! learns, its own or a region's, to the nonce feed in the same write, and
//! every region learns the feed. Once a claim has gone round, a replay to
//! any region is refused.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::keys::{Signed, verify_all};
use svc_core::time::UnixMs;
use tokio::sync::Notify;

use crate::actors::error::ActorError;
use crate::actors::gather::{Gather, answer_each};
use crate::replication::exchange::{Claimed, FeedEntry, Sequence};
use svc_store::{Store, StoreResult, be, cf, from_be, keys};

/// Where the feed cursor of a read region is kept.
const FEED_CURSOR: &[u8] = keys::meta::NONCE_FEED_CURSOR;
/// Feed entries read per purge step at home. The feed is read to find how
/// far its head expired; the purge re-queues itself behind the claims that
/// arrived meanwhile, so no step holds them long.
const FEED_STEP: usize = 1_000;

pub enum NonceMsg {
    /// Claims a nonce once the request's signature holds (`signed`, checked
    /// in one batch with the claims gathered beside it; `None` when the
    /// caller checked it).
    Claim {
        key_id: String,
        nonce: String,
        expires_secs: i64,
        now: UnixMs,
        signed: Option<Box<Signed>>,
        /// The claim's answer; an error when it could not be recorded (the
        /// caller is asked to come back, not refused).
        reply: RpcReplyPort<Result<ClaimAnswer, ActorError>>,
    },
    /// Writes the claims gathered meanwhile, in one write, and answers them.
    Flush,
    /// Home: claims a region reported. Each new one joins the feed.
    Learn {
        claims: Vec<Claimed>,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    /// A read region: a page of home's feed, applied with its cursor.
    LearnFeed {
        entries: Vec<FeedEntry>,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    /// A read region: home's feed is behind this region's cursor (home's
    /// store was restored), so the feed is read again from its start.
    RewindFeed(RpcReplyPort<Result<(), ActorError>>),
    /// Forgets nonces whose signatures have expired.
    Purge {
        now: UnixMs,
    },
    Observe(RpcReplyPort<NonceSnapshot>),
}

/// What a claim answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimAnswer {
    /// Not seen before: held from now on.
    Fresh,
    /// Seen before: a replay.
    Reused,
    /// The request's signature does not hold; nothing was claimed.
    SignatureInvalid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceSnapshot {
    pub held: usize,
    /// Signatures checked, and the batches they were checked in (a batch
    /// of one checked alone).
    pub signatures: u64,
    pub signature_batches: u64,
    /// Home: the feed's newest sequence number. A region: the last one it learned.
    pub feed_seq: u64,
}

/// What a node does with a claim besides holding it.
#[derive(Clone)]
pub enum NonceRole {
    /// Home: every new claim joins the feed.
    Home { feed: Sequence<Claimed> },
    /// A read region: every claim of its own goes to its claims outbox,
    /// and wakes the claim uplink.
    Region { claims_out: Sequence<Claimed>, wake: Arc<Notify> },
}

pub struct NonceArgs {
    pub store: Store,
    pub role: NonceRole,
    /// Most claims one write holds (`Config::answers_per_write`).
    pub per_write: usize,
}

#[derive(Clone)]
pub struct NonceStore;

pub struct NonceState {
    store: Store,
    role: NonceRole,
    held: Held,
    /// A read region's position in home's feed.
    feed_cursor: u64,
    /// Home: the feed is dropped up to here. The next purge step reads on
    /// from it, not over the deletions of the steps before.
    feed_dropped: u64,
    /// Claims waiting for the next write.
    claims: Gather<Gathered>,
    signatures: u64,
    signature_batches: u64,
}

/// A claim waiting for the next write: what it claims, when it was asked
/// (Unix seconds), the signature still to check, and whom to answer.
type Gathered = (Claimed, i64, Option<Box<Signed>>, RpcReplyPort<Result<ClaimAnswer, ActorError>>);

type Claim = Arc<(String, String)>;

/// The claims held: (key id, nonce) → expires (Unix seconds), and the same
/// claims by expiry, so a purge takes the oldest without a pass over all.
#[derive(Default)]
struct Held {
    expires: HashMap<Claim, i64>,
    by_expiry: BTreeMap<i64, Vec<Claim>>,
}

impl Held {
    fn get(&self, k: &(String, String)) -> Option<i64> {
        self.expires.get(k).copied()
    }

    fn insert(&mut self, k: (String, String), expires: i64) {
        let k = Arc::new(k);
        self.by_expiry.entry(expires).or_default().push(k.clone());
        self.expires.insert(k, expires);
    }

    fn len(&self) -> usize {
        self.expires.len()
    }

    /// Takes every claim that expired before `cutoff`, by expiry. They
    /// stay held until `forget`.
    fn take_expired(&mut self, cutoff: i64) -> BTreeMap<i64, Vec<Claim>> {
        let live = self.by_expiry.split_off(&cutoff);
        std::mem::replace(&mut self.by_expiry, live)
    }

    /// Forgets taken claims, except those held again under a later expiry.
    fn forget(&mut self, taken: BTreeMap<i64, Vec<Claim>>) {
        for (at, claims) in taken {
            for k in claims {
                if self.expires.get(&k) == Some(&at) {
                    self.expires.remove(&k);
                }
            }
        }
    }

    /// Lists taken claims again (their forgetting was not written).
    fn untake(&mut self, taken: BTreeMap<i64, Vec<Claim>>) {
        for (at, mut claims) in taken {
            self.by_expiry.entry(at).or_default().append(&mut claims);
        }
    }
}

/// The claims the store holds, those of an older build rekeyed first.
fn load_claims(store: &Store) -> StoreResult<Held> {
    let rekeyed = rekey_claims_by_expiry(store)?;
    if rekeyed > 0 {
        tracing::info!(rekeyed, "stored claimed nonces again under their expiry");
    }
    let mut held = Held::default();
    store.walk(cf::NONCES, &[], None, |k, ()| {
        // A claim held again after it expired is stored twice: the later
        // expiry wins.
        if let Some((expires, key_id, nonce)) = keys::parse_nonce(k)
            && held.get(&(key_id.clone(), nonce.clone())).is_none_or(|held| held < expires)
        {
            held.insert((key_id, nonce), expires);
        }
        true
    })?;
    Ok(held)
}

/// Rewrites claims stored by a build that keyed them by key id and nonce,
/// with the expiry as the value, under their expiry; answers how many. Such
/// keys begin with a key id's first character, never with the 0 byte an
/// expiry before 2^56 begins with.
fn rekey_claims_by_expiry(store: &Store) -> StoreResult<usize> {
    let legacy = store.scan_all(cf::LEGACY_NONCES, &[])?;
    if legacy.is_empty() {
        return Ok(0);
    }
    let mut batch = store.batch();
    for (k, expires) in &legacy {
        // The old key is the key id and nonce as `keys::nonce` joins them.
        batch.put(cf::NONCES, &[&keys::nonce_expiry(*expires)[..], k].concat(), &());
        batch.delete(cf::LEGACY_NONCES, k);
    }
    batch.commit()?;
    Ok(legacy.len())
}

impl NonceState {
    fn is_held(&self, k: &(String, String), now_secs: i64) -> bool {
        self.held.get(k).is_some_and(|expires| expires >= now_secs)
    }

    /// Holds the claims not held yet, in one write; answers which were new,
    /// claim by claim (a claim twice in `claims` is new once).
    fn hold(&mut self, claims: Vec<Claimed>, from_feed: Option<u64>, now_secs: i64) -> Result<Vec<bool>, ActorError> {
        let mut batch = self.store.batch();
        let mut fresh = Vec::new();
        let mut new = Vec::with_capacity(claims.len());
        let mut seen = std::collections::HashSet::new();
        for claimed in claims {
            let k = (claimed.key_id.clone(), claimed.nonce.clone());
            let is_new = !self.is_held(&k, now_secs) && seen.insert(k.clone());
            new.push(is_new);
            if !is_new {
                continue;
            }
            batch.put(cf::NONCES, &keys::nonce(claimed.expires_secs, &k.0, &k.1), &());
            match (&self.role, from_feed) {
                (NonceRole::Home { feed }, _) => {
                    feed.append(&mut batch, &claimed);
                }
                (NonceRole::Region { claims_out, .. }, None) => {
                    claims_out.append(&mut batch, &claimed);
                }
                (NonceRole::Region { .. }, Some(_)) => {}
            }
            fresh.push((k, claimed.expires_secs));
        }
        if let Some(cursor) = from_feed {
            batch.put(cf::meta::NONCE_FEED_CURSOR, FEED_CURSOR, &cursor);
        }
        if batch.is_empty() {
            return Ok(new);
        }
        // Not synced: a crash of the process keeps it (the WAL is written).
        batch.commit_unsynced().map_err(ActorError::from)?;
        if let Some(cursor) = from_feed {
            self.feed_cursor = cursor;
        }
        if let (NonceRole::Region { wake, .. }, None, false) = (&self.role, from_feed, fresh.is_empty()) {
            wake.notify_one();
        }
        for (k, expires) in fresh {
            self.held.insert(k, expires);
        }
        Ok(new)
    }

    /// Holds the claims gathered, in one write, and answers each.
    fn write_claims(&mut self, gathered: Vec<Gathered>) {
        // A claim held until a moment between the earliest ask and a later
        // one still counts as held: the gathering never admits a replay a
        // claim written on its own would refuse.
        let Some(now_secs) = gathered.iter().map(|(_, at, _, _)| *at).min() else { return };
        // Step 6 for the whole gathering at once, before any nonce is
        // claimed: a forged request never burns one.
        let mut gathered = gathered;
        let (places, checks): (Vec<usize>, Vec<Signed>) =
            gathered.iter_mut().enumerate().filter_map(|(n, g)| g.2.take().map(|s| (n, *s))).unzip();
        let mut holds = vec![true; gathered.len()];
        for (n, verdict) in places.into_iter().zip(verify_all(&checks)) {
            holds[n] = verdict;
        }
        self.signatures += checks.len() as u64;
        self.signature_batches += u64::from(!checks.is_empty());
        let (mut claims, mut replies) = (Vec::new(), Vec::new());
        for ((claimed, _, _, reply), holds) in gathered.into_iter().zip(holds) {
            if holds {
                claims.push(claimed);
                replies.push(reply);
            } else {
                let _ = reply.send(Ok(ClaimAnswer::SignatureInvalid));
            }
        }
        if claims.is_empty() {
            return;
        }
        // A nonce store that cannot persist must not accept; the callers
        // hear that, not that their nonces were used.
        let written = self.hold(claims, None, now_secs);
        let answers = written
            .map(|fresh| fresh.into_iter().map(|f| if f { ClaimAnswer::Fresh } else { ClaimAnswer::Reused }).collect());
        answer_each(replies, answers);
    }

    /// Forgets every nonce whose signature expired before `now`, in one
    /// write with one range tombstone; at home, drops a step of the feed's
    /// expired head with it. Answers whether more of the feed is waiting.
    fn purge_step(&mut self, now: UnixMs) -> StoreResult<bool> {
        let cutoff = now.as_secs();
        // Read before any claim is taken: a failed read leaves them held.
        let from = be(self.feed_dropped + 1);
        let head = match &self.role {
            NonceRole::Home { feed } => Some((
                be(feed.last()),
                self.store.scan::<Claimed>(crate::replication::exchange::NONCE_FEED, &[], Some(&from), FEED_STEP)?,
            )),
            NonceRole::Region { .. } => None,
        };
        let expired = self.held.take_expired(cutoff);
        let mut batch = self.store.batch();
        if !expired.is_empty() {
            batch.delete_range(cf::NONCES, &keys::nonce_expiry(0), &keys::nonce_expiry(cutoff));
        }
        let mut more = false;
        let mut dropped_to = self.feed_dropped;
        if let Some((newest, head)) = head {
            // The feed is nearly in expiry order: drop its expired head, but
            // never its newest entry, from which the sequence goes on after
            // a restart (regions' cursors count on it).
            let dropped = head.iter().take_while(|(k, claimed)| claimed.expires_secs < cutoff && *k != newest).count();
            if let Some((last, _)) = dropped.checked_sub(1).map(|i| &head[i]) {
                dropped_to = from_be(last).unwrap_or(dropped_to);
                batch.delete_range(crate::replication::exchange::NONCE_FEED, &from, &be(dropped_to + 1));
            }
            more = dropped == FEED_STEP;
        }
        if batch.is_empty() {
            return Ok(false);
        }
        // Forgotten in memory only once the store forgot them too.
        match batch.commit_unsynced() {
            Ok(()) => {
                self.held.forget(expired);
                self.feed_dropped = dropped_to;
                Ok(more)
            }
            Err(e) => {
                self.held.untake(expired);
                Err(e)
            }
        }
    }

    fn feed_seq(&self) -> u64 {
        match &self.role {
            NonceRole::Home { feed } => feed.last(),
            NonceRole::Region { .. } => self.feed_cursor,
        }
    }
}

impl Actor for NonceStore {
    type Msg = NonceMsg;
    type State = NonceState;
    type Arguments = NonceArgs;

    async fn pre_start(&self, _me: ActorRef<NonceMsg>, args: NonceArgs) -> Result<NonceState, ActorProcessingErr> {
        let held = load_claims(&args.store)?;
        let feed_cursor = args.store.get::<u64>(cf::meta::NONCE_FEED_CURSOR, FEED_CURSOR)?.unwrap_or(0);
        Ok(NonceState {
            store: args.store,
            role: args.role,
            held,
            feed_cursor,
            feed_dropped: 0,
            claims: Gather::new(args.per_write),
            signatures: 0,
            signature_batches: 0,
        })
    }

    async fn handle(
        &self,
        me: ActorRef<NonceMsg>,
        msg: NonceMsg,
        state: &mut NonceState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NonceMsg::Claim { key_id, nonce, expires_secs, now, signed, reply } => {
                // The first claim of a gathering lets the requests running
                // beside it reach their claims first, so their signatures
                // join its batch (else the store is rarely busy enough for
                // a second to queue, and every batch is of one).
                if signed.is_some() && !state.claims.is_open() {
                    tokio::task::yield_now().await;
                }
                let claimed = Claimed { key_id, nonce, expires_secs };
                let gathered = state.claims.gather((claimed, now.as_secs(), signed, reply), &me, NonceMsg::Flush);
                state.write_claims(gathered);
            }
            NonceMsg::Flush => {
                let gathered = state.claims.flushed();
                state.write_claims(gathered);
            }
            NonceMsg::Learn { claims, reply } => {
                // Expired claims are held too: an expired signature is
                // refused anyway, and the purge forgets them.
                let _ = reply.send(state.hold(claims, None, i64::MIN).map(|_| ()));
            }
            NonceMsg::RewindFeed(reply) => {
                let rewound = state.store.put(cf::meta::NONCE_FEED_CURSOR, FEED_CURSOR, &0u64);
                if rewound.is_ok() {
                    state.feed_cursor = 0;
                }
                let _ = reply.send(rewound.map_err(ActorError::from));
            }
            NonceMsg::LearnFeed { entries, reply } => {
                let Some(last) = entries.last().map(|e| e.seq) else {
                    let _ = reply.send(Ok(()));
                    return Ok(());
                };
                let claims = entries.into_iter().map(|e| e.claimed).collect();
                let _ = reply.send(state.hold(claims, Some(last), i64::MIN).map(|_| ()));
            }
            NonceMsg::Purge { now } => {
                // The next step queues behind the claims that came meanwhile.
                // (A stopping actor refuses it; the next start purges.)
                match state.purge_step(now) {
                    Ok(true) => {
                        let _ = me.send_message(NonceMsg::Purge { now });
                    }
                    Ok(false) => {}
                    // A store that cannot write (a full disk) keeps the claims
                    // held, and the next tick tries again: failing here would
                    // spend the supervisor's restarts on a passing condition.
                    Err(e) => tracing::warn!(error = %e, "purging expired nonces failed; trying again next tick"),
                }
            }
            NonceMsg::Observe(reply) => {
                let _ = reply.send(NonceSnapshot {
                    held: state.held.len(),
                    feed_seq: state.feed_seq(),
                    signatures: state.signatures,
                    signature_batches: state.signature_batches,
                });
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for NonceMsg {
    type Seen = NonceSnapshot;

    fn observe(reply: ractor::RpcReplyPort<NonceSnapshot>) -> Self {
        NonceMsg::Observe(reply)
    }

    fn describe(seen: NonceSnapshot) -> serde_json::Value {
        serde_json::json!({"held": seen.held, "feed_seq": seen.feed_seq})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::exchange;

    fn claimed(nonce: &str) -> Claimed {
        Claimed { key_id: "k".into(), nonce: nonce.into(), expires_secs: 2_000_000_000 }
    }

    fn state(store: &Store, home: bool) -> NonceState {
        let role = if home {
            NonceRole::Home { feed: exchange::nonce_feed(store).unwrap() }
        } else {
            NonceRole::Region { claims_out: exchange::claims_out(store).unwrap(), wake: Default::default() }
        };
        NonceState {
            store: store.clone(),
            role,
            held: Held::default(),
            feed_cursor: 0,
            feed_dropped: 0,
            claims: Gather::new(1),
            signatures: 0,
            signature_batches: 0,
        }
    }

    #[test]
    fn the_feed_keeps_counting_after_every_claim_expired_and_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut home = state(&store, true);
        let old = |n: &str| Claimed { key_id: "k".into(), nonce: n.into(), expires_secs: 1_000 };
        home.hold(vec![old("a"), old("b"), old("c")], None, i64::MIN).unwrap();
        assert_eq!(home.feed_seq(), 3);
        assert!(!home.purge_step(UnixMs(5_000_000)).unwrap(), "one step forgets them all");
        assert_eq!(home.held.len(), 0, "every claim expired");
        let left = exchange::feed_after(&store, 0, 10).unwrap();
        assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), [3], "the newest entry stays");
        // Reopened, the sequence goes on: a region at cursor 3 sees the next claim.
        let mut home = state(&store, true);
        home.hold(vec![claimed("d")], None, i64::MIN).unwrap();
        assert_eq!(exchange::feed_after(&store, 3, 10).unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);
    }

    /// The claims the store holds, as (expires, key id, nonce), by expiry.
    fn stored(store: &Store) -> Vec<(i64, String, String)> {
        let keys: Vec<(Vec<u8>, ())> = store.scan_all(cf::NONCES, &[]).unwrap();
        keys.iter().map(|(k, ())| keys::parse_nonce(k).expect("a claim's key")).collect()
    }

    // rule: R5.36, R5.38
    #[test]
    fn a_purge_forgets_every_expired_claim_at_once_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut region = state(&store, false);
        let expiring = |n: usize, at: i64| Claimed { key_id: "k".into(), nonce: format!("n{n}"), expires_secs: at };
        // More than a feed step expired, over two seconds; ten still valid.
        let old: Vec<Claimed> = (0..FEED_STEP + 5).map(|n| expiring(n, 1_000 + i64::from(n >= 3))).collect();
        let live: Vec<Claimed> = (0..10).map(|n| expiring(FEED_STEP + 100 + n, 5_000)).collect();
        region.hold(old.clone(), None, i64::MIN).unwrap();
        region.hold(live.clone(), None, i64::MIN).unwrap();
        // Claimed again once expired, a claim is kept until its new expiry.
        assert_eq!(region.hold(vec![expiring(3, 4_500)], None, 4_000).unwrap(), [true]);
        assert_eq!(stored(&store).len(), old.len() + live.len() + 1);
        let now = UnixMs(4_000_000);
        assert!(!region.purge_step(now).unwrap(), "a region's purge is one step");
        assert_eq!(region.held.len(), live.len() + 1);
        assert_eq!(region.held.get(&("k".into(), "n3".into())), Some(4_500));
        assert!(region.held.get(&("k".into(), "n4".into())).is_none());
        let kept: Vec<i64> = stored(&store).iter().map(|(expires, _, _)| *expires).collect();
        assert_eq!(kept, [vec![4_500], vec![5_000; 10]].concat(), "the store forgot the same claims");
        // Still refused while valid, and after a restart.
        assert_eq!(region.hold(vec![live[0].clone()], None, 4_000).unwrap(), [false]);
        let reloaded = load_claims(&store).unwrap();
        assert_eq!(reloaded.len(), live.len() + 1);
        assert_eq!(reloaded.get(&("k".into(), "n3".into())), Some(4_500));

        // Home drops its feed's expired head a step at a time, all but the newest.
        let home_dir = tempfile::tempdir().unwrap();
        let home_store = Store::open(home_dir.path()).unwrap();
        let mut home = state(&home_store, true);
        home.hold(old.clone(), None, i64::MIN).unwrap();
        assert!(home.purge_step(now).unwrap(), "a full step says more are waiting");
        assert_eq!(exchange::feed_after(&home_store, 0, 10).unwrap()[0].seq, FEED_STEP as u64 + 1);
        assert!(!home.purge_step(now).unwrap());
        let left = exchange::feed_after(&home_store, 0, 10).unwrap();
        assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), [old.len() as u64]);
        assert!(stored(&home_store).is_empty());
    }

    #[test]
    fn claims_an_older_build_stored_by_key_id_are_kept_under_their_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // The older layout: key id, nonce → expires.
        let mut batch = store.batch();
        batch.put(cf::LEGACY_NONCES, &keys::key(&[b"k", b"n1"]), &5_000i64);
        batch.put(cf::LEGACY_NONCES, &keys::key(&[b"k", b"n2"]), &1_000i64);
        batch.commit().unwrap();
        let held = load_claims(&store).unwrap();
        assert_eq!(
            (held.get(&("k".into(), "n1".into())), held.get(&("k".into(), "n2".into()))),
            (Some(5_000), Some(1_000))
        );
        assert_eq!(stored(&store), [(1_000, "k".into(), "n2".into()), (5_000, "k".into(), "n1".into())]);
        // Rekeyed once: the old keys are gone, so loading again is the same.
        assert_eq!(rekey_claims_by_expiry(&store).unwrap(), 0);
        let mut region = state(&store, false);
        region.held = held;
        assert_eq!(
            region
                .hold(vec![Claimed { key_id: "k".into(), nonce: "n1".into(), expires_secs: 5_000 }], None, 4_000)
                .unwrap(),
            [false]
        );
    }

    // rule: R5.36
    #[test]
    fn a_claim_goes_round_once_region_to_home_to_every_region() {
        let (eu_dir, home_dir, ap_dir) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (eu_store, home_store, ap_store) = (
            Store::open(eu_dir.path()).unwrap(),
            Store::open(home_dir.path()).unwrap(),
            Store::open(ap_dir.path()).unwrap(),
        );
        let (mut eu, mut home, mut ap) = (state(&eu_store, false), state(&home_store, true), state(&ap_store, false));
        let now = 1_795_000_000;

        assert_eq!(eu.hold(vec![claimed("n1")], None, now).unwrap(), [true], "eu serves n1");
        assert_eq!(eu.hold(vec![claimed("n1")], None, now).unwrap(), [false], "a replay at eu is refused");
        let outbox = exchange::claims_pending(&eu_store, 10).unwrap();
        assert_eq!(outbox.len(), 1, "the claim waits in eu's claims outbox");
        assert!(exchange::pending(&eu_store, 10).unwrap().is_empty(), "not in the report's outbox");
        let shipped = &outbox[0].1;

        home.hold(vec![shipped.clone()], None, i64::MIN).unwrap();
        home.hold(vec![shipped.clone()], None, i64::MIN).unwrap();
        let page = exchange::feed_after(&home_store, 0, 10).unwrap();
        assert_eq!(page.len(), 1, "a report taken twice joins the feed once");

        ap.hold(page.iter().map(|e| e.claimed.clone()).collect(), Some(page[0].seq), i64::MIN).unwrap();
        assert_eq!(ap.feed_cursor, 1);
        assert_eq!(
            ap.hold(vec![claimed("n1")], None, now).unwrap(),
            [false],
            "once learned, a replay at ap is refused"
        );
        assert!(exchange::claims_pending(&ap_store, 10).unwrap().is_empty(), "what ap learned is not reported back");
    }

    // Issue 51, as an attacker: a forged request among requests that queue
    // together is refused, and the nonce it carried is not burned; the
    // others' signatures are checked in the same batch.
    #[tokio::test]
    async fn a_forged_signature_in_a_gathering_is_refused_without_claiming_its_nonce() {
        use svc_core::keys::{Alg, SigningKey};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let role = NonceRole::Home { feed: exchange::nonce_feed(&store).unwrap() };
        let (actor, handle) =
            Actor::spawn(None, NonceStore, NonceArgs { store: store.clone(), role, per_write: 256 }).await.unwrap();
        let key = SigningKey::from_seed(Alg::Ed25519, &[7; 32]).unwrap();
        let claim = |nonce: &str, forged: bool| {
            let message = format!("signature base of {nonce}").into_bytes();
            let mut signature = key.sign(&message);
            if forged {
                signature[0] ^= 1;
            }
            let signed = Signed { key: key.verifying_key(), message, signature };
            let (reply, answer) = ractor::concurrency::oneshot();
            let claim = NonceMsg::Claim {
                key_id: "k".into(),
                nonce: nonce.into(),
                expires_secs: 2_000_000_000,
                now: UnixMs(1_795_000_000_000),
                signed: Some(Box::new(signed)),
                reply: reply.into(),
            };
            actor.send_message(claim).unwrap();
            answer
        };
        // Sent before the actor runs: one gathering.
        let answers: Vec<_> = (0..8).map(|n| claim(&format!("n{n}"), n == 5)).collect();
        let mut got = Vec::new();
        for answer in answers {
            got.push(answer.await.unwrap().unwrap());
        }
        let mut expected = vec![ClaimAnswer::Fresh; 8];
        expected[5] = ClaimAnswer::SignatureInvalid;
        assert_eq!(got, expected);
        let seen = actor.call(NonceMsg::Observe, None).await.unwrap().unwrap();
        assert_eq!((seen.held, seen.signatures, seen.signature_batches), (7, 8, 1));
        // The nonce the forgery carried is still the signer's to use.
        assert_eq!(claim("n5", false).await.unwrap().unwrap(), ClaimAnswer::Fresh);
        assert_eq!(claim("n5", false).await.unwrap().unwrap(), ClaimAnswer::Reused);
        actor.stop(None);
        handle.await.unwrap();
    }

    /// Claims sent to the actor all at once, as concurrent requests do,
    /// answered when the actor's queue is drained: `per_write` at most per
    /// write. Answers each claim's answer and the writes the store made.
    async fn claim_at_once(nonces: &[&str], per_write: usize) -> (Vec<bool>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let role = NonceRole::Home { feed: exchange::nonce_feed(&store).unwrap() };
        let (actor, handle) =
            Actor::spawn(None, NonceStore, NonceArgs { store: store.clone(), role, per_write }).await.unwrap();
        let writes = store.writes();
        // On this test's one thread, every claim is queued before the actor
        // handles the first.
        let answers: Vec<_> = nonces
            .iter()
            .map(|nonce| {
                let (reply, answer) = ractor::concurrency::oneshot();
                let claim = NonceMsg::Claim {
                    key_id: "k".into(),
                    nonce: (*nonce).into(),
                    expires_secs: 2_000_000_000,
                    now: UnixMs(1_795_000_000_000),
                    signed: None,
                    reply: reply.into(),
                };
                actor.send_message(claim).unwrap();
                answer
            })
            .collect();
        let mut fresh = Vec::new();
        for answer in answers {
            fresh.push(answer.await.unwrap().unwrap() == ClaimAnswer::Fresh);
        }
        let writes = store.writes() - writes;
        actor.stop(None);
        handle.await.unwrap();
        (fresh, writes)
    }

    // rule: R5.36
    #[tokio::test]
    async fn claims_that_queue_together_are_written_together_and_a_replay_among_them_is_refused() {
        let nonces: Vec<String> = (0..40).map(|n| format!("n{n}")).collect();
        let mut asked: Vec<&str> = nonces.iter().map(String::as_str).collect();
        asked.insert(20, "n3");
        let (fresh, writes) = claim_at_once(&asked, 256).await;
        assert_eq!(writes, 1, "forty-one claims, one write");
        let refused: Vec<usize> = fresh.iter().enumerate().filter(|(_, f)| !**f).map(|(i, _)| i).collect();
        assert_eq!(refused, [20], "the replayed n3 is refused, every other claim is new");
        let (fresh, writes) = claim_at_once(&asked, 16).await;
        assert_eq!(writes, 3, "at most sixteen a write");
        assert_eq!(fresh.iter().filter(|f| !**f).count(), 1);
        let (_, writes) = claim_at_once(&asked, 1).await;
        assert_eq!(writes, 40, "one a write: the replay writes nothing");
    }
}
