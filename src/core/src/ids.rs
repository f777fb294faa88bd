//! Identifiers: record ids of every type, retrieval, batch and upload ids,
//! UUID v4, `Country` and currency codes.
//!
//! Record ids are derived, never drawn: the same business publishing the same
//! own id of the same type always gets the same record id, so a second push is
//! an update. Random ids take their randomness from the caller.

use serde::{Deserialize, Serialize};

use crate::digest::sha256;

/// The record types svc stores. The first five are searchable collections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordType {
    Products,
    BusinessFiles,
    Events,
    Jobs,
    Updates,
    AiPolicy,
    Ads,
}

impl RecordType {
    pub const COLLECTIONS: [RecordType; 5] =
        [RecordType::Products, RecordType::BusinessFiles, RecordType::Events, RecordType::Jobs, RecordType::Updates];
    pub const ALL: [RecordType; 7] = [
        RecordType::Products,
        RecordType::BusinessFiles,
        RecordType::Events,
        RecordType::Jobs,
        RecordType::Updates,
        RecordType::AiPolicy,
        RecordType::Ads,
    ];

    /// The collection name (`business_files`), also the seal's `record_type`.
    pub fn name(self) -> &'static str {
        match self {
            RecordType::Products => "products",
            RecordType::BusinessFiles => "business_files",
            RecordType::Events => "events",
            RecordType::Jobs => "jobs",
            RecordType::Updates => "updates",
            RecordType::AiPolicy => "ai_policy",
            RecordType::Ads => "ads",
        }
    }

    /// The path segment of typed addresses (`business-files`).
    pub fn path_segment(self) -> &'static str {
        match self {
            RecordType::BusinessFiles => "business-files",
            RecordType::AiPolicy => "ai-policy",
            other => other.name(),
        }
    }

    pub fn prefix(self) -> &'static str {
        match self {
            RecordType::Products => "svc_",
            RecordType::BusinessFiles => "bf_",
            RecordType::Events => "evt_",
            RecordType::Jobs => "job_",
            RecordType::Updates => "upd_",
            RecordType::AiPolicy => "aip_",
            RecordType::Ads => "ad_",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn from_path_segment(segment: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.path_segment() == segment)
    }

    pub fn is_collection(self) -> bool {
        Self::COLLECTIONS.contains(&self)
    }
}

/// Length of the base32 body of every derived or random id: 128 bits.
pub const ID_BODY_LEN: usize = 26;

/// RFC 4648 base32, lower case, no padding.
pub fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

fn is_base32_body(text: &str) -> bool {
    text.len() == ID_BODY_LEN && text.bytes().all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7'))
}

/// The record id of a business's record of `kind` with the business's own
/// identifier `own_id` (for products, its `business_product_id`).
///
/// `prefix` + base32 of the first 16 bytes of
/// SHA-256("svc-record-id/1" 0x00 type 0x00 business_uuid 0x00 own_id).
pub fn record_id(kind: RecordType, business_uuid: &str, own_id: &str) -> String {
    let mut input = Vec::with_capacity(64 + own_id.len());
    for part in [b"svc-record-id/1".as_slice(), kind.name().as_bytes(), business_uuid.as_bytes(), own_id.as_bytes()] {
        input.extend_from_slice(part);
        input.push(0);
    }
    let digest = sha256(&input);
    format!("{}{}", kind.prefix(), base32_lower(&digest[..16]))
}

/// A product's id, derived from the business's public identifier and its own product id.
pub fn product_id(business_uuid: &str, business_product_id: &str) -> String {
    record_id(RecordType::Products, business_uuid, business_product_id)
}

/// The id of version `version` of a business's AI policy record.
pub fn ai_policy_record_id(business_uuid: &str, version: u64) -> String {
    record_id(RecordType::AiPolicy, business_uuid, &version.to_string())
}

/// The record type an id names, if it has exactly the form of one.
pub fn parse_record_id(id: &str) -> Option<RecordType> {
    RecordType::ALL.into_iter().find(|t| id.strip_prefix(t.prefix()).is_some_and(is_base32_body))
}

