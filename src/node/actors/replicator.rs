//! A read region's link to home: pulls the replication log over HTTP/2 from
//! the last sequence number it applied, and applies each answer in one
//! write (`replication::apply_frames`). A cut, corrupt or out-of-sequence
//! frame is refused and fetched again; nothing after it is applied. A page
//! whose history differs from the region's (`replication::judge_page`: a
//! home restored from a backup, or any fork) stops it for good: it records
//! why, pulls no more, and the region is not ready. Its progress is shared
//! through [`ReplicationStatus`] so health and metrics never wait behind a
//! long poll.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::actors::error::ActorError;
use crate::replication::link::HomeLink;
use crate::replication::{LOG_HEAD_HEADER, apply_frames, judge_page, last_seq, mark_forked};
use svc_clock::SharedClock;
use svc_store::{Store, be};

/// How long home may hold a pull open when there is nothing new. A caught-up, idle
/// region's lag climbs to this between answers, so `ready_max_lag_ms` must
/// exceed it (checked at start).
pub const LONG_POLL_MS: u64 = 2_000;
/// The wait before pulling again after a failure.
const BACKOFF: Duration = Duration::from_millis(500);

/// What a region knows about its replication, readable without the actor.
#[derive(Debug, Default)]
pub struct ReplicationStatus {
    /// The last sequence number applied here.
    pub applied: AtomicU64,
    /// Home's newest sequence number, as of the last answer.
    pub head: AtomicU64,
    /// As of when the region is known to hold everything home had
    /// committed (ms; 0 never).
    pub caught_up_at: AtomicI64,
    /// Answers refused for a bad frame, since start.
    pub refused: AtomicU64,
    /// Outbox entries home took, since start.
    pub reported: AtomicU64,
    /// Own claims home took, since start.
    pub claims_reported: AtomicU64,
    /// Usage events home had already billed from another region, since start.
    pub billed_elsewhere: AtomicU64,
    /// Home's newest nonce feed sequence, and the last one learned here.
    pub feed_head: AtomicU64,
    pub feed_learned: AtomicU64,
    /// Home's newest ad feed sequence, and the last one learned here.
    pub ad_feed_head: AtomicU64,
    pub ad_feed_learned: AtomicU64,
    /// Why the region stopped applying home's log: home's history differs
    /// from its own.
    pub fork: OnceLock<String>,
}

impl ReplicationStatus {
    /// What the replicator shows of itself (`svc admin observe`).
    pub fn snapshot(&self) -> ReplicatorSnapshot {
        ReplicatorSnapshot {
            applied: self.applied.load(Ordering::Relaxed),
            head: self.head.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            fork: self.fork.get().cloned(),
        }
    }

    /// Milliseconds the region may be behind home: since the moment up to
    /// which it is known to hold everything.
    pub fn lag_ms(&self, now_ms: i64) -> i64 {
        match self.caught_up_at.load(Ordering::Relaxed) {
            0 => i64::MAX,
            at => (now_ms - at).max(0),
        }
    }
}

