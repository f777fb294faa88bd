//! The portal's record editor: each collection's members as form inputs,
//! read from the same field tables [`super::validate`] checks, and a form's
//! values turned back into a record's exact bytes.
//!
//! The editor only shapes values (a list is one item a line, a number is
//! parsed, an object is JSON); every rule of the records spec is judged by
//! `validate` on the bytes it makes, so a person sees the reasons a push
//! would get, with the same codes and pointers.

use serde_json::{Map, Value};

use super::form::{Field, Form};
use super::{ErrorCode, RecordError};
use crate::canonical::canonicalize;
use crate::ids::RecordType;

/// How one member is edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// One line of text, at most `max` characters where the schema says.
    Line {
        max: Option<usize>,
    },
    /// Several lines of text.
    Paragraph {
        max: usize,
    },
    /// One of the values, or none.
    Choice(&'static [&'static str]),
    /// Yes, no, or not stated.
    YesNo,
    /// One item a line (commas also separate items where no item has one).
    List {
        commas: bool,
    },
    Integer,
    Number,
    /// An object or a list of objects, as JSON.
    Json,
}

/// One member of a record, as the editor shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
    pub name: &'static str,
    pub required: bool,
    pub kind: InputKind,
}

impl Input {
    /// The kind name a template switches on.
    pub fn widget(&self) -> &'static str {
        match self.kind {
            InputKind::Line { .. } | InputKind::Integer | InputKind::Number => "line",
            InputKind::Paragraph { .. } => "paragraph",
            InputKind::Choice(_) | InputKind::YesNo => "choice",
            InputKind::List { .. } => "list",
            InputKind::Json => "json",
        }
    }

    /// The values a choice offers, after the empty one.
    pub fn options(&self) -> &'static [&'static str] {
        match self.kind {
            InputKind::Choice(values) => values,
            InputKind::YesNo => &["true", "false"],
            _ => &[],
        }
    }

    /// The longest text the schema allows, for the input's `maxlength`.
    pub fn max_chars(&self) -> Option<usize> {
        match self.kind {
            InputKind::Line { max } => max,
            InputKind::Paragraph { max } => Some(max),
            _ => None,
        }
    }
}

fn kind_of(form: &Form) -> InputKind {
    match *form {
        Form::Text(text) if text.multiline => InputKind::Paragraph { max: text.max },
        Form::Text(text) => InputKind::Line { max: Some(text.max) },
        Form::Enum(values) => InputKind::Choice(values),
        Form::Bool => InputKind::YesNo,
        Form::Countries | Form::Tags | Form::EnumSet(_) | Form::Hostnames => InputKind::List { commas: true },
        Form::TextList { .. } => InputKind::List { commas: false },
        Form::Int { .. } => InputKind::Integer,
        Form::Number { .. } => InputKind::Number,
        Form::Object(_) | Form::ObjectList { .. } => InputKind::Json,
        Form::Schema
        | Form::Language
        | Form::OwnId
        | Form::Slug
        | Form::Country
        | Form::Currency
        | Form::Url
        | Form::HttpsUrl
        | Form::Money
        | Form::Timestamp
        | Form::Timezone
        | Form::Gtin => InputKind::Line { max: None },
    }
}

/// The members of a collection's record, in the schema's order, without
/// `schema` (the editor sets it). Empty for a type that is not a collection.
pub fn inputs(kind: RecordType) -> Vec<Input> {
    super::definition(kind)
        .map_or(&[][..], |d| d.fields)
        .iter()
        .filter(|f| !matches!(f.form, Form::Schema))
        .map(|f: &Field| Input { name: f.name, required: f.required, kind: kind_of(&f.form) })
        .collect()
}

