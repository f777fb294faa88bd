//! What a push answers: PublishOutcome (inline, `200`) and PushStatus (queued
//! pushes and bulk imports, `202` and `GET /v1/pushes/{push_id}`), with member
//! names exactly as section 2.5 gives them, and the limits of section 8.
//!
//! Choices the spec leaves open, made here:
//! * `progress.stage` is one of `queued`, `reading` (a bulk file), `checking`
//!   (every record gets its attempt row), `publishing` (chunks of 200) and
//!   `done`; `chunk` counts chunks finished, `chunks` all of them;
//! * `poll_after_seconds` is one second per chunk still to do, from 1 to 30;
//! * `stalled` is judged only while unsettled, and `resume` then says how to
//!   resume; a settled push is never stalled;
//! * on reads, a result's `business_product_id` is `null` when the record's
//!   bytes did not name one, and `errors` is `[]` when there is none;
//!   `next_cursor` is `null` on the last page.

use serde::{Deserialize, Serialize};

use super::cursor;
use crate::time::{DAY, HOUR, MINUTE, UnixMs};

/// Up to this many records are processed inside the request (`200`) (P8.4).
pub const INLINE_MAX: usize = 50;
/// When background processing cannot be reached, up to this many records are
/// still processed inside the request; above, `503` (P8.5).
pub const INLINE_FALLBACK_MAX: usize = 500;
/// `Retry-After` of the `503` a larger push gets when the background is down.
pub const FALLBACK_RETRY_AFTER_SECONDS: u64 = 60;
/// Background processing works in chunks of this many records (P8.6).
pub const CHUNK: usize = 200;
/// Records per publish request: 1 to this many (P8.1).
pub const MAX_RECORDS: usize = 10_000;
/// Characters of one base64 record string (P8.2).
pub const MAX_RECORD_CHARS: usize = 204_800;
/// A publish request body (P8.3).
pub const MAX_BODY: usize = 32 * 1024 * 1024;
/// PushStatus results per page (P8.15).
pub const RESULTS_PAGE: usize = 100;
/// Bulk file size (P8.11).
pub const BULK_MAX_BYTES: u64 = 268_435_456;
/// Records in one bulk file (P8.10).
pub const BULK_MAX_RECORDS: usize = 100_000;
/// How long a bulk upload address stays valid (P8.12).
pub const BULK_UPLOAD_VALID_MS: i64 = HOUR;
/// How long a bulk file is kept at most (P8.13).
pub const BULK_FILE_KEPT_MS: i64 = 7 * DAY;
/// The bulk file's content type.
pub const BULK_CONTENT_TYPE: &str = "application/x-ndjson";
/// A push that completed no step for longer than this is stalled (P8.16).
pub const STALLED_AFTER_MS: i64 = 10 * MINUTE;
/// `Idempotency-Key`: 1 to this many visible ASCII characters (P8.17).
pub const IDEMPOTENCY_KEY_MAX: usize = 255;
/// The longest `poll_after_seconds` given.
pub const MAX_POLL_AFTER_SECONDS: u64 = 30;

/// One record's outcome (P2.5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Published; the record was not live before.
    Accepted,
    /// Published as a new version of a live record.
    Updated,
    /// Failed a check; `errors` says every reason.
    Rejected,
    /// Stored, not published: the push is held by the price-shock rule.
    Held,
    /// Not yet settled; still `pending` when done means not published.
    Pending,
}

