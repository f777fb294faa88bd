//! The portal's record editor: each collection's members as structured
//! inputs (pickers, rows, Yes/No, a date with its time zone), read from the
//! same field tables [`super::validate`] checks, and a form's values turned
//! back into a record's exact bytes. A person never types JSON.
//!
//! A form's values are named by the JSON pointer of the member they fill
//! (`/prices/0/amount`), so a reason `validate` gives lands on its input.
//! The editor only shapes values (a number is parsed, a date is placed in
//! its zone); every rule of the records spec is judged by `validate` on
//! the bytes it makes, with the same codes and pointers a push would get.

use serde_json::{Map, Value};

use super::form::{Field, Form};
use super::labels::{self, Lang};
use super::{ErrorCode, MAX_COUNTRIES, MAX_DOMAINS, MAX_LIST_ITEMS, MAX_TAGS, RecordError, names};
use crate::canonical::canonicalize;
use crate::ids::RecordType;

/// The suffix of the value naming a moment's time zone (`/start_at#zone`).
pub const ZONE: &str = "#zone";
/// The suffix of the value counting a list's rows (`/prices#rows`), so a
/// row left blank is still shown.
pub const ROWS: &str = "#rows";
/// The form value asking for one more row of the list it names.
pub const ADD: &str = "_add";
/// The form value asking to take out the row it names.
pub const REMOVE: &str = "_remove";

/// How one member is edited.
#[derive(Debug, Clone, PartialEq)]
pub enum InputKind {
    /// One line of text, at most `max` characters where the schema says.
    Line {
        max: Option<usize>,
    },
    /// Several lines of text.
    Paragraph {
        max: usize,
    },
    /// A web address.
    Url,
    /// An amount as a person writes it (`39.90`), sealed as a string.
    Money,
    Integer,
    Number,
    /// One of the values, or none.
    Choice(&'static [&'static str]),
    /// Yes, no, or not stated.
    YesNo,
    /// A language, picked by its name.
    Language,
    /// A country, picked by its name.
    Country,
    /// A currency, picked by its code and name.
    Currency,
    /// A time zone name (`Europe/Paris`).
    Timezone,
    /// A date and time in a time zone, sealed as RFC 3339.
    Moment,
    /// Any of the values, ticked.
    Set(&'static [&'static str]),
    /// A list: rows of one kind, added and taken out one at a time.
    Rows {
        item: Box<InputKind>,
        max: usize,
    },
    /// An object: its members together.
    Group(Vec<Input>),
}

/// One member of a record, as the editor shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub name: &'static str,
    pub required: bool,
    pub kind: InputKind,
}

fn kind_of(form: &Form) -> InputKind {
    let rows = |item: InputKind, max: usize| InputKind::Rows { item: Box::new(item), max };
    match *form {
        Form::Text(text) if text.multiline => InputKind::Paragraph { max: text.max },
        Form::Text(text) => InputKind::Line { max: Some(text.max) },
        Form::Enum(values) => InputKind::Choice(values),
        Form::Bool => InputKind::YesNo,
        Form::Countries => rows(InputKind::Country, MAX_COUNTRIES),
        Form::Tags => rows(InputKind::Line { max: Some(super::MAX_TAG) }, MAX_TAGS),
        Form::Hostnames => rows(InputKind::Line { max: None }, MAX_DOMAINS),
        Form::TextList { max_items, text } => rows(InputKind::Line { max: Some(text.max) }, max_items),
        Form::EnumSet(values) => InputKind::Set(values),
        Form::Int { .. } => InputKind::Integer,
        Form::Number { .. } => InputKind::Number,
        Form::Object(fields) => InputKind::Group(inputs_of(fields)),
        Form::ObjectList { max, fields, .. } => rows(InputKind::Group(inputs_of(fields)), max.min(MAX_LIST_ITEMS)),
        Form::Language => InputKind::Language,
        Form::Country => InputKind::Country,
        Form::Currency => InputKind::Currency,
        Form::Url | Form::HttpsUrl => InputKind::Url,
        Form::Money => InputKind::Money,
        Form::Timestamp => InputKind::Moment,
        Form::Timezone => InputKind::Timezone,
        Form::Schema | Form::OwnId | Form::Slug | Form::Gtin => InputKind::Line { max: None },
    }
}

