//! The records pages: the catalogue by type, the editor of each collection
//! (a new record, or a live one to change), the AI policy, and sealing: a
//! review page shows the exact bytes and the passkey signs them.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use svc_core::ai_policy::{ACTION_FLAGS, BLOCKED_CONTEXTS, USE_FLAGS};
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_core::records::RecordError;
use svc_core::records::editor;
use svc_core::records::labels::Lang;

use super::pages::{
    self, Confirmation, EditorPiece, EditorWords, ErrorLink, FieldError, Flag, FlagGroup, Nav, RecordGroup, RecordRow,
    When,
};
use super::session::Person;
use super::session::Speaks;
use super::{Done, PageResult, html};
use crate::api::body::JsonBody;
use svc_node::region::Region;
use svc_node::service::portal::saves::{self, Assertion, Finished};
use svc_node::service::portal::{SEALERS, records};
use svc_node::service::publishing::saves::{Saved, ai_policy_versions, judge_record};
use svc_node::service::{Error, Result};
use svc_store::model::RecordState;

/// How each collection is named on the page.
fn titles(kind: RecordType) -> (&'static str, &'static str) {
    match kind {
        RecordType::Products => ("Products", "product"),
        RecordType::BusinessFiles => ("Business file", "business file"),
        RecordType::Events => ("Events", "event"),
        RecordType::Jobs => ("Jobs", "job"),
        RecordType::Updates => ("Updates", "update"),
        RecordType::Ads => ("Ads", "ad"),
        RecordType::AiPolicy => ("", ""),
    }
}

/// What the portal edits: the five collections, and ads (shown in pools).
const EDITED: [RecordType; 6] = [
    RecordType::Products,
    RecordType::BusinessFiles,
    RecordType::Events,
    RecordType::Jobs,
    RecordType::Updates,
    RecordType::Ads,
];

fn collection(name: &str) -> Result<RecordType> {
    RecordType::from_name(name)
        .filter(|t| EDITED.contains(t))
        .ok_or_else(|| Error::detail(Code::NotFound, "no such collection"))
}

/// The business's records by collection, each with what a person may do.
pub fn catalogue(state: &Region, person: &Person) -> PageResult {
    let state = state.clone();
    let signed = &person.0;
    let mut groups = Vec::new();
    for kind in EDITED {
        let (title, singular) = titles(kind);
        let rows = records::list(&state, signed, kind)?
            .into_iter()
            .map(|r| RecordRow {
                live: r.state == RecordState::Live,
                withdrawn: r.state == RecordState::Withdrawn,
                state: format!("{:?}", r.state).to_lowercase(),
                record_id: r.record_id,
                own_id: r.own_id,
                source: r.source.as_str(),
                last_updated: When::parse(&r.last_updated),
            })
            .collect();
        groups.push(RecordGroup { kind: kind.name(), title, singular, rows });
    }
    Ok(html(&pages::Records {
        nav: Nav::of(&state, signed)?,
        csrf: signed.csrf.clone(),
        groups,
        sealer: SEALERS.contains(&signed.role),
    }))
}

