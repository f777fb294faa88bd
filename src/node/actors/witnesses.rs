//! Witnesses' cosignatures, at home (c2sp.org/tlog-witness). Each tick it
//! looks at the newest checkpoint and, for every configured witness whose
//! cosignature on it is missing, sends `add-checkpoint` with the
//! consistency proof from the size that witness last cosigned. A valid
//! cosignature is written as a replicated change, so every region serves
//! the checkpoint cosigned; a witness that answers late, wrongly or not at
//! all leaves the checkpoint served without its line, counts a failure in
//! `svc_witness_failures_total` and is asked again after a growing pause.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::StatusCode;
use hyper::body::Bytes;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::cosign::{self, MAX_ANSWER_BYTES, SIZE_CONTENT_TYPE, WitnessKey};

use crate::actors::error::ActorError;
use crate::actors::mailbox::Mailbox;
use crate::actors::publisher::PublisherMsg;
use crate::config::WitnessConfig;
use crate::metrics::Metrics;
use crate::outbound::Outbound;
use crate::replication::Change;
use crate::transparency::LogView;
use svc_clock::SharedClock;
use svc_store::model::{Cosignature, LogCheckpoint};
use svc_store::{cf, keys};

/// The longest pause before a failing witness is asked again.
const MAX_PAUSE: Duration = Duration::from_secs(600);

pub enum WitnessesMsg {
    Tick,
    /// Asks every witness missing from the newest checkpoint now, whatever
    /// its pause; answers each witness's state after.
    CosignNow(RpcReplyPort<Vec<WitnessState>>),
    Observe(RpcReplyPort<Vec<WitnessState>>),
}

/// One witness as home last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessState {
    pub name: String,
    /// The size it last cosigned, as it said or as home saw it sign.
    pub cosigned: Option<u64>,
    /// Why the last request failed, if it did.
    pub last_failure: Option<Failure>,
    pub failures: u64,
}

/// Why a witness's cosignature was not had (the metric's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer within its deadline.
    Timeout,
    /// No connection, or the connection broke.
    Unreachable,
    /// It answered a status the protocol does not give for success.
    Refused,
    /// A line by its key that does not verify, or an answer not in form.
    BadSignature,
    /// A `200` without its cosignature.
    NoCosignature,
    /// It says it cosigned a size this log never signed, or a different
    /// tree at this size.
    Conflict,
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Unreachable => "unreachable",
            Failure::Refused => "refused",
            Failure::BadSignature => "bad_signature",
            Failure::NoCosignature => "no_cosignature",
            Failure::Conflict => "conflict",
        }
    }
}

/// A configured witness: its key, where to send, and its deadline.
pub struct Witness {
    pub key: WitnessKey,
    pub url: url::Url,
    pub timeout: Duration,
}

impl Witness {
    /// Reads a witness's configuration, refusing a bad key or URL.
    pub fn from_config(config: &WitnessConfig) -> Result<Witness, WitnessConfigError> {
        let key = WitnessKey::parse(&config.key)
            .map_err(|e| WitnessConfigError::Key { key: config.key.clone(), detail: e.to_string() })?;
        let base = config.url.trim_end_matches('/');
        let bad_url = |detail: String| WitnessConfigError::Url { url: base.to_owned(), detail };
        let url = url::Url::parse(&format!("{base}/add-checkpoint")).map_err(|e| bad_url(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad_url("http or https with a host".into()));
        }
        Ok(Witness { key, url, timeout: Duration::from_millis(config.timeout_ms.max(1)) })
    }
}

/// A witness's configuration that names no usable key or address.
#[derive(Debug, thiserror::Error)]
pub enum WitnessConfigError {
    #[error("witness key {key}: {detail}")]
    Key { key: String, detail: String },
    #[error("witness url {url}: {detail}")]
    Url { url: String, detail: String },
}

/// Why a witness could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum WitnessUnreached {
    #[error("resolving {host}: {source}")]
    Unresolved { host: String, source: std::io::Error },
    #[error("{0} has no address")]
    NoAddress(String),
    #[error("{0}")]
    Outbound(#[from] crate::outbound::OutboundError),
}

#[derive(Clone)]
pub struct WitnessesArgs {
    pub log: LogView,
    pub publisher: Mailbox<PublisherMsg>,
    pub clock: SharedClock,
    pub witnesses: Arc<Vec<Witness>>,
    pub client: Arc<Outbound>,
    pub metrics: Metrics,
}

pub struct WitnessesState {
    args: WitnessesArgs,
    seen: Vec<Seen>,
}

