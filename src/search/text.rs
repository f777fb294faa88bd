//! How text is matched: every word lower-cased and folded to ASCII (so
//! "soiree" finds "soirée"), and stemmed by the language of the record it
//! came from (so "lampes" finds "lampe"). A record's words are indexed once,
//! as written and as its own `language` stems them; a query has no
//! language, so each of its words is looked for as it is and as every
//! language the index stems would stem it. The index field's own tokenizer
//! then only splits the terms it is given on spaces.

use std::cell::RefCell;

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
    TokenStream,
};

/// Words longer than this are not indexed (tantivy's default limit).
const LONGEST_WORD: usize = 40;

/// The languages records are stemmed in, by their ISO 639-1 code: every
/// language tantivy's Snowball stemmers speak.
const LANGUAGES: [(&str, Language); 18] = [
    ("ar", Language::Arabic),
    ("da", Language::Danish),
    ("de", Language::German),
    ("el", Language::Greek),
    ("en", Language::English),
    ("es", Language::Spanish),
    ("fi", Language::Finnish),
    ("fr", Language::French),
    ("hu", Language::Hungarian),
    ("it", Language::Italian),
    ("nl", Language::Dutch),
    ("no", Language::Norwegian),
    ("pt", Language::Portuguese),
    ("ro", Language::Romanian),
    ("ru", Language::Russian),
    ("sv", Language::Swedish),
    ("ta", Language::Tamil),
    ("tr", Language::Turkish),
];

thread_local! {
    /// Analyzers are built once per thread: a record's words and a query's
    /// each pass through one for every word.
    static FOLDER: RefCell<TextAnalyzer> = RefCell::new(
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(LONGEST_WORD))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .build(),
    );
    static STEMMERS: RefCell<Vec<TextAnalyzer>> = RefCell::new(
        LANGUAGES
            .iter()
            .map(|(_, language)| TextAnalyzer::builder(RawTokenizer::default()).filter(Stemmer::new(*language)).build())
            .collect(),
    );
}

#[cfg(test)]
thread_local! {
    /// Tests measure relevance without folding and stemming too: words
    /// only lower-cased, as the index matched them before.
    static PLAIN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a test turned folding and stemming off on this thread.
fn plain() -> bool {
    #[cfg(test)]
    return PLAIN.get();
    #[cfg(not(test))]
    false
}

/// The words of `text`, lower-cased (as the index matched words before).
fn lowered_words(text: &str) -> Vec<String> {
    let mut analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_WORD))
        .filter(LowerCaser)
        .build();
    let mut words = Vec::new();
    analyzer.token_stream(text).process(&mut |t| words.push(t.text.clone()));
    words
}

/// The words of `text`, lower-cased and folded.
fn folded_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    FOLDER.with_borrow_mut(|analyzer| analyzer.token_stream(text).process(&mut |t| words.push(t.text.clone())));
    words
}

/// `word` stemmed in the language at `LANGUAGES[which]`.
fn stem(word: &str, which: usize) -> String {
    let mut out = String::new();
    STEMMERS.with_borrow_mut(|stemmers| {
        if let Some(stemmer) = stemmers.get_mut(which) {
            stemmer.token_stream(word).process(&mut |t| out.push_str(&t.text));
        }
    });
    if out.is_empty() { word.to_owned() } else { out }
}

/// Where in [`LANGUAGES`] the language a record's `language` member names
/// is, if its words are stemmed.
fn language(code: &str) -> Option<usize> {
    let base = code.split(['-', '_']).next().unwrap_or(code).to_ascii_lowercase();
    // Norwegian Bokmål and Nynorsk share the Norwegian stemmer.
    let base = if base == "nb" || base == "nn" { "no".to_owned() } else { base };
    LANGUAGES.iter().position(|(c, _)| *c == base)
}

/// A record's text as the index holds it: its words folded, each with its
/// stem in the record's `language` when it names one the index stems,
/// joined by spaces.
pub fn indexed(text: &str, record_language: Option<&str>) -> String {
    if plain() {
        return lowered_words(text).join(" ");
    }
    let Some(language) = record_language.and_then(language) else { return folded_words(text).join(" ") };
    let mut terms = Vec::new();
    for word in folded_words(text) {
        // The word as written too: a query in that very form then matches
        // twice, and ranks above other words of the same stem.
        let stem = stem(&word, language);
        if stem != word {
            terms.push(stem);
        }
        terms.push(word);
    }
    terms.join(" ")
}

