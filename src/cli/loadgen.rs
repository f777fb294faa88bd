//! A load generator for the retrieval API: signed searches, each with a fresh
//! nonce and the current time, from N concurrent keep-alive connections
//! against a running region, reporting requests/s and latency percentiles.
//! `svc loadgen` and `benches/search.rs` drive it.
//!
//! Two ways to load: closed (each connection sends again as soon as it has
//! its answer, which finds the most the region can do) and at a fixed rate
//! (requests fall due on a schedule, which shows the latency a region gives
//! at a chosen load). At a fixed rate a request's latency runs from when it
//! fell due, not from when a free connection sent it, so a stall that holds
//! every connection counts against every request it delayed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Uri;
use http_body_util::BodyExt;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{Value, json};
use svc_core::ids::RecordType;
use svc_core::keys::SigningKey;
use svc_core::rng::Rng;
use svc_core::search::{Refusal, SearchQuery};

use svc_client::retrieval::TAG_RETRIEVAL;
use svc_client::{ClientError, Signer, Unsigned};
use svc_clock::{Clock, SystemClock};
use svc_http::sandbox::corpus::MARKETS;

/// What stops a load run: a plan that cannot run, or a connection that
/// could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadgenError {
    #[error("a load needs at least one connection, one key and one query")]
    EmptyPlan,
    #[error("a fixed rate is a positive number of requests per second")]
    Rate,
    #[error("{url}: {source}")]
    Url { url: String, source: axum::http::uri::InvalidUri },
    #[error("{url}: an http:// or https://host:port address is expected")]
    NotHttp { url: String },
    /// The TLS handshake of a connection failed (a certificate not believed).
    #[error("{addr}: TLS: {source}")]
    Tls { addr: String, source: std::io::Error },
    /// The first connection to the region failed.
    #[error("{addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("{addr}: {source}")]
    Handshake { addr: String, source: hyper::Error },
    /// The socket refused an option.
    #[error("{0}")]
    Socket(#[source] std::io::Error),
    /// A request that could not be signed.
    #[error("{0}")]
    Sign(#[from] ClientError),
    /// A connection's task panicked or was cancelled.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
}

/// One search request: the address and its JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub path: String,
    pub body: Vec<u8>,
}

impl Query {
    /// The collection of a typed address (`/v1/products/search`); `None`
    /// for `/v1/search`, whose body names it.
    pub fn typed(&self) -> Option<RecordType> {
        let segment = self.path.strip_prefix("/v1/")?.strip_suffix("/search")?;
        RecordType::from_name(&segment.replace('-', "_"))
    }

    /// The query as the search route judges it.
    pub fn judge(&self) -> Result<SearchQuery, Refusal> {
        svc_core::search::judge(&self.body, self.typed())
    }
}

/// What to run.
pub struct Plan {
    /// Where the connections go: `http://host:port`.
    pub base_url: String,
    /// The public authority requests are signed for (sent as `Host`).
    pub authority: String,
    /// Retrieval keys. Connection `i` signs with the keys `i`, `i + connections`,
    /// `i + 2 × connections`, … in turn (one key each when there are as many
    /// keys as connections; more spread a per-key limit such as ad pools' pace).
    pub keys: Vec<SigningKey>,
    pub connections: usize,
    /// Requests per second to offer, on a schedule, over all connections;
    /// `None` sends as fast as answers come back.
    pub rate: Option<f64>,
    /// Requests before the measured window: connections open, keys are
    /// introduced, caches fill. Not counted.
    pub warmup: Duration,
    pub duration: Duration,
    /// Cycled through; each connection starts at a different offset.
    pub queries: Vec<Query>,
    /// Sends each key's sandbox grant header (not signed), so a sandbox
    /// region admits a key on its first request. Production ignores it.
    pub sandbox_grant: bool,
    /// Whom an `https://` base URL is believed by.
    pub trust: svc_client::trust::Trust,
    /// Every request on a connection of its own (TCP, and TLS over
    /// `https://`), closed after its answer: the rate of new connections,
    /// handshakes included, a region sustains.
    pub connection_per_request: bool,
}

/// Where a load's connections go: the address, and over `https://` the
/// TLS connector and the name the certificate must carry.
#[derive(Clone)]
struct Target {
    addr: String,
    tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
}

