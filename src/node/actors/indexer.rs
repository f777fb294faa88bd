//! Feeds the index shards from the replication log, and from nothing else.
//! Each write to the log wakes it (the store's bell); it reads entries
//! after the sequence it last applied, turns record and
//! block changes into shard batches, waits for every shard to commit, then
//! records the sequence. A crash between the two re-applies a batch, which
//! is harmless: every document is written as delete-then-add by id.
//!
//! A business's certificate or keys decide which of its versions may be
//! served (`Registry::serves`): when they change, and again when a status
//! issued for later takes effect, every record of the business is judged
//! again, so a withdrawn business leaves the index until verified again.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::ids::RecordType;

use crate::actors::error::ActorError;
use crate::actors::index_shard::IndexShardMsg;
use crate::registry::Registry;
use crate::replication::{Op, entries_after};
use svc_core::time::UnixMs;
use svc_search::doc::{Blocked, IndexDoc, index_doc};
use svc_search::shard_of;
use svc_store::model::{BusinessKey, RecordHead, RecordState, RecordVersion};
use svc_store::{Store, cf, keys};

const APPLIED_KEY: &[u8] = keys::meta::INDEX_APPLIED_SEQ;
/// Entries read per step.
const BATCH: usize = 2_000;
/// The wait before the next step after one that committed: as long as that
/// step took, between these bounds. A step is mostly a tantivy commit's
/// disk waits (about 65 ms for a 100-record batch on the benchmark machine),
/// so a trickle is searchable a step or two after it arrives, while a heavy
/// stream (a bulk import) is committed in groups of up to half a second:
/// small segments cost merges (a fifth of a bulk import's CPU when every
/// chunk was committed). A wait of eight steps made replication to search
/// twice as slow (p99 763 ms against 369 ms at 1,000 records/s) and did not
/// make a bulk import faster (`benches/README.md`).
const MIN_GAP: Duration = Duration::from_millis(5);
const MAX_GAP: Duration = Duration::from_millis(500);
const GAP_PER_STEP: u32 = 1;

fn commit_gap(step: Duration) -> Duration {
    (step * GAP_PER_STEP).clamp(MIN_GAP, MAX_GAP)
}

/// How far the index has applied the log: every entry up to it is
/// searchable.
pub fn indexed_seq(store: &Store) -> svc_store::StoreResult<u64> {
    Ok(store.get::<u64>(cf::meta::INDEX_APPLIED_SEQ, APPLIED_KEY)?.unwrap_or(0))
}

/// Forgets what the index applied, so it is fed again from the first entry
/// (after its directory was rebuilt).
pub fn forget_applied(store: &Store) -> svc_store::StoreResult<()> {
    let mut batch = store.batch();
    batch.delete(cf::meta::INDEX_APPLIED_SEQ, APPLIED_KEY);
    batch.commit()
}

pub enum IndexerMsg {
    /// Apply whatever the log holds beyond the applied sequence.
    Tick,
    Observe(RpcReplyPort<IndexerSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexerSnapshot {
    pub applied_seq: u64,
    /// Steps that committed, and the time they took: in all, and waiting
    /// for the shards (adding documents, committing, reloading readers).
    pub steps: u64,
    pub step_micros: u64,
    pub shard_micros: u64,
}

pub struct IndexerArgs {
    pub store: Store,
    pub clock: svc_clock::SharedClock,
    pub shards: HashMap<(RecordType, usize), crate::actors::mailbox::Mailbox<IndexShardMsg>>,
    pub shards_per_collection: usize,
}

#[derive(Clone)]
pub struct Indexer;

pub struct IndexerState {
    args: IndexerArgs,
    registry: Registry,
    applied: u64,
    /// When the next step may start, after one that committed.
    next_step_at: Option<Instant>,
    steps: u64,
    step_micros: u64,
    shard_micros: u64,
    retry: Backoff,
    /// Certificate statuses that take effect later, and their business:
    /// its records are judged again then.
    later: std::collections::BTreeSet<(UnixMs, String)>,
    /// Set while a tick from the log's bell waits in the mailbox, so a
    /// stream of writes during a long step queues one tick, not one each.
    bell_tick_queued: Arc<AtomicBool>,
    /// A tick is scheduled for when the wait after a step (or a failure)
    /// is over.
    wake_scheduled: bool,
}

/// After a failed step (a full disk, say), no step until the wait is over,
/// and the wait doubles with each failure in a row up to `MAX`: a retry on
/// every tick would flood the log and burn a core.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    retry_at: Option<Instant>,
    wait: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    fn new() -> Backoff {
        Backoff { retry_at: None, wait: Backoff::FIRST }
    }

    fn due(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|at| now >= at)
    }

