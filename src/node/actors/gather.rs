//! Group commit inside an actor: requests that queue while the actor is
//! busy are answered together, from one store write.
//!
//! The first request gathered sends the actor a flush message, which queues
//! behind every request already waiting. By the time it is handled, those
//! requests have joined the gathering, and one write answers them all. An
//! idle actor flushes the lone request at once (the flush message is next),
//! so nothing waits on a timer; a busy one writes once per queue, not once
//! per request. No request is answered before its write is in the store.

use ractor::RpcReplyPort;

use crate::actors::error::ActorError;
use svc_store::StoreError;

/// The requests gathered for the next write, at most `most` of them.
pub struct Gather<T> {
    pending: Vec<T>,
    flush_sent: bool,
    most: usize,
}

/// What the actor does after gathering a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// The gathering is full: write it now.
    WriteNow,
    /// Send the flush message: nothing is gathered ahead of this request.
    SendFlush,
    /// A flush message is on its way.
    Wait,
}

impl<T> Gather<T> {
    /// `most` answers per write; 1 writes each request on its own.
    pub fn new(most: usize) -> Self {
        Gather { pending: Vec::new(), flush_sent: false, most: most.max(1) }
    }

    /// Gathers `request` for actor `me`; answers what to write now, if
    /// anything. The flush message is sent when the gathering starts; an
    /// actor that cannot be sent it (stopping) writes at once.
    pub fn gather<M: ractor::Message>(&mut self, request: T, me: &ractor::ActorRef<M>, flush: M) -> Vec<T> {
        match self.add(request) {
            Next::WriteNow => self.take(),
            Next::SendFlush if me.send_message(flush).is_err() => self.flushed(),
            Next::SendFlush | Next::Wait => Vec::new(),
        }
    }

    /// Whether a gathering is open (a flush is on its way).
    pub fn is_open(&self) -> bool {
        self.flush_sent
    }

    fn add(&mut self, request: T) -> Next {
        self.pending.push(request);
        if self.pending.len() >= self.most {
            Next::WriteNow
        } else if self.flush_sent {
            Next::Wait
        } else {
            self.flush_sent = true;
            Next::SendFlush
        }
    }

    /// What is gathered, to write now.
    fn take(&mut self) -> Vec<T> {
        std::mem::take(&mut self.pending)
    }

    /// At the flush message: what is gathered (perhaps nothing, when a full
    /// gathering was written before it arrived).
    pub fn flushed(&mut self) -> Vec<T> {
        self.flush_sent = false;
        self.take()
    }
}

/// Answers each request of a gathering, in order: its own answer when the
/// write went in, or the write's error. The first request gets it whole;
/// each other one a copy that the surfaces map the same way (a store that
/// cannot write, as on a full disk, is `503` for every request of the
/// write, not only the first), or its text.
pub fn answer_each<R>(replies: Vec<RpcReplyPort<Result<R, ActorError>>>, written: Result<Vec<R>, ActorError>) {
    match written {
        Ok(answers) => replies.into_iter().zip(answers).for_each(|(reply, answer)| drop(reply.send(Ok(answer)))),
        Err(error) => {
            let copies: Vec<ActorError> = (1..replies.len()).map(|_| copy(&error)).collect();
            let errors = std::iter::once(error).chain(copies);
            replies.into_iter().zip(errors).for_each(|(reply, error)| drop(reply.send(Err(error))));
        }
    }
}

/// The same failure for another request of a write.
fn copy(error: &ActorError) -> ActorError {
    match error {
        ActorError::Store(StoreError::Rocks(e)) => ActorError::Store(StoreError::Rocks(e.clone())),
        other => ActorError::Failed(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A full disk refuses one write for a whole gathering: every request
    // in it hears a store failure (a 503), none a bare text (a 500).
    #[tokio::test]
    async fn every_request_of_a_failed_write_hears_the_store_failure() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let Err(StoreError::Rocks(refused)) = svc_store::Store::open(&file.path().join("store")) else {
            panic!("a store under a file opens");
        };
        let (replies, answers): (Vec<_>, Vec<_>) = (0..3)
            .map(|_| {
                let (reply, answer) = ractor::concurrency::oneshot::<Result<(), ActorError>>();
                (RpcReplyPort::from(reply), answer)
            })
            .unzip();
        answer_each(replies, Err(ActorError::Store(StoreError::Rocks(refused))));
        for answer in answers {
            assert!(matches!(answer.await.unwrap(), Err(ActorError::Store(StoreError::Rocks(_)))));
        }
    }

    #[test]
    fn the_first_request_sends_the_flush_and_the_rest_wait_for_it() {
        let mut gather = Gather::new(3);
        assert_eq!(gather.add(1), Next::SendFlush);
        assert_eq!(gather.add(2), Next::Wait);
        assert_eq!(gather.flushed(), vec![1, 2]);
        assert_eq!(gather.add(3), Next::SendFlush, "a new gathering sends its own flush");
    }

    #[test]
    fn a_full_gathering_is_written_at_once_and_its_flush_finds_the_rest() {
        let mut gather = Gather::new(2);
        assert_eq!(gather.add(1), Next::SendFlush);
        assert_eq!(gather.add(2), Next::WriteNow);
        assert_eq!(gather.take(), vec![1, 2]);
        assert_eq!(gather.add(3), Next::Wait, "the flush sent for 1 is still coming");
        assert_eq!(gather.flushed(), vec![3]);
        assert!(gather.flushed().is_empty());
    }

    #[test]
    fn one_at_most_writes_each_request_on_its_own() {
        let mut gather = Gather::new(1);
        assert_eq!(gather.add(1), Next::WriteNow);
        assert_eq!(gather.take(), vec![1]);
        assert_eq!(gather.add(2), Next::WriteNow);
    }

    #[tokio::test]
    async fn a_failed_write_fails_every_request_it_held() {
        let (replies, answers): (Vec<_>, Vec<_>) = (0..3)
            .map(|_| {
                let (reply, answer) = ractor::concurrency::oneshot::<Result<u8, ActorError>>();
                (RpcReplyPort::from(reply), answer)
            })
            .unzip();
        answer_each(replies, Err(ActorError::Refused("disk full")));
        for answer in answers {
            assert_eq!(answer.await.unwrap().unwrap_err().to_string(), "disk full");
        }
    }
}
