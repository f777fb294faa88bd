//! The retrieval API (retrieval sections 2, 4 and 5): signed searches over
//! the index, each answered with rows exactly as projected plus their
//! serve-time members and a format 3 receipt signed by this region's key.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use svc_core::ai_policy::AiPolicyBits;
use svc_core::http_sig::Verified;
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::receipt::{self, Receipt};
use svc_core::search::serve::{self, ServeTime};
use svc_core::time::UnixMs;

use super::AppState;
use super::auth::{bearer, key_from_jwk, verify_signed};
use super::body::{DEFAULT_LIMIT, read_limited};
use super::problem::{ApiError, ApiResult};
use crate::actors::publisher::PublisherMsg;
use crate::clock::random;
use crate::replication::Change;
use crate::store::cf;
use crate::store::model::RetrievalKey;

pub const TAG_RETRIEVAL: &str = "svc-retrieval";

/// How long a search may look before it answers with what it has.
pub const SEARCH_BUDGET: Duration = Duration::from_millis(250);

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/search", post(|s: State<AppState>, r: Request<Body>| search(s, None, r)))
        .route("/v1/products/search", post(|s: State<AppState>, r| search(s, Some(RecordType::Products), r)))
        .route("/v1/business-files/search", post(|s: State<AppState>, r| search(s, Some(RecordType::BusinessFiles), r)))
        .route("/v1/events/search", post(|s: State<AppState>, r| search(s, Some(RecordType::Events), r)))
        .route("/v1/jobs/search", post(|s: State<AppState>, r| search(s, Some(RecordType::Jobs), r)))
        .route("/v1/updates/search", post(|s: State<AppState>, r| search(s, Some(RecordType::Updates), r)))
}

/// A verified retrieval request: the key that signed it and its group.
pub struct Caller {
    pub key: RetrievalKey,
    pub verified: Option<Verified>,
    pub body: bytes::Bytes,
}

/// The seven steps of section 5 with this region's retrieval keys. In the
/// sandbox, a key not yet seen needs its grant, and the one-hour bearer token
/// stands in for a signature; production reads neither.
pub async fn retrieval_signed(state: &AppState, req: Request<Body>, limit: usize, now: UnixMs) -> ApiResult<Caller> {
    let (parts, body) = req.into_parts();
    let body = read_limited(&parts.headers, body, limit, now).await?;
    let sandbox = state.config.environment.is_sandbox();
    if sandbox
        && !parts.headers.contains_key("signature-input")
        && let Some(token) = bearer(&parts.headers)
    {
        let key = state.registry.retrieval_key_by_bearer(token, now)?.ok_or_else(|| ApiError::new(Code::KeyUnknown))?;
        let key = introduce(state, key, now).await?;
        return Ok(Caller { key, verified: None, body });
    }
    let grant = parts.headers.get(svc_core::sandbox::GRANT_HEADER).and_then(|v| v.to_str().ok());
    let registry = state.registry.clone();
    let environment = state.config.environment;
    let authority = &state.config.public_authority;
    let (verified, key) = verify_signed(&parts, &body, authority, TAG_RETRIEVAL, now, &state.nonces, |key_id| {
        let key = registry.retrieval_key(key_id).ok().flatten()?;
        if key.environment != environment || key.revoked_at.is_some_and(|r| r <= now) {
            return None;
        }
        if sandbox && !svc_core::sandbox::admits(key.introduced, key.grant.as_deref(), grant) {
            return None;
        }
        let public = key_from_jwk(&key.jwk)?;
        Some((key, public))
    })
    .await?;
    let key = if sandbox { introduce(state, key, now).await? } else { key };
    Ok(Caller { key, verified: Some(verified), body })
}

/// A sandbox key's first request registers it.
async fn introduce(state: &AppState, mut key: RetrievalKey, now: UnixMs) -> ApiResult<RetrievalKey> {
    if key.introduced {
        return Ok(key);
    }
    key.introduced = true;
    let mut change = Change::new();
    change.put(cf::RETRIEVAL_KEYS, key.key_id.as_bytes(), &key);
    ractor::call!(state.publisher, |reply| PublisherMsg::Apply { change, now, reply })
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(key)
}

/// The AI policy bits in force now for a business (version 0, masks 0,
/// when it never sealed one).
fn bits_now(state: &AppState, business_uuid: &str, now: UnixMs) -> ApiResult<AiPolicyBits> {
    let Some(policy) = state.registry.ai_policy_at(business_uuid, now)? else { return Ok(AiPolicyBits::none()) };
    let record = svc_core::ai_policy::parse_record(&policy.bytes).map_err(ApiError::internal)?;
    Ok(record.bits(policy.version))
}

async fn search(State(state): State<AppState>, typed: Option<RecordType>, req: Request<Body>) -> Response {
    search_route(&state, typed, req).await.unwrap_or_else(IntoResponse::into_response)
}

async fn search_route(state: &AppState, typed: Option<RecordType>, req: Request<Body>) -> ApiResult<Response> {
    let arrived = Instant::now();
    let now = state.clock.now();
    let caller = retrieval_signed(state, req, DEFAULT_LIMIT, now).await?;
    let query = svc_core::search::judge(&caller.body, typed)
        .map_err(|refusal| ApiError::from(Problem::new(refusal.code).detail(refusal.detail)))?;
    let index = state.index.clone();
    let group = caller.key.group_id.clone();
    let deadline = arrived + SEARCH_BUDGET;
    let searched = query.clone();
    let hits = tokio::task::spawn_blocking(move || index.search(&searched, &group, deadline))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;

    let mut bits: HashMap<String, AiPolicyBits> = HashMap::new();
    let mut rows = Vec::with_capacity(hits.rows.len());
    let mut entries = Vec::with_capacity(hits.rows.len());
    for row in &hits.rows {
        let signed: Map<String, Value> = serde_json::from_slice(row).map_err(ApiError::internal)?;
        let business = signed.get("business_uuid").and_then(Value::as_str).unwrap_or_default().to_owned();
        let business_bits = match bits.get(&business) {
            Some(b) => *b,
            None => {
                let b = bits_now(state, &business, now)?;
                bits.insert(business, b);
                b
            }
        };
        let at = ServeTime { bits: business_bits, endpoints_suspended: false, sponsored: false, freshness: None };
        entries.push(serve::receipt_row(&signed, &at));
        rows.push(Value::Object(serve::serve_row(&signed, &at)));
    }
    let retrieval_id = svc_core::ids::retrieval_id(&random());
    let request_hash = caller.verified.as_ref().map(Verified::request_hash).unwrap_or_default();
    let receipt = Receipt {
        retrieval_id: retrieval_id.clone(),
        served_at: now.to_rfc3339_millis(),
        region: state.config.region.clone(),
        request_hash,
        country: Some(query.country.clone()),
        rows: entries,
        key_id: String::new(),
        caller_key_id: Some(caller.key.key_id.clone()),
        sandbox: state.config.environment.is_sandbox(),
    };
    let envelope = receipt::make(receipt, &state.keys.receipt).map_err(ApiError::internal)?;
    let mut body = json!({
        "retrieval_id": retrieval_id,
        "collection": query.collection.name(),
        "country": query.country,
        "rows": rows,
        "receipt": envelope,
    });
    if hits.partial {
        body["partial"] = json!(true);
    }
    Ok((StatusCode::OK, Json(body)).into_response())
}
