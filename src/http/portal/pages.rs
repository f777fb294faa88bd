//! The portal's pages: one template struct per page (`templates/portal/`),
//! escaped by askama, and the two static assets.

use askama::Template;
use axum::http::header;
use axum::response::IntoResponse;
use svc_core::records::editor;
use svc_core::records::labels::Lang;
use svc_core::time::UnixMs;

use svc_node::region::Region;
use svc_node::service::portal::Signed;
use svc_node::service::{Error, Result};

/// The header of a signed-in page.
pub struct Nav {
    pub person: String,
    pub role: &'static str,
    /// The business's or the AI company's name.
    pub account: String,
    pub csrf: String,
    /// Pushes that finished, or were held, since the person last dismissed
    /// the notices: `(push_id, what happened)`.
    pub notices: Vec<(String, String)>,
    /// The AI-company portal's pages, not the business portal's.
    pub company: bool,
    /// What the person just did, said once on the page it led to.
    pub confirmation: Option<Confirmation>,
}

/// A finished action, as its page says it: the words, and a link to follow.
pub struct Confirmation {
    pub text: String,
    /// `(href, label)`.
    pub link: Option<(String, String)>,
}

impl Confirmation {
    pub fn new(text: impl Into<String>) -> Confirmation {
        Confirmation { text: text.into(), link: None }
    }

    pub fn with_link(mut self, href: impl Into<String>, label: impl Into<String>) -> Confirmation {
        self.link = Some((href.into(), label.into()));
        self
    }
}

impl Nav {
    pub fn of(state: &Region, signed: &Signed) -> Result<Option<Nav>> {
        use svc_store::model::Named;
        let account = svc_node::service::portal::people::Account::of(state, &signed.account_uuid)?;
        // Notices are of pushes: an AI company's pages have none.
        let pushes =
            if signed.company { Vec::new() } else { svc_node::service::portal::pushes::notices(state, signed)? };
        let notices = pushes
            .into_iter()
            .map(|p| {
                let what = format!(
                    "{} push of {} records {}: {}",
                    p.record_type.name(),
                    p.records,
                    p.state.name(),
                    counts(&p)
                );
                (p.push_id, what)
            })
            .collect();
        Ok(Some(Nav {
            person: signed.name.clone(),
            role: signed.role.as_str(),
            account: account.name,
            csrf: signed.csrf.clone(),
            notices,
            company: signed.company,
            confirmation: None,
        }))
    }

    /// The page's nav, saying `confirmation` above the page.
    pub fn confirming(state: &Region, signed: &Signed, confirmation: Option<Confirmation>) -> Result<Option<Nav>> {
        let mut nav = Nav::of(state, signed)?;
        if let Some(nav) = &mut nav {
            nav.confirmation = confirmation;
        }
        Ok(nav)
    }
}

/// A push's outcomes in words.
pub fn counts(push: &svc_store::model::PushRecord) -> String {
    let [accepted, updated, rejected, held, pending] = push.counts;
    format!("{accepted} accepted, {updated} updated, {rejected} rejected, {held} held, {pending} pending")
}

#[derive(Template)]
#[template(path = "portal/problem.html")]
pub struct Problem {
    pub nav: Option<Nav>,
    pub title: String,
    pub detail: String,
    pub code: String,
    pub back: String,
}

#[derive(Template)]
#[template(path = "portal/sign_in.html")]
pub struct SignIn {
    pub nav: Option<Nav>,
}

#[derive(Template)]
#[template(path = "portal/invitation.html")]
pub struct Invitation {
    pub nav: Option<Nav>,
    /// The account's name: a business, or an AI company.
    pub business: String,
    /// An AI company's invitation: its passkey signs in and seals nothing.
    pub company: bool,
    pub role: &'static str,
    pub email: String,
    pub expires_at: String,
    pub path: String,
}

pub struct RecordRow {
    pub record_id: String,
    pub own_id: String,
    pub state: String,
    pub source: &'static str,
    pub last_updated: Option<When>,
    pub live: bool,
    pub withdrawn: bool,
}

pub struct RecordGroup {
    pub kind: &'static str,
    pub title: &'static str,
    pub singular: &'static str,
    pub rows: Vec<RecordRow>,
}

#[derive(Template)]
#[template(path = "portal/records.html")]
pub struct Records {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub groups: Vec<RecordGroup>,
    pub sealer: bool,
}

