//! `service/updates/1`: news with a date it stops being relevant.

use serde_json::{Map, Value};

use super::form::{Checker, Field, Form, NAME, long_text, opt, req};
use super::{MAX_LONG_TEXT, UPDATE_TYPES};

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("update_id", Form::OwnId),
    req("countries", Form::Countries),
    req("headline", Form::Text(NAME)),
    req("body", Form::Text(long_text(MAX_LONG_TEXT))),
    req("update_type", Form::Enum(UPDATE_TYPES)),
    req("relevant_until", Form::Timestamp),
    opt("url", Form::Url),
];

/// No rule spans two members: `relevant_until` in the past is the caller's
/// concern, since this crate has no clock.
pub(super) fn cross(_checker: &mut Checker<'_>, _map: &Map<String, Value>) {}