/// The editor of `kind` with `values`, each reason beside the input its
/// pointer names and all of them listed above the form, linked.
fn editor_page(
    state: &Region,
    person: &Person,
    kind: RecordType,
    values: &[(String, String)],
    errors: &[RecordError],
    lang: Lang,
) -> PageResult {
    let signed = &person.0;
    let pieces = editor::layout(kind, values, lang);
    let asks_zone = pieces.iter().any(|p| matches!(p.widget, "moment" | "zone"));
    let reason = |e: &RecordError| FieldError { message: editor::plain_reason(kind, e, lang), code: e.code.as_str() };
    let links = errors
        .iter()
        .map(|e| {
            // The nearest input or group the pointer falls in.
            let owner = pieces
                .iter()
                .filter(|p| {
                    p.widget != "close" && (e.pointer == p.pointer || e.pointer.starts_with(&format!("{}/", p.pointer)))
                })
                .max_by_key(|p| p.pointer.len());
            ErrorLink {
                id: owner.map_or_else(|| "f-top".to_owned(), |p| p.id.clone()),
                label: editor::pointer_label(kind, &e.pointer, lang),
                message: editor::plain_reason(kind, e, lang),
                code: e.code.as_str(),
                pointer: e.pointer.clone(),
            }
        })
        .collect();
    let pieces = pieces
        .into_iter()
        .map(|piece| {
            let error = (piece.widget != "close")
                .then(|| errors.iter().find(|e| e.pointer == piece.pointer))
                .flatten()
                .map(reason);
            EditorPiece { piece, error }
        })
        .collect();
    let (_, singular) = titles(kind);
    Ok(html(&pages::Editor {
        nav: Nav::of(state, signed)?,
        heading: format!("Save {singular}"),
        action: format!("/portal/records/new/{}", kind.name()),
        csrf: signed.csrf.clone(),
        lang: lang.code(),
        words: EditorWords::of(lang),
        pieces,
        errors: links,
        zones: if asks_zone { editor::time_zones() } else { Vec::new() },
    }))
}

pub async fn new_record(
    State(state): State<Region>,
    person: Person,
    Speaks(lang): Speaks,
    Path(kind): Path<String>,
) -> PageResult {
    person.0.require(SEALERS, "saving a record")?;
    editor_page(&state, &person, collection(&kind)?, &[], &[], lang)
}

pub async fn edit(
    State(state): State<Region>,
    person: Person,
    Speaks(lang): Speaks,
    Path(record_id): Path<String>,
) -> PageResult {
    person.0.require(SEALERS, "saving a record")?;
    let (kind, bytes) = records::live_bytes(&state, &person.0, &record_id)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(Error::internal)?;
    editor_page(&state, &person, kind, &editor::form_values(kind, &value), &[], lang)
}

fn csrf_of(form: &[(String, String)]) -> Option<&str> {
    form.iter().find(|(n, _)| n == "csrf").map(|(_, v)| v.as_str())
}

/// The form's record judged as a push would be; when it holds, the review
/// page asks the passkey to seal it.
pub async fn review(
    State(state): State<Region>,
    person: Person,
    Speaks(lang): Speaks,
    Path(kind): Path<String>,
    axum::Form(form): axum::Form<Vec<(String, String)>>,
) -> PageResult {
    person.check_csrf(csrf_of(&form))?;
    person.0.require(SEALERS, "saving a record")?;
    let kind = collection(&kind)?;
    // A row added or taken out, or back from the review page: the editor
    // again, with what was typed.
    if let Some(change) = editor::RowChange::of(&form) {
        return editor_page(&state, &person, kind, &change.apply(kind, &form), &[], lang);
    }
    if pages::is_back(&form) {
        return editor_page(&state, &person, kind, &form, &[], lang);
    }
    // A refusal's pointers name the rows the form shows again, tidied.
    let bytes = match editor::record_from_form(kind, &form) {
        Ok(bytes) => bytes,
        Err(errors) => return editor_page(&state, &person, kind, &editor::tidy(kind, &form), &errors, lang),
    };
    let errors = judge_record(&state, &person.0.account_uuid, kind, &bytes)?;
    if !errors.is_empty() {
        return editor_page(&state, &person, kind, &editor::tidy(kind, &form), &errors, lang);
    }
    let summary = summary_of(&state, &person, kind, &bytes, lang);
    let back = Back::form(format!("/portal/records/new/{}", kind.name()), &form);
    seal_page(&state, &person, kind, bytes, summary, back).await
}

