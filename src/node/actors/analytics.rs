//! Folds receipts into business analytics: per business, hour, country and
//! AI group, how many searches served its rows and how many fetches served
//! its records. At home it tails home's receipt log by sequence and writes
//! its counts and the applied sequence in one batch, so a crash neither
//! loses nor double-counts a receipt; and it takes each read region's
//! receipts as the region ships them, keeping them, indexing them by group
//! and counting them in one write with how far it holds that region's
//! receipts. A read region counts nothing itself: analytics are read at home.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::analytics::hour_of;

use crate::actors::error::ActorError;
use crate::replication::exchange::ReceiptsShipment;
use svc_store::model::{AdEvent, AdHourCounts, AdRefund, HourCounts, StoredReceipt, UsageKind};
use svc_store::{Batch, Store, be, cf, keys};

const APPLIED_KEY: &[u8] = keys::meta::ANALYTICS_APPLIED_SEQ;
/// Receipts read per step. Small, with a yield between steps: a tick runs
/// on a worker that also serves searches, and must not hold it for long.
const BATCH: usize = 250;

pub enum AnalyticsMsg {
    /// Fold whatever the receipt log holds beyond the applied sequence.
    Tick,
    /// Home: keeps and counts a read region's receipts; answers the last
    /// of that region's receipts it holds.
    TakeRegion {
        shipment: ReceiptsShipment,
        reply: RpcReplyPort<Result<u64, ActorError>>,
    },
    /// Home: counts a read region's accepted renders and clicks, those
    /// after the last it counted of that region (its outbox may ship again).
    TakeAdEvents {
        region: String,
        events: Vec<AdEvent>,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    Observe(RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct Analytics;

#[derive(Clone)]
pub struct AnalyticsArgs {
    pub store: Store,
    /// Only home counts.
    pub home: bool,
}

pub struct AnalyticsState {
    store: Store,
    home: bool,
    applied: u64,
}

/// Adds each receipt's counts to `deltas`, by business, hour, country and group.
fn count<'a>(receipts: impl IntoIterator<Item = &'a StoredReceipt>, deltas: &mut HashMap<Vec<u8>, HourCounts>) {
    for receipt in receipts {
        let hour = hour_of(receipt.served_at).0;
        let country = receipt.country.as_deref().unwrap_or_default();
        for business in &receipt.businesses {
            let counts = deltas.entry(keys::analytics(business, hour, country, &receipt.group_id)).or_default();
            match receipt.kind {
                UsageKind::Search => counts.searches += 1,
                UsageKind::Fetch => counts.fetches += 1,
                UsageKind::Pool => {}
            }
        }
    }
}

/// Adds each accepted render or click to `deltas`, by business, hour,
/// country and group.
fn count_ads<'a>(events: impl IntoIterator<Item = &'a AdEvent>, deltas: &mut HashMap<Vec<u8>, AdHourCounts>) {
    for event in events {
        let hour = hour_of(event.at).0;
        let country = event.country.as_deref().unwrap_or_default();
        let counts = deltas.entry(keys::analytics(&event.business_uuid, hour, country, &event.group_id)).or_default();
        if event.click {
            counts.clicks += 1;
        } else {
            counts.renders += 1;
        }
        counts.spend += event.charged.0;
    }
}

impl AnalyticsState {
    fn add_ads(&self, batch: &mut Batch<'_>, deltas: HashMap<Vec<u8>, AdHourCounts>) -> Result<(), ActorError> {
        for (k, delta) in deltas {
            let mut counts: AdHourCounts = self.store.get(cf::AD_ANALYTICS, &k)?.unwrap_or_default();
            counts.renders += delta.renders;
            counts.clicks += delta.clicks;
            counts.spend += delta.spend;
            batch.put(cf::AD_ANALYTICS, &k, &counts);
        }
        Ok(())
    }

