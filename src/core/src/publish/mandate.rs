//! Mandates: what an integration key may publish, sealed by a person.
//!
//! A business's own system signs batches with an integration key; a person
//! (owner or admin) authorises that key by sealing a mandate with a passkey
//! (section 2.4). The mandate names the key, the record types and countries it
//! may publish, its caps, an optional source allow-list, and a validity of at
//! most 92 days.
//!
//! The payload (`application/vnd.service.mandate.v1+json`) is RFC 8785
//! canonical JSON with exactly these members, like every sealed payload in
//! svc: a payload that is not canonical, or carries another member, is
//! `payload_malformed`.
//!
//! Choices the spec leaves open, made here:
//! * validity is inclusive at both ends: the mandate covers `valid_from` up to
//!   and including `valid_until`; strictly after it is `out_of_scope`;
//! * every array is non-empty and holds no duplicate; a null allow-list means
//!   every source, an empty one is refused (it would allow none);
//! * allow-list entries are CIDR ranges with no host bits set, bare IPs, or
//!   `AS` + a number; a request from an IPv4-mapped IPv6 address is judged as
//!   its IPv4 address, so entries are never IPv4-mapped.

use std::net::IpAddr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::Reason;
use crate::b64;
use crate::canonical::{canonicalize_text, to_signed_bytes};
use crate::dsse::{self, Envelope, known_version, payload_type};
use crate::ids::{RecordType, is_country, is_uuid_v4};
use crate::keys::VerifyingKey;
use crate::time::{DAY, UnixMs};

use super::webauthn::verify_assertion;

/// Short name of the mandate payload type (`payload_type(MANDATE_V1)`).
pub const MANDATE_V1: &str = "mandate.v1";
/// The longest validity a mandate may have (P2.4.4, P8.8).
pub const MAX_VALIDITY_MS: i64 = 92 * DAY;
/// Roles whose passkey may seal a mandate (P2.4.1).
pub const SEALING_ROLES: [&str; 2] = ["owner", "admin"];
/// The only direction a mandate grants.
pub const DIRECTION_PUBLISH: &str = "publish";
/// `mandate_id`: 1 to this many visible ASCII characters.
pub const MAX_MANDATE_ID: usize = 128;
/// A source allow-list holds 1 to this many entries, so judging stays cheap.
pub const MAX_ALLOW_LIST: usize = 256;

/// The full payload type of a mandate.
pub fn mandate_payload_type() -> String {
    payload_type(MANDATE_V1)
}

/// A mandate payload, version 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mandate {
    pub v: u64,
    pub mandate_id: String,
    pub business_uuid: String,
    /// The integration key authorised (its RFC 7638 thumbprint).
    pub key_id: String,
    pub scope: Scope,
    pub valid_from: String,
    pub valid_until: String,
}

/// What the mandate allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// Collection names (`products`, `business_files`, …).
    pub record_types: Vec<String>,
    /// ISO 3166-1 alpha-2 codes.
    pub countries: Vec<String>,
    /// Only `publish`.
    pub directions: Vec<String>,
    pub caps: Caps,
    /// Present and `null` for every source; never absent.
    #[serde(deserialize_with = "present_or_null")]
    pub source_ip_allow_list: Option<Vec<String>>,
}

/// The mandate's caps, per key (P8.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caps {
    pub records_per_hour: u64,
    pub bytes_per_day: u64,
}

/// With `deserialize_with`, serde requires the member: `null` is allowed, a
/// missing member is not (the spec lists it as a member, "or null").
fn present_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::deserialize(d)
}

fn unique_non_empty(items: &[String], valid: impl Fn(&str) -> bool) -> bool {
    !items.is_empty()
        && items.iter().all(|i| valid(i))
        && items.iter().enumerate().all(|(n, i)| !items[..n].contains(i))
}

fn is_known_collection(name: &str) -> bool {
    RecordType::from_name(name).is_some_and(RecordType::is_collection)
}

fn is_thumbprint(text: &str) -> bool {
    text.len() == 43 && b64::url_decode(text).is_some_and(|b| b.len() == 32)
}

impl Mandate {
    /// `valid_from` as an instant, if it is RFC 3339.
    pub fn valid_from_ms(&self) -> Option<UnixMs> {
        UnixMs::parse_rfc3339(&self.valid_from)
    }

