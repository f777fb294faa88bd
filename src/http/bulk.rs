//! Bulk files (publishing 4.1): an upload address signed by the service
//! (step 1), the file POSTed to it as multipart/form-data and kept on the
//! node's disk, and an import that checks the seal against the file before
//! any record (step 2) and then runs as a queued push.

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::publish::bulk::{self, UploadPolicy};
use svc_core::publish::caps::UsageLedger;
use svc_core::publish::mandate::Caps;
use svc_core::publish::outcome::{self as out, BULK_MAX_BYTES, BULK_MAX_RECORDS, BULK_UPLOAD_VALID_MS};
use svc_core::seal;

use super::AppState;
use super::body::{DEFAULT_LIMIT, KIB};
use super::business::{
    Signed, TAG_PUSH, idempotency_key, json_response, judge_batch_seal, push_status, remember, replayed,
    request_fingerprint, signed, writing_mandate,
};
use super::problem::{ApiError, ApiResult};
use crate::actors::publisher::PublisherMsg;
use crate::actors::push_worker::{PushWorkerMsg, upload_path};
use crate::clock::random;
use crate::publish::{Created, NewPush, PushRecords, Refused, push_key};
use crate::replication::Change;
use crate::store::cf;
use crate::store::model::{PushRecord, UploadRecord};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/bulk-uploads", post(create_upload))
        .route("/v1/bulk-imports", post(create_import))
        // The upload carries its own limit (256 MiB), enforced while streaming.
        .route("/v1/uploads/{upload_id}", post(receive_upload).layer(DefaultBodyLimit::disable()))
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::detail(Code::RequestInvalid, detail)
}

/// A 503 whose `Retry-After` is `seconds`, with a `reason`.
fn unavailable(seconds: u64, reason: &str, detail: &str) -> ApiError {
    let mut problem = Problem::new(Code::Unavailable).detail(detail);
    problem.retry_after_ms = Some(seconds * 1000);
    problem.retry_after_seconds = Some(seconds);
    problem.reason = Some(reason.to_owned());
    ApiError::from(problem)
}

async fn put_upload(state: &AppState, upload: &UploadRecord) -> ApiResult<()> {
    let mut change = Change::new();
    change.put(cf::UPLOADS, upload.upload_id.as_bytes(), upload);
    let now = state.clock.now();
    ractor::call!(state.home()?.publisher, |reply| PublisherMsg::Apply { change, now, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(())
}

/// The staging area can be written: a probe file is created and removed.
fn staging_writable(state: &AppState) -> bool {
    let probe = state.uploads.join(".probe");
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadRequest {
    record_type: String,
}

async fn create_upload(State(state): State<AppState>, req: Request<Body>) -> Response {
    create_upload_route(&state, req).await.unwrap_or_else(IntoResponse::into_response)
}

/// Step 1: an upload address for one file, valid one hour.
async fn create_upload_route(state: &AppState, req: Request<Body>) -> ApiResult<Response> {
    let now = state.clock.now();
    let Signed { key, body, parts } = signed(state, req, TAG_PUSH, DEFAULT_LIMIT, now).await?;
    let idem = idempotency_key(&parts.headers, true)?.unwrap_or_default();
    let fingerprint = request_fingerprint(&parts, &body);
    if let Some(answer) = replayed(state, &key.key_id, &idem, &fingerprint)? {
        return Ok(answer);
    }
    let request: UploadRequest =
        serde_json::from_slice(&body).map_err(|e| invalid(format!("body is {{record_type}}: {e}")))?;
    let record_type = RecordType::from_name(&request.record_type)
        .filter(|t| t.is_collection())
        .ok_or_else(|| invalid("record_type is a collection name"))?;
    // The key needs a live mandate for the record type.
    writing_mandate(state, &key, record_type, &parts, now)?;
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
        record_type: record_type.name().into(),
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
        "url": format!("{}/v1/uploads/{upload_id}", state.config.public_base()),
        "fields": bulk::policy_fields(&policy, &state.keys.upload),
        "content_type": out::BULK_CONTENT_TYPE,
        "max_bytes": BULK_MAX_BYTES,
        "max_records": BULK_MAX_RECORDS,
        "expires_at": expires_at.to_rfc3339_secs(),
    });
    let bytes = serde_json::to_vec(&answer).unwrap_or_default();
    remember(state, &key.key_id, idem, fingerprint, StatusCode::OK, &bytes, None).await?;
    Ok(json_response(StatusCode::OK, bytes, None))
}

async fn receive_upload(
    State(state): State<AppState>,
    Path(upload_id): Path<String>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    receive_upload_route(&state, &upload_id, &headers, multipart).await.unwrap_or_else(IntoResponse::into_response)
}

/// The file, POSTed to the upload address with every field, then `file`.
/// Streamed to disk: refused as soon as it passes 256 MiB or 100,000 lines.
async fn receive_upload_route(
    state: &AppState,
    upload_id: &str,
    headers: &axum::http::HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> ApiResult<Response> {
    let now = state.clock.now();
    // The form's own overhead is allowed on top of the file.
    let limit = BULK_MAX_BYTES + 64 * KIB as u64;
    if let Some(declared) = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        && declared > limit
    {
        return Err(ApiError::detail(Code::RecordTooLarge, "the file is over 268,435,456 bytes"));
    }
    let mut multipart = multipart.map_err(|e| invalid(format!("multipart/form-data is expected: {e}")))?;
    let mut upload: UploadRecord = state
        .store
        .get::<UploadRecord>(cf::UPLOADS, upload_id.as_bytes())?
        .filter(|u| u.deleted_at.is_none())
        .ok_or_else(|| ApiError::new(Code::NotFound))?;
    if upload.uploaded_at.is_some() {
        return Err(invalid("a file was already uploaded to this address"));
    }
    let mut fields = std::collections::BTreeMap::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|e| invalid(e.to_string()))? {
        let name = field.name().unwrap_or_default().to_owned();
        if name != "file" {
            let value = field.text().await.map_err(|e| invalid(e.to_string()))?;
            if value.len() > 8 * KIB {
                return Err(invalid(format!("the field {name} is too long")));
            }
            fields.insert(name, value);
            continue;
        }
        // Every field comes before the file, as with any signed POST policy.
        let policy = bulk::check_policy(|n| fields.get(n).cloned(), upload_id, &state.keys.upload.verifying_key(), now)
            .map_err(|r| invalid(r.to_string()))?;
        let part = upload_path(&state.uploads, &format!("{upload_id}.part"));
        let result = write_file(&mut field, &part, &policy).await;
        let (bytes, records) = match result {
            Ok(sizes) => sizes,
            Err(e) => {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e);
            }
        };
        tokio::fs::rename(&part, upload_path(&state.uploads, upload_id))
            .await
            .map_err(|e| unavailable(60, "staging_unavailable", &e.to_string()))?;
        upload.bytes = Some(bytes);
        upload.records = Some(records);
        upload.uploaded_at = Some(now);
        put_upload(state, &upload).await?;
        return Ok((StatusCode::CREATED, Json(json!({"upload_id": upload_id, "bytes": bytes, "records": records})))
            .into_response());
    }
    Err(invalid("the form has no file member"))
}

