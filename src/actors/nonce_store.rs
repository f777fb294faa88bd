//! Claims (key id, nonce) pairs: each is accepted once, held until its
//! signature expires, and persisted so a restart still refuses it.
//!
//! Across regions: a read region writes each claim to its outbox in the
//! same write (the uplink reports it to home); home writes each claim it
//! learns, its own or a region's, to the nonce feed in the same write, and
//! every region learns the feed. Once a claim has gone round, a replay to
//! any region is refused.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::UnixMs;

use crate::replication::exchange::{Claimed, FeedEntry, Outgoing, Sequence};
use crate::store::{Store, StoreResult, cf, key};

/// Where the feed cursor of a read region is kept.
const FEED_CURSOR: &[u8] = b"nonce_feed_cursor";
/// Claims forgotten per purge step. The purge runs every second and takes
/// steps, with the claims that arrived meanwhile between them: a write holds
/// every writer behind it while it fills the memtable, and forgetting a
/// minute of claims in one write held every claim for a third of a second.
const PURGE_STEP: usize = 500;

pub enum NonceMsg {
    /// Claims a nonce; answers true when it was not seen before.
    Claim {
        key_id: String,
        nonce: String,
        expires_secs: i64,
        now: UnixMs,
        reply: RpcReplyPort<bool>,
    },
    /// Home: claims a region reported. Each new one joins the feed.
    Learn {
        claims: Vec<Claimed>,
        reply: RpcReplyPort<Result<(), String>>,
    },
    /// A read region: a page of home's feed, applied with its cursor.
    LearnFeed {
        entries: Vec<FeedEntry>,
        reply: RpcReplyPort<Result<(), String>>,
    },
    /// A read region: home's feed is behind this region's cursor (home's
    /// store was restored), so the feed is read again from its start.
    RewindFeed(RpcReplyPort<Result<(), String>>),
    /// Forgets nonces whose signatures have expired.
    Purge {
        now: UnixMs,
    },
    Observe(RpcReplyPort<NonceSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceSnapshot {
    pub held: usize,
    /// Home: the feed's newest sequence number. A region: the last one it learned.
    pub feed_seq: u64,
}

/// What a node does with a claim besides holding it.
#[derive(Clone)]
pub enum NonceRole {
    /// Home: every new claim joins the feed.
    Home { feed: Sequence },
    /// A read region: every claim of its own goes to the outbox.
    Region { outbox: Sequence },
}

pub struct NonceArgs {
    pub store: Store,
    pub role: NonceRole,
}

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
}

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

    /// Takes up to `limit` claims that expired before `cutoff`, oldest
    /// first. They stay held until `forget`.
    fn take_expired(&mut self, cutoff: i64, limit: usize) -> Vec<(Claim, i64)> {
        let mut taken = Vec::new();
        let mut listed = 0;
        while listed < limit {
            let Some(mut entry) = self.by_expiry.first_entry().filter(|e| *e.key() < cutoff) else { break };
            let at = *entry.key();
            let claims = entry.get_mut();
            let n = (limit - listed).min(claims.len());
            let some: Vec<Claim> = claims.drain(claims.len() - n..).collect();
            if claims.is_empty() {
                entry.remove();
            }
            listed += n;
            // A claim held again after it expired is listed under its new expiry too.
            taken.extend(some.into_iter().filter(|k| self.expires.get(k) == Some(&at)).map(|k| (k, at)));
        }
        taken
    }

    fn any_expired(&self, cutoff: i64) -> bool {
        self.by_expiry.first_key_value().is_some_and(|(at, _)| *at < cutoff)
    }

    fn forget(&mut self, k: &Claim) {
        self.expires.remove(k);
    }

    /// Lists taken claims again (their forgetting was not written).
    fn untake(&mut self, taken: Vec<(Claim, i64)>) {
        for (k, at) in taken {
            self.by_expiry.entry(at).or_default().push(k);
        }
    }
}

fn nonce_key(key_id: &str, nonce: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), nonce.as_bytes()])
}

impl NonceState {
    fn is_held(&self, k: &(String, String), now_secs: i64) -> bool {
        self.held.get(k).is_some_and(|expires| expires >= now_secs)
    }