fn inputs_of(fields: &[Field]) -> Vec<Input> {
    fields
        .iter()
        .filter(|f| !matches!(f.form, Form::Schema))
        .map(|f| Input { name: f.name, required: f.required, kind: kind_of(&f.form) })
        .collect()
}

/// The members of a collection's record, in the schema's order, without
/// `schema` (the editor sets it). Empty for a type that is not a collection.
pub fn inputs(kind: RecordType) -> Vec<Input> {
    super::definition(kind).map_or_else(Vec::new, |d| inputs_of(d.fields))
}

/// A form's values, each named by a JSON pointer (or a pointer and a suffix).
type Values = [(String, String)];

fn value_of<'a>(values: &'a Values, name: &str) -> Option<&'a str> {
    values.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// How many rows the form holds for the list at `pointer`: its count, or
/// one past the highest row a value names.
fn rows_in(values: &Values, pointer: &str) -> usize {
    let counted = value_of(values, &format!("{pointer}{ROWS}")).and_then(|n| n.trim().parse::<usize>().ok());
    let prefix = format!("{pointer}/");
    let named = values.iter().filter_map(|(name, _)| row_of(name, &prefix)).map(|i| i + 1).max();
    counted.unwrap_or(0).max(named.unwrap_or(0))
}

/// A record of `kind` from a form's values. A blank value, a blank row and
/// an empty object leave their member out. What cannot be shaped (a number
/// that is not one, a date that is not one) is `field_type` at the member's
/// pointer, all at once. Pointers are those of [`tidy`]'s values.
pub fn record_from_form(kind: RecordType, values: &Values) -> Result<Vec<u8>, Vec<RecordError>> {
    let schema = super::schema_name(kind).ok_or_else(|| {
        vec![RecordError::new(ErrorCode::SchemaUnknown, "/schema", "not a collection the editor knows")]
    })?;
    let values = tidy(kind, values);
    let mut errors = Vec::new();
    let mut record = shape_group(&inputs(kind), "", &values, &mut errors).unwrap_or_default();
    record.insert("schema".into(), Value::String(schema.into()));
    if errors.is_empty() { Ok(canonicalize(&Value::Object(record))) } else { Err(errors) }
}

fn shape_group(
    inputs: &[Input],
    base: &str,
    values: &Values,
    errors: &mut Vec<RecordError>,
) -> Option<Map<String, Value>> {
    let mut object = Map::new();
    for input in inputs {
        let pointer = format!("{base}/{}", input.name);
        if let Some(value) = shape(&input.kind, &pointer, values, errors) {
            object.insert(input.name.into(), value);
        }
    }
    (!object.is_empty()).then_some(object)
}

