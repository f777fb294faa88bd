//! The business side of a run's load: one sealed push a tick at home, each
//! a new product; every fourth tick withdraws a product an earlier push
//! had accepted. What the business's system saw is recorded, so the
//! verdict can ask that every acknowledged change holds at every region.

use std::time::{Duration, Instant};

use serde::Serialize;
use svc_core::keys::SigningKey;

use super::setup::{self, Onboarded};
use crate::client::transport::Transport;

/// Every how many ticks a withdrawal replaces a new product.
const WITHDRAW_EVERY: u64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Publish,
    Withdraw,
}

/// One push as the business's system saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Pushed {
    /// Milliseconds since the load started.
    pub at_ms: u64,
    pub action: Action,
    /// The product's `business_product_id` number (`SKU-{sku}`).
    pub sku: usize,
    pub record_id: String,
    /// `0` when no answer came.
    pub status: u16,
    /// The record's outcome in a `200` publish (`accepted`, `updated`,
    /// `rejected`, ...); a `202` is queued and settles later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

impl Pushed {
    /// Whether the service acknowledged the change: a publish answered
    /// `200` with the record accepted or updated, or `202` (queued, which
    /// promises it will be processed); a withdrawal answered `200`.
    pub fn acknowledged(&self) -> bool {
        match (self.action, self.status) {
            (Action::Publish, 200) => matches!(self.outcome.as_deref(), Some("accepted" | "updated")),
            (Action::Publish, 202) | (Action::Withdraw, 200) => true,
            _ => false,
        }
    }
}

/// What pushes need: where home is and who the business is.
pub struct Business<'a> {
    pub home: &'a Transport,
    pub key: &'a SigningKey,
    pub onboarded: &'a Onboarded,
    pub authority: &'a str,
}

/// Pushes `rate` times a second for `duration`, products numbered from
/// `first_sku` in batches numbered from `first_seq`.
pub async fn run(
    business: &Business<'_>,
    rate: u32,
    duration: Duration,
    first_sku: usize,
    first_seq: u64,
) -> Vec<Pushed> {
    let mut pushed: Vec<Pushed> = Vec::new();
    if rate == 0 {
        return pushed;
    }
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let mut withdrawable: std::collections::VecDeque<(usize, String)> = std::collections::VecDeque::new();
    let (mut sku, mut tick) = (first_sku, 0u64);
    while started.elapsed() < duration {
        tokio::time::sleep_until((started + interval * tick as u32).into()).await;
        let at_ms = started.elapsed().as_millis() as u64;
        let entry = if tick % WITHDRAW_EVERY == WITHDRAW_EVERY - 1
            && let Some((old_sku, record_id)) = withdrawable.pop_front()
        {
            let answer = timed(setup::withdraw(
                business.home,
                business.key,
                &business.onboarded.context,
                &record_id,
                business.authority,
            ))
            .await;
            Pushed { at_ms, action: Action::Withdraw, sku: old_sku, record_id, status: answer.0, outcome: None }
        } else {
            let record_id = svc_core::ids::product_id(&business.onboarded.business_uuid, &format!("SKU-{sku}"));
            let records = [setup::product(sku)];
            let seq = first_seq + tick;
            let answer = timed(setup::publish(
                business.home,
                business.key,
                &business.onboarded.context,
                &records,
                seq,
                business.authority,
            ))
            .await;
            let outcome = answer.1["results"][0]["outcome"].as_str().map(str::to_owned);
            let entry = Pushed { at_ms, action: Action::Publish, sku, record_id, status: answer.0, outcome };
            if entry.status == 200 && entry.acknowledged() {
                withdrawable.push_back((sku, entry.record_id.clone()));
            }
            sku += 1;
            entry
        };
        pushed.push(entry);
        tick += 1;
    }
    pushed
}

/// Status and JSON body of `call`, or `(0, null)` when no answer came
/// within 10 seconds.
async fn timed(
    call: impl std::future::Future<Output = Result<crate::client::transport::Answer, crate::client::ClientError>>,
) -> (u16, serde_json::Value) {
    match tokio::time::timeout(Duration::from_secs(10), call).await {
        Ok(Ok(answer)) => (answer.status, answer.json()),
        _ => (0, serde_json::Value::Null),
    }
}
