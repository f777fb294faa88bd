//! A campaign's terms as a business sets them (the spec does not show
//! them): what it places, its budget, its net price and basis, the
//! keywords a pool must name, where it runs, the formats it offers, and
//! whether a conversation may see it more than once. Every reason at once.

use serde::{Deserialize, Serialize};

use super::{Basis, Format, Micros, Placement};
use crate::ids::is_country;

/// Keywords a campaign lists.
pub const MAX_CAMPAIGN_KEYWORDS: usize = 50;
/// The longest keyword (the spec's 256-character string limit is for
/// filters; a subject term is short).
pub const MAX_KEYWORD: usize = 64;
/// Countries and subdivisions a campaign lists.
pub const MAX_PLACES: usize = 50;
/// The most renders a conversation may be charged for one item.
pub const MAX_REPEATS: u32 = 100;
/// The longest campaign name.
pub const MAX_NAME: usize = 120;

/// Whether, and how often, one conversation may be shown an item again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeats {
    pub allowed: bool,
    /// Renders charged per conversation, the first included (1 when repeats
    /// are not allowed).
    pub max_per_conversation: u32,
}

/// What a business asks for, as the portal's form or the API reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignTerms {
    pub name: String,
    pub placement: Placement,
    /// Dollars, a decimal string; more than zero.
    pub budget: String,
    pub net_price: String,
    pub basis: Basis,
    pub keywords: Vec<String>,
    pub countries: Vec<String>,
    #[serde(default)]
    pub subdivisions: Vec<String>,
    pub formats: Vec<Format>,
    pub repeats: Repeats,
}

/// The terms once checked, with money in micro-dollars and keywords as
/// pools match them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terms {
    pub name: String,
    pub placement: Placement,
    pub budget: Micros,
    pub net_price: Micros,
    pub basis: Basis,
    pub keywords: Vec<String>,
    pub countries: Vec<String>,
    pub subdivisions: Vec<String>,
    pub formats: Vec<Format>,
    pub repeats: Repeats,
}

/// A keyword as pools match it: trimmed and lower case, so `Lamp` and
/// `lamp` are one term; no stemming or partial match (R4.1.5).
pub fn keyword(text: &str) -> String {
    text.trim().to_lowercase()
}

/// An ISO 3166-2 subdivision: a country, a hyphen, one to three letters or
/// digits (`FR-75`, `US-CA`).
pub fn is_subdivision(code: &str) -> bool {
    match code.split_once('-') {
        Some((country, part)) => {
            is_country(country)
                && (1..=3).contains(&part.len())
                && part.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        }
        None => false,
    }
}

/// Checks `terms`: every reason, each with the member it names.
pub fn check(terms: &CampaignTerms) -> Result<Terms, Vec<(&'static str, String)>> {
    let mut errors = Vec::new();
    let name = terms.name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        errors.push(("name", format!("a name is 1 to {MAX_NAME} characters on one line")));
    }
    let budget = Micros::parse(&terms.budget).filter(|b| b.0 > 0);
    if budget.is_none() {
        errors.push(("budget", "a budget is more than zero dollars, at most six decimals".into()));
    }
    let net_price = Micros::parse(&terms.net_price).filter(|p| p.0 > 0);
    if net_price.is_none() {
        errors.push(("net_price", "a net price is more than zero dollars, at most six decimals".into()));
    }
    if let (Some(b), Some(p)) = (budget, net_price)
        && super::event_cost(p, terms.basis) > b
    {
        errors.push(("budget", "the budget does not cover one billable event".into()));
    }
    let mut keywords: Vec<String> = terms.keywords.iter().map(|k| keyword(k)).collect();
    keywords.sort();
    keywords.dedup();
    if keywords.is_empty() || keywords.len() > MAX_CAMPAIGN_KEYWORDS {
        errors.push(("keywords", format!("1 to {MAX_CAMPAIGN_KEYWORDS} keywords")));
    }
    if keywords.iter().any(|k| k.is_empty() || k.chars().count() > MAX_KEYWORD || k.chars().any(char::is_control)) {
        errors.push(("keywords", format!("a keyword is 1 to {MAX_KEYWORD} characters")));
    }
    if terms.countries.is_empty()
        || terms.countries.len() > MAX_PLACES
        || !terms.countries.iter().all(|c| is_country(c))
    {
        errors.push(("countries", format!("1 to {MAX_PLACES} ISO 3166-1 alpha-2 codes")));
    }
    if terms.subdivisions.len() > MAX_PLACES {
        errors.push(("subdivisions", format!("at most {MAX_PLACES}")));
    }
    for sub in &terms.subdivisions {
        if !is_subdivision(sub) {
            errors.push(("subdivisions", format!("{sub} is not an ISO 3166-2 code")));
        } else if !terms.countries.iter().any(|c| sub.starts_with(&format!("{c}-"))) {
            errors.push(("subdivisions", format!("{sub} is in none of the campaign's countries")));
        }
    }
    let mut formats = terms.formats.clone();
    formats.sort();
    formats.dedup();
    if formats.is_empty() {
        errors.push(("formats", "at least one of compact, card".into()));
    }
    let repeats = terms.repeats;
    let max = if repeats.allowed { repeats.max_per_conversation } else { 1 };
    if repeats.allowed && !(2..=MAX_REPEATS).contains(&max) {
        errors.push(("repeats", format!("with repeats allowed, 2 to {MAX_REPEATS} renders a conversation")));
    }
    match (budget, net_price) {
        (Some(budget), Some(net_price)) if errors.is_empty() => Ok(Terms {
            name: name.to_owned(),
            placement: terms.placement,
            budget,
            net_price,
            basis: terms.basis,
            keywords,
            countries: terms.countries.clone(),
            subdivisions: terms.subdivisions.clone(),
            formats,
            repeats: Repeats { allowed: repeats.allowed, max_per_conversation: max },
        }),
        _ => Err(errors),
    }
}