/// A sealed document's members in words, for a review page without an
/// editor's summary (a mandate, a campaign, the AI policy, a withdrawal):
/// each top-level member labelled from its name (`record_types` is
/// "Record types"), a list on one line, an object as `name: value` pairs.
pub fn document_said(bytes: &[u8]) -> Vec<(String, String)> {
    fn label(name: &str) -> String {
        let words = name.replace('_', " ");
        let mut chars = words.chars();
        chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
    }
    fn text(value: &serde_json::Value) -> String {
        use serde_json::Value;
        match value {
            Value::String(s) => s.clone(),
            Value::Bool(true) => "Yes".into(),
            Value::Bool(false) => "No".into(),
            Value::Null => "none".into(),
            Value::Array(items) if items.is_empty() => "none".into(),
            Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(", "),
            Value::Object(members) => {
                members.iter().map(|(name, v)| format!("{}: {}", label(name), text(v))).collect::<Vec<_>>().join("; ")
            }
            number => number.to_string(),
        }
    }
    let Ok(serde_json::Value::Object(members)) = serde_json::from_slice(bytes) else { return Vec::new() };
    // `v`, the format's version, tells a person nothing.
    members.iter().filter(|(name, _)| *name != "v").map(|(name, value)| (label(name), text(value))).collect()
}

/// A moment shown to a person: the server writes it in UTC
/// (`30 Nov 2026, 14:05 UTC`) inside `<time datetime>`, and the portal's
/// script rewrites it in the browser's own time zone.
#[derive(Debug, Clone)]
pub struct When(UnixMs);

impl When {
    pub fn at(at: UnixMs) -> Self {
        When(at)
    }

    /// An RFC 3339 text from a use case; `None` if it is not one.
    pub fn parse(text: &str) -> Option<Self> {
        UnixMs::parse_rfc3339(text).map(When)
    }
}

impl std::fmt::Display for When {
    /// Markup (a template writes it with `|safe`): digits, month names and
    /// the ISO form only, nothing a person typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let iso = self.0.to_rfc3339_secs();
        let clock = iso.get(11..16).unwrap_or_default();
        write!(f, "<time datetime=\"{iso}\">{}, {clock} UTC</time>", self.0.to_day_month_year())
    }
}

/// A size as a person reads it: `1 GiB`, `512 KiB`, `300 bytes`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let (mut value, mut unit) = (bytes as f64 / 1024.0, 0);
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let shown = format!("{value:.1}");
    format!("{} {}", shown.strip_suffix(".0").unwrap_or(&shown), UNITS[unit])
}

/// A month `2026-11` as `November 2026`.
pub fn month(year_month: &str) -> String {
    const NAMES: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let named = year_month.split_once('-').and_then(|(year, m)| {
        let index = m.parse::<usize>().ok().filter(|m| (1..=12).contains(m))?;
        Some(format!("{} {year}", NAMES[index - 1]))
    });
    named.unwrap_or_else(|| year_month.to_owned())
}

/// A form the person sent and the service refused, or brought back from
/// its review page: its page is shown again with everything typed still in
/// it, and the reason beside the form if it was refused.
pub struct Refusal {
    /// Which form of the page (`add-key`, `mandate:<key id>`, `invite`, `campaign`).
    pub form: String,
    pub message: String,
    pub code: &'static str,
    pub status: u16,
    values: Vec<(String, String)>,
}

impl Refusal {
    /// The refusal of `form`, or the error itself when the fault is the
    /// service's (a `5xx`), which its problem page reports.
    pub fn of(form: impl Into<String>, error: Error, values: Vec<(String, String)>) -> Result<Refusal> {
        if error.code().status() >= 500 {
            return Err(error);
        }
        let problem = error.into_problem();
        Ok(Refusal {
            form: form.into(),
            message: problem.detail.unwrap_or_else(|| problem.title.clone()),
            code: problem.code.as_str(),
            status: problem.status,
            values: typed_values(values),
        })
    }

    /// `form` shown again as it was typed, back from its review page: no
    /// reason to give.
    pub fn back(form: impl Into<String>, values: Vec<(String, String)>) -> Refusal {
        Refusal { form: form.into(), message: String::new(), code: "", status: 200, values: typed_values(values) }
    }

    pub fn is(&self, form: &str) -> bool {
        self.form == form
    }

    /// Whether it was refused (rather than brought back to be changed).
    pub fn says(&self, form: &str) -> bool {
        self.is(form) && !self.message.is_empty()
    }
}

