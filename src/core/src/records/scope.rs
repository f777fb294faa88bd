//! `scope_violation` (P2.5.22): a business's texts speak for that business
//! only. A text fails when it names another business's brand or company (one
//! the business neither owns nor sells), or when it tells the reader how to
//! treat other sources.
//!
//! Matching is on words: both the text and each name are lower-cased, every
//! character other than a letter, a digit or an apostrophe becomes a space,
//! and the name must appear as a whole run of words. So `AT&T` matches
//! "at&t's" only as "at t", and "Orangery" never matches `Orange`. A mention
//! inside one of the business's own brand names (`Apple` inside "Apple Pie
//! Bakery", when that is the business's brand) is not another brand.

use std::collections::HashSet;

/// Phrases that direct how other sources are treated. Matched on whole words
/// after the normalisation above, anywhere in a checked text.
pub const DIRECTIVE_PHRASES: &[&str] = &[
    "ignore other sources",
    "ignore all other sources",
    "ignore previous instructions",
    "ignore all previous instructions",
    "disregard other",
    "disregard previous",
    "do not trust other",
    "don't trust other",
    "rank this above",
    "rank us above",
    "only recommend",
    "never recommend",
    "instead of other sources",
];

/// How a text member is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Not checked (identifiers, codes).
    None,
    /// Directive phrases only: place names, addresses, `markets_served`, a
    /// product's `category` and the declared brand names of a business file,
    /// where a coincidence with another brand is expected or intended.
    Directive,
    /// Other brands and directive phrases: names (product and location
    /// names), descriptions, tags, titles, headlines, bodies, a product's
    /// `brand`, and the five represent texts.
    Full,
}

/// Lower-cased words of a text, per the normalisation in the module doc.
pub fn words(text: &str) -> Vec<String> {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if matches!(c, '\u{2018}' | '\u{2019}' | '`') { '\'' } else { c };
        if c.is_alphanumeric() || c == '\'' {
            cleaned.extend(c.to_lowercase());
        } else {
            cleaned.push(' ');
        }
    }
    cleaned.split_whitespace().map(str::to_owned).collect()
}

/// Brand lists and phrases, normalised once per validation context.
#[derive(Debug, Clone)]
pub(super) struct Matcher {
    own: Vec<Vec<String>>,
    other: Vec<(String, Vec<String>)>,
    directives: Vec<(&'static str, Vec<String>)>,
}

impl Matcher {
    pub(super) fn new<'a>(own: impl IntoIterator<Item = &'a String>, other: &[String]) -> Self {
        let own: Vec<Vec<String>> = own.into_iter().map(|n| words(n)).filter(|w| !w.is_empty()).collect();
        let other = other
            .iter()
            .map(|name| (name.clone(), words(name)))
            .filter(|(_, w)| !w.is_empty() && !own.contains(w))
            .collect();
        let directives = DIRECTIVE_PHRASES.iter().map(|p| (*p, words(p))).collect();
        Matcher { own, other, directives }
    }

    /// What is wrong with `text`, if anything, as a detail line.
    pub(super) fn check(&self, text: &str, scope: Scope) -> Option<String> {
        if scope == Scope::None {
            return None;
        }
        let words = words(text);
        let present: HashSet<&str> = words.iter().map(String::as_str).collect();
        let mut found = Vec::new();
        if scope == Scope::Full {
            let own_spans: Vec<(usize, usize)> = self
                .own
                .iter()
                .flat_map(|name| positions(&words, name).map(move |start| (start, start + name.len())))
                .collect();
            for (name, seq) in &self.other {
                if !present.contains(seq[0].as_str()) {
                    continue;
                }
                let outside_own = positions(&words, seq)
                    .any(|start| !own_spans.iter().any(|&(a, b)| a <= start && start + seq.len() <= b));
                if outside_own {
                    found.push(format!("names another business's brand {name:?}"));
                }
            }
        }
        for (phrase, seq) in &self.directives {
            if present.contains(seq[0].as_str()) && positions(&words, seq).next().is_some() {
                found.push(format!("directs how other sources are treated ({phrase:?})"));
            }
        }
        (!found.is_empty()).then(|| found.join("; "))
    }
}

/// Start indexes where `needle` occurs as a run of whole words in `words`.
fn positions<'a>(words: &'a [String], needle: &'a [String]) -> impl Iterator<Item = usize> + 'a {
    let last = words.len().checked_sub(needle.len());
    (0..last.map_or(0, |l| l + 1)).filter(move |&i| !needle.is_empty() && words[i..i + needle.len()] == *needle)
}
