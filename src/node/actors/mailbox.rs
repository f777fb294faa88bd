//! A stable, bounded address for an actor. The region supervisor may
//! restart an actor; every holder of its `Mailbox` reaches the new one. A
//! request waits on an actor only while the actor's room has space: a full
//! mailbox is refused at once (`MailboxError::Full`, which a surface
//! answers 503 with `Retry-After`), so a burst never queues without bound.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};
use tokio::sync::Semaphore;

/// Why a message did not get its answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailboxError {
    /// As many requests as the mailbox holds are already waiting.
    #[error("the {0} actor is busy: its mailbox is full")]
    Full(Arc<str>),
    /// The actor stopped (or failed, and is not back yet).
    #[error("the {0} actor is not running")]
    Stopped(Arc<str>),
    /// The actor did not answer within the caller's wait.
    #[error("the {0} actor did not answer in time")]
    Timeout(Arc<str>),
}

pub struct Mailbox<M: Message> {
    name: Arc<str>,
    actor: Arc<RwLock<ActorRef<M>>>,
    /// Requests waiting on this actor, at most its capacity.
    room: Arc<Semaphore>,
    capacity: usize,
}

impl<M: Message> Clone for Mailbox<M> {
    fn clone(&self) -> Self {
        Mailbox { name: self.name.clone(), actor: self.actor.clone(), room: self.room.clone(), capacity: self.capacity }
    }
}

impl<M: Message> Mailbox<M> {
    pub fn new(name: &str, actor: ActorRef<M>, capacity: usize) -> Self {
        Mailbox {
            name: name.into(),
            actor: Arc::new(RwLock::new(actor)),
            room: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The actor running now.
    pub fn actor(&self) -> ActorRef<M> {
        match self.actor.read() {
            Ok(actor) => actor.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Whether the actor is running now (not stopped, nor being restarted).
    pub fn is_running(&self) -> bool {
        self.actor().get_status() == ractor::ActorStatus::Running
    }

    /// Points every holder at a restarted actor.
    pub fn replace(&self, actor: ActorRef<M>) {
        match self.actor.write() {
            Ok(mut slot) => *slot = actor,
            Err(poisoned) => *poisoned.into_inner() = actor,
        }
    }

    /// Requests waiting on the actor now.
    pub fn waiting(&self) -> usize {
        self.capacity - self.room.available_permits()
    }

    /// Asks the actor and waits for its answer. Refused at once when the
    /// mailbox is full.
    pub async fn call<R: Send + 'static>(&self, build: impl FnOnce(RpcReplyPort<R>) -> M) -> Result<R, MailboxError> {
        self.call_within(build, None).await
    }

    /// As `call`, waiting at most `wait` when given.
    pub async fn call_within<R: Send + 'static>(
        &self,
        build: impl FnOnce(RpcReplyPort<R>) -> M,
        wait: Option<Duration>,
    ) -> Result<R, MailboxError> {
        let _place = self.room.clone().try_acquire_owned().map_err(|_| MailboxError::Full(self.name.clone()))?;
        match self.actor().call(build, wait).await {
            Ok(CallResult::Success(answer)) => Ok(answer),
            Ok(CallResult::Timeout) => Err(MailboxError::Timeout(self.name.clone())),
            Ok(CallResult::SenderError) | Err(_) => Err(MailboxError::Stopped(self.name.clone())),
        }
    }

    /// Tells the actor something that needs no answer. Such messages follow
    /// a call that found room (a reservation given back), or come from the
    /// node's own timers, so they are bounded by those.
    pub fn cast(&self, message: M) -> Result<(), MailboxError> {
        self.actor().send_message(message).map_err(|_| MailboxError::Stopped(self.name.clone()))
    }

    /// Takes every free place, as a burst of requests would, until the
    /// places are dropped: drills and tests of a full mailbox.
    pub fn occupy(&self) -> Vec<tokio::sync::OwnedSemaphorePermit> {
        std::iter::from_fn(|| self.room.clone().try_acquire_owned().ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use ractor::{Actor, ActorProcessingErr};

    use super::*;

    struct Slow;

    enum SlowMsg {
        Wait(Duration, RpcReplyPort<u32>),
    }

    impl Actor for Slow {
        type Msg = SlowMsg;
        type State = u32;
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<SlowMsg>, _: ()) -> Result<u32, ActorProcessingErr> {
            Ok(0)
        }

        async fn handle(&self, _: ActorRef<SlowMsg>, msg: SlowMsg, n: &mut u32) -> Result<(), ActorProcessingErr> {
            let SlowMsg::Wait(wait, reply) = msg;
            tokio::time::sleep(wait).await;
            *n += 1;
            let _ = reply.send(*n);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_full_mailbox_is_refused_at_once_and_a_replaced_actor_is_reached() {
        let (first, _) = Actor::spawn(None, Slow, ()).await.unwrap();
        let mailbox = Mailbox::new("slow", first.clone(), 2);
        let long = Duration::from_millis(300);
        let (a, b) = (mailbox.clone(), mailbox.clone());
        let waiting = [
            tokio::spawn(async move { a.call(|r| SlowMsg::Wait(long, r)).await }),
            tokio::spawn(async move { b.call(|r| SlowMsg::Wait(long, r)).await }),
        ];
        while mailbox.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        let refused = mailbox.call(|r| SlowMsg::Wait(Duration::ZERO, r)).await;
        assert_eq!(refused, Err(MailboxError::Full("slow".into())));
        for handle in waiting {
            assert!(handle.await.unwrap().is_ok());
        }
        assert_eq!(mailbox.waiting(), 0, "places are given back with the answers");

        first.stop(None);
        while first.get_status() != ractor::ActorStatus::Stopped {
            tokio::task::yield_now().await;
        }
        let stopped = mailbox.call(|r| SlowMsg::Wait(Duration::ZERO, r)).await;
        assert_eq!(stopped, Err(MailboxError::Stopped("slow".into())));
        let (second, _) = Actor::spawn(None, Slow, ()).await.unwrap();
        mailbox.replace(second);
        assert_eq!(mailbox.call(|r| SlowMsg::Wait(Duration::ZERO, r)).await, Ok(1), "a fresh actor answers");
    }
}
