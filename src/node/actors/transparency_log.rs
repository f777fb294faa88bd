//! The transparency log's sequencer, at home only. Leaves wait in
//! `tlog_pending`, written with what they record (a seal accepted, a key
//! added or revoked, a region's receipt minute folded). Once per period
//! (hourly by default, P4.2.40) this actor appends them in the order they
//! were queued, signs a C2SP checkpoint over the new tree, and hands the
//! leaves, their index and the checkpoint to the publisher as one change,
//! so they replicate to every region together.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::merkle;
use svc_core::time::UnixMs;
use svc_core::tlog::Checkpoint;

use crate::actors::error::ActorError;
use crate::actors::publisher::PublisherMsg;
use crate::replication::Change;
use crate::transparency::LogView;
use svc_clock::SharedClock;
use svc_store::model::{LogCheckpoint, LogLeaf, PendingLeaf};
use svc_store::{be, cf};

/// Leaves sequenced in one checkpoint at most; the rest wait for the next.
const MAX_LEAVES: usize = 100_000;

pub enum TransparencyLogMsg {
    /// Sequences when the period has turned since the last checkpoint.
    Tick,
    /// Sequences now, whatever the period (operators and tests).
    Sequence(RpcReplyPort<Result<LogCheckpoint, ActorError>>),
    Observe(RpcReplyPort<TransparencyLogSnapshot>),
}

/// The log as its sequencer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransparencyLogSnapshot {
    /// Leaves in the newest signed checkpoint.
    pub size: u64,
    /// When sequencing last ran, signed or not.
    pub last_run: Option<UnixMs>,
}

#[derive(Clone)]
pub struct TransparencyLogArgs {
    /// When sequencing last ran (signed or found nothing new), so a quiet
    /// period is not re-scanned every tick.
    pub last_run: Option<UnixMs>,
    pub log: LogView,
    pub publisher: crate::actors::mailbox::Mailbox<PublisherMsg>,
    /// The service's keys: the log-checkpoint key signs (its newest, after a rotation).
    pub keys: std::sync::Arc<crate::service_keys::ServiceKeys>,
    pub clock: SharedClock,
    pub every_ms: i64,
}

#[derive(Clone)]
pub struct TransparencyLog;

/// Whether the period has turned since `last` (or nothing was signed yet).
fn due(last: Option<UnixMs>, now: UnixMs, every_ms: i64) -> bool {
    last.is_none_or(|last| now.0.div_euclid(every_ms) > last.0.div_euclid(every_ms))
}

impl TransparencyLog {
    async fn sequence(args: &TransparencyLogArgs) -> Result<LogCheckpoint, ActorError> {
        let store = args.log.store().clone();
        let now = args.clock.now();
        let mut waiting = store.scan_all::<PendingLeaf>(cf::TLOG_PENDING, &[]).map_err(ActorError::from)?;
        // Queued order; the leaf hash (the key) breaks ties, so a sequencing
        // redone after a failed write appends in the same order.
        waiting.sort_by(|(ka, a), (kb, b)| (a.queued_at, ka).cmp(&(b.queued_at, kb)));
        waiting.truncate(MAX_LEAVES);
        let latest = args.log.latest().map_err(ActorError::from)?;
        let mut tree = args.log.writer().await.map_err(ActorError::from)?;
        let start = tree.size();
        if waiting.is_empty()
            && let Some(latest) = latest.filter(|l| l.size == start)
        {
            return Ok(latest);
        }
        let mut change = Change::new();
        for (key, pending) in waiting {
            change.delete(cf::TLOG_PENDING, &key);
            // Pending leaves are keyed by their hash, so each waits once; one
            // already in the log (a batch resent after sequencing) stays one leaf.
            let hash = merkle::leaf_hash(&pending.data);
            if args.log.find(&hash).map_err(ActorError::from)?.is_some() {
                continue;
            }
            let index = tree.size();
            let leaf = LogLeaf { index, kind: pending.kind, data: pending.data, hash, sequenced_at: now };
            change.put(cf::TLOG_LEAVES, &be(index), &leaf);
            change.put(cf::TLOG_INDEX, &hash, &index);
            tree.push(hash);
        }
        let size = tree.size();
        let root = tree.root(size).ok_or(ActorError::Refused("the tree lost its leaves"))?;
        let mut checkpoint = Checkpoint { origin: args.log.origin().to_owned(), size, root };
        if crate::sabotage::on(crate::sabotage::Sabotage::ForkedCheckpoints) {
            checkpoint.root[0] ^= 1;
        }
        let note = checkpoint
            .sign(&args.keys.checkpoint_key())
            .ok_or(ActorError::Refused("the log's origin cannot name a note key"))?;
        let signed = LogCheckpoint { size, root, note, at: now };
        change.put(cf::TLOG_CHECKPOINTS, &be(size), &signed);
        let applied = match args.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(ActorError::from(e)),
        };
        if let Err(e) = applied {
            // Not stored: the tree forgets what it appended.
            tree.truncate(start);
            return Err(e);
        }
        crate::faults::crash_point(crate::faults::CrashPoint::LogSequenced);
        tracing::info!(size, added = size - start, "transparency log sequenced; checkpoint signed");
        Ok(signed)
    }
}

