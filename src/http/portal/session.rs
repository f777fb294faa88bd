//! The portal's session cookie and the checks every request makes: a page
//! needs a signed-in person (else it goes to sign-in), and a state change
//! also needs the session's CSRF token, in the form or in `X-CSRF-Token`.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use svc_core::problem::Code;

use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::{Signed, sessions};

pub const COOKIE: &str = "svc_portal";

/// A form that carries only the session's CSRF token.
#[derive(serde::Deserialize)]
pub struct CsrfForm {
    pub csrf: Option<String>,
}

/// The session cookie's value in a request, if any.
pub fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// `Set-Cookie` for a new session: `HttpOnly`, `SameSite=Strict`, on the
/// portal's path, `Secure` when the portal's origin is HTTPS.
pub fn set_cookie(state: &Region, value: &str) -> HeaderValue {
    let secure = if state.config.passkey_origin.starts_with("https://") { "; Secure" } else { "" };
    let max_age = svc_core::portal::SESSION_LONGEST_MS / 1000;
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/portal; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("svc_portal=; Path=/portal"))
}

/// `Set-Cookie` that ends the session in the browser.
pub fn clear_cookie() -> HeaderValue {
    HeaderValue::from_static("svc_portal=; Path=/portal; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// The client's address, as every surface reads it (`forwarded`), for
/// what is limited per address.
pub struct ClientAddress(pub Option<std::net::IpAddr>);

impl FromRequestParts<Region> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self, Self::Rejection> {
        let trusted = &state.config.trusted_proxies;
        Ok(ClientAddress(crate::forwarded::client_ip(&parts.extensions, &parts.headers, trusted)))
    }
}

/// The language a person's browser asks for (`Accept-Language`): the
/// editor's labels, hints and pickers speak it.
pub struct Speaks(pub svc_core::records::labels::Lang);

impl<S: Send + Sync> FromRequestParts<S> for Speaks {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(axum::http::header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
        Ok(Speaks(header.map(svc_core::records::labels::Lang::from_accept_language).unwrap_or_default()))
    }
}

/// Why a request was not let in: a page navigation is shown a page (a
/// missing or ended session is sent to sign in); the portal script's JSON
/// calls get the problem itself (`401 sign_in_required`), which they show.
pub enum Refused {
    Page(super::PageError),
    Json(Error),
}

impl axum::response::IntoResponse for Refused {
    fn into_response(self) -> axum::response::Response {
        match self {
            Refused::Page(page) => page.into_response(),
            Refused::Json(problem) => problem.into_response(),
        }
    }
}

/// The refusal of `error` as the request expects it: JSON for the script.
fn refused(parts: &Parts, error: Error) -> Refused {
    let content_type = parts.headers.get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    if content_type.is_some_and(|t| t.starts_with("application/json")) {
        Refused::Json(error)
    } else {
        Refused::Page(super::PageError(error))
    }
}

/// A signed-in person of any account (the pages both portals share:
/// people, sign-out, the landing page).
pub struct Member(pub Signed);

impl FromRequestParts<Region> for Member {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self, Self::Rejection> {
        let no_session = || Error::detail(Code::SignInRequired, "sign in to the portal");
        let value = cookie(&parts.headers).ok_or_else(|| refused(parts, no_session()))?;
        match sessions::resolve(state, &value).await {
            Ok(signed) => Ok(Member(signed)),
            Err(e) => Err(refused(parts, e)),
        }
    }
}

/// A signed-in person of a business (the business portal's pages).
pub struct Person(pub Signed);

impl FromRequestParts<Region> for Person {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self, Self::Rejection> {
        let Member(signed) = Member::from_request_parts(parts, state).await?;
        if signed.company {
            let wrong = Error::detail(Code::Forbidden, "this page is a business's; your account is an AI company's");
            return Err(refused(parts, wrong));
        }
        Ok(Person(signed))
    }
}

/// A signed-in person of an AI company (the AI-company portal's pages).
pub struct CompanyPerson(pub Signed);

impl FromRequestParts<Region> for CompanyPerson {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, state: &Region) -> Result<Self, Self::Rejection> {
        let Member(signed) = Member::from_request_parts(parts, state).await?;
        if !signed.company {
            let wrong = Error::detail(Code::Forbidden, "this page is an AI company's; your account is a business's");
            return Err(refused(parts, wrong));
        }
        Ok(CompanyPerson(signed))
    }
}

/// Refused unless `token` is the session's CSRF token.
fn check_csrf(signed: &Signed, token: Option<&str>) -> Result<(), Error> {
    match token {
        Some(t) if constant_time_eq(t.as_bytes(), signed.csrf.as_bytes()) => Ok(()),
        _ => Err(Error::detail(Code::CsrfInvalid, "the form's token is missing or stale; reload the page")),
    }
}

macro_rules! csrf_checks {
    ($($who:ty),*) => {$(
        impl $who {
            /// Refused unless `token` is the session's CSRF token.
            pub fn check_csrf(&self, token: Option<&str>) -> Result<(), Error> {
                check_csrf(&self.0, token)
            }

            /// The CSRF token a script sent in its header.
            pub fn check_csrf_header(&self, headers: &HeaderMap) -> Result<(), Error> {
                self.check_csrf(headers.get("x-csrf-token").and_then(|v| v.to_str().ok()))
            }
        }
    )*};
}

csrf_checks!(Member, Person, CompanyPerson);

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
