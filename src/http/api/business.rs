//! The business API's routes (publishing-verification section 4.1): each
//! authenticates with the [`Business`] extractor for its tag, calls one use
//! case of `service::publishing`, and maps its answer. Bulk uploads and
//! analytics are here too: they are the same API, signed the same way.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use axum::extract::multipart::MultipartRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Multipart, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_core::publish::outcome::BULK_MAX_BYTES;

use super::auth::with_credentials;
use super::body::{DEFAULT_LIMIT, KIB, PUBLISH_LIMIT, declared_length, read_limited};
use svc_node::limits::{InFlightGuard, PUBLISHES_PER_ADDRESS, PUBLISHES_PER_KEY};
use svc_node::region::Region;
use svc_node::service::publishing::{
    self as publishing, Answer, AttemptsQuery, BusinessCaller, CatalogueQuery, DailyQuery, Origin, StatusQuery,
    TAG_PUSH, TAG_READ, WhoQuery,
};
use svc_node::service::{Error, Result};

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/v1/publish/{kind}", post(publish))
        .route("/v1/publish/{kind}/withdraw", post(withdraw))
        .route("/v1/publish/{kind}/delete", post(delete_record))
        .route("/v1/records/{record_id}", delete(bare_delete))
        .route("/v1/catalogue", get(catalogue))
        .route("/v1/catalogue/{id}", get(catalogue_record).delete(bare_delete))
        .route("/v1/push-attempts", get(push_attempts))
        .route("/v1/pushes/{push_id}", get(push_status))
        .route("/v1/seal-context", get(seal_context))
        .route("/v1/analytics/daily", get(daily))
        .route("/v1/analytics/who-is-asking", get(who_is_asking))
        .route("/v1/freshness-expectations", get(freshness_expectations))
        .route("/v1/freshness-expectations/{record_type}", put(declare_freshness).delete(clear_freshness))
        .route("/v1/bulk-uploads", post(create_upload))
        .route("/v1/bulk-imports", post(create_import))
        // The upload carries its own limit (256 MiB), enforced while streaming.
        .route("/v1/uploads/{upload_id}", post(receive_upload).layer(DefaultBodyLimit::disable()))
}

/// What a route signs for, and how much body it reads.
pub trait Scope {
    const TAG: &'static str;
    const LIMIT: usize;
}

/// `svc-push` with a small body: withdraw, delete, bulk addresses and imports.
pub struct Push;
/// `svc-push` with a batch of records.
pub struct PushBatch;
/// `svc-business-read`.
pub struct Read;

impl Scope for Push {
    const TAG: &'static str = TAG_PUSH;
    const LIMIT: usize = DEFAULT_LIMIT;
}

impl Scope for PushBatch {
    const TAG: &'static str = TAG_PUSH;
    const LIMIT: usize = PUBLISH_LIMIT;
}

impl Scope for Read {
    const TAG: &'static str = TAG_READ;
    const LIMIT: usize = DEFAULT_LIMIT;
}

/// A business request that passed the gate for its scope: the body read
/// within its limit, then the seven signing steps (or the sandbox bearer).
/// A large one holds its place among its key's and its address's
/// publishes in flight until it is answered.
pub struct Business<S>(pub BusinessCaller, PhantomData<S>, #[allow(dead_code)] Option<[InFlightGuard; 2]>);

impl<S: Scope> FromRequest<Region> for Business<S> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &Region) -> Result<Self> {
        let now = state.clock.now();
        let (parts, body) = req.into_parts();
        let remote_ip = crate::forwarded::client_ip(&parts.extensions, &parts.headers, &state.config.trusted_proxies);
        // A large body is read only for a caller whose signed head passes
        // (the signature itself, not just a known key id): held uploads
        // from strangers cost a request head, not 32 MiB, and hold no slot.
        let mut held = None;
        if S::LIMIT > DEFAULT_LIMIT {
            let body_follows = declared_length(&parts.headers, S::LIMIT, now)?.is_some_and(|n| n > 0);
            let key_id = with_credentials(&parts, &[], async |credentials| {
                publishing::judge_head(state, &credentials, S::TAG, body_follows, now)
            })
            .await?;
            held = Some(publish_slots(state, &key_id, remote_ip)?);
        }
        let body = read_limited(&parts.headers, body, S::LIMIT, now).await?;
        let origin = Origin {
            path: parts.uri.path().to_owned(),
            remote_ip,
            idempotency_key: parts
                .headers
                .get("idempotency-key")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        };
        let caller = with_credentials(&parts, &body, async |credentials| {
            publishing::authenticate(state, credentials, S::TAG, body.clone(), origin, now).await
        })
        .await?;
        Ok(Business(caller, PhantomData, held))
    }
}

