//! Record schemas of the five searchable collections (products, business
//! files, events, jobs, updates) and their validation.
//!
//! A record is the exact bytes a business sealed: a UTF-8 JSON object whose
//! `schema` member names its type and format version (`service/<collection>/1`).
//! [`validate`] parses those bytes once, refuses duplicate member names and
//! unsafe numbers, checks every member against its collection's schema and
//! reports *all* reasons at once as [`RecordError`]s, the `{code, pointer,
//! detail}` shape of a publish outcome's `errors`. A passing record becomes a
//! [`ValidRecord`], which keeps the exact bytes: the seal and `adl_origin` are
//! over them, so they are never re-serialised.
//!
//! The spec leaves the body fields of four types, every enumeration and most
//! reasons unstated (R-NS-2, R-NS-4, P-NS-1). The choices made here are the
//! `pub const`s of this module and of [`scope`], each documented where it is
//! declared, so docs/REFERENCE.md can cite them:
//!
//! * a member never takes `null`: an absent optional member is omitted;
//! * a string never is empty or blank: omit the member instead;
//! * lengths count Unicode scalar values;
//! * only multi-line texts (descriptions, bodies, the represent texts) may
//!   carry a line feed or a tab; no other control character (Unicode Cc) and
//!   no bidirectional embedding, override or isolate control is accepted in
//!   any text or own id ([`is_forbidden_char`]);
//! * hostnames are lower-case ASCII (an internationalised name in its
//!   punycode form), at least two labels, never an IP address;
//! * a duplicate member name is `record_malformed`; validation goes on with
//!   the last value, as serde_json would read it, so that every other reason
//!   is reported too;
//! * URLs are absolute `http`/`https` with a host, no credentials and no white
//!   space; authorised endpoints (`endpoints.*_url`) are `https` only and on
//!   one of the file's `endpoints.domains` (or a subdomain of one);
//! * any number of magnitude above 2^53 - 1 makes the record malformed, as it
//!   would make any signed form unsafe for other languages.
//!
//! `url_flagged` (P2.5.23) needs DNS and reputation lookups, which are I/O: the
//! caller checks every URL [`urls`] lists and adds its own errors with
//! [`ErrorCode::UrlFlagged`].

mod ads;
mod business_files;
pub mod editor;
mod events;
pub mod examples;
mod form;
mod jobs;
pub mod labels;
pub mod names;
mod parse;
mod products;
pub mod scope;
mod updates;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::canonical::escape_pointer_token;
use crate::digest::sha256_prefixed;
use crate::ids::RecordType;

pub use ads::{MAX_AD_DESCRIPTION, MAX_CTA};
pub use business_files::{ENDPOINT_URLS, endpoint_domains};
pub use form::{is_forbidden_char, is_gtin, is_hostname, is_language, is_money, is_slug, is_timezone, money_units};
pub use jobs::{SALARY_FIELDS, SALARY_REQUIRED};

/// The `schema` value of each collection's format version 1 (R2.1.3), and
/// of ads (`service/ads/1`, R2.8.9).
pub const SCHEMAS: [(&str, RecordType); 6] = [
    ("service/products/1", RecordType::Products),
    ("service/business_files/1", RecordType::BusinessFiles),
    ("service/events/1", RecordType::Events),
    ("service/jobs/1", RecordType::Jobs),
    ("service/updates/1", RecordType::Updates),
    ("service/ads/1", RecordType::Ads),
];

/// Schemas known to svc but validated elsewhere: naming one where a
/// collection record is expected is `record_type_mismatch`, not `schema_unknown`.
pub const OTHER_SCHEMAS: [(&str, RecordType); 2] =
    [("service/ai_policy/1", RecordType::AiPolicy), ("service/terms/1", RecordType::AiPolicy)];