/// What a record's review page says above its bytes: each member as the
/// editor shows it, and what changed from the live version on an edit.
fn summary_of(state: &Region, person: &Person, kind: RecordType, bytes: &[u8], lang: Lang) -> Option<pages::Summary> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let live = editor::own_id_member(kind)
        .and_then(|member| value.get(member)?.as_str())
        .map(|own| svc_core::ids::record_id(kind, &person.0.account_uuid, own))
        .and_then(|record_id| records::live_bytes(state, &person.0, &record_id).ok())
        .and_then(|(_, live)| serde_json::from_slice::<serde_json::Value>(&live).ok());
    Some(pages::Summary {
        name: editor::record_name(kind, &value).unwrap_or_default(),
        rows: editor::shown(kind, &value, lang).into_iter().map(|(_, label, text)| (label, text)).collect(),
        changes: live.map(|live| editor::changes(kind, &live, &value, lang)),
    })
}

async fn seal_page(
    state: &Region,
    person: &Person,
    kind: RecordType,
    bytes: Vec<u8>,
    summary: Option<pages::Summary>,
    back: Back,
) -> PageResult {
    let shown = bytes.clone();
    let prepared = saves::prepare(state, &person.0, kind, bytes).await?;
    let what = match &summary {
        Some(summary) if !summary.name.is_empty() => format!("the {} {}", titles(kind).1, summary.name),
        _ => kind.name().to_owned(),
    };
    review_page(state, person, (&what, "publish"), &shown, prepared, summary, back)
}

/// The review page: the exact bytes the passkey is about to seal.
/// What sealing with `verb` does, said after what is sealed.
fn explanation(verb: &str) -> &'static str {
    match verb {
        "authorise" => ": the key may publish within it until it ends or is revoked",
        "release" => ": the held records are published as they were sealed",
        "discard" => ": the held records stay unpublished and the push ends",
        "withdraw" => ": the record leaves serving in every region",
        "delete" => ": the record leaves serving in every region, and its bytes are purged (its fingerprints stay)",
        HOSTED_ON => ": the service makes a key for your business and signs each save a person confirms",
        HOSTED_OFF => ": the service's key for your business is revoked and its secret destroyed",
        "start" => ": the campaign places its records once the operator funds it, within its budget",
        _ => "",
    }
}

pub(super) const HOSTED_ON: &str = "turn on hosted signing";
pub(super) const HOSTED_OFF: &str = "turn off hosted signing";

/// The review page: the exact bytes and the passkey's ceremony. A record's
/// save may instead be confirmed for the service to sign, while hosted
/// signing is on.
/// Where a review page's *Back* leads: the form as it was typed (its
/// address and values, posted again with `back=1`), or a page.
pub(super) enum Back {
    Form(String, Vec<(String, String)>),
    Page(String),
}

impl Back {
    /// The form at `action` as typed (without its CSRF token).
    pub(super) fn form(action: impl Into<String>, values: &[(String, String)]) -> Back {
        Back::Form(action.into(), pages::typed_values(values.to_vec()))
    }
}