impl Target {
    fn of(plan: &Plan) -> Result<Target, LoadgenError> {
        let url = plan.base_url.clone();
        let base: Uri = url.parse().map_err(|source| LoadgenError::Url { url: url.clone(), source })?;
        let (Some(scheme), Some(host)) = (base.scheme_str(), base.host()) else {
            return Err(LoadgenError::NotHttp { url });
        };
        let tls = match scheme {
            "http" => None,
            "https" => {
                let mut config = plan.trust.client_config();
                // hyper's HTTP/1 client below: ask for it by ALPN.
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
                    .map_err(|_| LoadgenError::NotHttp { url: url.clone() })?;
                Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
            }
            _ => return Err(LoadgenError::NotHttp { url }),
        };
        let port = base.port_u16().unwrap_or(if tls.is_some() { 443 } else { 80 });
        Ok(Target { addr: format!("{host}:{port}"), tls })
    }
}

/// Latency percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

/// The length of one slice of a report's timeline.
pub const SLICE: Duration = Duration::from_millis(250);

/// The requests of one slice of the window, by when each fell due (at a
/// fixed rate) or left (closed): a stall shows as the slices it spoils.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slice {
    /// From the window's start to the slice's.
    pub at_ms: u64,
    pub requests: u64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// What a run measured, over the window after the warm-up.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub connections: usize,
    /// The rate offered, when the load ran on a schedule.
    pub offered_per_second: Option<f64>,
    pub seconds: f64,
    /// Answers received (any status).
    pub requests: u64,
    /// Answers by HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that got no answer (connection refused, reset, closed).
    pub transport_errors: u64,
    pub requests_per_second: f64,
    /// Only the 200 answers, per second.
    pub ok_per_second: f64,
    /// To the last byte of the answer, from the request leaving (signed), or
    /// at a fixed rate from when it fell due.
    pub latency: Latency,
    /// The window in slices of `SLICE`, every one, empty ones included.
    pub timeline: Vec<Slice>,
}

impl Report {
    /// The `count` slices with the highest p99, worst first.
    pub fn worst_slices(&self, count: usize) -> Vec<Slice> {
        let mut slices = self.timeline.clone();
        slices.sort_by(|a, b| b.p99_ms.total_cmp(&a.p99_ms));
        slices.truncate(count);
        slices
    }
}

/// The nearest-rank percentile `p` (0–100) of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The percentiles of unsorted samples.
pub fn summarize(mut samples: Vec<Duration>) -> Latency {
    samples.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    let mean =
        if samples.is_empty() { 0.0 } else { samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64 };
    Latency {
        p50_ms: ms(percentile(&samples, 50.0)),
        p90_ms: ms(percentile(&samples, 90.0)),
        p99_ms: ms(percentile(&samples, 99.0)),
        max_ms: ms(samples.last().copied().unwrap_or_default()),
        mean_ms: mean,
    }
}

/// One answer inside the window: when its request began (from the
/// window's start) and how long it took.
struct Sample {
    at: Duration,
    took: Duration,
}

/// The slices of `window`, each with the samples that began in it.
fn timeline(samples: &[Sample], window: Duration) -> Vec<Slice> {
    let count = window.as_nanos().div_ceil(SLICE.as_nanos()) as usize;
    let mut slices: Vec<Vec<Duration>> = vec![Vec::new(); count];
    for sample in samples {
        let i = (sample.at.as_nanos() / SLICE.as_nanos()) as usize;
        if let Some(slice) = slices.get_mut(i) {
            slice.push(sample.took);
        }
    }
    slices
        .into_iter()
        .enumerate()
        .map(|(i, took)| {
            let requests = took.len() as u64;
            let latency = summarize(took);
            Slice {
                at_ms: (SLICE * i as u32).as_millis() as u64,
                requests,
                p99_ms: latency.p99_ms,
                max_ms: latency.max_ms,
            }
        })
        .collect()
}

/// What one connection saw inside the window.
#[derive(Default)]
struct Tally {
    samples: Vec<Sample>,
    statuses: BTreeMap<u16, u64>,
    transport_errors: u64,
}

/// When requests fall due at a fixed rate: request `n` (counted over all
/// connections) at `start + n / per_second`.
struct Schedule {
    start: Instant,
    per_second: f64,
    taken: AtomicU64,
}

