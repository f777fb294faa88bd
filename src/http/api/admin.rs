//! The operator's admin API (the spec shows none): bound to loopback by
//! default, and every route behind the operator's bearer token, checked
//! before the body is read. Each route calls one operation of
//! `service::operator`.

use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use svc_core::problem::Code;

use super::auth::bearer;
use super::body::JsonBody;
use svc_node::region::Region;
use svc_node::service::auth::token_matches;
use svc_node::service::operator::{self, *};
use svc_node::service::{Error, Result};

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/admin/config", get(config))
        .route("/admin/observe", get(observe))
        .route("/admin/businesses", post(create_business))
        .route("/admin/businesses/{uuid}", get(show_business))
        .route("/admin/businesses/{uuid}/certificate-status", post(change_certificate_status))
        .route("/admin/businesses/{uuid}/keys", post(register_business_key))
        .route("/admin/businesses/{uuid}/ai-policy", post(seal_ai_policy))
        .route("/admin/businesses/{uuid}/records", post(save_sealed_record))
        .route("/admin/businesses/{uuid}/owner-invitation", post(invite_owner))
        .route("/admin/keys/{key_id}/revoke", post(revoke_business_key))
        .route("/admin/keys/{key_id}/custody", post(restate_custody))
        .route("/admin/mandates", post(register_mandate))
        .route("/admin/mandates/{key_id}/{mandate_id}/revoke", post(revoke_mandate))
        .route("/admin/companies", post(create_company))
        .route("/admin/companies/{uuid}/groups", post(create_group))
        .route("/admin/companies/{uuid}/certificate-status", post(change_certificate_status))
        .route("/admin/companies/{uuid}/directory", post(set_directory_listing))
        .route("/admin/companies/{uuid}/terms-acceptance", post(accept_terms))
        .route("/admin/companies/{uuid}/owner-invitation", post(invite_owner))
        .route("/admin/businesses/{uuid}/campaigns", post(create_campaign))
        .route("/admin/campaigns/{campaign_id}", get(show_campaign))
        .route("/admin/campaigns/{campaign_id}/funds", post(fund_campaign))
        .route("/admin/campaigns/{campaign_id}/state", post(set_campaign_state))
        .route("/admin/groups/{group_id}/retrieval-keys", post(register_retrieval_key))
        .route("/admin/retrieval-keys/{key_id}/revoke", post(revoke_retrieval_key))
        .route("/admin/blocks", post(set_block))
        .route("/admin/allowances", post(set_allowance))
        .route("/admin/endpoints", post(set_endpoints))
        .route("/admin/domain-assurance/check", post(check_domains))
        .route("/admin/pushes/{push_id}/release", post(release_push))
        .route("/admin/terms", post(publish_terms))
        .route("/admin/receipt-key/rotate", post(rotate_receipt_key))
        .route("/admin/log/sequence", post(sequence_log))
        .route("/admin/log/cosign", post(cosign_log))
        .route("/admin/traces/{trace_id}", get(trace))
        .route("/admin/service-keys/{kid}/end", post(end_service_key))
        .route("/admin/service-keys/rotate", post(rotate_service_key))
        .route("/admin/faults/crash", post(arm_crash))
        .route("/admin/faults/clock", post(skew_clock))
}

/// A request that showed the operator's bearer token.
pub struct Operator;

impl FromRequestParts<Region> for Operator {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self> {
        if token_matches(bearer(&parts.headers), &state.config.admin_token) {
            Ok(Operator)
        } else {
            Err(Error::new(Code::Unauthorized))
        }
    }
}