impl Terms {
    /// Whether a pool in `country` (and `subdivision`, if named) may carry
    /// this campaign: its country, and its subdivisions if it lists any of
    /// that country (a pool naming none matches a country-wide campaign only).
    pub fn runs_in(&self, country: &str, subdivision: Option<&str>) -> bool {
        if !self.countries.iter().any(|c| c == country) {
            return false;
        }
        let prefix = format!("{country}-");
        let listed: Vec<&String> = self.subdivisions.iter().filter(|s| s.starts_with(&prefix)).collect();
        listed.is_empty() || subdivision.is_some_and(|s| listed.iter().any(|l| *l == s))
    }

    /// How many of `asked` (keywords as pools match them) the campaign lists.
    pub fn keyword_matches(&self, asked: &[String]) -> u32 {
        asked.iter().filter(|k| self.keywords.binary_search(k).is_ok()).count() as u32
    }
}

/// What a person's passkey signs to start a campaign in the portal: the
/// terms as entered, the records it places, and when.
pub const CAMPAIGN_V1: &str = "campaign.v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignDocument {
    pub v: u64,
    pub business_uuid: String,
    pub terms: CampaignTerms,
    pub items: Vec<String>,
    pub requested_at: String,
}

impl CampaignDocument {
    /// The canonical bytes the passkey signs.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Strings, small integers, booleans and enums: always canonical.
        crate::canonical::to_signed_bytes(self).unwrap_or_default()
    }

    /// Reads a signed document: version 1, with a valid instant.
    pub fn parse(bytes: &[u8]) -> Option<(CampaignDocument, crate::time::UnixMs)> {
        let document: CampaignDocument = serde_json::from_slice(bytes).ok()?;
        let at = crate::time::UnixMs::parse_rfc3339(&document.requested_at)?;
        (document.v == 1).then_some((document, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> CampaignTerms {
        CampaignTerms {
            name: "Winter lamps".into(),
            placement: Placement::Ad,
            budget: "100".into(),
            net_price: "5.00".into(),
            basis: Basis::Cpm,
            keywords: vec!["Lamp".into(), "lighting".into(), " lamp ".into()],
            countries: vec!["FR".into()],
            subdivisions: vec!["FR-75".into()],
            formats: vec![Format::Card, Format::Compact, Format::Card],
            repeats: Repeats { allowed: false, max_per_conversation: 0 },
        }
    }

    #[test]
    fn terms_are_read_into_micros_and_matched_keywords() {
        let checked = check(&terms()).unwrap();
        assert_eq!((checked.budget, checked.net_price), (Micros(100_000_000), Micros(5_000_000)));
        assert_eq!(checked.keywords, ["lamp", "lighting"]);
        assert_eq!(checked.formats, [Format::Compact, Format::Card]);
        assert_eq!(checked.repeats.max_per_conversation, 1);
        assert_eq!(checked.keyword_matches(&["lamp".into(), "desk".into()]), 1);
        assert!(checked.runs_in("FR", Some("FR-75")));
        assert!(!checked.runs_in("FR", Some("FR-13")), "another subdivision");
        assert!(!checked.runs_in("FR", None), "the campaign names Paris only");
        assert!(!checked.runs_in("DE", None));
    }

    #[test]
    fn every_bad_member_is_a_reason_and_a_zero_budget_is_refused() {
        let bad = CampaignTerms {
            name: " ".into(),
            budget: "0".into(),
            net_price: "-1".into(),
            keywords: vec![],
            countries: vec!["France".into()],
            subdivisions: vec!["DE-BE".into(), "FR75".into()],
            formats: vec![],
            repeats: Repeats { allowed: true, max_per_conversation: 1 },
            ..terms()
        };
        let errors = check(&bad).unwrap_err();
        let named: Vec<&str> = errors.iter().map(|(member, _)| *member).collect();
        for member in ["name", "budget", "net_price", "keywords", "countries", "subdivisions", "formats", "repeats"] {
            assert!(named.contains(&member), "{member}: {errors:?}");
        }
        let thin = CampaignTerms { budget: "0.50".into(), net_price: "1".into(), basis: Basis::Cpc, ..terms() };
        assert!(check(&thin).unwrap_err().iter().any(|(_, why)| why.contains("one billable event")));
    }
}