impl Schedule {
    /// Takes the next request's due time.
    fn next(&self) -> Instant {
        let n = self.taken.fetch_add(1, Ordering::Relaxed);
        self.start + Duration::from_secs_f64(n as f64 / self.per_second)
    }
}

/// Runs the plan until the window closes: every connection sends, waits for
/// the whole answer, and sends again, at once or when the next request on
/// the schedule falls due.
pub async fn run(plan: Plan) -> Result<Report, LoadgenError> {
    if plan.connections == 0 || plan.keys.is_empty() || plan.queries.is_empty() {
        return Err(LoadgenError::EmptyPlan);
    }
    if plan.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(LoadgenError::Rate);
    }
    let target = Target::of(&plan)?;
    let queries = Arc::new(plan.queries);
    let signers: Vec<Arc<Signer>> =
        plan.keys.into_iter().map(|k| Arc::new(Signer::new(k, &plan.authority, TAG_RETRIEVAL))).collect();
    let began = svc_clock::monotonic();
    let from = began + plan.warmup;
    let until = from + plan.duration;
    let schedule =
        plan.rate.map(|per_second| Arc::new(Schedule { start: began, per_second, taken: AtomicU64::new(0) }));
    let mut tasks = Vec::with_capacity(plan.connections);
    for n in 0..plan.connections {
        let own: Vec<usize> = (n % signers.len()..signers.len()).step_by(plan.connections).collect();
        let signers: Vec<(Arc<Signer>, Option<String>)> = own
            .into_iter()
            .map(|i| {
                let signer = signers[i].clone();
                let grant =
                    plan.sandbox_grant.then(|| svc_core::sandbox::grant_for(&signer.key.verifying_key().thumbprint()));
                (signer, grant)
            })
            .collect();
        // Spread the starting offsets so connections do not send the same
        // query in lockstep.
        let start = n * queries.len() / plan.connections;
        let load = Load {
            target: target.clone(),
            signers,
            queries: queries.clone(),
            schedule: schedule.clone(),
            connection_per_request: plan.connection_per_request,
        };
        tasks.push(tokio::spawn(connection(load, start, from, until)));
    }
    let mut total = Tally::default();
    let mut failed = None;
    for task in tasks {
        // Every task is awaited (none left running behind an error).
        let tally = match task.await.map_err(LoadgenError::from).and_then(|t| t) {
            Ok(tally) => tally,
            Err(e) => {
                failed.get_or_insert(e);
                continue;
            }
        };
        total.samples.extend(tally.samples);
        total.transport_errors += tally.transport_errors;
        for (status, count) in tally.statuses {
            *total.statuses.entry(status).or_default() += count;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let seconds = plan.duration.as_secs_f64();
    let requests = total.samples.len() as u64;
    let timeline = timeline(&total.samples, plan.duration);
    let ok = total.statuses.get(&200).copied().unwrap_or(0);
    Ok(Report {
        connections: plan.connections,
        offered_per_second: plan.rate,
        seconds,
        requests,
        statuses: total.statuses,
        transport_errors: total.transport_errors,
        requests_per_second: requests as f64 / seconds,
        ok_per_second: ok as f64 / seconds,
        latency: summarize(total.samples.into_iter().map(|s| s.took).collect()),
        timeline,
    })
}

/// One HTTP/1.1 keep-alive connection of its own (no pool), so N tasks are
/// exactly N connections; over TLS when the target says so.
async fn connect(target: &Target) -> Result<SendRequest<Body>, LoadgenError> {
    let addr = &target.addr;
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|source| LoadgenError::Connect { addr: addr.clone(), source })?;
    // Small requests and answers: do not wait for Nagle.
    stream.set_nodelay(true).map_err(LoadgenError::Socket)?;
    match &target.tls {
        None => http1(addr, stream).await,
        Some((connector, name)) => {
            let stream = connector
                .connect(name.clone(), stream)
                .await
                .map_err(|source| LoadgenError::Tls { addr: addr.clone(), source })?;
            http1(addr, stream).await
        }
    }
}

async fn http1<I>(addr: &str, io: I) -> Result<SendRequest<Body>, LoadgenError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|source| LoadgenError::Handshake { addr: addr.to_owned(), source })?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the server closes.
        let _ = connection.await;
    });
    Ok(sender)
}

