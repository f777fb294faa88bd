//! The pushes page, and the decision on a held push.

use axum::Form;
use axum::extract::{Path, State};
use serde::Deserialize;
use svc_core::problem::Code;

use super::pages::{self, Nav, PushRow};
use super::session::Person;
use super::{PageResult, html};
use crate::region::Region;
use crate::service::Error;
use crate::service::portal::{SEALERS, pushes, saves};
use crate::store::model::Named;
use svc_core::publish::outcome::PushState;

pub async fn list(State(state): State<Region>, person: Person) -> PageResult {
    let me = &person.0;
    let rows = pushes::recent(&state, me)?
        .into_iter()
        .map(|p| {
            let [accepted, updated, rejected, held, pending] = p.counts;
            PushRow {
                counts: format!(
                    "{accepted} accepted, {updated} updated, {rejected} rejected, {held} held, {pending} pending"
                ),
                push_id: p.push_id,
                record_type: p.record_type.name(),
                source: p.source.name(),
                state: p.state.name(),
                held: p.state == PushState::Held,
                held_reasons: p.held_reasons.join(", "),
                records: p.records,
                received_at: p.received_at.to_rfc3339_secs(),
            }
        })
        .collect();
    Ok(html(&pages::Pushes {
        nav: Nav::of(&state, me)?,
        csrf: me.csrf.clone(),
        pushes: rows,
        sealer: SEALERS.contains(&me.role),
    }))
}

#[derive(Deserialize)]
pub struct ReleaseForm {
    csrf: Option<String>,
    decision: String,
}

/// The decision, shown for the passkey to seal.
pub async fn review_release(
    State(state): State<Region>,
    person: Person,
    Path(push_id): Path<String>,
    Form(form): Form<ReleaseForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let publish = match form.decision.as_str() {
        "publish" => true,
        "discard" => false,
        _ => return Err(Error::detail(Code::RequestInvalid, "the decision is publish or discard").into()),
    };
    let (payload, payload_type) = pushes::release(&state, &person.0, &push_id, publish)?;
    let prepared = saves::prepare_release(&state, &person.0, &push_id, payload.clone(), payload_type).await?;
    let verb = if publish { "release" } else { "discard" };
    super::records::review_page(&state, &person, "a decision on a held push", verb, &payload, prepared)
}
