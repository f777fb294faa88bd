//! The common field forms (spec choice B) and the walker that checks a record
//! against a table of [`Field`]s, collecting every error instead of stopping.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::scope::{Matcher, Scope};
use super::{
    ErrorCode, MAX_COUNTRIES, MAX_DOMAINS, MAX_LABEL, MAX_NAME, MAX_OWN_ID, MAX_TAG, MAX_TAGS, MAX_URL, RecordError,
    ValidationContext,
};
use crate::canonical::escape_pointer_token;
use crate::ids::{is_country, is_currency};
use crate::time::UnixMs;

/// A text member: 1 to `max` characters, not blank.
#[derive(Debug, Clone, Copy)]
pub(super) struct Text {
    pub max: usize,
    /// Whether a line feed or a tab may appear.
    pub multiline: bool,
    pub scope: Scope,
}

/// Names, titles, headlines.
pub(super) const NAME: Text = Text { max: MAX_NAME, multiline: false, scope: Scope::Full };
/// A product's `brand`: checked in full, so a brand the business neither owns nor sells is refused.
pub(super) const LABEL: Text = Text { max: MAX_LABEL, multiline: false, scope: Scope::Full };
/// A product's `category`: a classification, checked for directives only.
pub(super) const CATEGORY: Text = Text { max: MAX_LABEL, multiline: false, scope: Scope::Directive };
/// A place name or address: another brand may coincide with it.
pub(super) const PLACE: Text = Text { max: MAX_LABEL, multiline: false, scope: Scope::Directive };

pub(super) const fn long_text(max: usize) -> Text {
    Text { max, multiline: true, scope: Scope::Full }
}

/// The form a member's value must have.
#[derive(Debug, Clone, Copy)]
pub(super) enum Form {
    /// Checked before the walk (it selects the schema).
    Schema,
    Language,
    OwnId,
    Text(Text),
    Slug,
    Enum(&'static [&'static str]),
    Bool,
    /// The record's `countries`; also checked against the mandate.
    Countries,
    Country,
    Currency,
    Tags,
    Url,
    /// An authorised endpoint: `https` only.
    HttpsUrl,
    Money,
    Timestamp,
    Timezone,
    Gtin,
    Int {
        min: i64,
        max: i64,
    },
    Number {
        min: f64,
        max: f64,
    },
    Object(&'static [Field]),
    ObjectList {
        min: usize,
        max: usize,
        fields: &'static [Field],
    },
    TextList {
        max_items: usize,
        text: Text,
    },
    /// A non-empty array of unique values of an enumeration.
    EnumSet(&'static [&'static str]),
    Hostnames,
}

/// `{lat: -90..90, lng: -180..180}`.
pub(super) const GEO: Form = Form::Object(&[
    req("lat", Form::Number { min: -90.0, max: 90.0 }),
    req("lng", Form::Number { min: -180.0, max: 180.0 }),
]);

/// One member of an object schema.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    pub name: &'static str,
    pub required: bool,
    pub form: Form,
}

pub(super) const fn req(name: &'static str, form: Form) -> Field {
    Field { name, required: true, form }
}

pub(super) const fn opt(name: &'static str, form: Form) -> Field {
    Field { name, required: false, form }
}

pub(super) fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", escape_pointer_token(key))
}

fn index(pointer: &str, i: usize) -> String {
    format!("{pointer}/{i}")
}

/// Collects errors while walking one record.
pub(super) struct Checker<'c> {
    ctx: &'c ValidationContext,
    scope: std::borrow::Cow<'c, Matcher>,
    errors: Vec<RecordError>,
}

impl<'c> Checker<'c> {
    /// `scope`: the matcher of the business's brands and any the record declares.
    pub(super) fn new(ctx: &'c ValidationContext, scope: std::borrow::Cow<'c, Matcher>) -> Self {
        Checker { ctx, scope, errors: Vec::new() }
    }

    pub(super) fn into_errors(self) -> Vec<RecordError> {
        self.errors
    }

    pub(super) fn push(&mut self, code: ErrorCode, pointer: &str, detail: impl Into<String>) {
        self.errors.push(RecordError::new(code, pointer, detail));
    }

    fn invalid(&mut self, pointer: &str, detail: impl Into<String>) {
        self.push(ErrorCode::FieldInvalid, pointer, detail);
    }