/// `r_` + 26 base32 characters from 16 random bytes.
pub fn retrieval_id(random: &[u8; 16]) -> String {
    format!("r_{}", base32_lower(random))
}

pub fn is_retrieval_id(id: &str) -> bool {
    id.strip_prefix("r_").is_some_and(is_base32_body)
}

/// `bat_` + 24 hex digits.
pub fn batch_id(random: &[u8; 12]) -> String {
    format!("bat_{}", hex::encode(random))
}

/// `bup_` + 24 hex digits.
pub fn upload_id(random: &[u8; 12]) -> String {
    format!("bup_{}", hex::encode(random))
}

fn is_hex24_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|h| h.len() == 24 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// `^bat_[0-9a-f]{24}$`
pub fn is_batch_id(id: &str) -> bool {
    is_hex24_id(id, "bat_")
}

/// `^bup_[0-9a-f]{24}$`
pub fn is_upload_id(id: &str) -> bool {
    is_hex24_id(id, "bup_")
}

/// A version 4 UUID in its lower-case text form, from 16 random bytes.
pub fn uuid_v4(random: [u8; 16]) -> String {
    uuid::Builder::from_random_bytes(random).into_uuid().hyphenated().to_string()
}

/// `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
pub fn is_uuid_v4(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 36 {
        return false;
    }
    b.iter().enumerate().all(|(i, &c)| match i {
        8 | 13 | 18 | 23 => c == b'-',
        14 => c == b'4',
        19 => matches!(c, b'8' | b'9' | b'a' | b'b'),
        _ => matches!(c, b'0'..=b'9' | b'a'..=b'f'),
    })
}

/// ISO 3166-1 alpha-2 codes officially assigned.
const COUNTRIES: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS \
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ \
FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT \
JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP \
MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE \
RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV \
TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

/// Every assigned ISO 3166-1 alpha-2 code.
pub fn countries() -> impl Iterator<Item = &'static str> {
    COUNTRIES.split(' ')
}

/// `^[A-Z]{2}$` and an assigned ISO 3166-1 alpha-2 code.
pub fn is_country(code: &str) -> bool {
    code.len() == 2 && listed(COUNTRIES, code)
}

/// Whether `code` is one of a sorted, space-separated list of codes of its
/// length. A binary search: countries and currencies are checked on every
/// price of every record.
fn listed(list: &str, code: &str) -> bool {
    let width = code.len();
    let count = (list.len() + 1) / (width + 1);
    let entry = |i: usize| &list.as_bytes()[i * (width + 1)..i * (width + 1) + width];
    let (mut low, mut high) = (0, count);
    while low < high {
        let middle = (low + high) / 2;
        match entry(middle).cmp(code.as_bytes()) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => low = middle + 1,
            std::cmp::Ordering::Greater => high = middle,
        }
    }
    false
}

/// ISO 4217 active currency codes.
const CURRENCIES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN \
BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD \
HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA \
MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF \
SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES \
VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG";