/// The field of a review page's form that asks for the form again, as typed.
pub const BACK: &str = "back";

/// Whether a form was posted back from its review page.
pub fn is_back(values: &[(String, String)]) -> bool {
    values.iter().any(|(name, _)| name == BACK)
}

/// What a person typed into a form: its values without the CSRF token and
/// the review page's [`BACK`] flag.
pub fn typed_values(values: Vec<(String, String)>) -> Vec<(String, String)> {
    values.into_iter().filter(|(name, _)| name != "csrf" && name != BACK).collect()
}

/// What a form's input shows: what the person typed into it when `form`
/// was refused, else `default`.
pub fn typed<'a>(refusal: &'a Option<Refusal>, form: &str, name: &str, default: &'a str) -> &'a str {
    match refusal {
        Some(r) if r.is(form) => r.values.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str()),
        _ => default,
    }
}

/// Whether a tick box of `form` is ticked: as the person left it when the
/// form was refused, else `default`.
pub fn ticked(refusal: &Option<Refusal>, form: &str, name: &str, value: &str, default: bool) -> bool {
    match refusal {
        Some(r) if r.is(form) => r.values.iter().any(|(n, v)| n == name && v == value),
        _ => default,
    }
}

/// One piece of the editor (a control, or a group's start or end) and
/// the reason, if any, its value was refused.
pub struct EditorPiece {
    pub piece: editor::Piece,
    pub error: Option<FieldError>,
}

/// A refusal in plain words, with the spec's code in small type.
pub struct FieldError {
    pub message: String,
    pub code: &'static str,
}

/// A reason listed above the form, linking to its input.
pub struct ErrorLink {
    pub id: String,
    pub label: String,
    pub message: String,
    pub code: &'static str,
    pub pointer: String,
}

/// The editor's own words, in the person's language.
pub struct EditorWords {
    pub intro: &'static str,
    pub problem: &'static str,
    pub review: &'static str,
    pub add: &'static str,
    pub remove: &'static str,
    pub zone: &'static str,
    pub error: &'static str,
}

impl EditorWords {
    pub fn of(lang: Lang) -> Self {
        match lang {
            Lang::En => EditorWords {
                intro: "Fill in what you know; fields marked * are needed. Nothing is published until you seal it on \
                        the next page.",
                problem: "The record cannot be published yet",
                review: "Review and seal",
                add: "Add another",
                remove: "Remove",
                zone: "Time zone",
                error: "Error:",
            },
            Lang::Fr => EditorWords {
                intro: "Remplissez ce que vous savez ; les champs marqués * sont requis. Rien n'est publié avant que \
                        vous ne le scelliez à la page suivante.",
                problem: "La fiche ne peut pas encore être publiée",
                review: "Relire et sceller",
                add: "Ajouter",
                remove: "Retirer",
                zone: "Fuseau horaire",
                error: "Erreur :",
            },
        }
    }
}

#[derive(Template)]
#[template(path = "portal/editor.html")]
pub struct Editor {
    pub nav: Option<Nav>,
    pub heading: String,
    pub action: String,
    pub csrf: String,
    pub lang: &'static str,
    pub words: EditorWords,
    pub pieces: Vec<EditorPiece>,
    pub errors: Vec<ErrorLink>,
    /// Time zone names the zone inputs suggest (none if no input asks).
    pub zones: Vec<String>,
}

pub struct Flag {
    pub name: &'static str,
    pub meaning: &'static str,
    pub checked: bool,
}

pub struct FlagGroup {
    pub title: &'static str,
    pub prefix: &'static str,
    pub flags: Vec<Flag>,
}

#[derive(Template)]
#[template(path = "portal/ai_policy.html")]
pub struct AiPolicy {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub current: u64,
    pub next: u64,
    pub groups: Vec<FlagGroup>,
    pub sealer: bool,
}

/// A record as its review page sums it up.
pub struct Summary {
    pub name: String,
    /// Each member in words: `(label, value)`.
    pub rows: Vec<(String, String)>,
    /// On an edit of a live record: `(label, live now, after sealing)`.
    pub changes: Option<Vec<(String, String, String)>>,
}