/// What home knows of one witness between ticks.
#[derive(Default, Clone)]
struct Seen {
    cosigned: Option<u64>,
    last_failure: Option<Failure>,
    failures: u64,
    /// Consecutive failures, for the pause.
    streak: u32,
    not_before: Option<Instant>,
}

enum Outcome {
    Cosigned(String, u64),
    /// A `409`: the size the witness last cosigned.
    Behind(u64),
    Failed(Failure),
}

impl WitnessesState {
    async fn round(&mut self, force: bool) {
        let latest = match self.args.log.latest() {
            Ok(Some(latest)) => latest,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "witnesses: the newest checkpoint could not be read");
                return;
            }
        };
        let have: Vec<String> = match self.args.log.cosignatures(latest.size) {
            Ok(found) => found.into_iter().map(|c| c.witness).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "witnesses: the checkpoint's cosignatures could not be read");
                return;
            }
        };
        let now = Instant::now();
        let due: Vec<usize> = (0..self.args.witnesses.len())
            .filter(|&i| !have.contains(&self.args.witnesses[i].key.name))
            .filter(|&i| force || self.seen[i].not_before.is_none_or(|t| t <= now))
            .collect();
        let asks = due.iter().map(|&i| self.ask(i, &latest));
        let outcomes = futures::future::join_all(asks).await;
        for (i, outcome) in due.into_iter().zip(outcomes) {
            self.settle(i, &latest, outcome).await;
        }
    }

    /// One witness's request, and once more from the size it names if it
    /// answers that it stands elsewhere.
    async fn ask(&self, i: usize, latest: &LogCheckpoint) -> Outcome {
        let mut old = self.seen[i].cosigned.filter(|s| *s <= latest.size).unwrap_or(0);
        for _ in 0..2 {
            match self.submit(i, old, latest).await {
                Outcome::Behind(size) if size != old && size <= latest.size => old = size,
                Outcome::Behind(_) => return Outcome::Failed(Failure::Conflict),
                other => return other,
            }
        }
        Outcome::Failed(Failure::Conflict)
    }

    async fn submit(&self, i: usize, old: u64, latest: &LogCheckpoint) -> Outcome {
        let witness = &self.args.witnesses[i];
        let proof = match old {
            0 => Vec::new(),
            old if old == latest.size => Vec::new(),
            old => match self.args.log.consistency(old, latest.size).await {
                Ok(Some(proof)) => proof,
                _ => return Outcome::Failed(Failure::Conflict),
            },
        };
        let body = cosign::add_checkpoint_body(old, &proof, &latest.note);
        match tokio::time::timeout(witness.timeout, self.post(witness, body)).await {
            Err(_) => Outcome::Failed(Failure::Timeout),
            Ok(Err(e)) => {
                tracing::warn!(witness = %witness.key.name, error = %e, "witness unreachable");
                Outcome::Failed(Failure::Unreachable)
            }
            Ok(Ok(answer)) => judge(witness, latest, answer),
        }
    }

    async fn post(&self, witness: &Witness, body: String) -> Result<crate::outbound::Answer, WitnessUnreached> {
        let host = witness.url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_owned();
        let port = witness.url.port_or_known_default().unwrap_or(443);
        let address: SocketAddr = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|source| WitnessUnreached::Unresolved { host: host.clone(), source })?
            .next()
            .ok_or_else(|| WitnessUnreached::NoAddress(host.clone()))?;
        let request = hyper::Request::post("/")
            .header(hyper::header::USER_AGENT, "svc-log/1")
            .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8");
        Ok(self.args.client.send(address, &witness.url, request, Bytes::from(body), MAX_ANSWER_BYTES).await?)
    }

    async fn settle(&mut self, i: usize, latest: &LogCheckpoint, outcome: Outcome) {
        let name = self.args.witnesses[i].key.name.clone();
        let failure = match outcome {
            Outcome::Cosigned(line, timestamp) => match self.keep(latest.size, &name, line, timestamp).await {
                Ok(()) => None,
                Err(e) => {
                    // Asked again next tick; the witness already moved on,
                    // and says so with a 409 naming this size.
                    tracing::warn!(witness = %name, error = %e, "a cosignature could not be stored");
                    self.seen[i].cosigned = Some(latest.size);
                    return;
                }
            },
            Outcome::Behind(_) => Some(Failure::Conflict),
            Outcome::Failed(failure) => Some(failure),
        };
        let seen = &mut self.seen[i];
        match failure {
            None => {
                seen.cosigned = Some(latest.size);
                seen.last_failure = None;
                seen.streak = 0;
                seen.not_before = None;
                self.args.metrics.gauge("svc_witness_cosigned_size", &[("witness", name)], latest.size as f64);
            }
            Some(failure) => {
                seen.last_failure = Some(failure);
                seen.failures += 1;
                seen.streak = seen.streak.saturating_add(1);
                let every = Duration::from_secs(1) * 2u32.saturating_pow(seen.streak.min(20));
                seen.not_before = Some(Instant::now() + every.min(MAX_PAUSE));
                tracing::warn!(witness = %name, reason = failure.as_str(), size = latest.size,
                    "the checkpoint is served without this witness's cosignature");
                self.args.metrics.count(
                    "svc_witness_failures_total",
                    &[("witness", name), ("reason", failure.as_str().to_owned())],
                    1,
                );
            }
        }
    }

    async fn keep(&self, size: u64, name: &str, line: String, timestamp: u64) -> Result<(), ActorError> {
        let mut change = Change::new();
        let cosignature = Cosignature { witness: name.to_owned(), line, timestamp };
        change.put(cf::TLOG_COSIGNATURES, &keys::cosignature(size, name), &cosignature);
        let now = self.args.clock.now();
        self.args.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
        Ok(())
    }

    fn states(&self) -> Vec<WitnessState> {
        self.args
            .witnesses
            .iter()
            .zip(&self.seen)
            .map(|(w, s)| WitnessState {
                name: w.key.name.clone(),
                cosigned: s.cosigned,
                last_failure: s.last_failure,
                failures: s.failures,
            })
            .collect()
    }
}