/// What one connection sends, and where.
struct Load {
    target: Target,
    /// A new connection for every request (handshakes counted in each).
    connection_per_request: bool,
    /// The connection's keys, each with its sandbox grant, used in turn.
    signers: Vec<(Arc<Signer>, Option<String>)>,
    queries: Arc<Vec<Query>>,
    schedule: Option<Arc<Schedule>>,
}

async fn connection(load: Load, mut next: usize, from: Instant, until: Instant) -> Result<Tally, LoadgenError> {
    let Load { target, connection_per_request, signers, queries, schedule } = load;
    let in_window = |at: Instant| at >= from && at < until;
    let mut tally = Tally::default();
    // The first connect must work: a wrong address is an error, not a report.
    let mut sender = Some(connect(&target).await?);
    loop {
        // On a schedule, every request due inside the window is sent, however
        // late; closed, the window's end stops the connection.
        let due = match &schedule {
            Some(schedule) => {
                let due = schedule.next();
                if due >= until {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
                Some(due)
            }
            None if svc_clock::monotonic() >= until => break,
            None => None,
        };
        // With a connection per request, its handshakes are part of each
        // answer's latency: timed from before the connect.
        let opened = svc_clock::monotonic();
        let kept = sender.take().filter(|s| !s.is_closed());
        let mut live = match kept {
            Some(s) => s,
            None => match connect(&target).await {
                Ok(s) => s,
                Err(_) => {
                    if in_window(due.unwrap_or_else(svc_clock::monotonic)) {
                        tally.transport_errors += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let query = &queries[next % queries.len()];
        let (signer, grant) = &signers[next % signers.len()];
        next += 1;
        let mut unsigned = Unsigned::new("POST", &query.path, query.body.clone());
        if let Some(grant) = &grant {
            unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
        }
        // Signed afresh each time: a new nonce and the current time.
        let request = signer.sign_now(unsigned, SystemClock.now().as_secs())?;
        let began = due.unwrap_or_else(|| if connection_per_request { opened } else { svc_clock::monotonic() });
        let answered = async {
            live.ready().await?;
            let response = live.send_request(request).await?;
            let status = response.status().as_u16();
            response.into_body().collect().await?;
            Ok::<u16, hyper::Error>(status)
        }
        .await;
        let counted = in_window(began);
        match answered {
            Ok(status) => {
                if counted {
                    tally.samples.push(Sample { at: began - from, took: began.elapsed() });
                    *tally.statuses.entry(status).or_default() += 1;
                }
                // With a connection per request, it closes with its answer.
                if !connection_per_request {
                    sender = Some(live);
                }
            }
            // Drop the connection; the next turn opens a new one.
            Err(_) if counted => tally.transport_errors += 1,
            Err(_) => {}
        }
    }
    Ok(tally)
}

/// Words that occur in the sandbox corpus's product texts (names, tags,
/// descriptions, brands); a test checks each one against the generator.
const WORDS: [&str; 32] = [
    "lamp",
    "table",
    "chair",
    "mirror",
    "jacket",
    "scarf",
    "sweater",
    "boots",
    "speaker",
    "headphones",
    "radio",
    "turntable",
    "coffee",
    "tea",
    "honey",
    "chocolate",
    "tent",
    "backpack",
    "helmet",
    "compass",
    "cream",
    "serum",
    "soap",
    "oak",
    "linen",
    "copper",
    "velvet",
    "alpine",
    "organic",
    "lumio",
    "brisa",
    "nordel",
];

/// Two-word queries as an assistant would send them (any word matches).
const PHRASES: [&str; 8] = [
    "oak table",
    "linen jacket",
    "copper lamp",
    "organic coffee",
    "alpine tent",
    "velvet chair",
    "silver headphones",
    "olive oil",
];

const SORTS: [&str; 3] = ["_text_match:desc", "price_amount:asc", "published_at:desc"];

/// Price bands in the corpus's range (5 to 500 in each currency).
const PRICE_BANDS: [(&str, &str); 3] = [("0", "50"), ("20", "150"), ("100", "500")];

/// A deterministic mix of `count` realistic product searches over the
/// sandbox corpus: text queries on words that occur in it (one word or
/// two), some browsing without text, one market's country clause each,
/// price bands and availability filters, the three sorts, 10 or 20 rows.
/// Most go to the typed address, a quarter to `/v1/search`.
pub fn product_mix(seed: u64, count: usize) -> Vec<Query> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| {
            let country = MARKETS[i % MARKETS.len()].0;
            let text = match rng.below(10) {
                0 | 1 => None,
                2..=4 => Some(*rng.pick(&PHRASES)),
                _ => Some(*rng.pick(&WORDS)),
            };
            let mut clauses = vec![json!({"country": country})];
            // Browsing without text always narrows by price, as a shopper would.
            if text.is_none() || rng.below(3) == 0 {
                let (low, high) = *rng.pick(&PRICE_BANDS);
                clauses.push(json!({"price_amount": {"gte": low, "lt": high}}));
            }
            if rng.below(4) == 0 {
                clauses.push(json!({"availability": {"in": ["in_stock", "preorder"]}}));
            }
            let sort = match text {
                Some(_) => *rng.pick(&SORTS),
                None => *rng.pick(&SORTS[1..]),
            };
            let mut body = json!({
                "filter": {"all": clauses},
                "sort_by": sort,
                "limit": *rng.pick(&[10, 10, 20]),
            });
            if let Some(text) = text {
                body["q"] = Value::from(text);
            }
            let path = if i % 4 == 3 {
                body["collection"] = Value::from("products");
                "/v1/search"
            } else {
                "/v1/products/search"
            };
            Query { path: path.to_owned(), body: serde_json::to_vec(&body).unwrap_or_default() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let latency = summarize(samples);
        assert_eq!((latency.p50_ms, latency.p90_ms, latency.p99_ms, latency.max_ms), (50.0, 90.0, 99.0, 100.0));
        assert_eq!(latency.mean_ms, 50.5);
        let one = [Duration::from_millis(7)];
        assert_eq!(percentile(&one, 50.0), one[0]);
        assert_eq!(percentile(&one, 99.0), one[0]);
        assert_eq!(percentile(&[], 99.0), Duration::ZERO);
        assert_eq!(summarize(Vec::new()), Latency::default());
    }

    /// A server that answers every request 204, on a free port.
    async fn answering_server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(|| async { axum::http::StatusCode::NO_CONTENT });
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    fn plan(base_url: String, rate: Option<f64>) -> Plan {
        Plan {
            base_url,
            authority: "api.svc.localhost".into(),
            keys: vec![SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[7; 32]).unwrap()],
            connections: 3,
            rate,
            warmup: Duration::from_millis(250),
            duration: Duration::from_millis(500),
            queries: product_mix(1, 8),
            trust: svc_client::trust::Trust::system(),
            connection_per_request: false,
            sandbox_grant: false,
        }
    }

    #[test]
    fn a_timeline_puts_each_answer_in_its_slice_and_ranks_the_worst() {
        let sample = |at_ms, took_ms| Sample { at: Duration::from_millis(at_ms), took: Duration::from_millis(took_ms) };
        let samples = [sample(0, 2), sample(249, 3), sample(250, 40), sample(600, 9), sample(700, 1)];
        let slices = timeline(&samples, Duration::from_millis(1_000));
        let rows: Vec<(u64, u64, f64)> = slices.iter().map(|s| (s.at_ms, s.requests, s.p99_ms)).collect();
        assert_eq!(rows, [(0, 2, 3.0), (250, 1, 40.0), (500, 2, 9.0), (750, 0, 0.0)]);
        let report = Report {
            connections: 1,
            offered_per_second: None,
            seconds: 1.0,
            requests: 5,
            statuses: BTreeMap::new(),
            transport_errors: 0,
            requests_per_second: 5.0,
            ok_per_second: 0.0,
            latency: Latency::default(),
            timeline: slices,
        };
        let worst: Vec<u64> = report.worst_slices(2).iter().map(|s| s.at_ms).collect();
        assert_eq!(worst, [250, 500]);
    }

    #[tokio::test]
    async fn a_fixed_rate_sends_exactly_the_requests_due_in_the_window() {
        let base = answering_server().await;
        // Due at n / 400 s: those from 0.25 s to before 0.75 s are n = 100..300,
        // sent however slowly the machine runs.
        let report = run(plan(base.clone(), Some(400.0))).await.unwrap();
        assert_eq!(report.requests, 200);
        assert_eq!(report.statuses, BTreeMap::from([(204, 200)]));
        assert_eq!((report.offered_per_second, report.transport_errors), (Some(400.0), 0));
        // The timeline counts each request in the slice it fell due in.
        let per_slice: Vec<(u64, u64)> = report.timeline.iter().map(|s| (s.at_ms, s.requests)).collect();
        assert_eq!(per_slice, [(0, 100), (250, 100)]);
        assert!(report.timeline.iter().all(|s| s.p99_ms > 0.0 && s.max_ms >= s.p99_ms));
        // Closed, the count is whatever the connections manage.
        let closed = run(plan(base.clone(), None)).await.unwrap();
        assert_eq!(closed.offered_per_second, None);
        assert!(closed.requests > 0 && closed.statuses.keys().eq([&204]));
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(run(plan(base.clone(), Some(rate))).await.is_err(), "{rate}");
        }
    }

    /// With a connection per request, each request opens its own
    /// connection: the server accepts as many connections as it answers.
    #[tokio::test]
    async fn a_connection_per_request_opens_a_connection_for_each() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (accepted, answered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (counted, served) = (accepted.clone(), answered.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::Relaxed);
                let served = served.clone();
                let service = hyper::service::service_fn(move |_request| {
                    served.fetch_add(1, Ordering::Relaxed);
                    async { Ok::<_, std::convert::Infallible>(axum::http::Response::new(Body::empty())) }
                });
                tokio::spawn(async move {
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        let kept = run(plan(base.clone(), Some(200.0))).await.unwrap();
        assert_eq!(kept.requests, 100);
        assert!(accepted.load(Ordering::Relaxed) <= 3, "three keep-alive connections");
        let before = (accepted.load(Ordering::Relaxed), answered.load(Ordering::Relaxed));
        let report = run(Plan { connection_per_request: true, ..plan(base, Some(200.0)) }).await.unwrap();
        assert_eq!((report.requests, report.transport_errors), (100, 0));
        let opened = accepted.load(Ordering::Relaxed) - before.0;
        assert_eq!(opened, answered.load(Ordering::Relaxed) - before.1, "one connection per request");
    }

    #[test]
    fn the_mix_is_deterministic_varied_and_always_judged_valid() {
        let mix = product_mix(1, 400);
        assert_eq!(mix, product_mix(1, 400));
        assert_ne!(mix, product_mix(2, 400));
        let mut sorts = std::collections::BTreeSet::new();
        let mut countries = std::collections::BTreeSet::new();
        let (mut with_text, mut with_price) = (0, 0);
        for query in &mix {
            let judged = query.judge().unwrap_or_else(|r| panic!("{:?}: {r:?}", String::from_utf8_lossy(&query.body)));
            assert_eq!(judged.collection, RecordType::Products);
            sorts.insert(judged.sort[0].field.chars().take(5).collect::<String>());
            countries.insert(judged.country.clone());
            with_text += usize::from(judged.text.is_some());
            with_price += usize::from(judged.clauses.iter().any(|c| c.field.starts_with("price_")));
        }
        assert_eq!(sorts.len(), 3, "{sorts:?}");
        assert_eq!(countries.len(), MARKETS.len());
        assert!((200..400).contains(&with_text) && with_price > 50, "{with_text} {with_price}");
        assert!(mix.iter().any(|q| q.typed().is_none()) && mix.iter().any(|q| q.typed().is_some()));
    }

    #[test]
    fn every_query_word_occurs_in_the_corpus() {
        let sizes = svc_http::sandbox::corpus::Sizes { products: 4_000, ..Default::default() };
        let corpus = svc_http::sandbox::corpus::generate(1, sizes);
        let text: String = corpus
            .businesses
            .iter()
            .flat_map(|b| &b.products)
            .map(|p| String::from_utf8_lossy(p).to_lowercase())
            .collect::<Vec<_>>()
            .join(" ");
        let words: std::collections::BTreeSet<&str> =
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        for word in WORDS.iter().chain(PHRASES.iter().flat_map(|p| p.split(' ')).collect::<Vec<_>>().iter()) {
            assert!(words.contains(word), "{word} does not occur in the corpus");
        }
    }

    #[test]
    fn typed_addresses_name_their_collection() {
        let query = |path: &str| Query { path: path.into(), body: Vec::new() };
        assert_eq!(query("/v1/products/search").typed(), Some(RecordType::Products));
        assert_eq!(query("/v1/business-files/search").typed(), Some(RecordType::BusinessFiles));
        assert_eq!(query("/v1/search").typed(), None);
    }
}