    fn wrong_type(&mut self, pointer: &str, expected: &str) {
        self.push(ErrorCode::FieldType, pointer, format!("expected {expected}"));
    }

    /// Checks `map` against `fields`: missing, unknown and every present member.
    pub(super) fn object(&mut self, map: &Map<String, Value>, fields: &[Field], pointer: &str) {
        for field in fields {
            let at = child(pointer, field.name);
            match map.get(field.name) {
                Some(value) => self.value(value, &field.form, &at),
                None if field.required => {
                    self.push(ErrorCode::FieldMissing, &at, format!("`{}` is required", field.name));
                }
                None => {}
            }
        }
        for key in map.keys() {
            if !fields.iter().any(|f| f.name == key) {
                self.push(ErrorCode::FieldUnknown, &child(pointer, key), format!("`{key}` is not in the schema"));
            }
        }
    }

    fn string<'v>(&mut self, value: &'v Value, pointer: &str) -> Option<&'v str> {
        let text = value.as_str();
        if text.is_none() {
            self.wrong_type(pointer, "a string");
        }
        text
    }

    fn array<'v>(&mut self, value: &'v Value, pointer: &str) -> Option<&'v Vec<Value>> {
        let items = value.as_array();
        if items.is_none() {
            self.wrong_type(pointer, "an array");
        }
        items
    }

    fn value(&mut self, value: &Value, form: &Form, pointer: &str) {
        match *form {
            Form::Schema => {}
            Form::Language => self.pattern(value, pointer, is_language, "a language tag"),
            Form::OwnId => {
                if let Some(id) = self.string(value, pointer) {
                    let len = id.chars().count();
                    if !(1..=MAX_OWN_ID).contains(&len) || id.chars().any(is_forbidden_char) {
                        self.invalid(pointer, format!("1 to {MAX_OWN_ID} printable characters"));
                    }
                }
            }
            Form::Text(text) => self.text(value, pointer, text),
            Form::Slug => self.pattern(value, pointer, is_slug, "a slug ^[a-z][a-z0-9_]{0,63}$"),
            Form::Enum(allowed) => {
                if let Some(s) = self.string(value, pointer)
                    && !allowed.contains(&s)
                {
                    self.invalid(pointer, format!("one of {}", allowed.join(", ")));
                }
            }
            Form::Bool => {
                if !value.is_boolean() {
                    self.wrong_type(pointer, "true or false");
                }
            }
            Form::Countries => self.countries(value, pointer),
            Form::Country => self.pattern(value, pointer, is_country, "an ISO 3166-1 alpha-2 code"),
            Form::Currency => self.pattern(value, pointer, is_currency, "an ISO 4217 currency code"),
            Form::Tags => {
                let tag = Text { max: MAX_TAG, multiline: false, scope: Scope::Full };
                self.text_list(value, pointer, MAX_TAGS, tag);
            }
            Form::Url => self.url(value, pointer, false),
            Form::HttpsUrl => self.url(value, pointer, true),
            Form::Money => match value {
                Value::Number(_) => {
                    self.push(ErrorCode::MoneyNotString, pointer, "money is a decimal string, never a number");
                }
                Value::String(s) if !is_money(s) => {
                    self.invalid(pointer, "a decimal string ^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,4})?$");
                }
                Value::String(_) => {}
                _ => self.wrong_type(pointer, "a decimal string"),
            },
            Form::Timestamp => {
                self.pattern(value, pointer, |s| UnixMs::parse_rfc3339(s).is_some(), "an RFC 3339 timestamp")
            }
            Form::Timezone => self.pattern(value, pointer, is_timezone, "a time zone name such as Europe/Paris"),
            Form::Gtin => self.pattern(value, pointer, is_gtin, "a GTIN of 8, 12, 13 or 14 digits"),
            Form::Int { min, max } => match value.as_i64() {
                Some(n) if (min..=max).contains(&n) => {}
                Some(_) => self.invalid(pointer, format!("an integer from {min} to {max}")),
                None if value.as_u64().is_some() => self.invalid(pointer, format!("an integer from {min} to {max}")),
                None => self.wrong_type(pointer, "an integer"),
            },
            Form::Number { min, max } => match value.as_f64() {
                Some(n) if (min..=max).contains(&n) => {}
                Some(_) => self.invalid(pointer, format!("a number from {min} to {max}")),
                None => self.wrong_type(pointer, "a number"),
            },
            Form::Object(fields) => match value.as_object() {
                Some(map) => self.object(map, fields, pointer),
                None => self.wrong_type(pointer, "an object"),
            },
            Form::ObjectList { min, max, fields } => {
                if let Some(items) = self.array(value, pointer) {
                    if !(min..=max).contains(&items.len()) {
                        self.invalid(pointer, format!("{min} to {max} items"));
                    }
                    for (i, item) in items.iter().enumerate() {
                        match item.as_object() {
                            Some(map) => self.object(map, fields, &index(pointer, i)),
                            None => self.wrong_type(&index(pointer, i), "an object"),
                        }
                    }
                }
            }
            Form::TextList { max_items, text } => self.text_list(value, pointer, max_items, text),
            Form::EnumSet(allowed) => {
                if let Some(items) = self.array(value, pointer) {
                    if items.is_empty() {
                        self.invalid(pointer, "at least one value");
                    }
                    let mut seen = HashSet::new();
                    for (i, item) in items.iter().enumerate() {
                        let at = index(pointer, i);
                        match item.as_str() {
                            None => self.wrong_type(&at, "a string"),
                            Some(s) if !allowed.contains(&s) => {
                                self.invalid(&at, format!("one of {}", allowed.join(", ")));
                            }
                            Some(s) if !seen.insert(s) => self.invalid(&at, format!("{s:?} is listed twice")),
                            Some(_) => {}
                        }
                    }
                }
            }
            Form::Hostnames => {
                if let Some(items) = self.array(value, pointer) {
                    if !(1..=MAX_DOMAINS).contains(&items.len()) {
                        self.invalid(pointer, format!("1 to {MAX_DOMAINS} hostnames"));
                    }
                    let mut seen = HashSet::new();
                    for (i, item) in items.iter().enumerate() {
                        let at = index(pointer, i);
                        match item.as_str() {
                            None => self.wrong_type(&at, "a string"),
                            Some(h) if !is_hostname(h) => self.invalid(&at, "a lower-case DNS hostname"),
                            Some(h) if !seen.insert(h) => self.invalid(&at, format!("{h:?} is listed twice")),
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }

    fn pattern(&mut self, value: &Value, pointer: &str, ok: impl Fn(&str) -> bool, what: &str) {
        if let Some(s) = self.string(value, pointer)
            && !ok(s)
        {
            self.invalid(pointer, format!("expected {what}"));
        }
    }

    fn text(&mut self, value: &Value, pointer: &str, text: Text) {
        let Some(s) = self.string(value, pointer) else {
            return;
        };
        let len = s.chars().count();
        if s.trim().is_empty() {
            self.invalid(pointer, "must not be empty or blank; omit the member instead");
        } else if len > text.max {
            self.invalid(pointer, format!("at most {} characters, found {len}", text.max));
        }
        let allowed = |c: char| text.multiline && (c == '\n' || c == '\t');
        if s.chars().any(|c| is_forbidden_char(c) && !allowed(c)) {
            self.invalid(pointer, "must not contain control characters");
        }
        if let Some(detail) = self.scope.check(s, text.scope) {
            self.push(ErrorCode::ScopeViolation, pointer, detail);
        }
    }

    fn text_list(&mut self, value: &Value, pointer: &str, max_items: usize, text: Text) {
        if let Some(items) = self.array(value, pointer) {
            if items.len() > max_items {
                self.invalid(pointer, format!("at most {max_items} items"));
            }
            for (i, item) in items.iter().enumerate() {
                self.text(item, &index(pointer, i), text);
            }
        }
    }

    fn countries(&mut self, value: &Value, pointer: &str) {
        let Some(items) = self.array(value, pointer) else {
            return;
        };
        if !(1..=MAX_COUNTRIES).contains(&items.len()) {
            self.invalid(pointer, format!("1 to {MAX_COUNTRIES} countries"));
        }
        let mut seen = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let at = index(pointer, i);
            match item.as_str() {
                None => self.wrong_type(&at, "a string"),
                Some(c) if !is_country(c) => self.invalid(&at, "an assigned ISO 3166-1 alpha-2 code"),
                Some(c) if !seen.insert(c) => self.invalid(&at, format!("{c} is listed twice")),
                Some(c) => {
                    if let Some(mandate) = &self.ctx.mandate_countries
                        && !mandate.iter().any(|m| m == c)
                    {
                        self.push(ErrorCode::OutOfScope, &at, format!("{c} is outside the mandate's countries"));
                    }
                }
            }
        }
    }

    fn url(&mut self, value: &Value, pointer: &str, https_only: bool) {
        if let Some(s) = self.string(value, pointer)
            && let Err(detail) = parse_url(s, https_only)
        {
            self.invalid(pointer, detail);
        }
    }
}

/// Control characters (Unicode Cc) and the bidirectional embedding, override
/// and isolate controls, which can make a text read otherwise than it is.
pub fn is_forbidden_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A URL as records accept it; `Err` carries the reason.
pub(super) fn parse_url(text: &str, https_only: bool) -> Result<url::Url, String> {
    if text.chars().count() > MAX_URL {
        return Err(format!("at most {MAX_URL} characters"));
    }
    // The URL parser silently drops white space and controls; a record must not carry them.
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a URL has no white space or control characters".into());
    }
    let url = url::Url::parse(text).map_err(|e| format!("not an absolute URL: {e}"))?;
    match url.scheme() {
        "https" => {}
        "http" if !https_only => {}
        _ if https_only => return Err("an https URL".into()),
        _ => return Err("an http or https URL".into()),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("a URL with a host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a URL without user name or password".into());
    }
    Ok(url)
}

/// `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`
pub fn is_language(text: &str) -> bool {
    let mut parts = text.split('-');
    let Some(primary) = parts.next() else {
        return false;
    };
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_lowercase())
        && parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// `^[a-z][a-z0-9_]{0,63}$`
pub fn is_slug(text: &str) -> bool {
    let b = text.as_bytes();
    (1..=64).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// `^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$`, at most 64 characters.
pub fn is_timezone(text: &str) -> bool {
    let mut parts = text.split('/');
    let Some(area) = parts.next() else {
        return false;
    };
    text.len() <= 64
        && !area.is_empty()
        && area.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
        && parts
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-')))
}

/// 8, 12, 13 or 14 digits whose last is the GS1 check digit of the others.
pub fn is_gtin(text: &str) -> bool {
    let b = text.as_bytes();
    if !matches!(b.len(), 8 | 12 | 13 | 14) || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let (body, check) = b.split_at(b.len() - 1);
    // Weights alternate 3, 1, 3, … from the digit next to the check digit.
    let sum: u32 =
        body.iter().rev().enumerate().map(|(i, d)| u32::from(d - b'0') * if i % 2 == 0 { 3 } else { 1 }).sum();
    (10 - sum % 10) % 10 == u32::from(check[0] - b'0')
}

/// `^(0|[1-9][0-9]{0,11})(\.[0-9]{1,4})?$`
pub fn is_money(text: &str) -> bool {
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (text, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let int_ok = int == "0" || ((1..=12).contains(&int.len()) && !int.starts_with('0') && digits(int));
    int_ok && frac.is_none_or(|f| (1..=4).contains(&f.len()) && digits(f))
}

/// A money string in ten-thousandths, for exact comparisons.
pub fn money_units(text: &str) -> Option<i128> {
    if !is_money(text) {
        return None;
    }
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let int: i128 = int.parse().ok()?;
    let frac_value: i128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let scale = 10i128.pow(4 - u32::try_from(frac.len()).ok()?);
    Some(int * 10_000 + frac_value * scale)
}

/// A lower-case DNS hostname of at least two labels (`shop.example.com`),
/// each label 1 to 63 letters, digits or inner hyphens, 253 characters in all;
/// the last label is not all digits, so an IPv4 address is refused.
pub fn is_hostname(text: &str) -> bool {
    let labels: Vec<&str> = text.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    text.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(label_ok)
        && labels.last().is_some_and(|l| !l.bytes().all(|b| b.is_ascii_digit()))
}

/// The records' `countries` that are well formed, in order.
pub(super) fn valid_countries(map: &Map<String, Value>) -> Vec<&str> {
    map.get("countries")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).filter(|c| is_country(c)).collect())
        .unwrap_or_default()
}

/// A money member's value in ten-thousandths, when present and well formed.
pub(super) fn money_member(map: &Map<String, Value>, name: &str) -> Option<i128> {
    map.get(name).and_then(Value::as_str).and_then(money_units)
}

/// A timestamp member's instant, when present and well formed.
pub(super) fn time_member(map: &Map<String, Value>, name: &str) -> Option<UnixMs> {
    map.get(name).and_then(Value::as_str).and_then(UnixMs::parse_rfc3339)
}