fn shape(kind: &InputKind, pointer: &str, values: &Values, errors: &mut Vec<RecordError>) -> Option<Value> {
    match kind {
        InputKind::Group(inputs) => return shape_group(inputs, pointer, values, errors).map(Value::Object),
        InputKind::Rows { item, .. } => {
            let items: Vec<Value> = (0..rows_in(values, pointer))
                .filter_map(|i| shape(item, &format!("{pointer}/{i}"), values, errors))
                .collect();
            return (!items.is_empty()).then_some(Value::Array(items));
        }
        InputKind::Set(allowed) => {
            let ticked: Vec<&str> = values.iter().filter(|(n, _)| n == pointer).map(|(_, v)| v.as_str()).collect();
            // In the enumeration's order, each once; a value it lacks is kept for `validate` to name.
            let mut items: Vec<Value> =
                allowed.iter().filter(|a| ticked.contains(a)).map(|a| Value::from(*a)).collect();
            items.extend(ticked.iter().filter(|t| !allowed.contains(t)).map(|t| Value::from(*t)));
            return (!items.is_empty()).then_some(Value::Array(items));
        }
        _ => {}
    }
    let text = value_of(values, pointer)?.trim();
    if text.is_empty() {
        return None;
    }
    let shaped = match kind {
        InputKind::Paragraph { .. } => Ok(Value::String(text.replace("\r\n", "\n"))),
        InputKind::YesNo => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err("Choose yes or no"),
        },
        InputKind::Integer => text.parse::<i64>().map(Value::from).map_err(|_| "Write a whole number, such as 1998"),
        InputKind::Number => text
            .replace(',', ".")
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or("Write a number, such as 45.76"),
        InputKind::Money => Ok(Value::String(text.replace(',', "."))),
        InputKind::Moment => {
            let zone = value_of(values, &format!("{pointer}{ZONE}")).unwrap_or_default();
            moment(text, zone).map(Value::String).ok_or("Give a date and time, and a time zone such as Europe/Paris")
        }
        _ => Ok(Value::String(text.into())),
    };
    match shaped {
        Ok(value) => Some(value),
        Err(what) => {
            errors.push(RecordError::new(ErrorCode::FieldType, pointer, what));
            None
        }
    }
}

/// The form's values with each list's blank rows taken out and the rest
/// numbered from 0, so a reason's pointer names the row the person sees.
pub fn tidy(kind: RecordType, values: &Values) -> Vec<(String, String)> {
    let mut values = values.to_vec();
    for input in inputs(kind) {
        tidy_kind(&input.kind, &format!("/{}", input.name), &mut values);
    }
    values
}

fn tidy_kind(kind: &InputKind, pointer: &str, values: &mut Vec<(String, String)>) {
    match kind {
        InputKind::Group(inputs) => {
            for input in inputs {
                tidy_kind(&input.kind, &format!("{pointer}/{}", input.name), values);
            }
        }
        InputKind::Rows { item, .. } => {
            for i in (0..rows_in(values, pointer)).rev() {
                let row = format!("{pointer}/{i}");
                tidy_kind(item, &row, values);
                if blank(values, &row) {
                    take_row(values, pointer, i);
                }
            }
            values.retain(|(n, _)| n.strip_suffix(ROWS) != Some(pointer));
        }
        _ => {}
    }
}

/// Whether nothing under `pointer` holds a value (a zone alone is not one).
fn blank(values: &Values, pointer: &str) -> bool {
    !values.iter().any(|(name, value)| {
        let under = name == pointer || name.strip_prefix(pointer).is_some_and(|rest| rest.starts_with('/'));
        under && !value.trim().is_empty()
    })
}

/// Takes out row `index` of the list at `list` and numbers the rows after it one lower.
fn take_row(values: &mut Vec<(String, String)>, list: &str, index: usize) {
    let prefix = format!("{list}/");
    values.retain(|(name, _)| row_of(name, &prefix) != Some(index));
    for (name, _) in values.iter_mut() {
        if let Some(i) = row_of(name, &prefix).filter(|i| *i > index) {
            let rest = &name[prefix.len() + i.to_string().len()..];
            *name = format!("{prefix}{}{rest}", i - 1);
        }
    }
    let count = format!("{list}{ROWS}");
    if let Some((_, n)) = values.iter_mut().find(|(name, _)| *name == count) {
        *n = n.trim().parse::<usize>().unwrap_or(1).saturating_sub(1).to_string();
    }
}

