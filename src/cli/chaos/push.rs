//! The business side of a run's load: one sealed push a tick at home, each
//! a new product; every fourth tick withdraws a product an earlier push
//! had accepted. What the business's system saw is recorded, so the
//! verdict can ask that every acknowledged change holds at every region.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use svc_core::keys::SigningKey;

use super::setup::{self, Onboarded};
use svc_client::transport::Transport;

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
    /// When its answer came (or the wait for one ended), on the same clock.
    pub answered_ms: u64,
    pub action: Action,
    /// The business that pushed it (its brand).
    pub business: String,
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
/// `first_sku`, each batch numbered by the next of `seqs` (shared with the
/// bulk imports: a key's batch numbers only increase).
pub async fn run(
    business: &Business<'_>,
    rate: u32,
    duration: Duration,
    first_sku: usize,
    seqs: &AtomicU64,
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
            Pushed {
                at_ms,
                answered_ms: started.elapsed().as_millis() as u64,
                action: Action::Withdraw,
                business: business.onboarded.brand.clone(),
                sku: old_sku,
                record_id,
                status: answer.0,
                outcome: None,
            }
        } else {
            let record_id = svc_core::ids::product_id(&business.onboarded.business_uuid, &format!("SKU-{sku}"));
            let records = [setup::product_of(&business.onboarded.brand, sku)];
            let seq = seqs.fetch_add(1, Ordering::SeqCst);
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
            let brand = business.onboarded.brand.clone();
            let answered_ms = started.elapsed().as_millis() as u64;
            let (action, status) = (Action::Publish, answer.0);
            let entry = Pushed { at_ms, answered_ms, action, business: brand, sku, record_id, status, outcome };
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

/// One bulk import as the business saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub records: usize,
    pub started_ms: u64,
    /// When the import's answer came, and its status (`0`: none came).
    pub answered_ms: u64,
    pub status: u16,
    /// When polling `/v1/pushes/{id}` first showed it complete: after a
    /// fault's heal, the import resumed where it stopped.
    pub settled_ms: Option<u64>,
}

/// The bulk imports of a run: at each `(at_s, records)`, that many new
/// products imported as one bulk file at home. Each record of an import
/// home queued (`202`) is an acknowledged publish. Waits for each import
/// to settle (up to `settle_within`).
pub async fn imports(
    business: &Business<'_>,
    imports: &[(u64, u32)],
    seqs: &AtomicU64,
    settle_within: Duration,
) -> (Vec<Pushed>, Vec<Imported>) {
    let started = Instant::now();
    let (mut pushed, mut summary) = (Vec::new(), Vec::new());
    for (n, &(at_s, count)) in imports.iter().enumerate() {
        tokio::time::sleep_until((started + Duration::from_secs(at_s)).into()).await;
        let skus: Vec<usize> = (0..count as usize).map(|i| BULK_SKUS + n * 100_000 + i).collect();
        let brand = &business.onboarded.brand;
        let records: Vec<Vec<u8>> = skus.iter().map(|&sku| setup::product_of(brand, sku)).collect();
        let at_ms = started.elapsed().as_millis() as u64;
        let answer = tokio::time::timeout(
            Duration::from_secs(60),
            setup::bulk_import(
                business.home,
                business.key,
                &business.onboarded.context,
                &records,
                seqs,
                business.authority,
            ),
        )
        .await;
        let answered_ms = started.elapsed().as_millis() as u64;
        // A refusal's problem code is kept beside its status.
        let (status, outcome, push_id) = match answer {
            Ok(Ok(answer)) => {
                let body = answer.json();
                (answer.status, body["code"].as_str().map(str::to_owned), body["push_id"].as_str().map(str::to_owned))
            }
            _ => (0, None, None),
        };
        let mut settled_ms = None;
        while let Some(push_id) = &push_id
            && started.elapsed() < settle_within
        {
            let path = format!("/v1/pushes/{push_id}");
            let answer = timed(setup::business_read(business.home, business.key, &path, business.authority)).await;
            if answer.1["completed_at"].is_string() {
                settled_ms = Some(started.elapsed().as_millis() as u64);
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        summary.push(Imported { records: skus.len(), started_ms: at_ms, answered_ms, status, settled_ms });
        for sku in skus {
            let record_id = svc_core::ids::product_id(&business.onboarded.business_uuid, &format!("SKU-{sku}"));
            let outcome = outcome.clone();
            let business = brand.clone();
            let action = Action::Publish;
            pushed.push(Pushed { at_ms, answered_ms, action, business, sku, record_id, status, outcome });
        }
    }
    (pushed, summary)
}

/// Where bulk-imported products are numbered from, apart from pushes'.
pub const BULK_SKUS: usize = 1_000_000;

/// Status and JSON body of `call`, or `(0, null)` when no answer came
/// within 10 seconds.
async fn timed(
    call: impl std::future::Future<Output = Result<svc_client::transport::Answer, svc_client::ClientError>>,
) -> (u16, serde_json::Value) {
    match tokio::time::timeout(Duration::from_secs(10), call).await {
        Ok(Ok(answer)) => (answer.status, answer.json()),
        _ => (0, serde_json::Value::Null),
    }
}
