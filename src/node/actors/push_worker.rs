//! Background pushes: takes accepted pushes one at a time and commits them
//! chunk by chunk through the publisher. On start it resumes every push a
//! crash left unsettled.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::actors::error::ActorError;
use crate::actors::publisher::{Flags, PublisherMsg};
use crate::blocklist::Blocklist;
use crate::publish::CHUNK;
use svc_clock::SharedClock;
use svc_core::publish::outcome::Outcome;
use svc_store::model::{PushLeaf, PushRecord};
use svc_store::{Store, cf, keys};

pub enum PushWorkerMsg {
    /// Process (or resume) a push.
    Run(String),
    Observe(RpcReplyPort<PushWorkerSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PushWorkerSnapshot {
    pub pushes_settled: u64,
    pub chunks_committed: u64,
}

/// What running a push needs. The worker holds one; a request that
/// processes a push inline builds one from the node's state.
#[derive(Clone)]
pub struct PushRunner {
    pub store: Store,
    pub publisher: crate::actors::mailbox::Mailbox<PublisherMsg>,
    pub clock: SharedClock,
    pub blocklist: Option<Arc<Blocklist>>,
    /// Where bulk files are kept.
    pub uploads: PathBuf,
}

pub type PushWorkerArgs = PushRunner;

#[derive(Clone)]
pub struct PushWorker;

pub struct PushWorkerState {
    args: PushWorkerArgs,
    snapshot: PushWorkerSnapshot,
}

/// `url_flagged` errors for the pending leaves of one chunk.
pub async fn flag_chunk(
    store: &Store,
    blocklist: Option<&Blocklist>,
    push_id: &str,
    chunk: u64,
) -> Result<Flags, ActorError> {
    let Some(blocklist) = blocklist else { return Ok(Flags::new()) };
    let prefix = keys::push_leaves(push_id);
    let from = keys::push_leaf(push_id, chunk * CHUNK as u64);
    let leaves: Vec<(Vec<u8>, PushLeaf)> = store.scan(cf::PUSH_LEAVES, &prefix, Some(&from), CHUNK).unwrap_or_default();
    let urls: Vec<(u64, Vec<(String, String)>)> = leaves
        .into_iter()
        .filter(|(k, leaf)| k.len() == prefix.len() + 9 && leaf.outcome == Outcome::Pending)
        .filter_map(|(_, leaf)| {
            let value: serde_json::Value = serde_json::from_slice(&leaf.bytes).ok()?;
            Some((leaf.leaf_index, svc_core::records::urls(&value)))
        })
        .collect();
    Ok(blocklist.flag(&urls).await)
}

/// The bulk file of an upload.
pub fn upload_path(uploads: &Path, upload_id: &str) -> PathBuf {
    uploads.join(format!("{upload_id}.ndjson"))
}

/// Reads an import's file once and checks it is exactly what the batch seal
/// names. `Err(Ok(code))` ends the import with that code; `Err(Err(_))` is a
/// failure on the service's side, left to resume.
fn read_import(runner: &PushRunner, push: &PushRecord) -> Result<Vec<Vec<u8>>, Result<&'static str, ActorError>> {
    let upload_id = push.upload_id.as_deref().ok_or(Err(ActorError::Refused("an import without an upload")))?;
    let bytes = std::fs::read(upload_path(&runner.uploads, upload_id))
        .map_err(|e| Err(ActorError::Failed(format!("the bulk file: {e}"))))?;
    let records = svc_core::publish::bulk::read_records(&bytes).map_err(|_| Ok("seal_invalid"))?;
    let envelope =
        svc_core::dsse::Envelope::parse(&push.batch_seal).map_err(|r| Err(ActorError::Failed(r.to_string())))?;
    let seal = svc_core::seal::read_batch_seal(&envelope).map_err(|r| Err(ActorError::Failed(r.to_string())))?;
    if !svc_core::publish::bulk::file_matches_seal(&records, seal.tree_size, &seal.root) {
        return Err(Ok("seal_invalid"));
    }
    Ok(records)
}

/// Commits every remaining chunk of a push, then settles it. A bulk import
/// is first read from its file and staged (or failed `seal_invalid` when the
/// file is not what its seal names). Used by the worker and by requests that
/// process a push inline.
pub async fn run_push(runner: &PushRunner, push_id: &str) -> Result<PushRecord, ActorError> {
    let (store, publisher, clock) = (&runner.store, &runner.publisher, &runner.clock);
    let mut push: PushRecord = store
        .get(cf::PUSHES, push_id.as_bytes())
        .map_err(ActorError::from)?
        .ok_or(ActorError::Refused("unknown push"))?;
    if push.completed_at.is_some() {
        return Ok(push);
    }
    if !push.staged {
        let reader = runner.clone();
        let unstaged = push.clone();
        let read =
            tokio::task::spawn_blocking(move || read_import(&reader, &unstaged)).await.map_err(ActorError::from)?;
        let now = clock.now();
        push = match read {
            Ok(records) => publisher
                .call(|reply| PublisherMsg::StageFile { push_id: push_id.to_owned(), records, now, reply })
                .await
                .map_err(ActorError::from)??,
            Err(Ok(code)) => {
                return publisher
                    .call(|reply| PublisherMsg::Fail { push_id: push_id.to_owned(), code: code.to_owned(), now, reply })
                    .await
                    .map_err(ActorError::from)?;
            }
            Err(Err(e)) => return Err(e),
        };
    }
    for chunk in push.chunks_done..push.chunks {
        let flagged = flag_chunk(store, runner.blocklist.as_deref(), push_id, chunk).await?;
        let now = clock.now();
        publisher
            .call(|reply| PublisherMsg::CommitChunk { push_id: push_id.to_owned(), chunk, flagged, now, reply })
            .await
            .map_err(ActorError::from)??;
    }
    let now = clock.now();
    let settled = publisher
        .call(|reply| PublisherMsg::Finish { push_id: push_id.to_owned(), now, reply })
        .await
        .map_err(ActorError::from)??;
    crate::faults::crash_point(crate::faults::CrashPoint::PushFinished);
    // A bulk file is deleted once its import completes.
    if let Some(upload_id) = &settled.upload_id {
        let path = upload_path(&runner.uploads, upload_id);
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "bulk file not deleted");
        }
    }
    Ok(settled)
}

