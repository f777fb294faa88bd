//! What an actor answers when it cannot do what it was asked. One type for
//! every actor, so a use case maps it once (`service::Error: From`), and a
//! full or stopped mailbox on the way stays a 503, not a string.

use crate::actors::mailbox::MailboxError;
use crate::publish::EngineError;
use crate::replication::link::LinkError;
use svc_search::SearchError;
use svc_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ActorError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The publisher refused what it was asked (a push not held).
    #[error("{0}")]
    Invalid(String),
    /// Another actor it asked did not answer.
    #[error(transparent)]
    Mailbox(#[from] MailboxError),
    /// The link to home failed (a read region's actors).
    #[error("the link to home: {0}")]
    Link(#[from] LinkError),
    /// A blocking task it handed work to panicked or was cancelled.
    #[error("a blocking task: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// The search index refused a write.
    #[error("the index: {0}")]
    Index(#[from] SearchError),
    /// Asked of a node whose role does not do it, or of data that breaks
    /// what the actor keeps (a malformed stored sequence).
    #[error("{0}")]
    Refused(&'static str),
    /// Anything else, with what failed.
    #[error("{0}")]
    Failed(String),
}

pub type ActorResult<T> = Result<T, ActorError>;

/// The engine's store failure stays a store failure, so it is mapped in one
/// place whatever actor it came through.
impl From<EngineError> for ActorError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Store(e) => ActorError::Store(e),
            EngineError::Invalid(why) => ActorError::Invalid(why),
        }
    }
}
