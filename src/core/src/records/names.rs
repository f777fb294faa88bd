//! Names of countries, languages and currencies in English and French, for the
//! record editor's pickers: a person picks "Allemagne", not `DE`.
//!
//! The names come from Debian's iso-codes package, with a few corrections,
//! written to `names/*.tsv` by `names/generate.py`. The tables are committed
//! and compiled in, so a build needs no iso-codes package. Countries and
//! currencies are exactly the codes [`crate::ids`] accepts; languages are the
//! two-letter ISO 639-1 codes, lower case.

use std::sync::OnceLock;

use super::labels::Lang;

/// A code and its name in one language.
pub type Named = (&'static str, &'static str);

/// The name of an ISO 3166-1 alpha-2 code (`DE`), upper case as [`crate::ids::is_country`] accepts it.
pub fn country_name(code: &str, lang: Lang) -> Option<&'static str> {
    country_table().name(code, lang)
}

/// Every country, sorted by its name in `lang` as a person expects (accents ignored when ordering: É sorts with E;
/// Å with A; case-insensitive).
pub fn countries(lang: Lang) -> &'static [Named] {
    &country_table().by_name[slot(lang)]
}

/// The name of a language tag's primary subtag (`fr-CA` -> French/Français, any letter case) for a primary subtag
/// of two letters; None otherwise (`fil`, `x-private`, an unknown code).
pub fn language_name(tag: &str, lang: Lang) -> Option<&'static str> {
    let primary = tag.split('-').next()?;
    if primary.len() != 2 || !primary.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    // Tags are case-insensitive; the table holds ISO 639-1's lower case.
    language_table().name(&primary.to_ascii_lowercase(), lang)
}

/// Every ISO 639-1 language, sorted by its name in `lang` like [`countries`].
pub fn languages(lang: Lang) -> &'static [Named] {
    &language_table().by_name[slot(lang)]
}

/// The name of an ISO 4217 code (`EUR`), upper case as [`crate::ids::is_currency`] accepts it.
pub fn currency_name(code: &str, lang: Lang) -> Option<&'static str> {
    currency_table().name(code, lang)
}

/// Every currency, sorted by its name in `lang` like [`countries`].
pub fn currencies(lang: Lang) -> &'static [Named] {
    &currency_table().by_name[slot(lang)]
}

fn country_table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::parse(include_str!("names/countries.tsv")))
}

fn language_table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::parse(include_str!("names/languages.tsv")))
}

fn currency_table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::parse(include_str!("names/currencies.tsv")))
}

/// Where a language's name is in a row and its list in `by_name`.
fn slot(lang: Lang) -> usize {
    match lang {
        Lang::En => 0,
        Lang::Fr => 1,
    }
}

/// One table, parsed once: by code for lookups, by name for pickers.
struct Table {
    /// Each code and its names by [`slot`], sorted by code so a lookup is a binary search.
    by_code: Vec<(&'static str, [&'static str; 2])>,
    /// Each language's list, sorted by [`sort_key`].
    by_name: [Vec<Named>; 2],
}

impl Table {
    /// Reads `CODE\tEnglish\tFrench` lines. A malformed line is skipped rather than failing a page; the tests check
    /// that the committed tables have none.
    fn parse(text: &'static str) -> Table {
        let mut by_code: Vec<_> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                match (fields.next(), fields.next(), fields.next(), fields.next()) {
                    (Some(code), Some(en), Some(fr), None) if ![code, en, fr].contains(&"") => Some((code, [en, fr])),
                    _ => None,
                }
            })
            .collect();
        by_code.sort_unstable_by_key(|&(code, _)| code);
        let by_name = [0usize, 1].map(|i| {
            let mut list: Vec<Named> = by_code.iter().map(|&(code, names)| (code, names[i])).collect();
            // The name and code break ties, so the order never depends on the sort algorithm.
            list.sort_by_cached_key(|&(code, name)| (sort_key(name), name, code));
            list
        });
        Table { by_code, by_name }
    }

    fn name(&self, code: &str, lang: Lang) -> Option<&'static str> {
        let i = self.by_code.binary_search_by(|&(c, _)| c.cmp(code)).ok()?;
        Some(self.by_code[i].1[slot(lang)])
    }
}

/// The key names sort by: lower case, accents dropped. Code point order would put "Égypte" after "Zimbabwe".
fn sort_key(name: &str) -> String {
    name.chars().flat_map(char::to_lowercase).map(base_letter).collect()
}

