//! The AI-company portal's pages (retrieval 5): usage and bills, receipts
//! and their download, retrieval keys by group, and the Terms. Each calls
//! one use case of `service::portal::company`.

use axum::Form;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;
use serde_json::Value;
use svc_core::time::{DAY, UnixMs};

use super::pages::{self, Nav, Refusal, When};
use super::session::{CompanyPerson, CsrfForm};
use super::{PageResult, html, html_refused};
use svc_node::region::Region;
use svc_node::service::portal::Signed;
use svc_node::service::portal::company::{self, DECIDERS, KEY_MANAGERS};
use svc_node::service::retrieval::{ReceiptsQuery, UsageQuery};

/// The landing page: the last 30 days of usage, the allowance, and the
/// bills of the last twelve months, each as a chart and a table.
pub async fn home(state: &Region, me: &Signed) -> PageResult {
    let usage = company::usage(state, me, UsageQuery { from: None, to: None }).await?;
    let today = state.clock.now();
    let days: Vec<(String, u64, u64)> = (0..30)
        .rev()
        .map(|back| {
            let date = UnixMs(today.0 - back * DAY).to_rfc3339_secs()[..10].to_owned();
            let day = usage["days"].as_array().into_iter().flatten().find(|d| d["date"] == date.as_str());
            let count = |name: &str| day.and_then(|d| d[name].as_u64()).unwrap_or(0);
            (date, count("searches"), count("fetches"))
        })
        .collect();
    let (bills, invoiced) = company::bills(state, me).await?;
    let months: Vec<(String, u64, u64)> =
        bills.iter().rev().map(|b| (b.month.clone(), b.searches, b.fetches)).collect();
    let terms = company::terms(state, me)?;
    let allowance = match usage["allowance"]["remaining"].as_i64() {
        Some(remaining) => format!("prepaid: {remaining} billable requests left"),
        None => "billed after use (no prepaid allowance)".into(),
    };
    Ok(html(&pages::CompanyHome {
        nav: Nav::of(state, me)?,
        totals: (
            usage["totals"]["searches"].as_u64().unwrap_or(0),
            usage["totals"]["fetches"].as_u64().unwrap_or(0),
            usage["totals"]["billed"].as_u64().unwrap_or(0),
        ),
        daily: super::chart::daily_bars(&days),
        monthly: super::chart::daily_bars(&months),
        bills: bills.into_iter().map(|b| (pages::month(&b.month), b.searches, b.fetches, b.billed)).collect(),
        invoiced,
        allowance,
        verified: terms.verified,
        production_refusal: terms.production_refusal.filter(|_| !terms.sandbox),
    }))
}

async fn keys_page(state: &Region, me: &Signed, notice: Option<String>) -> PageResult {
    let groups = company::groups(state, me)?
        .into_iter()
        .map(|g| pages::GroupRow {
            group_id: g.group.group_id,
            name: g.group.name,
            keys: g
                .keys
                .into_iter()
                .map(|k| pages::RetrievalKeyRow {
                    key_id: k.key_id,
                    environment: if k.environment.is_sandbox() { "sandbox" } else { "production" },
                    registered_at: When::at(k.registered_at),
                    revoked: k.revoked_at.map(When::at),
                })
                .collect(),
        })
        .collect();
    Ok(html(&pages::RetrievalKeys {
        nav: Nav::of(state, me)?,
        csrf: me.csrf.clone(),
        groups,
        manager: KEY_MANAGERS.contains(&me.role),
        decider: DECIDERS.contains(&me.role),
        listed: company::listed(state, me)?,
        notice,
    }))
}

#[derive(Deserialize)]
pub struct ListingForm {
    csrf: Option<String>,
    listed: bool,
}

pub async fn set_listing(
    State(state): State<Region>,
    person: CompanyPerson,
    Form(form): Form<ListingForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    company::set_listing(&state, &person.0, form.listed).await?;
    let notice =
        if form.listed { "Your live keys are listed in the key directory." } else { "Your keys are no longer listed." };
    keys_page(&state, &person.0, Some(notice.into())).await
}

pub async fn keys(State(state): State<Region>, person: CompanyPerson) -> PageResult {
    keys_page(&state, &person.0, None).await
}

#[derive(Deserialize)]
pub struct GroupForm {
    csrf: Option<String>,
    name: String,
}