    /// `valid_until` as an instant, if it is RFC 3339.
    pub fn valid_until_ms(&self) -> Option<UnixMs> {
        UnixMs::parse_rfc3339(&self.valid_until)
    }

    /// Checks every member's form (everything but the signature).
    pub fn validate(&self) -> Result<(), Reason> {
        if self.v != 1 {
            return Err(Reason::VersionUnknown);
        }
        let id_ok = (1..=MAX_MANDATE_ID).contains(&self.mandate_id.len())
            && self.mandate_id.bytes().all(|b| (0x21..=0x7e).contains(&b));
        let scope = &self.scope;
        let allow_ok = match &scope.source_ip_allow_list {
            None => true,
            Some(list) => list.len() <= MAX_ALLOW_LIST && unique_non_empty(list, |e| parse_allow_entry(e).is_some()),
        };
        let shaped = id_ok
            && is_uuid_v4(&self.business_uuid)
            && is_thumbprint(&self.key_id)
            && unique_non_empty(&scope.record_types, is_known_collection)
            && unique_non_empty(&scope.countries, is_country)
            && unique_non_empty(&scope.directions, |d| d == DIRECTION_PUBLISH)
            && scope.caps.records_per_hour > 0
            && scope.caps.bytes_per_day > 0
            && allow_ok;
        let (Some(from), Some(until)) = (self.valid_from_ms(), self.valid_until_ms()) else {
            return Err(Reason::PayloadMalformed);
        };
        // Longer than 92 days is not a mandate svc will honour (P2.4.4).
        if !shaped || until <= from || until.0.saturating_sub(from.0) > MAX_VALIDITY_MS {
            return Err(Reason::PayloadMalformed);
        }
        Ok(())
    }

    /// The canonical payload bytes to seal.
    pub fn to_payload(&self) -> Result<Vec<u8>, Reason> {
        self.validate()?;
        to_signed_bytes(self).map_err(|_| Reason::PayloadMalformed)
    }

    /// Judges one use of the mandate at `at` (the batch's `sealed_at`) for a
    /// record type and the countries the records are published in.
    ///
    /// Outside the validity (before `valid_from` or after `valid_until`), or
    /// any type or country outside the scope, is `out_of_scope` (P3.37).
    pub fn judge<S: AsRef<str>>(&self, at: UnixMs, record_type: &str, countries: &[S]) -> Result<(), Reason> {
        // A mandate whose dates do not parse was never validated: fail closed.
        let (Some(from), Some(until)) = (self.valid_from_ms(), self.valid_until_ms()) else {
            return Err(Reason::OutOfScope);
        };
        let in_time = from <= at && at <= until;
        let type_ok = self.scope.record_types.iter().any(|t| t == record_type);
        let countries_ok = countries.iter().all(|c| self.scope.countries.iter().any(|s| s == c.as_ref()));
        if in_time && type_ok && countries_ok { Ok(()) } else { Err(Reason::OutOfScope) }
    }

    /// Whether a request from `ip` (in autonomous system `asn`, when known)
    /// may use this mandate (P4.1.57).
    pub fn permits_source(&self, ip: IpAddr, asn: Option<u32>) -> bool {
        allow_list_permits(&self.scope.source_ip_allow_list, ip, asn)
    }
}

/// Reads and validates a mandate payload, without checking any signature.
pub fn read_mandate(payload: &[u8]) -> Result<Mandate, Reason> {
    dsse::payload_version(payload, &[1])?;
    if canonicalize_text(payload).map_err(|_| Reason::PayloadMalformed)? != payload {
        return Err(Reason::PayloadMalformed);
    }
    let mandate: Mandate = serde_json::from_slice(payload).map_err(|_| Reason::PayloadMalformed)?;
    mandate.validate()?;
    Ok(mandate)
}

/// Verifies a sealed mandate: a valid passkey signature by a key whose role
/// is `owner` or `admin` (P2.4.1), over a valid mandate payload.
///
/// `passkey_for(keyid)` returns the business's passkey of that id and the role
/// of the person holding it, or `None` when unknown or revoked. The first
/// signature that verifies by an owner or admin suffices. Otherwise the
/// refusal is `signature_invalid` (or `envelope_malformed`) when an owner's or
/// admin's signature failed, `out_of_scope` when only other roles signed, and
/// `key_unknown` when no signer is known.
pub fn verify_mandate<F, R>(envelope: &Envelope, passkey_for: F, rp_id: &str, origin: &str) -> Result<Mandate, Reason>
where
    F: Fn(&str) -> Option<(VerifyingKey, R)>,
    R: AsRef<str>,
{
    let payload = sealed_by_owner_or_admin(envelope, "mandate", passkey_for, rp_id, origin)?;
    read_mandate(&payload)
}