/// The page where a person reviews what their passkey will seal: `what`
/// is sealed, and sealing does `verb` (`publish`, `authorise`, …).
pub(super) fn review_page(
    state: &Region,
    person: &Person,
    (what, verb): (&str, &'static str),
    bytes: &[u8],
    prepared: saves::Prepared,
    summary: Option<pages::Summary>,
    back: Back,
) -> PageResult {
    // A withdrawal or deletion is always the passkey's (a step-up, never
    // the session alone).
    let hosted = verb == "publish" && svc_node::service::portal::hosted::held(state, &person.0.account_uuid)?.is_some();
    let hash = svc_core::digest::sha256_prefixed(bytes);
    let size = bytes.len();
    Ok(html(&pages::Seal {
        nav: Nav::of(state, &person.0)?,
        verb,
        record_type: what.to_owned(),
        size,
        hash,
        pieces: editor::member_pieces(bytes),
        said: summary.as_ref().map_or_else(|| pages::document_said(bytes), |s| s.rows.clone()),
        summary,
        back_form: match &back {
            Back::Form(action, values) => Some((action.clone(), values.clone())),
            Back::Page(_) => None,
        },
        back_page: match back {
            Back::Page(href) => Some(href),
            Back::Form(..) => None,
        },
        payload: String::from_utf8_lossy(&prepared.payload).into_owned(),
        ceremony_id: prepared.ceremony_id,
        csrf: person.0.csrf.clone(),
        options: prepared.options.to_string(),
        explain: explanation(verb),
        hosted,
    }))
}

const USE_PREFIX: &str = "use.";
const ACTION_PREFIX: &str = "action.";
const BLOCKED_PREFIX: &str = "blocked.";

pub async fn ai_policy(State(state): State<Region>, person: Person, Query(done): Query<Done>) -> PageResult {
    ai_policy_page(&state, &person, &done, None)
}

/// The AI policy's flags: as in force, or as the person ticked them
/// (`typed`, back from the review page).
fn ai_policy_page(state: &Region, person: &Person, done: &Done, typed: Option<&[(String, String)]>) -> PageResult {
    let signed = &person.0;
    let (current, next) = ai_policy_versions(state, &signed.account_uuid, state.clock.now())?;
    let confirmation = (done.is("sealed") && current > 0)
        .then(|| Confirmation::new(format!("AI policy version {current} sealed: AI companies read it from now on")));
    let in_force = svc_node::service::portal::saves::ai_policy_in_force(state, signed)?;
    let bit = |mask: Option<u64>, i: usize| mask.is_some_and(|m| m & (1 << i) != 0);
    let group = |title, prefix, flags: Vec<(&'static str, &'static str)>, mask: Option<u64>| FlagGroup {
        title,
        prefix,
        flags: flags
            .into_iter()
            .enumerate()
            .map(|(i, (name, meaning))| Flag {
                name,
                meaning,
                checked: match typed {
                    Some(values) => values.iter().any(|(n, v)| n.strip_prefix(prefix) == Some(name) && v == "on"),
                    None => bit(mask, i),
                },
            })
            .collect(),
    };
    let groups = vec![
        group("Use", USE_PREFIX, USE_FLAGS.iter().map(|f| (f.0, f.1)).collect(), in_force.as_ref().map(|p| p.use_mask)),
        group(
            "Actions",
            ACTION_PREFIX,
            ACTION_FLAGS.iter().map(|f| (f.0, f.1)).collect(),
            in_force.as_ref().map(|p| p.action),
        ),
        group(
            "Blocked contexts (never shown beside)",
            BLOCKED_PREFIX,
            BLOCKED_CONTEXTS.iter().map(|c| (c.1, c.2)).collect(),
            in_force.as_ref().map(|p| p.blocked),
        ),
    ];
    Ok(html(&pages::AiPolicy {
        nav: Nav::confirming(state, signed, confirmation)?,
        csrf: signed.csrf.clone(),
        current,
        next,
        groups,
        sealer: SEALERS.contains(&signed.role),
    }))
}

pub async fn review_ai_policy(
    State(state): State<Region>,
    person: Person,
    axum::Form(form): axum::Form<Vec<(String, String)>>,
) -> PageResult {
    person.check_csrf(csrf_of(&form))?;
    person.0.require(SEALERS, "sealing the AI policy")?;
    let chosen = |prefix: &str| -> Vec<&str> {
        form.iter().filter(|(_, v)| v == "on").filter_map(|(n, _)| n.strip_prefix(prefix)).collect()
    };
    // Back from the review page: the flags as they were ticked.
    if pages::is_back(&form) {
        return ai_policy_page(&state, &person, &Done::default(), Some(&form));
    }
    let bytes = svc_core::ai_policy::record_bytes(&chosen(USE_PREFIX), &chosen(ACTION_PREFIX), &chosen(BLOCKED_PREFIX));
    let back = Back::form("/portal/ai-policy", &form);
    seal_page(&state, &person, RecordType::AiPolicy, bytes, None, back).await
}

/// The passkey's answer to a review page: the save is published, or refused
/// with every reason (an RFC 9457 problem the script shows).
pub async fn seal(
    State(state): State<Region>,
    person: Person,
    headers: HeaderMap,
    Path(ceremony_id): Path<String>,
    JsonBody(answer): JsonBody<Assertion>,
) -> Result<Response> {
    person.check_csrf_header(&headers)?;
    let finished = saves::finish(&state, &person.0, &ceremony_id, &answer).await?;
    Ok(Json(json!({"next": next_page(finished)?})).into_response())
}

/// A person's confirmation of a save the service signs (hosted signing):
/// a plain form, so the answer is the page the save leads to.
pub async fn confirm(
    State(state): State<Region>,
    person: Person,
    Path(ceremony_id): Path<String>,
    axum::Form(form): axum::Form<super::session::CsrfForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let finished = saves::confirm_hosted(&state, &person.0, &ceremony_id).await?;
    Ok(axum::response::Redirect::to(&next_page(finished)?).into_response())
}

/// Where a finished save leads; a rejected record is refused with every
/// reason.
fn next_page(finished: Finished) -> Result<String> {
    Ok(match finished {
        Finished::Record(Saved::Published { record_id, .. }) => format!("/portal/records/{record_id}?done=published"),
        Finished::Record(Saved::Rejected(errors)) => {
            let reasons: Vec<String> =
                errors.iter().map(|e| format!("{} {} {}", e.code, e.pointer, e.detail)).collect();
            return Err(Error::detail(Code::RequestInvalid, format!("not published: {}", reasons.join("; "))));
        }
        Finished::AiPolicy(_) => "/portal/ai-policy?done=sealed".into(),
        Finished::Mandate(mandate) => format!("/portal/keys?done=mandate&id={}", mandate.mandate_id),
        Finished::Released(push) => format!("/portal/pushes?done=decided&id={}", push.push_id),
        Finished::Custody(on) => format!("/portal/signing?done={}", if on { "hosted-on" } else { "hosted-off" }),
        Finished::Campaign(campaign) => format!("/portal/campaigns?done=created&id={}", campaign.campaign_id),
        Finished::Ended(ended) => {
            let done = if ended["action"] == "delete" { "deleted" } else { "withdrawn" };
            format!("/portal/records/{}?done={done}", ended["record_id"].as_str().unwrap_or_default())
        }
    })
}

/// A record's live version as JSON, and the name a person knows it by
/// (its own id when it has none, or no live version).
fn named(shown: &records::Shown) -> (Option<serde_json::Value>, String) {
    let record: Option<serde_json::Value> = shown.bytes.as_deref().and_then(|b| serde_json::from_slice(b).ok());
    let name = record.as_ref().and_then(|r| editor::record_name(shown.record_type, r));
    (record, name.unwrap_or_else(|| shown.own_id.clone()))
}

/// A record's page: its name, its facts, its content member by member, and
/// what may be done with it; after a save, what the save did.
pub async fn show(
    State(state): State<Region>,
    person: Person,
    Speaks(lang): Speaks,
    Path(record_id): Path<String>,
    Query(done): Query<Done>,
) -> PageResult {
    let shown = records::show(&state, &person.0, &record_id)?;
    let kind = shown.record_type;
    let (record, name) = named(&shown);
    let verify = shown.sha256.as_ref().map(|sha| format!("/v1/verify/{}?origin={sha}&format=html", shown.record_id));
    let state_name = format!("{:?}", shown.state).to_lowercase();
    // Said only when the record is as the action left it.
    let confirmation = match (done.done.as_deref(), shown.state) {
        (Some("published"), RecordState::Live) => {
            let said = Confirmation::new(format!("Published {name} (version {})", shown.version));
            Some(match &verify {
                Some(href) => said.with_link(href, "Check it as anyone would"),
                None => said,
            })
        }
        (Some("withdrawn"), RecordState::Withdrawn) => {
            Some(Confirmation::new(format!("Withdrawn {name}: no region serves it")))
        }
        (Some("deleted"), RecordState::Deleted) => {
            Some(Confirmation::new(format!("Deleted {name}: no region serves it, and its bytes are purged")))
        }
        _ => None,
    };
    let mut facts = vec![
        ("Record id", shown.record_id.clone()),
        ("Your id", shown.own_id.clone()),
        ("State", state_name),
        ("Version", shown.version.to_string()),
        ("Last updated", shown.last_updated),
    ];
    if let Some(sha256) = &shown.sha256 {
        facts.push(("SHA-256", sha256.clone()));
    }
    let live = shown.state == RecordState::Live;
    Ok(html(&pages::RecordPage {
        nav: Nav::confirming(&state, &person.0, confirmation)?,
        heading: name,
        kind: titles(kind).1,
        record_id: shown.record_id,
        facts,
        content: record
            .map(|r| editor::shown(kind, &r, lang).into_iter().map(|(_, label, text)| (label, text)).collect())
            .unwrap_or_default(),
        verify,
        editable: live && EDITED.contains(&kind) && SEALERS.contains(&person.0.role),
    }))
}

#[derive(serde::Deserialize)]
pub struct EndForm {
    csrf: Option<String>,
    action: String,
}

/// Withdraw or delete: the review page shows the document the passkey seals.
pub async fn end(
    State(state): State<Region>,
    person: Person,
    Path(record_id): Path<String>,
    axum::Form(form): axum::Form<EndForm>,
) -> PageResult {
    person.check_csrf(form.csrf.as_deref())?;
    let delete = match form.action.as_str() {
        "withdraw" => false,
        "delete" => true,
        _ => return Err(Error::detail(Code::RequestInvalid, "the action is withdraw or delete").into()),
    };
    let shown = records::show(&state, &person.0, &record_id)?;
    let (_, name) = named(&shown);
    let (prepared, document) = saves::prepare_end(&state, &person.0, &record_id, delete).await?;
    let verb = if delete { "delete" } else { "withdraw" };
    let what = format!("a {verb} document for the {} {name} ({record_id})", titles(shown.record_type).1);
    let back = Back::Page(format!("/portal/records/{record_id}"));
    review_page(&state, &person, (&what, verb), &document, prepared, None, back)
}

/// The analytics page: the 30 days to `as_at` as bars (a day without
/// counts is an empty bar), and the asking groups.
pub async fn analytics(State(state): State<Region>, person: Person) -> PageResult {
    let records::Figures { as_at, days, groups, ads } = records::analytics(&state, &person.0)?;
    let end = svc_core::time::UnixMs::parse_rfc3339(&as_at).unwrap_or(state.clock.now());
    let window: Vec<(String, u64, u64)> = (0..30)
        .rev()
        .map(|back| {
            let date =
                svc_core::time::UnixMs(end.0 - 1 - back * svc_core::time::DAY).to_rfc3339_secs()[..10].to_owned();
            let (searches, fetches) = days.iter().find(|(d, _, _)| *d == date).map_or((0, 0), |(_, s, f)| (*s, *f));
            (date, searches, fetches)
        })
        .collect();
    Ok(html(&pages::Analytics {
        nav: Nav::of(&state, &person.0)?,
        as_at,
        searches: window.iter().map(|d| d.1).sum(),
        fetches: window.iter().map(|d| d.2).sum(),
        daily: super::chart::daily_bars(&window),
        groups_empty: groups.is_empty(),
        groups: super::chart::group_bars(&groups),
        ad_totals: (
            ads.iter().map(|d| d.1).sum(),
            ads.iter().map(|d| d.2).sum(),
            svc_core::ads::Micros(ads.iter().map(|d| d.3.0).sum()).to_decimal(),
        ),
        ad_days: ads.into_iter().map(|(date, r, c, spend)| (date, r, c, spend.to_decimal())).collect(),
    }))
}