fn row_of(name: &str, prefix: &str) -> Option<usize> {
    let rest = name.strip_prefix(prefix)?;
    let end = rest.find(['/', '#']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// What a row button asked of the form: one more row, or one fewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowChange {
    Add(String),
    Remove(String),
}

impl RowChange {
    /// The row button a form's values carry, if one was pressed.
    pub fn of(values: &Values) -> Option<Self> {
        values.iter().find_map(|(name, value)| match name.as_str() {
            ADD => Some(Self::Add(value.clone())),
            REMOVE => Some(Self::Remove(value.clone())),
            _ => None,
        })
    }

    /// The values with the change made, at most `max` rows in a list (the
    /// schema's limit, which a person then hears of).
    pub fn apply(&self, kind: RecordType, values: &Values) -> Vec<(String, String)> {
        let mut values: Vec<(String, String)> =
            values.iter().filter(|(n, _)| n != ADD && n != REMOVE).cloned().collect();
        match self {
            Self::Add(list) => {
                let Some(max) = list_max(&inputs(kind), "", list) else { return values };
                let rows = (rows_in(&values, list).max(1) + 1).min(max);
                let count = format!("{list}{ROWS}");
                values.retain(|(n, _)| *n != count);
                values.push((count, rows.to_string()));
            }
            Self::Remove(row) => {
                let Some((list, index)) = row.rsplit_once('/') else { return values };
                let Ok(index) = index.parse::<usize>() else { return values };
                if list_max(&inputs(kind), "", list).is_some() {
                    let count = format!("{list}{ROWS}");
                    let rows = rows_in(&values, list);
                    values.retain(|(n, _)| *n != count);
                    values.push((count, rows.to_string()));
                    take_row(&mut values, list, index);
                }
            }
        }
        values
    }
}

/// The most rows the list at `pointer` may have; `None` if it is not a list.
fn list_max(inputs: &[Input], base: &str, pointer: &str) -> Option<usize> {
    inputs.iter().find_map(|input| {
        let here = format!("{base}/{}", input.name);
        match &input.kind {
            InputKind::Rows { max, .. } if here == pointer => Some(*max),
            InputKind::Rows { item, .. } => {
                let InputKind::Group(inner) = item.as_ref() else { return None };
                let rest = pointer.strip_prefix(&format!("{here}/"))?;
                let (row, _) = rest.split_once('/')?;
                list_max(inner, &format!("{here}/{row}"), pointer)
            }
            InputKind::Group(inner) => list_max(inner, &here, pointer),
            _ => None,
        }
    })
}

/// A date and time typed in `zone` (a time zone name, an offset such as
/// `+01:00`, or blank for UTC), as RFC 3339 with its offset. Text that is
/// already RFC 3339 with an offset is kept as typed.
pub fn moment(local: &str, zone: &str) -> Option<String> {
    use jiff::civil::DateTime;
    if crate::time::UnixMs::parse_rfc3339(local).is_some() {
        return Some(local.to_owned());
    }
    let civil: DateTime = local.trim().parse().ok()?;
    let zone = zone.trim();
    if zone.is_empty() || zone.eq_ignore_ascii_case("UTC") || zone == "Z" {
        return Some(format!("{}Z", civil.strftime("%Y-%m-%dT%H:%M:%S")));
    }
    if fixed_offset(zone).is_some() {
        return Some(format!("{}{zone}", civil.strftime("%Y-%m-%dT%H:%M:%S")));
    }
    let tz = jiff::tz::TimeZone::get(zone).ok()?;
    let zoned = civil.to_zoned_datetime(tz).ok()?;
    Some(zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string())
}

/// The seconds east of UTC an offset such as `+01:00` names.
fn fixed_offset(zone: &str) -> Option<i32> {
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = zone[1..].split_once(':')?;
    let digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(hours) || !digits(minutes) {
        return None;
    }
    let (h, m) = (hours.parse::<i32>().ok()?, minutes.parse::<i32>().ok()?);
    (h < 24 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

/// Every time zone name the editor knows, for the zone input's suggestions.
pub fn time_zones() -> Vec<String> {
    let mut zones: Vec<String> = jiff::tz::db().available().map(|name| name.to_string()).collect();
    zones.sort();
    zones
}

/// An RFC 3339 time as the editor shows it: the local date and time, and
/// its zone (`UTC`, or the offset as written).
fn moment_parts(text: &str) -> Option<(String, String)> {
    crate::time::UnixMs::parse_rfc3339(text)?;
    let (local, zone) = if let Some(local) = text.strip_suffix(['Z', 'z']) {
        (local, "UTC")
    } else {
        let at = text.len().checked_sub(6)?;
        (text.get(..at)?, text.get(at..)?)
    };
    let local = local.split('.').next()?;
    let local = local.strip_suffix(":00").filter(|l| l.len() == 16).unwrap_or(local);
    Some((local.to_owned(), zone.to_owned()))
}

/// A record's members as the form's values (editing a saved record).
pub fn form_values(kind: RecordType, record: &Value) -> Vec<(String, String)> {
    let mut values = Vec::new();
    if let Some(object) = record.as_object() {
        flatten_group(&inputs(kind), "", object, &mut values);
    }
    values
}

fn flatten_group(inputs: &[Input], base: &str, object: &Map<String, Value>, out: &mut Vec<(String, String)>) {
    for input in inputs {
        if let Some(value) = object.get(input.name) {
            flatten(&input.kind, &format!("{base}/{}", input.name), value, out);
        }
    }
}

fn flatten(kind: &InputKind, pointer: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match (kind, value) {
        (InputKind::Group(inputs), Value::Object(object)) => flatten_group(inputs, pointer, object, out),
        (InputKind::Rows { item, .. }, Value::Array(items)) => {
            for (i, item_value) in items.iter().enumerate() {
                flatten(item, &format!("{pointer}/{i}"), item_value, out);
            }
            out.push((format!("{pointer}{ROWS}"), items.len().to_string()));
        }
        (InputKind::Set(_), Value::Array(items)) => {
            out.extend(items.iter().map(|i| (pointer.to_owned(), text_of(i))));
        }
        (InputKind::Moment, Value::String(s)) => match moment_parts(s) {
            Some((local, zone)) => {
                out.push((pointer.to_owned(), local));
                out.push((format!("{pointer}{ZONE}"), zone));
            }
            None => out.push((pointer.to_owned(), s.clone())),
        },
        (_, other) => out.push((pointer.to_owned(), text_of(other))),
    }
}

fn text_of(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// One piece of the editor's page, in document order: a control, or the
/// start or end of a group of them (an object, a list, a row of a list).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Piece {
    /// `open`, `close` or a control's widget: `line`, `paragraph`, `url`,
    /// `money`, `integer`, `number`, `choice`, `yes_no`, `moment`, `zone`, `set`.
    pub widget: &'static str,
    /// The JSON pointer this piece fills: a control's form name, a group's member.
    pub pointer: String,
    /// The page's id for it (`f-prices-0-amount`).
    pub id: String,
    pub label: String,
    pub hint: &'static str,
    pub required: bool,
    /// A control's value (a moment's local date and time).
    pub value: String,
    /// A moment's time zone.
    pub zone: String,
    /// A choice's or a set's options: value, words, chosen.
    pub options: Vec<(String, String, bool)>,
    pub max: Option<usize>,
    /// Whether this is a row of a list (its label is for screen readers:
    /// the list's legend says it).
    pub in_row: bool,
    /// A row's button taking it out: the value it posts as [`REMOVE`].
    pub remove: Option<String>,
    /// A list's closing button adding a row: the value it posts as [`ADD`],
    /// and the count of rows shown, posted as `pointer#rows`.
    pub add: Option<String>,
    pub rows: usize,
}

impl Piece {
    fn id_of(pointer: &str) -> String {
        format!("f{}", pointer.replace(['/', '#'], "-"))
    }
}

/// The editor's page for `kind`, filled with `values`, in `lang`.
pub fn layout(kind: RecordType, values: &Values, lang: Lang) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for input in inputs(kind) {
        lay_out(&input, &format!("/{}", input.name), None, values, lang, &mut pieces);
    }
    pieces
}

fn lay_out(input: &Input, pointer: &str, row: Option<usize>, values: &Values, lang: Lang, out: &mut Vec<Piece>) {
    let words = labels::member(input.name, lang).unwrap_or(labels::Words { label: input.name, hint: "" });
    let label = match row {
        Some(i) => format!("{} {}", words.label, i + 1),
        None => words.label.to_owned(),
    };
    let piece = Piece {
        pointer: pointer.to_owned(),
        id: Piece::id_of(pointer),
        label,
        // A row of a list is under the list's legend and hint.
        hint: if row.is_some() { "" } else { words.hint },
        in_row: row.is_some(),
        required: input.required,
        ..Piece::default()
    };
    let value = value_of(values, pointer).unwrap_or_default().to_owned();
    let named = |list: &'static [names::Named]| -> Vec<(String, String, bool)> {
        let mut options: Vec<(String, String, bool)> =
            list.iter().map(|(code, name)| ((*code).to_owned(), (*name).to_owned(), *code == value)).collect();
        // A value the list lacks (a regional language tag, say) stays chosen.
        if !value.is_empty() && !options.iter().any(|o| o.2) {
            options.insert(0, (value.clone(), value.clone(), true));
        }
        options
    };
    match &input.kind {
        InputKind::Group(inputs) => {
            out.push(Piece { widget: "open", ..piece });
            for inner in inputs {
                lay_out(inner, &format!("{pointer}/{}", inner.name), None, values, lang, out);
            }
            out.push(Piece { widget: "close", pointer: pointer.to_owned(), ..Piece::default() });
        }
        InputKind::Rows { item, max } => {
            let rows = rows_in(values, pointer).clamp(1, *max);
            out.push(Piece { widget: "open", ..piece });
            for i in 0..rows {
                let at = format!("{pointer}/{i}");
                let row_input = Input { name: input.name, required: input.required && i == 0, kind: (**item).clone() };
                // A row's first piece (its group's start, or its one
                // control) carries its Remove button.
                let start = out.len();
                lay_out(&row_input, &at, Some(i), values, lang, out);
                out[start].remove = (rows > 1).then(|| at.clone());
            }
            let add = (rows < *max).then(|| pointer.to_owned());
            out.push(Piece { widget: "close", pointer: pointer.to_owned(), add, rows, ..Piece::default() });
        }
        InputKind::Set(allowed) => {
            let ticked: Vec<&str> = values.iter().filter(|(n, _)| n == pointer).map(|(_, v)| v.as_str()).collect();
            let options =
                allowed.iter().map(|v| ((*v).to_owned(), option_words(v, lang), ticked.contains(v))).collect();
            out.push(Piece { widget: "set", options, ..piece });
        }
        InputKind::Choice(allowed) => {
            let options = allowed.iter().map(|v| ((*v).to_owned(), option_words(v, lang), *v == value)).collect();
            out.push(Piece { widget: "choice", options, value, ..piece });
        }
        InputKind::YesNo => {
            let options = [(true, "true"), (false, "false")]
                .iter()
                .map(|(b, v)| ((*v).to_owned(), labels::yes_no(*b, lang).to_owned(), *v == value))
                .collect();
            out.push(Piece { widget: "choice", options, value, ..piece });
        }
        InputKind::Language => {
            out.push(Piece { widget: "choice", options: named(names::languages(lang)), value, ..piece })
        }
        InputKind::Country => {
            out.push(Piece { widget: "choice", options: named(names::countries(lang)), value, ..piece })
        }
        InputKind::Currency => {
            let mut options = named(names::currencies(lang));
            for option in &mut options {
                option.1 = format!("{} ({})", option.0, option.1);
            }
            out.push(Piece { widget: "choice", options, value, ..piece })
        }
        InputKind::Moment => {
            let zone = value_of(values, &format!("{pointer}{ZONE}")).unwrap_or_default().to_owned();
            out.push(Piece { widget: "moment", value, zone, ..piece });
        }
        InputKind::Line { max } => out.push(Piece { widget: "line", max: *max, value, ..piece }),
        InputKind::Paragraph { max } => out.push(Piece { widget: "paragraph", max: Some(*max), value, ..piece }),
        InputKind::Url => out.push(Piece { widget: "url", value, ..piece }),
        InputKind::Money => out.push(Piece { widget: "money", value, ..piece }),
        InputKind::Integer => out.push(Piece { widget: "integer", value, ..piece }),
        InputKind::Number => out.push(Piece { widget: "number", value, ..piece }),
        InputKind::Timezone => out.push(Piece { widget: "zone", value, ..piece }),
    }
}

/// A member's label in `lang` (its name, for a member with no words).
fn label_of(member: &'static str, lang: Lang) -> &'static str {
    labels::member(member, lang).map_or(member, |w| w.label)
}

fn option_words(value: &str, lang: Lang) -> String {
    labels::option(value, lang).map_or_else(|| value.replace('_', " "), str::to_owned)
}

/// The label of the member a JSON pointer names, with its row
/// (`Prices 2, Amount`), for a reason listed above the form.
pub fn pointer_label(kind: RecordType, pointer: &str, lang: Lang) -> String {
    let (words, _) = trail(kind, pointer, lang);
    if words.is_empty() { pointer.to_owned() } else { words.join(", ") }
}

/// The labels along a pointer, and how the member it ends at is edited.
fn trail(kind: RecordType, pointer: &str, lang: Lang) -> (Vec<String>, Option<InputKind>) {
    let (mut words, mut at) = (Vec::new(), None);
    let mut inputs = inputs(kind);
    let mut tokens = pointer.split('/').skip(1).peekable();
    while let Some(token) = tokens.next() {
        let Some(input) = inputs.iter().find(|i| i.name == token).cloned() else { break };
        let label = label_of(input.name, lang);
        let mut kind = input.kind;
        match (kind, tokens.peek().and_then(|t| t.parse::<usize>().ok())) {
            (InputKind::Rows { item, .. }, Some(i)) => {
                tokens.next();
                words.push(format!("{label} {}", i + 1));
                kind = *item;
            }
            (other, _) => {
                words.push(label.to_owned());
                kind = other;
            }
        }
        inputs = match &kind {
            InputKind::Group(inner) => inner.clone(),
            _ => Vec::new(),
        };
        at = Some(kind);
    }
    (words, at)
}

/// A reason in plain words for the person who typed the value: what to
/// write, where the spec's own words would name a format.
pub fn plain_reason(kind: RecordType, error: &RecordError, lang: Lang) -> String {
    let (_, input) = trail(kind, &error.pointer, lang);
    let fr = lang == Lang::Fr;
    match (error.code, input) {
        (ErrorCode::FieldMissing, _) if fr => "Obligatoire : à remplir.".into(),
        (ErrorCode::FieldMissing, _) => "Required: fill this in.".into(),
        (ErrorCode::FieldInvalid | ErrorCode::FieldType, Some(InputKind::Money)) if fr => {
            "Écrivez un montant comme 39.90 : des chiffres, puis au plus 4 décimales.".into()
        }
        (ErrorCode::FieldInvalid | ErrorCode::FieldType, Some(InputKind::Money)) => {
            "Write an amount such as 39.90: digits, then at most 4 decimals.".into()
        }
        (ErrorCode::FieldInvalid, Some(InputKind::Url)) if fr => {
            "Écrivez une adresse web complète, comme https://exemple.fr/page.".into()
        }
        (ErrorCode::FieldInvalid, Some(InputKind::Url)) => {
            "Write a full web address, such as https://example.com/page.".into()
        }
        _ => {
            let mut detail = error.detail.clone();
            if let Some(first) = detail.get(..1) {
                detail.replace_range(..1, &first.to_uppercase());
            }
            detail
        }
    }
}

/// The member that names a record of `kind` for a person (a product's
/// `product_name`, an event's `title`, …); `None` for a business file
/// (the business's own, named by its id) and the AI policy.
pub fn name_member(kind: RecordType) -> Option<&'static str> {
    match kind {
        RecordType::Products => Some("product_name"),
        RecordType::BusinessFiles => None,
        RecordType::Events | RecordType::Jobs => Some("title"),
        RecordType::Updates | RecordType::Ads => Some("headline"),
        RecordType::AiPolicy => None,
    }
}

/// The member holding the business's own id of a record of `kind`
/// (`business_product_id`, `event_id`, …).
pub fn own_id_member(kind: RecordType) -> Option<&'static str> {
    super::OWN_ID_FIELDS.iter().find(|(t, _)| *t == kind).map(|(_, member)| *member)
}

