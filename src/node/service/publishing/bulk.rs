//! Bulk files (publishing 4.1): an upload address signed by the service
//! (step 1), the file sent to it and kept on the node's disk as it streams
//! in, and an import that checks the seal against the file before any
//! record (step 2) and then runs as a queued push.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::publish::bulk::{self, UploadPolicy};
use svc_core::publish::caps::UsageLedger;
use svc_core::publish::mandate::Caps;
use svc_core::publish::outcome::{self as out, BULK_MAX_BYTES, BULK_MAX_RECORDS, BULK_UPLOAD_VALID_MS};
use svc_core::seal;
use tokio::io::AsyncWriteExt;

use super::*;
use crate::actors::push_worker::{PushWorkerMsg, upload_path};
use crate::publish::{NewPush, PushRecords};
use crate::region::parts::{HasAsTable, HasClock, HasConfig, HasHome, HasKeys, HasRegistry, HasStore, HasUploads};
use crate::replication::Change;
use svc_clock::random;

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

/// A 503 whose `Retry-After` is `seconds`, with a `reason`.
fn unavailable(seconds: u64, reason: &str, detail: &str) -> Error {
    let mut problem = Problem::new(Code::Unavailable).detail(detail);
    problem.retry_after_ms = Some(seconds * 1000);
    problem.retry_after_seconds = Some(seconds);
    problem.reason = Some(reason.to_owned());
    Error::from(problem)
}

async fn put_upload(state: &(impl HasClock + HasHome), upload: &UploadRecord) -> Result<()> {
    let mut change = Change::new();
    change.put(cf::UPLOADS, upload.upload_id.as_bytes(), upload);
    let now = state.clock().now();
    state.home()?.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
    Ok(())
}