/// `^[A-Z]{3}$` and an active ISO 4217 code.
pub fn is_currency(code: &str) -> bool {
    code.len() == 3 && listed(CURRENCIES, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSINESS: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";

    #[test]
    fn code_lists_are_sorted_so_the_binary_search_finds_every_code() {
        for (list, width) in [(COUNTRIES, 2), (CURRENCIES, 3)] {
            let codes: Vec<&str> = list.split(' ').collect();
            assert!(codes.iter().all(|c| c.len() == width), "one width per list");
            assert!(codes.windows(2).all(|w| w[0] < w[1]), "strictly sorted");
            for code in &codes {
                assert!(listed(list, code), "{code}");
            }
        }
        assert_eq!(countries().count(), 249);
        for absent in ["AA", "ZZ", "UK", "EU", "A", "aD", "FRA"] {
            assert!(!is_country(absent), "{absent}");
        }
        for absent in ["AAA", "ZZZ", "EURO", "eur", "XXX"] {
            assert!(!is_currency(absent), "{absent}");
        }
        assert!(is_country("AD") && is_country("ZW") && is_currency("AED") && is_currency("ZWG"));
    }

    // rule: R2.1.1, R2.1.4, R2.1.5
    #[test]
    fn product_ids_are_derived_and_stable() {
        let id = product_id(BUSINESS, "SKU-1");
        assert_eq!(id, product_id(BUSINESS, "SKU-1"));
        assert_ne!(id, product_id(BUSINESS, "SKU-2"));
        assert_ne!(id, product_id("0f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c", "SKU-1"));
        let body = id.strip_prefix("svc_").unwrap();
        assert_eq!(body.len(), 26);
        assert!(body.bytes().all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)));
        assert_eq!(parse_record_id(&id), Some(RecordType::Products));
        // Pinned so the derivation can never drift silently.
        assert_eq!(id, "svc_5cgnjqct4zat4oeqlfuxmnkc3y");
    }

    // rule: R2.1.2, R-NS-1
    #[test]
    fn every_prefix_and_its_length() {
        for kind in RecordType::ALL {
            let id = record_id(kind, BUSINESS, "own-1");
            assert!(id.starts_with(kind.prefix()));
            assert_eq!(id.len(), kind.prefix().len() + 26);
            assert_eq!(parse_record_id(&id), Some(kind));
        }
        assert_eq!(parse_record_id("svc_5CGNJQCT4ZAT4OEQLFUXMNKC3Y"), None);
        assert_eq!(parse_record_id("svc_5cgnjqct4zat4oeqlfuxmnkc3"), None);
        assert_eq!(parse_record_id("svc_5cgnjqct4zat4oeqlfuxmnkc31"), None);
        assert_eq!(parse_record_id("xyz_5cgnjqct4zat4oeqlfuxmnkc3y"), None);
    }

    #[test]
    fn base32_matches_rfc4648() {
        // RFC 4648 section 10 test vectors, lower-cased and unpadded.
        assert_eq!(base32_lower(b"f"), "my");
        assert_eq!(base32_lower(b"fo"), "mzxq");
        assert_eq!(base32_lower(b"foo"), "mzxw6");
        assert_eq!(base32_lower(b"foob"), "mzxw6yq");
        assert_eq!(base32_lower(b"fooba"), "mzxw6ytb");
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
    }

    // rule: R2.1.7, P2.5.2, P2.6.52
    #[test]
    fn random_id_forms() {
        let r = retrieval_id(&[7; 16]);
        assert!(r.starts_with("r_") && is_retrieval_id(&r));
        let b = batch_id(&[0xab; 12]);
        assert_eq!(b, format!("bat_{}", "ab".repeat(12)));
        assert!(is_batch_id(&b) && !is_batch_id("bat_ABABABABABABABABABABABAB"));
        assert!(is_upload_id(&upload_id(&[1; 12])) && !is_upload_id("bup_123"));
    }

    // rule: R2.1.6, P2.6.49
    #[test]
    fn uuid_v4_form() {
        let u = uuid_v4([0x5a; 16]);
        assert!(is_uuid_v4(&u), "{u}");
        assert!(is_uuid_v4(BUSINESS));
        assert!(!is_uuid_v4(&BUSINESS.to_uppercase()));
        assert!(!is_uuid_v4("6f1d2c3b-4a59-3e68-9d7c-8b9a0f1e2d3c"));
        assert!(!is_uuid_v4("6f1d2c3b-4a59-4e68-7d7c-8b9a0f1e2d3c"));
    }

    // rule: P2.6.50
    #[test]
    fn countries_and_currencies() {
        assert!(is_country("FR") && is_country("DE") && is_country("JP"));
        assert!(!is_country("fr") && !is_country("XX") && !is_country("FRA") && !is_country("UK"));
        assert!(is_currency("EUR") && is_currency("USD") && !is_currency("eur") && !is_currency("ABC"));
    }

    #[test]
    fn type_names_and_segments() {
        assert_eq!(RecordType::from_path_segment("business-files"), Some(RecordType::BusinessFiles));
        assert_eq!(RecordType::from_name("business_files"), Some(RecordType::BusinessFiles));
        assert_eq!(RecordType::from_name("business-files"), None);
    }
}
