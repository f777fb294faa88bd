//! Getting in: an invited person creates their passkey; a person signs in
//! with it and out again. The WebAuthn steps are the script's JSON calls.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::json;
use webauthn_rs::prelude::{PublicKeyCredential, RegisterPublicKeyCredential};

use super::pages::{self, Nav};
use super::session::{self, CsrfForm};
use super::{PageResult, html};
use crate::api::body::JsonBody;
use svc_node::region::Region;
use svc_node::service::Result;
use svc_node::service::portal::{people, sessions};

pub async fn sign_in_page(State(state): State<Region>, headers: HeaderMap) -> Response {
    // A person still signed in goes straight to their records.
    if let Some(cookie) = session::cookie(&headers)
        && sessions::resolve(&state, &cookie).await.is_ok()
    {
        return Redirect::to("/portal/").into_response();
    }
    html(&pages::SignIn { nav: None })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Email {
    email: String,
}

pub async fn begin_sign_in(
    State(state): State<Region>,
    session::ClientAddress(client): session::ClientAddress,
    JsonBody(req): JsonBody<Email>,
) -> Result<Response> {
    let (ceremony, options) = sessions::begin_sign_in(&state, &req.email, client).await?;
    Ok(Json(json!({"ceremony": ceremony, "options": options})).into_response())
}

#[derive(Deserialize)]
pub struct SignInAnswer {
    ceremony: String,
    credential: PublicKeyCredential,
}

pub async fn finish_sign_in(State(state): State<Region>, JsonBody(req): JsonBody<SignInAnswer>) -> Result<Response> {
    let session = sessions::finish_sign_in(&state, &req.ceremony, &req.credential).await?;
    Ok(signed_in(&state, &session.cookie))
}

fn signed_in(state: &Region, cookie: &str) -> Response {
    ([(header::SET_COOKIE, session::set_cookie(state, cookie))], Json(json!({"next": "/portal/"}))).into_response()
}

/// Either portal's people sign out here, a business's or an AI company's.
pub async fn sign_out(
    State(state): State<Region>,
    member: session::Member,
    headers: HeaderMap,
    axum::Form(form): axum::Form<CsrfForm>,
) -> PageResult {
    member.check_csrf(form.csrf.as_deref())?;
    if let Some(cookie) = session::cookie(&headers) {
        sessions::sign_out(&state, &cookie).await?;
    }
    Ok(([(header::SET_COOKIE, session::clear_cookie())], Redirect::to("/portal/sign-in")).into_response())
}

pub async fn invitation_page(State(state): State<Region>, Path(token): Path<String>) -> PageResult {
    let (invitation, account) = people::invitation(&state, &token)?;
    Ok(html(&pages::Invitation {
        nav: None::<Nav>,
        business: account.name,
        company: account.company,
        role: invitation.role.as_str(),
        email: invitation.email,
        expires_at: invitation.expires_at.to_rfc3339_secs(),
        path: format!("/portal/invitations/{token}"),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Name {
    name: String,
}

pub async fn begin_registration(
    State(state): State<Region>,
    Path(token): Path<String>,
    JsonBody(req): JsonBody<Name>,
) -> Result<Response> {
    let (ceremony, options) = people::begin_registration(&state, &token, &req.name).await?;
    Ok(Json(json!({"ceremony": ceremony, "options": options})).into_response())
}

#[derive(Deserialize)]
pub struct RegistrationAnswer {
    ceremony: String,
    credential: RegisterPublicKeyCredential,
}

pub async fn finish_registration(
    State(state): State<Region>,
    Path(_token): Path<String>,
    JsonBody(req): JsonBody<RegistrationAnswer>,
) -> Result<Response> {
    let session = people::finish_registration(&state, &req.ceremony, &req.credential).await?;
    Ok(signed_in(&state, &session.cookie))
}
