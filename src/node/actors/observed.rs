//! What every actor shows of itself. Each actor's message type has an
//! `Observe` request, and `describe` turns its answer into the JSON that
//! `svc admin observe` shows. The region's roster (`region::roster`) asks
//! every actor through it, and its watchdog uses the same request as a
//! heartbeat: an actor that answers is handling its messages.

use ractor::RpcReplyPort;
use serde_json::Value;

pub trait Observed: ractor::Message + Sized {
    /// What the actor answers.
    type Seen: Send + 'static;

    /// The request for it.
    fn observe(reply: RpcReplyPort<Self::Seen>) -> Self;

    /// Its answer as `svc admin observe` shows it.
    fn describe(seen: Self::Seen) -> Value;
}
