//! The sandbox corpus is republished nightly with the same ids and bytes,
//! as new versions (R1.41): a sandbox home does it itself, at
//! `sandbox_republish_at` UTC, through the same pipeline as a business.

use std::time::Duration;

use tokio::sync::watch;

use svc_core::time::UnixMs;
use svc_node::region::Region;
use svc_store::{cf, keys};

/// How often the schedule is looked at: the clock may be moved (tests,
/// skew), so the job does not sleep until the hour.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Runs until `shutdown`; republishes whenever the configured time of day
/// has come since the last republish. A node that was down at the hour
/// republishes when it starts.
pub async fn run(state: Region, mut shutdown: watch::Receiver<bool>) {
    let Some(minute) = svc_core::sandbox::time_of_day(&state.config.sandbox_republish_at) else { return };
    if let Err(e) = super::seed::name_own_company(&state) {
        tracing::warn!(error = %e, "the sandbox corpus's company could not be named apart");
    }
    // After a failed republish (each attempt writes versions), wait before
    // the next: a failure that repeats must not republish every second.
    let mut not_before = svc_clock::monotonic();
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(LOOK_EVERY) => {}
        }
        if svc_clock::monotonic() < not_before {
            continue;
        }
        if let Err(e) = republish_if_due(&state, minute).await {
            tracing::warn!(error = %e, "nightly sandbox republish failed; tried again in 10 minutes");
            not_before = svc_clock::monotonic() + RETRY_AFTER;
        }
    }
}

/// How long a failed republish waits before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(600);

async fn republish_if_due(state: &Region, minute: i64) -> Result<(), super::seed::SeedError> {
    let now = state.clock.now();
    let last: Option<UnixMs> = state.store.get(cf::meta::SANDBOX_REPUBLISHED_AT, keys::meta::SANDBOX_REPUBLISHED_AT)?;
    let Some(last) = last else {
        // The schedule begins now: the first republish is at the next hour.
        state.store.put(cf::meta::SANDBOX_REPUBLISHED_AT, keys::meta::SANDBOX_REPUBLISHED_AT, &now)?;
        return Ok(());
    };
    if now < svc_core::sandbox::next_republish(last, minute) {
        return Ok(());
    }
    // Nothing to republish until the corpus is seeded.
    if !super::seed::is_seeded(state)? {
        return Ok(());
    }
    let published = super::seed::republish(state, &|_| {}).await?;
    state.store.put(cf::meta::SANDBOX_REPUBLISHED_AT, keys::meta::SANDBOX_REPUBLISHED_AT, &now)?;
    tracing::info!(%published, "sandbox corpus republished (nightly)");
    Ok(())
}