/// A record's name, as a person knows it (see [`name_member`]).
pub fn record_name(kind: RecordType, record: &Value) -> Option<String> {
    record.get(name_member(kind)?)?.as_str().map(str::to_owned)
}

/// A record's members in words, in the editor's order: `(member, label,
/// text)`, each value as a person reads it (names for codes, Yes/No, a
/// list on one line).
pub fn shown(kind: RecordType, record: &Value, lang: Lang) -> Vec<(&'static str, String, String)> {
    let Some(object) = record.as_object() else { return Vec::new() };
    inputs(kind)
        .into_iter()
        .filter_map(|input| {
            let value = object.get(input.name)?;
            let label = label_of(input.name, lang);
            Some((input.name, label.to_owned(), say(&input.kind, value, lang)))
        })
        .collect()
}

fn say(kind: &InputKind, value: &Value, lang: Lang) -> String {
    match (kind, value) {
        (InputKind::Group(inputs), Value::Object(object)) => inputs
            .iter()
            .filter_map(|input| {
                let label = label_of(input.name, lang);
                Some(format!("{label}: {}", say(&input.kind, object.get(input.name)?, lang)))
            })
            .collect::<Vec<_>>()
            .join(", "),
        (InputKind::Rows { item, .. }, Value::Array(items)) => {
            let separator = if matches!(item.as_ref(), InputKind::Group(_)) { "; " } else { ", " };
            items.iter().map(|i| say(item, i, lang)).collect::<Vec<_>>().join(separator)
        }
        (InputKind::Set(_), Value::Array(items)) => {
            items.iter().map(|i| option_words(&text_of(i), lang)).collect::<Vec<_>>().join(", ")
        }
        (InputKind::Choice(_), Value::String(s)) => option_words(s, lang),
        (InputKind::YesNo, Value::Bool(b)) => labels::yes_no(*b, lang).to_owned(),
        (InputKind::Language, Value::String(s)) => names::language_name(s, lang).unwrap_or(s).to_owned(),
        (InputKind::Country, Value::String(s)) => names::country_name(s, lang).unwrap_or(s).to_owned(),
        (InputKind::Moment, Value::String(s)) => match moment_parts(s) {
            Some((local, zone)) => format!("{} {zone}", local.replace('T', " ")),
            None => s.clone(),
        },
        (_, other) => text_of(other),
    }
}

/// The members whose words differ between `before` and `after`:
/// `(label, before, after)`, a member added or left out with an empty
/// side, in the editor's order.
pub fn changes(kind: RecordType, before: &Value, after: &Value, lang: Lang) -> Vec<(String, String, String)> {
    let (old, new) = (shown(kind, before, lang), shown(kind, after, lang));
    let text = |list: &[(&str, String, String)], name: &str| {
        list.iter().find(|(n, _, _)| *n == name).map(|(_, _, t)| t.clone()).unwrap_or_default()
    };
    inputs(kind)
        .into_iter()
        .map(|input| {
            let label = label_of(input.name, lang).to_owned();
            (label, text(&old, input.name), text(&new, input.name))
        })
        .filter(|(_, was, is)| was != is)
        .collect()
}

/// Canonical JSON bytes cut after each comma between two members of the
/// top-level object, for display: joined, the pieces are the bytes, and a
/// line ends only where a member does, never inside a value.
pub fn member_pieces(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let (mut pieces, mut start, mut depth, mut in_string, mut escaped) = (Vec::new(), 0, 0usize, false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => {
                pieces.push(text[start..=i].to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(text[start..].to_owned());
    pieces
}

#[cfg(test)]
mod tests;