/// The member carrying the business's own id of a record of each collection;
/// the record id is derived from it (R2.1.4).
pub const OWN_ID_FIELDS: [(RecordType, &str); 6] = [
    (RecordType::Products, "business_product_id"),
    (RecordType::BusinessFiles, "business_file_id"),
    (RecordType::Events, "event_id"),
    (RecordType::Jobs, "job_id"),
    (RecordType::Updates, "update_id"),
    (RecordType::Ads, "ad_id"),
];

/// `countries`: 1 to this many unique assigned ISO 3166-1 alpha-2 codes.
pub const MAX_COUNTRIES: usize = 50;
/// Own ids (`business_product_id`, …): 1 to this many characters, no control character.
pub const MAX_OWN_ID: usize = 256;
/// Names, titles, headlines: 1 to this many characters, one line.
pub const MAX_NAME: usize = 200;
/// Short labels (`brand`, `category`, `region`, `city`, brand names, …).
pub const MAX_LABEL: usize = 128;
/// A product's `short_description`.
pub const MAX_SHORT_DESCRIPTION: usize = 1000;
/// Descriptions and bodies.
pub const MAX_LONG_TEXT: usize = 5000;
/// Each of the five 'represent us' texts of a business file.
pub const MAX_REPRESENT_TEXT: usize = 2000;
/// `tags`: 0 to this many items…
pub const MAX_TAGS: usize = 32;
/// …each of 1 to this many characters.
pub const MAX_TAG: usize = 64;
/// A URL, in characters.
pub const MAX_URL: usize = 2048;
/// Items of the other lists of a business file (brands, markets, cities, locations).
pub const MAX_LIST_ITEMS: usize = 100;
/// `endpoints.domains`: 1 to this many hostnames.
pub const MAX_DOMAINS: usize = 20;

/// `language`: `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`.
pub const LANGUAGE_PATTERN: &str = "^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$";
/// Money in records: a decimal string, never a JSON number (P2.5.21).
pub const MONEY_PATTERN: &str = r"^(0|[1-9][0-9]{0,11})(\.[0-9]{1,4})?$";
/// `vertical` of a product and `category` of a job.
pub const SLUG_PATTERN: &str = "^[a-z][a-z0-9_]{0,63}$";
/// `timezone` of an event (IANA-like name), at most 64 characters.
pub const TIMEZONE_PATTERN: &str = "^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$";
/// `gtin`: 8, 12, 13 or 14 digits with a valid GS1 check digit. An extension:
/// the spec lists `gtin` as a products filter field but not as a record field.
pub const GTIN_FORM: &str = "8, 12, 13 or 14 digits, GS1 check digit";

/// Enumerations (R-NS-4).
pub const AVAILABILITY: &[&str] = &["in_stock", "out_of_stock", "preorder", "backorder", "discontinued"];
pub const CHANNELS: &[&str] = &["online", "in_store", "online_and_in_store"];
pub const DELIVERY_OPTIONS: &[&str] = &["delivery", "pickup", "shipping", "digital"];
pub const PAYMENT_METHODS: &[&str] = &["card", "cash", "bank_transfer", "invoice", "mobile_wallet", "direct_debit"];
pub const EVENT_TYPES: &[&str] = &[
    "concert",
    "conference",
    "exhibition",
    "festival",
    "sport",
    "workshop",
    "theatre",
    "market",
    "community",
    "other",
];
pub const ATTENDANCE_MODES: &[&str] = &["in_person", "online", "mixed"];
pub const AGE_RESTRICTIONS: &[&str] = &["all_ages", "18_plus", "21_plus"];
pub const EMPLOYMENT_TYPES: &[&str] =
    &["full_time", "part_time", "contract", "temporary", "internship", "apprenticeship", "volunteer"];
