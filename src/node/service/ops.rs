//! What an operator or a load balancer asks of a node: is it up, is it
//! ready to serve fresh data, its figures for Prometheus; and a read
//! region's hand-off of a write to home.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use svc_core::problem::Code;

use super::{Error, Result};
use crate::actors::indexer::IndexerMsg;
use crate::actors::nonce_store::NonceMsg;
use crate::region::parts::{
    HasClock, HasConfig, HasFailures, HasHome, HasIndex, HasIndexer, HasKeySet, HasMetrics, HasNonces, HasPeers,
    HasReplica, HasRoster, HasStore,
};
use crate::replication::link::LinkError;

/// The process answers: its region and role.
pub fn health(state: &(impl HasConfig + HasHome)) -> Value {
    let role = if state.home_actors().is_some() { "home" } else { "read" };
    json!({"status": "ok", "region": state.config().region, "role": role})
}

/// Whether the region serves fresh data, and why: at a read region, caught
/// up with home within the configured lag, its index caught up with what it
/// replicated; everywhere, a receipt key home certified.
pub async fn readiness<R>(state: &R) -> (bool, Value)
where
    R: HasFailures + HasConfig + HasStore + HasClock + HasReplica + HasNonces + HasIndexer + HasKeySet,
{
    let indexed = state.indexer().call(IndexerMsg::Observe).await.map(|s| s.applied_seq).ok();
    let logged = crate::replication::last_seq(state.store()).ok();
    let index_caught_up = matches!((indexed, logged), (Some(i), Some(l)) if i >= l);
    let sabotaged = crate::sabotage::on(crate::sabotage::Sabotage::UnreadyAfter10s)
        && crate::sabotage::started().elapsed() > std::time::Duration::from_secs(10);
    let (ready, mut body) = match state.replica() {
        None => (indexed.is_some(), json!({"role": "home", "head_seq": logged})),
        Some(replica) => {
            let lag_ms = replica.status.lag_ms(state.clock().now().0);
            let max = state.config().replication.as_ref().map_or(0, |r| r.ready_max_lag_ms) as i64;
            let body = json!({
                "role": "read",
                "applied_seq": replica.status.applied.load(Ordering::Relaxed),
                "head_seq": replica.status.head.load(Ordering::Relaxed),
                "lag_ms": (lag_ms != i64::MAX).then_some(lag_ms),
                "max_lag_ms": max,
                "nonce_feed_head": replica.status.feed_head.load(Ordering::Relaxed),
                "ad_feed_head": replica.status.ad_feed_head.load(Ordering::Relaxed),
                "history_fork": replica.status.fork.get(),
            });
            (index_caught_up && lag_ms <= max && replica.status.fork.get().is_none(), body)
        }
    };
    // Receipts are signed only by a key home certified.
    let certified = state.key_set().signer(state.clock().now()).is_some();
    // A node never serves on with an actor that failed and did not come back.
    let failed = state.failures().list();
    // Nor with a store that cannot write: a full disk, a background error.
    let store = state.store().probe_write(state.clock().now().0).err().map(|e| e.to_string());
    let ready = ready && certified && failed.is_empty() && store.is_none() && !sabotaged;
    body["store_write_error"] = json!(store);
    body["failed_actors"] = json!(failed);
    body["receipt_key_certified"] = json!(certified);
    body["region"] = json!(state.config().region);
    body["ready"] = json!(ready);
    body["indexed_seq"] = json!(indexed);
    // Home: the newest claim in the nonce feed; a read region: the last it learned.
    body["nonce_feed_seq"] = json!(state.nonces().call(NonceMsg::Observe).await.map(|s| s.feed_seq).ok());
    (ready, body)
}

