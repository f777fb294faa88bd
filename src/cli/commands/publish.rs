//! `svc client publish`: a business developer publishes a CSV or NDJSON
//! file with its integration key. Every row is judged locally first (the
//! same rules and reasons as the service); the good rows go in batches
//! within the spec's limits, each sealed (`batch-seal.v2`) and sent under
//! its own Idempotency-Key (with `--bulk`, stored as a bulk file and
//! imported), with a progress bar; the run's state is kept
//! beside the input so an interrupted run, started again, resends exactly
//! what it sent and goes on. It ends with the outcome summary and a table
//! of every row that was not published, with its reasons.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::Value;
use svc_core::ids::RecordType;
use svc_core::keys::SigningKey;

use super::CliError;
use super::progress::Bar;
use svc_client::bulk;
use svc_client::publish::{self, Batch, Carrier, Format, Reason, Row, State};
use svc_client::sealing::{self, SealContext};
use svc_client::transport::{Answer, Transport};
use svc_client::{ClientError, Signer, Unsigned};
use svc_clock::{Clock, SystemClock};

#[derive(Debug, Clone, Args)]
pub struct PublishArgs {
    /// The input: CSV (a header row naming the product's members) or NDJSON
    /// (one record's exact bytes a line).
    pub file: PathBuf,
    /// The input's format; by default `.csv` is CSV and anything else NDJSON.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Records per batch: at most 10,000, and fewer when 32 MiB is reached
    /// first (default 1,000); with `--bulk` at most 100,000 and 256 MiB
    /// (default as many as fit).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Send each batch as a bulk file: an upload, then an import that runs
    /// in the background, followed to its end (for large catalogues).
    #[arg(long)]
    pub bulk: bool,
    /// Judge every row locally and print the reasons; send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where the run's state is kept (default: beside the input, `<file>.publish-state.json`).
    #[arg(long)]
    pub state: Option<PathBuf>,
}

/// The exit status when every row went out and none was refused.
pub const ALL_PUBLISHED: i32 = 0;
/// The exit status when the run finished but some rows were refused.
pub const SOME_REFUSED: i32 = 2;
/// The longest wait on a `429` or `503` before the batch is sent again.
const MAX_WAIT: Duration = Duration::from_secs(120);
/// How long a background push is waited for.
const MAX_POLLS: usize = 600;

struct Business {
    transport: Transport,
    push: Signer,
    read: Signer,
    /// Sandbox only: the key's grant, sent until the sandbox has seen the key.
    grant: Option<String>,
}

impl Business {
    async fn send(&self, signer: &Signer, mut request: Unsigned<'_>) -> Result<Answer, ClientError> {
        if let Some(grant) = &self.grant {
            request = request.header(svc_core::sandbox::GRANT_HEADER, grant);
        }
        let request = signer.sign_now(request, SystemClock.now().as_secs())?;
        self.transport.send(request).await
    }

    async fn read(&self, path: &str) -> Result<Value, CliError> {
        let answer = self.send(&self.read, Unsigned::new("GET", path, Vec::new())).await?;
        if answer.status != 200 {
            return Err(refused(path, &answer));
        }
        Ok(answer.json())
    }
}

fn refused(what: &str, answer: &Answer) -> CliError {
    let body = String::from_utf8_lossy(&answer.bytes).into_owned();
    CliError::Client(ClientError::Status { status: answer.status, path: what.to_owned(), body })
}

