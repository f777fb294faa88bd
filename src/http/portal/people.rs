//! The people page: who has access and in which role; an owner invites,
//! sets roles and removes.

use axum::Form;
use axum::extract::{Path, State};
use serde::Deserialize;

use super::pages::{self, Nav, PersonRow, Refusal, When};
use super::session::{CsrfForm, Member};
use super::{PageResult, html_refused};
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::people;
use svc_store::model::{Named, PasskeyRole};

/// The link an invitation is opened by, shown once to the owner who made it.
fn link(state: &Region, made: &people::NewInvitation) -> String {
    format!("{}{}", state.config.passkey_origin, made.path)
}

fn role(name: &str) -> Result<PasskeyRole, Error> {
    PasskeyRole::from_name(name).ok_or_else(|| Error::detail(svc_core::problem::Code::RequestInvalid, "no such role"))
}

async fn page(state: &Region, person: &Member, invited: Option<String>, refusal: Option<Refusal>) -> PageResult {
    let me = &person.0;
    let roles: Vec<&'static str> =
        people::Account::of(state, &me.account_uuid)?.roles().iter().map(|r| r.as_str()).collect();
    let rows = people::people(state, &me.account_uuid)?
        .into_iter()
        .map(|p| PersonRow {
            me: p.person_id == me.person_id,
            person_id: p.person_id,
            name: p.name,
            email: p.email,
            role: p.role.as_str(),
            roles: roles.iter().map(|r| (*r, *r == p.role.as_str())).collect(),
            since: When::at(p.added_at),
            removed: p.removed_at.is_some(),
        })
        .collect();
    let invitations = if me.role == PasskeyRole::Owner {
        people::open_invitations(state, &me.account_uuid)?
            .into_iter()
            .map(|i| (i.invitation_id, i.email, i.role, i.expires_at.to_day_month_year()))
            .collect()
    } else {
        Vec::new()
    };
    let page = pages::People {
        nav: Nav::of(state, me)?,
        csrf: me.csrf.clone(),
        people: rows,
        owner: me.role == PasskeyRole::Owner,
        roles,
        company: me.company,
        invited,
        invitations,
        refusal,
    };
    Ok(html_refused(&page, page.refusal.as_ref()))
}

pub async fn list(State(state): State<Region>, person: Member) -> PageResult {
    page(&state, &person, None, None).await
}

#[derive(Deserialize)]
pub struct InviteForm {
    csrf: Option<String>,
    email: String,
    role: String,
}

pub async fn invite(State(state): State<Region>, person: Member, Form(form): Form<InviteForm>) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let invited = match role(&form.role) {
        Ok(role) => people::invite(&state, Some(&person.0), &person.0.account_uuid, &form.email, role).await,
        Err(e) => Err(e),
    };
    match invited {
        Ok(made) => page(&state, &person, Some(link(&state, &made)), None).await,
        Err(e) => {
            let refusal = Refusal::of("invite", e, vec![("email".into(), form.email), ("role".into(), form.role)])?;
            page(&state, &person, None, Some(refusal)).await
        }
    }
}

#[derive(Deserialize)]
pub struct RoleForm {
    csrf: Option<String>,
    role: String,
}

pub async fn set_role(
    State(state): State<Region>,
    person: Member,
    Path(person_id): Path<String>,
    Form(form): Form<RoleForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    people::set_role(&state, &person.0, &person_id, role(&form.role)?).await?;
    page(&state, &person, None, None).await
}

pub async fn remove(
    State(state): State<Region>,
    person: Member,
    Path(person_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    people::remove(&state, &person.0, &person_id).await?;
    page(&state, &person, None, None).await
}

/// A new link for a waiting invitation (the old one stops working), shown once.
pub async fn renew_invitation(
    State(state): State<Region>,
    person: Member,
    Path(invitation_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let made = people::renew_invitation(&state, &person.0, &invitation_id).await?;
    page(&state, &person, Some(link(&state, &made)), None).await
}

pub async fn cancel_invitation(
    State(state): State<Region>,
    person: Member,
    Path(invitation_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    people::cancel_invitation(&state, &person.0, &invitation_id).await?;
    page(&state, &person, None, None).await
}