impl Actor for TransparencyLog {
    type Msg = TransparencyLogMsg;
    type State = TransparencyLogArgs;
    type Arguments = TransparencyLogArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<TransparencyLogMsg>,
        args: TransparencyLogArgs,
    ) -> Result<TransparencyLogArgs, ActorProcessingErr> {
        // A new log signs its first checkpoint before the node serves, so
        // every region has one to prove against from the start.
        if args.log.latest().ok().flatten().is_none()
            && let Err(e) = Self::sequence(&args).await
        {
            tracing::warn!(error = %e, "the log's first checkpoint failed; trying again next tick");
        }
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<TransparencyLogMsg>,
        msg: TransparencyLogMsg,
        args: &mut TransparencyLogArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TransparencyLogMsg::Tick => {
                let signed = args.log.latest().ok().flatten().map(|c| c.at);
                let last = signed.max(args.last_run);
                let now = args.clock.now();
                if due(last, now, args.every_ms) {
                    match Self::sequence(args).await {
                        Ok(_) => args.last_run = Some(now),
                        Err(e) => {
                            tracing::warn!(error = %e, "transparency log sequencing failed; trying again next tick")
                        }
                    }
                }
            }
            TransparencyLogMsg::Sequence(reply) => {
                let _ = reply.send(Self::sequence(args).await);
            }
            TransparencyLogMsg::Observe(reply) => {
                let size = args.log.latest().ok().flatten().map_or(0, |c| c.size);
                let _ = reply.send(TransparencyLogSnapshot { size, last_run: args.last_run });
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for TransparencyLogMsg {
    type Seen = TransparencyLogSnapshot;

    fn observe(reply: ractor::RpcReplyPort<TransparencyLogSnapshot>) -> Self {
        TransparencyLogMsg::Observe(reply)
    }

    fn describe(seen: TransparencyLogSnapshot) -> serde_json::Value {
        serde_json::json!({"size": seen.size, "last_run": seen.last_run.map(|t| t.to_rfc3339_millis())})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    // rule: P4.2.40, P8.19
    #[test]
    fn leaves_are_sequenced_once_the_hour_turns() {
        let t = 1_795_000_000_000 - 1_795_000_000_000 % HOUR;
        assert!(due(None, UnixMs(t), HOUR), "a log that never signed signs at once");
        assert!(!due(Some(UnixMs(t + 10)), UnixMs(t + HOUR - 1), HOUR));
        assert!(due(Some(UnixMs(t + 10)), UnixMs(t + HOUR), HOUR));
        assert!(due(Some(UnixMs(t + HOUR - 1)), UnixMs(t + HOUR + 5), HOUR), "by the clock's hour, not an hour since");
    }
}