/// Runs the command with `key` (and, in the sandbox, its `grant`); answers
/// the exit status.
pub async fn run(
    base_url: &str,
    authority: &str,
    (key, grant): (SigningKey, Option<String>),
    trust: &svc_client::trust::Trust,
    args: &PublishArgs,
) -> Result<i32, CliError> {
    let record_type = RecordType::Products;
    let input = publish::read_input(&args.file)?;
    let format = args.format.unwrap_or_else(|| Format::of(&args.file));
    let rows = publish::rows(&input, format, record_type)
        .map_err(|e| ClientError::Publishing { path: args.file.clone(), detail: e.to_string() })?;
    if args.dry_run {
        let refused = report(&rows, None);
        println!("dry run: nothing was sent");
        return Ok(if refused == 0 { ALL_PUBLISHED } else { SOME_REFUSED });
    }
    let (carrier, per_batch) = match args.bulk {
        true => (Carrier::BulkFile, args.batch.unwrap_or(usize::MAX)),
        false => (Carrier::Body, args.batch.unwrap_or(1_000)),
    };
    let key_id = key.verifying_key().thumbprint();
    let digest = hex::encode(svc_core::digest::sha256(&input));
    let state_path = args.state.clone().unwrap_or_else(|| State::path_for(&args.file));
    let mut state = match State::load(&state_path, &digest, &key_id)? {
        Some(state) => {
            let done = state.batches.iter().filter(|b| b.outcomes.is_some()).count();
            eprintln!("resuming {}: {done} of {} batches done", state_path.display(), state.batches.len());
            state
        }
        None => State {
            input_sha256: digest.clone(),
            record_type: "products".into(),
            key_id,
            batches: publish::plan(&rows, per_batch, carrier)
                .into_iter()
                .map(|rows| Batch { rows, upload_id: None, idempotency_key: None, seal: None, outcomes: None })
                .collect(),
        },
    };
    state.save(&state_path)?;
    let bar = Bar::counting(&args.file.display().to_string(), 0);
    let business = Business {
        transport: Transport::trusting(base_url, trust)?,
        push: Signer::new(key.clone(), authority, "svc-push"),
        read: Signer::new(key.clone(), authority, "svc-business-read"),
        grant,
    };
    let context = business.read("/v1/seal-context").await?;
    let context = SealContext {
        cert_id: context["cert_id"].as_str().unwrap_or_default().to_owned(),
        ai_policy_version: context["ai_policy_version"].as_u64().unwrap_or(0),
    };
    let mut last_seq = 0;
    let total = state.batches.len();
    for i in 0..total {
        show_progress(&bar, &state, &rows);
        if state.batches[i].outcomes.is_some() {
            continue;
        }
        let outcomes = loop {
            if args.bulk && state.batches[i].upload_id.is_none() {
                let records: Vec<Vec<u8>> = state.batches[i].rows.iter().map(|&r| bytes_of(&rows[r])).collect();
                bar.set(0, 0, format!("batch {}/{total}: uploading its file", i + 1));
                // A fresh address each time: a run that died before keeping
                // the id leaves an unused upload, which expires in 7 days.
                let nonce = hex::encode(svc_clock::random::<6>());
                let idempotency_key = format!("svc-bulk-{}-{i}-{nonce}", &digest[..16]);
                state.batches[i].upload_id = Some(upload(&business, &records, &idempotency_key).await?);
                state.save(&state_path)?;
            }
            if state.batches[i].seal.is_none() {
                let records: Vec<Vec<u8>> = state.batches[i].rows.iter().map(|&r| bytes_of(&rows[r])).collect();
                let now = SystemClock.now();
                last_seq = (now.0 as u64).max(last_seq + 1);
                let seal = sealing::batch_seal(&key, &context, "products", &records, last_seq, now)?;
                let nonce = hex::encode(svc_clock::random::<6>());
                state.batches[i].idempotency_key = Some(format!("svc-publish-{}-{i}-{nonce}", &digest[..16]));
                state.batches[i].seal = Some(seal);
                // Kept before it is sent: a resumed run sends these same bytes.
                state.save(&state_path)?;
            }
            match send(&business, &state.batches[i], &rows, &bar).await? {
                Sent::Answered(outcomes) => break outcomes,
                Sent::Later(wait) => {
                    // Not taken: sealed again (a fresh `sealed_at`) after the wait.
                    state.batches[i].seal = None;
                    state.batches[i].idempotency_key = None;
                    state.save(&state_path)?;
                    tokio::time::sleep(wait).await;
                }
            }
        };
        state.batches[i].outcomes = Some(outcomes);
        state.save(&state_path)?;
    }
    show_progress(&bar, &state, &rows);
    bar.finish();
    let refused = report(&rows, Some(&state));
    Ok(if refused == 0 { ALL_PUBLISHED } else { SOME_REFUSED })
}

fn bytes_of(row: &Row) -> Vec<u8> {
    row.judged.clone().unwrap_or_default()
}

