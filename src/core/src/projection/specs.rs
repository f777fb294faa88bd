//! The five projection specifications, version 1 (P2.6.42). Their texts are
//! part of what is hashed: changing a word changes `adl_proj` and so needs a
//! new version.

use serde_json::{Map, Value, json};

use super::{SERVE_TIME_FIELDS, SPEC_VERSION, UNSIGNED_FIELDS};
use crate::ids::RecordType;

/// Row members every collection has, with their sources.
const COMMON_HEAD: FieldMap = &[
    ("record_id", "service: the record id derived from type, business_uuid and the record's own id"),
    ("business_uuid", "service: the publishing business's uuid"),
    ("business_name", "service: the publishing business's name at publish time"),
    ("type", "constant: the collection name"),
];

const COMMON_TAIL: FieldMap = &[
    ("published_at", "service: the publish instant as integer Unix seconds"),
    ("adl_origin", "sha256: + hex SHA-256 of the record's exact bytes"),
    ("adl_proj", "sha256 member of this specification"),
    ("adl_key_id", "RFC 7638 thumbprint of the projection key"),
    ("adl_row_sig", "standard base64 Ed25519 signature of the signed part of the row"),
];

const PRODUCTS: FieldMap = &[
    ("language", "language"),
    ("product_name", "product_name"),
    ("brand", "brand"),
    ("vertical", "vertical"),
    ("category", "category"),
    ("channel", "channel"),
    ("availability", "availability"),
    ("on_sale", "on_sale"),
    ("tags", "tags"),
    ("short_description", "short_description"),
    ("gtin", "gtin"),
    ("product_url", "product_url"),
    ("countries", "countries"),
    ("price_{CC}", "prices[country=CC].amount as number"),
    ("price_currency_{CC}", "prices[country=CC].currency"),
];

const BUSINESS_FILES: FieldMap = &[
    ("language", "language"),
    ("countries", "countries"),
    ("description", "description"),
    ("brands_owned", "brands_owned"),
    ("brands_sold", "brands_sold"),
    ("markets_served", "markets_served"),
    ("cities", "cities"),
    ("delivery", "delivery"),
    ("payment", "payment"),
    ("location_geo", "locations[*].geo"),
    ("has_locations", "locations has at least one item"),
    ("ships_internationally", "ships_internationally"),
    ("year_established", "year_established"),
    ("has_booking", "constant: false"),
];

const EVENTS: FieldMap = &[
    ("language", "language"),
    ("countries", "countries"),
    ("title", "title"),
    ("description", "description"),
    ("event_type", "event_type"),
    ("attendance_mode", "attendance_mode"),
    ("age_restriction", "age_restriction"),
    ("timezone", "timezone"),
    ("region", "region"),
    ("city", "city"),
    ("geo", "geo"),
    ("ticketed", "ticketed"),
    ("start_at", "start_at as Unix seconds"),
    ("end_at", "end_at as Unix seconds"),
    ("price_min", "price_min as number"),
    ("price_max", "price_max as number"),
    ("price_currency", "price_currency"),
];

const JOBS: FieldMap = &[
    ("language", "language"),
    ("countries", "countries"),
    ("title", "title"),
    ("description", "description"),
    ("employment_type", "employment_type"),
    ("category", "category"),
    ("work_arrangement", "work_arrangement"),
    ("city", "city"),
    ("region", "region"),
    ("geo", "geo"),
    ("salary_disclosed", "salary_disclosed"),
    ("salary_min", "salary_min as number"),
    ("salary_max", "salary_max as number"),
    ("salary_currency", "salary_currency"),
    ("salary_period", "salary_period"),
    ("closing_date", "closing_date as Unix seconds"),
];

const UPDATES: FieldMap = &[
    ("language", "language"),
    ("countries", "countries"),
    ("headline", "headline"),
    ("body", "body"),
    ("update_type", "update_type"),
    ("url", "url"),
    ("relevant_until", "relevant_until as Unix seconds"),
];

const ADS: FieldMap = &[
    ("language", "language"),
    ("countries", "countries"),
    ("headline", "headline"),
    ("description", "description"),
    ("cta_text", "cta_text"),
    ("adl_dest", "destination_url"),
    ("adl_origin_seal", "service: the seal envelope the business sealed the record with, as received"),
    (
        "adl_creative",
        "service: for each image the record names, image_square or image_landscape, the sha256: hash of the bytes the service fetched when the ad was saved",
    ),
];

