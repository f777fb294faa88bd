//! A member of home's group: its Raft node, on a runtime of its own, and
//! the bridge its store commits through (`svc_store::Consensus`).
//!
//! The store's callers write from their own threads (actors, the log
//! committer, blocking tasks), so a commit blocks its caller until the
//! group answered; the Raft node runs on its own threads, so a caller that
//! blocks never holds up the consensus it waits for.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, Config, Raft, RaftNetworkFactory};
use svc_store::{Store, StoreError, StoreResult, Write};

use crate::log_store::LogStore;
use crate::state_machine::StateMachine;
use crate::{Group, Proposal};

/// The most entries one message to a member carries: an entry is a batch,
/// and a batch of a push is megabytes.
pub const MAX_ENTRIES: u64 = 16;

/// How a member starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This member's number in the group.
    pub id: u64,
    /// Milliseconds between the leader's heartbeats.
    pub heartbeat_ms: u64,
    /// A follower that heard no heartbeat for a time drawn between these
    /// stands for election.
    pub election_ms: (u64, u64),
    /// How long a write waits for the group: a leader cut off from the
    /// others never has its writes committed, and answers this long after.
    pub commit_timeout: Duration,
    /// Where the member keeps its snapshot files.
    pub snapshots: std::path::PathBuf,
    /// A snapshot is made once this many entries were applied since the
    /// last one; the log is then purged up to it.
    pub snapshot_every: u64,
    /// How many of the newest entries a purge keeps, so a member briefly
    /// behind catches up from the log rather than a whole snapshot.
    pub logs_kept: u64,
}

/// One member: its Raft node and the runtime it runs on.
pub struct Member {
    raft: Raft<Group>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    /// The runtime's handle, for the member's listener to run beside it.
    handle: tokio::runtime::Handle,
    commit_timeout: Duration,
}

/// Runs `work` on `runtime` and waits for it (from any thread: a runtime's
/// own `block_on` refuses to run inside another runtime).
fn wait_on<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    work: impl Future<Output = T> + Send + 'static,
) -> StoreResult<T> {
    let (answer, answered) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = answer.send(work.await);
    });
    answered.recv().map_err(|_| StoreError::Group("the member stopped".into()))
}

/// Whether `store` was ever a member's: a vote, a log entry, a purge or an
/// applied entry is recorded in it. Read from the store, not the Raft
/// node's metrics, which a member just started may not have published yet.
pub fn was_a_member(store: &Store) -> StoreResult<bool> {
    use svc_store::{cf, keys};
    Ok(store.contains(cf::meta::RAFT_VOTE, keys::meta::RAFT_VOTE)?
        || store.contains(cf::meta::RAFT_PURGED, keys::meta::RAFT_PURGED)?
        || store.contains(cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)?
        || store.last_key(cf::RAFT_LOG)?.is_some())
}

/// The voting members of `raft`'s group as it last saw it.
fn voters_of(raft: &Raft<Group>) -> BTreeSet<u64> {
    raft.metrics().borrow().membership_config.membership().voter_ids().collect()
}

