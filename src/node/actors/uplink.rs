//! A read region's reports to home: ships its outbox (claimed nonces, usage
//! events, lease returns) in order, and deletes what home took. Home takes a
//! report idempotently, so a report lost in flight is simply sent again.
//! Then it ships its receipts on from the last home took, so home lists a
//! group's receipts whole even if this region is lost.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::replicator::ReplicationStatus;
use crate::actors::error::ActorError;
use crate::replication::exchange::{
    self, ReceiptsShipment, ReceiptsTaken, Report, ReportTaken, SHIPMENT_BYTES, SHIPMENT_MAX,
};
use crate::replication::link::HomeLink;
use svc_store::model::StoredReceipt;
use svc_store::{Store, be, cf, keys};

/// Entries one report carries at most.
const REPORT_MAX: usize = 2_000;
const REPORT_WAIT: Duration = Duration::from_secs(3);

pub enum UplinkMsg {
    /// Ships what is pending (sent on an interval).
    Ship,
    /// Answers the outbox entries home took, since start.
    Observe(ractor::RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct UplinkArgs {
    pub store: Store,
    pub link: Arc<HomeLink>,
    pub region: String,
    pub status: Arc<ReplicationStatus>,
}

#[derive(Clone)]
pub struct Uplink;

impl Uplink {
    /// Ships one report; answers how many entries went.
    async fn ship(args: &UplinkArgs) -> Result<usize, ActorError> {
        let pending = exchange::pending(&args.store, REPORT_MAX).map_err(ActorError::from)?;
        if pending.is_empty() {
            return Ok(0);
        }
        let keys: Vec<Vec<u8>> = pending.iter().map(|(k, _)| k.clone()).collect();
        let report = Report { region: args.region.clone(), entries: pending.into_iter().map(|(_, e)| e).collect() };
        let taken: ReportTaken = args.link.call("POST", "/internal/v1/report", Some(&report), REPORT_WAIT).await?;
        exchange::forget_taken(&args.store, crate::replication::exchange::OUTBOX, &keys).map_err(ActorError::from)?;
        args.status.reported.fetch_add(keys.len() as u64, Ordering::Relaxed);
        args.status.billed_elsewhere.fetch_add(taken.already_billed, Ordering::Relaxed);
        Ok(keys.len())
    }

    /// Ships the receipts after the last home took; answers whether more
    /// wait (this shipment was full and home took it whole).
    async fn ship_receipts(args: &UplinkArgs) -> Result<bool, ActorError> {
        let shipped: u64 =
            args.store.get(cf::meta::RECEIPTS_SHIPPED_SEQ, keys::meta::RECEIPTS_SHIPPED_SEQ)?.unwrap_or(0);
        let first_seq = shipped + 1;
        let mut receipts: Vec<StoredReceipt> = args
            .store
            .scan(cf::RECEIPTS, &[], Some(&be(first_seq)), SHIPMENT_MAX)?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        let scanned = receipts.len();
        let mut bytes = 0;
        let fit = receipts
            .iter()
            .take_while(|r| {
                bytes += r.envelope.len();
                bytes <= SHIPMENT_BYTES
            })
            .count();
        receipts.truncate(fit.max(1));
        // More wait when the page was full or cut to its bytes.
        let more = scanned == SHIPMENT_MAX || receipts.len() < scanned;
        if receipts.is_empty() {
            return Ok(false);
        }
        let n = receipts.len();
        let shipment = ReceiptsShipment { region: args.region.clone(), first_seq, receipts };
        let taken: ReceiptsTaken =
            args.link.call("POST", "/internal/v1/receipts", Some(&shipment), REPORT_WAIT).await?;
        // Home answers what it holds: on from there next time (after a
        // restore of home's store, that may be before what was shipped).
        args.store.put(cf::meta::RECEIPTS_SHIPPED_SEQ, keys::meta::RECEIPTS_SHIPPED_SEQ, &taken.through)?;
        Ok(more && taken.through >= first_seq + n as u64 - 1)
    }
}

impl Actor for Uplink {
    type Msg = UplinkMsg;
    type State = UplinkArgs;
    type Arguments = UplinkArgs;

    async fn pre_start(&self, _me: ActorRef<UplinkMsg>, args: UplinkArgs) -> Result<UplinkArgs, ActorProcessingErr> {
        Ok(args)
    }

    /// A stopping region reports what it still holds, if home answers;
    /// what is left stays in the outbox for the next start.
    async fn post_stop(&self, _me: ActorRef<UplinkMsg>, args: &mut UplinkArgs) -> Result<(), ActorProcessingErr> {
        if let Err(e) = Self::ship(args).await {
            tracing::info!(error = %e, "the outbox waits for the next start");
        }
        if let Err(e) = Self::ship_receipts(args).await {
            tracing::info!(error = %e, "unshipped receipts wait for the next start");
        }
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<UplinkMsg>,
        msg: UplinkMsg,
        args: &mut UplinkArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            UplinkMsg::Ship => {
                // A full report means more waits: ship again at once.
                loop {
                    match Self::ship(args).await {
                        Ok(n) if n == REPORT_MAX => continue,
                        Ok(_) => break,
                        Err(e) => {
                            tracing::debug!(error = %e, "report to home failed; sending again later");
                            break;
                        }
                    }
                }
                loop {
                    match Self::ship_receipts(args).await {
                        Ok(true) => continue,
                        Ok(_) => break,
                        Err(e) => {
                            tracing::debug!(error = %e, "receipts to home failed; sending again later");
                            break;
                        }
                    }
                }
            }
            UplinkMsg::Observe(reply) => {
                let _ = reply.send(args.status.reported.load(std::sync::atomic::Ordering::Relaxed));
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for UplinkMsg {
    type Seen = u64;

    fn observe(reply: ractor::RpcReplyPort<u64>) -> Self {
        UplinkMsg::Observe(reply)
    }

    fn describe(seen: u64) -> serde_json::Value {
        serde_json::json!({"reported": seen})
    }
}