const COMMON_RULES: &[&str] = &[
    "A row member is written only when its source is present in the record; an absent optional member is omitted, never null.",
    "Strings, booleans, arrays, objects and numbers of the record are copied unchanged.",
    "A decimal-string amount becomes a JSON number: an integer when it has no fraction digit other than zero, else the nearest IEEE 754 double.",
    "An RFC 3339 timestamp becomes integer Unix seconds, rounded towards the past.",
    "adl_origin is sha256: followed by the lower-case hex SHA-256 of the record's exact bytes as sealed, never of a re-serialised form.",
    "The signed part of a row is the row without adl_row_sig and without every member named in unsigned_fields or serve_time_fields.",
    "adl_row_sig is the standard base64 (padded) Ed25519 signature, by the projection key adl_key_id names, of the RFC 8785 canonical form of the signed part.",
    "A verifier reads the version from adl_proj, refuses an unknown one, removes adl_row_sig and the unsigned and serve-time members, and checks adl_row_sig over the RFC 8785 canonical form of the rest.",
    "Members named in unsigned_fields and serve_time_fields are set at serve time and may be added, changed or removed without breaking the signature.",
];

/// Row members and their sources, in document order.
type FieldMap = &'static [(&'static str, &'static str)];

/// The field map, the collection's own rules and the definition of `kind`.
fn collection_parts(kind: RecordType) -> Option<(FieldMap, &'static [&'static str], &'static str)> {
    Some(match kind {
        RecordType::Products => (
            PRODUCTS,
            &[
                "For every entry of prices, price_{CC} is its amount as a number and price_currency_{CC} its currency, CC being the entry's country; there is one such pair for every country in countries.",
            ],
            "A products row is the searchable form of one sealed products record: its text, filter and sort fields, one price and currency per country it is published in, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::BusinessFiles => (
            BUSINESS_FILES,
            &[
                "location_geo lists the geo of every location, in record order; has_locations is true when locations has at least one item, else false.",
                "has_booking is always false, so a filter asking for true matches nothing.",
                "The five represent texts and the endpoints section are never on a row; they come with a fetch.",
            ],
            "A business_files row is the searchable form of one sealed business file: its description, brands, markets, cities, delivery and payment options, location coordinates and founding year, without the represent texts or endpoints, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::Events => (
            EVENTS,
            &["start_at and end_at are integer Unix seconds; price_min and price_max are numbers."],
            "An events row is the searchable form of one sealed events record: its title and description, type, attendance, place, times and price range, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::Jobs => (
            JOBS,
            &["closing_date is integer Unix seconds; salary_min and salary_max are numbers."],
            "A jobs row is the searchable form of one sealed jobs record: its title and description, employment terms, place and salary, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::Updates => (
            UPDATES,
            &["relevant_until is integer Unix seconds."],
            "An updates row is the searchable form of one sealed updates record: its headline, body, type and the date it stops being relevant, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::Ads => (
            ADS,
            &[
                "adl_dest is destination_url exactly as sealed: the service is never in the redirect path.",
                "adl_creative has one member per image the record names, and is an empty object when it names none; an image link an ad item shows serves exactly the bytes whose hash is there.",
                "An ads row is never in a search; it travels in the ad item the ad pool serves.",
            ],
            "An ads row is the signed form of one sealed ad: its texts, its destination, its seal and the hash of each image the service fetched, and the provenance that ties the row to the sealed bytes.",
        ),
        RecordType::AiPolicy => return None,
    })
}

/// The specification document of `kind`, without its `sha256` member.
pub(super) fn document(kind: RecordType) -> Option<Value> {
    let (fields, specific, definition) = collection_parts(kind)?;
    let field_map: Map<String, Value> = COMMON_HEAD
        .iter()
        .chain(fields)
        .chain(COMMON_TAIL)
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect();
    let rules: Vec<&str> = COMMON_RULES.iter().chain(specific).copied().collect();
    Some(json!({
        "version": format!("{}/1", kind.name()),
        "spec_version": SPEC_VERSION,
        "record_type": kind.name(),
        "field_map": field_map,
        "rules": rules,
        "unsigned_fields": UNSIGNED_FIELDS,
        "serve_time_fields": SERVE_TIME_FIELDS,
        "definition": definition,
    }))
}
