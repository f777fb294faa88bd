//! Folds the receipt log into business analytics: per business, hour,
//! country and AI group, how many searches served its rows and how many
//! fetches served its records. Like the indexer it tails a log by sequence
//! and writes its counts and the applied sequence in one batch, so a crash
//! neither loses nor double-counts a receipt.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::analytics::hour_of;

use crate::actors::error::ActorError;
use crate::store::model::{HourCounts, StoredReceipt, UsageKind};
use crate::store::{Store, be, cf, keys};

const APPLIED_KEY: &[u8] = keys::meta::ANALYTICS_APPLIED_SEQ;
/// Receipts read per step. Small, with a yield between steps: a tick runs
/// on a worker that also serves searches, and must not hold it for long.
const BATCH: usize = 250;

pub enum AnalyticsMsg {
    /// Fold whatever the receipt log holds beyond the applied sequence.
    Tick,
    Observe(RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct Analytics;

pub struct AnalyticsState {
    store: Store,
    applied: u64,
}

impl AnalyticsState {
    fn step(&mut self) -> Result<bool, ActorError> {
        let receipts: Vec<(Vec<u8>, StoredReceipt)> =
            self.store.scan(cf::RECEIPTS, &[], Some(&be(self.applied + 1)), BATCH).map_err(ActorError::from)?;
        let Some(last) = receipts.last().map(|(_, r)| r.seq) else { return Ok(false) };
        let mut deltas: HashMap<Vec<u8>, HourCounts> = HashMap::new();
        for (_, receipt) in &receipts {
            let hour = hour_of(receipt.served_at).0;
            let country = receipt.country.as_deref().unwrap_or_default();
            for business in &receipt.businesses {
                let counts = deltas.entry(keys::analytics(business, hour, country, &receipt.group_id)).or_default();
                match receipt.kind {
                    UsageKind::Search => counts.searches += 1,
                    UsageKind::Fetch => counts.fetches += 1,
                }
            }
        }
        let mut batch = self.store.batch();
        for (k, delta) in deltas {
            let mut counts: HourCounts =
                self.store.get(cf::ANALYTICS, &k).map_err(ActorError::from)?.unwrap_or_default();
            counts.searches += delta.searches;
            counts.fetches += delta.fetches;
            batch.put(cf::ANALYTICS, &k, &counts);
        }
        batch.put(cf::META, APPLIED_KEY, &last);
        batch.commit_unsynced().map_err(ActorError::from)?;
        self.applied = last;
        Ok(true)
    }
}

impl Actor for Analytics {
    type Msg = AnalyticsMsg;
    type State = AnalyticsState;
    type Arguments = Store;

    async fn pre_start(&self, _me: ActorRef<AnalyticsMsg>, store: Store) -> Result<AnalyticsState, ActorProcessingErr> {
        let applied = store.get::<u64>(cf::META, APPLIED_KEY)?.unwrap_or(0);
        Ok(AnalyticsState { store, applied })
    }

    async fn handle(
        &self,
        _me: ActorRef<AnalyticsMsg>,
        msg: AnalyticsMsg,
        state: &mut AnalyticsState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
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
            }
            AnalyticsMsg::Observe(reply) => {
                let _ = reply.send(state.applied);
            }
        }
        Ok(())
    }
}