/// The payload of an envelope of payload type family `family` (version 1)
/// that an owner's or admin's passkey sealed; refusals as for a mandate.
/// Signatures are checked before the payload is read, so a forgery learns
/// nothing about it.
pub fn sealed_by_owner_or_admin<F, R>(
    envelope: &Envelope,
    family: &str,
    passkey_for: F,
    rp_id: &str,
    origin: &str,
) -> Result<Vec<u8>, Reason>
where
    F: Fn(&str) -> Option<(VerifyingKey, R)>,
    R: AsRef<str>,
{
    let opened = envelope.open()?;
    known_version(&envelope.payload_type, family, &[1])?;
    let mut refusal = Reason::KeyUnknown;
    for sig in &envelope.signatures {
        let Some((key, role)) = passkey_for(&sig.keyid) else { continue };
        if !SEALING_ROLES.contains(&role.as_ref()) {
            if refusal == Reason::KeyUnknown {
                refusal = Reason::OutOfScope;
            }
            continue;
        }
        match verify_assertion(sig, &envelope.payload_type, &opened.payload, &key, rp_id, origin) {
            Ok(()) => return Ok(opened.payload),
            Err(reason) => refusal = reason,
        }
    }
    Err(refusal)
}

/// One entry of a source allow-list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowEntry {
    V4 { network: u32, prefix: u8 },
    V6 { network: u128, prefix: u8 },
    Asn(u32),
}

/// Digits only, no sign, and no leading zero (so one value has one spelling).
fn plain_number(text: &str, max_len: usize) -> Option<u64> {
    let ok = (1..=max_len).contains(&text.len())
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if ok { text.parse().ok() } else { None }
}

fn mask4(prefix: u8) -> u32 {
    // A shift by the full width overflows, so prefix 0 is its own case.
    if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) }
}

fn mask6(prefix: u8) -> u128 {
    if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) }
}

/// Parses `203.0.113.0/24`, `2001:db8::/32`, a bare IP, or `AS64500`.
///
/// Prefix lengths are 0–32 (IPv4) or 0–128 (IPv6) without leading zeros; a
/// range with host bits set (`203.0.113.5/24`) is refused as ambiguous, and
/// so are IPv4-mapped IPv6 entries and AS 0.
pub fn parse_allow_entry(text: &str) -> Option<AllowEntry> {
    if let Some(number) = text.strip_prefix("AS") {
        let asn = u32::try_from(plain_number(number, 10)?).ok()?;
        return (asn != 0).then_some(AllowEntry::Asn(asn));
    }
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(u8::try_from(plain_number(prefix, 3)?).ok()?)),
        None => (text, None),
    };
    match address.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => {
            let prefix = prefix.unwrap_or(32);
            let network = u32::from(v4);
            (prefix <= 32 && network & !mask4(prefix) == 0).then_some(AllowEntry::V4 { network, prefix })
        }
        IpAddr::V6(v6) => {
            let prefix = prefix.unwrap_or(128);
            let network = u128::from(v6);
            let ok = prefix <= 128 && network & !mask6(prefix) == 0 && v6.to_ipv4_mapped().is_none();
            ok.then_some(AllowEntry::V6 { network, prefix })
        }
    }
}

