//! Each collection's text fields, sort keys and filter fields with their
//! operators, exactly as retrieval section 2.3 lists them. Nothing outside
//! these tables is searchable, filterable or sortable.

use crate::ids::RecordType;

/// The kind of value a filter field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Bool,
    /// A decimal string in a filter, a number on a row.
    Money,
    /// A whole number (`year_established`).
    Int,
    /// RFC 3339 or Unix seconds in a filter, Unix seconds on a row.
    Timestamp,
    /// An ISO 4217 code.
    Currency,
    Geo,
}

/// Operators a clause may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    In,
    Nin,
    Lt,
    Lte,
    Gt,
    Gte,
    Near,
}

impl Op {
    pub fn parse(name: &str) -> Option<Op> {
        Some(match name {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "in" => Op::In,
            "nin" => Op::Nin,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "near" => Op::Near,
            _ => return None,
        })
    }
}

pub struct FilterField {
    pub name: &'static str,
    pub kind: Kind,
    pub ops: &'static [Op],
}

pub struct Collection {
    pub kind: RecordType,
    pub text_fields: &'static [&'static str],
    /// Besides `_text_match`, which every collection sorts by.
    pub sort_keys: &'static [&'static str],
    pub filters: &'static [FilterField],
}

use Kind::*;
use Op::*;

const STR_EQ_IN: &[Op] = &[Eq, In];
const STR_ALL: &[Op] = &[Eq, Ne, In, Nin];
const STR_EQ_NE_IN: &[Op] = &[Eq, Ne, In];
const BOOL_EQ: &[Op] = &[Eq];
const RANGE_EQ: &[Op] = &[Eq, Lt, Lte, Gt, Gte];
const RANGE: &[Op] = &[Lt, Lte, Gt, Gte];
const NEAR: &[Op] = &[Near];

const fn f(name: &'static str, kind: Kind, ops: &'static [Op]) -> FilterField {
    FilterField { name, kind, ops }
}

pub const PRODUCTS: Collection = Collection {
    kind: RecordType::Products,
    text_fields: &["product_name", "short_description", "tags", "brand"],
    sort_keys: &["price_amount", "published_at"],
    filters: &[
        f("language", Str, STR_EQ_IN),
        f("tags", Str, STR_EQ_IN),
        f("brand", Str, STR_ALL),
        f("vertical", Str, STR_ALL),
        f("category", Str, STR_ALL),
        f("channel", Str, STR_ALL),
        f("availability", Str, STR_ALL),
        f("on_sale", Bool, BOOL_EQ),
        f("price_amount", Money, RANGE_EQ),
        f("price_currency", Currency, STR_EQ_NE_IN),
        f("gtin", Str, STR_EQ_IN),
        f("sponsored", Bool, BOOL_EQ),
        f("published_at", Timestamp, RANGE),
    ],
};

pub const BUSINESS_FILES: Collection = Collection {
    kind: RecordType::BusinessFiles,
    text_fields: &["description", "brands_owned.name", "brands_sold.name", "markets_served"],
    sort_keys: &["year_established", "published_at"],
    filters: &[
        f("language", Str, STR_EQ_IN),
        f("cities", Str, STR_EQ_IN),
        f("delivery.options", Str, STR_EQ_IN),
        f("payment.methods", Str, STR_EQ_IN),
        f("has_locations", Bool, BOOL_EQ),
        f("ships_internationally", Bool, BOOL_EQ),
        f("location_geo", Geo, NEAR),
        f("has_booking", Bool, BOOL_EQ),
        f("year_established", Int, RANGE_EQ),
        f("published_at", Timestamp, RANGE),
    ],
};

pub const EVENTS: Collection = Collection {
    kind: RecordType::Events,
    text_fields: &["title", "description"],
    sort_keys: &["start_at", "end_at", "price_min", "price_max", "published_at"],
    filters: &[
        f("language", Str, STR_EQ_IN),
        f("region", Str, STR_EQ_IN),
        f("timezone", Str, STR_EQ_IN),
        f("city", Str, STR_EQ_IN),
        f("event_type", Str, STR_ALL),
        f("attendance_mode", Str, STR_EQ_NE_IN),
        f("age_restriction", Str, STR_EQ_NE_IN),
        f("start_at", Timestamp, RANGE),
        f("end_at", Timestamp, RANGE),
        f("published_at", Timestamp, RANGE),
        f("geo", Geo, NEAR),
        f("ticketed", Bool, BOOL_EQ),
        f("price_min", Money, RANGE),
        f("price_max", Money, RANGE),
        f("price_currency", Currency, STR_EQ_IN),
    ],
};

pub const JOBS: Collection = Collection {
    kind: RecordType::Jobs,
    text_fields: &["title", "description"],
    sort_keys: &["salary_min", "salary_max", "closing_date", "published_at"],
    filters: &[
        f("language", Str, STR_EQ_IN),
        f("city", Str, STR_EQ_IN),
        f("region", Str, STR_EQ_IN),
        f("salary_period", Str, STR_EQ_IN),
        f("salary_disclosed", Bool, BOOL_EQ),
        f("employment_type", Str, STR_ALL),
        f("category", Str, STR_ALL),
        f("work_arrangement", Str, STR_EQ_NE_IN),
        f("geo", Geo, NEAR),
        f("salary_min", Money, RANGE),
        f("salary_max", Money, RANGE),
        f("salary_currency", Currency, STR_EQ_IN),
        f("closing_date", Timestamp, RANGE),
        f("published_at", Timestamp, RANGE),
    ],
};

pub const UPDATES: Collection = Collection {
    kind: RecordType::Updates,
    text_fields: &["headline", "body"],
    sort_keys: &["published_at", "relevant_until"],
    filters: &[
        f("language", Str, STR_EQ_IN),
        f("update_type", Str, STR_ALL),
        f("published_at", Timestamp, RANGE),
        f("relevant_until", Timestamp, RANGE),
    ],
};

pub const ALL: [&Collection; 5] = [&PRODUCTS, &BUSINESS_FILES, &EVENTS, &JOBS, &UPDATES];

pub fn collection(kind: RecordType) -> Option<&'static Collection> {
    ALL.into_iter().find(|c| c.kind == kind)
}

impl Collection {
    pub fn filter(&self, name: &str) -> Option<&'static FilterField> {
        self.filters.iter().find(|f| f.name == name)
    }

    /// `_text_match` or one of the collection's sort keys.
    pub fn sortable(&self, name: &str) -> bool {
        name == "_text_match" || self.sort_keys.contains(&name)
    }
}