    /// Holds the claims not held yet, in one write; answers how many were new.
    fn hold(&mut self, claims: Vec<Claimed>, from_feed: Option<u64>, now_secs: i64) -> Result<usize, String> {
        let mut batch = self.store.batch();
        let mut fresh = Vec::new();
        for claimed in claims {
            let k = (claimed.key_id.clone(), claimed.nonce.clone());
            if self.is_held(&k, now_secs) || fresh.iter().any(|(f, _)| *f == k) {
                continue;
            }
            batch.put(cf::NONCES, &nonce_key(&k.0, &k.1), &claimed.expires_secs);
            match (&self.role, from_feed) {
                (NonceRole::Home { feed }, _) => {
                    feed.append(&mut batch, &claimed);
                }
                (NonceRole::Region { outbox }, None) => {
                    outbox.append(&mut batch, &Outgoing::Claim(claimed.clone()));
                }
                (NonceRole::Region { .. }, Some(_)) => {}
            }
            fresh.push((k, claimed.expires_secs));
        }
        if let Some(cursor) = from_feed {
            batch.put(cf::META, FEED_CURSOR, &cursor);
        }
        if batch.is_empty() {
            return Ok(0);
        }
        // Not synced: a crash of the process keeps it (the WAL is written).
        batch.commit_unsynced().map_err(|e| e.to_string())?;
        if let Some(cursor) = from_feed {
            self.feed_cursor = cursor;
        }
        let n = fresh.len();
        for (k, expires) in fresh {
            self.held.insert(k, expires);
        }
        Ok(n)
    }

