use serde_json::{Value, json};

use super::*;

fn run(body: Value) -> Result<SearchQuery, Refusal> {
    judge(&serde_json::to_vec(&body).unwrap(), None)
}

fn code(body: Value) -> Code {
    run(body).unwrap_err().code
}

fn products(extra: &[(&str, Value)]) -> Value {
    let mut body = json!({
        "collection": "products",
        "q": "lamp",
        "filter": {"all": [{"country": "FR"}]},
        "sort_by": "_text_match:desc",
    });
    for (k, v) in extra {
        body[*k] = v.clone();
    }
    body
}

// rule: R2.2.1, R2.2.4, R2.2.5, R2.2.6, R2.2.7, R2.2.16, R2.2.17, R1.11, R2.3.4
#[test]
fn a_plain_search_is_judged_with_its_defaults() {
    let q = run(products(&[])).unwrap();
    assert_eq!(q.collection, RecordType::Products);
    assert_eq!(q.country, "FR");
    assert_eq!(q.text.as_deref(), Some("lamp"));
    assert_eq!(q.query_by, vec!["product_name", "short_description", "tags", "brand"]);
    assert_eq!(q.limit, 50);
    assert_eq!(q.sort, vec![SortKey { field: "_text_match".into(), direction: Direction::Desc }]);
    let everything = run(products(&[("q", json!("*"))])).unwrap();
    assert_eq!(everything.text, None);
}