pub async fn add_group(State(state): State<Region>, person: CompanyPerson, Form(form): Form<GroupForm>) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let group = company::add_group(&state, &person.0, &form.name).await?;
    keys_page(&state, &person.0, Some(format!("Made the group {}.", group.name))).await
}

#[derive(Deserialize)]
pub struct KeyForm {
    csrf: Option<String>,
    jwk: String,
}

pub async fn register_key(
    State(state): State<Region>,
    person: CompanyPerson,
    Path(group_id): Path<String>,
    Form(form): Form<KeyForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let registered = company::register_key(&state, &person.0, &group_id, &form.jwk).await?;
    let mut notice = format!("Registered retrieval key {}.", registered.key.key_id);
    if let (Some(grant), Some(token)) = (&registered.key.grant, &registered.sandbox_bearer_token) {
        notice.push_str(&format!(
            " Sandbox grant (its first request carries it in SVC-Sandbox-Key): {grant}; bearer token for the first \
             hour, shown once: {token}"
        ));
    }
    keys_page(&state, &person.0, Some(notice)).await
}

pub async fn revoke_key(
    State(state): State<Region>,
    person: CompanyPerson,
    Path(key_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    company::revoke_key(&state, &person.0, &key_id).await?;
    Ok(Redirect::to("/portal/company/keys").into_response())
}

async fn terms_page(state: &Region, me: &Signed, notice: Option<String>) -> PageResult {
    let status = company::terms(state, me)?;
    // The version in force, accepted already: nothing left to accept.
    let current = match (&status.in_force, &status.accepted) {
        (Some(t), Some(a)) => t.version == a.version && t.sha256 == a.sha256,
        _ => false,
    };
    Ok(html(&pages::Terms {
        nav: Nav::of(state, me)?,
        csrf: me.csrf.clone(),
        current,
        in_force: status.in_force.map(|t| (t.version, t.sha256, When::at(t.effective_from), t.text)),
        accepted: status.accepted.map(|a| (a.version, a.sha256, When::at(a.accepted_at))),
        acceptor: DECIDERS.contains(&me.role),
        verified: status.verified,
        sandbox: status.sandbox,
        notice,
    }))
}

pub async fn terms(State(state): State<Region>, person: CompanyPerson) -> PageResult {
    terms_page(&state, &person.0, None).await
}

#[derive(Deserialize)]
pub struct AcceptForm {
    csrf: Option<String>,
    version: u64,
    sha256: String,
}

pub async fn accept_terms(
    State(state): State<Region>,
    person: CompanyPerson,
    Form(form): Form<AcceptForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    company::accept_terms(&state, &person.0, form.version, &form.sha256).await?;
    terms_page(&state, &person.0, Some(format!("The company accepted Terms version {}.", form.version))).await
}

/// Which group's receipts, from when to when (a day, or RFC 3339), from where.
#[derive(Deserialize)]
pub struct ReceiptsForm {
    group: Option<String>,
    from: Option<String>,
    to: Option<String>,
    cursor: Option<String>,
}

impl ReceiptsForm {
    fn query(&self) -> ReceiptsQuery {
        let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        // A day the date picker gave is the whole of that day, in UTC.
        let day = |v: Option<String>, time: &str| {
            v.map(|text| match format!("{text}T{time}Z") {
                whole if text.len() == 10 && svc_core::time::UnixMs::parse_rfc3339(&whole).is_some() => whole,
                _ => text,
            })
        };
        ReceiptsQuery {
            from: day(given(&self.from), "00:00:00"),
            to: day(given(&self.to), "23:59:59"),
            key_id: None,
            ai_company_uuid: None,
            cursor: given(&self.cursor),
        }
    }
}

pub async fn receipts(
    State(state): State<Region>,
    person: CompanyPerson,
    Query(form): Query<ReceiptsForm>,
) -> PageResult {
    let me = &person.0;
    let groups = company::groups(&state, me)?;
    let group = form.group.clone().or_else(|| groups.first().map(|g| g.group.group_id.clone()));
    let none = || serde_json::json!({"receipts": [], "next_cursor": null});
    // A refused filter is shown again as typed, with the reason above it.
    let (page, refusal) = match &group {
        Some(g) => match company::receipts(&state, me, g, form.query()) {
            Ok(page) => (page, None),
            Err(e) => (none(), Some(Refusal::of("receipts", e, Vec::new())?)),
        },
        None => (none(), None),
    };
    let rows = page["receipts"].as_array().into_iter().flatten().map(receipt_row).collect();
    let link = |cursor: &str| {
        let mut query = vec![("group", group.clone().unwrap_or_default()), ("cursor", cursor.to_owned())];
        query.extend(form.from.clone().map(|f| ("from", f)));
        query.extend(form.to.clone().map(|t| ("to", t)));
        serde_urlencoded::to_string(query).unwrap_or_default()
    };
    let page = pages::Receipts {
        nav: Nav::of(&state, me)?,
        groups: groups
            .iter()
            .map(|g| (g.group.group_id.clone(), g.group.name.clone(), Some(&g.group.group_id) == group.as_ref()))
            .collect(),
        from: form.from.clone().unwrap_or_default(),
        to: form.to.clone().unwrap_or_default(),
        rows,
        next: page["next_cursor"].as_str().map(link),
        download: group.as_ref().filter(|_| refusal.is_none()).map(|_| link("")),
        refusal,
    };
    Ok(html_refused(&page, page.refusal.as_ref()))
}

fn receipt_row(entry: &Value) -> pages::ReceiptRow {
    let payload = entry["receipt"]["payload"]
        .as_str()
        .and_then(svc_core::b64::std_decode)
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .unwrap_or(Value::Null);
    pages::ReceiptRow {
        served_at: entry["served_at"].as_str().and_then(When::parse),
        kind: entry["kind"].as_str().unwrap_or_default().to_owned(),
        retrieval_id: entry["retrieval_id"].as_str().unwrap_or_default().to_owned(),
        key_id: entry["caller_key_id"].as_str().unwrap_or_default().to_owned(),
        rows: payload["rows"].as_array().map_or(0, Vec::len),
    }
}

/// The most receipts one download holds; past it, the last line says where
/// to go on from.
pub const DOWNLOAD_MAX: usize = 100_000;

/// The group's receipts in the range as JSON Lines, one entry of
/// `GET /v1/receipts` a line (each receipt a signed envelope to check
/// offline), streamed a page at a time.
pub async fn download(
    State(state): State<Region>,
    person: CompanyPerson,
    Query(form): Query<ReceiptsForm>,
) -> PageResult {
    let me = person.0;
    let group = form.group.clone().unwrap_or_default();
    // The first page now, so a bad group or range is refused as a page.
    let first = company::receipts(&state, &me, &group, form.query())?;
    let name = format!("svc-receipts-{group}.jsonl");
    let pages = futures::stream::unfold((Some(first), 0usize), move |(page, sent)| {
        let (state, me, group, form_from, form_to) =
            (state.clone(), me.clone(), group.clone(), form.from.clone(), form.to.clone());
        async move {
            let page = page?;
            let entries = page["receipts"].as_array().cloned().unwrap_or_default();
            let mut chunk = Vec::new();
            for entry in &entries {
                serde_json::to_writer(&mut chunk, entry).ok()?;
                chunk.push(b'\n');
            }
            let sent = sent + entries.len();
            let cursor = page["next_cursor"].as_str().map(str::to_owned);
            let next = match cursor {
                Some(c) if sent >= DOWNLOAD_MAX => {
                    chunk.extend_from_slice(serde_json::json!({"more_from_cursor": c}).to_string().as_bytes());
                    chunk.push(b'\n');
                    None
                }
                Some(c) => {
                    let q = ReceiptsQuery {
                        from: form_from,
                        to: form_to,
                        key_id: None,
                        ai_company_uuid: None,
                        cursor: Some(c),
                    };
                    match company::receipts(&state, &me, &group, q) {
                        Ok(next) => Some(next),
                        // The file ends with the error, not silently short.
                        Err(e) => {
                            chunk.extend_from_slice(serde_json::json!({"error": e.to_string()}).to_string().as_bytes());
                            chunk.push(b'\n');
                            None
                        }
                    }
                }
                None => None,
            };
            Some((Ok::<_, std::io::Error>(chunk), (next, sent)))
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/jsonl".to_owned()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        Body::from_stream(pages),
    )
        .into_response())
}