/// A place among the key's and the client address's publishes in flight,
/// or `429` at once when either has its cap.
fn publish_slots(state: &Region, key_id: &str, remote_ip: Option<std::net::IpAddr>) -> Result<[InFlightGuard; 2]> {
    let busy = |whose: &str, cap: usize| {
        Error::retry_after(
            Code::RateLimited,
            1_000,
            format!("{cap} publishes of this {whose} are in flight; send again"),
        )
    };
    let per_key = state.limits.publishes_per_key.enter(key_id).ok_or_else(|| busy("key", PUBLISHES_PER_KEY))?;
    let address = remote_ip.map_or_else(String::new, svc_core::limits::address_share);
    let per_address =
        state.limits.publishes_per_address.enter(&address).ok_or_else(|| busy("address", PUBLISHES_PER_ADDRESS))?;
    Ok([per_key, per_address])
}

/// The record type a publishing path names, judged before the signature.
pub struct PublishKind(RecordType);

impl FromRequestParts<Region> for PublishKind {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self> {
        let Path(kind) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| Error::detail(Code::RequestInvalid, e.body_text()))?;
        publishing::publish_type(&kind).map(PublishKind)
    }
}

/// A query string read into `T`; an unknown or malformed member is 400.
fn query<T: DeserializeOwned>(uri: &Uri) -> Result<T> {
    Query::try_from_uri(uri).map(|q| q.0).map_err(|e| Error::detail(Code::RequestInvalid, e.body_text()))
}