/// A record of `kind` from a form's values (member name, text as typed).
/// A blank value leaves the member out. What cannot be shaped (a number that
/// is not one, JSON that does not parse) is `field_type` at the member's
/// pointer, all at once; members the form does not know are ignored.
pub fn record_from_form(kind: RecordType, values: &[(String, String)]) -> Result<Vec<u8>, Vec<RecordError>> {
    let schema = super::schema_name(kind).ok_or_else(|| {
        vec![RecordError::new(ErrorCode::SchemaUnknown, "/schema", "not a collection the editor knows")]
    })?;
    let mut record = Map::new();
    record.insert("schema".into(), Value::String(schema.into()));
    let mut errors = Vec::new();
    for input in inputs(kind) {
        let Some(text) = values.iter().find(|(n, _)| n == input.name).map(|(_, v)| v.trim()) else { continue };
        if text.is_empty() {
            continue;
        }
        let pointer = format!("/{}", input.name);
        let shaped = match input.kind {
            InputKind::Line { .. } | InputKind::Choice(_) => Ok(Value::String(text.into())),
            InputKind::Paragraph { .. } => Ok(Value::String(text.replace("\r\n", "\n"))),
            InputKind::YesNo => match text {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err("is yes or no"),
            },
            InputKind::List { commas } => {
                let items = text
                    .split(|c| c == '\n' || (commas && c == ','))
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(s.into()));
                Ok(Value::Array(items.collect()))
            }
            InputKind::Integer => text.parse::<i64>().map(Value::from).map_err(|_| "is a whole number"),
            InputKind::Number => {
                text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).ok_or("is a number")
            }
            InputKind::Json => serde_json::from_str::<Value>(text).map_err(|_| "is JSON"),
        };
        match shaped {
            Ok(value) => {
                record.insert(input.name.into(), value);
            }
            Err(what) => errors.push(RecordError::new(ErrorCode::FieldType, pointer, format!("{} {what}", input.name))),
        }
    }
    if errors.is_empty() { Ok(canonicalize(&Value::Object(record))) } else { Err(errors) }
}