/// Writes the file part, counting bytes and lines against the policy.
async fn write_file(
    field: &mut axum::extract::multipart::Field<'_>,
    path: &std::path::Path,
    policy: &UploadPolicy,
) -> ApiResult<(u64, u64)> {
    use tokio::io::AsyncWriteExt;
    let staging = |e: std::io::Error| unavailable(60, "staging_unavailable", &e.to_string());
    let mut file = tokio::fs::File::create(path).await.map_err(staging)?;
    let (mut bytes, mut newlines, mut last) = (0u64, 0u64, b'\n');
    while let Some(chunk) = field.chunk().await.map_err(|e| invalid(e.to_string()))? {
        bytes += chunk.len() as u64;
        if bytes > policy.max_bytes {
            return Err(ApiError::detail(Code::RecordTooLarge, "the file is over 268,435,456 bytes"));
        }
        newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        last = chunk.last().copied().unwrap_or(last);
        let lines = newlines + u64::from(last != b'\n');
        if lines > policy.max_records {
            return Err(invalid(format!("the file holds more than {} records", policy.max_records)));
        }
        file.write_all(&chunk).await.map_err(staging)?;
    }
    file.sync_all().await.map_err(staging)?;
    Ok((bytes, newlines + u64::from(last != b'\n')))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportRequest {
    upload_id: String,
    batch_seal: Value,
}

async fn create_import(State(state): State<AppState>, req: Request<Body>) -> Response {
    create_import_route(&state, req).await.unwrap_or_else(IntoResponse::into_response)
}

/// Step 2: checks the seal, key, mandate and caps (the file's bytes and
/// records), certificate and AI policy version, then reads the file in the
/// background as a queued push. The same request again answers the import's
/// status and resumes it if it stopped.
async fn create_import_route(state: &AppState, req: Request<Body>) -> ApiResult<Response> {
    let received_at = state.clock.now();
    let Signed { key, body, parts } = signed(state, req, TAG_PUSH, DEFAULT_LIMIT, received_at).await?;
    let idem = idempotency_key(&parts.headers, false)?;
    let request: ImportRequest =
        serde_json::from_slice(&body).map_err(|e| invalid(format!("body is {{upload_id, batch_seal}}: {e}")))?;
    let upload: UploadRecord = state
        .store
        .get::<UploadRecord>(cf::UPLOADS, request.upload_id.as_bytes())?
        .filter(|u| u.key_id == key.key_id && u.deleted_at.is_none())
        .ok_or_else(|| invalid("no upload of this key has that upload_id"))?;
    // A settled import's file is deleted; its status is still answered.
    if let Some(push_id) = &upload.push_id {
        let push: PushRecord =
            state.store.get(cf::PUSHES, &push_key(push_id))?.ok_or_else(|| ApiError::internal("import"))?;
        return import_status(state, &push).await;
    }
    let (Some(file_bytes), Some(file_records)) = (upload.bytes, upload.records) else {
        return Err(invalid("no file was uploaded to this address yet"));
    };
    let record_type = RecordType::from_name(&upload.record_type).ok_or_else(|| ApiError::internal("record type"))?;
    let mandate = writing_mandate(state, &key, record_type, &parts, received_at)?;
    let caps = Caps { records_per_hour: mandate.records_per_hour, bytes_per_day: mandate.bytes_per_day };
    let ledger: UsageLedger = state.store.get(cf::USAGE, key.key_id.as_bytes())?.unwrap_or_default();
    if let Err(retry) = ledger.judge_declared(received_at, file_records.max(1), file_bytes, &caps) {
        return Err(ApiError::retry_after(Code::RateLimited, retry.0.max(1) as u64, "the mandate's caps are reached"));
    }
    let (envelope, batch, sealed_at) = judge_batch_seal(state, &key, &mandate, &request.batch_seal, record_type, None)?;
    let fingerprint = request_fingerprint(&parts, &body);
    if let Some(idem) = &idem
        && let Some(answer) = replayed(state, &key.key_id, idem, &fingerprint)?
    {
        return Ok(answer);
    }
    let push = NewPush {
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        record_type,
        seq: batch.seq,
        source: "bulk",
        received_at,
        batch_seal_json: envelope.to_json(),
        records: PushRecords::File { upload_id: upload.upload_id.clone(), records: batch.tree_size },
        batch_seal: batch,
        mandate,
        sealed_at_fresh: seal::sealed_at_fresh(sealed_at, received_at),
        idempotency: idem.clone().map(|k| (k, fingerprint.clone())),
        body_bytes: file_bytes,
    };
    let push_id = svc_core::ids::batch_id(&random());
    let created =
        ractor::call!(state.home()?.publisher, |reply| PublisherMsg::CreatePush(Box::new(push), push_id, reply))
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?;
    let push_id = match created {
        Ok(Created::Replay(answer)) => return Ok(super::business::stored_answer(&answer)),
        Ok(Created::New(id)) | Ok(Created::Resume(id)) => id,
        Err(Refused::SeqNotIncreasing) => {
            return Err(ApiError::detail(
                Code::SeqNotIncreasing,
                "seq is not above the last accepted one for this key",
            ));
        }
        Err(Refused::SealedAtStale) => {
            return Err(ApiError::detail(Code::SealInvalid, "sealed_at is more than five minutes from receipt"));
        }
        Err(Refused::IdempotencyKeyReused) => return Err(ApiError::new(Code::IdempotencyKeyReused)),
    };
    let mut upload = upload;
    upload.push_id = Some(push_id.clone());
    put_upload(state, &upload).await?;
    let push: PushRecord =
        state.store.get(cf::PUSHES, &push_key(&push_id))?.ok_or_else(|| ApiError::internal("push"))?;
    let response = import_status(state, &push).await?;
    if let Some(idem) = idem {
        // Only the acceptance is remembered; later asks report progress.
        let status = response.status();
        let location = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).map(str::to_owned);
        let fresh = push_status(state, &push, false, None, None)?;
        let bytes = serde_json::to_vec(&fresh).unwrap_or_default();
        remember(state, &key.key_id, idem, fingerprint, status, &bytes, location).await?;
    }
    Ok(response)
}

/// The import's PushStatus: 202 with `Location` while it is unsettled (and
/// a nudge to the worker, which resumes it if it stopped), 200 once settled.
async fn import_status(state: &AppState, push: &PushRecord) -> ApiResult<Response> {
    let status = push_status(state, push, false, None, None)?;
    let body = serde_json::to_vec(&status).unwrap_or_default();
    if push.completed_at.is_some() {
        return Ok(json_response(StatusCode::OK, body, None));
    }
    state.home()?.push_worker.send_message(PushWorkerMsg::Run(push.push_id.clone())).map_err(|_| {
        unavailable(300, "import_unavailable", "bulk import is unavailable; ask again with the same request")
    })?;
    Ok(json_response(StatusCode::ACCEPTED, body, Some(out::status_url(&push.push_id))))
}
