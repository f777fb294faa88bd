//! The region's supervisor: the parent of every actor of a node. When an
//! actor fails (a panic, or an error out of its handler) or stops when it
//! should not, the supervisor starts it again from its stored state if it
//! can; if it cannot (or the restart fails), the actor is named, with its
//! reason, among the region's failures, and `/readyz` answers unready until
//! the node is restarted: a node never serves on with a dead actor.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use super::failures::Failures;
use super::roster::{Entry, Reach, Roster, Stage};
use crate::actors::mailbox::Mailbox;
use crate::actors::observed::Observed;

/// Starts an actor again, linked to the supervisor, and points its mailbox
/// at it. Answers the new actor's cell.
pub type Restart =
    Box<dyn Fn(ActorCell) -> Pin<Box<dyn Future<Output = Result<ActorCell, SpawnError>> + Send>> + Send + Sync>;

/// One supervised actor, as `Observe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildState {
    pub name: String,
    pub restarts: u32,
    pub failed: Option<String>,
}

pub enum SupervisorMsg {
    /// Supervises `cell` under `name`; `restart` brings it back after a
    /// failure. Answered once adopted; one that died before is named among the
    /// failures then.
    Adopt {
        name: String,
        cell: ActorCell,
        restart: Option<Restart>,
        reply: RpcReplyPort<()>,
    },
    /// The node is stopping: actors that stop now are not failures.
    Stopping(RpcReplyPort<()>),
    /// Marks the actor named as one to leave stopped, without counting it
    /// a failure, and answers it for the caller to stop: a drill that takes
    /// one part of a region away.
    Retire {
        name: String,
        reply: RpcReplyPort<Option<ActorCell>>,
    },
    Observe(RpcReplyPort<Vec<ChildState>>),
}

struct Child {
    name: String,
    restart: Option<Restart>,
    restarts: u32,
    /// When its recent restarts happened, within `RESTART_WINDOW`.
    recent: std::collections::VecDeque<std::time::Instant>,
    retired: bool,
}

pub struct SupervisorState {
    children: BTreeMap<ActorId, Child>,
    failures: Failures,
    stopping: bool,
}

pub struct Supervisor;