/// The address as judged: an IPv4-mapped IPv6 address (a dual-stack socket's
/// view of an IPv4 client) is its IPv4 address.
pub fn normalise(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

impl AllowEntry {
    pub fn permits(self, ip: IpAddr, asn: Option<u32>) -> bool {
        match (self, normalise(ip)) {
            (AllowEntry::Asn(n), _) => asn == Some(n),
            (AllowEntry::V4 { network, prefix }, IpAddr::V4(v4)) => u32::from(v4) & mask4(prefix) == network,
            (AllowEntry::V6 { network, prefix }, IpAddr::V6(v6)) => u128::from(v6) & mask6(prefix) == network,
            _ => false,
        }
    }
}

/// Whether a source allow-list names an autonomous system (`AS…`), which
/// only an IP-to-AS table can match.
pub fn names_asn(list: &Option<Vec<String>>) -> bool {
    list.iter().flatten().any(|e| matches!(parse_allow_entry(e), Some(AllowEntry::Asn(_))))
}

/// Whether a source allow-list lets a request from `ip` (in `asn`) through.
/// `None` (null) allows everyone; an entry that does not parse allows no one.
pub fn allow_list_permits(list: &Option<Vec<String>>, ip: IpAddr, asn: Option<u32>) -> bool {
    match list {
        None => true,
        Some(entries) => entries.iter().filter_map(|e| parse_allow_entry(e)).any(|e| e.permits(ip, asn)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Alg, SigningKey};
    use crate::publish::webauthn::{assert, seal_with_passkey};
    use crate::time::{MINUTE, SECOND};
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const RP: &str = "portal.svc.example";
    const ORIGIN: &str = "https://portal.svc.example";
    const BUSINESS: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";
    const FROM: &str = "2026-11-01T00:00:00.000Z";

    fn integration_key() -> String {
        SigningKey::from_seed(Alg::Ed25519, &[2; 32]).unwrap().verifying_key().thumbprint()
    }

    fn passkey(n: u8) -> SigningKey {
        SigningKey::from_seed(Alg::Es256, &[n; 32]).unwrap()
    }

    fn mandate() -> Mandate {
        Mandate {
            v: 1,
            mandate_id: "mdt_01".into(),
            business_uuid: BUSINESS.into(),
            key_id: integration_key(),
            scope: Scope {
                record_types: vec!["products".into()],
                countries: vec!["FR".into(), "DE".into()],
                directions: vec!["publish".into()],
                caps: Caps { records_per_hour: 1_000, bytes_per_day: 1 << 30 },
                source_ip_allow_list: None,
            },
            valid_from: FROM.into(),
            valid_until: "2027-01-31T00:00:00.000Z".into(),
        }
    }

    fn from() -> UnixMs {
        UnixMs::parse_rfc3339(FROM).unwrap()
    }

    fn at(ms: i64) -> UnixMs {
        from().plus(ms)
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Passkeys of an owner (1), an admin (2) and a developer (3).
    fn register(keyid: &str) -> Option<(VerifyingKey, &'static str)> {
        [(1, "owner"), (2, "admin"), (3, "developer")]
            .into_iter()
            .map(|(n, role)| (passkey(n).verifying_key(), role))
            .find(|(k, _)| k.thumbprint() == keyid)
    }

    fn sealed_by(n: u8, m: &Mandate) -> Envelope {
        seal_with_passkey(&passkey(n), RP, ORIGIN, &mandate_payload_type(), &m.to_payload().unwrap(), 1).unwrap()
    }

    // rule: P2.4.1
    #[test]
    fn owner_or_admin_passkey_seals_a_mandate() {
        let m = mandate();
        assert_eq!(verify_mandate(&sealed_by(1, &m), register, RP, ORIGIN), Ok(m.clone()));
        assert_eq!(verify_mandate(&sealed_by(2, &m), register, RP, ORIGIN), Ok(m.clone()));
        assert_eq!(verify_mandate(&sealed_by(3, &m), register, RP, ORIGIN), Err(Reason::OutOfScope));
        assert_eq!(verify_mandate(&sealed_by(4, &m), register, RP, ORIGIN), Err(Reason::KeyUnknown));
        assert_eq!(
            verify_mandate(&sealed_by(1, &m), register, RP, "https://evil.example"),
            Err(Reason::SignatureInvalid)
        );
        // A developer's signature beside an owner's does not spoil it.
        let mut both = sealed_by(3, &m);
        both.signatures.push(sealed_by(1, &m).signatures.remove(0));
        assert_eq!(verify_mandate(&both, register, RP, ORIGIN), Ok(m));
    }

    // rule: P2.4.1
    #[test]
    fn a_plain_signature_is_not_a_passkey_seal() {
        let m = mandate();
        let plain = Envelope::sign(&mandate_payload_type(), &m.to_payload().unwrap(), &[&passkey(1)]);
        assert_eq!(verify_mandate(&plain, register, RP, ORIGIN), Err(Reason::EnvelopeMalformed));
        let mut tampered = sealed_by(1, &m);
        let mut other = m.clone();
        other.scope.countries.push("US".into());
        tampered.payload = b64::std_encode(&other.to_payload().unwrap());
        assert_eq!(verify_mandate(&tampered, register, RP, ORIGIN), Err(Reason::SignatureInvalid));
    }

    #[test]
    fn payload_type_and_version_are_checked() {
        let m = mandate();
        let payload = m.to_payload().unwrap();
        let seal_type = payload_type("seal.v2");
        let wrong = seal_with_passkey(&passkey(1), RP, ORIGIN, &seal_type, &payload, 1).unwrap();
        assert_eq!(verify_mandate(&wrong, register, RP, ORIGIN), Err(Reason::PayloadTypeMismatch));
        let v2 = seal_with_passkey(&passkey(1), RP, ORIGIN, &payload_type("mandate.v2"), &payload, 1).unwrap();
        assert_eq!(verify_mandate(&v2, register, RP, ORIGIN), Err(Reason::VersionUnknown));
        let text = String::from_utf8(payload).unwrap().replace("\"v\":1", "\"v\":2");
        assert_eq!(read_mandate(text.as_bytes()), Err(Reason::VersionUnknown));
        // A sealed but invalid payload is refused after the signature holds.
        let mut long = m;
        long.valid_until = "2027-06-01T00:00:00Z".into();
        let bytes = to_signed_bytes(&long).unwrap();
        let sig = assert(&passkey(1), RP, ORIGIN, &mandate_payload_type(), &bytes, 1).unwrap();
        let env =
            Envelope { payload_type: mandate_payload_type(), payload: b64::std_encode(&bytes), signatures: vec![sig] };
        assert_eq!(verify_mandate(&env, register, RP, ORIGIN), Err(Reason::PayloadMalformed));
    }

    // rule: P2.4.2, P2.4.3
    #[test]
    fn members_are_exact() {
        let payload = mandate().to_payload().unwrap();
        let value: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["business_uuid", "key_id", "mandate_id", "scope", "v", "valid_from", "valid_until"]);
        let scope: Vec<&str> = value["scope"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(scope, ["caps", "countries", "directions", "record_types", "source_ip_allow_list"]);
        assert_eq!(value["scope"]["source_ip_allow_list"], serde_json::Value::Null);
        assert_eq!(read_mandate(&payload), Ok(mandate()));

        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v = value.clone();
            f(&mut v);
            read_mandate(&crate::canonical::canonicalize(&v))
        };
        assert_eq!(edit(&|v| v["extra"] = 1.into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["caps"]["extra"] = 1.into()), Err(Reason::PayloadMalformed));
        assert_eq!(
            edit(&|v| drop(v["scope"].as_object_mut().unwrap().remove("source_ip_allow_list"))),
            Err(Reason::PayloadMalformed)
        );
        assert_eq!(edit(&|v| v["scope"]["caps"]["records_per_hour"] = 0.into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["caps"]["bytes_per_day"] = (-1).into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["caps"]["bytes_per_day"] = 1.5.into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["caps"]["bytes_per_day"] = (1u64 << 60).into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["directions"] = serde_json::json!(["read"])), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["directions"] = serde_json::json!([])), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["countries"] = serde_json::json!(["XX"])), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["countries"] = serde_json::json!(["fr"])), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["countries"] = serde_json::json!(["FR", "FR"])), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["scope"]["record_types"] = serde_json::json!(["ads"])), Err(Reason::PayloadMalformed));
        assert_eq!(
            edit(&|v| v["scope"]["record_types"] = serde_json::json!(["business-files"])),
            Err(Reason::PayloadMalformed)
        );
        assert!(edit(&|v| v["scope"]["record_types"] = serde_json::json!(["business_files", "jobs"])).is_ok());
        assert_eq!(
            edit(&|v| v["scope"]["source_ip_allow_list"] = serde_json::json!([])),
            Err(Reason::PayloadMalformed)
        );
        assert_eq!(
            edit(&|v| v["scope"]["source_ip_allow_list"] = serde_json::json!(["10.0.0.1/24"])),
            Err(Reason::PayloadMalformed)
        );
        assert!(
            edit(&|v| v["scope"]["source_ip_allow_list"] =
                serde_json::json!(["203.0.113.0/24", "2001:db8::/32", "198.51.100.7", "AS64500"]))
            .is_ok()
        );
        assert_eq!(edit(&|v| v["business_uuid"] = "not-a-uuid".into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["key_id"] = "short".into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["mandate_id"] = "".into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["mandate_id"] = "a b".into()), Err(Reason::PayloadMalformed));
        assert_eq!(edit(&|v| v["valid_from"] = "yesterday".into()), Err(Reason::PayloadMalformed));
        // Not canonical: the same members with white space.
        let spaced = String::from_utf8(payload).unwrap().replacen(',', ", ", 1);
        assert_eq!(read_mandate(spaced.as_bytes()), Err(Reason::PayloadMalformed));
    }

    // rule: P2.4.4, P8.8, P3.36
    #[test]
    fn validity_is_at_most_92_days() {
        let with_until = |until: UnixMs| Mandate { valid_until: until.to_rfc3339_millis(), ..mandate() };
        assert_eq!(with_until(at(92 * DAY)).validate(), Ok(()));
        assert_eq!(with_until(at(92 * DAY + 1)).validate(), Err(Reason::PayloadMalformed));
        assert_eq!(with_until(at(1)).validate(), Ok(()));
        assert_eq!(with_until(at(0)).validate(), Err(Reason::PayloadMalformed));
        assert_eq!(with_until(at(-DAY)).validate(), Err(Reason::PayloadMalformed));
        // Offsets are allowed; the span is measured between instants.
        let offset = Mandate { valid_until: "2027-02-01T01:00:00+01:00".into(), ..mandate() };
        assert_eq!(offset.validate(), Ok(()));
    }

    // rule: P3.37, P3.36
    #[test]
    fn judged_out_of_scope_outside_validity() {
        let m = mandate();
        let until = m.valid_until_ms().unwrap();
        assert_eq!(m.judge(at(0), "products", &["FR"]), Ok(()));
        assert_eq!(m.judge(at(-1), "products", &["FR"]), Err(Reason::OutOfScope));
        assert_eq!(m.judge(until, "products", &["FR"]), Ok(()));
        assert_eq!(m.judge(until.plus(1), "products", &["FR"]), Err(Reason::OutOfScope));
        assert_eq!(m.judge(until.plus(MINUTE), "products", &["FR"]), Err(Reason::OutOfScope));
        let broken = Mandate { valid_until: "soon".into(), ..mandate() };
        assert_eq!(broken.judge(at(SECOND), "products", &["FR"]), Err(Reason::OutOfScope));
    }

    // rule: P2.5.26, P2.4.3
    #[test]
    fn judged_out_of_scope_outside_types_and_countries() {
        let m = mandate();
        let now = at(DAY);
        assert_eq!(m.judge(now, "products", &["FR", "DE"]), Ok(()));
        assert_eq!(m.judge::<&str>(now, "products", &[]), Ok(()));
        assert_eq!(m.judge(now, "products", &["FR", "US"]), Err(Reason::OutOfScope));
        assert_eq!(m.judge(now, "jobs", &["FR"]), Err(Reason::OutOfScope));
        assert_eq!(m.judge(now, "products", &[String::from("DE")]), Ok(()));
    }

    // rule: P4.1.57, P2.4.3
    #[test]
    fn allow_list_cidr_ip_and_asn() {
        let list =
            Some(vec!["203.0.113.0/24".to_string(), "2001:db8::/32".into(), "198.51.100.7".into(), "AS64500".into()]);
        assert!(allow_list_permits(&list, ip("203.0.113.0"), None));
        assert!(allow_list_permits(&list, ip("203.0.113.255"), None));
        assert!(!allow_list_permits(&list, ip("203.0.114.0"), None));
        assert!(!allow_list_permits(&list, ip("203.0.112.255"), None));
        assert!(allow_list_permits(&list, ip("198.51.100.7"), None));
        assert!(!allow_list_permits(&list, ip("198.51.100.8"), None));
        assert!(allow_list_permits(&list, ip("2001:db8:ffff::1"), None));
        assert!(!allow_list_permits(&list, ip("2001:db9::1"), None));
        assert!(allow_list_permits(&list, ip("192.0.2.1"), Some(64500)));
        assert!(!allow_list_permits(&list, ip("192.0.2.1"), Some(64501)));
        assert!(!allow_list_permits(&list, ip("192.0.2.1"), None));
        // A dual-stack socket reports IPv4 clients as IPv4-mapped addresses.
        assert!(allow_list_permits(&list, ip("::ffff:203.0.113.9"), None));
        // Null is everyone; an entry that does not parse allows no one.
        assert!(allow_list_permits(&None, ip("192.0.2.1"), None));
        assert!(!allow_list_permits(&Some(vec!["garbage".into()]), ip("192.0.2.1"), None));
        let m = Mandate { scope: Scope { source_ip_allow_list: list, ..mandate().scope }, ..mandate() };
        assert!(m.permits_source(ip("203.0.113.1"), None));
        assert!(!m.permits_source(ip("192.0.2.1"), None));
    }

    #[test]
    fn prefix_lengths_and_edges() {
        let p = parse_allow_entry;
        assert_eq!(p("0.0.0.0/0"), Some(AllowEntry::V4 { network: 0, prefix: 0 }));
        assert_eq!(p("::/0"), Some(AllowEntry::V6 { network: 0, prefix: 0 }));
        assert!(p("10.0.0.1/32").is_some());
        assert!(p("10.0.0.0/33").is_none());
        assert!(p("2001:db8::1/128").is_some());
        assert!(p("2001:db8::/129").is_none());
        assert!(p("10.0.0.0/08").is_none());
        assert!(p("10.0.0.0/").is_none());
        assert!(p("10.0.0.0/+8").is_none());
        assert!(p("10.0.0.0/8/8").is_none());
        assert!(p("10.1.0.0/8").is_none(), "host bits set");
        assert!(p("2001:db8::1/32").is_none(), "host bits set");
        assert!(p("::ffff:10.0.0.0/104").is_none(), "IPv4-mapped");
        assert!(p("010.0.0.1").is_none());
        assert!(p("AS0").is_none());
        assert!(p("AS4294967295").is_some());
        assert!(p("AS4294967296").is_none());
        assert!(p("AS064500").is_none());
        assert!(p("as64500").is_none());
        assert!(p("AS").is_none());
        assert!(p("").is_none());
        let all4 = Some(vec!["0.0.0.0/0".to_string()]);
        assert!(allow_list_permits(&all4, IpAddr::V4(Ipv4Addr::BROADCAST), None));
        assert!(!allow_list_permits(&all4, IpAddr::V6(Ipv6Addr::LOCALHOST), None));
        let all6 = Some(vec!["::/0".to_string()]);
        assert!(allow_list_permits(&all6, IpAddr::V6(Ipv6Addr::LOCALHOST), None));
        let slash31 = Some(vec!["192.0.2.2/31".to_string()]);
        assert!(allow_list_permits(&slash31, ip("192.0.2.3"), None));
        assert!(!allow_list_permits(&slash31, ip("192.0.2.4"), None));
        assert!(!allow_list_permits(&slash31, ip("192.0.2.1"), None));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn read_mandate_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = read_mandate(&bytes);
        }

        #[test]
        fn allow_entries_never_panic(text in ".{0,60}", a in any::<u32>(), b in any::<u128>(), asn in any::<Option<u32>>()) {
            if let Some(entry) = parse_allow_entry(&text) {
                let _ = entry.permits(IpAddr::V4(a.into()), asn);
            }
            let list = Some(vec![text]);
            let _ = allow_list_permits(&list, IpAddr::V4(a.into()), asn);
            let _ = allow_list_permits(&list, IpAddr::V6(b.into()), asn);
        }

        #[test]
        fn cidr_matching_agrees_with_a_bit_by_bit_model(net in any::<u32>(), prefix in 0u8..=32, probe in any::<u32>()) {
            let network = net & mask4(prefix);
            let entry = format!("{}/{prefix}", Ipv4Addr::from(network));
            let expected = (0..u32::from(prefix)).all(|i| (network >> (31 - i)) & 1 == (probe >> (31 - i)) & 1);
            prop_assert_eq!(allow_list_permits(&Some(vec![entry]), IpAddr::V4(probe.into()), None), expected);
        }

        #[test]
        fn verify_mandate_never_panics(payload in proptest::collection::vec(any::<u8>(), 0..200), kind in ".{0,40}") {
            let envelope = seal_with_passkey(&passkey(1), RP, ORIGIN, &kind, &payload, 0).unwrap();
            let _ = verify_mandate(&envelope, register, RP, ORIGIN);
        }
    }
}
