//! The render and click tokens (R2.8.12, R3.3): single-use envelopes the
//! serving region signs, `render.v1` with each pooled ad and `click.v1`
//! with an accepted render. Each names the company and key it was issued
//! to and the region that keeps its state, so a confirmation is routed
//! there and judged against its own record.

use serde::{Deserialize, Serialize};

use super::{Basis, Format, Placement};
use crate::dsse::{Envelope, payload_type};
use crate::keys::{SigningKey, VerifyingKey};
use crate::reason::Reason;
use crate::time::UnixMs;

pub const RENDER_V1: &str = "render.v1";
pub const CLICK_V1: &str = "click.v1";

/// What a pooled ad's render token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderToken {
    pub v: u64,
    /// `rt_` and 24 hex digits, unique.
    pub token_id: String,
    /// The pool's.
    pub retrieval_id: String,
    /// The region that served the pool and keeps the token's state.
    pub region: String,
    pub company_uuid: String,
    pub key_id: String,
    pub ad_id: String,
    pub campaign_id: String,
    pub business_uuid: String,
    /// The formats offered (a confirmation names one of them).
    pub formats: Vec<Format>,
    pub basis: Basis,
    /// The serving region's reserve of the campaign's money for this pool.
    pub reserve_id: u64,
    /// RFC 3339, milliseconds: when the pool was served.
    pub issued_at: String,
    /// The pool's country, for the business's analytics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
}

/// What an accepted render's click token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClickToken {
    pub v: u64,
    /// `ct_` and 24 hex digits, unique.
    pub token_id: String,
    /// The render token, or for a sponsored or promoted row the search's
    /// `retrieval_id`, that was confirmed.
    pub rendered: String,
    pub region: String,
    pub company_uuid: String,
    pub key_id: String,
    /// The ad id, or the row's record id.
    pub item_id: String,
    pub campaign_id: String,
    pub placement: Placement,
    pub basis: Basis,
    /// RFC 3339, milliseconds: when the render was accepted.
    pub rendered_at: String,
    /// The digest of the conversation the render was confirmed in
    /// ([`super::conversation`]): a click names the same `session_ref`.
    pub conversation: String,
    /// The pool's or search's country, for the business's analytics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
}

impl ClickToken {
    /// The last moment a click on it is accepted (R3.9, R3.10).
    pub fn valid_until(&self) -> Option<UnixMs> {
        UnixMs::parse_rfc3339(&self.rendered_at).map(|at| at.plus(super::CLICK_VALID_MS))
    }
}

/// Signs a token payload: canonical JSON in a DSSE envelope.
pub fn sign<T: Serialize>(name: &str, token: &T, key: &SigningKey) -> Envelope {
    // Strings, small integers and enums only: canonical form never fails.
    let bytes = crate::canonical::to_signed_bytes(token).unwrap_or_default();
    Envelope::sign(&payload_type(name), &bytes, &[key])
}

/// The envelope's key id, to look the signing key up by.
pub fn signer(envelope: &Envelope) -> Option<&str> {
    envelope.signatures.first().map(|s| s.keyid.as_str())
}

/// Opens a token `name` signed by `key`: another type, a bad signature or
/// an unknown version is `Err`.
pub fn open<T: for<'de> Deserialize<'de>>(envelope: &Envelope, name: &str, key: &VerifyingKey) -> Result<T, Reason> {
    let payload = envelope.verify(&payload_type(name), key)?;
    let value: serde_json::Value = serde_json::from_slice(&payload).map_err(|_| Reason::PayloadMalformed)?;
    if value.get("v").and_then(serde_json::Value::as_u64) != Some(1) {
        return Err(Reason::VersionUnknown);
    }
    serde_json::from_value(value).map_err(|_| Reason::PayloadMalformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;

    fn render() -> RenderToken {
        RenderToken {
            v: 1,
            token_id: "rt_000000000000000000000001".into(),
            retrieval_id: "r_pool".into(),
            region: "eu".into(),
            company_uuid: "c".into(),
            key_id: "k".into(),
            ad_id: "ad_x".into(),
            campaign_id: "cmp_1".into(),
            business_uuid: "b".into(),
            formats: vec![Format::Compact],
            basis: Basis::Cpm,
            reserve_id: 7,
            issued_at: "2026-11-27T10:00:00.000Z".into(),
            country: Some("FR".into()),
        }
    }

    // rule: R2.8.12
    #[test]
    fn a_token_opens_only_with_its_type_its_key_and_its_version() {
        let key = SigningKey::from_seed(Alg::Ed25519, &[1; 32]).unwrap();
        let other = SigningKey::from_seed(Alg::Ed25519, &[2; 32]).unwrap();
        let envelope = sign(RENDER_V1, &render(), &key);
        assert_eq!(envelope.payload_type, "application/vnd.service.render.v1+json");
        assert_eq!(signer(&envelope), Some(key.verifying_key().thumbprint().as_str()));
        assert_eq!(open::<RenderToken>(&envelope, RENDER_V1, &key.verifying_key()), Ok(render()));
        assert!(open::<RenderToken>(&envelope, RENDER_V1, &other.verifying_key()).is_err(), "forged");
        assert!(open::<ClickToken>(&envelope, CLICK_V1, &key.verifying_key()).is_err(), "another type");
        let later = sign(RENDER_V1, &RenderToken { v: 2, ..render() }, &key);
        assert_eq!(open::<RenderToken>(&later, RENDER_V1, &key.verifying_key()), Err(Reason::VersionUnknown));
    }
}
