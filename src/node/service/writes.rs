//! How a use case writes: through the publisher, home's one writer, so
//! what is replicated reaches every region in log order.

use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{HasClock, HasHome};
use crate::replication::Change;
use crate::service::Result;

/// Applies a change through the publisher (home). Answers the log sequence
/// it took, if any.
pub async fn apply(state: &(impl HasClock + HasHome), change: Change) -> Result<Option<u64>> {
    let now = state.clock().now();
    Ok(state.home()?.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??)
}
