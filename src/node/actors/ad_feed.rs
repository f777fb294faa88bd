//! A read region's copy of home's ad feed: long-polls the ad facts every
//! region told (conversations' renders and clicks, keys' pools) and hands
//! them to the region's ad-reservations actor, so a conversation or a key
//! that moves between regions is judged as one.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::ad_reservations::AdMsg;
use super::replicator::ReplicationStatus;
use crate::actors::error::ActorError;
use crate::actors::mailbox::Mailbox;
use crate::replication::exchange::{AdFeedPage, OutOfRange};
use crate::replication::link::{HomeLink, LinkError};

/// How long home may hold a pull open when there is nothing new.
const LONG_POLL_MS: u64 = 2_000;
const BACKOFF: Duration = Duration::from_millis(500);

pub enum AdFeedMsg {
    Pull,
    /// Answers home's newest ad feed sequence and the last one learned
    /// here, between pulls.
    Observe(ractor::RpcReplyPort<(u64, u64)>),
}

#[derive(Clone)]
pub struct AdFeedArgs {
    pub link: Arc<HomeLink>,
    pub ads: Mailbox<AdMsg>,
    pub status: Arc<ReplicationStatus>,
}

#[derive(Clone)]
pub struct AdFeed;

impl AdFeed {
    async fn pull(args: &AdFeedArgs) -> Result<(), ActorError> {
        let after = args.ads.call(AdMsg::FeedCursor).await?;
        let path = format!("/internal/v1/ad-feed?after={after}&wait_ms={LONG_POLL_MS}");
        let wait = Duration::from_millis(LONG_POLL_MS) + Duration::from_secs(5);
        let page: AdFeedPage = args.link.call::<(), _>("GET", &path, None, wait).await?;
        args.status.ad_feed_head.store(page.head, Ordering::Relaxed);
        // A page from a restored home starts again at its head: judged from there.
        let from = after.min(page.head);
        page.check(from, args.link.now()).map_err(|e| ActorError::from(LinkError::OutOfRange(e)))?;
        let secret = args.link.unwrap_conversation_secret(&page.wrapped_secret).ok_or_else(|| {
            ActorError::from(LinkError::OutOfRange(OutOfRange(
                "the conversation secret is not wrapped for this region".into(),
            )))
        })?;
        let now = args.link.now();
        let learned = args.ads.call(|reply| AdMsg::LearnFeed { page, secret, now, reply }).await??;
        args.status.ad_feed_learned.store(learned, Ordering::Relaxed);
        Ok(())
    }
}

impl Actor for AdFeed {
    type Msg = AdFeedMsg;
    type State = AdFeedArgs;
    type Arguments = AdFeedArgs;

    async fn pre_start(&self, me: ActorRef<AdFeedMsg>, args: AdFeedArgs) -> Result<AdFeedArgs, ActorProcessingErr> {
        me.send_message(AdFeedMsg::Pull)?;
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<AdFeedMsg>,
        msg: AdFeedMsg,
        args: &mut AdFeedArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AdFeedMsg::Pull => {
                if let Err(e) = Self::pull(args).await {
                    tracing::debug!(error = %e, "ad feed pull failed; pulling again");
                    tokio::time::sleep(BACKOFF).await;
                }
                let _ = me.send_message(AdFeedMsg::Pull);
            }
            AdFeedMsg::Observe(reply) => {
                let status = &args.status;
                let _ = reply.send((
                    status.ad_feed_head.load(Ordering::Relaxed),
                    status.ad_feed_learned.load(Ordering::Relaxed),
                ));
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for AdFeedMsg {
    type Seen = (u64, u64);

    fn observe(reply: ractor::RpcReplyPort<(u64, u64)>) -> Self {
        AdFeedMsg::Observe(reply)
    }

    fn describe(seen: (u64, u64)) -> serde_json::Value {
        let (head, learned) = seen;
        serde_json::json!({"head": head, "learned": learned})
    }
}
