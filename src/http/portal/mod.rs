//! The business portal (publishing section 1, Path B), served by home at
//! `/portal/`: pages rendered on the server from templates (`templates/portal/`)
//! with one small script for WebAuthn. Each handler calls one use case of
//! `service::portal` and renders its answer; a refusal is shown as a page
//! (a form) or as an RFC 9457 problem (the script's calls), and a missing
//! session goes to sign-in.

mod access;
mod campaigns;
mod chart;
mod company;
mod export;
mod keys;
mod pages;
mod people;
mod pushes;
mod records;
pub mod session;
mod signing;

use askama::Template;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use svc_core::problem::Code;

use svc_node::region::Region;
use svc_node::service::Error;

/// The largest form or script call the portal reads: a record of the
/// largest size the records spec allows, as form text, with room to spare.
pub const MAX_BODY: usize = 512 * 1024;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn routes() -> Router<Region> {
    Router::new()
        .route("/portal", get(|| async { Redirect::to("/portal/") }))
        .route("/portal/", get(landing))
        .route("/portal/assets/portal.js", get(pages::script))
        .route("/portal/assets/portal.css", get(pages::style))
        .route("/portal/assets/favicon.svg", get(pages::favicon))
        .route("/favicon.ico", get(|| async { Redirect::permanent("/portal/assets/favicon.svg") }))
        .route("/portal/sign-in", get(access::sign_in_page))
        .route("/portal/sign-in/begin", post(access::begin_sign_in))
        .route("/portal/sign-in/finish", post(access::finish_sign_in))
        .route("/portal/sign-out", post(access::sign_out))
        .route("/portal/invitations/{token}", get(access::invitation_page))
        .route("/portal/invitations/{token}/begin", post(access::begin_registration))
        .route("/portal/invitations/{token}/finish", post(access::finish_registration))
        .route("/portal/people", get(people::list))
        .route("/portal/people/invite", post(people::invite))
        .route("/portal/people/invitations/{invitation_id}/renew", post(people::renew_invitation))
        .route("/portal/people/invitations/{invitation_id}/cancel", post(people::cancel_invitation))
        .route("/portal/people/{person_id}/role", post(people::set_role))
        .route("/portal/people/{person_id}/remove", post(people::remove))
        .route("/portal/records/new/{kind}", get(records::new_record).post(records::review))
        .route("/portal/records/{record_id}", get(records::show))
        .route("/portal/records/{record_id}/edit", get(records::edit))
        .route("/portal/records/{record_id}/end", post(records::end))
        .route("/portal/ai-policy", get(records::ai_policy).post(records::review_ai_policy))
        .route("/portal/seal/{ceremony_id}", post(records::seal))
        .route("/portal/confirm/{ceremony_id}", post(records::confirm))
        .route("/portal/signing", get(signing::page).post(signing::review))
        .route("/portal/campaigns", get(campaigns::list).post(campaigns::review))
        .route("/portal/campaigns/{campaign_id}/state", post(campaigns::set_state))
        .route("/portal/export", get(export::download))
        .route("/portal/analytics", get(records::analytics))
        .route("/portal/pushes", get(pushes::list))
        .route("/portal/pushes/{push_id}", get(pushes::show))
        .route("/portal/pushes/{push_id}/release", post(pushes::review_release))
        .route("/portal/notices/dismiss", post(pushes::dismiss))
        .route("/portal/keys", get(keys::list).post(keys::add))
        .route("/portal/keys/{key_id}/revoke", post(keys::revoke))
        .route("/portal/keys/{key_id}/mandates", post(keys::review_mandate))
        .route("/portal/keys/{key_id}/mandates/{mandate_id}/revoke", post(keys::revoke_mandate))
        .route("/portal/company/keys", get(company::keys))
        .route("/portal/company/directory", post(company::set_listing))
        .route("/portal/company/groups", post(company::add_group))
        .route("/portal/company/groups/{group_id}/keys", post(company::register_key))
        .route("/portal/company/keys/{key_id}/revoke", post(company::revoke_key))
        .route("/portal/company/terms", get(company::terms).post(company::accept_terms))
        .route("/portal/company/receipts", get(company::receipts))
        .route("/portal/company/receipts/download", get(company::download))
        .route("/portal/{*unknown}", axum::routing::any(unknown_page))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::map_response(secure_headers))
}

/// `/portal/`: a business's records, or an AI company's usage.
async fn landing(state: axum::extract::State<Region>, member: session::Member) -> PageResult {
    let session::Member(signed) = member;
    if signed.company {
        company::home(&state, &signed).await
    } else {
        records::catalogue(&state, &session::Person(signed))
    }
}

/// A portal path that names no page: the portal's own 404 page, not the
/// API's JSON problem.
async fn unknown_page(uri: axum::http::Uri) -> PageError {
    PageError(Error::detail(Code::NotFound, format!("The portal has no page at {}.", uri.path())))
}

/// Every portal answer: a content policy that loads only the portal's own
/// script and style, never framed, never cached.
async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

/// A template as an HTML answer.
fn html(template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(e) => PageError(Error::internal(format!("a portal page: {e}"))).into_response(),
    }
}

/// A refusal shown as a page: sign-in for a missing session, else the
/// problem's title and detail with its status.
/// A page showing a refused form again, answered with the refusal's status.
fn html_refused(template: &impl Template, refusal: Option<&pages::Refusal>) -> Response {
    let mut response = html(template);
    if let Some(status) = refusal.and_then(|r| StatusCode::from_u16(r.status).ok())
        && response.status().is_success()
    {
        *response.status_mut() = status;
    }
    response
}

#[derive(Debug)]
pub struct PageError(pub Error);

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        PageError(e)
    }
}

impl From<svc_store::StoreError> for PageError {
    fn from(e: svc_store::StoreError) -> Self {
        PageError(Error::from(e))
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let problem = self.0.into_problem();
        if problem.code == Code::SignInRequired {
            return Redirect::to("/portal/sign-in").into_response();
        }
        let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let page = pages::Problem {
            nav: None,
            title: problem.title.clone(),
            detail: problem.detail.clone().unwrap_or_default(),
            code: problem.code.as_str().into(),
            back: "/portal/".into(),
        };
        (status, html(&page)).into_response()
    }
}

type PageResult = Result<Response, PageError>;

/// What a finished action's page was asked to confirm: `?done=<what>`,
/// and for some the thing's id (`&id=`). The words a page says are read
/// from the store, never from the query.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Done {
    done: Option<String>,
    id: Option<String>,
}

impl Done {
    fn is(&self, what: &str) -> bool {
        self.done.as_deref() == Some(what)
    }
}