    fn failed(&mut self, now: Instant) {
        self.retry_at = Some(now + self.wait);
        self.wait = (self.wait * 2).min(Backoff::MAX);
    }
}

impl IndexerState {
    fn due(&self, now: Instant) -> bool {
        self.next_step_at.is_none_or(|at| now >= at) && self.retry.due(now)
    }

    /// When the next step may start: the later of the two waits.
    fn due_at(&self) -> Option<Instant> {
        self.next_step_at.max(self.retry.retry_at)
    }
}

/// Sends the indexer a tick after each write to the replication log (its
/// bell), so an entry is indexed as soon as it is in the store rather than
/// at the next look of a timer; one tick waits at a time.
fn ring_on_log_writes(me: ActorRef<IndexerMsg>, store: &Store, queued: Arc<AtomicBool>) {
    let Some(mut bell) = store.bell(crate::replication::REPLOG) else { return };
    tokio::spawn(async move {
        while bell.changed().await.is_ok() {
            // Ends with the actor: a restarted one listens afresh.
            if !queued.swap(true, Ordering::AcqRel) && me.send_message(IndexerMsg::Tick).is_err() {
                break;
            }
        }
    });
}

/// What to do to one record in the index.
enum Change {
    Upsert(Box<IndexDoc>, Vec<String>),
    Delete,
}

/// What one step has read about each business and sealing key, so the
/// records of one push (thousands in a bulk import) read it once.
struct Known {
    now: UnixMs,
    blocks: HashMap<String, Vec<String>>,
    certificates: HashMap<String, Vec<svc_core::seal::Issuance>>,
    compromised: HashMap<String, Option<UnixMs>>,
}

impl Known {
    fn at(now: UnixMs) -> Known {
        Known { now, blocks: HashMap::new(), certificates: HashMap::new(), compromised: HashMap::new() }
    }
}

/// `map[key]`, read with `read` the first time.
fn remembered<V: Clone>(
    map: &mut HashMap<String, V>,
    key: &str,
    read: impl FnOnce() -> svc_store::StoreResult<V>,
) -> Result<V, ActorError> {
    if let Some(value) = map.get(key) {
        return Ok(value.clone());
    }
    let value = read().map_err(ActorError::from)?;
    map.insert(key.to_owned(), value.clone());
    Ok(value)
}

impl IndexerState {
    /// Whether `version` may be served now (`Registry::serves`, from what
    /// this step already knows).
    fn serves(&self, business_uuid: &str, version: &RecordVersion, known: &mut Known) -> Result<bool, ActorError> {
        let Some((key_id, sealed_at)) = version.sealed_by() else { return Ok(false) };
        let history =
            remembered(&mut known.certificates, business_uuid, || self.registry.certificate_history(business_uuid))?;
        let compromised = remembered(&mut known.compromised, &key_id, || self.registry.compromised_at(&key_id))?;
        Ok(svc_core::seal::serves(&history, sealed_at, compromised, known.now))
    }