#[derive(Template)]
#[template(path = "portal/seal.html")]
pub struct Seal {
    pub nav: Option<Nav>,
    /// What sealing does: `publish`, `withdraw` or `delete`.
    pub verb: &'static str,
    /// What is sealed, named for the person ("the product Lampe Aurore").
    pub record_type: String,
    pub size: usize,
    pub hash: String,
    /// The exact bytes, cut between top-level members for display.
    pub pieces: Vec<String>,
    /// What the bytes say, member by member, above them: a record's as
    /// the editor words it, any other document's from its members' names.
    pub said: Vec<(String, String)>,
    /// A record's edit: what changed from the live version.
    pub summary: Option<Summary>,
    /// Where *Back* leads: the form as it was typed (posted again with
    /// `back=1`: where, and what), or a page.
    pub back_form: Option<(String, Vec<(String, String)>)>,
    pub back_page: Option<String>,
    pub payload: String,
    pub ceremony_id: String,
    pub csrf: String,
    pub options: String,
    /// What sealing does, after the record type.
    pub explain: &'static str,
    /// Whether the service may sign instead (hosted signing is on and this
    /// is a record's save, withdrawal or deletion).
    pub hosted: bool,
}

#[derive(Template)]
#[template(path = "portal/signing.html")]
pub struct Signing {
    pub nav: Option<Nav>,
    pub csrf: String,
    /// The hosted key and since when, while hosted signing is on.
    pub hosted: Option<(String, When)>,
    pub owner: bool,
    /// The business's custody statements, newest first:
    /// `(key_id, custody, effective_from)`.
    pub statements: Vec<(String, &'static str, When)>,
    pub notice: Option<String>,
}

#[derive(Template)]
#[template(path = "portal/record.html")]
pub struct RecordPage {
    pub nav: Option<Nav>,
    /// The record's name (its own id when it has none).
    pub heading: String,
    /// `product`, `event`, …
    pub kind: &'static str,
    pub record_id: String,
    pub facts: Vec<(&'static str, String)>,
    /// The live version's members, as the editor shows them.
    pub content: Vec<(String, String)>,
    /// The public verify page of the live version.
    pub verify: Option<String>,
    pub editable: bool,
}

pub struct PersonRow {
    pub person_id: String,
    pub name: String,
    pub email: String,
    pub role: &'static str,
    pub since: When,
    pub removed: bool,
    pub me: bool,
    /// Each role, and whether it is the person's.
    pub roles: Vec<(&'static str, bool)>,
}

#[derive(Template)]
#[template(path = "portal/people.html")]
pub struct People {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub people: Vec<PersonRow>,
    pub owner: bool,
    pub roles: Vec<&'static str>,
    /// An AI company's people (the page says what their roles may do).
    pub company: bool,
    pub invited: Option<String>,
    /// Invitations waiting for their person: `(id, e-mail, role, open until)`.
    pub invitations: Vec<(String, String, &'static str, String)>,
    pub refusal: Option<Refusal>,
}

impl People {
    fn typed<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        typed(&self.refusal, "invite", name, default)
    }
}

pub async fn script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("assets/portal.js"))
}

pub async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("assets/portal.css"))
}

pub async fn favicon() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml"), (header::CACHE_CONTROL, "public, max-age=86400")],
        include_str!("assets/favicon.svg"),
    )
}

pub struct MandateRow {
    pub mandate_id: String,
    /// Granted by the sandbox to a sandbox key, not sealed by the business.
    pub sandbox: bool,
    pub record_types: String,
    pub countries: String,
    pub caps: String,
    pub valid_until: String,
    pub revoked: Option<When>,
}

pub struct KeyRow {
    pub key_id: String,
    pub kind: &'static str,
    pub registered_at: When,
    pub revoked: Option<When>,
    pub mandates: Vec<MandateRow>,
}

#[derive(Template)]
#[template(path = "portal/keys.html")]
pub struct Keys {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub keys: Vec<KeyRow>,
    /// Each collection, and whether a new mandate offers it ticked.
    pub types: Vec<(&'static str, bool)>,
    pub keeper: bool,
    pub sealer: bool,
    pub notice: Option<String>,
    pub refusal: Option<Refusal>,
}

impl Keys {
    fn mandate_form(&self, key_id: &str) -> String {
        format!("mandate:{key_id}")
    }

    fn refused(&self, form: &str) -> bool {
        self.refusal.as_ref().is_some_and(|r| r.is(form))
    }

