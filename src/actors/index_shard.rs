//! One tantivy shard of one collection: the only writer of its index. It
//! applies a batch of upserts and deletes, commits, and reloads the readers
//! searches share, so a search sees a batch once the shard answered.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::search::ShardWriter;
use crate::search::doc::Blocked;

pub enum IndexShardMsg {
    Apply {
        /// Documents with the groups that blocked their business.
        upserts: Vec<Blocked>,
        deletes: Vec<String>,
        reply: RpcReplyPort<Result<(), String>>,
    },
    Observe(RpcReplyPort<IndexShardSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexShardSnapshot {
    pub docs: u64,
    pub commits: u64,
}

pub struct IndexShard;

pub struct IndexShardState {
    writer: ShardWriter,
    commits: u64,
}

impl Actor for IndexShard {
    type Msg = IndexShardMsg;
    type State = IndexShardState;
    type Arguments = ShardWriter;

    async fn pre_start(
        &self,
        _me: ActorRef<IndexShardMsg>,
        writer: ShardWriter,
    ) -> Result<IndexShardState, ActorProcessingErr> {
        Ok(IndexShardState { writer, commits: 0 })
    }

    async fn handle(
        &self,
        _me: ActorRef<IndexShardMsg>,
        msg: IndexShardMsg,
        state: &mut IndexShardState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            IndexShardMsg::Apply { upserts, deletes, reply } => {
                let result = tokio::task::block_in_place(|| state.writer.apply(upserts, deletes));
                if result.is_ok() {
                    state.commits += 1;
                }
                let _ = reply.send(result);
            }
            IndexShardMsg::Observe(reply) => {
                let _ = reply.send(IndexShardSnapshot { docs: state.writer.num_docs(), commits: state.commits });
            }
        }
        Ok(())
    }
}