    /// The index's view of a record now: its live row, or nothing.
    fn record_change(&self, head: &RecordHead, known: &mut Known) -> Result<Option<(RecordType, Change)>, ActorError> {
        let collection = head.record_type;
        if !collection.is_collection() {
            return Ok(None);
        }
        if head.state != RecordState::Live || head.live_generation == 0 {
            return Ok(Some((collection, Change::Delete)));
        }
        let version = self.registry.record_version(&head.record_id, head.live_generation).map_err(ActorError::from)?;
        let served = match &version {
            Some(v) => self.serves(&head.business_uuid, v, known)?,
            None => false,
        };
        let Some(doc) = version.filter(|_| served).and_then(|v| index_doc(collection, &v.row)) else {
            return Ok(Some((collection, Change::Delete)));
        };
        let blocked = remembered(&mut known.blocks, &head.business_uuid, || {
            Ok(self.registry.blocks_of(&head.business_uuid)?.into_iter().map(|b| b.group_id).collect())
        })?;
        Ok(Some((collection, Change::Upsert(Box::new(doc), blocked))))
    }

    /// Applies every entry after the applied sequence; answers whether it did any.
    async fn step(&mut self) -> Result<bool, ActorError> {
        let entries = entries_after(&self.args.store, self.applied, BATCH).map_err(ActorError::from)?;
        let Some(last) = entries.last().map(|e| e.seq) else { return Ok(false) };
        // The newest change of each record wins within a step.
        let mut changes: BTreeMap<String, (RecordType, Change)> = BTreeMap::new();
        let mut known = Known::at(self.args.clock.now());
        let mut reblock: Vec<String> = Vec::new();
        for entry in entries {
            for op in entry.ops {
                match op {
                    Op::Put { cf: name, value, .. } if name == cf::RECORDS.name() => {
                        let head = svc_store::decode::<RecordHead>(cf::RECORDS, &value).map_err(ActorError::from)?;
                        if let Some(change) = self.record_change(&head, &mut known)? {
                            changes.insert(head.record_id.clone(), change);
                        }
                    }
                    // Blocks, certificates and keys are keyed or held by business.
                    Op::Put { cf: name, key, .. } | Op::Delete { cf: name, key }
                        if name == cf::BLOCKS.name() || name == cf::CERTIFICATES.name() =>
                    {
                        let business = key.split(|b| *b == 0).next().unwrap_or_default();
                        reblock.push(String::from_utf8_lossy(business).into_owned());
                    }
                    Op::Put { cf: name, value, .. }
                        if name == cf::INTEGRATION_KEYS.name() || name == cf::PASSKEYS.name() =>
                    {
                        let family = if name == cf::PASSKEYS.name() { cf::PASSKEYS } else { cf::INTEGRATION_KEYS };
                        let key = svc_store::decode::<BusinessKey>(family, &value).map_err(ActorError::from)?;
                        reblock.push(key.business_uuid);
                    }
                    _ => {}
                }
            }
        }
        // A block, certificate or key change re-indexes every live record
        // of the business.
        reblock.sort();
        reblock.dedup();
        self.schedule(&reblock)?;
        self.rejudge(&reblock, &mut changes, &mut known)?;
        self.apply(changes).await?;
        self.args.store.put(cf::meta::INDEX_APPLIED_SEQ, APPLIED_KEY, &last).map_err(ActorError::from)?;
        self.applied = last;
        // When each entry became searchable here (the replication bench reads these).
        tracing::debug!(applied_seq = last, at_ms = self.args.clock.now().0, "index step committed");
        Ok(true)
    }

    /// Remembers when a status of each of `businesses` takes effect later.
    fn schedule(&mut self, businesses: &[String]) -> Result<(), ActorError> {
        let now = self.args.clock.now();
        for business in businesses {
            let history = self.registry.certificate_history(business).map_err(ActorError::from)?;
            for at in svc_core::seal::serving_changes_after(&history, now) {
                self.later.insert((at, business.clone()));
            }
        }
        Ok(())
    }