pub const WORK_ARRANGEMENTS: &[&str] = &["on_site", "hybrid", "remote"];
pub const SALARY_PERIODS: &[&str] = &["hour", "day", "week", "month", "year"];
pub const UPDATE_TYPES: &[&str] = &["news", "offer", "announcement", "closure", "recall", "other"];
/// The five 'represent us' texts of a business file: fetched, never on a row (R2.3.18).
pub const REPRESENT_TEXTS: [&str; 5] =
    ["who_we_are", "what_we_offer", "how_we_work", "what_we_stand_for", "how_to_describe_us"];

/// Why a record was refused. The serde name is the code on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not UTF-8, not a JSON object, a duplicate member name, or a number beyond 2^53.
    RecordMalformed,
    /// `schema` missing, or not a known name and version.
    SchemaUnknown,
    /// A known schema of another type than the one expected.
    RecordTypeMismatch,
    FieldMissing,
    /// A member the schema does not have.
    FieldUnknown,
    /// A member of the wrong JSON type.
    FieldType,
    /// A member of the right type but a bad form, length, range or value.
    FieldInvalid,
    /// Money given as a JSON number (P2.5.21).
    MoneyNotString,
    /// Text naming another business's brand or directing how other sources are treated (P2.5.22).
    ScopeViolation,
    /// A record country outside the mandate's countries.
    OutOfScope,
    /// `display_domain` differs from its `destination_url`'s host (P2.5.24).
    DisplayDomainMismatch,
    /// Produced by the caller after its malware and phishing check (P2.5.23).
    UrlFlagged,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::RecordMalformed,
        ErrorCode::SchemaUnknown,
        ErrorCode::RecordTypeMismatch,
        ErrorCode::FieldMissing,
        ErrorCode::FieldUnknown,
        ErrorCode::FieldType,
        ErrorCode::FieldInvalid,
        ErrorCode::MoneyNotString,
        ErrorCode::ScopeViolation,
        ErrorCode::OutOfScope,
        ErrorCode::DisplayDomainMismatch,
        ErrorCode::UrlFlagged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::RecordMalformed => "record_malformed",
            ErrorCode::SchemaUnknown => "schema_unknown",
            ErrorCode::RecordTypeMismatch => "record_type_mismatch",
            ErrorCode::FieldMissing => "field_missing",
            ErrorCode::FieldUnknown => "field_unknown",
            ErrorCode::FieldType => "field_type",
            ErrorCode::FieldInvalid => "field_invalid",
            ErrorCode::MoneyNotString => "money_not_string",
            ErrorCode::ScopeViolation => "scope_violation",
            ErrorCode::OutOfScope => "out_of_scope",
            ErrorCode::DisplayDomainMismatch => "display_domain_mismatch",
            ErrorCode::UrlFlagged => "url_flagged",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason a record was refused: `{code, pointer, detail}` (P2.5 `errors`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordError {
    pub code: ErrorCode,
    /// RFC 6901 JSON pointer of the member at fault; `""` for the whole record.
    pub pointer: String,
    pub detail: String,
}

impl RecordError {
    pub fn new(code: ErrorCode, pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        RecordError { code, pointer: pointer.into(), detail: detail.into() }
    }
}

/// What validation needs to know about the publishing business and its mandate.
#[derive(Debug, Clone, Default)]
pub struct ValidationContext {
    /// `brands_owned` and `brands_sold` of the business: naming them is in
    /// scope. Private with `other_brands`, as the matcher is built from both.
    own_brands: Vec<String>,
    /// Brand and company names of other businesses on the platform.
    other_brands: Vec<String>,
    /// The mandate's countries, when the record is pushed under one (Path A).
    pub mandate_countries: Option<Vec<String>>,
    /// The scope matcher of records that declare no brands themselves, built
    /// once per context rather than once per record.
    base_scope: std::sync::OnceLock<scope::Matcher>,
}

impl ValidationContext {
    pub fn new(own_brands: Vec<String>, other_brands: Vec<String>, mandate_countries: Option<Vec<String>>) -> Self {
        ValidationContext { own_brands, other_brands, mandate_countries, base_scope: Default::default() }
    }

    /// The scope matcher for a record declaring `declared` brands of its own.
    fn scope(&self, declared: &[String]) -> std::borrow::Cow<'_, scope::Matcher> {
        if declared.is_empty() {
            let base = self.base_scope.get_or_init(|| scope::Matcher::new(&self.own_brands, &self.other_brands));
            std::borrow::Cow::Borrowed(base)
        } else {
            std::borrow::Cow::Owned(scope::Matcher::new(self.own_brands.iter().chain(declared), &self.other_brands))
        }
    }
}