impl Outcome {
    pub const ALL: [Outcome; 5] =
        [Outcome::Accepted, Outcome::Updated, Outcome::Rejected, Outcome::Held, Outcome::Pending];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Updated => "updated",
            Outcome::Rejected => "rejected",
            Outcome::Held => "held",
            Outcome::Pending => "pending",
        }
    }

    /// Whether the record was published by the push (P3.17: a row still
    /// `pending` was not).
    pub fn is_published(self) -> bool {
        matches!(self, Outcome::Accepted | Outcome::Updated)
    }

    /// The outcome a checked record settles to in the commit that publishes
    /// or holds it (P3.12, P3.13, P3.15, P3.16): `held` when the push is held,
    /// else `updated` when the record was live, else `accepted`.
    pub fn settle(was_live: bool, push_held: bool) -> Outcome {
        match (push_held, was_live) {
            (true, _) => Outcome::Held,
            (false, true) => Outcome::Updated,
            (false, false) => Outcome::Accepted,
        }
    }

    /// Parses the `status` / `outcome` query value.
    pub fn parse(text: &str) -> Option<Outcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

/// One reason a record was refused (P2.5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordError {
    pub code: String,
    /// RFC 6901 JSON pointer into the record; `""` for the whole record.
    pub pointer: String,
    pub detail: String,
}

/// One entry of PublishOutcome `results` (P2.5.3). Absent members are omitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordResult {
    pub leaf_index: u64,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub record_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seal_digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub errors: Option<Vec<RecordError>>,
}

/// The inline answer to a push (P2.5.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishOutcome {
    pub batch_id: String,
    pub seq: u64,
    pub held: bool,
    pub results: Vec<RecordResult>,
}

/// Where a push came from (P2.5.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Api,
    Bulk,
}

/// How a push is processed; the spec names only `queued` (P2.5.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Queued,
}

/// A push's state (P3.21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PushState {
    Queued,
    Processing,
    Complete,
    Held,
    Failed,
}

impl PushState {
    /// Settled states end polling (P3.22).
    pub fn is_settled(self) -> bool {
        matches!(self, PushState::Complete | PushState::Held | PushState::Failed)
    }
}

/// Records by outcome (P2.5.12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub rejected: u64,
    pub pending: u64,
    pub accepted: u64,
    pub updated: u64,
    pub held: u64,
}

impl Counts {
    pub fn add(&mut self, outcome: Outcome) {
        let slot = match outcome {
            Outcome::Rejected => &mut self.rejected,
            Outcome::Pending => &mut self.pending,
            Outcome::Accepted => &mut self.accepted,
            Outcome::Updated => &mut self.updated,
            Outcome::Held => &mut self.held,
        };
        *slot = slot.saturating_add(1);
    }

    pub fn tally(outcomes: impl IntoIterator<Item = Outcome>) -> Counts {
        let mut counts = Counts::default();
        outcomes.into_iter().for_each(|o| counts.add(o));
        counts
    }
}

/// Where processing is (see the module notes for the stages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Queued,
    Reading,
    Checking,
    Publishing,
    Done,
}

/// `progress` (P2.5.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    pub stage: Stage,
    pub chunk: u64,
    pub chunks: u64,
}

/// `error`, when a push failed (P2.5.15).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushError {
    pub code: String,
}

/// One per-record outcome on a PushStatus read (P2.5.19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusResult {
    pub leaf_index: u64,
    pub outcome: Outcome,
    pub business_product_id: Option<String>,
    pub errors: Vec<RecordError>,
}

/// `results` and `next_cursor`, present together on reads only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultsPage {
    pub results: Vec<StatusResult>,
    pub next_cursor: Option<String>,
}

/// The status of a queued push or bulk import (P2.5.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushStatus {
    pub push_id: String,
    pub batch_id: String,
    /// The collection name (`products`).
    #[serde(rename = "type")]
    pub record_type: String,
    pub seq: u64,
    pub source: Source,
    pub mode: Mode,
    pub state: PushState,
    pub held: bool,
    pub held_reasons: Vec<String>,
    pub records: u64,
    pub counts: Counts,
    pub progress: Progress,
    pub received_at: String,
    pub updated_at: String,
    /// `null` until the push is settled (P2.5.14).
    pub completed_at: Option<String>,
    /// `null`, or `{code}` when the push failed.
    pub error: Option<PushError>,
    pub status_url: String,
    /// Present only while unsettled (P2.5.17).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub poll_after_seconds: Option<u64>,
    pub stalled: bool,
    /// Present only when stalled: how to resume (P2.5.18).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub resume: Option<String>,
    /// `results` and `next_cursor`, on reads only.
    #[serde(flatten, skip_serializing_if = "Option::is_none", default)]
    pub page: Option<ResultsPage>,
}