enum Sent {
    Answered(Vec<(String, Vec<Reason>)>),
    /// Refused for now (rate or availability): send again after this long.
    Later(Duration),
}

/// Stores a bulk file of `records` at a new upload address; answers its
/// upload id.
async fn upload(business: &Business, records: &[Vec<u8>], idempotency_key: &str) -> Result<String, CliError> {
    let body = serde_json::to_vec(&serde_json::json!({"record_type": "products"}))?;
    let request = Unsigned::new("POST", "/v1/bulk-uploads", body).header("idempotency-key", idempotency_key);
    let described = business.send(&business.push, request).await?;
    if described.status != 200 {
        return Err(refused("/v1/bulk-uploads", &described));
    }
    let address = described.json();
    let (Some(path), Some(upload_id)) =
        (address["url"].as_str().and_then(bulk::upload_path), address["upload_id"].as_str())
    else {
        return Err(CliError::Missing("the upload address names no path or id"));
    };
    let form = bulk::form(&address["fields"], &bulk::ndjson(records));
    let request = axum::http::Request::post(path)
        .header("content-type", bulk::content_type())
        .body(axum::body::Body::from(form))
        .map_err(ClientError::from)?;
    let stored = business.transport.send(request).await?;
    if stored.status != 201 {
        return Err(refused(path, &stored));
    }
    Ok(upload_id.to_owned())
}

/// Sends one sealed batch (its records, or its stored file's import) and
/// reads its outcomes, following a background push on `bar`.
async fn send(business: &Business, batch: &Batch, rows: &[Row], bar: &Bar) -> Result<Sent, CliError> {
    let (Some(seal), Some(idempotency_key)) = (&batch.seal, &batch.idempotency_key) else {
        return Err(CliError::Usage("a batch is sent only once sealed".into()));
    };
    let (path, body) = match &batch.upload_id {
        Some(upload_id) => {
            ("/v1/bulk-imports", serde_json::to_vec(&serde_json::json!({"upload_id": upload_id, "batch_seal": seal}))?)
        }
        None => {
            let records: Vec<Vec<u8>> = batch.rows.iter().map(|&r| bytes_of(&rows[r])).collect();
            ("/v1/publish/products", sealing::publish_body(seal, &records))
        }
    };
    let request = Unsigned::new("POST", path, body).header("idempotency-key", idempotency_key);
    let answer = business.send(&business.push, request).await?;
    match answer.status {
        200 if batch.upload_id.is_none() => Ok(Sent::Answered(outcomes(&answer.json()["results"], batch.rows.len()))),
        // A push in the background, or an import (settled or not): its
        // results, once it completes, page by page.
        200 | 202 => {
            let id = answer.json()["push_id"].as_str().unwrap_or_default().to_owned();
            Ok(Sent::Answered(finished(business, &id, batch.rows.len(), bar).await?))
        }
        429 | 503 => {
            let seconds = answer
                .headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(60);
            let wait = Duration::from_secs(seconds).min(MAX_WAIT);
            eprintln!("the service answered {}: sending again in {} s", answer.status, wait.as_secs());
            Ok(Sent::Later(wait))
        }
        _ => Err(refused("/v1/publish/products", &answer)),
    }
}

