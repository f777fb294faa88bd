//! The public documents about a business and the service's formats
//! (publishing 2.6, 4.2): certificates (JSON, or a self-contained HTML page),
//! business keys with the signed `business-keys.v1` statement, key custody,
//! projection specifications and the AI policy key.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::dsse::{Envelope, payload_type};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use super::AppState;
use super::pages;
use super::problem::{ApiError, ApiResult};
use super::public::{PublicDocument, cached, json_document, query};
use crate::store::model::{Business, BusinessKey, CertificateIssuance};

/// Certificates and key lists change when an operator acts; five minutes
/// of caching keeps a CDN useful and a change visible soon.
const DOCUMENT_MAX_AGE: u32 = 300;
/// Projection specifications and the AI policy key are pinned by hash or
/// version: a day (P2.6.47).
const FORMAT_MAX_AGE: u32 = 86_400;

/// What every region serves from its replicated copy.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/certificates/{uuid}", get(certificate))
        .route("/v1/certificates/{uuid}/key-custody", get(key_custody))
        .route("/v1/projections/{kind}/{version}", get(projection))
        .route("/v1/ai-policy-key", get(ai_policy_key))
}

/// What only home answers, because the statement key signs it fresh: a read
/// region forwards these.
pub fn statement_routes() -> Router<AppState> {
    Router::new().route("/v1/certificates/{uuid}/keys", get(business_keys))
}

/// Whether the caller asked for the HTML page: `?format=html`, or a
/// browser's `Accept` that puts HTML before JSON.
pub fn wants_html(format: Option<&str>, headers: &HeaderMap) -> ApiResult<bool> {
    match format {
        Some("html") => Ok(true),
        Some("json") => Ok(false),
        Some(other) => Err(ApiError::detail(Code::RequestInvalid, format!("format is html or json, not {other}"))),
        None => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
            let html = accept.find("text/html");
            let json = accept.find("application/json");
            Ok(html.is_some_and(|h| json.is_none_or(|j| h < j)))
        }
    }
}

/// An HTML page: self-contained, and forbidden by its own policy to load or
/// run anything.
pub fn html_answer(status: StatusCode, page: String, headers: &HeaderMap, max_age: u32) -> Response {
    let mut response = if status == StatusCode::OK {
        cached(&PublicDocument::new(Bytes::from(page)), headers, max_age, "text/html; charset=utf-8")
    } else {
        let mut r = (status, page).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        r
    };
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; img-src data:"),
    );
    response
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormatQuery {
    format: Option<String>,
}

/// The issuance's signed payload (the certificate itself).
fn payload(issuance: &CertificateIssuance) -> ApiResult<Value> {
    let envelope = Envelope::parse(&issuance.envelope).map_err(ApiError::internal)?;
    let bytes = envelope.payload_bytes().map_err(ApiError::internal)?;
    serde_json::from_slice(&bytes).map_err(ApiError::internal)
}

fn issuance_value(issuance: &CertificateIssuance) -> ApiResult<Value> {
    let mut value = json!({
        "cert_id": issuance.cert_id,
        "status": issuance.status.as_str(),
        "status_effective_from": issuance.status_effective_from.to_rfc3339_secs(),
        "issued_at": issuance.issued_at.to_rfc3339_millis(),
        "certificate": serde_json::from_slice::<Value>(&issuance.envelope).map_err(ApiError::internal)?,
    });
    if let Some(reason) = &issuance.status_reason {
        value["status_reason"] = json!(reason);
    }
    Ok(value)
}

/// The certificate response: the issuance in force now, every earlier one
/// newest first. `None` for a uuid that is not a business's.
pub fn certificate_document(state: &AppState, uuid: &str, now: UnixMs) -> ApiResult<Option<(Business, Value)>> {
    let Some(business) = state.registry.business(uuid)? else { return Ok(None) };
    let mut history = state.registry.certificates(uuid)?;
    let Some(current) = state.registry.certificate_in_force(uuid, now)? else { return Ok(None) };
    // Earlier issuances only: a change issued later, not yet in force, is not history.
    history.retain(|c| c.cert_id != current.cert_id && c.issued_at <= current.issued_at);
    history.sort_by_key(|c| std::cmp::Reverse(c.issued_at));
    let mut document = issuance_value(&current)?;
    document["subject"] = json!("business");
    document["statement"] = payload(&current)?.get("statement").cloned().unwrap_or(Value::Null);
    document["history"] = Value::Array(history.iter().map(issuance_value).collect::<ApiResult<_>>()?);
    Ok(Some((business, document)))
}

fn not_found(html: bool, headers: &HeaderMap) -> Response {
    if html {
        return html_answer(StatusCode::NOT_FOUND, pages::not_found(), headers, 0);
    }
    ApiError::new(Code::NotFound).into_response()
}

/// `GET /v1/certificates/{uuid}`: JSON, or the HTML page by `Accept` or
/// `?format=html`.
async fn certificate(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let html = match query::<FormatQuery>(&uri).and_then(|q| wants_html(q.format.as_deref(), &headers)) {
        Ok(html) => html,
        Err(e) => return e.into_response(),
    };
    let (business, document) = match certificate_document(&state, &uuid, state.clock.now()) {
        Ok(Some(found)) => found,
        Ok(None) => return not_found(html, &headers),
        Err(e) => return e.into_response(),
    };
    if html {
        return html_answer(StatusCode::OK, pages::certificate(&business, &document), &headers, DOCUMENT_MAX_AGE);
    }
    json_document(&document, &headers, DOCUMENT_MAX_AGE)
}