    /// Counts home's own waiting renders and clicks, deleting each in the
    /// write that counts it. Whether any were.
    fn fold_ad_events(&self) -> Result<bool, ActorError> {
        let events = self.store.scan::<AdEvent>(cf::AD_EVENTS, &[], None, BATCH)?;
        if events.is_empty() {
            return self.fold_ad_refunds();
        }
        let mut deltas = HashMap::new();
        count_ads(events.iter().map(|(_, e)| e), &mut deltas);
        let mut batch = self.store.batch();
        self.add_ads(&mut batch, deltas)?;
        for (k, _) in &events {
            batch.delete(cf::AD_EVENTS, k);
        }
        batch.commit().map_err(ActorError::from)?;
        Ok(true)
    }

    /// Takes each charge home credited back off the spend of the hour it
    /// was counted in (once its events are folded: a write of its own).
    fn fold_ad_refunds(&self) -> Result<bool, ActorError> {
        let refunds = self.store.scan::<AdRefund>(cf::AD_REFUNDS, &[], None, BATCH)?;
        if refunds.is_empty() {
            return Ok(false);
        }
        let mut taken: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut batch = self.store.batch();
        for (k, refund) in &refunds {
            let hour = hour_of(refund.at).0;
            let country = refund.country.as_deref().unwrap_or_default();
            let key = keys::analytics(&refund.business_uuid, hour, country, &refund.group_id);
            *taken.entry(key).or_default() += refund.amount.0;
            batch.delete(cf::AD_REFUNDS, k);
        }
        for (key, amount) in taken {
            let mut counts: AdHourCounts = self.store.get(cf::AD_ANALYTICS, &key)?.unwrap_or_default();
            counts.spend = counts.spend.saturating_sub(amount);
            batch.put(cf::AD_ANALYTICS, &key, &counts);
        }
        batch.commit().map_err(ActorError::from)?;
        Ok(true)
    }

    fn take_ad_events(&self, region: &str, events: &[AdEvent]) -> Result<(), ActorError> {
        let applied_key = keys::region_ad_events_applied(region);
        let applied: u64 = self.store.get(cf::meta::AD_EVENTS_APPLIED, &applied_key)?.unwrap_or(0);
        let fresh: Vec<&AdEvent> = events.iter().filter(|e| e.seq > applied).collect();
        let Some(last) = fresh.iter().map(|e| e.seq).max() else { return Ok(()) };
        let mut deltas = HashMap::new();
        count_ads(fresh, &mut deltas);
        let mut batch = self.store.batch();
        self.add_ads(&mut batch, deltas)?;
        batch.put(cf::meta::AD_EVENTS_APPLIED, &applied_key, &last);
        batch.commit().map_err(ActorError::from)
    }

    /// Writes the counts plus `deltas` into `batch` (this actor is the
    /// only writer of the counts).
    fn add(&self, batch: &mut Batch<'_>, deltas: HashMap<Vec<u8>, HourCounts>) -> Result<(), ActorError> {
        for (k, delta) in deltas {
            let mut counts: HourCounts =
                self.store.get(cf::ANALYTICS, &k).map_err(ActorError::from)?.unwrap_or_default();
            counts.searches += delta.searches;
            counts.fetches += delta.fetches;
            batch.put(cf::ANALYTICS, &k, &counts);
        }
        Ok(())
    }

    fn step(&mut self) -> Result<bool, ActorError> {
        let receipts: Vec<(Vec<u8>, StoredReceipt)> =
            self.store.scan(cf::RECEIPTS, &[], Some(&be(self.applied + 1)), BATCH).map_err(ActorError::from)?;
        let Some(last) = receipts.last().map(|(_, r)| r.seq) else { return Ok(false) };
        let mut deltas = HashMap::new();
        count(receipts.iter().map(|(_, r)| r), &mut deltas);
        let mut batch = self.store.batch();
        self.add(&mut batch, deltas)?;
        batch.put(cf::meta::ANALYTICS_APPLIED_SEQ, APPLIED_KEY, &last);
        batch.commit_unsynced().map_err(ActorError::from)?;
        self.applied = last;
        Ok(true)
    }

