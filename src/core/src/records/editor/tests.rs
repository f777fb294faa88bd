use super::*;
use crate::records::{ValidationContext, examples, validate};

fn ctx() -> ValidationContext {
    ValidationContext::new(vec!["Lumio".into()], vec!["Acme".into()], None)
}

fn values(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
}

fn label(member: &str) -> &'static str {
    labels::member(member, Lang::En).unwrap().label
}

#[test]
fn every_collection_offers_structured_inputs_without_schema_or_json() {
    fn no_json(kind: &InputKind) -> bool {
        match kind {
            InputKind::Group(inputs) => inputs.iter().all(|i| no_json(&i.kind)),
            InputKind::Rows { item, max } => *max > 0 && no_json(item),
            _ => true,
        }
    }
    for kind in RecordType::COLLECTIONS {
        let inputs = inputs(kind);
        assert!(!inputs.is_empty(), "{kind:?}");
        assert!(inputs.iter().all(|i| i.name != "schema" && no_json(&i.kind)));
        assert!(inputs.iter().any(|i| i.required));
    }
    assert!(inputs(RecordType::AiPolicy).is_empty());
    let event = inputs(RecordType::Events);
    let find = |name: &str| event.iter().find(|i| i.name == name).unwrap().kind.clone();
    assert_eq!(find("title"), InputKind::Line { max: Some(super::super::MAX_NAME) });
    assert_eq!(find("start_at"), InputKind::Moment);
    assert_eq!(find("ticketed"), InputKind::YesNo);
    assert_eq!(find("language"), InputKind::Language);
    assert_eq!(find("countries"), InputKind::Rows { item: Box::new(InputKind::Country), max: MAX_COUNTRIES });
    let InputKind::Group(geo) = find("geo") else { panic!("geo is two numbers") };
    assert_eq!(
        geo.iter().map(|i| (i.name, i.kind.clone())).collect::<Vec<_>>(),
        [("lat", InputKind::Number), ("lng", InputKind::Number)]
    );
    let product = inputs(RecordType::Products);
    let prices = product.iter().find(|i| i.name == "prices").unwrap();
    let InputKind::Rows { item, .. } = &prices.kind else { panic!("prices are rows") };
    let InputKind::Group(price) = item.as_ref() else { panic!("a price is a group") };
    let kinds: Vec<InputKind> = price.iter().map(|i| i.kind.clone()).collect();
    assert_eq!(kinds, [InputKind::Country, InputKind::Currency, InputKind::Money]);
}

/// Each example record, shown in the form and read back, is the same
/// record, and it validates: the editor loses nothing.
#[test]
fn an_example_round_trips_through_the_form() {
    for kind in RecordType::COLLECTIONS {
        let example = examples::example(kind);
        let values = form_values(kind, &example);
        let bytes = record_from_form(kind, &values).unwrap();
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), String::from_utf8(canonicalize(&example)).unwrap());
        assert!(validate(&bytes, kind, &ctx()).is_ok(), "{kind:?}");
    }
}

// rule: R2.1.8, R2.1.9
#[test]
fn a_product_is_built_from_price_rows_and_pickers_as_a_person_fills_them() {
    let form = values(&[
        ("/language", "fr"),
        ("/business_product_id", "SKU-1042"),
        ("/product_name", "Lampe Aurore"),
        ("/countries/0", "FR"),
        ("/countries/1", ""),
        ("/countries/2", "BE"),
        ("/prices/0/country", "FR"),
        ("/prices/0/currency", "EUR"),
        ("/prices/0/amount", "39,90"),
        ("/prices/1/country", ""),
        ("/prices/1/currency", ""),
        ("/prices/1/amount", ""),
        ("/prices/2/country", "BE"),
        ("/prices/2/currency", "EUR"),
        ("/prices/2/amount", "41.00"),
        ("/prices#rows", "3"),
        ("/on_sale", "true"),
        ("/availability", "in_stock"),
        ("/product_url", "https://lumio.example/aurore"),
    ]);
    let bytes = record_from_form(RecordType::Products, &form).unwrap();
    let record: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(record["countries"], serde_json::json!(["FR", "BE"]));
    assert_eq!(record["prices"][0], serde_json::json!({"amount": "39.90", "country": "FR", "currency": "EUR"}));
    assert_eq!(record["prices"][1]["country"], "BE");
    assert_eq!(record["on_sale"], true);
    assert!(validate(&bytes, RecordType::Products, &ctx()).is_ok());
    // The blank rows are gone from what the form shows again, so a reason's
    // pointer names the row the person sees.
    let tidied = tidy(RecordType::Products, &form);
    assert_eq!(value_of(&tidied, "/prices/1/country"), Some("BE"));
    assert_eq!(value_of(&tidied, "/countries/1"), Some("BE"));
    assert!(value_of(&tidied, "/prices/2/country").is_none());
}