/// The terms a query's text looks for: each word folded, as it is and as
/// each language would stem it, without repeats.
pub fn query_terms(text: &str) -> Vec<String> {
    if plain() {
        let mut words = lowered_words(text);
        words.sort();
        words.dedup();
        return words;
    }
    let mut terms: Vec<String> = Vec::new();
    for word in folded_words(text) {
        terms.push(word.clone());
        terms.extend((0..LANGUAGES.len()).map(|which| stem(&word, which)));
    }
    terms.sort();
    terms.dedup();
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::IndexDoc;
    use crate::open_all;
    use svc_core::ids::RecordType;
    use svc_core::search::{Direction, SearchQuery, SortKey};

    /// Products named in the sandbox's languages (its eight markets speak
    /// seven: English twice), each name's words in its language's forms.
    const JUDGED: [(&str, &str); 42] = [
        ("fr", "Lampe de bureau en chêne"),
        ("fr", "Lampes de chevet en laiton"),
        ("fr", "Soirée dégustation de thés"),
        ("fr", "Chaise pliante en hêtre"),
        ("fr", "Chaises de jardin"),
        ("fr", "Fauteuil en velours"),
        ("de", "Stühle aus Eiche"),
        ("de", "Stuhl für Kinder"),
        ("de", "Lampen für den Garten"),
        ("de", "Große Tische aus Glas"),
        ("de", "Tisch aus Nussbaum"),
        ("de", "Kissen aus Leinen"),
        ("es", "Sillas de roble"),
        ("es", "Silla plegable"),
        ("es", "Lámpara colgante"),
        ("es", "Lámparas de pie"),
        ("es", "Mesa de café"),
        ("es", "Mesas de jardín"),
        ("it", "Lampada da tavolo"),
        ("it", "Lampade da soffitto"),
        ("it", "Sedia in legno"),
        ("it", "Sedie da giardino"),
        ("it", "Tavolo allungabile"),
        ("it", "Divano in velluto"),
        ("nl", "Lamp van eikenhout"),
        ("nl", "Lampen voor buiten"),
        ("nl", "Stoel van beuken"),
        ("nl", "Stoelen voor de tuin"),
        ("nl", "Tafel met glazen blad"),
        ("nl", "Tafels van noten"),
        ("en", "Oak desk lamp"),
        ("en", "Bedside lamps in brass"),
        ("en", "Folding chair"),
        ("en", "Garden chairs"),
        ("en", "Tea tasting evening"),
        ("en", "Velvet armchair"),
        ("sv", "Lampa i ek"),
        ("sv", "Lampor för trädgården"),
        ("sv", "Stol i bok"),
        ("sv", "Stolar för barn"),
        ("sv", "Bord i glas"),
        ("sv", "Bordet i valnöt"),
    ];

    /// Queries as a person types them (another inflection, no accents), and
    /// the products that answer them.
    const QUERIES: [(&str, &[usize]); 24] = [
        ("lampes", &[0, 1]),
        ("soiree", &[2]),
        ("chaise", &[3, 4]),
        ("chene", &[0]),
        ("stuhl", &[6, 7]),
        ("lampe", &[0, 8]),
        ("tische", &[9, 10]),
        ("grosse", &[9]),
        ("silla", &[12, 13]),
        ("lamparas", &[14, 15]),
        ("mesa", &[16, 17]),
        ("jardin", &[4, 17]),
        ("lampade", &[18, 19]),
        ("sedia", &[20, 21]),
        ("lampen", &[8, 24, 25]),
        ("stoel", &[26, 27]),
        ("tafels", &[28, 29]),
        ("lamps", &[30, 31]),
        ("chair", &[32, 33]),
        ("tasting", &[34]),
        ("lampor", &[36, 37]),
        ("stol", &[38, 39]),
        ("bord", &[40, 41]),
        ("tradgard", &[37]),
    ];

    /// Mean recall at 10 of [`QUERIES`] over an index of [`JUDGED`], with
    /// folding and stemming on or off.
    fn recall_at_10(plain: bool) -> f64 {
        PLAIN.set(plain);
        let root = tempfile::tempdir().unwrap();
        let (index, writers) = open_all(root.path(), 1, 64 << 20).unwrap();
        let mut writer = writers.into_iter().find(|(c, _, _)| *c == RecordType::Products).unwrap().2.writer().unwrap();
        let docs = JUDGED
            .iter()
            .enumerate()
            .map(|(i, (language, name))| {
                let id = format!("p{i}");
                let doc = IndexDoc {
                    record_id: id.clone(),
                    business_uuid: "b".into(),
                    countries: vec!["FR".into()],
                    texts: vec![("product_name", indexed(name, Some(language)))],
                    filters: vec![],
                    points: vec![],
                    row: id.as_bytes().to_vec(),
                    ids: format!(r#"{{"record_id":"{id}","business_uuid":"b"}}"#),
                };
                (doc, vec![])
            })
            .collect();
        writer.apply(docs, vec![]).unwrap();
        let mut total = 0.0;
        for (text, relevant) in QUERIES {
            let query = SearchQuery {
                collection: RecordType::Products,
                country: "FR".into(),
                text: Some(text.into()),
                query_by: vec!["product_name"],
                clauses: vec![],
                sort: vec![SortKey { field: "_text_match".into(), direction: Direction::Desc }],
                limit: 10,
                client_query_id: None,
                session_ref: None,
                topic_keywords: vec![],
            };
            let deadline = svc_clock::monotonic() + std::time::Duration::from_secs(5);
            let found: Vec<String> = index
                .search(&query, "g", deadline)
                .unwrap()
                .rows
                .into_iter()
                .map(|hit| String::from_utf8(hit.row).unwrap())
                .collect();
            let hits = relevant.iter().filter(|i| found.contains(&format!("p{i}"))).count();
            if hits < relevant.len() {
                println!("{} {text:?}: {hits} of {relevant:?} in {found:?}", if plain { "plain" } else { "stemmed" });
            }
            total += hits as f64 / relevant.len() as f64;
        }
        PLAIN.set(false);
        total / QUERIES.len() as f64
    }

    // Recall at 10 over a judged set in the sandbox's languages, without and
    // with folding and stemming (benches/README.md, Search relevance).
    #[test]
    fn folding_and_stemming_find_what_a_person_means() {
        let (before, after) = (recall_at_10(true), recall_at_10(false));
        println!("recall@10 over {} judged queries: plain {before:.3}, folded and stemmed {after:.3}", QUERIES.len());
        assert!(after >= 0.95, "folded and stemmed: {after:.3}");
        assert!(after > before + 0.3, "plain {before:.3}, folded and stemmed {after:.3}");
    }

    fn finds(query: &str, text: &str, language: &str) -> bool {
        let indexed = indexed(text, Some(language));
        let words: Vec<&str> = indexed.split(' ').collect();
        query_terms(query).iter().any(|t| words.contains(&t.as_str()))
    }

    #[test]
    fn accents_fold_and_words_stem_by_the_records_language() {
        assert!(finds("soiree", "Soirée dégustation", "fr"));
        assert!(finds("lampes", "Lampe de bureau", "fr"));
        assert!(finds("Lampen", "Die Lampe aus Eiche", "de"));
        assert!(finds("stuhle", "Zwei Stühle", "de"));
        assert!(finds("lamps", "A desk lamp", "en"));
        assert!(finds("sillas", "Silla de roble", "es"));
        assert!(finds("lampade", "Lampada da tavolo", "it"));
        assert!(finds("lampen", "Een lamp van eiken", "nl"));
        assert!(finds("lampor", "En lampa i ek", "sv"));
        assert!(!finds("chair", "A desk lamp", "en"), "stemming never makes another word match");
        assert_eq!(indexed("Café", None), "cafe", "an unknown language is folded, not stemmed");
        assert_eq!(language("pt-BR").map(|i| LANGUAGES[i].1), Some(Language::Portuguese));
        assert_eq!(language("xx"), None);
    }
}