    /// Takes the receipts of a shipment that follow what home holds of its
    /// region; one that would leave a gap takes nothing. Synced before it
    /// answers: the region ships on from the answer.
    fn take_region(&self, shipment: ReceiptsShipment) -> Result<u64, ActorError> {
        let region = &shipment.region;
        let through_key = keys::region_receipts_through(region);
        let through: u64 =
            self.store.get(cf::meta::REGION_RECEIPTS_THROUGH, &through_key).map_err(ActorError::from)?.unwrap_or(0);
        if shipment.first_seq > through.saturating_add(1) {
            return Ok(through);
        }
        let Some(last) = shipment.receipts.iter().map(|r| r.seq).filter(|seq| *seq > through).max() else {
            return Ok(through);
        };
        // A caller whose sandbox data expired is not kept again from a late shipment.
        let mut expired = std::collections::HashMap::new();
        let mut new: Vec<&StoredReceipt> = Vec::new();
        for receipt in shipment.receipts.iter().filter(|r| r.seq > through) {
            let gone = match expired.get(&receipt.company_uuid) {
                Some(gone) => *gone,
                None => {
                    let gone = self.store.contains(cf::EXPIRED_CALLERS, receipt.company_uuid.as_bytes())?;
                    expired.insert(receipt.company_uuid.clone(), gone);
                    gone
                }
            };
            if !gone {
                new.push(receipt);
            }
        }
        let mut batch = self.store.batch();
        for receipt in &new {
            batch.put(cf::REGION_RECEIPTS, &keys::region_receipt(region, receipt.seq), *receipt);
            let by_group = keys::region_receipt_by_group(&receipt.group_id, receipt.served_at.0, receipt.seq, region);
            batch.put(cf::RECEIPTS_BY_GROUP, &by_group, &());
        }
        let mut deltas = HashMap::new();
        count(new.iter().copied(), &mut deltas);
        self.add(&mut batch, deltas)?;
        batch.put(cf::meta::REGION_RECEIPTS_THROUGH, &through_key, &last);
        batch.commit().map_err(ActorError::from)?;
        Ok(last)
    }
}

impl Actor for Analytics {
    type Msg = AnalyticsMsg;
    type State = AnalyticsState;
    type Arguments = AnalyticsArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<AnalyticsMsg>,
        args: AnalyticsArgs,
    ) -> Result<AnalyticsState, ActorProcessingErr> {
        let applied = args.store.get::<u64>(cf::meta::ANALYTICS_APPLIED_SEQ, APPLIED_KEY)?.unwrap_or(0);
        Ok(AnalyticsState { store: args.store, home: args.home, applied })
    }

    async fn handle(
        &self,
        _me: ActorRef<AnalyticsMsg>,
        msg: AnalyticsMsg,
        state: &mut AnalyticsState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AnalyticsMsg::Tick if !state.home => {}
            AnalyticsMsg::TakeRegion { shipment, reply } => {
                let taken = if state.home {
                    tokio::task::block_in_place(|| state.take_region(shipment))
                } else {
                    Err(ActorError::Refused("only home takes a region's receipts"))
                };
                let _ = reply.send(taken);
            }
            AnalyticsMsg::TakeAdEvents { region, events, reply } => {
                let taken = if state.home {
                    tokio::task::block_in_place(|| state.take_ad_events(&region, &events))
                } else {
                    Err(ActorError::Refused("only home counts a region's ad events"))
                };
                let _ = reply.send(taken);
            }
            AnalyticsMsg::Tick => {
                // Catch up fully on each tick, letting the worker's other
                // tasks run between steps; an error waits for the next tick.
                loop {
                    match state.step() {
                        Ok(true) => tokio::task::yield_now().await,
                        Ok(false) => break,
                        Err(e) => {
                            tracing::error!(error = %e, "analytics fold failed");
                            break;
                        }
                    }
                }
                loop {
                    match state.fold_ad_events() {
                        Ok(true) => tokio::task::yield_now().await,
                        Ok(false) => break,
                        Err(e) => {
                            tracing::error!(error = %e, "ad analytics fold failed");
                            break;
                        }
                    }
                }
            }
            AnalyticsMsg::Observe(reply) => {
                let _ = reply.send(state.applied);
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for AnalyticsMsg {
    type Seen = u64;

    fn observe(reply: ractor::RpcReplyPort<u64>) -> Self {
        AnalyticsMsg::Observe(reply)
    }

    fn describe(seen: u64) -> serde_json::Value {
        serde_json::json!({"applied_seq": seen})
    }
}
