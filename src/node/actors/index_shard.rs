//! One tantivy shard of one collection: the only writer of its index. It
//! applies a batch of upserts and deletes, commits, and reloads the readers
//! searches share, so a search sees a batch once the shard answered. Once
//! the shard has been quiet a while, it merges its segments into one and
//! makes the index's writes durable (a commit does not wait for the disk:
//! `search::deferred_sync`).

use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::actors::error::ActorError;
use svc_search::ShardWriter;
use svc_search::doc::Blocked;

/// How long a shard waits after its last batch before it compacts: a
/// stream of batches is left to tantivy's own merges meanwhile.
const QUIET: Duration = Duration::from_secs(2);
/// The shortest time between two compactions. Each rewrites the whole
/// shard, so a trickle of batches just over `QUIET` apart must not make
/// the shard rewrite itself every few seconds.
const COMPACTION_GAP: Duration = Duration::from_secs(60);
/// Under a stream with no quiet in it, writes wait at most about this long
/// for a checkpoint, so a machine crash rebuilds the index only rarely.
const CHECKPOINT_AGE: Duration = Duration::from_secs(30);

pub enum IndexShardMsg {
    Apply {
        /// Documents with the groups that blocked their business.
        upserts: Vec<Blocked>,
        deletes: Vec<String>,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    /// Sent `QUIET` after a batch: compact if nothing came since.
    Settle,
    /// Compacts now, whatever the gap since the last compaction, so deleted
    /// documents leave the files; answers whether it merged.
    Purge(RpcReplyPort<Result<bool, ActorError>>),
    Observe(RpcReplyPort<IndexShardSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexShardSnapshot {
    pub docs: u64,
    pub commits: u64,
    pub compactions: u64,
    /// Whether index writes wait for a checkpoint.
    pub unsynced: bool,
}

#[derive(Clone)]
pub struct IndexShard;

pub struct IndexShardState {
    writer: ShardWriter,
    commits: u64,
    compactions: u64,
    last_apply: Option<Instant>,
    last_compaction: Option<Instant>,
}

impl IndexShardState {
    /// When the shard may compact next, if it has anything to settle.
    fn compaction_due(&self) -> Option<Instant> {
        let quiet_from = self.last_apply? + QUIET;
        let allowed_from = self.last_compaction.map_or(quiet_from, |at| at + COMPACTION_GAP);
        Some(quiet_from.max(allowed_from))
    }
}

/// Syncs the index's writes; a merge still writing, or a failed sync, is
/// tried again a quiet period later.
fn checkpoint(me: &ActorRef<IndexShardMsg>, writer: &ShardWriter) {
    match tokio::task::block_in_place(|| writer.checkpoint()) {
        Ok(true) => {}
        Ok(false) => drop(me.send_after(QUIET, || IndexShardMsg::Settle)),
        Err(e) => {
            tracing::warn!(error = %e, "index checkpoint failed; trying again");
            drop(me.send_after(QUIET, || IndexShardMsg::Settle));
        }
    }
}

impl Actor for IndexShard {
    type Msg = IndexShardMsg;
    type State = IndexShardState;
    type Arguments = ShardWriter;

    async fn pre_start(
        &self,
        me: ActorRef<IndexShardMsg>,
        writer: ShardWriter,
    ) -> Result<IndexShardState, ActorProcessingErr> {
        // An index left in several segments by a stop settles too.
        me.send_after(QUIET, || IndexShardMsg::Settle);
        Ok(IndexShardState {
            writer,
            commits: 0,
            compactions: 0,
            last_apply: Some(svc_clock::monotonic()),
            last_compaction: None,
        })
    }

    /// What a stop leaves unsynced stays marked: a restart of the machine
    /// before it reached the disk rebuilds the index.
    async fn post_stop(
        &self,
        _me: ActorRef<IndexShardMsg>,
        state: &mut IndexShardState,
    ) -> Result<(), ActorProcessingErr> {
        if let Err(e) = tokio::task::block_in_place(|| state.writer.checkpoint()) {
            tracing::warn!(error = %e, "index checkpoint at stop failed");
        }
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<IndexShardMsg>,
        msg: IndexShardMsg,
        state: &mut IndexShardState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            IndexShardMsg::Apply { upserts, deletes, reply } => {
                let result = tokio::task::block_in_place(|| state.writer.apply(upserts, deletes));
                if result.is_ok() {
                    state.commits += 1;
                    state.last_apply = Some(svc_clock::monotonic());
                    me.send_after(QUIET, || IndexShardMsg::Settle);
                    if state.writer.checkpoint_due(CHECKPOINT_AGE) {
                        checkpoint(&me, &state.writer);
                    }
                }
                let _ = reply.send(result.map_err(ActorError::from));
            }
            IndexShardMsg::Settle => {
                // Each batch scheduled a settle: the one after the last batch acts.
                if state.last_apply.is_some_and(|at| at.elapsed() < QUIET) {
                    return Ok(());
                }
                let now = svc_clock::monotonic();
                match state.compaction_due() {
                    Some(due) if due > now => drop(me.send_after(due - now, || IndexShardMsg::Settle)),
                    Some(_) => {
                        match tokio::task::block_in_place(|| state.writer.compact()) {
                            Ok(merged) => state.compactions += u64::from(merged),
                            // tantivy may be merging some of the segments itself: the
                            // next batch's settle tries again.
                            Err(e) => tracing::debug!(error = %e, "compaction deferred"),
                        }
                        state.last_apply = None;
                        state.last_compaction = Some(svc_clock::monotonic());
                    }
                    None => {}
                }
                checkpoint(&me, &state.writer);
            }
            IndexShardMsg::Purge(reply) => {
                let merged = tokio::task::block_in_place(|| state.writer.compact());
                if let Ok(true) = merged {
                    state.compactions += 1;
                    state.last_compaction = Some(svc_clock::monotonic());
                }
                let _ = reply.send(merged.map_err(ActorError::from));
            }
            IndexShardMsg::Observe(reply) => {
                let _ = reply.send(IndexShardSnapshot {
                    docs: state.writer.num_docs(),
                    commits: state.commits,
                    compactions: state.compactions,
                    unsynced: state.writer.unsynced(),
                });
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for IndexShardMsg {
    type Seen = IndexShardSnapshot;

    fn observe(reply: ractor::RpcReplyPort<IndexShardSnapshot>) -> Self {
        IndexShardMsg::Observe(reply)
    }

    fn describe(seen: IndexShardSnapshot) -> serde_json::Value {
        serde_json::json!({"docs": seen.docs, "commits": seen.commits, "compactions": seen.compactions, "unsynced": seen.unsynced})
    }
}
