//! Key-custody statements (publishing 2.6): for each key of a business,
//! whether the business holds it (`self`) or the service holds it for the
//! business (`hosted`). Dual-signed by the issuance key; re-issued, never
//! edited; the statement in force is the latest `effective_from` at or
//! before the instant.

use serde::{Deserialize, Serialize};

use crate::dsse::{DualKey, Envelope, payload_type};
use crate::time::UnixMs;

pub const KEY_CUSTODY_V1: &str = "key-custody.v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Custody {
    Hosted,
    #[serde(rename = "self")]
    OwnKey,
}

impl Custody {
    pub fn as_str(self) -> &'static str {
        match self {
            Custody::Hosted => "hosted",
            Custody::OwnKey => "self",
        }
    }

    pub fn parse(text: &str) -> Option<Custody> {
        match text {
            "hosted" => Some(Custody::Hosted),
            "self" => Some(Custody::OwnKey),
            _ => None,
        }
    }
}

/// The signed payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustodyStatement {
    pub v: u64,
    pub business_uuid: String,
    pub key_id: String,
    pub custody: Custody,
    pub issued_at: String,
    pub effective_from: String,
}

/// A signed statement and its id (`sha256:` of the canonical payload).
pub struct Issued {
    pub statement_id: String,
    pub envelope: Envelope,
}

pub fn issue(
    business_uuid: &str,
    key_id: &str,
    custody: Custody,
    issued_at: UnixMs,
    effective_from: UnixMs,
    issuance: &DualKey,
) -> Issued {
    let payload = CustodyStatement {
        v: 1,
        business_uuid: business_uuid.to_owned(),
        key_id: key_id.to_owned(),
        custody,
        issued_at: issued_at.to_rfc3339_millis(),
        effective_from: effective_from.to_rfc3339_secs(),
    };
    // Strings and a small version only: always canonical.
    let bytes = crate::canonical::to_signed_bytes(&payload).unwrap_or_default();
    Issued {
        statement_id: crate::digest::sha256_prefixed(&bytes),
        envelope: issuance.sign(&payload_type(KEY_CUSTODY_V1), &bytes),
    }
}

/// Of `(effective_from, issued_at)` pairs, the index of the statement in
/// force at `at`: the latest effective at or before it, the later issued on
/// a tie.
pub fn in_force(statements: &[(UnixMs, UnixMs)], at: UnixMs) -> Option<usize> {
    statements.iter().enumerate().filter(|(_, (from, _))| *from <= at).max_by_key(|(_, pair)| **pair).map(|(i, _)| i)
}

/// What an owner's passkey signs to switch who holds the business's
/// sealing key (hosted signing, publishing section 1): the service's own
/// document, kept beside the key as the owner's consent.
pub const CUSTODY_REQUEST_V1: &str = "custody-request.v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustodyRequest {
    pub v: u64,
    pub business_uuid: String,
    /// `hosted`: the service signs each save a person confirms; `self`:
    /// the hosted key is revoked and its secret destroyed.
    pub custody: Custody,
    pub requested_at: String,
}

impl CustodyRequest {
    pub fn new(business_uuid: &str, custody: Custody, requested_at: UnixMs) -> Self {
        CustodyRequest {
            v: 1,
            business_uuid: business_uuid.into(),
            custody,
            requested_at: requested_at.to_rfc3339_secs(),
        }
    }

    /// The canonical bytes the passkey signs.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Strings and a small version only: always canonical.
        crate::canonical::to_signed_bytes(self).unwrap_or_default()
    }

    /// Reads a signed request: version 1, with a valid instant.
    pub fn parse(bytes: &[u8]) -> Option<(Self, UnixMs)> {
        let request: CustodyRequest = serde_json::from_slice(bytes).ok()?;
        let at = UnixMs::parse_rfc3339(&request.requested_at)?;
        (request.v == 1).then_some((request, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custody_request_reads_back_and_refuses_another_version() {
        let t = UnixMs(1_795_341_600_000);
        let bytes = CustodyRequest::new("b", Custody::Hosted, t).to_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"business_uuid":"b","custody":"hosted","requested_at":"2026-11-22T10:00:00Z","v":1}"#
        );
        assert_eq!(CustodyRequest::parse(&bytes).map(|(r, at)| (r.custody, at)), Some((Custody::Hosted, t)));
        let other = String::from_utf8(bytes).unwrap().replace("\"v\":1", "\"v\":2");
        assert!(CustodyRequest::parse(other.as_bytes()).is_none());
    }

    // rule: P2.6.24, P2.6.25, P2.6.26, P2.6.29
    #[test]
    fn a_statement_is_dual_signed_and_the_latest_effective_one_is_in_force() {
        let issuance = DualKey::from_seeds(&[1; 32], &[2; 32]).unwrap();
        let t = UnixMs(1_795_341_600_000);
        let issued = issue("b", "k", Custody::OwnKey, t, t, &issuance);
        let payload = issuance.verify(&issued.envelope, &payload_type(KEY_CUSTODY_V1)).unwrap();
        let statement: CustodyStatement = serde_json::from_slice(&payload).unwrap();
        assert_eq!(serde_json::to_value(statement.custody).unwrap(), "self");
        assert!(issued.statement_id.starts_with("sha256:"));
        let history = [(t, t), (t.plus(10), t.plus(5)), (t.plus(100), t.plus(6))];
        assert_eq!(in_force(&history, t.minus(1)), None);
        assert_eq!(in_force(&history, t.plus(50)), Some(1));
        assert_eq!(in_force(&history, t.plus(100)), Some(2));
    }
}
