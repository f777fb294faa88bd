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

use super::pages::{self, CampaignRow, Confirmation, Nav};
use super::records::review_page;
use super::session::Person;
use super::{Done, PageResult, html};
use svc_node::region::Region;
use svc_node::service::Error;
use svc_node::service::portal::saves::PasskeyDocument;
use svc_node::service::portal::{SEALERS, campaigns, records, saves};
use svc_store::model::{CampaignState, Named};

pub async fn list(State(state): State<Region>, person: Person, Query(done): Query<Done>) -> PageResult {
    let me = &person.0;
    let listed = campaigns::list(&state, me)?;
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
    let mut placeable = Vec::new();
    for kind in [RecordType::Products, RecordType::Events, RecordType::Jobs, RecordType::Updates, RecordType::Ads] {
        for r in records::list(&state, me, kind)?.into_iter().filter(|r| r.state == svc_store::model::RecordState::Live)
        {
            placeable.push((r.record_id, format!("{} {}", kind.name(), r.own_id)));
        }
    }
    Ok(html(&pages::Campaigns {
        nav: Nav::confirming(&state, me, confirmation)?,
        csrf: me.csrf.clone(),
        campaigns: rows,
        placeable,
        sealer: SEALERS.contains(&me.role),
    }))
}

fn items(text: &str) -> Vec<String> {
    text.split(['\n', ',']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// The campaign a person asks for, shown for their passkey to seal.
pub async fn review(
    State(state): State<Region>,
    person: Person,
    Form(form): Form<Vec<(String, String)>>,
) -> PageResult {
    let field = |name: &str| form.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    person.check_csrf(Some(field("csrf")))?;
    let refuse = |what: &str| Error::detail(Code::RequestInvalid, what.to_owned());
    let placement = match field("placement") {
        "sponsorship" => Placement::Sponsorship,
        "promotion" => Placement::Promotion,
        "ad" => Placement::Ad,
        _ => return Err(refuse("the placement is sponsorship, promotion or ad").into()),
    };
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
        saves::prepare_document(&state, &person.0, PasskeyDocument::Campaign, payload.clone(), payload_type).await?;
    review_page(&state, &person, "a campaign", "start", &payload, prepared, None)
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
