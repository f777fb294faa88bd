//! Releasing a held push (publishing 3: a price-shock hold is "held for an
//! owner or admin"): a person confirms in the portal with a passkey, sealing
//! a `push-release.v1` document that names the push, its business and the
//! decision. The confirmation is fresh (within five minutes of its
//! reception) so an old one cannot be replayed onto a later hold.

use serde::{Deserialize, Serialize};

use crate::Reason;
use crate::canonical::{canonicalize_text, to_signed_bytes};
use crate::dsse::{Envelope, payload_type};
use crate::ids::{is_batch_id, is_uuid_v4};
use crate::keys::VerifyingKey;
use crate::seal::sealed_at_fresh;
use crate::time::UnixMs;

use super::mandate::sealed_by_owner_or_admin;

pub const PUSH_RELEASE_V1: &str = "push-release.v1";

pub fn release_payload_type() -> String {
    payload_type(PUSH_RELEASE_V1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Publish the held records as they were sealed.
    Publish,
    /// Leave them unpublished; the push ends.
    Discard,
}

/// The payload, version 1, canonical JSON with exactly these members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub v: u64,
    pub push_id: String,
    pub business_uuid: String,
    pub decision: Decision,
    /// RFC 3339 UTC.
    pub confirmed_at: String,
}

impl Release {
    pub fn to_payload(&self) -> Result<Vec<u8>, Reason> {
        to_signed_bytes(self).map_err(|_| Reason::PayloadMalformed)
    }
}

/// Verifies a sealed release: an owner's or admin's passkey, a well-formed
/// canonical payload, confirmed within five minutes of `now`.
pub fn verify_release<F, R>(
    envelope: &Envelope,
    passkey_for: F,
    rp_id: &str,
    origin: &str,
    now: UnixMs,
) -> Result<Release, Reason>
where
    F: Fn(&str) -> Option<(VerifyingKey, R)>,
    R: AsRef<str>,
{
    let payload = sealed_by_owner_or_admin(envelope, "push-release", passkey_for, rp_id, origin)?;
    if canonicalize_text(&payload).map_err(|_| Reason::PayloadMalformed)? != payload {
        return Err(Reason::PayloadMalformed);
    }
    let release: Release = serde_json::from_slice(&payload).map_err(|_| Reason::PayloadMalformed)?;
    let confirmed = UnixMs::parse_rfc3339(&release.confirmed_at).ok_or(Reason::PayloadMalformed)?;
    if release.v != 1 || !is_batch_id(&release.push_id) || !is_uuid_v4(&release.business_uuid) {
        return Err(Reason::PayloadMalformed);
    }
    if !sealed_at_fresh(confirmed, now) {
        return Err(Reason::OutOfScope);
    }
    Ok(release)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Alg, SigningKey};
    use crate::publish::webauthn::seal_with_passkey;

    const RP: &str = "portal.svc.example";
    const ORIGIN: &str = "https://portal.svc.example";

    fn sealed(key: &SigningKey, at: UnixMs) -> Envelope {
        let release = Release {
            v: 1,
            push_id: "bat_0123456789abcdef01234567".into(),
            business_uuid: "0b6f1c1e-8d3a-4c7e-9a3b-2f1d5e6c7a8b".into(),
            decision: Decision::Publish,
            confirmed_at: at.to_rfc3339_millis(),
        };
        seal_with_passkey(key, RP, ORIGIN, &release_payload_type(), &release.to_payload().unwrap(), 1).unwrap()
    }

    #[test]
    fn an_owner_or_admin_confirms_within_five_minutes() {
        let owner = SigningKey::from_seed(Alg::Es256, &[3; 32]).unwrap();
        let now = UnixMs(1_795_341_600_000);
        let envelope = sealed(&owner, now);
        let role = |role: &'static str| {
            let key = owner.verifying_key();
            move |_: &str| Some((key.clone(), role))
        };
        let release = verify_release(&envelope, role("owner"), RP, ORIGIN, now.plus(60_000)).unwrap();
        assert_eq!(release.decision, Decision::Publish);
        assert!(verify_release(&envelope, role("admin"), RP, ORIGIN, now).is_ok());
        assert_eq!(verify_release(&envelope, role("developer"), RP, ORIGIN, now), Err(Reason::OutOfScope));
        assert_eq!(
            verify_release(&envelope, role("owner"), RP, ORIGIN, now.plus(301_000)),
            Err(Reason::OutOfScope),
            "stale"
        );
        assert!(
            verify_release(&envelope, role("owner"), "other.example", ORIGIN, now).is_err(),
            "another relying party"
        );
    }
}
