//! What the routes served from a node's own copy of the store read: a
//! region has it, and so does a standby member's `OwnCopy`, which runs no
//! actor (`public::own_copy_router`).

use svc_node::region::parts::{
    HasClock, HasConfig, HasJwkKeys, HasKeySet, HasKeys, HasLimits, HasLog, HasRegistry, HasSignedStatements, HasStore,
    HasVerifyPages,
};

pub trait FromOwnCopy:
    HasConfig
    + HasStore
    + HasRegistry
    + HasClock
    + HasLog
    + HasKeys
    + HasKeySet
    + HasJwkKeys
    + HasSignedStatements
    + HasLimits
    + HasVerifyPages
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> FromOwnCopy for S where
    S: HasConfig
        + HasStore
        + HasRegistry
        + HasClock
        + HasLog
        + HasKeys
        + HasKeySet
        + HasJwkKeys
        + HasSignedStatements
        + HasLimits
        + HasVerifyPages
        + Clone
        + Send
        + Sync
        + 'static
{
}