    /// Judges every record of `businesses` again into `changes`.
    fn rejudge(
        &self,
        businesses: &[String],
        changes: &mut BTreeMap<String, (RecordType, Change)>,
        known: &mut Known,
    ) -> Result<(), ActorError> {
        if businesses.is_empty() {
            return Ok(());
        }
        // One head at a time: the records of every business are read, and
        // only those of the businesses named are kept.
        let mut heads = Vec::new();
        self.args.store.walk(cf::RECORDS, &[], None, |_, head: RecordHead| {
            if businesses.contains(&head.business_uuid) {
                heads.push(head);
            }
            true
        })?;
        for head in heads {
            if let Some(change) = self.record_change(&head, known)? {
                changes.insert(head.record_id.clone(), change);
            }
        }
        Ok(())
    }

    /// Judges again the records of businesses whose later status has taken
    /// effect; answers whether there were any.
    async fn take_effect(&mut self) -> Result<bool, ActorError> {
        let now = self.args.clock.now();
        let mut due = Vec::new();
        while let Some((at, _)) = self.later.first()
            && *at <= now
        {
            if let Some((_, business)) = self.later.pop_first() {
                due.push(business);
            }
        }
        if due.is_empty() {
            return Ok(false);
        }
        due.sort();
        due.dedup();
        let mut changes = BTreeMap::new();
        self.rejudge(&due, &mut changes, &mut Known::at(now))?;
        self.apply(changes).await?;
        Ok(true)
    }

    /// Sends each shard its upserts and deletes, and waits for each commit.
    async fn apply(&mut self, changes: BTreeMap<String, (RecordType, Change)>) -> Result<(), ActorError> {
        let k = self.args.shards_per_collection;
        let mut batches: HashMap<(RecordType, usize), (Vec<Blocked>, Vec<String>)> = HashMap::new();
        for (record_id, (collection, change)) in changes {
            let batch = batches.entry((collection, shard_of(&record_id, k))).or_default();
            match change {
                Change::Upsert(doc, blocked) => batch.0.push((*doc, blocked)),
                Change::Delete => batch.1.push(record_id),
            }
        }
        let started = svc_clock::monotonic();
        for (shard, (upserts, deletes)) in batches {
            let actor = self.args.shards.get(&shard).ok_or(ActorError::Refused("no such shard"))?;
            actor.call(|reply| IndexShardMsg::Apply { upserts, deletes, reply }).await.map_err(ActorError::from)??;
        }
        self.shard_micros += started.elapsed().as_micros() as u64;
        crate::faults::crash_point(crate::faults::CrashPoint::IndexApplied);
        Ok(())
    }
}

impl Actor for Indexer {
    type Msg = IndexerMsg;
    type State = IndexerState;
    type Arguments = IndexerArgs;

    async fn pre_start(&self, me: ActorRef<IndexerMsg>, args: IndexerArgs) -> Result<IndexerState, ActorProcessingErr> {
        let applied = indexed_seq(&args.store)?;
        let bell_tick_queued = Arc::new(AtomicBool::new(false));
        ring_on_log_writes(me, &args.store, bell_tick_queued.clone());
        let mut state = IndexerState {
            registry: Registry::new(args.store.clone()),
            args,
            applied,
            next_step_at: None,
            steps: 0,
            step_micros: 0,
            shard_micros: 0,
            retry: Backoff::new(),
            later: Default::default(),
            bell_tick_queued,
            wake_scheduled: false,
        };
        let businesses: Vec<String> = state.registry.businesses()?.into_iter().map(|b| b.uuid).collect();
        state.schedule(&businesses)?;
        Ok(state)
    }