fn done(result: Result<Done>) -> Response {
    match result {
        Ok(Done::Ok(body)) => Json(body).into_response(),
        Ok(Done::Created(body)) => (StatusCode::CREATED, Json(body)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn config(State(state): State<Region>, _: Operator) -> Response {
    done(operator::config(&state).await)
}

async fn observe(State(state): State<Region>, _: Operator) -> Response {
    done(operator::observe(&state).await)
}

async fn rotate_receipt_key(State(state): State<Region>, _: Operator) -> Response {
    done(operator::rotate_receipt_key(&state).await)
}

async fn create_business(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<NewBusiness>) -> Response {
    done(operator::create_business(&state, req).await)
}

async fn show_business(State(state): State<Region>, _: Operator, Path(uuid): Path<String>) -> Response {
    done(operator::show_business(&state, uuid).await)
}

async fn change_certificate_status(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<StatusChange>,
) -> Response {
    done(operator::change_certificate_status(&state, uuid, req).await)
}

async fn register_business_key(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<NewBusinessKey>,
) -> Response {
    done(operator::register_business_key(&state, uuid, req).await)
}

async fn restate_custody(
    State(state): State<Region>,
    _: Operator,
    Path(key_id): Path<String>,
    JsonBody(req): JsonBody<CustodyChange>,
) -> Response {
    done(operator::restate_custody(&state, key_id, req).await)
}

async fn revoke_business_key(
    State(state): State<Region>,
    _: Operator,
    Path(key_id): Path<String>,
    JsonBody(req): JsonBody<Revocation>,
) -> Response {
    done(operator::revoke_business_key(&state, key_id, req).await)
}

async fn register_mandate(
    State(state): State<Region>,
    _: Operator,
    JsonBody(req): JsonBody<MandateRegistration>,
) -> Response {
    done(operator::register_mandate(&state, req).await)
}

async fn revoke_mandate(
    State(state): State<Region>,
    _: Operator,
    Path((key_id, mandate_id)): Path<(String, String)>,
) -> Response {
    done(operator::revoke_mandate(&state, key_id, mandate_id).await)
}

async fn seal_ai_policy(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<AiPolicySeal>,
) -> Response {
    done(operator::seal_ai_policy(&state, uuid, req).await)
}

async fn invite_owner(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<OwnerInvitation>,
) -> Response {
    done(operator::invite_owner(&state, uuid, req).await)
}

async fn save_sealed_record(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<SealedRecord>,
) -> Response {
    done(operator::save_sealed_record(&state, uuid, req).await)
}

async fn create_company(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<NewCompany>) -> Response {
    done(operator::create_company(&state, req).await)
}

async fn accept_terms(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<TermsAcceptanceChange>,
) -> Response {
    done(operator::accept_terms(&state, uuid, req).await)
}

async fn set_directory_listing(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<DirectoryChange>,
) -> Response {
    done(operator::set_directory_listing(&state, uuid, req).await)
}

async fn create_group(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<NewGroup>,
) -> Response {
    done(operator::create_group(&state, uuid, req).await)
}

async fn create_campaign(
    State(state): State<Region>,
    _: Operator,
    Path(uuid): Path<String>,
    JsonBody(req): JsonBody<NewCampaign>,
) -> Response {
    done(operator::create_campaign(&state, uuid, req).await)
}

async fn fund_campaign(
    State(state): State<Region>,
    _: Operator,
    Path(campaign_id): Path<String>,
    JsonBody(req): JsonBody<CampaignFunds>,
) -> Response {
    done(operator::fund_campaign(&state, campaign_id, req).await)
}

async fn show_campaign(State(state): State<Region>, _: Operator, Path(campaign_id): Path<String>) -> Response {
    done(operator::show_campaign(&state, &campaign_id))
}

async fn set_campaign_state(
    State(state): State<Region>,
    _: Operator,
    Path(campaign_id): Path<String>,
    JsonBody(req): JsonBody<CampaignStateChange>,
) -> Response {
    done(operator::set_campaign_state(&state, campaign_id, req).await)
}

async fn register_retrieval_key(
    State(state): State<Region>,
    _: Operator,
    Path(group_id): Path<String>,
    JsonBody(req): JsonBody<NewRetrievalKey>,
) -> Response {
    done(operator::register_retrieval_key(&state, group_id, req).await)
}

async fn revoke_retrieval_key(State(state): State<Region>, _: Operator, Path(key_id): Path<String>) -> Response {
    done(operator::revoke_retrieval_key(&state, key_id).await)
}

async fn set_block(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<BlockChange>) -> Response {
    done(operator::set_block(&state, req).await)
}

async fn release_push(
    State(state): State<Region>,
    _: Operator,
    Path(push_id): Path<String>,
    JsonBody(req): JsonBody<PushRelease>,
) -> Response {
    done(operator::release_push(&state, push_id, req).await)
}

async fn check_domains(State(state): State<Region>, _: Operator) -> Response {
    done(operator::check_domains(&state).await)
}

async fn set_endpoints(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<EndpointsChange>) -> Response {
    done(operator::set_endpoints(&state, req).await)
}

async fn set_allowance(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<AllowanceChange>) -> Response {
    done(operator::set_allowance(&state, req).await)
}

async fn publish_terms(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<NewTerms>) -> Response {
    done(operator::publish_terms(&state, req).await)
}

async fn arm_crash(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<CrashArm>) -> Response {
    done(operator::arm_crash(&state, req))
}

async fn skew_clock(State(state): State<Region>, _: Operator, JsonBody(req): JsonBody<ClockSkew>) -> Response {
    done(operator::skew_clock(&state, req))
}

async fn sequence_log(State(state): State<Region>, _: Operator) -> Response {
    done(operator::sequence_log(&state).await)
}

async fn trace(State(state): State<Region>, _: Operator, Path(trace_id): Path<String>) -> Response {
    done(operator::trace(&state, &trace_id))
}

async fn cosign_log(State(state): State<Region>, _: Operator) -> Response {
    done(operator::cosign_log(&state).await)
}

async fn end_service_key(
    State(state): State<Region>,
    _: Operator,
    Path(kid): Path<String>,
    JsonBody(req): JsonBody<ServiceKeyEnd>,
) -> Response {
    done(operator::end_service_key(&state, kid, req).await)
}

async fn rotate_service_key(
    State(state): State<Region>,
    _: Operator,
    JsonBody(req): JsonBody<ServiceKeyRotation>,
) -> Response {
    done(operator::rotate_service_key(&state, req).await)
}
