//! Domain assurance for a business file's authorised endpoints (retrieval
//! 2.8 `endpoints`; the verify page's `endpoints.domains`). Each domain the
//! file lists stands behind the business with a DNS TXT record,
//! `_svc-assurance.<domain>` holding `svc-business=<business uuid>`, looked
//! at again on a schedule. A confirmation stands 30 days. The endpoints are
//! `suspended` (assurance lost) while any domain answers without naming the
//! business, or has gone unconfirmed past its 30 days; a lookup that gets no
//! answer changes nothing by itself. The record name and value are ours:
//! the spec shows the states, not the check.

use serde::{Deserialize, Serialize};

use crate::time::{DAY, UnixMs};

/// The label under a domain that holds its assurance record.
pub const RECORD_LABEL: &str = "_svc-assurance";
/// How long a confirmation stands without another.
pub const VALID_MS: i64 = 30 * DAY;

/// The name looked up for `domain` (fully qualified).
pub fn query_name(domain: &str) -> String {
    format!("{RECORD_LABEL}.{}.", domain.trim_end_matches('.'))
}

/// The TXT value by which a domain names its business.
pub fn expected_value(business_uuid: &str) -> String {
    format!("svc-business={business_uuid}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainState {
    /// Never answered yet.
    Unchecked,
    /// Its record names the business, within the last 30 days.
    Confirmed,
    /// It answered, and its record does not name the business (or it has none).
    Refused,
    /// Its last confirmation is more than 30 days old.
    Expired,
}

impl DomainState {
    pub fn as_str(self) -> &'static str {
        match self {
            DomainState::Unchecked => "unchecked",
            DomainState::Confirmed => "confirmed",
            DomainState::Refused => "refused",
            DomainState::Expired => "expired",
        }
    }
}

/// What is known of one domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainAssurance {
    pub domain: String,
    pub state: DomainState,
    pub last_confirmed_at: Option<UnixMs>,
    pub expires_on: Option<UnixMs>,
}

impl DomainAssurance {
    pub fn unchecked(domain: &str) -> DomainAssurance {
        DomainAssurance {
            domain: domain.to_owned(),
            state: DomainState::Unchecked,
            last_confirmed_at: None,
            expires_on: None,
        }
    }
}

/// What a lookup of a domain's assurance record gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The TXT values found.
    Txt(Vec<String>),
    /// The name does not exist, or holds no TXT record.
    NoRecord,
    /// No answer: a timeout, a refusal, a server failure.
    Unanswered,
}

/// The domain's state after `lookup`, from what was known before.
pub fn judge(
    previous: Option<&DomainAssurance>,
    domain: &str,
    lookup: &Lookup,
    business_uuid: &str,
    now: UnixMs,
) -> DomainAssurance {
    let mut next = previous.cloned().unwrap_or_else(|| DomainAssurance::unchecked(domain));
    let wanted = expected_value(business_uuid);
    match lookup {
        Lookup::Txt(values) if values.iter().any(|v| v.trim() == wanted) => {
            next.state = DomainState::Confirmed;
            next.last_confirmed_at = Some(now);
            next.expires_on = Some(now.plus(VALID_MS));
        }
        Lookup::Txt(_) | Lookup::NoRecord => next.state = DomainState::Refused,
        Lookup::Unanswered => {}
    }
    if next.state == DomainState::Confirmed && next.expires_on.is_some_and(|until| until <= now) {
        next.state = DomainState::Expired;
    }
    next
}

/// Whether the endpoints stand: no domain refused or expired.
pub fn endpoints_live(domains: &[DomainAssurance]) -> bool {
    domains.iter().all(|d| matches!(d.state, DomainState::Confirmed | DomainState::Unchecked))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";
    const NOW: UnixMs = UnixMs(1_795_341_600_000);

    #[test]
    fn a_domain_naming_the_business_is_confirmed_for_thirty_days() {
        let found = Lookup::Txt(vec!["v=spf1 -all".into(), expected_value(UUID)]);
        let confirmed = judge(None, "lumio.example", &found, UUID, NOW);
        assert_eq!(confirmed.state, DomainState::Confirmed);
        assert_eq!(confirmed.expires_on, Some(NOW.plus(VALID_MS)));
        assert_eq!(query_name("lumio.example"), "_svc-assurance.lumio.example.");
        // Unanswered since: it stands until its 30 days end, then expires.
        let later = judge(Some(&confirmed), "lumio.example", &Lookup::Unanswered, UUID, NOW.plus(VALID_MS - 1));
        assert_eq!(later.state, DomainState::Confirmed);
        let expired = judge(Some(&confirmed), "lumio.example", &Lookup::Unanswered, UUID, NOW.plus(VALID_MS));
        assert_eq!(expired.state, DomainState::Expired);
        assert!(!endpoints_live(std::slice::from_ref(&expired)));
        // A new confirmation restores it.
        let again = judge(Some(&expired), "lumio.example", &found, UUID, NOW.plus(VALID_MS + 1));
        assert_eq!(again.state, DomainState::Confirmed);
        assert!(endpoints_live(&[again]));
    }

    #[test]
    fn a_domain_that_answers_without_naming_the_business_is_refused() {
        let other = expected_value("00000000-0000-4000-8000-000000000000");
        for lookup in [Lookup::Txt(vec![other]), Lookup::NoRecord, Lookup::Txt(vec![])] {
            let judged = judge(None, "lumio.example", &lookup, UUID, NOW);
            assert_eq!(judged.state, DomainState::Refused, "{lookup:?}");
            assert!(!endpoints_live(&[judged]));
        }
        // No answer at all changes nothing, and a domain never answered stands.
        let unanswered = judge(None, "lumio.example", &Lookup::Unanswered, UUID, NOW);
        assert_eq!(unanswered.state, DomainState::Unchecked);
        assert!(endpoints_live(&[unanswered]));
    }
}
