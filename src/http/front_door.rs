//! The front door: one public port that sends each request to the nearest
//! healthy region, as an anycast edge or GeoDNS would.
//!
//! "Nearest" is measured: a prober asks every region's `/readyz` four
//! times a second and keeps a moving estimate of each round trip
//! (`svc_core::nearest`). Ready regions come first, then regions that
//! answer but lag, nearest first within each; the region the door leads
//! with changes only when another is clearly nearer, so close regions do
//! not take turns. A configured `latency_ms` is only the guess before the
//! first probe. A request whose region
//! cannot be connected to goes to the next one (its body, up to 1 MiB, is
//! kept for that); a region is never retried once it may have seen the
//! request, and when it fails after that the caller's connection is cut
//! rather than answered (`forwarded::outcome_unknown`). Every answer names the region that gave it in `x-svc-region`.
//! A request in a public MCP session goes to the region that opened the
//! session, which the session id names, wherever the caller stands (to
//! any of its routes: a home group's members each have one).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tracing::Instrument;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use svc_core::nearest::{self, Estimate};
use svc_core::problem::Code;

use svc_client::ClientError;
use svc_client::transport::Transport;
use svc_node::service::Error;

/// The header naming the region that answered.
pub const REGION_HEADER: &str = "x-svc-region";
/// A body up to this size is kept so the request can go to another region.
const REPLAYABLE_BODY: usize = 1024 * 1024;
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a region may take to start answering before the door gives up
/// on it (a stalled region holds connections open without answering).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a front door did not start.
#[derive(Debug, thiserror::Error)]
pub enum FrontDoorError {
    #[error("a front door needs at least one region")]
    NoRegions,
    /// A region's URL that is not one the door can reach.
    #[error("{0}")]
    Region(#[from] ClientError),
    #[error("{listen}: {source}")]
    Bind { listen: SocketAddr, source: std::io::Error },
    /// The bound socket did not say its address.
    #[error("{0}")]
    LocalAddr(#[source] std::io::Error),
    #[error("TLS: {0}")]
    Tls(#[from] crate::tls::TlsError),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontDoorConfig {
    pub listen: SocketAddr,
    /// How often each region's readiness is asked.
    #[serde(default = "default_probe_ms")]
    pub probe_ms: u64,
    pub regions: Vec<Route>,
    /// Timeouts and caps of the door's listener.
    #[serde(default)]
    pub listener: svc_node::config::ListenerLimits,
    /// TLS on the door's listener, and the CA it believes the regions'
    /// certificates by (beside the system's roots); none: plain HTTP, which
    /// `svc front-door` serves only when `allow_plain_http` says so.
    #[serde(default)]
    pub tls: Option<svc_node::config::TlsConfig>,
    #[serde(default)]
    pub allow_plain_http: bool,
}

fn default_probe_ms() -> u64 {
    250
}

/// One region behind the door: where it listens, and optionally how far it
/// is thought to be before a probe has measured it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub region: String,
    pub url: String,
    /// The guess before the first probe; the probes' estimate replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// A simulated distance for regions that share one machine (`svc up`):
    /// the door waits this long before each request it sends the region,
    /// its probes included, so what it measures includes it. Leave it unset
    /// in a real deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// What the prober last saw of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Health {
    Ready,
    /// Answers, but is not ready (behind home, or its key not certified).
    Lagging,
    Down,
}

struct Region {
    route: Route,
    transport: Transport,
    health: RwLock<Health>,
    latency: RwLock<Estimate>,
}

impl Region {
    /// The simulated distance, waited before each request to the region.
    async fn travel(&self) {
        if let Some(ms) = self.route.delay_ms.filter(|&ms| ms > 0) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
}

#[derive(Clone)]
struct Door {
    regions: Arc<Vec<Region>>,
    /// The region the door led with last.
    leader: Arc<Mutex<Option<usize>>>,
}

/// One row of the door's table: a region, its health and its latency.
#[derive(Debug, Clone)]
pub struct TableRow {
    pub route: Route,
    pub health: Health,
    pub latency: Estimate,
}

impl Door {
    fn health(&self, i: usize) -> Health {
        *self.regions[i].health.read().unwrap_or_else(|p| p.into_inner())
    }

    fn mark(&self, i: usize, health: Health) {
        *self.regions[i].health.write().unwrap_or_else(|p| p.into_inner()) = health;
    }

    fn latency(&self, i: usize) -> Estimate {
        *self.regions[i].latency.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Regions to try, best first: ready before lagging, nearest first,
    /// the leader kept unless another is clearly nearer; down regions last
    /// (the prober may not have seen them come back).
    fn order(&self) -> Vec<usize> {
        let seen: Vec<(Health, Estimate)> =
            (0..self.regions.len()).map(|i| (self.health(i), self.latency(i))).collect();
        let mut leader = self.leader.lock().unwrap_or_else(|p| p.into_inner());
        let (order, first) = nearest::order(&seen, *leader);
        *leader = first;
        order
    }

    /// Asks every region at once whether it is ready.
    async fn probe(&self) {
        let mut probes = tokio::task::JoinSet::new();
        for i in 0..self.regions.len() {
            let door = self.clone();
            probes.spawn(async move {
                let mut request = axum::http::Request::new(Body::empty());
                *request.uri_mut() = axum::http::Uri::from_static("/readyz");
                let region = &door.regions[i];
                let sent = std::time::Instant::now();
                let ask = async {
                    region.travel().await;
                    region.transport.send(request).await
                };
                let health = match tokio::time::timeout(PROBE_TIMEOUT, ask).await {
                    Ok(Ok(answer)) => {
                        let round_trip = sent.elapsed().as_secs_f64() * 1000.0;
                        region.latency.write().unwrap_or_else(|p| p.into_inner()).observe(round_trip);
                        if answer.status == 200 { Health::Ready } else { Health::Lagging }
                    }
                    _ => Health::Down,
                };
                door.mark(i, health);
            });
        }
        while probes.join_next().await.is_some() {}
    }
}

/// A running front door.
pub struct FrontDoor {
    pub addr: SocketAddr,
    door: Door,
    shutdown: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl FrontDoor {
    pub async fn start(config: FrontDoorConfig) -> Result<FrontDoor, FrontDoorError> {
        if config.regions.is_empty() {
            return Err(FrontDoorError::NoRegions);
        }
        let trust = svc_client::trust::Trust::with_ca(config.tls.as_ref().and_then(|tls| tls.ca.as_deref()))?;
        let certificates = config.tls.as_ref().map(crate::tls::Certificates::load).transpose()?;
        let tls = certificates.clone().map(crate::tls::acceptor).transpose()?;
        let mut regions = Vec::new();
        for route in config.regions {
            let transport = Transport::trusting(&route.url, &trust)?;
            let latency = RwLock::new(Estimate::prior(route.latency_ms));
            regions.push(Region { route, transport, health: RwLock::new(Health::Lagging), latency });
        }
        let door = Door { regions: Arc::new(regions), leader: Arc::default() };
        door.probe().await;
        let listener = crate::api::listener::bind(config.listen)
            .map_err(|source| FrontDoorError::Bind { listen: config.listen, source })?;
        let addr = listener.local_addr().map_err(FrontDoorError::LocalAddr)?;
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let prober = {
            let door = door.clone();
            let mut stop = shutdown.subscribe();
            let every = Duration::from_millis(config.probe_ms.max(10));
            tokio::spawn(async move {
                let stopping = async move {
                    let _ = stop.wait_for(|s| *s).await;
                };
                tokio::pin!(stopping);
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(every) => door.probe().await,
                        _ = &mut stopping => return,
                    }
                }
            })
        };
        let app = axum::Router::new().fallback(route).with_state(door.clone());
        let server = crate::api::listener::serve(listener, app, config.listener, tls, shutdown.subscribe());
        let mut tasks = vec![prober, server];
        if let Some(certificates) = certificates {
            tasks.push(crate::tls::watch(certificates, shutdown.subscribe()));
        }
        Ok(FrontDoor { addr, door, shutdown, tasks })
    }

    /// Each region and what the prober last saw of it, in the door's order.
    pub fn table(&self) -> Vec<TableRow> {
        let row = |i: usize| TableRow {
            route: self.door.regions[i].route.clone(),
            health: self.door.health(i),
            latency: self.door.latency(i),
        };
        self.door.order().into_iter().map(row).collect()
    }

    /// Stops accepting, lets requests in flight finish, stops probing.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Sends the request to the best region that takes the connection.
async fn route(State(door): State<Door>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // The door is the trace's first hop when the caller sent none.
    let hop = svc_node::trace::Hop::start(&parts.headers);
    let span = tracing::info_span!("front_door", trace_id = %hop.trace.trace_hex());
    forward(door, parts, body, hop).instrument(span).await
}

async fn forward(door: Door, parts: axum::http::request::Parts, body: Body, hop: svc_node::trace::Hop) -> Response {
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // A small body (or none, as a GET has) is kept so a refused connection
    // can go elsewhere; a large or unsized one streams to the first region only.
    let small = match declared {
        Some(n) => n <= REPLAYABLE_BODY,
        None => axum::body::HttpBody::is_end_stream(&body),
    };
    let (kept, mut stream) = match small {
        true => match body.collect().await {
            Ok(collected) => (Some(collected.to_bytes()), None),
            Err(e) => return Error::detail(Code::RequestInvalid, e.to_string()).into_response(),
        },
        false => (None, Some(body)),
    };
    // A public MCP session lives only in the region that opened it, which
    // its id names: the request goes there, and nowhere else.
    let pinned = parts
        .headers
        .get(crate::mcp::public::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::mcp::sessions::session_region)
        .filter(|name| door.regions.iter().any(|r| r.route.region == *name));
    let order = match pinned {
        // Every route to that region (each member of home's group), best first.
        Some(name) => door.order().into_iter().filter(|&i| door.regions[i].route.region == name).collect(),
        None => door.order(),
    };
    for i in order {
        let body = match (&kept, stream.take()) {
            (Some(bytes), _) => Body::from(bytes.clone()),
            (None, Some(body)) => body,
            (None, None) => break,
        };
        let attempt = crate::forwarded::onward(&parts, body, &hop);
        let region = &door.regions[i];
        let forwarded = async {
            region.travel().await;
            region.transport.try_forward(attempt).await
        };
        let answered = tokio::time::timeout(ANSWER_TIMEOUT, forwarded).await;
        let Ok(answered) = answered else {
            // It may have taken the request: not sent again.
            tracing::warn!(region = %region.route.region, "front door: region did not answer in time");
            door.mark(i, Health::Down);
            return crate::forwarded::outcome_unknown();
        };
        match answered {
            Ok(answer) => {
                let mut answer = answer.map(Body::new);
                if let Ok(name) = HeaderValue::from_str(&region.route.region) {
                    answer.headers_mut().insert(REGION_HEADER, name);
                }
                return answer;
            }
            Err(e) if e.is_connect() => {
                tracing::warn!(region = %region.route.region, error = %e, "front door: region refused the connection");
                door.mark(i, Health::Down);
            }
            Err(e) => {
                // The region may have taken the request: not sent again.
                tracing::warn!(region = %region.route.region, error = %e, "front door: region failed mid-request");
                door.mark(i, Health::Down);
                return crate::forwarded::outcome_unknown();
            }
        }
    }
    if pinned.is_some() {
        // As for any session that has ended: the client opens a new one.
        return Error::detail(
            Code::NotFound,
            "the region holding this MCP session cannot be reached; open a new session",
        )
        .into_response();
    }
    Error::retry_after(Code::Unavailable, 5_000, "no region can be reached").into_response()
}