    /// Forgets up to a step of nonces whose signatures expired before
    /// `now`, in one write; answers whether more are waiting.
    fn purge_step(&mut self, now: UnixMs) -> StoreResult<bool> {
        let cutoff = now.as_secs();
        let expired = self.held.take_expired(cutoff, PURGE_STEP);
        let mut batch = self.store.batch();
        for (k, _) in &expired {
            batch.delete(cf::NONCES, &nonce_key(&k.0, &k.1));
        }
        let mut more = self.held.any_expired(cutoff);
        let mut dropped_to = self.feed_dropped;
        if let NonceRole::Home { feed } = &self.role {
            // The feed is nearly in expiry order: drop its expired head, but
            // never its newest entry, from which the sequence goes on after
            // a restart (regions' cursors count on it).
            let newest = crate::store::be(feed.last());
            let from = crate::store::be(self.feed_dropped + 1);
            let head = self.store.scan::<Claimed>(cf::NONCE_FEED, &[], Some(&from), PURGE_STEP)?;
            let mut dropped = 0;
            for (k, claimed) in &head {
                if claimed.expires_secs >= cutoff || *k == newest {
                    break;
                }
                batch.delete(cf::NONCE_FEED, k);
                dropped += 1;
                dropped_to = crate::store::from_be(k).unwrap_or(dropped_to);
            }
            more |= dropped == PURGE_STEP;
        }
        // Forgotten in memory only once the store forgot them too.
        match batch.commit_unsynced() {
            Ok(()) => {
                for (k, _) in &expired {
                    self.held.forget(k);
                }
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
        let mut held = Held::default();
        for (k, expires) in args.store.scan::<i64>(cf::NONCES, &[], None, usize::MAX)? {
            let mut parts = k.splitn(2, |b| *b == 0);
            let (Some(key_id), Some(nonce)) = (parts.next(), parts.next()) else { continue };
            held.insert(
                (String::from_utf8_lossy(key_id).into_owned(), String::from_utf8_lossy(nonce).into_owned()),
                expires,
            );
        }
        let feed_cursor = args.store.get::<u64>(cf::META, FEED_CURSOR)?.unwrap_or(0);
        Ok(NonceState { store: args.store, role: args.role, held, feed_cursor, feed_dropped: 0 })
    }

    async fn handle(
        &self,
        me: ActorRef<NonceMsg>,
        msg: NonceMsg,
        state: &mut NonceState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NonceMsg::Claim { key_id, nonce, expires_secs, now, reply } => {
                let claimed = Claimed { key_id, nonce, expires_secs };
                // A nonce store that cannot persist must not accept: refuse.
                let fresh = state.hold(vec![claimed], None, now.as_secs()).unwrap_or(0) == 1;
                let _ = reply.send(fresh);
            }
            NonceMsg::Learn { claims, reply } => {
                // Expired claims are held too: an expired signature is
                // refused anyway, and the purge forgets them.
                let _ = reply.send(state.hold(claims, None, i64::MIN).map(|_| ()));
            }
            NonceMsg::RewindFeed(reply) => {
                let rewound = state.store.put(cf::META, FEED_CURSOR, &0u64);
                if rewound.is_ok() {
                    state.feed_cursor = 0;
                }
                let _ = reply.send(rewound.map_err(|e| e.to_string()));
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
                if state.purge_step(now)? {
                    let _ = me.send_message(NonceMsg::Purge { now });
                }
            }
            NonceMsg::Observe(reply) => {
                let _ = reply.send(NonceSnapshot { held: state.held.len(), feed_seq: state.feed_seq() });
            }
        }
        Ok(())
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
            NonceRole::Region { outbox: exchange::outbox(store).unwrap() }
        };
        NonceState { store: store.clone(), role, held: Held::default(), feed_cursor: 0, feed_dropped: 0 }
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

    // rule: R5.36, R5.38
    #[test]
    fn a_purge_forgets_expired_claims_a_step_at_a_time_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut region = state(&store, false);
        let expiring = |n: usize, at: i64| Claimed { key_id: "k".into(), nonce: format!("n{n}"), expires_secs: at };
        // A step and five more expired, all but three in one second (which
        // a step splits); ten are still valid.
        let old: Vec<Claimed> = (0..PURGE_STEP + 5).map(|n| expiring(n, 1_000 + i64::from(n >= 3))).collect();
        let live: Vec<Claimed> = (0..10).map(|n| expiring(PURGE_STEP + 100 + n, 5_000)).collect();
        region.hold(old.clone(), None, i64::MIN).unwrap();
        region.hold(live.clone(), None, i64::MIN).unwrap();
        // Claimed again once expired, a claim is kept until its new expiry.
        assert_eq!(region.hold(vec![expiring(3, 4_500)], None, 4_000).unwrap(), 1);
        let now = UnixMs(4_000_000);
        let mut steps = 0;
        while region.purge_step(now).unwrap() {
            steps += 1;
            assert!(steps < 5, "the purge ends");
        }
        assert_eq!(steps, 1, "two steps: the first says more are waiting");
        assert_eq!(region.held.len(), live.len() + 1);
        assert_eq!(region.held.get(&("k".into(), "n3".into())), Some(4_500));
        assert!(region.held.get(&("k".into(), "n4".into())).is_none());
        let stored: Vec<(Vec<u8>, i64)> = store.scan(cf::NONCES, &[], None, usize::MAX).unwrap();
        let mut kept: Vec<i64> = stored.iter().map(|(_, expires)| *expires).collect();
        kept.sort_unstable();
        assert_eq!(kept, [vec![4_500], vec![5_000; 10]].concat(), "the store forgot the same claims");
        // Still refused while valid.
        assert_eq!(region.hold(vec![live[0].clone()], None, 4_000).unwrap(), 0);

        // Home drops its feed's expired head a step at a time too, all but the newest.
        let home_dir = tempfile::tempdir().unwrap();
        let home_store = Store::open(home_dir.path()).unwrap();
        let mut home = state(&home_store, true);
        home.hold(old.clone(), None, i64::MIN).unwrap();
        let mut steps = 0;
        while home.purge_step(now).unwrap() {
            steps += 1;
        }
        assert_eq!(steps, 1);
        let left = exchange::feed_after(&home_store, 0, 10).unwrap();
        assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), [old.len() as u64]);
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

        assert_eq!(eu.hold(vec![claimed("n1")], None, now).unwrap(), 1, "eu serves n1");
        assert_eq!(eu.hold(vec![claimed("n1")], None, now).unwrap(), 0, "a replay at eu is refused");
        let outbox = exchange::pending(&eu_store, 10).unwrap();
        assert_eq!(outbox.len(), 1, "the claim waits in eu's outbox");
        let Outgoing::Claim(shipped) = &outbox[0].1 else { panic!("a claim") };

        home.hold(vec![shipped.clone()], None, i64::MIN).unwrap();
        home.hold(vec![shipped.clone()], None, i64::MIN).unwrap();
        let page = exchange::feed_after(&home_store, 0, 10).unwrap();
        assert_eq!(page.len(), 1, "a report taken twice joins the feed once");

        ap.hold(page.iter().map(|e| e.claimed.clone()).collect(), Some(page[0].seq), i64::MIN).unwrap();
        assert_eq!(ap.feed_cursor, 1);
        assert_eq!(ap.hold(vec![claimed("n1")], None, now).unwrap(), 0, "once learned, a replay at ap is refused");
        assert!(exchange::pending(&ap_store, 10).unwrap().is_empty(), "what ap learned is not reported back");
    }
}
