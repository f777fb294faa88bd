//! The region's actors, listed once. `supervise` adds each actor as it
//! starts it, with what its `Spec` declares: when it stops, how long it may
//! go without answering, and how it shows itself. `svc admin observe`, the
//! node's metrics, the watchdog (and so `/readyz`) and the region's
//! shutdown all loop over this list, so a new actor touches its own file
//! (its `Observed` answer) and its `Spec` in `region/start.rs`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::failures::Failures;

/// When an actor stops, in the region's shutdown: a stage waits for the
/// stages before it, so nothing stops while another still sends to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// A read region's pullers of home's log and feeds.
    Pullers,
    /// Home's push worker, which calls the publisher.
    Pushes,
    /// Retention, which calls the shards and the publisher.
    Retention,
    /// The indexer, before the shards it feeds.
    Indexer,
    /// Ad reservations, before the publisher and the uplink their
    /// settlements go through.
    Ads,
    IndexShards,
    /// Home's sequencer, witnesses and domain assurance, which write
    /// through the publisher.
    LogWriters,
    Publisher,
    /// The nonce store and billing, whose reports the uplinks ship.
    Ledgers,
    /// The receipt folder folds everything served (the open minute too)
    /// before the uplink ships its last report.
    Folder,
    /// A read region's uplinks: after billing and the nonce store, they
    /// ship what those wrote as they stop.
    Uplinks,
    /// The receipt log and analytics, last.
    Receipts,
}

type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// How a listed actor is asked, told and counted.
pub struct Reach {
    /// Its snapshot, as `svc admin observe` shows it (`None`: no answer).
    pub snapshot: Box<dyn Fn(Duration) -> Pending<Option<Value>> + Send + Sync>,
    /// Its `Observe` asked past its mailbox's room, the watchdog's
    /// heartbeat: whether it answered within the wait, or `None` when it
    /// is not running (failed, retired or stopping: its supervisor's
    /// business, not the watchdog's).
    pub answers: Box<dyn Fn(Duration) -> Pending<Option<bool>> + Send + Sync>,
    /// Stops it and waits until it let go of its state.
    pub stop: Box<dyn Fn(Duration) -> Pending<()> + Send + Sync>,
    /// Stops it at once, for its supervisor to start again.
    pub kill: Box<dyn Fn() + Send + Sync>,
    /// Requests waiting on it now.
    pub waiting: Box<dyn Fn() -> usize + Send + Sync>,
}

pub struct Entry {
    pub name: String,
    pub stage: Stage,
    /// How long it may go without answering before the watchdog names it
    /// and has it restarted.
    pub period: Duration,
    pub reach: Reach,
    /// Named by the watchdog, until it answers again.
    frozen: AtomicBool,
    /// A heartbeat is in flight.
    asking: AtomicBool,
}

impl Entry {
    pub fn new(name: String, stage: Stage, period: Duration, reach: Reach) -> Entry {
        Entry { name, stage, period, reach, frozen: AtomicBool::new(false), asking: AtomicBool::new(false) }
    }

    pub fn frozen(&self) -> bool {
        self.frozen.load(Ordering::Relaxed)
    }
}

/// The region's actors in the order they started.
#[derive(Clone, Default)]
pub struct Roster(Arc<Mutex<Vec<Arc<Entry>>>>);

impl Roster {
    pub fn add(&self, entry: Entry) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::new(entry));
    }

    pub fn entries(&self) -> Vec<Arc<Entry>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Every actor's snapshot by name, asked at once; one that does not
    /// answer within `wait` is `null`.
    pub async fn observe(&self, wait: Duration) -> serde_json::Map<String, Value> {
        let entries = self.entries();
        let asked = entries.iter().map(|e| (e.reach.snapshot)(wait));
        let seen = futures::future::join_all(asked).await;
        entries.iter().zip(seen).map(|(e, s)| (e.name.clone(), s.unwrap_or(Value::Null))).collect()
    }

    /// Stops every actor, stage by stage, each in the order it started.
    pub async fn stop(&self, wait: Duration) {
        let mut entries = self.entries();
        // A stable sort: within a stage, the order they started.
        entries.sort_by_key(|e| e.stage);
        for entry in entries {
            (entry.reach.stop)(wait).await;
        }
    }

    /// Asks each actor whose last answer is older than half its period,
    /// without waiting for the answers. One that does not answer within
    /// its period is named among the region's failures (so `/readyz` is
    /// unready) and killed, for its supervisor to start again from the
    /// store; it is no longer named once it answers.
    ///
    /// The heartbeats run in `asking`, so they end with the watchdog.
    pub fn check(&self, failures: &Failures, asking: &mut tokio::task::JoinSet<()>) {
        while asking.try_join_next().is_some() {}
        for entry in self.entries() {
            if entry.asking.swap(true, Ordering::AcqRel) {
                continue;
            }
            let failures = failures.clone();
            asking.spawn(async move {
                let answered = (entry.reach.answers)(entry.period).await;
                if answered == Some(true) && entry.frozen.swap(false, Ordering::AcqRel) {
                    tracing::warn!(actor = %entry.name, "a frozen actor answers again");
                    failures.clear(&entry.name);
                } else if answered == Some(false) && !entry.frozen.swap(true, Ordering::AcqRel) {
                    let reason = format!("frozen: no answer within {} ms", entry.period.as_millis());
                    tracing::error!(actor = %entry.name, %reason, "the watchdog restarts an actor");
                    failures.set(&entry.name, reason);
                    (entry.reach.kill)();
                }
                // Rest half a period between heartbeats.
                tokio::time::sleep(entry.period / 2).await;
                entry.asking.store(false, Ordering::Release);
            });
        }
    }
}

/// The watchdog: checks the roster every `every` until the region stops.
pub fn watch(roster: Roster, failures: Failures, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut asking = tokio::task::JoinSet::new();
        loop {
            tick.tick().await;
            roster.check(&failures, &mut asking);
        }
    })
}