#[test]
fn blank_values_are_left_out_and_unshapeable_ones_are_reported_beside_their_inputs() {
    let form = values(&[
        ("/title", "  "),
        ("/geo/lat", "north"),
        ("/geo/lng", "4.84"),
        ("/ticketed", "maybe"),
        ("/start_at", "next tuesday"),
        ("/countries/0", "FR"),
        ("/unknown", "x"),
    ]);
    let errors = record_from_form(RecordType::Events, &form).unwrap_err();
    let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
    assert_eq!(pointers, ["/start_at", "/geo/lat", "/ticketed"]);
    assert!(errors.iter().all(|e| e.code == ErrorCode::FieldType));
    let ok = record_from_form(RecordType::Events, &form[5..]).unwrap();
    assert_eq!(ok, br#"{"countries":["FR"],"schema":"service/events/1"}"#);
    // What the form makes is judged by the records' own rules.
    let reasons = validate(&ok, RecordType::Events, &ctx()).unwrap_err();
    assert!(reasons.iter().any(|e| e.code == ErrorCode::FieldMissing && e.pointer == "/title"));
}

#[test]
fn a_date_typed_in_a_time_zone_is_sealed_with_that_zone_s_offset() {
    assert_eq!(moment("2026-12-12T18:00", "Europe/Paris").as_deref(), Some("2026-12-12T18:00:00+01:00"));
    assert_eq!(moment("2026-07-12T18:00", "Europe/Paris").as_deref(), Some("2026-07-12T18:00:00+02:00"));
    assert_eq!(moment("2026-07-12T18:00:30", "America/New_York").as_deref(), Some("2026-07-12T18:00:30-04:00"));
    assert_eq!(moment("2026-12-12T18:00", "").as_deref(), Some("2026-12-12T18:00:00Z"));
    assert_eq!(moment("2026-12-12T18:00", "UTC").as_deref(), Some("2026-12-12T18:00:00Z"));
    assert_eq!(moment("2026-12-12T18:00", "+05:30").as_deref(), Some("2026-12-12T18:00:00+05:30"));
    assert_eq!(moment("2026-12-12T18:00:00+01:00", "Asia/Tokyo").as_deref(), Some("2026-12-12T18:00:00+01:00"));
    for (local, zone) in [("2026-12-12T18:00", "Mars/Olympus"), ("tomorrow", "UTC"), ("2026-12-12T18:00", "+24:00")] {
        assert_eq!(moment(local, zone), None, "{local} {zone}");
    }
    let form = form_values(RecordType::Events, &serde_json::json!({"start_at": "2026-12-12T18:00:00+01:00"}));
    assert_eq!(form, values(&[("/start_at", "2026-12-12T18:00"), ("/start_at#zone", "+01:00")]));
    assert!(time_zones().iter().any(|z| z == "Europe/Paris"));
}

#[test]
fn row_buttons_add_a_row_up_to_the_limit_and_take_out_the_one_pressed() {
    let form = values(&[("/tags/0", "lampe"), ("/tags/1", "laiton"), ("/tags/2", "salon"), (ADD, "/tags")]);
    let change = RowChange::of(&form).unwrap();
    assert_eq!(change, RowChange::Add("/tags".into()));
    let added = change.apply(RecordType::Products, &form);
    assert_eq!(rows_in(&added, "/tags"), 4);
    assert!(added.iter().all(|(n, _)| n != ADD));
    let removed = RowChange::Remove("/tags/1".into()).apply(RecordType::Products, &added);
    assert_eq!(rows_in(&removed, "/tags"), 3);
    assert_eq!((value_of(&removed, "/tags/0"), value_of(&removed, "/tags/1")), (Some("lampe"), Some("salon")));
    // Nested lists are found too; a pointer naming no list changes nothing.
    let form = values(&[("/locations/0/name", "Atelier")]);
    assert_eq!(rows_in(&RowChange::Add("/locations".into()).apply(RecordType::BusinessFiles, &form), "/locations"), 2);
    assert_eq!(RowChange::Add("/title".into()).apply(RecordType::Events, &form), form);
    // The schema's limit: no row past it.
    let full: Vec<(String, String)> = (0..MAX_TAGS).map(|i| (format!("/tags/{i}"), format!("t{i}"))).collect();
    assert_eq!(rows_in(&RowChange::Add("/tags".into()).apply(RecordType::Products, &full), "/tags"), MAX_TAGS);
}

#[test]
fn the_layout_speaks_in_labels_and_names_not_members_and_codes() {
    let form = values(&[("/language", "fr"), ("/prices/0/country", "DE"), ("/on_sale", "true")]);
    for lang in [Lang::En, Lang::Fr] {
        let pieces = layout(RecordType::Products, &form, lang);
        let piece = |pointer: &str| pieces.iter().find(|p| p.pointer == pointer && p.widget != "close").unwrap();
        for p in pieces.iter().filter(|p| p.widget != "close") {
            assert!(!p.label.contains('_'), "{lang:?}: {:?} is a label", p.label);
        }
        let language = piece("/language");
        let chosen: Vec<&str> = language.options.iter().filter(|o| o.2).map(|o| o.1.as_str()).collect();
        assert_eq!(chosen, [names::language_name("fr", lang).unwrap()]);
        let country = piece("/prices/0/country");
        assert_eq!(country.options.iter().find(|o| o.2).unwrap().1, names::country_name("DE", lang).unwrap());
        assert_eq!(piece("/prices").widget, "open");
        assert_eq!(piece("/on_sale").options.iter().find(|o| o.2).unwrap().1, labels::yes_no(true, lang));
        assert_eq!(piece("/prices/0/country").id, "f-prices-0-country");
    }
    let english = layout(RecordType::Products, &form, Lang::En);
    let close = english.iter().find(|p| p.widget == "close" && p.pointer == "/prices").unwrap();
    assert_eq!((close.add.as_deref(), close.rows), (Some("/prices"), 1));
    // A value the picker lacks stays chosen rather than being lost.
    let regional = layout(RecordType::Products, &values(&[("/language", "fr-CA")]), Lang::En);
    let language = regional.iter().find(|p| p.pointer == "/language").unwrap();
    assert!(language.options.iter().any(|o| o.0 == "fr-CA" && o.2));
    assert_eq!(
        pointer_label(RecordType::Products, "/prices/1/amount", Lang::En),
        format!("{} 2, {}", label("prices"), label("amount"))
    );
    assert_eq!(pointer_label(RecordType::Products, "", Lang::En), "");
}

#[test]
fn a_record_is_named_and_shown_in_words_and_an_edit_lists_what_changed() {
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
    let shown_fr = shown(RecordType::Events, &before, Lang::Fr);
    let language = shown_fr.iter().find(|(n, _, _)| *n == "language").unwrap();
    assert_eq!(language.2, names::language_name(before["language"].as_str().unwrap(), Lang::Fr).unwrap());
    let mut after = before.clone();
    after["title"] = Value::String("A new title".into());
    after.as_object_mut().unwrap().remove("geo");
    let changed = changes(RecordType::Events, &before, &after, Lang::En);
    let labels: Vec<&str> = changed.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(labels.len(), 1 + usize::from(before.get("geo").is_some()), "{changed:?}");
    assert!(changed.iter().any(|(l, _, is)| l == label("title") && is == "A new title"));
    assert!(changes(RecordType::Events, &before, &before, Lang::En).is_empty());
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
