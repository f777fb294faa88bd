//! The signing page: who holds the business's sealing key. An owner turns
//! hosted signing on or off with their passkey; everyone sees the custody
//! statements the public can read.

use axum::Form;
use axum::extract::{Query, State};
use serde::Deserialize;
use svc_core::custody::Custody;
use svc_core::problem::Code;

use super::pages::{self, Confirmation, Nav, When};
use super::records::{HOSTED_OFF, HOSTED_ON, review_page};
use super::session::Person;
use super::{Done, PageResult, html};
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::hosted::{self, SWITCHERS};
use svc_node::service::portal::saves::{self, PasskeyDocument};

pub async fn page(State(state): State<Region>, person: Person, Query(done): Query<Done>) -> PageResult {
    let me = &person.0;
    let held = hosted::held(&state, &me.account_uuid)?;
    // Said only when the switch is as the person left it.
    let confirmation = match (done.done.as_deref(), held.is_some()) {
        (Some("hosted-on"), true) => {
            Some(Confirmation::new("Hosted signing turned on: the service signs each save a person confirms"))
        }
        (Some("hosted-off"), false) => {
            Some(Confirmation::new("Hosted signing turned off: the service's key for your business is revoked"))
        }
        _ => None,
    };
    Ok(html(&pages::Signing {
        nav: Nav::confirming(&state, me, confirmation)?,
        csrf: me.csrf.clone(),
        hosted: held.map(|h| (h.key_id, When::at(h.enabled_at))),
        owner: SWITCHERS.contains(&me.role),
        statements: hosted::statements(&state, me)?
            .into_iter()
            .map(|s| (s.key_id, s.custody.as_str(), When::at(s.effective_from)))
            .collect(),
        notice: None,
    }))
}

#[derive(Deserialize)]
pub struct SwitchForm {
    csrf: Option<String>,
    custody: String,
}

/// The custody request, shown for an owner's passkey to sign.
pub async fn review(State(state): State<Region>, person: Person, Form(form): Form<SwitchForm>) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let custody = Custody::parse(&form.custody)
        .ok_or_else(|| Error::detail(Code::RequestInvalid, "custody is hosted or self"))?;
    let (payload, payload_type) = hosted::request(&state, &person.0, custody)?;
    let prepared =
        saves::prepare_document(&state, &person.0, PasskeyDocument::Custody, payload.clone(), payload_type).await?;
    let verb = if custody == Custody::Hosted { HOSTED_ON } else { HOSTED_OFF };
    let back = super::records::Back::Page("/portal/signing".into());
    review_page(&state, &person, ("a custody request", verb), &payload, prepared, None, back)
}