/// How many times one actor is restarted within `RESTART_WINDOW` before it
/// is left failed: an actor that fails on every start would otherwise
/// spin, while failures far apart each get their restart.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = Failures;

    async fn pre_start(
        &self,
        _: ActorRef<SupervisorMsg>,
        failures: Failures,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        Ok(SupervisorState { children: BTreeMap::new(), failures, stopping: false })
    }

    async fn handle(
        &self,
        me: ActorRef<SupervisorMsg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Adopt { name, cell, restart, reply } => {
                // A child that died before it was adopted sent its event to no one
                // who knew it: it is named now, not lost.
                if matches!(cell.get_status(), ractor::ActorStatus::Stopping | ractor::ActorStatus::Stopped)
                    && !state.stopping
                {
                    state.failures.set(&name, "stopped before its supervisor adopted it".into());
                }
                let child = Child { name, restart, restarts: 0, recent: Default::default(), retired: false };
                state.children.insert(cell.get_id(), child);
                let _ = reply.send(());
            }
            SupervisorMsg::Stopping(reply) => {
                state.stopping = true;
                let _ = reply.send(());
            }
            SupervisorMsg::Retire { name, reply } => {
                let found = state.children.iter_mut().find(|(_, c)| c.name == name);
                let cell = found.and_then(|(id, child)| {
                    let cell = me.get_children().into_iter().find(|c| c.get_id() == *id)?;
                    child.retired = true;
                    Some(cell)
                });
                let _ = reply.send(cell);
            }
            SupervisorMsg::Observe(reply) => {
                let failures = state.failures.list();
                let children = state
                    .children
                    .values()
                    .map(|c| ChildState {
                        name: c.name.clone(),
                        restarts: c.restarts,
                        failed: failures.get(&c.name).cloned(),
                    })
                    .collect();
                let _ = reply.send(children);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        me: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, reason) = match event {
            SupervisionEvent::ActorFailed(cell, error) => (cell, format!("failed: {error}")),
            SupervisionEvent::ActorTerminated(cell, last_state, why) => {
                // Let go of what it held (a writer, a lock) before another starts.
                drop(last_state);
                (cell, format!("stopped: {}", why.unwrap_or_else(|| "without a reason".into())))
            }
            _ => return Ok(()),
        };
        let Some(mut child) = state.children.remove(&cell.get_id()) else { return Ok(()) };
        if state.stopping {
            return Ok(());
        }
        if child.retired {
            tracing::warn!(actor = %child.name, "an actor was retired; it stays stopped");
            state.children.insert(cell.get_id(), child);
            return Ok(());
        }
        tracing::error!(actor = %child.name, %reason, "an actor stopped");
        let now = svc_clock::monotonic();
        while child.recent.front().is_some_and(|at| now.duration_since(*at) > RESTART_WINDOW) {
            child.recent.pop_front();
        }
        let restarted = match &child.restart {
            Some(_) if child.recent.len() >= MAX_RESTARTS => Err(format!(
                "{reason}; not restarted after {MAX_RESTARTS} restarts within {} s",
                RESTART_WINDOW.as_secs()
            )),
            Some(restart) => restart(me.get_cell()).await.map_err(|e| format!("{reason}; its restart failed: {e}")),
            None => Err(format!("{reason}; it cannot be restarted while the node runs")),
        };
        match restarted {
            Ok(new) => {
                child.restarts += 1;
                child.recent.push_back(now);
                tracing::warn!(actor = %child.name, restarts = child.restarts, "actor restarted from its stored state");
                state.failures.clear(&child.name);
                state.children.insert(new.get_id(), child);
            }
            Err(reason) => {
                tracing::error!(actor = %child.name, %reason, "the region is unready");
                state.failures.set(&child.name, reason);
                // Kept under its old id, so Observe still lists it.
                state.children.insert(cell.get_id(), child);
            }
        }
        Ok(())
    }
}

/// How to start one actor of a region, and start it again after a failure:
/// its arguments are made anew from what the store holds, its timers are
/// set again, and every holder of its mailbox reaches the new one.
pub struct Spec<A: Actor> {
    name: String,
    stage: Stage,
    period: Duration,
    actor: A,
    args: Box<dyn Fn() -> Result<A::Arguments, SpawnError> + Send + Sync>,
    ticks: Vec<Tick<A::Msg>>,
    snapshot: Option<Snapshot>,
}

/// A snapshot read without asking the actor (one that spends its time in
/// a long poll shows what it shares instead).
type Snapshot = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// How long an actor may go without answering, unless its `Spec` says
/// otherwise: far above any message's work.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(60);

/// A message an actor is sent every period while it runs.
type Tick<M> = (Duration, Arc<dyn Fn() -> M + Send + Sync>);

impl<A: Actor + Clone + Sync> Spec<A>
where
    A::Msg: Observed,
{
    /// An actor whose arguments can be made again, so it can be restarted,
    /// and the stage of the region's shutdown it stops in.
    pub fn new(
        name: impl Into<String>,
        stage: Stage,
        actor: A,
        args: impl Fn() -> Result<A::Arguments, SpawnError> + Send + Sync + 'static,
    ) -> Self {
        Spec {
            name: name.into(),
            stage,
            period: DEFAULT_PERIOD,
            actor,
            args: Box::new(args),
            ticks: Vec::new(),
            snapshot: None,
        }
    }

    /// How long it may go without answering before the watchdog restarts it.
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Its snapshot read from what it shares, not asked of it.
    pub fn seen(mut self, snapshot: impl Fn() -> serde_json::Value + Send + Sync + 'static) -> Self {
        self.snapshot = Some(Arc::new(snapshot));
        self
    }

    /// A message sent every `every`, as long as the actor runs.
    pub fn tick(mut self, every: Duration, message: impl Fn() -> A::Msg + Send + Sync + 'static) -> Self {
        self.ticks.push((every, Arc::new(message)));
        self
    }

    async fn spawn(&self, sup: ActorCell) -> Result<(ActorRef<A::Msg>, tokio::task::JoinHandle<()>), SpawnError> {
        let args = (self.args)()?;
        let (actor, task) = Actor::spawn_linked(None, self.actor.clone(), args, sup)
            .await
            .map_err(|e| SpawnError(format!("{}: {e}", self.name)))?;
        for (every, message) in &self.ticks {
            let message = message.clone();
            actor.send_interval(*every, move || message());
        }
        Ok((actor, task))
    }
}

