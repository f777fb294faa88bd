//! The search request (retrieval 2.2, 2.3, 8): parsed and judged against
//! the collection's allow-list, never rewritten. What comes out is a typed
//! query an index can run as it is; what is refused names the member.

pub mod fields;
pub mod serve;

use std::ops::Bound;

use serde_json::{Map, Value};

use crate::ids::RecordType;
use crate::problem::Code;
use fields::{Collection, FilterField, Kind, Op};

pub const MAX_ROWS: u64 = 50;
pub const MAX_CLAUSES: usize = 20;
pub const MAX_IN_VALUES: usize = 10;
pub const MAX_SORT_KEYS: usize = 3;
pub const MAX_Q_CHARS: usize = 512;
pub const MAX_STRING_CHARS: usize = 256;
/// The largest `near` radius (not shown in the spec; chosen here).
pub const MAX_RADIUS_KM: f64 = 1_000.0;
pub const MAX_TOPIC_KEYWORDS: usize = 10;

/// A value a clause compares with, in the row's own terms: money and
/// timestamps become numbers (Unix seconds for timestamps).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Str(String),
    Bool(bool),
    Num(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Eq(Scalar),
    Ne(Scalar),
    In(Vec<Scalar>),
    Nin(Vec<Scalar>),
    Lt(f64),
    Lte(f64),
    Gt(f64),
    Gte(f64),
    Near { lat: f64, lng: f64, radius_km: f64 },
}

impl Condition {
    /// The range a comparison admits (`lt`, `lte`, `gt`, `gte`); `None`
    /// for any other operator.
    pub fn bounds(&self) -> Option<(Bound<f64>, Bound<f64>)> {
        match self {
            Condition::Lt(n) => Some((Bound::Unbounded, Bound::Excluded(*n))),
            Condition::Lte(n) => Some((Bound::Unbounded, Bound::Included(*n))),
            Condition::Gt(n) => Some((Bound::Excluded(*n), Bound::Unbounded)),
            Condition::Gte(n) => Some((Bound::Included(*n), Bound::Unbounded)),
            _ => None,
        }
    }
}

/// A clause on one row field. For products, `price_amount` and
/// `price_currency` are already the country's `price_{CC}` and
/// `price_currency_{CC}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub field: String,
    pub kind: Kind,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Asc,
    Desc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    /// `_text_match` or the row field to sort by (`price_FR` for a product's
    /// `price_amount`).
    pub field: String,
    pub direction: Direction,
}

/// A judged search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    pub collection: RecordType,
    pub country: String,
    /// `None` for `*`: everything the filter admits.
    pub text: Option<String>,
    pub query_by: Vec<&'static str>,
    pub clauses: Vec<Clause>,
    pub sort: Vec<SortKey>,
    pub limit: usize,
    pub client_query_id: Option<String>,
    pub session_ref: Option<String>,
    pub topic_keywords: Vec<String>,
}

/// A refusal: the problem code and a detail naming the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: Code,
    pub detail: String,
}

fn refuse(code: Code, detail: impl Into<String>) -> Refusal {
    Refusal { code, detail: detail.into() }
}

fn invalid(detail: impl Into<String>) -> Refusal {
    refuse(Code::RequestInvalid, detail)
}