/// A record that passed [`validate`]. Its fields are private so that one can
/// only be had from validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRecord {
    bytes: Vec<u8>,
    value: Value,
    record_type: RecordType,
    own_id: String,
    countries: Vec<String>,
}

impl ValidRecord {
    /// The exact bytes, as sealed.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The parsed record (always an object).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The record's members.
    pub fn fields(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        self.value.as_object().unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }

    pub fn record_type(&self) -> RecordType {
        self.record_type
    }

    /// The business's own id (`business_product_id`, `business_file_id`, …).
    pub fn own_id(&self) -> &str {
        &self.own_id
    }

    /// The record's `countries`, in record order.
    pub fn countries(&self) -> &[String] {
        &self.countries
    }

    /// `sha256:` + hex of the exact bytes: the row's `adl_origin` (R2.4.10).
    pub fn origin(&self) -> String {
        sha256_prefixed(&self.bytes)
    }

    /// The record id this business gets for this record (R2.1.4, R2.1.5).
    pub fn record_id(&self, business_uuid: &str) -> String {
        crate::ids::record_id(self.record_type, business_uuid, &self.own_id)
    }

    /// Every URL member, for the caller's `url_flagged` check.
    pub fn urls(&self) -> Vec<(String, String)> {
        urls(&self.value)
    }
}

/// The type a `schema` value names, if svc knows it.
pub fn schema_type(schema: &str) -> Option<RecordType> {
    SCHEMAS.iter().chain(OTHER_SCHEMAS.iter()).find(|(name, _)| *name == schema).map(|(_, t)| *t)
}

/// The current `schema` value of a collection.
pub fn schema_name(kind: RecordType) -> Option<&'static str> {
    SCHEMAS.iter().find(|(_, t)| *t == kind).map(|(name, _)| *name)
}

/// Validates a record's exact bytes as a record of `expected`, reporting every
/// reason at once (P2.5: "all reasons of a record are reported at once").
pub fn validate(bytes: &[u8], expected: RecordType, ctx: &ValidationContext) -> Result<ValidRecord, Vec<RecordError>> {
    let mut errors = Vec::new();
    let Some(value) = parse::parse(bytes, &mut errors) else {
        return Err(errors);
    };
    let Value::Object(map) = &value else {
        errors.push(RecordError::new(ErrorCode::RecordMalformed, "", "a record is a JSON object"));
        return Err(errors);
    };
    // Generic over every object: ads and future schemas carry these members too.
    display_domains(&value, &mut String::new(), &mut errors);

    let kind = match map.get("schema") {
        None => {
            errors.push(RecordError::new(ErrorCode::SchemaUnknown, "/schema", "`schema` is required"));
            return Err(errors);
        }
        Some(Value::String(schema)) => match schema_type(schema) {
            Some(kind) => kind,
            None => {
                let detail = format!("unknown schema {schema:?}");
                errors.push(RecordError::new(ErrorCode::SchemaUnknown, "/schema", detail));
                return Err(errors);
            }
        },
        Some(_) => {
            errors.push(RecordError::new(ErrorCode::SchemaUnknown, "/schema", "`schema` is a string"));
            return Err(errors);
        }
    };
    if kind != expected {
        let detail = format!("a {} record where a {} record was expected", kind.name(), expected.name());
        errors.push(RecordError::new(ErrorCode::RecordTypeMismatch, "/schema", detail));
        return Err(errors);
    }
    let Some(def) = definition(kind) else {
        let detail = format!("{} records are not validated by the collection schemas", kind.name());
        errors.push(RecordError::new(ErrorCode::SchemaUnknown, "/schema", detail));
        return Err(errors);
    };

    // A business file declares the brands it owns and sells: naming them in
    // its own texts is in scope even before the file is stored.
    let declared = if kind == RecordType::BusinessFiles { business_files::declared_brands(map) } else { Vec::new() };
    let mut checker = form::Checker::new(ctx, ctx.scope(&declared));
    checker.object(map, def.fields, "");
    (def.cross)(&mut checker, map);
    errors.extend(checker.into_errors());
    if !errors.is_empty() {
        return Err(errors);
    }

    let own_id = map.get(def.own_id).and_then(Value::as_str).unwrap_or_default().to_owned();
    let countries = map
        .get("countries")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|c| c.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    Ok(ValidRecord { bytes: bytes.to_vec(), value, record_type: kind, own_id, countries })
}