/// Reads the gauges now, then renders everything recorded, in the
/// Prometheus text format.
pub async fn metrics_text<R>(state: &R) -> String
where
    R: HasRoster + HasStore + HasClock + HasReplica + HasNonces + HasIndex + HasIndexer + HasMetrics,
{
    let m = state.metrics();
    let none: &[(&str, String)] = &[];
    // Every actor the roster lists: requests waiting on it, and whether
    // the watchdog has it named.
    for entry in state.roster().entries() {
        let actor = [("actor", entry.name.clone())];
        m.gauge("svc_actor_waiting", &actor, (entry.reach.waiting)() as f64);
        m.gauge("svc_actor_frozen", &actor, if entry.frozen() { 1.0 } else { 0.0 });
    }
    if let Ok(indexer) = state.indexer().call(IndexerMsg::Observe).await {
        m.gauge("svc_index_applied_seq", none, indexer.applied_seq as f64);
        m.total("svc_index_steps_total", none, indexer.steps);
        let seconds = |micros: u64| micros as f64 / 1e6;
        m.gauge("svc_index_busy_seconds", &[("part", "all".to_owned())], seconds(indexer.step_micros));
        m.gauge("svc_index_busy_seconds", &[("part", "shards".to_owned())], seconds(indexer.shard_micros));
    }
    for (collection, docs, segments) in state.index().documents() {
        let label = [("collection", collection.name().to_owned())];
        m.gauge("svc_index_documents", &label, docs as f64);
        m.gauge("svc_index_segments", &label, segments as f64);
    }
    // The rows searches copy their hits from, against their budget
    // (`index_rows_memory_mib`), and those read from the doc store instead.
    let rows = state.index().rows_held();
    m.gauge("svc_index_rows_bytes", &[("part", "held".to_owned())], rows.bytes as f64);
    m.gauge("svc_index_rows_bytes", &[("part", "budget".to_owned())], rows.budget_bytes as f64);
    m.total("svc_search_rows_from_store_total", none, rows.from_store);
    // Segments a search answered by walking a sort order, or by the whole
    // query (a text, or a filter too narrow to walk).
    let (walked, whole) = state.index().plans();
    m.total("svc_search_segments_total", &[("plan", "walk".to_owned())], walked);
    m.total("svc_search_segments_total", &[("plan", "whole".to_owned())], whole);
    if let Ok(nonces) = state.nonces().call(NonceMsg::Observe).await {
        m.gauge("svc_nonce_store_size", none, nonces.held as f64);
        m.gauge("svc_nonce_feed_seq", none, nonces.feed_seq as f64);
        // Request signatures checked with their nonce claims, and the
        // batches they were checked in.
        m.total("svc_request_signatures_total", none, nonces.signatures);
        m.total("svc_request_signature_batches_total", none, nonces.signature_batches);
    }
    // The store's memory against its budget (`store_memory_mib`).
    let memory = state.store().memory();
    m.gauge("svc_store_memory_bytes", &[("part", "budget".to_owned())], memory.capacity_bytes as f64);
    m.gauge("svc_store_memory_bytes", &[("part", "cache".to_owned())], memory.cache_bytes as f64);
    m.gauge("svc_store_memory_bytes", &[("part", "memtables".to_owned())], memory.memtables_bytes as f64);
    let logged = crate::replication::last_seq(state.store()).unwrap_or(0);
    m.gauge("svc_replication_applied_seq", none, logged as f64);
    match state.replica() {
        None => m.gauge("svc_replication_head_seq", none, logged as f64),
        Some(replica) => {
            let status = &replica.status;
            m.gauge("svc_replication_head_seq", none, status.head.load(Ordering::Relaxed) as f64);
            let lag_ms = status.lag_ms(state.clock().now().0);
            if lag_ms != i64::MAX {
                m.gauge("svc_replication_lag_seconds", none, lag_ms as f64 / 1000.0);
            }
            m.total("svc_replication_refused_total", none, status.refused.load(Ordering::Relaxed));
            m.gauge("svc_replication_fork", none, if status.fork.get().is_some() { 1.0 } else { 0.0 });
            m.total("svc_outbox_reported_total", none, status.reported.load(Ordering::Relaxed));
            m.gauge("svc_nonce_feed_head", none, status.feed_head.load(Ordering::Relaxed) as f64);
            m.gauge("svc_ad_feed_head", none, status.ad_feed_head.load(Ordering::Relaxed) as f64);
            m.gauge("svc_ad_feed_learned", none, status.ad_feed_learned.load(Ordering::Relaxed) as f64);
            let (pending, claims) = crate::replication::exchange::pending_count(state.store()).unwrap_or((0, 0));
            m.gauge("svc_outbox_pending", none, pending as f64);
            m.gauge("svc_claims_pending", none, claims as f64);
            m.total("svc_claims_reported_total", none, status.claims_reported.load(Ordering::Relaxed));
        }
    }
    m.render()
}

/// How soon a caller may try a write again after home was unreachable.
const FORWARD_RETRY_MS: u64 = 5_000;

/// A read region's write path: a request it does not serve itself goes to
/// home as it came (method, path, headers, body, streamed both ways). The
/// signature names the deployment's shared authority, so home verifies it
/// as if it had been sent there. When home cannot be reached the answer is
/// 503 with `Retry-After`, and so is a write home does not answer within
/// `forward_timeout_ms`: the region never answers a write it did not hand
/// to home.
/// A request another region owns (an ad confirmation), sent there on its
/// public port, once: a request already sent on is not sent again.
pub async fn forward_to_peer(
    state: &(impl HasConfig + HasPeers),
    region: &str,
    mut request: Request<Body>,
) -> Result<Response<Body>> {
    let unreachable =
        || Error::retry_after(Code::Unavailable, FORWARD_RETRY_MS, format!("region {region} cannot be reached"));
    let Some(peer) = state.peers().get(region) else { return Err(unreachable()) };
    if request.headers().contains_key(ROUTED_HEADER) {
        return Err(unreachable());
    }
    if let Ok(from) = axum::http::HeaderValue::from_str(&state.config().region) {
        request.headers_mut().insert(ROUTED_HEADER, from);
    }
    let wait = state.config().replication.as_ref().map_or(10_000, |r| r.forward_timeout_ms);
    match tokio::time::timeout(Duration::from_millis(wait), peer.forward(request)).await {
        Ok(Ok(answer)) => Ok(answer.map(Body::new)),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, region, "a peer region is unreachable for a confirmation");
            Err(unreachable())
        }
        Err(_) => Err(unreachable()),
    }
}

/// Marks a request one region sent on to another.
pub const ROUTED_HEADER: &str = "x-svc-routed-from";

pub async fn forward_to_home(state: &(impl HasConfig + HasReplica), request: Request<Body>) -> Result<Response<Body>> {
    let Some(replica) = state.replica() else { return Err(Error::new(Code::NotFound)) };
    let wait = state.config().replication.as_ref().map_or(10_000, |r| r.forward_timeout_ms);
    match tokio::time::timeout(Duration::from_millis(wait), replica.link.forward(request)).await {
        Ok(Ok(answer)) => Ok(answer.map(Body::new)),
        Ok(Err(LinkError::Busy)) => {
            Err(Error::retry_after(Code::Unavailable, FORWARD_RETRY_MS, "too many requests are on their way to home"))
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "home unreachable for a forwarded request");
            Err(Error::retry_after(Code::Unavailable, FORWARD_RETRY_MS, "the home region cannot be reached"))
        }
        // Home may still act on it: a retry with the same idempotency key
        // gets the first answer, so nothing is done twice.
        Err(_) => {
            tracing::warn!(wait_ms = wait, "home did not answer a forwarded request in time");
            Err(Error::retry_after(Code::Unavailable, FORWARD_RETRY_MS, "the home region did not answer in time"))
        }
    }
}