/// What a witness's answer means for the checkpoint it was sent.
fn judge(witness: &Witness, latest: &LogCheckpoint, answer: crate::outbound::Answer) -> Outcome {
    let body = String::from_utf8_lossy(&answer.body);
    match answer.status {
        StatusCode::OK => match cosign::cosignature_in(&body, note_text(&latest.note), &witness.key) {
            Ok(Some((line, timestamp))) => Outcome::Cosigned(line, timestamp),
            Ok(None) => Outcome::Failed(Failure::NoCosignature),
            Err(_) => Outcome::Failed(Failure::BadSignature),
        },
        StatusCode::CONFLICT => {
            let sized = answer
                .headers
                .get(hyper::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with(SIZE_CONTENT_TYPE));
            match cosign::parse_size(&body).filter(|_| sized) {
                Some(size) => Outcome::Behind(size),
                // The same size with another root: a split view, or a witness
                // of another log under this origin.
                None => Outcome::Failed(Failure::Conflict),
            }
        }
        status => {
            tracing::warn!(witness = %witness.key.name, %status, answer = %body.chars().take(200).collect::<String>(),
                "witness refused the checkpoint");
            Outcome::Failed(Failure::Refused)
        }
    }
}

/// A signed note's text: everything before the blank line.
fn note_text(note: &str) -> &str {
    note.find("\n\n").map_or(note, |end| &note[..end + 1])
}

#[derive(Clone)]
pub struct Witnesses;

impl Actor for Witnesses {
    type Msg = WitnessesMsg;
    type State = WitnessesState;
    type Arguments = WitnessesArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<WitnessesMsg>,
        args: WitnessesArgs,
    ) -> Result<WitnessesState, ActorProcessingErr> {
        let seen = vec![Seen::default(); args.witnesses.len()];
        Ok(WitnessesState { args, seen })
    }

    async fn handle(
        &self,
        _me: ActorRef<WitnessesMsg>,
        msg: WitnessesMsg,
        state: &mut WitnessesState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WitnessesMsg::Tick => state.round(false).await,
            WitnessesMsg::CosignNow(reply) => {
                state.round(true).await;
                let _ = reply.send(state.states());
            }
            WitnessesMsg::Observe(reply) => {
                let _ = reply.send(state.states());
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for WitnessesMsg {
    type Seen = Vec<WitnessState>;

    fn observe(reply: ractor::RpcReplyPort<Vec<WitnessState>>) -> Self {
        WitnessesMsg::Observe(reply)
    }

    fn describe(seen: Vec<WitnessState>) -> serde_json::Value {
        serde_json::Value::Array(
            seen.into_iter()
                .map(|w| {
                    serde_json::json!({"name": w.name, "cosigned": w.cosigned, "failures": w.failures,
                    "last_failure": w.last_failure.map(Failure::as_str)})
                })
                .collect(),
        )
    }
}