/// A background push's outcomes, once it completes, read page by page;
/// meanwhile `bar` says where it stands.
async fn finished(
    business: &Business,
    push_id: &str,
    leaves: usize,
    bar: &Bar,
) -> Result<Vec<(String, Vec<Reason>)>, CliError> {
    let status_path = format!("/v1/pushes/{push_id}");
    for _ in 0..MAX_POLLS {
        let status = business.read(&status_path).await?;
        let progress = &status["progress"];
        bar.set(
            progress["chunk"].as_u64().unwrap_or(0),
            progress["chunks"].as_u64().unwrap_or(0),
            format!("chunks · {push_id} {}", progress["stage"].as_str().unwrap_or("queued")),
        );
        if !status["completed_at"].is_null() {
            let mut results = status["results"].as_array().cloned().unwrap_or_default();
            let mut cursor = status["next_cursor"].as_str().map(str::to_owned);
            while let Some(next) = cursor {
                let page = business.read(&format!("{status_path}?cursor={}", svc_client::percent(&next))).await?;
                results.extend(page["results"].as_array().cloned().unwrap_or_default());
                cursor = page["next_cursor"].as_str().map(str::to_owned);
            }
            return Ok(outcomes(&Value::Array(results), leaves));
        }
        let wait = status["poll_after_seconds"].as_u64().unwrap_or(1).clamp(1, 5);
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
    Err(CliError::Usage(format!("{status_path} did not complete; run again to keep waiting")))
}

/// Per leaf, the outcome and reasons of a `results` array (by `leaf_index`).
fn outcomes(results: &Value, leaves: usize) -> Vec<(String, Vec<Reason>)> {
    let mut out = vec![("pending".to_owned(), Vec::new()); leaves];
    for result in results.as_array().into_iter().flatten() {
        let Some(leaf) = result["leaf_index"].as_u64().map(|l| l as usize).filter(|l| *l < leaves) else { continue };
        let reasons = result["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| Reason {
                code: e["code"].as_str().unwrap_or_default().to_owned(),
                pointer: e["pointer"].as_str().unwrap_or_default().to_owned(),
                detail: e["detail"].as_str().unwrap_or_default().to_owned(),
            })
            .collect();
        out[leaf] = (result["outcome"].as_str().unwrap_or("pending").to_owned(), reasons);
    }
    out
}

fn show_progress(bar: &Bar, state: &State, rows: &[Row]) {
    let sent: usize = state.batches.iter().filter(|b| b.outcomes.is_some()).map(|b| b.rows.len()).sum();
    let planned: usize = state.batches.iter().map(|b| b.rows.len()).sum();
    let local = rows.iter().filter(|r| r.judged.is_err()).count();
    let done = state.batches.iter().filter(|b| b.outcomes.is_some()).count();
    let message = format!("records · {done}/{} batches · {local} refused locally", state.batches.len());
    bar.set(sent as u64, planned as u64, message);
}

/// Prints the table of rows not published and the summary; answers how
/// many rows were refused (locally or by the service).
fn report(rows: &[Row], state: Option<&State>) -> usize {
    let mut outcome_of: Vec<Option<(String, Vec<Reason>)>> = vec![None; rows.len()];
    for batch in state.map(|s| s.batches.as_slice()).unwrap_or_default() {
        for (leaf, &row) in batch.rows.iter().enumerate() {
            outcome_of[row] = batch.outcomes.as_ref().and_then(|o| o.get(leaf).cloned());
        }
    }
    let mut lines = Vec::new();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for (row, outcome) in rows.iter().zip(&outcome_of) {
        let (outcome, reasons) = match (&row.judged, outcome) {
            (Err(reasons), _) => ("refused locally".to_owned(), reasons.clone()),
            (Ok(_), Some((outcome, reasons))) => (outcome.clone(), reasons.clone()),
            (Ok(_), None) if state.is_none() => ("valid".to_owned(), Vec::new()),
            (Ok(_), None) => ("not sent".to_owned(), Vec::new()),
        };
        *counts.entry(outcome.clone()).or_default() += 1;
        let id = row.business_product_id.clone().unwrap_or_else(|| "-".into());
        for reason in &reasons {
            lines.push([
                row.line.to_string(),
                id.clone(),
                outcome.clone(),
                reason.code.clone(),
                reason.pointer.clone(),
                reason.detail.clone(),
            ]);
        }
        if reasons.is_empty() && matches!(outcome.as_str(), "rejected" | "refused locally") {
            lines.push([row.line.to_string(), id, outcome, String::new(), String::new(), String::new()]);
        }
    }
    if !lines.is_empty() {
        print_table(&["line", "business_product_id", "outcome", "code", "pointer", "detail"], &lines);
        println!();
    }
    let summary: Vec<String> = counts.iter().map(|(outcome, n)| format!("{n} {outcome}")).collect();
    println!("{} rows: {}", rows.len(), summary.join(", "));
    counts.get("rejected").copied().unwrap_or(0) + counts.get("refused locally").copied().unwrap_or(0)
}

fn print_table<const N: usize>(header: &[&str; N], lines: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for line in lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count().min(60));
        }
    }
    let row = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", padded.join("  ").trim_end());
    };
    row(header.to_vec());
    for line in lines {
        row(line.iter().map(String::as_str).collect());
    }
}
