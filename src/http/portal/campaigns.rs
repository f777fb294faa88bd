//! The campaigns page: the business's campaigns, a form to start one (its
//! passkey seals the terms), and pause, resume and end.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;
use svc_core::ads::campaign::{CampaignTerms, Repeats};
use svc_core::ads::{Basis, Format, Placement};
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_core::records::editor;

use super::pages::{self, CampaignRow, Confirmation, Nav, Refusal};
use super::records::{Back, review_page};
use super::session::Person;
use super::{Done, PageResult, html_refused};
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::saves::PasskeyDocument;
use svc_node::service::portal::{SEALERS, campaigns, records, saves};
use svc_store::model::{CampaignState, Named};

/// Which placement the form starts a campaign for (`?placement=`).
#[derive(Default, Deserialize)]
pub struct Chosen {
    placement: Option<String>,
}

pub async fn list(
    State(state): State<Region>,
    person: Person,
    Query(done): Query<Done>,
    Query(chosen): Query<Chosen>,
) -> PageResult {
    let placement = chosen.placement.as_deref().and_then(Placement::parse).unwrap_or(Placement::Sponsorship);
    page(&state, &person, &done, placement, None).await
}

async fn page(
    state: &Region,
    person: &Person,
    done: &Done,
    placement: Placement,
    refusal: Option<Refusal>,
) -> PageResult {
    let me = &person.0;
    let listed = campaigns::list(state, me)?;
    let made =
        listed.iter().map(|(c, ..)| c).find(|c| done.is("created") && done.id.as_deref() == Some(&c.campaign_id));
    let confirmation = made.map(|c| match c.funded.0 {
        0 => Confirmation::new(format!(
            "Campaign created: {} is waiting for funding and places nothing until then",
            c.terms.name
        )),
        _ => Confirmation::new(format!("Campaign created: {}", c.terms.name)),
    });
    let rows = listed
        .into_iter()
        .map(|(c, spent, left)| CampaignRow {
            spent: spent.to_decimal(),
            left: left.to_decimal(),
            placement: match c.terms.placement {
                Placement::Ad => "ads",
                Placement::Sponsorship => "sponsored products",
                Placement::Promotion => "promoted records",
            },
            budget: c.terms.budget.to_decimal(),
            funded: c.funded.to_decimal(),
            net_price: format!("{} USD {}", c.terms.net_price.to_decimal(), c.terms.basis.as_str()),
            keywords: c.terms.keywords.join(", "),
            countries: c.terms.countries.join(", "),
            items: c.items.len(),
            // Active but funded with nothing: it places nothing yet.
            shown: match c.state {
                CampaignState::Active if c.funded.0 == 0 => "waiting for funding",
                _ => c.state.name(),
            },
            state: c.state.name(),
            name: c.terms.name,
            campaign_id: c.campaign_id,
        })
        .collect();
    // Only what this placement can place, each by its name.
    let mut placeable = Vec::new();
    for kind in RecordType::ALL.into_iter().filter(|&kind| Placement::of(kind) == Some(placement)) {
        for r in records::list(state, me, kind)?.into_iter().filter(|r| r.state == svc_store::model::RecordState::Live)
        {
            let name = records::live_bytes(state, me, &r.record_id)
                .ok()
                .and_then(|(_, bytes)| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .and_then(|record| editor::record_name(kind, &record));
            let what = match name {
                Some(name) => format!("{name} ({})", r.own_id),
                None => r.own_id.clone(),
            };
            placeable.push((r.record_id, what));
        }
    }
    let page = pages::Campaigns {
        nav: Nav::confirming(state, me, confirmation)?,
        csrf: me.csrf.clone(),
        campaigns: rows,
        placement: placement.as_str(),
        placeable,
        sealer: SEALERS.contains(&me.role),
        refusal,
    };
    Ok(html_refused(&page, page.refusal.as_ref()))
}

fn items(text: &str) -> Vec<String> {
    text.split(['\n', ',']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// The campaign a person asks for, shown for their passkey to seal; a
/// refused one is shown again with what was typed.
pub async fn review(
    State(state): State<Region>,
    person: Person,
    Form(form): Form<Vec<(String, String)>>,
) -> PageResult {
    let field = |name: &str| form.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    person.check_csrf(Some(field("csrf")))?;
    let placement = Placement::parse(field("placement"));
    // Back from the review page: the form as it was typed.
    if pages::is_back(&form) {
        let refusal = Refusal::back("campaign", form);
        return page(&state, &person, &Done::default(), placement.unwrap_or(Placement::Sponsorship), Some(refusal))
            .await;
    }
    let prepared = async {
        let refuse = |what: &str| Error::detail(Code::RequestInvalid, what.to_owned());
        let placement = placement.ok_or_else(|| refuse("the placement is sponsorship, promotion or ad"))?;
        let basis = Basis::parse(field("basis")).ok_or_else(|| refuse("the basis is cpm or cpc"))?;
        let allowed = field("repeats_allowed") == "on";
        let max = field("max_per_conversation").trim();
        let terms = CampaignTerms {
            name: field("name").to_owned(),
            placement,
            budget: field("budget").trim().to_owned(),
            net_price: field("net_price").trim().to_owned(),
            basis,
            keywords: items(field("keywords")),
            countries: items(field("countries")),
            subdivisions: items(field("subdivisions")),
            formats: form.iter().filter(|(n, _)| n == "format").filter_map(|(_, v)| Format::parse(v)).collect(),
            repeats: Repeats {
                allowed,
                max_per_conversation: if allowed {
                    max.parse().map_err(|_| refuse("renders a conversation is a whole number"))?
                } else {
                    1
                },
            },
        };
        let chosen: Vec<String> = form.iter().filter(|(n, _)| n == "item").map(|(_, v)| v.clone()).collect();
        let (payload, payload_type) = campaigns::document(&state, &person.0, terms, chosen)?;
        let prepared =
            saves::prepare_document(&state, &person.0, PasskeyDocument::Campaign, payload.clone(), payload_type)
                .await?;
        Ok::<_, Error>((payload, prepared))
    }
    .await;
    match prepared {
        Ok((payload, prepared)) => {
            let back = Back::form("/portal/campaigns", &form);
            review_page(&state, &person, ("a campaign", "start"), &payload, prepared, None, back)
        }
        Err(e) => {
            let placement = placement.unwrap_or(Placement::Sponsorship);
            let refusal = Refusal::of("campaign", e, form)?;
            page(&state, &person, &Done::default(), placement, Some(refusal)).await
        }
    }
}

#[derive(Deserialize)]
pub struct StateForm {
    csrf: Option<String>,
    state: String,
}

pub async fn set_state(
    State(state): State<Region>,
    person: Person,
    Path(campaign_id): Path<String>,
    Form(form): Form<StateForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let to = CampaignState::from_name(&form.state)
        .ok_or_else(|| Error::detail(Code::RequestInvalid, "a campaign is active, paused or ended"))?;
    campaigns::set_state(&state, &person.0, &campaign_id, to).await?;
    Ok(Redirect::to("/portal/campaigns").into_response())
}
