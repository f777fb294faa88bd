//! The AI companies' side of a chaos run: signed searches and fetches at
//! steady rates from several AI keys, each sent to the regions in turn, and
//! what every client saw recorded (key, nonce, region, status, rows,
//! receipt), so the verdict is computed from the clients' side, not from
//! the nodes' own word.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::setup::AiKey;
use svc_client::transport::Transport;
use svc_client::{Signer, Unsigned};
use svc_clock::{Clock, SystemClock};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ask {
    /// `POST /v1/products/search`.
    Search,
    /// `GET /v1/records/{id}` of this record.
    Fetch(String),
}

/// One request as its client saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Seen {
    /// Milliseconds since the load started.
    pub at_ms: u64,
    pub ask: Ask,
    pub region: String,
    pub key_id: String,
    pub nonce: String,
    /// `0` when no answer came (refused connection, timeout).
    pub status: u16,
    /// Rows of a search; 1 for a fetch that answered a record.
    pub rows: usize,
    /// The receipt envelope of a served search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Value>,
    pub latency_ms: f64,
    /// Where the same signed request (same nonce) was sent again on
    /// purpose, half a second after it was served, and what that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_status: Option<u16>,
}

/// Where the load goes: each region's public address.
#[derive(Clone)]
pub struct Target {
    pub region: String,
    pub transport: Transport,
}

/// How much load a second: searches and fetches, and how many served
/// searches are sent again to the next region.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    pub searches: u32,
    pub fetches: u32,
    pub replays: u32,
}

/// Runs the `rates` for `duration`, spread over `keys` and `targets` in
/// turn; fetches ask for `fetchable` ids in turn. Answers every request as
/// its client saw it, in the order they were sent.
pub async fn run(
    keys: &[AiKey],
    targets: &[Target],
    rates: Rates,
    fetchable: &[String],
    duration: Duration,
    authority: &str,
) -> Vec<Seen> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let searches = drive(keys, targets, (rates.searches, rates.replays), None, (started, duration), authority, &seen);
    let fetches = drive(keys, targets, (rates.fetches, 0), Some(fetchable), (started, duration), authority, &seen);
    tokio::join!(searches, fetches);
    let mut all = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    all.sort_by_key(|s| s.at_ms);
    all
}

/// One kind of request at `rate` a second: searches, or fetches of
/// `fetchable` in turn.
async fn drive(
    keys: &[AiKey],
    targets: &[Target],
    (rate, replays): (u32, u32),
    fetchable: Option<&[String]>,
    (started, duration): (Instant, Duration),
    authority: &str,
    seen: &Arc<Mutex<Vec<Seen>>>,
) {
    if rate == 0 || fetchable.is_some_and(<[String]>::is_empty) {
        return;
    }
    let replay_every = if replays == 0 || targets.len() < 2 { usize::MAX } else { (rate / replays).max(1) as usize };
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let mut tasks = tokio::task::JoinSet::new();
    let mut n: usize = 0;
    while started.elapsed() < duration {
        let due = started + interval * n as u32;
        tokio::time::sleep_until(due.into()).await;
        let key = keys[n % keys.len()].clone();
        let turn = n / keys.len();
        let target = targets[turn % targets.len()].clone();
        let replay = (n % replay_every == replay_every - 1).then(|| targets[(turn + 1) % targets.len()].clone());
        let ask = fetchable.map_or(Ask::Search, |ids| Ask::Fetch(ids[n % ids.len()].clone()));
        let (seen, authority) = (seen.clone(), authority.to_owned());
        tasks.spawn(async move {
            let entry = one(&key, (&target, replay.as_ref()), ask, &authority, started).await;
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(entry);
        });
        n += 1;
        // Reap finished requests as they go, so the set stays small.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
}

/// The method, path and body of `ask`.
pub fn request(ask: &Ask) -> (&'static str, String, Vec<u8>) {
    match ask {
        Ask::Search => {
            let body = json!({"filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc", "limit": 5});
            ("POST", "/v1/products/search".into(), body.to_string().into_bytes())
        }
        Ask::Fetch(id) => ("GET", format!("/v1/records/{id}"), Vec::new()),
    }
}

async fn one(
    key: &AiKey,
    (target, replay): (&Target, Option<&Target>),
    ask: Ask,
    authority: &str,
    started: Instant,
) -> Seen {
    let at_ms = started.elapsed().as_millis() as u64;
    let signer = Signer::new(key.key.clone(), authority, svc_client::retrieval::TAG_RETRIEVAL);
    let nonce = svc_core::b64::url_encode(&svc_clock::random::<32>());
    let (method, path, body) = request(&ask);
    let mut unsigned = Unsigned::new(method, &path, body);
    if let Some(grant) = &key.grant {
        unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
    }
    let fetch = matches!(ask, Ask::Fetch(_));
    let mut entry = Seen {
        at_ms,
        ask,
        region: target.region.clone(),
        key_id: key.key.verifying_key().thumbprint(),
        nonce: nonce.clone(),
        status: 0,
        rows: 0,
        receipt: None,
        latency_ms: 0.0,
        replayed_at: None,
        replay_status: None,
    };
    let created = SystemClock.now().as_secs();
    let again = replay.map(|_| unsigned.clone());
    let Ok(request) = signer.sign(unsigned, created, &nonce) else { return entry };
    let sent = Instant::now();
    if let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(10), target.transport.send(request)).await {
        entry.status = answer.status;
        if answer.status == 200 {
            let json = answer.json();
            entry.rows = if fetch { 1 } else { json["rows"].as_array().map_or(0, Vec::len) };
            entry.receipt = Some(json["receipt"].clone());
        }
    }
    entry.latency_ms = sent.elapsed().as_secs_f64() * 1000.0;
    if let (Some(replay), Some(unsigned), 200) = (replay, again, entry.status) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        entry.replayed_at = Some(replay.region.clone());
        entry.replay_status = Some(0);
        if let Ok(request) = signer.sign(unsigned, created, &nonce)
            && let Ok(Ok(answer)) = tokio::time::timeout(Duration::from_secs(10), replay.transport.send(request)).await
        {
            entry.replay_status = Some(answer.status);
        }
    }
    entry
}