fn key_value(key: &BusinessKey) -> Value {
    let jwk: Value = serde_json::from_slice(&key.jwk).unwrap_or(Value::Null);
    let cose = serde_json::from_value(jwk.clone())
        .ok()
        .and_then(|jwk| svc_core::keys::VerifyingKey::from_jwk(&jwk).ok())
        .filter(|_| key.kind == "passkey")
        .and_then(|k| k.cose_key())
        .map(|c| svc_core::b64::std_encode(&c));
    json!({
        "key_id": key.key_id,
        "purpose": key.purpose,
        "kind": key.kind,
        "jwk": jwk,
        "cose": cose,
        "valid_from": key.valid_from.to_rfc3339_secs(),
        "valid_until": key.valid_until.map(UnixMs::to_rfc3339_secs),
        "revocation_effective_from": key.revocation_effective_from.map(UnixMs::to_rfc3339_secs),
    })
}

/// `GET /v1/certificates/{uuid}/keys`: every key of the business and the
/// statement key's signed `business-keys.v1` over them (the part to trust).
async fn business_keys(State(state): State<AppState>, Path(uuid): Path<String>, headers: HeaderMap) -> Response {
    business_keys_route(&state, &uuid, &headers).unwrap_or_else(IntoResponse::into_response)
}

fn business_keys_route(state: &AppState, uuid: &str, headers: &HeaderMap) -> ApiResult<Response> {
    let now = state.clock.now();
    state.registry.business(uuid)?.ok_or_else(|| ApiError::new(Code::NotFound))?;
    let cert = state.registry.certificate_in_force(uuid, now)?.ok_or_else(|| ApiError::new(Code::NotFound))?;
    let registered = state.registry.business_keys(uuid)?;
    let keys: Vec<Value> = registered.iter().map(key_value).collect();
    // The statement is issued as at the newest change it covers, so the same
    // keys give the same bytes (and ETag) whenever they are asked for.
    let issued_at = registered
        .iter()
        .map(|k| k.registered_at.max(k.revocation_effective_from.unwrap_or(UnixMs(0))))
        .chain([cert.issued_at])
        .max()
        .unwrap_or(cert.issued_at);
    let statement = json!({"v": 1, "uuid": uuid, "cert_id": cert.cert_id, "issued_at": issued_at.to_rfc3339_millis(),
        "keys": keys});
    let bytes = svc_core::canonical::to_signed_bytes(&statement).map_err(ApiError::internal)?;
    let signed = state.keys.statement_key().sign(&payload_type("business-keys.v1"), &bytes);
    let document = json!({
        "uuid": uuid,
        "cert_id": cert.cert_id,
        "issued_at": issued_at.to_rfc3339_millis(),
        "keys": statement["keys"],
        "signed": signed,
    });
    Ok(json_document(&document, headers, DOCUMENT_MAX_AGE))
}

/// `GET /v1/certificates/{uuid}/key-custody`: every custody statement,
/// newest first, and the keys no statement covers (`unstated`).
async fn key_custody(State(state): State<AppState>, Path(uuid): Path<String>, headers: HeaderMap) -> Response {
    key_custody_route(&state, &uuid, &headers).unwrap_or_else(IntoResponse::into_response)
}

fn key_custody_route(state: &AppState, uuid: &str, headers: &HeaderMap) -> ApiResult<Response> {
    state.registry.business(uuid)?.ok_or_else(|| ApiError::new(Code::NotFound))?;
    let mut statements = state.registry.custody_statements(uuid)?;
    statements.sort_by(|a, b| (b.issued_at, &b.statement_id).cmp(&(a.issued_at, &a.statement_id)));
    let listed: Vec<Value> = statements
        .iter()
        .map(|s| {
            Ok(json!({
                "key_id": s.key_id,
                "custody": s.custody,
                "effective_from": s.effective_from.to_rfc3339_millis(),
                "issued_at": s.issued_at.to_rfc3339_millis(),
                "statement_id": s.statement_id,
                "statement": serde_json::from_slice::<Value>(&s.envelope).map_err(ApiError::internal)?,
            }))
        })
        .collect::<ApiResult<_>>()?;
    let unstated: Vec<String> = state
        .registry
        .business_keys(uuid)?
        .into_iter()
        .filter(|k| !statements.iter().any(|s| s.key_id == k.key_id))
        .map(|k| k.key_id)
        .collect();
    Ok(json_document(&json!({"uuid": uuid, "statements": listed, "unstated": unstated}), headers, DOCUMENT_MAX_AGE))
}

/// `GET /v1/projections/{type}/{version}`: the pinned specification.
async fn projection(Path((kind, version)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let spec = svc_core::ids::RecordType::from_name(&kind)
        .and_then(|kind| svc_core::projection::spec_by_version(kind, &version));
    match spec {
        Some(spec) => json_document(spec.document(), &headers, FORMAT_MAX_AGE),
        None => ApiError::detail(Code::NotFound, "no projection of that type and version").into_response(),
    }
}

/// `GET /v1/ai-policy-key`: what each AI policy bit means.
async fn ai_policy_key(headers: HeaderMap) -> Response {
    json_document(&svc_core::ai_policy::key_document(), &headers, FORMAT_MAX_AGE)
}
