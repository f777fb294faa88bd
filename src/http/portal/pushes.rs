//! The pushes page, and the decision on a held push.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;
use svc_core::problem::Code;

use super::pages::{self, AttemptRow, Confirmation, Nav, PushRow, When};
use super::session::{CsrfForm, Person};
use super::{Done, PageResult, html};
use svc_core::publish::outcome::PushState;
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::saves::PasskeyDocument;
use svc_node::service::portal::{SEALERS, pushes, saves};
use svc_store::model::{Named, PushRecord};

pub async fn list(State(state): State<Region>, person: Person, Query(done): Query<Done>) -> PageResult {
    let me = &person.0;
    let recent = pushes::recent(&state, me)?;
    let decided = recent.iter().find(|p| done.is("decided") && done.id.as_deref() == Some(&p.push_id));
    let confirmation = decided.map(|p| {
        Confirmation::new(format!(
            "Your decision is sealed: the {} push of {} records is {}",
            p.record_type.name(),
            p.records,
            p.state.name()
        ))
    });
    let rows = recent.iter().map(row).collect();
    Ok(html(&pages::Pushes {
        nav: Nav::confirming(&state, me, confirmation)?,
        csrf: me.csrf.clone(),
        pushes: rows,
        sealer: SEALERS.contains(&me.role),
    }))
}

fn row(p: &PushRecord) -> PushRow {
    PushRow {
        counts: pages::counts(p),
        push_id: p.push_id.clone(),
        record_type: p.record_type.name(),
        source: p.source.name(),
        state: p.state.name(),
        held: p.state == PushState::Held,
        held_reasons: p.held_reasons.join(", "),
        records: p.records,
        received_at: When::at(p.received_at),
    }
}

#[derive(Deserialize)]
pub struct Page {
    from: Option<u64>,
}

/// One push: its status and its attempts, a hundred records a page.
pub async fn show(
    State(state): State<Region>,
    person: Person,
    Path(push_id): Path<String>,
    Query(page): Query<Page>,
) -> PageResult {
    let first = page.from.unwrap_or(0);
    let pushes::Attempts { push, leaves, next } = pushes::attempts(&state, &person.0, &push_id, first)?;
    let mut facts = vec![
        ("received_at", push.received_at.to_rfc3339_secs()),
        ("completed_at", push.completed_at.map_or("not yet".into(), |t| t.to_rfc3339_secs())),
        ("progress", format!("{} of {} chunks", push.chunks_done, push.chunks)),
    ];
    if let Some(error) = &push.error {
        facts.push(("error", error.clone()));
    }
    let attempts = leaves
        .into_iter()
        .map(|leaf| AttemptRow {
            leaf_index: leaf.leaf_index,
            business_product_id: leaf.business_product_id.unwrap_or_default(),
            product_name: leaf.product_name.unwrap_or_default(),
            outcome: leaf.outcome.name(),
            record_id: leaf.record_id,
            reasons: leaf.errors.iter().map(|(code, pointer, detail)| format!("{code} {pointer}: {detail}")).collect(),
        })
        .collect();
    Ok(html(&pages::Push { nav: Nav::of(&state, &person.0)?, row: row(&push), facts, attempts, first, next }))
}

/// Marks the notices read; the pushes page lists them still.
pub async fn dismiss(State(state): State<Region>, person: Person, Form(form): Form<CsrfForm>) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    pushes::dismiss_notices(&state, &person.0).await?;
    Ok(Redirect::to("/portal/pushes").into_response())
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
    let back = super::records::Back::Page(format!("/portal/pushes/{push_id}"));
    let prepared =
        saves::prepare_document(&state, &person.0, PasskeyDocument::Release { push_id }, payload.clone(), payload_type)
            .await?;
    let verb = if publish { "release" } else { "discard" };
    super::records::review_page(&state, &person, ("a decision on a held push", verb), &payload, prepared, None, back)
}