// rule: R2.2.2, R2.2.3
#[test]
fn a_typed_address_fills_or_checks_the_collection() {
    let body = json!({"filter": {"all": [{"country": "DE"}]}, "sort_by": "published_at:asc"});
    let q = judge(&serde_json::to_vec(&body).unwrap(), Some(RecordType::Events)).unwrap();
    assert_eq!(q.collection, RecordType::Events);
    let mismatched = judge(&serde_json::to_vec(&products(&[])).unwrap(), Some(RecordType::Jobs)).unwrap_err();
    assert_eq!(mismatched.code, Code::RequestInvalid);
    assert_eq!(
        code(json!({"filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})),
        Code::RequestInvalid
    );
}

// rule: R2.2.8, R2.2.9, R2.2.10, R2.2.11, R2.2.13, R7.4, R7.5, R1.10, R2.3.2
#[test]
fn country_exactly_once_and_sort_by_are_required() {
    assert_eq!(code(products(&[("filter", json!({"all": []}))])), Code::FilterRequired);
    let twice = json!({"all": [{"country": "FR"}, {"country": "DE"}]});
    assert_eq!(code(products(&[("filter", twice)])), Code::FilterRequired);
    let mut no_filter = products(&[]);
    no_filter.as_object_mut().unwrap().remove("filter");
    assert_eq!(code(no_filter), Code::FilterRequired);
    let mut no_sort = products(&[]);
    no_sort.as_object_mut().unwrap().remove("sort_by");
    assert_eq!(code(no_sort), Code::SortRequired);
    let range = json!({"all": [{"country": {"in": ["FR"]}}]});
    assert_eq!(code(products(&[("filter", range)])), Code::OperatorNotAllowed);
    let bad = json!({"all": [{"country": "XX"}]});
    assert_eq!(code(products(&[("filter", bad)])), Code::RequestInvalid);
    let eq = run(products(&[("filter", json!({"all": [{"country": {"eq": "DE"}}]}))])).unwrap();
    assert_eq!(eq.country, "DE");
}

// rule: R1.12, R1.13, R1.14, R1.15, R2.2.20, R2.2.27, R7.6
#[test]
fn anything_outside_the_allow_list_is_refused_naming_it() {
    let unknown = run(products(&[("filter", json!({"all": [{"country": "FR"}, {"color": "red"}]}))])).unwrap_err();
    assert_eq!(unknown.code, Code::UnknownField);
    assert!(unknown.detail.contains("color"), "{}", unknown.detail);
    let op = run(products(&[("filter", json!({"all": [{"country": "FR"}, {"language": {"ne": "fr"}}]}))])).unwrap_err();
    assert_eq!(op.code, Code::OperatorNotAllowed);
    assert!(op.detail.contains("language"), "{}", op.detail);
    let sort = run(products(&[("sort_by", json!("product_name:asc"))])).unwrap_err();
    assert_eq!(sort.code, Code::SortNotAllowed);
    assert!(sort.detail.contains("product_name"));
    let query_by = run(products(&[("query_by", json!(["gtin"]))])).unwrap_err();
    assert_eq!(query_by.code, Code::UnknownField);
    assert_eq!(code(products(&[("extra", json!(1))])), Code::RequestInvalid);
    // A field of another collection is unknown here.
    let other = json!({"all": [{"country": "FR"}, {"salary_disclosed": true}]});
    assert_eq!(code(products(&[("filter", other)])), Code::UnknownField);
}

// rule: R2.2.12, R2.2.15, R2.2.24, R2.2.25, R2.2.26, R8.1, R8.2, R8.3, R8.4, R8.5, R8.6
#[test]
fn the_limits_of_section_8() {
    let clauses: Vec<Value> =
        std::iter::once(json!({"country": "FR"})).chain((0..20).map(|_| json!({"on_sale": true}))).collect();
    assert_eq!(code(products(&[("filter", json!({"all": clauses}))])), Code::RequestInvalid);
    let ok: Vec<Value> =
        std::iter::once(json!({"country": "FR"})).chain((0..19).map(|_| json!({"on_sale": true}))).collect();
    assert!(run(products(&[("filter", json!({"all": ok}))])).is_ok());
    let eleven: Vec<String> = (0..11).map(|i| format!("b{i}")).collect();
    let in_clause = json!({"all": [{"country": "FR"}, {"brand": {"in": eleven}}]});
    assert_eq!(code(products(&[("filter", in_clause)])), Code::RequestInvalid);
    assert_eq!(code(products(&[("q", json!("q".repeat(513)))])), Code::RequestInvalid);
    assert!(run(products(&[("q", json!("q".repeat(512)))])).is_ok());
    let long = json!({"all": [{"country": "FR"}, {"brand": "b".repeat(257)}]});
    assert_eq!(code(products(&[("filter", long)])), Code::RequestInvalid);
    assert_eq!(
        code(products(&[("sort_by", json!("price_amount:asc,published_at:desc,_text_match:desc,price_amount:desc"))])),
        Code::RequestInvalid
    );
    assert_eq!(code(products(&[("limit", json!(51))])), Code::RequestInvalid);
    assert_eq!(code(products(&[("limit", json!(0))])), Code::RequestInvalid);
    assert_eq!(run(products(&[("limit", json!(7))])).unwrap().limit, 7);
}

// rule: R2.2.21, R2.2.23, R2.2.29, R2.3.5
#[test]
fn product_prices_mean_the_searched_country() {
    let body = products(&[
        (
            "filter",
            json!({"all": [{"country": "DE"}, {"price_amount": {"gte": "10", "lt": "20.5"}}, {"price_currency": "EUR"}]}),
        ),
        ("sort_by", json!("price_amount:asc,published_at:desc")),
    ]);
    let q = run(body).unwrap();
    assert_eq!(q.clauses[0].field, "price_DE");
    assert_eq!(q.clauses[0].conditions, vec![Condition::Gte(10.0), Condition::Lt(20.5)]);
    assert_eq!(q.clauses[1].field, "price_currency_DE");
    assert_eq!(q.sort[0].field, "price_DE");
    let number = json!({"all": [{"country": "DE"}, {"price_amount": {"gte": 10}}]});
    assert_eq!(code(products(&[("filter", number)])), Code::RequestInvalid, "money is a decimal string");
}

// rule: R2.2.22
#[test]
fn geo_near_takes_a_point_and_a_radius() {
    let body = json!({
        "collection": "events",
        "filter": {"all": [{"country": "FR"}, {"geo": {"near": {"lat": 45.76, "lng": 4.83, "radius_km": 25}}}]},
        "sort_by": "start_at:asc",
    });
    let q = run(body).unwrap();
    assert_eq!(q.clauses[0].conditions, vec![Condition::Near { lat: 45.76, lng: 4.83, radius_km: 25.0 }]);
    let bad = json!({
        "collection": "events",
        "filter": {"all": [{"country": "FR"}, {"geo": {"near": {"lat": 95, "lng": 4.83, "radius_km": 25}}}]},
        "sort_by": "start_at:asc",
    });
    assert_eq!(code(bad), Code::RequestInvalid);
    let eq = json!({
        "collection": "jobs",
        "filter": {"all": [{"country": "FR"}, {"geo": {"eq": "x"}}]},
        "sort_by": "published_at:desc",
    });
    assert_eq!(code(eq), Code::OperatorNotAllowed);
}

// rule: R2.3.1
#[test]
fn every_collection_sorts_by_text_match_and_its_own_keys() {
    for (collection, key) in [
        ("business_files", "year_established"),
        ("events", "price_max"),
        ("jobs", "closing_date"),
        ("updates", "relevant_until"),
    ] {
        let body = json!({"collection": collection, "filter": {"all": [{"country": "FR"}]},
            "sort_by": format!("{key}:asc,_text_match:desc")});
        assert!(run(body).is_ok(), "{collection} {key}");
        let wrong =
            json!({"collection": collection, "filter": {"all": [{"country": "FR"}]}, "sort_by": "price_amount:asc"});
        assert_eq!(code(wrong), Code::SortNotAllowed, "{collection}");
    }
}

#[test]
fn timestamps_take_rfc3339_or_unix_seconds() {
    let body = products(&[(
        "filter",
        json!({"all": [{"country": "FR"}, {"published_at": {"gte": "2026-11-01T00:00:00Z", "lt": 1_800_000_000}}]}),
    )]);
    let q = run(body).unwrap();
    assert_eq!(q.clauses[0].conditions, vec![Condition::Gte(1_793_491_200.0), Condition::Lt(1_800_000_000.0)]);
}

// rule: R2.3.13
#[test]
fn sponsored_clauses_leave_the_query_and_say_which_rows_they_admit() {
    let with = |clauses: Value| {
        let body = json!({"collection": "products", "filter": {"all": clauses}, "sort_by": "price_amount:asc"});
        split_paid(run(body).unwrap())
    };
    let (q, rows) = with(json!([{"country": "FR"}, {"sponsored": true}, {"on_sale": true}]));
    assert_eq!(rows, PaidRows::Only);
    assert_eq!(q.clauses.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), ["on_sale"], "the rest stays");
    assert_eq!(with(json!([{"country": "FR"}, {"sponsored": false}])).1, PaidRows::Never);
    assert_eq!(with(json!([{"country": "FR"}, {"sponsored": {"eq": true}}])).1, PaidRows::Only);
    assert_eq!(with(json!([{"country": "FR"}])).1, PaidRows::Any);
    assert_eq!(with(json!([{"country": "FR"}, {"sponsored": true}, {"sponsored": false}])).1, PaidRows::None);
}