/// A publishing answer with its status, and `Location` when it has one.
fn answer_response(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, answer.body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(location) = answer.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// A bare DELETE is refused: a sealed document is required (P1.4, P7.16).
async fn bare_delete() -> Error {
    Error::detail(Code::MethodNotAllowed, "send a sealed document to POST /v1/publish/products/delete")
}

async fn publish(State(state): State<Region>, PublishKind(kind): PublishKind, caller: Business<PushBatch>) -> Response {
    publishing::publish(&state, &caller.0, kind).await.map(answer_response).into_response()
}

async fn withdraw(State(state): State<Region>, PublishKind(kind): PublishKind, caller: Business<Push>) -> Response {
    publishing::end_record(&state, &caller.0, kind, false).await.map(Json).into_response()
}

async fn delete_record(
    State(state): State<Region>,
    PublishKind(kind): PublishKind,
    caller: Business<Push>,
) -> Response {
    publishing::end_record(&state, &caller.0, kind, true).await.map(Json).into_response()
}

async fn catalogue(State(state): State<Region>, uri: Uri, caller: Business<Read>) -> Response {
    query::<CatalogueQuery>(&uri).and_then(|q| publishing::catalogue(&state, &caller.0, q)).map(Json).into_response()
}

async fn catalogue_record(State(state): State<Region>, Path(id): Path<String>, caller: Business<Read>) -> Response {
    publishing::catalogue_record(&state, &caller.0, &id).map(Json).into_response()
}

async fn push_attempts(State(state): State<Region>, uri: Uri, caller: Business<Read>) -> Response {
    query::<AttemptsQuery>(&uri).and_then(|q| publishing::attempts(&state, &caller.0, q)).map(Json).into_response()
}

async fn push_status(
    State(state): State<Region>,
    Path(push_id): Path<String>,
    uri: Uri,
    caller: Business<Read>,
) -> Response {
    query::<StatusQuery>(&uri)
        .and_then(|q| publishing::push_status_of(&state, &caller.0, &push_id, q))
        .map(Json)
        .into_response()
}

async fn seal_context(State(state): State<Region>, caller: Business<Read>) -> Response {
    publishing::seal_context(&state, &caller.0).map(Json).into_response()
}

async fn daily(State(state): State<Region>, uri: Uri, caller: Business<Read>) -> Response {
    query::<DailyQuery>(&uri).and_then(|q| publishing::daily(&state, &caller.0, q)).map(Json).into_response()
}

async fn who_is_asking(State(state): State<Region>, uri: Uri, caller: Business<Read>) -> Response {
    query::<WhoQuery>(&uri).and_then(|q| publishing::who_is_asking(&state, &caller.0, q)).map(Json).into_response()
}

async fn freshness_expectations(State(state): State<Region>, caller: Business<Read>) -> Response {
    publishing::freshness::list(&state, &caller.0).map(Json).into_response()
}

async fn declare_freshness(State(state): State<Region>, Path(kind): Path<String>, caller: Business<Push>) -> Response {
    publishing::freshness::declare(&state, &caller.0, &kind, false).await.map(Json).into_response()
}

async fn clear_freshness(State(state): State<Region>, Path(kind): Path<String>, caller: Business<Push>) -> Response {
    publishing::freshness::declare(&state, &caller.0, &kind, true).await.map(Json).into_response()
}

/// Step 1 of a bulk file: an upload address, valid one hour.
async fn create_upload(State(state): State<Region>, caller: Business<Push>) -> Response {
    publishing::create_upload(&state, &caller.0).await.map(answer_response).into_response()
}

/// Step 2: the import of an uploaded file.
async fn create_import(State(state): State<Region>, caller: Business<Push>) -> Response {
    publishing::create_import(&state, &caller.0).await.map(answer_response).into_response()
}

/// A policy form's fields before its file: how many, and how long each.
const MAX_FORM_FIELDS: usize = 32;
const MAX_FORM_FIELD: usize = 8 * KIB;

/// The file, POSTed to the upload address with every field, then `file`.
/// Authorised by the service-signed policy among the fields, not a
/// signature. Streamed to disk, refused as soon as it passes its limits.
async fn receive_upload(
    State(state): State<Region>,
    Path(upload_id): Path<String>,
    headers: HeaderMap,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Response {
    receive_upload_route(&state, &upload_id, &headers, multipart).await.into_response()
}

async fn receive_upload_route(
    state: &Region,
    upload_id: &str,
    headers: &HeaderMap,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<serde_json::Value>)> {
    let now = state.clock.now();
    let invalid = |detail: String| Error::detail(Code::RequestInvalid, detail);
    // The form's own overhead is allowed on top of the file.
    let limit = BULK_MAX_BYTES + 64 * KIB as u64;
    if let Some(declared) = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        && declared > limit
    {
        return Err(Error::detail(Code::RecordTooLarge, "the file is over 268,435,456 bytes"));
    }
    let mut multipart = multipart.map_err(|e| invalid(format!("multipart/form-data is expected: {e}")))?;
    let upload = publishing::upload_waiting(state, upload_id)?;
    let mut fields = BTreeMap::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|e| invalid(e.to_string()))? {
        let name = field.name().unwrap_or_default().to_owned();
        if name != "file" {
            if fields.len() >= MAX_FORM_FIELDS {
                return Err(invalid(format!("the form has more than {MAX_FORM_FIELDS} fields before its file")));
            }
            // Read piece by piece, refused as soon as it passes its limit.
            let mut value = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(|e| invalid(e.to_string()))? {
                if value.len() + chunk.len() > MAX_FORM_FIELD {
                    return Err(invalid(format!("the field {name} is over {MAX_FORM_FIELD} bytes")));
                }
                value.extend_from_slice(&chunk);
            }
            let value = String::from_utf8(value).map_err(|_| invalid(format!("the field {name} is not UTF-8")))?;
            fields.insert(name, value);
            continue;
        }
        // Every field comes before the file, as with any signed POST policy.
        let mut sink = publishing::open_upload(state, upload, &fields, now).await?;
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => sink.write(&chunk).await?,
                Ok(None) => break,
                Err(e) => {
                    sink.abort().await;
                    return Err(invalid(e.to_string()));
                }
            }
        }
        return Ok((StatusCode::CREATED, Json(sink.finish(state, now).await?)));
    }
    Err(invalid("the form has no file member".into()))
}