/// A record's members as the form shows them (editing a saved record).
pub fn form_values(kind: RecordType, record: &Value) -> Vec<(String, String)> {
    let Some(object) = record.as_object() else { return Vec::new() };
    inputs(kind)
        .into_iter()
        .filter_map(|input| {
            let value = object.get(input.name)?;
            let text = match (input.kind, value) {
                (_, Value::String(s)) => s.clone(),
                (InputKind::List { .. }, Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join("\n"),
                (_, other) => other.to_string(),
            };
            Some((input.name.to_owned(), text))
        })
        .collect()
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

/// The members whose shown values differ between `before` and `after`
/// (each a record's [`form_values`]): `(member, before, after)`, a member
/// added or left out with an empty side, in the editor's order.
pub fn changes(kind: RecordType, before: &Value, after: &Value) -> Vec<(&'static str, String, String)> {
    let (old, new) = (form_values(kind, before), form_values(kind, after));
    let value = |values: &[(String, String)], name: &str| {
        values.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    inputs(kind)
        .into_iter()
        .map(|input| (input.name, value(&old, input.name), value(&new, input.name)))
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
mod tests {
    use super::*;
    use crate::records::{ValidationContext, examples, validate};

    fn ctx() -> ValidationContext {
        ValidationContext::new(vec!["Lumio".into()], vec!["Acme".into()], None)
    }

    #[test]
    fn every_collection_offers_its_members_without_schema() {
        for kind in RecordType::COLLECTIONS {
            let inputs = inputs(kind);
            assert!(!inputs.is_empty(), "{kind:?}");
            assert!(inputs.iter().all(|i| i.name != "schema"));
            assert!(inputs.iter().any(|i| i.required));
        }
        assert!(inputs(RecordType::AiPolicy).is_empty());
        let event = inputs(RecordType::Events);
        let title = event.iter().find(|i| i.name == "title").unwrap();
        assert_eq!((title.widget(), title.max_chars(), title.required), ("line", Some(super::super::MAX_NAME), true));
        let mode = event.iter().find(|i| i.name == "attendance_mode").unwrap();
        assert!(mode.options().contains(&"in_person"));
        assert_eq!(event.iter().find(|i| i.name == "geo").unwrap().widget(), "json");
    }

    /// Each example record, shown in the form and read back, is the same
    /// record, and it validates: the editor loses nothing.
    #[test]
    fn an_example_round_trips_through_the_form() {
        for kind in RecordType::COLLECTIONS {
            let example = examples::example(kind);
            let values = form_values(kind, &example);
            let bytes = record_from_form(kind, &values).unwrap();
            assert_eq!(bytes, canonicalize(&example), "{kind:?}");
            assert!(validate(&bytes, kind, &ctx()).is_ok(), "{kind:?}");
        }
    }

    #[test]
    fn a_record_is_named_by_its_name_member_and_an_edit_lists_what_changed() {
        for kind in RecordType::COLLECTIONS {
            let example = examples::example(kind);
            if kind != RecordType::BusinessFiles {
                let name = record_name(kind, &example).unwrap_or_else(|| panic!("{kind:?} names its records"));
                assert!(!name.is_empty());
                assert!(inputs(kind).iter().any(|i| Some(i.name) == name_member(kind) && i.required), "{kind:?}");
            }
            let own = own_id_member(kind).unwrap_or_else(|| panic!("{kind:?} has an own id"));
            assert!(example.get(own).and_then(Value::as_str).is_some(), "{kind:?}: {own}");
        }
        let before = examples::example(RecordType::Events);
        let mut after = before.clone();
        after["title"] = Value::String("A new title".into());
        after.as_object_mut().unwrap().remove("geo");
        let changed = changes(RecordType::Events, &before, &after);
        let names: Vec<&str> = changed.iter().map(|c| c.0).collect();
        assert_eq!(names.len(), 1 + usize::from(before.get("geo").is_some()), "{changed:?}");
        assert!(changed.iter().any(|(n, _, is)| *n == "title" && is == "A new title"));
        assert!(changes(RecordType::Events, &before, &before).is_empty());
    }

    #[test]
    fn the_bytes_are_cut_between_top_level_members_only_and_join_back_whole() {
        let bytes = br#"{"a":"x, \"y\"","b":[1,2],"c":{"d":1,"e":"f"}}"#;
        let pieces = member_pieces(bytes);
        assert_eq!(pieces, [r#"{"a":"x, \"y\"","#, r#""b":[1,2],"#, r#""c":{"d":1,"e":"f"}}"#]);
        assert_eq!(pieces.concat().as_bytes(), bytes);
        let example = canonicalize(&examples::example(RecordType::Products));
        assert_eq!(member_pieces(&example).concat().as_bytes(), example.as_slice());
    }

    #[test]
    fn blank_values_are_left_out_and_unshapeable_ones_are_reported_together() {
        let values = vec![
            ("title".to_owned(), "  ".to_owned()),
            ("geo".to_owned(), "{not json".to_owned()),
            ("ticketed".to_owned(), "maybe".to_owned()),
            ("countries".to_owned(), "FR, DE\nBE".to_owned()),
            ("unknown".to_owned(), "x".to_owned()),
        ];
        let errors = record_from_form(RecordType::Events, &values).unwrap_err();
        let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(pointers, ["/geo", "/ticketed"]);
        assert!(errors.iter().all(|e| e.code == ErrorCode::FieldType));
        let ok = record_from_form(RecordType::Events, &values[3..]).unwrap();
        assert_eq!(ok, br#"{"countries":["FR","DE","BE"],"schema":"service/events/1"}"#);
        // What the form makes is judged by the records' own rules.
        let reasons = validate(&ok, RecordType::Events, &ctx()).unwrap_err();
        assert!(reasons.iter().any(|e| e.code == ErrorCode::FieldMissing && e.pointer == "/title"));
    }
}
