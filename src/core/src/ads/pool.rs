//! The pool request (retrieval 4.1) read and checked, and the order of the
//! ads a pool holds: the caller's sort, then the ad id, so the same pool
//! over the same candidates is always the same list.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::Deserialize;

use super::campaign::{MAX_KEYWORD, keyword};
use super::{Format, MAX_KEYWORDS, MAX_POOL_SIZE, Micros};
use crate::ids::is_country;
use crate::problem::Code;

/// The longest `session_ref` (an opaque reference, printable ASCII).
pub const MAX_SESSION_REF: usize = 256;

/// The request as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    country: Option<String>,
    subdivision: Option<String>,
    keywords: Option<Vec<String>>,
    formats: Option<Vec<String>>,
    sort_by: Option<String>,
    max_per_campaign: Option<u64>,
    size: Option<u64>,
    session_ref: Option<String>,
}

/// A key a pool sorts by (R4.1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    NetPrice,
    PublishedAt,
    KeywordMatches,
    /// Seeded by the pool's `retrieval_id` (R4.1.10).
    Random,
}

impl SortKey {
    fn parse(name: &str) -> Option<SortKey> {
        Some(match name {
            "net_price" => SortKey::NetPrice,
            "published_at" => SortKey::PublishedAt,
            "keyword_matches" => SortKey::KeywordMatches,
            "random" => SortKey::Random,
            _ => return None,
        })
    }
}

/// A checked pool request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub country: String,
    pub subdivision: Option<String>,
    /// As campaigns match them (trimmed, lower case), without repeats.
    pub keywords: Vec<String>,
    pub formats: Vec<Format>,
    /// Each key and whether it is descending.
    pub sort: Vec<(SortKey, bool)>,
    pub max_per_campaign: Option<usize>,
    pub size: usize,
    pub session_ref: String,
}

/// A refusal: its code and what to change.
pub type Refusal = (Code, String);

fn invalid(detail: impl Into<String>) -> Refusal {
    (Code::RequestInvalid, detail.into())
}

/// Reads a pool request; the first thing wrong is the refusal.
pub fn parse(body: &[u8]) -> Result<Pool, Refusal> {
    let raw: Raw = serde_json::from_slice(body).map_err(|e| invalid(format!("the pool request: {e}")))?;
    let country = raw.country.ok_or_else(|| invalid("country is required"))?;
    if !is_country(&country) {
        return Err(invalid("country is an ISO 3166-1 alpha-2 code"));
    }
    if let Some(sub) = &raw.subdivision
        && !(super::campaign::is_subdivision(sub) && sub.starts_with(&format!("{country}-")))
    {
        return Err(invalid("subdivision is an ISO 3166-2 code of the country"));
    }
    let asked = raw.keywords.ok_or_else(|| invalid("keywords are required"))?;
    if asked.is_empty() || asked.len() > MAX_KEYWORDS {
        return Err(invalid(format!("1 to {MAX_KEYWORDS} keywords")));
    }
    let mut keywords = Vec::with_capacity(asked.len());
    for k in &asked {
        let k = keyword(k);
        if k.is_empty() || k.chars().count() > MAX_KEYWORD || k.chars().any(char::is_control) {
            return Err(invalid(format!("a keyword is a subject term of 1 to {MAX_KEYWORD} characters")));
        }
        if !keywords.contains(&k) {
            keywords.push(k);
        }
    }
    let mut formats = Vec::new();
    for f in raw.formats.ok_or_else(|| invalid("formats are required"))? {
        let format = Format::parse(&f).ok_or_else(|| invalid(format!("{f} is not a format (compact, card)")))?;
        if !formats.contains(&format) {
            formats.push(format);
        }
    }
    if formats.is_empty() {
        return Err(invalid("at least one format"));
    }
    let sort_by = raw.sort_by.ok_or((Code::SortRequired, "sort_by is required".to_owned()))?;
    let mut sort = Vec::new();
    for part in sort_by.split(',') {
        let (name, direction) = part.trim().split_once(':').unwrap_or((part.trim(), ""));
        let key = SortKey::parse(name).ok_or((
            Code::SortNotAllowed,
            format!("{name} is not a pool sort key (net_price, published_at, keyword_matches, random)"),
        ))?;
        let descending = match direction {
            "asc" => false,
            "desc" => true,
            _ => return Err((Code::SortNotAllowed, format!("{part} is key:asc or key:desc"))),
        };
        if sort.iter().any(|(k, _)| *k == key) {
            return Err((Code::SortNotAllowed, format!("{name} is named twice")));
        }
        sort.push((key, descending));
    }
    if sort.len() > 3 {
        return Err((Code::SortNotAllowed, "at most three sort keys".into()));
    }
    let max_per_campaign = match raw.max_per_campaign {
        Some(0) => return Err(invalid("max_per_campaign is at least 1")),
        Some(n) => Some(n.min(MAX_POOL_SIZE as u64) as usize),
        None => None,
    };
    let size = match raw.size {
        None => MAX_POOL_SIZE,
        Some(n) if (1..=MAX_POOL_SIZE as u64).contains(&n) => n as usize,
        Some(_) => return Err(invalid(format!("size is 1 to {MAX_POOL_SIZE}"))),
    };
    let session_ref = raw.session_ref.ok_or_else(|| invalid("session_ref is required"))?;
    if session_ref.is_empty()
        || session_ref.len() > MAX_SESSION_REF
        || !session_ref.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(invalid(format!("session_ref is 1 to {MAX_SESSION_REF} printable characters")));
    }
    Ok(Pool { country, subdivision: raw.subdivision, keywords, formats, sort, max_per_campaign, size, session_ref })
}

