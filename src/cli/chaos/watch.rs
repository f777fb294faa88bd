//! What a client watching the transparency log saw during a run: each
//! region's newest checkpoint, asked once a second. The checkpoints are
//! later checked against each other, and the sizes give each region's lag
//! behind the largest log any region served at that moment.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::load::Target;

/// One checkpoint answer.
#[derive(Debug, Clone, Serialize)]
pub struct Observed {
    /// Milliseconds since the load started.
    pub at_ms: u64,
    pub region: String,
    /// `0` when no answer came.
    pub status: u16,
    pub tree_size: u64,
    /// The signed note, to be opened under the key set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// Asks every target for its newest checkpoint once a second for `duration`.
pub async fn run(targets: &[Target], duration: Duration) -> Vec<Observed> {
    let started = Instant::now();
    let mut observed = Vec::new();
    let mut tick = 0u32;
    while started.elapsed() < duration {
        tokio::time::sleep_until((started + Duration::from_secs(u64::from(tick))).into()).await;
        let asks = targets.iter().map(|t| ask(t, started));
        observed.extend(futures::future::join_all(asks).await);
        tick += 1;
    }
    observed
}

async fn ask(target: &Target, started: Instant) -> Observed {
    let at_ms = started.elapsed().as_millis() as u64;
    let mut seen = Observed { at_ms, region: target.region.clone(), status: 0, tree_size: 0, checkpoint: None };
    let Ok(request) = axum::http::Request::get("/v1/log/checkpoint").body(axum::body::Body::empty()) else {
        return seen;
    };
    if let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(2), target.transport.send(request)).await {
        seen.status = answer.status;
        let json = answer.json();
        seen.tree_size = json["tree_size"].as_u64().unwrap_or(0);
        seen.checkpoint = json["checkpoint"].as_str().map(str::to_owned);
    }
    seen
}

/// Per second of the run, each region's lag in leaves behind the largest
/// log served in that second; `None` where the region did not answer.
pub fn lag(observed: &[Observed], regions: &[String], seconds: usize) -> Vec<Vec<Option<u64>>> {
    let mut sizes = vec![vec![None; seconds.max(1)]; regions.len()];
    for o in observed.iter().filter(|o| o.status == 200) {
        let second = ((o.at_ms / 1000) as usize).min(seconds.max(1) - 1);
        if let Some(r) = regions.iter().position(|name| *name == o.region) {
            sizes[r][second] = Some(o.tree_size);
        }
    }
    let largest: Vec<u64> = (0..seconds.max(1)).map(|i| sizes.iter().filter_map(|r| r[i]).max().unwrap_or(0)).collect();
    sizes
        .into_iter()
        .map(|row| row.into_iter().zip(&largest).map(|(size, top)| size.map(|s| top - s)).collect())
        .collect()
}