impl Member {
    /// Starts a member over `store` (its log, its state) and makes the
    /// store commit through the group. `network` reaches the others.
    pub fn start<N: RaftNetworkFactory<Group>>(
        settings: &Settings,
        store: Store,
        network: N,
    ) -> StoreResult<Arc<Member>> {
        let config = Config {
            cluster_name: "svc-home".into(),
            heartbeat_interval: settings.heartbeat_ms,
            election_timeout_min: settings.election_ms.0,
            election_timeout_max: settings.election_ms.1,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(settings.snapshot_every),
            max_in_snapshot_log_to_keep: settings.logs_kept,
            max_payload_entries: MAX_ENTRIES,
            ..Default::default()
        }
        .validate()
        .map_err(|e| StoreError::Group(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("home-group-{}", settings.id))
            .enable_all()
            .build()
            .map_err(|e| StoreError::Group(format!("the group's runtime did not start: {e}")))?;
        let (log, state) = (LogStore::new(store.clone()), StateMachine::new(store.clone(), &settings.snapshots)?);
        let raft = wait_on(&runtime, Raft::new(settings.id, Arc::new(config), network, log, state))?
            .map_err(|e| StoreError::Group(e.to_string()))?;
        let handle = runtime.handle().clone();
        let runtime = Mutex::new(Some(runtime));
        let member = Arc::new(Member { raft, runtime, handle, commit_timeout: settings.commit_timeout });
        store.join_group(member.clone())?;
        Ok(member)
    }

    pub fn raft(&self) -> &Raft<Group> {
        &self.raft
    }

    /// The member's own runtime: the listener that takes the others'
    /// messages runs here too, so a node busy with its requests (or, on
    /// one machine, the other nodes) does not hold up the group's
    /// heartbeats, which must arrive within one heartbeat interval.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `work` on the member's runtime and waits for it.
    fn wait<T: Send + 'static>(&self, work: impl Future<Output = T> + Send + 'static) -> StoreResult<T> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        {
            let runtime = self.runtime.lock().map_err(|_| StoreError::Closed)?;
            runtime.as_ref().ok_or(StoreError::Closed)?.spawn(async move {
                let _ = answer.send(work.await);
            });
        }
        answered.recv().map_err(|_| StoreError::Group("the member stopped".into()))
    }

    /// Makes the group of `members` (a new group's first start, on one of
    /// them); a group made before is left as it is.
    pub fn initialize(&self, members: BTreeMap<u64, BasicNode>) -> StoreResult<()> {
        let raft = self.raft.clone();
        match self.wait(async move { raft.initialize(members).await })? {
            Ok(()) | Err(RaftError::APIError(openraft::error::InitializeError::NotAllowed(_))) => Ok(()),
            Err(e) => Err(StoreError::Group(e.to_string())),
        }
    }

    /// The voting members of the group as this member last saw it.
    pub fn voters(&self) -> BTreeSet<u64> {
        voters_of(&self.raft)
    }

    /// Grows the group this member leads to `members`. It first makes a
    /// snapshot and purges the log it covers, so each new member takes the
    /// whole state from that snapshot (a store that held data before its
    /// group was made has no log of it); then each new member learns until
    /// it caught up (at most `wait_each`); then they vote too. It only adds:
    /// a member already there is left as it is, and one `members` does not
    /// name is not removed. It blocks: call it off the async threads, and
    /// again after an error (each step is idempotent).
    pub fn grow(&self, members: BTreeMap<u64, BasicNode>, wait_each: Duration) -> StoreResult<()> {
        let raft = self.raft.clone();
        let group = |e: &dyn std::fmt::Display| StoreError::Group(e.to_string());
        self.wait(async move {
            let voters = voters_of(&raft);
            let Some(applied) = raft.metrics().borrow().last_applied else {
                return Err(StoreError::Group("the group's first entry is not applied yet".into()));
            };
            if members.keys().all(|id| voters.contains(id)) {
                return Ok(());
            }
            raft.trigger().snapshot().await.map_err(|e| group(&e))?;
            let covered = |m: &openraft::RaftMetrics<u64, BasicNode>| m.snapshot.is_some_and(|s| s >= applied);
            let made = raft.wait(Some(wait_each)).metrics(covered, "a snapshot of the whole state").await;
            let snapshot = made.map_err(|e| group(&e))?.snapshot.unwrap_or(applied);
            raft.trigger().purge_log(snapshot.index).await.map_err(|e| group(&e))?;
            let purged = |m: &openraft::RaftMetrics<u64, BasicNode>| m.purged.is_some_and(|p| p >= snapshot);
            raft.wait(Some(wait_each))
                .metrics(purged, "the log the snapshot covers purged")
                .await
                .map_err(|e| group(&e))?;
            let new: BTreeMap<u64, BasicNode> = members.into_iter().filter(|(id, _)| !voters.contains(id)).collect();
            for (id, node) in &new {
                let learnt = tokio::time::timeout(wait_each, raft.add_learner(*id, node.clone(), true)).await;
                learnt
                    .map_err(|_| StoreError::Group(format!("member {id} did not catch up in time")))?
                    .map_err(|e| group(&e))?;
            }
            let voting = openraft::ChangeMembers::AddVoterIds(new.into_keys().collect());
            raft.change_membership(voting, false).await.map_err(|e| group(&e))?;
            Ok(())
        })?
    }

    /// Waits until this member, as leader, applied every write the group
    /// committed (a linearizable read): what it then reads is whole.
    pub fn applied_all(&self) -> StoreResult<()> {
        let raft = self.raft.clone();
        let timeout = self.commit_timeout;
        match self.wait(async move { tokio::time::timeout(timeout, raft.ensure_linearizable()).await })? {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Group(e.to_string())),
            Err(_) => Err(StoreError::Group("the group did not confirm this leader in time".into())),
        }
    }

    /// Stops the member's Raft node (it lets go of the store) and its
    /// runtime; later commits answer `Closed`. It blocks: call it off the
    /// async threads.
    pub fn stop(&self) {
        let raft = self.raft.clone();
        let _ = self.wait(async move { raft.shutdown().await });
        // Waits for the runtime's tasks to end: one still writing to the
        // store as it closes would abort RocksDB.
        if let Some(runtime) = self.runtime.lock().ok().and_then(|mut runtime| runtime.take()) {
            runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        }
    }
}

impl svc_store::Consensus for Member {
    fn commit(&self, writes: Vec<Write>) -> StoreResult<()> {
        let raft = self.raft.clone();
        let timeout = self.commit_timeout;
        let written =
            self.wait(async move { tokio::time::timeout(timeout, raft.client_write(Proposal { writes })).await })?;
        let Ok(written) = written else {
            return Err(StoreError::Group(format!("no quorum committed the write within {} ms", timeout.as_millis())));
        };
        match written {
            Ok(_) => Ok(()),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(to))) => {
                Err(StoreError::NotLeader { leader: to.leader_id.map(|id| id.to_string()) })
            }
            Err(e) => Err(StoreError::Group(e.to_string())),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.get_mut().ok().and_then(Option::take) {
            runtime.shutdown_background();
        }
    }
}