/// `/v1/pushes/{push_id}` (P2.5.16).
pub fn status_url(push_id: &str) -> String {
    format!("/v1/pushes/{push_id}")
}

/// Whether a push whose last step completed at `last_step_at` is stalled:
/// strictly more than 10 minutes without a completed step (P3.23, P8.16).
pub fn is_stalled(last_step_at: UnixMs, now: UnixMs) -> bool {
    now.0.saturating_sub(last_step_at.0) > STALLED_AFTER_MS
}

/// How a stalled push is resumed (P3.24, P4.1.52).
pub fn resume_instruction(source: Source) -> &'static str {
    match source {
        Source::Api => {
            "send the exact same batch again (same batch_seal and records, a fresh request signature) to resume it"
        }
        Source::Bulk => "send the same bulk-import request again (same upload_id and batch_seal) to resume it",
    }
}

/// Chunks a push of `records` records is processed in.
pub fn chunks(records: u64) -> u64 {
    records.div_ceil(CHUNK as u64)
}

/// The leaves an exact resend still has to process: only those `pending`.
/// Settled records keep their outcome and nothing is published twice
/// (P3.26, P3.27); `outcomes` is in leaf order.
pub fn leaves_to_resume(outcomes: &[Outcome]) -> Vec<u64> {
    outcomes.iter().zip(0u64..).filter(|(o, _)| **o == Outcome::Pending).map(|(_, leaf)| leaf).collect()
}

/// `poll_after_seconds`: absent once settled; otherwise one second per chunk
/// still to do, from 1 to 30.
pub fn poll_after_seconds(state: PushState, records_left: u64) -> Option<u64> {
    if state.is_settled() {
        return None;
    }
    Some(chunks(records_left).clamp(1, MAX_POLL_AFTER_SECONDS))
}

/// How a push of `records` records is answered (P4.1.26, P4.1.27, P4.1.31,
/// P4.1.32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerMode {
    /// Processed inside the request: `200` PublishOutcome.
    Inline,
    /// Queued: `202` PushStatus with `Location`.
    Background,
    /// Background unreachable, small enough: processed inside the request, `200`.
    InlineFallback,
    /// Background unreachable, too large: `503` with `Retry-After: 60`.
    Unavailable,
}

pub fn answer_mode(records: usize, background_reachable: bool) -> AnswerMode {
    match (records <= INLINE_MAX, background_reachable, records <= INLINE_FALLBACK_MAX) {
        (true, _, _) => AnswerMode::Inline,
        (false, true, _) => AnswerMode::Background,
        (false, false, true) => AnswerMode::InlineFallback,
        (false, false, false) => AnswerMode::Unavailable,
    }
}

/// Whether a publish body's `records` are within the limits: 1 to 10,000
/// strings of at most 204,800 characters each (P4.1.23, P4.1.24). The error
/// says which limit, for the `request_invalid` detail.
pub fn check_records<S: AsRef<str>>(records: &[S]) -> Result<(), String> {
    if records.is_empty() || records.len() > MAX_RECORDS {
        return Err(format!("records holds 1 to {MAX_RECORDS} strings; this one holds {}", records.len()));
    }
    // Base64 is ASCII, so bytes are characters; anything else fails decoding.
    match records.iter().position(|r| r.as_ref().len() > MAX_RECORD_CHARS) {
        Some(i) => Err(format!("records/{i} is over {MAX_RECORD_CHARS} characters")),
        None => Ok(()),
    }
}