/// The staging area can be written: a probe file is created and removed.
fn staging_writable(state: &impl HasUploads) -> bool {
    let probe = state.uploads().join(".probe");
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadRequest {
    record_type: String,
}

/// Step 1: an upload address for one file, valid one hour.
pub async fn create_upload<R>(state: &R, caller: &BusinessCaller) -> Result<Answer>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome + HasAsTable + HasUploads,
{
    let (key, now) = (&caller.key, caller.now);
    let idem = idempotency_key(caller, true)?.unwrap_or_default();
    let fingerprint = request_fingerprint(caller);
    if let Some(answer) = replayed(state, &key.key_id, &idem, &fingerprint)? {
        return Ok(answer.into());
    }
    let request: UploadRequest =
        serde_json::from_slice(&caller.body).map_err(|e| invalid(format!("body is {{record_type}}: {e}")))?;
    let record_type = RecordType::from_name(&request.record_type)
        .filter(|t| t.is_collection())
        .ok_or_else(|| invalid("record_type is a collection name"))?;
    // The key needs a live mandate for the record type.
    writing_mandate(state, record_type, caller)?;
    if !staging_writable(state) {
        return Err(unavailable(60, "staging_unavailable", "the upload area cannot be written; retry later"));
    }
    let upload_id = svc_core::ids::upload_id(&random());
    let expires_at = now.plus(BULK_UPLOAD_VALID_MS);
    let policy = UploadPolicy::new(&upload_id, &key.business_uuid, &key.key_id, record_type.name(), expires_at);
    let upload = UploadRecord {
        upload_id: upload_id.clone(),
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        record_type,
        created_at: now,
        expires_at,
        bytes: None,
        records: None,
        uploaded_at: None,
        push_id: None,
        deleted_at: None,
    };
    put_upload(state, &upload).await?;
    let answer = json!({
        "upload_id": upload_id,
        "record_type": record_type.name(),
        "url": format!("{}/v1/uploads/{upload_id}", state.config().public_base()),
        "fields": bulk::policy_fields(&policy, &state.keys().upload),
        "content_type": out::BULK_CONTENT_TYPE,
        "max_bytes": BULK_MAX_BYTES,
        "max_records": BULK_MAX_RECORDS,
        "expires_at": expires_at.to_rfc3339_secs(),
    });
    let answer = Answer::ok(serde_json::to_vec(&answer).unwrap_or_default());
    remember(state, &key.key_id, idem, fingerprint, &answer).await?;
    Ok(answer)
}

/// The upload address a file is sent to, while it waits for one.
pub fn upload_waiting(state: &impl HasStore, upload_id: &str) -> Result<UploadRecord> {
    let upload: UploadRecord = state
        .store()
        .get::<UploadRecord>(cf::UPLOADS, upload_id.as_bytes())?
        .filter(|u| u.deleted_at.is_none())
        .ok_or_else(|| Error::new(Code::NotFound))?;
    if upload.uploaded_at.is_some() {
        return Err(invalid("a file was already uploaded to this address"));
    }
    Ok(upload)
}

/// A file being received: written to a part file as it streams in, counted
/// against the policy's bytes and lines, and refused as soon as it passes
/// either. Kept only once [`UploadSink::finish`] renamed it into place.
pub struct UploadSink {
    upload: UploadRecord,
    policy: UploadPolicy,
    part: PathBuf,
    file: tokio::fs::File,
    bytes: u64,
    newlines: u64,
    last: u8,
}

fn staging(e: std::io::Error) -> Error {
    // The cause names the node's own files: the operator's log, not the caller's answer.
    tracing::warn!(error = %e, "a bulk file could not be staged");
    unavailable(60, "staging_unavailable", "the file could not be staged here; send it again")
}

/// Opens the file of an upload once its form's fields are read: they must
/// carry the service's signed policy for this address, unexpired.
pub async fn open_upload(
    state: &(impl HasKeys + HasUploads),
    upload: UploadRecord,
    fields: &BTreeMap<String, String>,
    now: svc_core::time::UnixMs,
) -> Result<UploadSink> {
    let policy =
        bulk::check_policy(|n| fields.get(n).cloned(), &upload.upload_id, &state.keys().upload.verifying_key(), now)
            .map_err(|r| invalid(r.to_string()))?;
    let part = upload_path(state.uploads(), &format!("{}.part", upload.upload_id));
    let file = tokio::fs::File::create(&part).await.map_err(staging)?;
    Ok(UploadSink { upload, policy, part, file, bytes: 0, newlines: 0, last: b'\n' })
}

impl UploadSink {
    /// Writes the next piece of the file; past a limit, the part file is removed.
    pub async fn write(&mut self, chunk: &[u8]) -> Result<()> {
        let written = self.write_counted(chunk).await;
        if written.is_err() {
            let _ = tokio::fs::remove_file(&self.part).await;
        }
        written
    }

    async fn write_counted(&mut self, chunk: &[u8]) -> Result<()> {
        self.bytes += chunk.len() as u64;
        if self.bytes > self.policy.max_bytes {
            return Err(Error::detail(Code::RecordTooLarge, "the file is over 268,435,456 bytes"));
        }
        self.newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        self.last = chunk.last().copied().unwrap_or(self.last);
        if self.lines() > self.policy.max_records {
            return Err(invalid(format!("the file holds more than {} records", self.policy.max_records)));
        }
        self.file.write_all(chunk).await.map_err(staging)
    }

    fn lines(&self) -> u64 {
        self.newlines + u64::from(self.last != b'\n')
    }

    /// Gives up on the file (the sender's stream failed).
    pub async fn abort(self) {
        let _ = tokio::fs::remove_file(&self.part).await;
    }

    /// Syncs the file, puts it in place, and records the upload: its size,
    /// its records and when it came.
    pub async fn finish<R>(mut self, state: &R, now: svc_core::time::UnixMs) -> Result<Value>
    where
        R: HasClock + HasHome + HasUploads,
    {
        if let Err(e) = self.file.sync_all().await {
            let _ = tokio::fs::remove_file(&self.part).await;
            return Err(staging(e));
        }
        let (bytes, records) = (self.bytes, self.lines());
        let upload_id = self.upload.upload_id.clone();
        tokio::fs::rename(&self.part, upload_path(state.uploads(), &upload_id)).await.map_err(staging)?;
        self.upload.bytes = Some(bytes);
        self.upload.records = Some(records);
        self.upload.uploaded_at = Some(now);
        put_upload(state, &self.upload).await?;
        Ok(json!({"upload_id": upload_id, "bytes": bytes, "records": records}))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportRequest {
    upload_id: String,
    batch_seal: Value,
}

/// Step 2: checks the seal, key, mandate and caps (the file's bytes and
/// records), certificate and AI policy version, then reads the file in the
/// background as a queued push. The same request again answers the import's
/// status and resumes it if it stopped.
pub async fn create_import<R>(state: &R, caller: &BusinessCaller) -> Result<Answer>
where
    R: HasStore + HasRegistry + HasClock + HasHome + HasAsTable,
{
    let (key, received_at) = (&caller.key, caller.now);
    let idem = idempotency_key(caller, false)?;
    let request: ImportRequest =
        serde_json::from_slice(&caller.body).map_err(|e| invalid(format!("body is {{upload_id, batch_seal}}: {e}")))?;
    let upload: UploadRecord = state
        .store()
        .get::<UploadRecord>(cf::UPLOADS, request.upload_id.as_bytes())?
        .filter(|u| u.key_id == key.key_id && u.deleted_at.is_none())
        .ok_or_else(|| invalid("no upload of this key has that upload_id"))?;
    // A settled import's file is deleted; its status is still answered.
    if let Some(push_id) = &upload.push_id {
        let push: PushRecord =
            state.store().get(cf::PUSHES, &keys::push(push_id))?.ok_or_else(|| Error::internal("import"))?;
        return import_status(state, &push).await;
    }
    let (Some(file_bytes), Some(file_records)) = (upload.bytes, upload.records) else {
        return Err(invalid("no file was uploaded to this address yet"));
    };
    let record_type = upload.record_type;
    let mandate = writing_mandate(state, record_type, caller)?;
    let caps = Caps { records_per_hour: mandate.records_per_hour, bytes_per_day: mandate.bytes_per_day };
    let ledger: UsageLedger = state.store().get(cf::USAGE_LEDGERS, key.key_id.as_bytes())?.unwrap_or_default();
    if let Err(retry) = ledger.judge_declared(received_at, file_records.max(1), file_bytes, &caps) {
        return Err(Error::retry_after(Code::RateLimited, retry.0.max(1) as u64, "the mandate's caps are reached"));
    }
    let (envelope, batch, sealed_at) = judge_batch_seal(state, key, &mandate, &request.batch_seal, record_type, None)?;
    let fingerprint = request_fingerprint(caller);
    if let Some(idem) = &idem
        && let Some(answer) = replayed(state, &key.key_id, idem, &fingerprint)?
    {
        return Ok(answer.into());
    }
    let push = NewPush {
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        record_type,
        seq: batch.seq,
        source: svc_core::publish::outcome::Source::Bulk,
        received_at,
        batch_seal_json: envelope.to_json(),
        records: PushRecords::File { upload_id: upload.upload_id.clone(), records: batch.tree_size },
        batch_seal: batch,
        mandate,
        sealed_at_fresh: seal::sealed_at_fresh(sealed_at, received_at),
        idempotency: idem.clone().map(|k| (k, fingerprint.clone())),
        body_bytes: file_bytes,
    };
    let push_id = match accept_push(state, push).await? {
        Accepted::Replay(answer) => return Ok(answer),
        Accepted::Push { push_id, .. } => push_id,
    };
    let mut upload = upload;
    upload.push_id = Some(push_id.clone());
    put_upload(state, &upload).await?;
    let push: PushRecord =
        state.store().get(cf::PUSHES, &keys::push(&push_id))?.ok_or_else(|| Error::internal("push"))?;
    let answer = import_status(state, &push).await?;
    if let Some(idem) = idem {
        // Only the acceptance is remembered; later asks report progress.
        let fresh = push_status(state, &push, false, None, None)?;
        let accepted = Answer { body: serde_json::to_vec(&fresh).unwrap_or_default(), ..answer.clone() };
        remember(state, &key.key_id, idem, fingerprint, &accepted).await?;
    }
    Ok(answer)
}

/// The import's PushStatus: 202 with `Location` while it is unsettled (and
/// a nudge to the worker, which resumes it if it stopped), 200 once settled.
async fn import_status<R>(state: &R, push: &PushRecord) -> Result<Answer>
where
    R: HasStore + HasClock + HasHome,
{
    let status = push_status(state, push, false, None, None)?;
    let body = serde_json::to_vec(&status).unwrap_or_default();
    if push.completed_at.is_some() {
        return Ok(Answer::ok(body));
    }
    state.home()?.push_worker.cast(PushWorkerMsg::Run(push.push_id.clone())).map_err(|_| {
        unavailable(300, "import_unavailable", "bulk import is unavailable; ask again with the same request")
    })?;
    Ok(Answer::accepted(body, out::status_url(&push.push_id)))
}