/// Judges a search body. `typed` is the collection of a typed address
/// (`/v1/products/search`), which the body's `collection` must match.
pub fn judge(body: &[u8], typed: Option<RecordType>) -> Result<SearchQuery, Refusal> {
    let value: Value = serde_json::from_slice(body).map_err(|e| invalid(format!("the body is not JSON: {e}")))?;
    let Value::Object(request) = value else { return Err(invalid("the body is a JSON object")) };
    const MEMBERS: [&str; 9] = [
        "collection",
        "q",
        "query_by",
        "filter",
        "sort_by",
        "limit",
        "client_query_id",
        "session_ref",
        "topic_keywords",
    ];
    if let Some(unknown) = request.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(invalid(format!("{unknown} is not a member of a search request")));
    }
    let collection = match (request.get("collection"), typed) {
        (None, Some(t)) => t,
        (None, None) => return Err(invalid("collection is required")),
        (Some(v), typed) => {
            let named = v
                .as_str()
                .and_then(RecordType::from_name)
                .filter(|t| t.is_collection())
                .ok_or_else(|| invalid("collection is one of products, business_files, events, jobs, updates"))?;
            if typed.is_some_and(|t| t != named) {
                return Err(invalid("collection does not match the address"));
            }
            named
        }
    };
    let spec = fields::collection(collection).ok_or_else(|| invalid("collection"))?;

    let text = match request.get("q") {
        None => None,
        Some(Value::String(q)) if q.chars().count() > MAX_Q_CHARS => {
            return Err(invalid(format!("q is at most {MAX_Q_CHARS} characters")));
        }
        Some(Value::String(q)) if q.trim() == "*" || q.trim().is_empty() => None,
        Some(Value::String(q)) => Some(q.clone()),
        Some(_) => return Err(invalid("q is a string")),
    };
    let query_by = match request.get("query_by") {
        None => spec.text_fields.to_vec(),
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut out = Vec::new();
            for item in items {
                let name = item.as_str().ok_or_else(|| invalid("query_by holds field names"))?;
                let field = spec.text_fields.iter().find(|f| **f == name).ok_or_else(|| {
                    refuse(Code::UnknownField, format!("{name} is not a text field of {}", collection.name()))
                })?;
                if out.contains(field) {
                    return Err(invalid(format!("query_by names {name} twice")));
                }
                out.push(*field);
            }
            out
        }
        Some(_) => return Err(invalid("query_by is a non-empty array of text fields")),
    };

    let (country, clauses) = judge_filter(request.get("filter"), spec)?;
    let sort = judge_sort(request.get("sort_by"), spec, &country)?;
    let limit = match request.get("limit") {
        None => MAX_ROWS,
        Some(v) => v.as_u64().filter(|n| (1..=MAX_ROWS).contains(n)).ok_or_else(|| invalid("limit is 1 to 50"))?,
    } as usize;
    let short_string = |name: &str| -> Result<Option<String>, Refusal> {
        match request.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= MAX_STRING_CHARS => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("{name} is a string of at most {MAX_STRING_CHARS} characters"))),
        }
    };
    let client_query_id = short_string("client_query_id")?;
    let session_ref = short_string("session_ref")?;
    let topic_keywords = match request.get("topic_keywords") {
        None => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_TOPIC_KEYWORDS => items
            .iter()
            .map(|i| i.as_str().filter(|s| s.chars().count() <= MAX_STRING_CHARS).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| invalid("topic_keywords holds strings of at most 256 characters"))?,
        Some(_) => return Err(invalid("topic_keywords is an array of at most 10 strings")),
    };
    Ok(SearchQuery {
        collection,
        country,
        text,
        query_by,
        clauses,
        sort,
        limit,
        client_query_id,
        session_ref,
        topic_keywords,
    })
}

/// The filter: exactly one `country` clause, at most 20 clauses in all.
fn judge_filter(filter: Option<&Value>, spec: &Collection) -> Result<(String, Vec<Clause>), Refusal> {
    let all = match filter {
        None => return Err(refuse(Code::FilterRequired, "filter with exactly one country clause is required")),
        Some(Value::Object(f)) if f.len() == 1 && f.contains_key("all") => f["all"].as_array(),
        Some(_) => None,
    }
    .ok_or_else(|| invalid("filter is {\"all\": [clause, ...]}"))?;
    if all.len() > MAX_CLAUSES {
        return Err(invalid(format!("filter holds at most {MAX_CLAUSES} clauses")));
    }
    let mut country = None;
    let mut countries = 0;
    let mut raw = Vec::new();
    for clause in all {
        let Some((name, value)) = clause.as_object().filter(|c| c.len() == 1).and_then(|c| c.iter().next()) else {
            return Err(invalid("a clause is an object with one member, the field name"));
        };
        if name == "country" {
            countries += 1;
            country = Some(judge_country(value)?);
        } else {
            raw.push((name.as_str(), value));
        }
    }
    let country = match (countries, country) {
        (1, Some(c)) => c,
        _ => return Err(refuse(Code::FilterRequired, "exactly one clause names country")),
    };
    let mut clauses = Vec::with_capacity(raw.len());
    for (name, value) in raw {
        let field = spec.filter(name).ok_or_else(|| {
            refuse(Code::UnknownField, format!("{name} is not a filter field of {}", spec.kind.name()))
        })?;
        clauses.push(judge_clause(field, value, spec.kind, &country)?);
    }
    Ok((country, clauses))
}

/// The country clause takes a bare code or `{"eq": code}`.
fn judge_country(value: &Value) -> Result<String, Refusal> {
    let code = match value {
        Value::String(c) => c.as_str(),
        Value::Object(ops) if ops.len() == 1 && ops.contains_key("eq") => {
            ops["eq"].as_str().ok_or_else(|| invalid("country is an ISO 3166-1 alpha-2 code"))?
        }
        Value::Object(ops) => {
            let op = ops.keys().find(|k| *k != "eq").cloned().unwrap_or_default();
            return Err(refuse(Code::OperatorNotAllowed, format!("country takes eq, not {op}")));
        }
        _ => return Err(invalid("country is an ISO 3166-1 alpha-2 code")),
    };
    if !crate::ids::is_country(code) {
        return Err(invalid(format!("country {code} is not an ISO 3166-1 alpha-2 code")));
    }
    Ok(code.to_owned())
}