/// The rules of a schema that span several members.
type Cross = fn(&mut form::Checker<'_>, &Map<String, Value>);

/// One collection's schema: its members, cross-member rules and own-id member.
struct Definition {
    fields: &'static [form::Field],
    cross: Cross,
    own_id: &'static str,
}

fn definition(kind: RecordType) -> Option<Definition> {
    let own_id = OWN_ID_FIELDS.iter().find(|(t, _)| *t == kind).map(|(_, f)| *f)?;
    let (fields, cross): (&'static [form::Field], Cross) = match kind {
        RecordType::Products => (products::FIELDS, products::cross),
        RecordType::BusinessFiles => (business_files::FIELDS, business_files::cross),
        RecordType::Events => (events::FIELDS, events::cross),
        RecordType::Jobs => (jobs::FIELDS, jobs::cross),
        RecordType::Updates => (updates::FIELDS, updates::cross),
        RecordType::Ads => (ads::FIELDS, ads::cross),
        RecordType::AiPolicy => return None,
    };
    Some(Definition { fields, cross, own_id })
}

/// Every URL member of a record (a member named `url` or ending in `_url`
/// whose value is a string), with its JSON pointer, in document order.
pub fn urls(record: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect_urls(record, &mut String::new(), &mut out);
    out
}

fn collect_urls(value: &Value, pointer: &mut String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(key));
                match item {
                    Value::String(url) if key == "url" || key.ends_with("_url") => {
                        out.push((pointer.clone(), url.clone()));
                    }
                    _ => collect_urls(item, pointer, out),
                }
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                collect_urls(item, pointer, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// P2.5.24: wherever an object carries both `display_domain` and
/// `destination_url`, the first must equal the lower-cased host of the second.
fn display_domains(value: &Value, pointer: &mut String, errors: &mut Vec<RecordError>) {
    match value {
        Value::Object(map) => {
            if let (Some(shown), Some(destination)) = (map.get("display_domain"), map.get("destination_url")) {
                let host = destination
                    .as_str()
                    .and_then(|u| url::Url::parse(u).ok())
                    .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
                let matches = match (shown.as_str(), host.as_deref()) {
                    (Some(shown), Some(host)) => shown == host,
                    _ => false,
                };
                if !matches {
                    let detail = match host {
                        Some(host) => format!("display_domain must be {host:?}, the host of destination_url"),
                        None => "destination_url has no host to compare display_domain with".to_owned(),
                    };
                    errors.push(RecordError::new(
                        ErrorCode::DisplayDomainMismatch,
                        format!("{pointer}/display_domain"),
                        detail,
                    ));
                }
            }
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_pointer_token(key));
                display_domains(item, pointer, errors);
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                display_domains(item, pointer, errors);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
pub(crate) mod tests;
