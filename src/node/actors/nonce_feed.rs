//! A read region's copy of home's nonce feed: long-polls the nonces every
//! region claimed and hands them to the nonce store, so a replay of a
//! request served elsewhere is refused here once it arrived.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::nonce_store::NonceMsg;
use super::replicator::ReplicationStatus;
use crate::actors::error::ActorError;
use crate::replication::exchange::FeedPage;
use crate::replication::link::{HomeLink, LinkError};

/// How long home may hold a pull open when there is nothing new.
const LONG_POLL_MS: u64 = 2_000;
const BACKOFF: Duration = Duration::from_millis(500);

pub enum NonceFeedMsg {
    Pull,
    /// Answers home's newest feed sequence and the last one learned here,
    /// between pulls.
    Observe(ractor::RpcReplyPort<(u64, u64)>),
}

#[derive(Clone)]
pub struct NonceFeedArgs {
    pub link: Arc<HomeLink>,
    pub nonces: crate::actors::mailbox::Mailbox<NonceMsg>,
    pub status: Arc<ReplicationStatus>,
}

#[derive(Clone)]
pub struct NonceFeed;

impl NonceFeed {
    async fn pull(args: &NonceFeedArgs) -> Result<(), ActorError> {
        let after = args.nonces.call(NonceMsg::Observe).await.map_err(ActorError::from)?.feed_seq;
        let path = format!("/internal/v1/nonces?after={after}&wait_ms={LONG_POLL_MS}");
        let wait = Duration::from_millis(LONG_POLL_MS) + Duration::from_secs(5);
        let page: FeedPage = args.link.call::<(), _>("GET", &path, None, wait).await?;
        args.status.feed_head.store(page.head, Ordering::Relaxed);
        if page.head < after {
            tracing::warn!(
                head = page.head,
                cursor = after,
                "home's nonce feed is behind this region: reading it again"
            );
            args.nonces.call(NonceMsg::RewindFeed).await.map_err(ActorError::from)??;
            return Ok(());
        }
        page.check(after, args.link.now()).map_err(|e| ActorError::from(LinkError::OutOfRange(e)))?;
        let learned = page.entries.last().map_or(after, |e| e.seq);
        let mut entries = page.entries;
        if crate::sabotage::on(crate::sabotage::Sabotage::NoNonceFanout) {
            entries.clear();
        }
        args.nonces.call(|reply| NonceMsg::LearnFeed { entries, reply }).await.map_err(ActorError::from)??;
        args.status.feed_learned.store(learned, Ordering::Relaxed);
        Ok(())
    }
}

impl Actor for NonceFeed {
    type Msg = NonceFeedMsg;
    type State = NonceFeedArgs;
    type Arguments = NonceFeedArgs;

    async fn pre_start(
        &self,
        me: ActorRef<NonceFeedMsg>,
        args: NonceFeedArgs,
    ) -> Result<NonceFeedArgs, ActorProcessingErr> {
        me.send_message(NonceFeedMsg::Pull)?;
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<NonceFeedMsg>,
        msg: NonceFeedMsg,
        args: &mut NonceFeedArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NonceFeedMsg::Pull => {
                if let Err(e) = Self::pull(args).await {
                    tracing::debug!(error = %e, "nonce feed pull failed; pulling again");
                    tokio::time::sleep(BACKOFF).await;
                }
                let _ = me.send_message(NonceFeedMsg::Pull);
            }
            NonceFeedMsg::Observe(reply) => {
                let status = &args.status;
                let _ =
                    reply.send((status.feed_head.load(Ordering::Relaxed), status.feed_learned.load(Ordering::Relaxed)));
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for NonceFeedMsg {
    type Seen = (u64, u64);

    fn observe(reply: ractor::RpcReplyPort<(u64, u64)>) -> Self {
        NonceFeedMsg::Observe(reply)
    }

    fn describe(seen: (u64, u64)) -> serde_json::Value {
        let (head, learned) = seen;
        serde_json::json!({"head": head, "learned": learned})
    }
}