/// The row field a filter or sort name stands for in `country`.
fn row_field(collection: RecordType, name: &str, country: &str) -> String {
    match (collection, name) {
        (RecordType::Products, "price_amount") => format!("price_{country}"),
        (RecordType::Products, "price_currency") => format!("price_currency_{country}"),
        _ => name.to_owned(),
    }
}

fn judge_clause(field: &FilterField, value: &Value, collection: RecordType, country: &str) -> Result<Clause, Refusal> {
    let ops: Vec<(Op, &Value)> = match value {
        Value::Object(ops) if field.kind == Kind::Geo || ops.keys().all(|k| Op::parse(k).is_some()) => {
            if ops.is_empty() {
                return Err(invalid(format!("{}: an operator object needs an operator", field.name)));
            }
            let mut out = Vec::new();
            for (name, v) in ops {
                let op = Op::parse(name)
                    .ok_or_else(|| refuse(Code::OperatorNotAllowed, format!("{} does not take {name}", field.name)))?;
                out.push((op, v));
            }
            out
        }
        Value::Object(ops) => {
            let name = ops.keys().find(|k| Op::parse(k).is_none()).cloned().unwrap_or_default();
            return Err(refuse(Code::OperatorNotAllowed, format!("{name} is not an operator")));
        }
        bare => vec![(Op::Eq, bare)],
    };
    let mut conditions = Vec::with_capacity(ops.len());
    for (op, v) in ops {
        if !field.ops.contains(&op) {
            return Err(refuse(
                Code::OperatorNotAllowed,
                format!("{} does not take {op:?}", field.name).to_lowercase(),
            ));
        }
        conditions.push(condition(field, op, v)?);
    }
    Ok(Clause { field: row_field(collection, field.name, country), kind: field.kind, conditions })
}

fn condition(field: &FilterField, op: Op, v: &Value) -> Result<Condition, Refusal> {
    let name = field.name;
    let many = |v: &Value| -> Result<Vec<Scalar>, Refusal> {
        let items = v.as_array().ok_or_else(|| invalid(format!("{name}: in and nin take an array")))?;
        if items.is_empty() || items.len() > MAX_IN_VALUES {
            return Err(invalid(format!("{name}: 1 to {MAX_IN_VALUES} values")));
        }
        items.iter().map(|i| scalar(field, i)).collect()
    };
    let number = |v: &Value| -> Result<f64, Refusal> {
        match scalar(field, v)? {
            Scalar::Num(n) => Ok(n),
            _ => Err(invalid(format!("{name} compares numbers"))),
        }
    };
    Ok(match op {
        Op::Eq => Condition::Eq(scalar(field, v)?),
        Op::Ne => Condition::Ne(scalar(field, v)?),
        Op::In => Condition::In(many(v)?),
        Op::Nin => Condition::Nin(many(v)?),
        Op::Lt => Condition::Lt(number(v)?),
        Op::Lte => Condition::Lte(number(v)?),
        Op::Gt => Condition::Gt(number(v)?),
        Op::Gte => Condition::Gte(number(v)?),
        Op::Near => near(name, v)?,
    })
}

fn near(name: &str, v: &Value) -> Result<Condition, Refusal> {
    let bad = || invalid(format!("{name}: near is {{lat, lng, radius_km}}"));
    let point: &Map<String, Value> = v.as_object().filter(|p| p.len() == 3).ok_or_else(bad)?;
    let get = |k: &str| point.get(k).and_then(Value::as_f64).ok_or_else(bad);
    let (lat, lng, radius_km) = (get("lat")?, get("lng")?, get("radius_km")?);
    if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lng) {
        return Err(invalid(format!("{name}: lat is -90 to 90 and lng -180 to 180")));
    }
    if !(radius_km > 0.0 && radius_km <= MAX_RADIUS_KM) {
        return Err(invalid(format!("{name}: radius_km is above 0 and at most {MAX_RADIUS_KM}")));
    }
    Ok(Condition::Near { lat, lng, radius_km })
}

