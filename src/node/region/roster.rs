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

use super::supervisor::Failures;

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

#[cfg(test)]
mod tests {
    use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

    use super::*;
    use crate::actors::observed::Observed;
    use crate::region::supervisor::{Spec, Supervised, Supervisor, SupervisorMsg, supervise};

    /// An actor that stops answering when told to: its handler holds its
    /// thread, as a stuck write or an endless loop would.
    #[derive(Clone)]
    struct Sleepy;

    enum SleepyMsg {
        Freeze(Duration),
        Observe(RpcReplyPort<u64>),
    }

    impl Observed for SleepyMsg {
        type Seen = u64;

        fn observe(reply: RpcReplyPort<u64>) -> Self {
            SleepyMsg::Observe(reply)
        }

        fn describe(seen: u64) -> Value {
            serde_json::json!({"answers": seen})
        }
    }

    impl Actor for Sleepy {
        type Msg = SleepyMsg;
        type State = u64;
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<SleepyMsg>, _: ()) -> Result<u64, ActorProcessingErr> {
            Ok(0)
        }

        async fn handle(
            &self,
            _: ActorRef<SleepyMsg>,
            msg: SleepyMsg,
            answers: &mut u64,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                SleepyMsg::Freeze(for_how_long) => std::thread::sleep(for_how_long),
                SleepyMsg::Observe(reply) => {
                    *answers += 1;
                    let _ = reply.send(*answers);
                }
            }
            Ok(())
        }
    }

    async fn until(what: &str, mut holds: impl FnMut() -> bool) {
        for _ in 0..500 {
            if holds() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never: {what}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_frozen_actor_is_named_among_the_failures_then_restarted() {
        let failures = Failures::default();
        let (supervisor, _) = Actor::spawn(None, Supervisor, failures.clone()).await.unwrap();
        let sup = Supervised { actor: supervisor.clone(), roster: Roster::default() };
        let spec = Spec::new("sleepy", Stage::Receipts, Sleepy, || Ok(())).period(Duration::from_millis(200));
        let mailbox = supervise(&sup, spec).await.unwrap();
        let watchdog = watch(sup.roster.clone(), failures.clone(), Duration::from_millis(20));

        // Answering, it is never named.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(failures.list().is_empty(), "{:?}", failures.list());
        assert_eq!(
            sup.roster.observe(Duration::from_secs(1)).await["sleepy"]["answers"].as_u64().map(|n| n > 0),
            Some(true)
        );

        // Frozen for longer than its period: named (so `/readyz` is
        // unready) while it holds its thread, then killed and started again.
        mailbox.actor().send_message(SleepyMsg::Freeze(Duration::from_millis(1500))).unwrap();
        until("named frozen", || failures.list().get("sleepy").is_some_and(|why| why.starts_with("frozen"))).await;
        assert!(sup.roster.entries()[0].frozen());
        let restarted = || async {
            let children = ractor::call!(supervisor, SupervisorMsg::Observe).unwrap();
            children.iter().any(|c| c.name == "sleepy" && c.restarts == 1)
        };
        for _ in 0..500 {
            if restarted().await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(restarted().await, "the supervisor started it again");
        // A new actor: its count of answers began again.
        let answers = mailbox.call(SleepyMsg::Observe).await.unwrap();
        assert!(answers < 5, "a fresh actor answers ({answers})");
        until("no longer named", || failures.list().is_empty()).await;
        until("no longer frozen", || !sup.roster.entries()[0].frozen()).await;
        watchdog.abort();
    }
}