    /// Whether the refused form is on the page to say its reason beside
    /// (a person without the role is not offered it).
    fn refusal_shown_by_its_form(&self) -> bool {
        let live = |form: &str| self.keys.iter().any(|k| k.revoked.is_none() && self.mandate_form(&k.key_id) == form);
        self.refusal.as_ref().is_some_and(|r| (r.is("add-key") && self.keeper) || (self.sealer && live(&r.form)))
    }

    fn typed<'a>(&'a self, form: &str, name: &str, default: &'a str) -> &'a str {
        typed(&self.refusal, form, name, default)
    }

    fn ticked(&self, form: &str, name: &str, value: &str, default: &bool) -> bool {
        ticked(&self.refusal, form, name, value, *default)
    }
}

pub struct PushRow {
    pub push_id: String,
    pub record_type: &'static str,
    pub source: &'static str,
    pub state: &'static str,
    pub held: bool,
    pub held_reasons: String,
    pub records: u64,
    pub counts: String,
    pub received_at: When,
}

#[derive(Template)]
#[template(path = "portal/push.html")]
pub struct Push {
    pub nav: Option<Nav>,
    pub row: PushRow,
    /// `received_at`, `completed_at`, `progress` and `error`, as shown.
    pub facts: Vec<(&'static str, String)>,
    pub attempts: Vec<AttemptRow>,
    pub first: u64,
    pub next: Option<u64>,
}

pub struct AttemptRow {
    pub leaf_index: u64,
    pub business_product_id: String,
    pub product_name: String,
    pub outcome: &'static str,
    pub record_id: Option<String>,
    /// Each reason as `code pointer: detail`.
    pub reasons: Vec<String>,
}

#[derive(Template)]
#[template(path = "portal/pushes.html")]
pub struct Pushes {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub pushes: Vec<PushRow>,
    pub sealer: bool,
}

#[derive(Template)]
#[template(path = "portal/analytics.html")]
pub struct Analytics {
    pub nav: Option<Nav>,
    pub as_at: String,
    /// SVG drawn by `chart` (its text escaped there).
    pub daily: String,
    pub groups: String,
    pub groups_empty: bool,
    pub searches: u64,
    pub fetches: u64,
    /// Days with ad renders or clicks: date, renders, clicks, spend.
    pub ad_days: Vec<(String, u64, u64, String)>,
    pub ad_totals: (u64, u64, String),
}

#[derive(Template)]
#[template(path = "portal/company_home.html")]
pub struct CompanyHome {
    pub nav: Option<Nav>,
    /// Searches, fetches and billed requests in the last 30 days.
    pub totals: (u64, u64, u64),
    pub daily: String,
    pub monthly: String,
    /// `(month, searches, fetches, billed)`, newest first.
    pub bills: Vec<(String, u64, u64, u64)>,
    pub invoiced: bool,
    pub allowance: String,
    pub verified: bool,
    /// Why a production key would be refused now (production nodes only).
    pub production_refusal: Option<String>,
}

pub struct GroupRow {
    pub group_id: String,
    pub name: String,
    pub keys: Vec<RetrievalKeyRow>,
}

pub struct RetrievalKeyRow {
    pub key_id: String,
    pub environment: &'static str,
    pub registered_at: When,
    pub revoked: Option<When>,
}

#[derive(Template)]
#[template(path = "portal/retrieval_keys.html")]
pub struct RetrievalKeys {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub groups: Vec<GroupRow>,
    pub manager: bool,
    /// Whether the person decides the key directory listing.
    pub decider: bool,
    pub listed: bool,
    pub notice: Option<String>,
}

#[derive(Template)]
#[template(path = "portal/terms.html")]
pub struct Terms {
    pub nav: Option<Nav>,
    pub csrf: String,
    /// `(version, sha256, effective_from, text)`.
    pub in_force: Option<(u64, String, When, String)>,
    /// `(version, sha256, accepted_at)`.
    pub accepted: Option<(u64, String, When)>,
    /// The company accepted the version in force.
    pub current: bool,
    pub acceptor: bool,
    pub verified: bool,
    pub sandbox: bool,
    pub notice: Option<String>,
}

pub struct ReceiptRow {
    pub served_at: Option<When>,
    pub kind: String,
    pub retrieval_id: String,
    pub key_id: String,
    pub rows: usize,
}

#[derive(Template)]
#[template(path = "portal/receipts.html")]
pub struct Receipts {
    pub nav: Option<Nav>,
    /// `(group_id, name, selected)`.
    pub groups: Vec<(String, String, bool)>,
    pub from: String,
    pub to: String,
    pub rows: Vec<ReceiptRow>,
    /// The query of the next page, if there is one.
    pub next: Option<String>,
    /// The query of the download, when a group is chosen.
    pub download: Option<String>,
    pub refusal: Option<Refusal>,
}

pub struct CampaignRow {
    pub campaign_id: String,
    pub name: String,
    pub placement: &'static str,
    pub budget: String,
    pub funded: String,
    pub spent: String,
    pub left: String,
    pub net_price: String,
    pub keywords: String,
    pub countries: String,
    pub items: usize,
    pub state: &'static str,
    /// The state as the person reads it ("waiting for funding" while an
    /// active campaign is funded with nothing).
    pub shown: &'static str,
}

#[derive(Template)]
#[template(path = "portal/campaigns.html")]
pub struct Campaigns {
    pub nav: Option<Nav>,
    pub csrf: String,
    pub campaigns: Vec<CampaignRow>,
    /// The placement the form starts a campaign for (`sponsorship`, `promotion`, `ad`).
    pub placement: &'static str,
    /// Live records that placement may place: `(record_id, name and own id)`.
    pub placeable: Vec<(String, String)>,
    pub sealer: bool,
    pub refusal: Option<Refusal>,
}

impl Campaigns {
    fn typed<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        typed(&self.refusal, "campaign", name, default)
    }