impl Actor for PushWorker {
    type Msg = PushWorkerMsg;
    type State = PushWorkerState;
    type Arguments = PushWorkerArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<PushWorkerMsg>,
        args: PushWorkerArgs,
    ) -> Result<PushWorkerState, ActorProcessingErr> {
        Ok(PushWorkerState { args, snapshot: PushWorkerSnapshot::default() })
    }

    async fn post_start(
        &self,
        me: ActorRef<PushWorkerMsg>,
        state: &mut PushWorkerState,
    ) -> Result<(), ActorProcessingErr> {
        // Resume what a crash left unsettled, oldest first.
        // Every push is read, one at a time; only the unsettled are kept.
        let mut unsettled: Vec<PushRecord> = Vec::new();
        state.args.store.walk(cf::PUSHES, &[], None, |_, push: PushRecord| {
            if push.completed_at.is_none() {
                unsettled.push(push);
            }
            true
        })?;
        unsettled.sort_by_key(|p| p.received_at);
        for push in unsettled {
            tracing::info!(push_id = %push.push_id, done = push.chunks_done, chunks = push.chunks, "resuming push");
            me.send_message(PushWorkerMsg::Run(push.push_id))?;
        }
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<PushWorkerMsg>,
        msg: PushWorkerMsg,
        state: &mut PushWorkerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PushWorkerMsg::Run(push_id) => {
                match run_push(&state.args, &push_id).await {
                    Ok(push) => {
                        state.snapshot.pushes_settled += 1;
                        state.snapshot.chunks_committed += push.chunks;
                    }
                    // The push stays unsettled; a resend or a restart resumes it.
                    Err(e) => tracing::error!(push_id, error = %e, "push did not settle"),
                }
            }
            PushWorkerMsg::Observe(reply) => {
                let _ = reply.send(state.snapshot.clone());
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for PushWorkerMsg {
    type Seen = PushWorkerSnapshot;

    fn observe(reply: ractor::RpcReplyPort<PushWorkerSnapshot>) -> Self {
        PushWorkerMsg::Observe(reply)
    }

    fn describe(seen: PushWorkerSnapshot) -> serde_json::Value {
        serde_json::json!({"pushes_settled": seen.pushes_settled, "chunks_committed": seen.chunks_committed})
    }
}
