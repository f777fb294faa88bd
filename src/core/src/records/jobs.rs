//! `service/jobs/1`: a vacancy.

use serde_json::{Map, Value};

use super::form::{Checker, Field, Form, GEO, NAME, PLACE, long_text, money_member, opt, req};
use super::{EMPLOYMENT_TYPES, ErrorCode, MAX_LONG_TEXT, SALARY_PERIODS, WORK_ARRANGEMENTS};

/// Members that state a salary: required in part when `salary_disclosed` is
/// true, all absent when it is false.
pub const SALARY_FIELDS: [&str; 4] = ["salary_min", "salary_max", "salary_currency", "salary_period"];
/// Required when `salary_disclosed` is true.
pub const SALARY_REQUIRED: [&str; 3] = ["salary_min", "salary_currency", "salary_period"];

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("job_id", Form::OwnId),
    req("countries", Form::Countries),
    req("title", Form::Text(NAME)),
    req("description", Form::Text(long_text(MAX_LONG_TEXT))),
    req("employment_type", Form::Enum(EMPLOYMENT_TYPES)),
    req("salary_disclosed", Form::Bool),
    opt("category", Form::Slug),
    opt("work_arrangement", Form::Enum(WORK_ARRANGEMENTS)),
    opt("city", Form::Text(PLACE)),
    opt("region", Form::Text(PLACE)),
    opt("geo", GEO),
    opt("salary_min", Form::Money),
    opt("salary_max", Form::Money),
    opt("salary_currency", Form::Currency),
    opt("salary_period", Form::Enum(SALARY_PERIODS)),
    opt("closing_date", Form::Timestamp),
];

pub(super) fn cross(checker: &mut Checker<'_>, map: &Map<String, Value>) {
    match map.get("salary_disclosed").and_then(Value::as_bool) {
        Some(true) => {
            for name in SALARY_REQUIRED {
                if !map.contains_key(name) {
                    let detail = format!("{name} is required when salary_disclosed is true");
                    checker.push(ErrorCode::FieldMissing, &format!("/{name}"), detail);
                }
            }
        }
        Some(false) => {
            for name in SALARY_FIELDS {
                if map.contains_key(name) {
                    let detail = format!("{name} must be absent when salary_disclosed is false");
                    checker.push(ErrorCode::FieldInvalid, &format!("/{name}"), detail);
                }
            }
        }
        // A missing or mistyped flag is already reported; guessing would add noise.
        None => {}
    }
    if let (Some(min), Some(max)) = (money_member(map, "salary_min"), money_member(map, "salary_max"))
        && max < min
    {
        checker.push(ErrorCode::FieldInvalid, "/salary_max", "salary_max is below salary_min");
    }
}