pub enum ReplicatorMsg {
    Pull,
    /// Answered between pulls, so after at most one long poll.
    Observe(RpcReplyPort<ReplicatorSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicatorSnapshot {
    pub applied: u64,
    pub head: u64,
    /// Answers refused for a bad frame, since start.
    pub refused: u64,
    /// Why it stopped: home's history differs from the region's.
    pub fork: Option<String>,
}

#[derive(Clone)]
pub struct ReplicatorArgs {
    pub store: Store,
    pub link: Arc<HomeLink>,
    pub clock: SharedClock,
    pub status: Arc<ReplicationStatus>,
}

#[derive(Clone)]
pub struct Replicator;

impl Replicator {
    async fn pull(args: &ReplicatorArgs) -> Result<(), ActorError> {
        let after = last_seq(&args.store).map_err(ActorError::from)?;
        args.status.applied.store(after, Ordering::Relaxed);
        // What this region serves, for home's `live_in`.
        let indexed = crate::actors::indexer::indexed_seq(&args.store)?;
        let path = format!("/internal/v1/log?after={after}&wait_ms={LONG_POLL_MS}&indexed={indexed}");
        // Bounded: a partitioned home must not hold the pull for ever.
        let wait = Duration::from_millis(LONG_POLL_MS) + Duration::from_secs(5);
        let answer = args.link.send("GET", &path, Vec::new(), wait).await?;
        let (head, home_at_after) = answer
            .headers
            .get(LOG_HEAD_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(svc_core::log_chain::parse_head_value)
            .ok_or(ActorError::Refused("home's answer has no log head"))?;
        if let Err(fork) = judge_page(&args.store, after, head, home_at_after).map_err(ActorError::from)? {
            let reason = mark_forked(&args.store, &fork).map_err(ActorError::from)?;
            tracing::error!(%reason, "home's history differs from this region's: applying nothing more");
            let _ = args.status.fork.set(reason);
            return Ok(());
        }
        let store = args.store.clone();
        let applied = tokio::task::spawn_blocking(move || apply_frames(&store, &answer.bytes))
            .await
            .map_err(ActorError::from)?
            .map_err(ActorError::from)?;
        args.status.applied.store(applied.last, Ordering::Relaxed);
        args.status.head.store(head.max(applied.last), Ordering::Relaxed);
        if applied.last > after {
            // When each page is held here (the replication bench reads these).
            tracing::debug!(applied_seq = applied.last, at_ms = args.clock.now().0, "replicated page applied");
        }
        if let Some(reason) = applied.refused {
            args.status.refused.fetch_add(1, Ordering::Relaxed);
            return Err(ActorError::Failed(format!("refused from {}: {reason}", applied.last + 1)));
        }
        // Fresh as of now when it holds home's head; otherwise as of when
        // home committed the last entry it holds (every entry before it is
        // here), so a region that keeps up with a busy home is not lagging.
        let fresh_as_of = if applied.last >= head {
            Some(args.clock.now().0)
        } else {
            let held: Option<crate::replication::Entry> =
                args.store.get(crate::replication::REPLOG, &be(applied.last)).map_err(ActorError::from)?;
            held.map(|entry| entry.at.0)
        };
        if let Some(at) = fresh_as_of {
            args.status.caught_up_at.fetch_max(at, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Actor for Replicator {
    type Msg = ReplicatorMsg;
    type State = ReplicatorArgs;
    type Arguments = ReplicatorArgs;

    async fn pre_start(
        &self,
        me: ActorRef<ReplicatorMsg>,
        args: ReplicatorArgs,
    ) -> Result<ReplicatorArgs, ActorProcessingErr> {
        args.status.applied.store(last_seq(&args.store)?, Ordering::Relaxed);
        match crate::replication::forked(&args.store)? {
            Some(reason) => {
                tracing::error!(%reason, "this region found home's history different from its own: not pulling");
                let _ = args.status.fork.set(reason);
            }
            None => me.send_message(ReplicatorMsg::Pull)?,
        }
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<ReplicatorMsg>,
        msg: ReplicatorMsg,
        args: &mut ReplicatorArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReplicatorMsg::Pull => {
                if let Err(e) = Self::pull(args).await {
                    tracing::warn!(error = %e, "replication pull failed; pulling again");
                    tokio::time::sleep(BACKOFF).await;
                }
                // The next pull is a message, so a stop request between
                // pulls is taken. A fork ends pulling.
                if args.status.fork.get().is_none() {
                    let _ = me.send_message(ReplicatorMsg::Pull);
                }
            }
            ReplicatorMsg::Observe(reply) => {
                let _ = reply.send(args.status.snapshot());
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for ReplicatorMsg {
    type Seen = ReplicatorSnapshot;

    fn observe(reply: ractor::RpcReplyPort<ReplicatorSnapshot>) -> Self {
        ReplicatorMsg::Observe(reply)
    }

    fn describe(seen: ReplicatorSnapshot) -> serde_json::Value {
        serde_json::json!({"applied": seen.applied, "head": seen.head, "refused": seen.refused, "fork": seen.fork})
    }
}
