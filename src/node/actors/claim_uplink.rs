//! A read region's own claimed nonces, shipped home the moment they are
//! written (the nonce store wakes it), apart from the report: the replay
//! window is how long a claim takes to go round, and a report waits on
//! home's billing. What home took is deleted; what it did not is sent again
//! (home holds a claim once however often it comes).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::Notify;

use super::replicator::ReplicationStatus;
use crate::actors::error::ActorError;
use crate::replication::exchange::{self, CLAIMS_MAX, ClaimsReport};
use crate::replication::link::HomeLink;
use svc_store::Store;

/// How long home may take a claims report.
const SHIP_WAIT: Duration = Duration::from_secs(3);
/// How long it waits for a claim before looking again anyway.
const IDLE: Duration = Duration::from_secs(1);
/// How long it waits after home did not take a report.
const BACKOFF: Duration = Duration::from_millis(200);

pub enum ClaimUplinkMsg {
    /// Ships what waits, or waits for the next claim (sent to itself).
    Ship,
    /// Answers the claims home took, since start (between shipments).
    Observe(ractor::RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct ClaimUplinkArgs {
    pub store: Store,
    pub link: Arc<HomeLink>,
    pub region: String,
    pub status: Arc<ReplicationStatus>,
    /// Woken by the nonce store on each claim it writes.
    pub wake: Arc<Notify>,
}

#[derive(Clone)]
pub struct ClaimUplink;

impl ClaimUplink {
    /// Ships one report of waiting claims; answers how many went.
    async fn ship(args: &ClaimUplinkArgs) -> Result<usize, ActorError> {
        let pending = exchange::claims_pending(&args.store, CLAIMS_MAX).map_err(ActorError::from)?;
        if pending.is_empty() {
            return Ok(0);
        }
        let (keys, claims): (Vec<Vec<u8>>, Vec<_>) = pending.into_iter().unzip();
        let report = ClaimsReport { region: args.region.clone(), claims };
        args.link.call::<_, ()>("POST", "/internal/v1/claims", Some(&report), SHIP_WAIT).await?;
        exchange::forget_taken(&args.store, crate::replication::exchange::CLAIMS_OUT, &keys)
            .map_err(ActorError::from)?;
        args.status.claims_reported.fetch_add(keys.len() as u64, Ordering::Relaxed);
        Ok(keys.len())
    }
}

impl Actor for ClaimUplink {
    type Msg = ClaimUplinkMsg;
    type State = ClaimUplinkArgs;
    type Arguments = ClaimUplinkArgs;

    async fn pre_start(
        &self,
        me: ActorRef<ClaimUplinkMsg>,
        args: ClaimUplinkArgs,
    ) -> Result<ClaimUplinkArgs, ActorProcessingErr> {
        me.send_message(ClaimUplinkMsg::Ship)?;
        Ok(args)
    }

    /// A stopping region ships what it still holds, if home answers.
    async fn post_stop(
        &self,
        _me: ActorRef<ClaimUplinkMsg>,
        args: &mut ClaimUplinkArgs,
    ) -> Result<(), ActorProcessingErr> {
        if let Err(e) = Self::ship(args).await {
            tracing::info!(error = %e, "unshipped claims wait for the next start");
        }
        Ok(())
    }

    async fn handle(
        &self,
        me: ActorRef<ClaimUplinkMsg>,
        msg: ClaimUplinkMsg,
        args: &mut ClaimUplinkArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ClaimUplinkMsg::Observe(reply) => {
                let _ = reply.send(args.status.claims_reported.load(Ordering::Relaxed));
                // Its own `Ship` keeps the loop going: no second one.
                return Ok(());
            }
            ClaimUplinkMsg::Ship => match Self::ship(args).await {
                // A claim written after the look above left a wake-up, so
                // none waits out the idle time.
                Ok(0) => {
                    let _ = tokio::time::timeout(IDLE, args.wake.notified()).await;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "claims to home failed; sending again shortly");
                    tokio::time::sleep(BACKOFF).await;
                }
            },
        }
        let _ = me.send_message(ClaimUplinkMsg::Ship);
        Ok(())
    }
}

impl crate::actors::observed::Observed for ClaimUplinkMsg {
    type Seen = u64;

    fn observe(reply: ractor::RpcReplyPort<u64>) -> Self {
        ClaimUplinkMsg::Observe(reply)
    }

    fn describe(seen: u64) -> serde_json::Value {
        serde_json::json!({"reported": seen})
    }
}