/// An ad a pool may hold, as the service found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub ad_id: String,
    pub campaign_id: String,
    pub net_price: Micros,
    /// Milliseconds.
    pub published_at: i64,
    pub keyword_matches: u32,
}

/// The `random` key of an ad in the pool `retrieval_id`: the first eight
/// bytes of SHA-256(retrieval_id ‖ 0x00 ‖ ad_id), so anyone holding the
/// pool can check its order.
pub fn random_key(retrieval_id: &str, ad_id: &str) -> u64 {
    let mut input = Vec::with_capacity(retrieval_id.len() + ad_id.len() + 1);
    input.extend_from_slice(retrieval_id.as_bytes());
    input.push(0);
    input.extend_from_slice(ad_id.as_bytes());
    let digest = crate::digest::sha256(&input);
    u64::from_be_bytes(digest[..8].try_into().unwrap_or_default())
}

/// The candidates a pool holds, in order: by the pool's sort keys, then by
/// ad id; at most `max_per_campaign` of one campaign, at most `size`.
pub fn order(pool: &Pool, retrieval_id: &str, mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    let random: HashMap<String, u64> =
        candidates.iter().map(|c| (c.ad_id.clone(), random_key(retrieval_id, &c.ad_id))).collect();
    candidates.sort_by(|a, b| {
        for (key, descending) in &pool.sort {
            let ordering = match key {
                SortKey::NetPrice => a.net_price.cmp(&b.net_price),
                SortKey::PublishedAt => a.published_at.cmp(&b.published_at),
                SortKey::KeywordMatches => a.keyword_matches.cmp(&b.keyword_matches),
                SortKey::Random => random[&a.ad_id].cmp(&random[&b.ad_id]),
            };
            let ordering = if *descending { ordering.reverse() } else { ordering };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        a.ad_id.cmp(&b.ad_id)
    });
    let mut per_campaign: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for candidate in candidates {
        let taken = per_campaign.entry(candidate.campaign_id.clone()).or_default();
        if pool.max_per_campaign.is_some_and(|max| *taken >= max) {
            continue;
        }
        *taken += 1;
        out.push(candidate);
        if out.len() == pool.size {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"country": "FR", "subdivision": "FR-75", "keywords": ["Lamp", "lamp", "desk"],
        "formats": ["card", "compact"], "sort_by": "net_price:desc,random:asc", "max_per_campaign": 1,
        "size": 3, "session_ref": "conv-8f2"}"#;

    fn with(member: &str, value: serde_json::Value) -> Vec<u8> {
        let mut body: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        if value.is_null() {
            body.as_object_mut().unwrap().remove(member);
        } else {
            body[member] = value;
        }
        serde_json::to_vec(&body).unwrap()
    }

    // rule: R4.1.1, R4.1.2, R4.1.3, R4.1.4, R4.1.7, R4.1.8, R4.1.9, R4.1.12, R4.1.13
    #[test]
    fn a_pool_request_is_read_and_each_bad_member_refused_with_its_code() {
        let pool = parse(GOOD.as_bytes()).unwrap();
        assert_eq!(pool.keywords, ["lamp", "desk"]);
        assert_eq!(pool.formats, [Format::Card, Format::Compact]);
        assert_eq!(pool.sort, [(SortKey::NetPrice, true), (SortKey::Random, false)]);
        assert_eq!((pool.size, pool.max_per_campaign), (3, Some(1)));
        assert_eq!(parse(&with("size", serde_json::Value::Null)).unwrap().size, 20, "size defaults to 20");
        use serde_json::json;
        let cases = [
            ("sort_by", json!(null), Code::SortRequired),
            ("sort_by", json!("price:desc"), Code::SortNotAllowed),
            ("sort_by", json!("net_price"), Code::SortNotAllowed),
            ("sort_by", json!("random:asc,random:desc"), Code::SortNotAllowed),
            ("country", json!(null), Code::RequestInvalid),
            ("country", json!("fr"), Code::RequestInvalid),
            ("subdivision", json!("DE-BE"), Code::RequestInvalid),
            ("keywords", json!([]), Code::RequestInvalid),
            ("keywords", json!(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]), Code::RequestInvalid),
            ("formats", json!(["banner"]), Code::RequestInvalid),
            ("formats", json!([]), Code::RequestInvalid),
            ("size", json!(21), Code::RequestInvalid),
            ("size", json!(0), Code::RequestInvalid),
            ("max_per_campaign", json!(0), Code::RequestInvalid),
            ("session_ref", json!(null), Code::RequestInvalid),
            ("session_ref", json!("has space"), Code::RequestInvalid),
            ("topic", json!("x"), Code::RequestInvalid),
        ];
        for (member, value, code) in cases {
            let refused = parse(&with(member, value.clone())).unwrap_err();
            assert_eq!(refused.0, code, "{member} = {value}: {refused:?}");
        }
    }

    fn candidate(ad: &str, campaign: &str, price: u64, at: i64, matches: u32) -> Candidate {
        Candidate {
            ad_id: ad.into(),
            campaign_id: campaign.into(),
            net_price: Micros(price),
            published_at: at,
            keyword_matches: matches,
        }
    }

    // rule: R4.1.9, R4.1.10, R4.1.11, R4.1.12
    #[test]
    fn ads_follow_the_sort_then_the_id_with_the_campaign_cap_and_size() {
        let mut pool = parse(GOOD.as_bytes()).unwrap();
        pool.sort = vec![(SortKey::KeywordMatches, true), (SortKey::NetPrice, true)];
        pool.max_per_campaign = Some(1);
        let all = vec![
            candidate("ad_a", "c1", 5, 1, 1),
            candidate("ad_b", "c1", 9, 2, 2),
            candidate("ad_c", "c2", 7, 3, 2),
            candidate("ad_d", "c3", 7, 4, 2),
            candidate("ad_e", "c4", 1, 5, 1),
        ];
        let ids = |list: Vec<Candidate>| list.into_iter().map(|c| c.ad_id).collect::<Vec<_>>();
        // c1's second ad is passed over; ties on price fall to the id.
        assert_eq!(ids(order(&pool, "r_1", all.clone())), ["ad_b", "ad_c", "ad_d"]);
        pool.max_per_campaign = None;
        pool.sort = vec![(SortKey::PublishedAt, false)];
        assert_eq!(ids(order(&pool, "r_1", all.clone())), ["ad_a", "ad_b", "ad_c"]);
        // Random is the pool's own: the same id gives the same order, and
        // anyone can recompute it.
        pool.sort = vec![(SortKey::Random, false)];
        pool.size = 5;
        let first = ids(order(&pool, "r_1", all.clone()));
        assert_eq!(first, ids(order(&pool, "r_1", all.iter().rev().cloned().collect())));
        let mut by_key: Vec<&Candidate> = all.iter().collect();
        by_key.sort_by_key(|c| random_key("r_1", &c.ad_id));
        assert_eq!(first, by_key.iter().map(|c| c.ad_id.clone()).collect::<Vec<_>>());
        let other_pools: Vec<Vec<String>> =
            (0..8).map(|i| ids(order(&pool, &format!("r_{i}x"), all.clone()))).collect();
        assert!(other_pools.iter().any(|o| *o != first), "another pool, another order");
    }
}