/// One value in the field's kind, in the row's terms.
fn scalar(field: &FilterField, v: &Value) -> Result<Scalar, Refusal> {
    let name = field.name;
    match (field.kind, v) {
        (Kind::Str, Value::String(s)) if s.chars().count() <= MAX_STRING_CHARS => Ok(Scalar::Str(s.clone())),
        (Kind::Str, Value::String(_)) => Err(invalid(format!("{name}: strings are at most 256 characters"))),
        (Kind::Currency, Value::String(s)) if crate::ids::is_currency(s) => Ok(Scalar::Str(s.clone())),
        (Kind::Bool, Value::Bool(b)) => Ok(Scalar::Bool(*b)),
        (Kind::Money, Value::String(s)) => crate::records::money_units(s)
            .map(|units| Scalar::Num(units as f64 / 10_000.0))
            .ok_or_else(|| invalid(format!("{name}: money is a decimal string such as \"12.50\""))),
        (Kind::Money, _) => Err(invalid(format!("{name}: money is a decimal string, never a number"))),
        (Kind::Int, Value::Number(n)) if n.is_i64() => Ok(Scalar::Num(n.as_i64().unwrap_or_default() as f64)),
        (Kind::Timestamp, Value::Number(n)) if n.is_i64() => Ok(Scalar::Num(n.as_i64().unwrap_or_default() as f64)),
        (Kind::Timestamp, Value::String(s)) => crate::time::UnixMs::parse_rfc3339(s)
            .map(|t| Scalar::Num(t.as_secs() as f64))
            .ok_or_else(|| invalid(format!("{name}: a timestamp is RFC 3339 or Unix seconds"))),
        (kind, _) => Err(invalid(format!("{name}: a value of kind {kind:?}").to_lowercase())),
    }
}

/// `sort_by`: one to three `field:asc|desc`, comma-separated.
fn judge_sort(sort_by: Option<&Value>, spec: &Collection, country: &str) -> Result<Vec<SortKey>, Refusal> {
    let text = match sort_by {
        None => return Err(refuse(Code::SortRequired, "sort_by is required; for relevance write _text_match:desc")),
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(_) => return Err(invalid("sort_by is a string such as \"price_amount:asc\"")),
    };
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > MAX_SORT_KEYS {
        return Err(invalid(format!("sort_by names at most {MAX_SORT_KEYS} keys")));
    }
    let mut keys: Vec<SortKey> = Vec::with_capacity(parts.len());
    for part in parts {
        let (name, direction) =
            part.split_once(':').ok_or_else(|| invalid(format!("{part}: write field:asc or field:desc")))?;
        let direction = match direction {
            "asc" => Direction::Asc,
            "desc" => Direction::Desc,
            other => return Err(invalid(format!("{name}: {other} is not asc or desc"))),
        };
        if !spec.sortable(name) {
            return Err(refuse(Code::SortNotAllowed, format!("{name} is not a sort key of {}", spec.kind.name())));
        }
        let field = row_field(spec.kind, name, country);
        if keys.iter().any(|k| k.field == field) {
            return Err(invalid(format!("sort_by names {name} twice")));
        }
        keys.push(SortKey { field, direction });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests;

/// Which rows a search's `sponsored` clauses admit. Paid placement is a
/// fact of serve time (the region's campaigns), not of the indexed row, so
/// the index cannot judge it: the clauses are taken out of the query and
/// answered by record id beside it, from the same campaigns that mark rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaidRows {
    /// No clause on `sponsored`, or one every row meets.
    Any,
    /// Only rows served with `sponsored: true`.
    Only,
    /// Only rows served without it.
    Never,
    /// Clauses no row meets (`true` and `false` both required).
    None,
}

/// The query without its `sponsored` clauses, and what they admit.
pub fn split_paid(mut q: SearchQuery) -> (SearchQuery, PaidRows) {
    let (mut paid, mut unpaid) = (true, true);
    for clause in q.clauses.iter().filter(|c| c.field == "sponsored") {
        for condition in &clause.conditions {
            let admits = |marked: bool| match condition {
                Condition::Eq(Scalar::Bool(b)) => *b == marked,
                Condition::Ne(Scalar::Bool(b)) => *b != marked,
                Condition::In(vs) => vs.contains(&Scalar::Bool(marked)),
                Condition::Nin(vs) => !vs.contains(&Scalar::Bool(marked)),
                // Judging admits only booleans on this field.
                _ => true,
            };
            paid &= admits(true);
            unpaid &= admits(false);
        }
    }
    q.clauses.retain(|c| c.field != "sponsored");
    let rows = match (paid, unpaid) {
        (true, true) => PaidRows::Any,
        (true, false) => PaidRows::Only,
        (false, true) => PaidRows::Never,
        (false, false) => PaidRows::None,
    };
    (q, rows)
}
