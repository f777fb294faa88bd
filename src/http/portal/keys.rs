//! The keys page: integration keys and their mandates.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::response::Redirect;
use serde::Deserialize;
use svc_core::ids::RecordType;
use svc_core::problem::Code;

use super::pages::{self, Confirmation, KeyRow, MandateRow, Nav, Refusal, When};
use super::records::Back;
use super::session::{CsrfForm, Person};
use super::{Done, PageResult, html_refused};
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::keys::{self, KEY_KEEPERS, MandateForm};
use svc_node::service::portal::saves::PasskeyDocument;
use svc_node::service::portal::{SEALERS, saves};

async fn page(
    state: &Region,
    person: &Person,
    notice: Option<String>,
    done: &Done,
    refusal: Option<Refusal>,
) -> PageResult {
    let me = &person.0;
    let views = keys::list(state, me)?;
    let sealed = views
        .iter()
        .flat_map(|view| &view.mandates)
        .find(|m| done.is("mandate") && done.id.as_deref() == Some(&m.mandate_id));
    let confirmation = sealed.map(|m| {
        Confirmation::new(format!(
            "Mandate sealed until {}: the key may publish {} in {}",
            m.valid_until.to_day_month_year(),
            m.record_types.join(", "),
            countries_said(&m.countries)
        ))
    });
    let rows = views
        .into_iter()
        .map(|view| KeyRow {
            key_id: view.key.key_id.clone(),
            kind: view.key.kind.as_str(),
            registered_at: When::at(view.key.registered_at),
            revoked: view.key.revocation_effective_from.map(When::at),
            mandates: view
                .mandates
                .into_iter()
                .map(|m| MandateRow {
                    sandbox: m.mandate_id == svc_node::service::publishing::SANDBOX_GRANT,
                    caps: format!("{} records an hour, {} a day", m.records_per_hour, pages::size(m.bytes_per_day)),
                    mandate_id: m.mandate_id,
                    record_types: m.record_types.join(", "),
                    countries: countries_said(&m.countries),
                    valid_until: m.valid_until.to_day_month_year(),
                    revoked: m.revoked_at.map(When::at),
                })
                .collect(),
        })
        .collect();
    let page = pages::Keys {
        nav: Nav::confirming(state, me, confirmation)?,
        csrf: me.csrf.clone(),
        keys: rows,
        types: RecordType::COLLECTIONS.iter().map(|t| (t.name(), *t == RecordType::Products)).collect(),
        keeper: KEY_KEEPERS.contains(&me.role),
        sealer: SEALERS.contains(&me.role),
        notice,
        refusal,
    };
    Ok(html_refused(&page, page.refusal.as_ref()))
}

pub async fn list(State(state): State<Region>, person: Person, Query(done): Query<Done>) -> PageResult {
    page(&state, &person, None, &done, None).await
}

/// A mandate's countries as a person reads them: every country, or the list.
pub(super) fn countries_said(countries: &[String]) -> String {
    if countries.len() >= svc_core::ids::countries().count() { "every country".into() } else { countries.join(", ") }
}

#[derive(Deserialize)]
pub struct AddForm {
    csrf: Option<String>,
    jwk: String,
}

pub async fn add(State(state): State<Region>, person: Person, Form(form): Form<AddForm>) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let added = match keys::add(&state, &person.0, &form.jwk).await {
        Ok(added) => added,
        Err(e) => {
            let refusal = Refusal::of("add-key", e, vec![("jwk".into(), form.jwk)])?;
            return page(&state, &person, None, &Done::default(), Some(refusal)).await;
        }
    };
    let mut notice = format!("Registered integration key {}.", added.key.key_id);
    if let (Some(sandbox), Some(token)) = (&added.key.sandbox, &added.sandbox_token) {
        notice.push_str(&format!(
            " Sandbox grant (its first request carries it): {}; bearer token for the first hour, shown once: {token}",
            sandbox.grant
        ));
    }
    page(&state, &person, Some(notice), &Done::default(), None).await
}

pub async fn revoke(
    State(state): State<Region>,
    person: Person,
    Path(key_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    keys::revoke(&state, &person.0, &key_id).await?;
    Ok(Redirect::to("/portal/keys").into_response())
}

pub async fn revoke_mandate(
    State(state): State<Region>,
    person: Person,
    Path((key_id, mandate_id)): Path<(String, String)>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    keys::revoke_mandate(&state, &person.0, &key_id, &mandate_id).await?;
    Ok(Redirect::to("/portal/keys").into_response())
}

fn items(text: &str) -> Vec<String> {
    text.split(['\n', ',']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn number(form: &[(String, String)], name: &str) -> Result<u64, Error> {
    let text = form.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim()).unwrap_or_default();
    text.parse().map_err(|_| Error::detail(Code::RequestInvalid, format!("{name} is a whole number")))
}

/// The mandate a person asks for, shown for their passkey to seal; a
/// refused one is shown again on the keys page as it was typed.
pub async fn review_mandate(
    State(state): State<Region>,
    person: Person,
    Path(key_id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> PageResult {
    let field = |name: &str| form.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    person.check_csrf(Some(field("csrf")))?;
    // Back from the review page: the form as it was typed.
    if pages::is_back(&form) {
        let again = Refusal::back(format!("mandate:{key_id}"), form);
        return page(&state, &person, None, &Done::default(), Some(again)).await;
    }
    let prepared = async {
        let allow = items(field("source_ip_allow_list"));
        let request = MandateForm {
            key_id: key_id.clone(),
            record_types: form.iter().filter(|(n, _)| n == "record_type").map(|(_, v)| v.clone()).collect(),
            countries: items(field("countries")),
            records_per_hour: number(&form, "records_per_hour")?,
            bytes_per_day: number(&form, "bytes_per_day")?,
            source_ip_allow_list: (!allow.is_empty()).then_some(allow),
            days: number(&form, "days")?,
        };
        let (payload, payload_type) = keys::mandate(&state, &person.0, request)?;
        let prepared =
            saves::prepare_document(&state, &person.0, PasskeyDocument::Mandate, payload.clone(), payload_type).await?;
        Ok::<_, Error>((payload, prepared))
    }
    .await;
    match prepared {
        Ok((payload, prepared)) => {
            let back = Back::form(format!("/portal/keys/{key_id}/mandates"), &form);
            super::records::review_page(&state, &person, ("a mandate", "authorise"), &payload, prepared, None, back)
        }
        Err(e) => {
            let refusal = Refusal::of(format!("mandate:{key_id}"), e, form)?;
            page(&state, &person, None, &Done::default(), Some(refusal)).await
        }
    }
}