/// An actor that did not start: its name and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpawnError(pub String);

/// Requests that may wait on one actor at once; one more is answered
/// `503` with `Retry-After` (a burst never queues without bound).
pub const MAILBOX_CAPACITY: usize = 1024;

/// The region's supervisor and the roster of what it supervises.
pub struct Supervised {
    pub actor: ActorRef<SupervisorMsg>,
    pub roster: Roster,
}

/// Starts an actor as a child of the region's supervisor, which restarts it
/// from its `Spec` when it fails, and lists it in the region's roster.
/// Answers the actor's stable mailbox.
pub async fn supervise<A: Actor + Clone + Sync>(sup: &Supervised, spec: Spec<A>) -> Result<Mailbox<A::Msg>, SpawnError>
where
    A::Msg: Observed,
{
    let Supervised { actor: sup, roster } = sup;
    let (actor, task) = spec.spawn(sup.get_cell()).await?;
    let name = spec.name.clone();
    let mailbox = Mailbox::new(&name, actor.clone(), MAILBOX_CAPACITY);
    roster.add(Entry::new(name.clone(), spec.stage, spec.period, reach(&mailbox, spec.snapshot.clone())));
    let spec = Arc::new(spec);
    let again = mailbox.clone();
    let running = Arc::new(Mutex::new(Some(task)));
    let restart: Restart = Box::new(move |sup| {
        let (spec, mailbox, running) = (spec.clone(), again.clone(), running.clone());
        Box::pin(async move {
            // The old actor's task ends once its state is dropped (a
            // pending write finished, a writer's lock let go): only then
            // does the new one read the store.
            let old = running.lock().ok().and_then(|mut t| t.take());
            if let Some(old) = old {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(10), old).await;
            }
            let (actor, task) = spec.spawn(sup).await?;
            if let Ok(mut slot) = running.lock() {
                *slot = Some(task);
            }
            mailbox.replace(actor.clone());
            Ok(actor.get_cell())
        })
    });
    let cell = actor.get_cell();
    ractor::call!(sup, |reply| SupervisorMsg::Adopt { name, cell, restart: Some(restart), reply })
        .map_err(|e| SpawnError(format!("the supervisor: {e}")))?;
    Ok(mailbox)
}