/// The base letter of the accented small Latin letters the tables hold (a test checks none is missing).
fn base_letter(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ó' | 'ô' | 'ö' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids;

    const LANGS: [Lang; 2] = [Lang::En, Lang::Fr];

    fn tables() -> [(&'static str, &'static Table); 3] {
        [
            (include_str!("names/countries.tsv"), country_table()),
            (include_str!("names/languages.tsv"), language_table()),
            (include_str!("names/currencies.tsv"), currency_table()),
        ]
    }

    /// Every string of `len` upper-case ASCII letters, in order: AA, AB, ... ZZ.
    fn upper_codes(len: u32) -> impl Iterator<Item = String> {
        (0..26u32.pow(len)).map(move |mut n| {
            let mut code = vec![b'A'; len as usize];
            for byte in code.iter_mut().rev() {
                *byte += (n % 26) as u8;
                n /= 26;
            }
            String::from_utf8(code).unwrap()
        })
    }

    fn codes(list: &[Named]) -> Vec<&'static str> {
        let mut codes: Vec<_> = list.iter().map(|&(code, _)| code).collect();
        codes.sort_unstable();
        codes
    }

    #[test]
    fn the_committed_tables_have_no_malformed_line_and_no_duplicate_code() {
        for (text, table) in tables() {
            assert_eq!(table.by_code.len(), text.lines().count(), "a line was skipped");
            assert!(table.by_code.windows(2).all(|w| w[0].0 < w[1].0), "a code is repeated");
            for &(code, names) in &table.by_code {
                assert!(names.iter().all(|name| name.trim() == *name), "{code}: white space around a name");
            }
        }
    }

    /// Every code of `len` letters that `accepts` takes has a name in both languages, and `list` has those codes.
    fn check_named_and_listed(
        len: u32,
        accepts: fn(&str) -> bool,
        name: fn(&str, Lang) -> Option<&'static str>,
        list: fn(Lang) -> &'static [Named],
    ) {
        let accepted: Vec<String> = upper_codes(len).filter(|code| accepts(code)).collect();
        assert!(accepted.len() > 100);
        for lang in LANGS {
            for code in &accepted {
                assert!(name(code, lang).is_some_and(|name| !name.is_empty()), "{code}");
            }
            assert_eq!(codes(list(lang)), accepted);
        }
    }

    #[test]
    fn every_country_and_currency_ids_accepts_is_named_and_listed_in_both_languages() {
        check_named_and_listed(2, ids::is_country, country_name, countries);
        check_named_and_listed(3, ids::is_currency, currency_name, currencies);
        assert_eq!(ids::countries().count(), countries(Lang::En).len());
    }

    #[test]
    fn languages_are_the_two_letter_codes_named_in_both_languages() {
        for lang in LANGS {
            let list = languages(lang);
            assert!(list.len() > 180);
            for &(code, name) in list {
                assert!(code.len() == 2 && code.bytes().all(|b| b.is_ascii_lowercase()), "{code}");
                assert!(!name.is_empty() && language_name(code, lang) == Some(name), "{code}");
            }
        }
    }

    #[test]
    fn names_are_looked_up_by_code() {
        assert_eq!(country_name("FR", Lang::Fr), Some("France"));
        assert_eq!(country_name("DE", Lang::Fr), Some("Allemagne"));
        assert_eq!(country_name("DE", Lang::En), Some("Germany"));
        assert_eq!(country_name("BO", Lang::En), Some("Bolivia"), "the common name");
        assert_eq!(language_name("fr-CA", Lang::En), Some("French"));
        assert_eq!(language_name("fr", Lang::Fr), Some("Français"), "capitalised for display");
        assert_eq!(language_name("FR-ca", Lang::En), Some("French"), "tags are case-insensitive");
        assert_eq!(language_name("es", Lang::En), Some("Spanish"), "only the first of the alternatives");
        assert_eq!(currency_name("EUR", Lang::En), Some("Euro"));
        assert_eq!(currency_name("XCG", Lang::En), Some("Caribbean Guilder"), "named by generate.py");
        for absent in ["", "F", "UK", "EU", "fr", "FRA"] {
            assert_eq!(country_name(absent, Lang::En), None, "{absent}");
        }
        for absent in ["", "f", "fil", "fra-FR", "x-private", "qq", "f1", "-fr", "é"] {
            assert_eq!(language_name(absent, Lang::En), None, "{absent}");
        }
        for absent in ["", "EU", "eur", "EURO", "XXX"] {
            assert_eq!(currency_name(absent, Lang::Fr), None, "{absent}");
        }
    }

    #[test]
    fn lists_ignore_accents_and_case_when_ordering() {
        let names: Vec<&str> = countries(Lang::Fr).iter().map(|&(_, name)| name).collect();
        let at = |wanted: &str| names.iter().position(|name| *name == wanted).unwrap();
        let first_e = names.iter().position(|name| sort_key(name).starts_with('e')).unwrap();
        let first_f = names.iter().position(|name| sort_key(name).starts_with('f')).unwrap();
        assert!(names[first_e..first_f].iter().all(|name| name.starts_with(['E', 'É'])));
        assert!((first_e..first_f).contains(&at("Égypte")), "Égypte with the E names, not after Z");
        assert!(at("Égypte") < at("Espagne") && at("Espagne") < at("États-Unis"));
        assert!(at("Afrique du Sud") < at("Åland, Îles") && at("Åland, Îles") < at("Albanie"));
        for (_, table) in tables() {
            for list in &table.by_name {
                let disorder = list.windows(2).find(|w| sort_key(w[0].1) > sort_key(w[1].1));
                assert_eq!(disorder, None);
            }
        }
    }

    #[test]
    fn the_fold_knows_every_accented_letter_of_the_tables() {
        for (_, table) in tables() {
            for &(_, names) in &table.by_code {
                for name in names {
                    let key = sort_key(name);
                    assert!(key.chars().all(|c| c.is_ascii() || !c.is_alphabetic()), "{name}: {key}");
                }
            }
        }
    }
}