    async fn handle(
        &self,
        me: ActorRef<IndexerMsg>,
        msg: IndexerMsg,
        state: &mut IndexerState,
    ) -> Result<(), ActorProcessingErr> {
        if let IndexerMsg::Tick = msg {
            state.bell_tick_queued.store(false, Ordering::Release);
        }
        match msg {
            // Within a wait: one tick for when it is over.
            IndexerMsg::Tick if !state.due(svc_clock::monotonic()) => {
                if !state.wake_scheduled
                    && let Some(at) = state.due_at()
                {
                    state.wake_scheduled = true;
                    drop(me.send_after(at.saturating_duration_since(svc_clock::monotonic()), || IndexerMsg::Tick));
                }
            }
            IndexerMsg::Tick => loop {
                state.wake_scheduled = false;
                let started = svc_clock::monotonic();
                let step = match state.take_effect().await {
                    Ok(_) => state.step().await,
                    Err(e) => Err(e),
                };
                match step {
                    Ok(true) => {
                        let took = started.elapsed();
                        state.next_step_at = Some(svc_clock::monotonic() + commit_gap(took));
                        state.steps += 1;
                        state.step_micros += took.as_micros() as u64;
                        state.retry = Backoff::new();
                    }
                    Ok(false) => break,
                    // Left for a later tick: nothing is marked applied.
                    Err(e) => {
                        let retry_in_ms = state.retry.wait.as_millis() as u64;
                        tracing::error!(error = %e, retry_in_ms, "index step failed");
                        state.retry.failed(svc_clock::monotonic());
                        break;
                    }
                }
            },
            IndexerMsg::Observe(reply) => {
                let _ = reply.send(IndexerSnapshot {
                    applied_seq: state.applied,
                    steps: state.steps,
                    step_micros: state.step_micros,
                    shard_micros: state.shard_micros,
                });
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for IndexerMsg {
    type Seen = IndexerSnapshot;

    fn observe(reply: ractor::RpcReplyPort<IndexerSnapshot>) -> Self {
        IndexerMsg::Observe(reply)
    }

    fn describe(seen: IndexerSnapshot) -> serde_json::Value {
        serde_json::json!({"applied_seq": seen.applied_seq})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_steps_wait_longer_each_time_up_to_a_bound() {
        let start = Instant::now();
        let mut retry = Backoff::new();
        assert!(retry.due(start));
        retry.failed(start);
        assert!(!retry.due(start + Duration::from_millis(99)));
        assert!(retry.due(start + Duration::from_millis(100)));
        let mut waits = Vec::new();
        for _ in 0..10 {
            waits.push(retry.wait);
            retry.failed(start);
        }
        assert_eq!(waits[..3], [Duration::from_millis(200), Duration::from_millis(400), Duration::from_millis(800)]);
        assert_eq!(retry.wait, Backoff::MAX, "bounded");
        assert!(!retry.due(start + Duration::from_millis(4_999)));
    }

    // The actor alone, with no timer sending it ticks: only the log's bell
    // can wake it.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_write_to_the_log_wakes_the_indexer_without_a_tick() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let clock: svc_clock::SharedClock = Arc::new(svc_clock::SystemClock);
        let args = IndexerArgs { store: store.clone(), clock, shards: HashMap::new(), shards_per_collection: 1 };
        let (indexer, handle) = Actor::spawn(None, Indexer, args).await.unwrap();
        let mut log = crate::replication::LogWriter::open(store.clone()).unwrap();
        let mut change = crate::replication::Change::new();
        change.put(cf::TLOG_INDEX, b"b1", &1u64);
        let seq = log.commit(change, UnixMs(1)).unwrap().unwrap();
        let mut applied = 0;
        for _ in 0..200 {
            applied = indexed_seq(&store).unwrap();
            if applied >= seq {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(applied, seq, "the indexer applied the entry written after it started");
        indexer.stop(None);
        handle.await.unwrap();
    }

    #[test]
    fn the_wait_after_a_step_follows_its_length_within_bounds() {
        assert_eq!(commit_gap(Duration::ZERO), MIN_GAP);
        assert_eq!(commit_gap(Duration::from_millis(3)), MIN_GAP);
        assert_eq!(commit_gap(Duration::from_millis(40)), Duration::from_millis(40));
        assert_eq!(commit_gap(Duration::from_secs(2)), MAX_GAP);
    }
}
