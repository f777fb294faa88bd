//! `service/events/1`: something happening at a time and place.

use serde_json::{Map, Value};

use super::form::{Checker, Field, Form, GEO, NAME, PLACE, long_text, money_member, opt, req, time_member};
use super::{AGE_RESTRICTIONS, ATTENDANCE_MODES, EVENT_TYPES, ErrorCode, MAX_LONG_TEXT};

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("event_id", Form::OwnId),
    req("countries", Form::Countries),
    req("title", Form::Text(NAME)),
    req("start_at", Form::Timestamp),
    req("end_at", Form::Timestamp),
    req("event_type", Form::Enum(EVENT_TYPES)),
    req("attendance_mode", Form::Enum(ATTENDANCE_MODES)),
    opt("description", Form::Text(long_text(MAX_LONG_TEXT))),
    opt("age_restriction", Form::Enum(AGE_RESTRICTIONS)),
    opt("timezone", Form::Timezone),
    opt("region", Form::Text(PLACE)),
    opt("city", Form::Text(PLACE)),
    opt("geo", GEO),
    opt("ticketed", Form::Bool),
    opt("price_min", Form::Money),
    opt("price_max", Form::Money),
    opt("price_currency", Form::Currency),
];

/// `end_at` not before `start_at`; `price_max` not below `price_min`;
/// `price_currency` exactly when a price is given.
pub(super) fn cross(checker: &mut Checker<'_>, map: &Map<String, Value>) {
    if let (Some(start), Some(end)) = (time_member(map, "start_at"), time_member(map, "end_at"))
        && end < start
    {
        checker.push(ErrorCode::FieldInvalid, "/end_at", "end_at is before start_at");
    }
    if let (Some(min), Some(max)) = (money_member(map, "price_min"), money_member(map, "price_max"))
        && max < min
    {
        checker.push(ErrorCode::FieldInvalid, "/price_max", "price_max is below price_min");
    }
    let priced = map.contains_key("price_min") || map.contains_key("price_max");
    match (priced, map.contains_key("price_currency")) {
        (true, false) => {
            checker.push(ErrorCode::FieldMissing, "/price_currency", "price_currency is required with a price");
        }
        (false, true) => {
            checker.push(ErrorCode::FieldInvalid, "/price_currency", "price_currency without price_min or price_max");
        }
        _ => {}
    }
}