    fn ticked(&self, name: &str, value: &str, default: bool) -> bool {
        ticked(&self.refusal, "campaign", name, value, default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_months_and_moments_read_as_a_person_reads_them() {
        let sizes: Vec<String> = [300, 1024, 1536, 1_073_741_824, 5 * 1024 * 1024].into_iter().map(size).collect();
        assert_eq!(sizes, ["300 bytes", "1 KiB", "1.5 KiB", "1 GiB", "5 MiB"]);
        assert_eq!((month("2026-11"), month("2027-01")), ("November 2026".into(), "January 2027".into()));
        assert_eq!(month("2026-13"), "2026-13", "what is not a month is shown as it is");
        let at = When::parse("2026-11-30T14:05:09Z").unwrap().to_string();
        assert_eq!(at, r#"<time datetime="2026-11-30T14:05:09Z">30 Nov 2026, 14:05 UTC</time>"#);
        assert!(When::parse("yesterday").is_none());
    }

    #[test]
    fn a_document_is_said_member_by_member_in_words() {
        let said = document_said(
            br#"{"countries":["FR","BE"],"flags":{"answer":true,"cite":false},"v":1,"valid_until":null}"#,
        );
        assert_eq!(
            said,
            [
                ("Countries".to_owned(), "FR, BE".to_owned()),
                ("Flags".to_owned(), "Answer: Yes; Cite: No".to_owned()),
                ("Valid until".to_owned(), "none".to_owned()),
            ]
        );
        assert!(document_said(b"not json").is_empty());
    }

    /// The mandate the sandbox grants a sandbox key is said to be the
    /// sandbox's, over every country, and offers no revoke of the
    /// business's own; a sealed one shows its id.
    #[test]
    fn the_sandbox_s_grant_is_labelled_as_the_sandbox_s_not_the_business_s() {
        let mandate = |sandbox: bool, id: &str| MandateRow {
            mandate_id: id.into(),
            sandbox,
            record_types: "products, events".into(),
            countries: if sandbox { "every country".into() } else { "FR".into() },
            caps: "100000 records an hour, 1 GiB a day".into(),
            valid_until: "1 Mar 2027".into(),
            revoked: None,
        };
        let page = Keys {
            nav: None,
            csrf: "c".into(),
            keys: vec![KeyRow {
                key_id: "k1".into(),
                kind: "Ed25519",
                registered_at: When::at(UnixMs(0)),
                revoked: None,
                mandates: vec![mandate(true, "sandbox-grant"), mandate(false, "mdt_1")],
            }],
            types: vec![("products", true)],
            keeper: true,
            sealer: true,
            notice: None,
            refusal: None,
        }
        .render()
        .unwrap();
        assert!(page.contains("Granted by the sandbox") && page.contains("not sealed by your business"), "{page}");
        assert!(page.contains("<td>every country</td>"), "{page}");
        assert!(!page.contains("<code>sandbox-grant</code>") && page.contains("<code>mdt_1</code>"), "{page}");
    }
}