/// How the roster reaches an actor through its mailbox.
fn reach<M: Observed>(mailbox: &Mailbox<M>, snapshot: Option<Snapshot>) -> Reach {
    let asked = mailbox.clone();
    let probed = mailbox.clone();
    let stopped = mailbox.clone();
    let killed = mailbox.clone();
    let counted = mailbox.clone();
    Reach {
        snapshot: Box::new(move |wait| {
            let (mailbox, snapshot) = (asked.clone(), snapshot.clone());
            Box::pin(async move {
                match snapshot {
                    Some(read) => Some(read()),
                    None => mailbox.call_within(M::observe, Some(wait)).await.ok().map(M::describe),
                }
            })
        }),
        answers: Box::new(move |wait| {
            let actor = probed.actor();
            Box::pin(async move {
                match actor.call(M::observe, Some(wait)).await {
                    Ok(ractor::rpc::CallResult::Success(_)) => Some(true),
                    Ok(ractor::rpc::CallResult::Timeout) => Some(false),
                    // Stopped before it answered, or not running at all.
                    Ok(ractor::rpc::CallResult::SenderError) | Err(_) => None,
                }
            })
        }),
        stop: Box::new(move |wait| {
            let actor = stopped.actor();
            Box::pin(async move {
                let _ = actor.stop_and_wait(None, Some(wait)).await;
            })
        }),
        kill: Box::new(move || killed.actor().kill()),
        waiting: Box::new(move || counted.waiting()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// An actor that panics when told to.
    struct Fragile;

    enum FragileMsg {
        Panic,
        Ping(RpcReplyPort<()>),
    }

    impl Actor for Fragile {
        type Msg = FragileMsg;
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<FragileMsg>, _: ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }

        async fn handle(&self, _: ActorRef<FragileMsg>, msg: FragileMsg, _: &mut ()) -> Result<(), ActorProcessingErr> {
            match msg {
                FragileMsg::Panic => panic!("told to"),
                FragileMsg::Ping(reply) => {
                    let _ = reply.send(());
                }
            }
            Ok(())
        }
    }

    async fn settle(failures: &Failures, name: &str, failed: bool) {
        for _ in 0..200 {
            if failures.list().contains_key(name) == failed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_panicking_actor_is_restarted_or_named_among_the_failures() {
        let failures = Failures::default();
        let (sup, _) = Actor::spawn(None, Supervisor, failures.clone()).await.unwrap();
        let spawn = |sup: ActorCell| async move {
            Actor::spawn_linked(None, Fragile, (), sup).await.map(|(a, _)| a).map_err(|e| SpawnError(e.to_string()))
        };

        // Restartable: after its panic a new one answers, and nothing is failed.
        let restarted: Arc<Mutex<Option<ActorRef<FragileMsg>>>> = Arc::default();
        let first = spawn(sup.get_cell()).await.unwrap();
        let slot = restarted.clone();
        let restart: Restart = Box::new(move |cell| {
            let slot = slot.clone();
            Box::pin(async move {
                let actor = spawn(cell).await?;
                *slot.lock().unwrap() = Some(actor.clone());
                Ok(actor.get_cell())
            })
        });
        let cell = first.get_cell();
        ractor::call!(sup, |reply| SupervisorMsg::Adopt { name: "mended".into(), cell, restart: Some(restart), reply })
            .unwrap();
        first.send_message(FragileMsg::Panic).unwrap();
        for _ in 0..200 {
            if restarted.lock().unwrap().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let second = restarted.lock().unwrap().clone().expect("restarted");
        ractor::call!(second, FragileMsg::Ping).unwrap();
        assert!(failures.list().is_empty());

        // Not restartable: named with its reason until the node restarts.
        let lone = spawn(sup.get_cell()).await.unwrap();
        let cell = lone.get_cell();
        ractor::call!(sup, |reply| SupervisorMsg::Adopt { name: "lone".into(), cell, restart: None, reply }).unwrap();
        lone.send_message(FragileMsg::Panic).unwrap();
        settle(&failures, "lone", true).await;
        let reason = failures.list().get("lone").cloned().expect("named among the failures");
        assert!(reason.contains("told to") && reason.contains("cannot be restarted"), "{reason}");
        let observed = ractor::call!(sup, SupervisorMsg::Observe).unwrap();
        let mended = observed.iter().find(|c| c.name == "mended").unwrap();
        assert_eq!((mended.restarts, mended.failed.is_none()), (1, true));

        // Stopping: an actor stopped on purpose is no failure.
        ractor::call!(sup, SupervisorMsg::Stopping).unwrap();
        second.stop_and_wait(None, Some(Duration::from_secs(5))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!failures.list().contains_key("mended"));
    }
}

#[cfg(test)]
mod watchdog_tests {
    use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

    use super::*;
    use crate::region::roster::{Roster, Stage, watch};

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

        fn describe(seen: u64) -> serde_json::Value {
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

    /// Waits up to 30 s: on a machine busy with other tests the watchdog's
    /// tick and the restart may come late, never wrong.
    async fn until(what: &str, mut holds: impl FnMut() -> bool) {
        for _ in 0..3_000 {
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