/// One page of results in leaf order, optionally of one outcome, starting
/// after the cursor's leaf (P2.5.19, P2.5.20). `results` must be in leaf
/// order. A cursor that does not decode is `None` (the caller answers
/// `request_invalid`).
pub fn results_page(results: &[StatusResult], outcome: Option<Outcome>, cursor: Option<&str>) -> Option<ResultsPage> {
    let after = match cursor {
        None => None,
        Some(c) => Some(cursor::decode(c)?.parse::<u64>().ok()?),
    };
    let mut matching = results
        .iter()
        .filter(|r| after.is_none_or(|a| r.leaf_index > a))
        .filter(|r| outcome.is_none_or(|o| r.outcome == o));
    let page: Vec<StatusResult> = matching.by_ref().take(RESULTS_PAGE).cloned().collect();
    let more = matching.next().is_some();
    let next_cursor = match page.last() {
        Some(last) if more => Some(cursor::encode(&last.leaf_index.to_string())),
        _ => None,
    };
    Some(ResultsPage { results: page, next_cursor })
}

/// `Idempotency-Key`: 1 to 255 characters, each visible ASCII `0x21`–`0x7E`
/// (P4.1.2, P8.17). Space is excluded, as for nonces.
pub fn idempotency_key_valid(key: &str) -> bool {
    (1..=IDEMPOTENCY_KEY_MAX).contains(&key.len()) && key.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::is_batch_id;
    use crate::time::SECOND;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn keys(value: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    fn status(state: PushState) -> PushStatus {
        PushStatus {
            push_id: "bat_0123456789abcdef01234567".into(),
            batch_id: "bat_0123456789abcdef01234567".into(),
            record_type: "products".into(),
            seq: 7,
            source: Source::Api,
            mode: Mode::Queued,
            state,
            held: false,
            held_reasons: vec![],
            records: 400,
            counts: Counts { pending: 400, ..Counts::default() },
            progress: Progress { stage: Stage::Queued, chunk: 0, chunks: chunks(400) },
            received_at: "2026-11-01T12:00:00Z".into(),
            updated_at: "2026-11-01T12:00:00Z".into(),
            completed_at: None,
            error: None,
            status_url: status_url("bat_0123456789abcdef01234567"),
            poll_after_seconds: poll_after_seconds(state, 400),
            stalled: false,
            resume: None,
            page: None,
        }
    }

    fn result(leaf: u64, outcome: Outcome) -> StatusResult {
        StatusResult { leaf_index: leaf, outcome, business_product_id: Some(format!("SKU-{leaf}")), errors: vec![] }
    }

    // rule: P2.5.1, P2.5.3, P2.5.4, P2.5.5, P2.5.6
    #[test]
    fn publish_outcome_members() {
        let outcome = PublishOutcome {
            batch_id: "bat_0123456789abcdef01234567".into(),
            seq: 3,
            held: false,
            results: vec![
                RecordResult {
                    leaf_index: 0,
                    outcome: Outcome::Accepted,
                    record_id: Some("svc_x".into()),
                    version: Some(1),
                    sha256: Some("sha256:00".into()),
                    seal_digest: Some("sha256:11".into()),
                    errors: None,
                },
                RecordResult {
                    leaf_index: 1,
                    outcome: Outcome::Rejected,
                    record_id: None,
                    version: None,
                    sha256: None,
                    seal_digest: None,
                    errors: Some(vec![
                        RecordError { code: "money_not_string".into(), pointer: "/price".into(), detail: "d".into() },
                        RecordError { code: "url_flagged".into(), pointer: "/url".into(), detail: "d".into() },
                    ]),
                },
            ],
        };
        let v = serde_json::to_value(&outcome).unwrap();
        assert_eq!(keys(&v), ["batch_id", "held", "results", "seq"]);
        assert_eq!(keys(&v["results"][0]), ["leaf_index", "outcome", "record_id", "seal_digest", "sha256", "version"]);
        assert_eq!(keys(&v["results"][1]), ["errors", "leaf_index", "outcome"]);
        assert_eq!(keys(&v["results"][1]["errors"][0]), ["code", "detail", "pointer"]);
        assert_eq!(v["results"][1]["errors"].as_array().unwrap().len(), 2);
        assert_eq!(v["results"][0]["outcome"], "accepted");
        assert_eq!(serde_json::from_value::<PublishOutcome>(v).unwrap(), outcome);
        for o in Outcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        assert_eq!(Outcome::parse("Accepted"), None);
    }

    // rule: P2.5.2, P2.5.7, P2.5.8, P2.5.9, P2.5.10, P2.5.11, P2.5.12, P2.5.13, P2.5.14, P2.5.15, P2.5.16, P2.5.17
    #[test]
    fn push_status_members() {
        let queued = status(PushState::Queued);
        assert!(is_batch_id(&queued.push_id) && is_batch_id(&queued.batch_id));
        let v = serde_json::to_value(&queued).unwrap();
        assert_eq!(
            keys(&v),
            [
                "batch_id",
                "completed_at",
                "counts",
                "error",
                "held",
                "held_reasons",
                "mode",
                "poll_after_seconds",
                "progress",
                "push_id",
                "received_at",
                "records",
                "seq",
                "source",
                "stalled",
                "state",
                "status_url",
                "type",
                "updated_at"
            ]
        );
        assert_eq!(v["completed_at"], Value::Null);
        assert_eq!(v["error"], Value::Null);
        assert_eq!(v["mode"], "queued");
        assert_eq!(v["source"], "api");
        assert_eq!(v["type"], "products");
        assert_eq!(v["status_url"], "/v1/pushes/bat_0123456789abcdef01234567");
        assert_eq!(keys(&v["counts"]), ["accepted", "held", "pending", "rejected", "updated"]);
        assert_eq!(v["progress"], json!({"stage": "queued", "chunk": 0, "chunks": 2}));
        assert_eq!(serde_json::from_value::<PushStatus>(v).unwrap(), queued);

        let failed = PushStatus {
            state: PushState::Failed,
            source: Source::Bulk,
            error: Some(PushError { code: "seal_invalid".into() }),
            completed_at: Some("2026-11-01T12:01:00Z".into()),
            poll_after_seconds: poll_after_seconds(PushState::Failed, 400),
            ..status(PushState::Failed)
        };
        let v = serde_json::to_value(&failed).unwrap();
        assert!(v.get("poll_after_seconds").is_none());
        assert!(v.get("resume").is_none());
        assert_eq!(v["error"], json!({"code": "seal_invalid"}));
        assert_eq!(v["source"], "bulk");
        assert_eq!(serde_json::from_value::<PushStatus>(v).unwrap(), failed);
    }

    // rule: P2.5.18, P2.5.19, P3.23
    #[test]
    fn push_status_read_with_results_and_resume() {
        let read = PushStatus {
            stalled: true,
            resume: Some(resume_instruction(Source::Api).into()),
            page: Some(ResultsPage {
                results: vec![StatusResult { business_product_id: None, ..result(0, Outcome::Rejected) }],
                next_cursor: None,
            }),
            ..status(PushState::Processing)
        };
        let v = serde_json::to_value(&read).unwrap();
        assert_eq!(v["stalled"], true);
        assert!(v["resume"].as_str().unwrap().contains("exact same batch"));
        assert_eq!(v["next_cursor"], Value::Null);
        assert_eq!(
            v["results"][0],
            json!({"leaf_index": 0, "outcome": "rejected", "business_product_id": null, "errors": []})
        );
        assert_eq!(serde_json::from_value::<PushStatus>(v).unwrap(), read);
    }

    // rule: P3.12, P3.13, P3.14, P3.15, P3.16, P3.17
    #[test]
    fn records_settle_to_accepted_updated_or_held() {
        assert_eq!(Outcome::settle(false, false), Outcome::Accepted);
        assert_eq!(Outcome::settle(true, false), Outcome::Updated);
        assert_eq!(Outcome::settle(false, true), Outcome::Held);
        assert_eq!(Outcome::settle(true, true), Outcome::Held);
        let published: Vec<Outcome> = Outcome::ALL.into_iter().filter(|o| o.is_published()).collect();
        assert_eq!(published, [Outcome::Accepted, Outcome::Updated]);
        // A rejected record among accepted ones: the batch is unaffected.
        let counts = Counts::tally([Outcome::Accepted, Outcome::Rejected, Outcome::Updated, Outcome::Accepted]);
        assert_eq!(counts, Counts { accepted: 2, rejected: 1, updated: 1, ..Counts::default() });
    }

    // rule: P3.26, P3.27, P4.1.33
    #[test]
    fn a_resend_processes_only_pending_leaves() {
        let outcomes = [Outcome::Accepted, Outcome::Pending, Outcome::Rejected, Outcome::Pending, Outcome::Held];
        assert_eq!(leaves_to_resume(&outcomes), [1, 3]);
        assert!(leaves_to_resume(&[Outcome::Updated, Outcome::Rejected]).is_empty());
    }

    // rule: P3.23, P8.16, P2.5.18
    #[test]
    fn stalled_after_more_than_ten_minutes() {
        let step = UnixMs(1_793_534_400_000);
        assert!(!is_stalled(step, step.plus(10 * MINUTE)));
        assert!(is_stalled(step, step.plus(10 * MINUTE + 1)));
        assert!(!is_stalled(step, step));
        assert!(!is_stalled(step, step.minus(SECOND)));
        assert!(!is_stalled(UnixMs(i64::MAX), UnixMs(i64::MIN)));
        assert!(is_stalled(UnixMs(i64::MIN), UnixMs(i64::MAX)));
    }

    // rule: P2.5.17, P3.22, P3.21
    #[test]
    fn poll_after_only_while_unsettled() {
        for settled in [PushState::Complete, PushState::Held, PushState::Failed] {
            assert!(settled.is_settled());
            assert_eq!(poll_after_seconds(settled, 1_000), None);
        }
        assert_eq!(poll_after_seconds(PushState::Queued, 0), Some(1));
        assert_eq!(poll_after_seconds(PushState::Processing, 200), Some(1));
        assert_eq!(poll_after_seconds(PushState::Processing, 201), Some(2));
        assert_eq!(poll_after_seconds(PushState::Processing, 100_000), Some(30));
        let v = serde_json::to_value([
            PushState::Queued,
            PushState::Processing,
            PushState::Complete,
            PushState::Held,
            PushState::Failed,
        ])
        .unwrap();
        assert_eq!(v, json!(["queued", "processing", "complete", "held", "failed"]));
    }

    // rule: P4.1.26, P4.1.27, P4.1.31, P4.1.32, P8.4, P8.5
    #[test]
    fn inline_background_and_fallback() {
        assert_eq!(answer_mode(1, true), AnswerMode::Inline);
        assert_eq!(answer_mode(50, false), AnswerMode::Inline);
        assert_eq!(answer_mode(51, true), AnswerMode::Background);
        assert_eq!(answer_mode(51, false), AnswerMode::InlineFallback);
        assert_eq!(answer_mode(500, false), AnswerMode::InlineFallback);
        assert_eq!(answer_mode(501, false), AnswerMode::Unavailable);
        assert_eq!(answer_mode(10_000, true), AnswerMode::Background);
        assert_eq!(FALLBACK_RETRY_AFTER_SECONDS, 60);
    }

    // rule: P8.1, P8.2, P8.3, P8.6, P8.10, P8.11, P8.12, P8.13, P8.15, P4.1.23, P4.1.24, P4.1.25, P4.1.29, P4.1.40, P4.1.53
    #[test]
    fn limits() {
        assert_eq!((MAX_RECORDS, MAX_RECORD_CHARS, MAX_BODY), (10_000, 204_800, 33_554_432));
        assert_eq!((CHUNK, RESULTS_PAGE, INLINE_MAX, INLINE_FALLBACK_MAX), (200, 100, 50, 500));
        assert_eq!(
            (BULK_MAX_BYTES, BULK_MAX_RECORDS, BULK_CONTENT_TYPE),
            (268_435_456, 100_000, "application/x-ndjson")
        );
        assert_eq!((BULK_UPLOAD_VALID_MS, BULK_FILE_KEPT_MS), (3_600_000, 604_800_000));
        assert_eq!((chunks(0), chunks(1), chunks(200), chunks(201), chunks(10_000)), (0, 1, 1, 2, 50));
        assert!(check_records::<&str>(&[]).is_err());
        assert!(check_records(&["AAAA"]).is_ok());
        assert!(check_records(&vec!["AAAA"; 10_000]).is_ok());
        assert!(check_records(&vec!["AAAA"; 10_001]).is_err());
        let big = "A".repeat(MAX_RECORD_CHARS);
        assert!(check_records(&[big.as_str()]).is_ok());
        let over = "A".repeat(MAX_RECORD_CHARS + 1);
        assert_eq!(check_records(&[big.as_str(), over.as_str()]), Err("records/1 is over 204800 characters".into()));
    }

    // rule: P2.5.19, P2.5.20, P8.15, P4.1.14
    #[test]
    fn results_pages_of_one_hundred_in_leaf_order() {
        let all: Vec<StatusResult> =
            (0..250).map(|i| result(i, if i % 2 == 0 { Outcome::Accepted } else { Outcome::Rejected })).collect();
        let first = results_page(&all, None, None).unwrap();
        assert_eq!(first.results.len(), 100);
        assert_eq!(first.results[99].leaf_index, 99);
        let second = results_page(&all, None, first.next_cursor.as_deref()).unwrap();
        assert_eq!(second.results[0].leaf_index, 100);
        let third = results_page(&all, None, second.next_cursor.as_deref()).unwrap();
        assert_eq!(third.results.len(), 50);
        assert_eq!(third.next_cursor, None);
        let rejected = results_page(&all, Some(Outcome::Rejected), None).unwrap();
        assert!(rejected.results.iter().all(|r| r.outcome == Outcome::Rejected));
        assert_eq!(rejected.results.len(), 100);
        let rest = results_page(&all, Some(Outcome::Rejected), rejected.next_cursor.as_deref()).unwrap();
        assert_eq!((rest.results.len(), rest.results[0].leaf_index, rest.next_cursor), (25, 201, None));
        // Exactly a page: no next cursor.
        let hundred = results_page(&all[..100], None, None).unwrap();
        assert_eq!(hundred.next_cursor, None);
        assert!(results_page(&all, None, Some("garbage!")).is_none());
        assert!(results_page(&all, None, Some(&cursor::encode("not a number"))).is_none());
    }

    // rule: P4.1.2, P8.17
    #[test]
    fn idempotency_keys() {
        assert!(idempotency_key_valid("a"));
        assert!(idempotency_key_valid("!~"));
        assert!(idempotency_key_valid(&"k".repeat(255)));
        assert!(!idempotency_key_valid(&"k".repeat(256)));
        assert!(!idempotency_key_valid(""));
        assert!(!idempotency_key_valid("a b"));
        assert!(!idempotency_key_valid("a\u{7f}"));
        assert!(!idempotency_key_valid("a\tb"));
        assert!(!idempotency_key_valid("é"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsers_never_panic(text in ".{0,300}", leaf in any::<u64>()) {
            let _ = idempotency_key_valid(&text);
            let _ = Outcome::parse(&text);
            let _ = serde_json::from_str::<PushStatus>(&text);
            let _ = serde_json::from_str::<PublishOutcome>(&text);
            let all = [result(leaf, Outcome::Held)];
            let _ = results_page(&all, None, Some(&text));
        }
    }
}
