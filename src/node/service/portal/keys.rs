//! Integration keys and their mandates, as people manage them in the
//! portal: owners, admins and developers register and revoke integration
//! keys; owners and admins seal mandates with their passkey (a developer
//! cannot) and revoke them.

use svc_core::keys::Jwk;
use svc_core::problem::Code;
use svc_core::publish::mandate::{Caps, DIRECTION_PUBLISH, MAX_VALIDITY_MS, Mandate, Scope, mandate_payload_type};
use svc_core::time::{DAY, UnixMs};

use super::{SEALERS, Signed, invalid};
use crate::region::parts::{HasClock, HasConfig, HasHome, HasKeys, HasRegistry};
use crate::service::business_keys::{self, NewKey, Registered};
use crate::service::{Error, Result};
use svc_store::model::*;

/// Who may register and revoke integration keys.
pub const KEY_KEEPERS: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin, PasskeyRole::Developer];

/// An integration key with its mandates, newest first.
pub struct KeyView {
    pub key: BusinessKey,
    pub mandates: Vec<MandateRecord>,
}

/// The business's integration keys and their mandates.
pub fn list(state: &impl HasRegistry, signed: &Signed) -> Result<Vec<KeyView>> {
    let mut out = Vec::new();
    for key in state.registry().business_keys(&signed.account_uuid)? {
        if key.purpose != KeyPurpose::Integration {
            continue;
        }
        let mut mandates = state.registry().mandates_of_key(&key.key_id)?;
        mandates.sort_by_key(|m| std::cmp::Reverse(m.valid_from));
        out.push(KeyView { key, mandates });
    }
    out.sort_by_key(|view| std::cmp::Reverse(view.key.registered_at));
    Ok(out)
}

/// Registers an integration key from its public JWK (Ed25519 or P-256).
pub async fn add<R>(state: &R, signed: &Signed, jwk_text: &str) -> Result<Registered>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasHome,
{
    signed.require(KEY_KEEPERS, "registering an integration key")?;
    let jwk: Jwk = serde_json::from_str(jwk_text.trim())
        .map_err(|e| invalid(format!("the public key is a JWK (JSON with kty, crv, x): {e}")))?;
    let new =
        NewKey { jwk, purpose: "integration".into(), role: None, valid_from: state.clock().now(), valid_until: None };
    business_keys::register(state, &signed.account_uuid, new).await
}

/// The business's integration key `key_id`, as stored.
fn own_key(state: &impl HasRegistry, signed: &Signed, key_id: &str) -> Result<BusinessKey> {
    state
        .registry()
        .integration_key(key_id)?
        .filter(|k| k.business_uuid == signed.account_uuid)
        .ok_or_else(|| Error::new(Code::NotFound))
}

/// Revokes an integration key from now; what it sealed before stands.
pub async fn revoke<R>(state: &R, signed: &Signed, key_id: &str) -> Result<()>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(KEY_KEEPERS, "revoking an integration key")?;
    let key = own_key(state, signed, key_id)?;
    if key.revocation_effective_from.is_some() {
        return Ok(());
    }
    let now = state.clock().now();
    let mut change = crate::replication::Change::new();
    business_keys::revoke_key(&mut change, key, now, None, now);
    super::apply(state, change).await
}

/// What a person asks a mandate to allow.
pub struct MandateForm {
    pub key_id: String,
    pub record_types: Vec<String>,
    pub countries: Vec<String>,
    pub records_per_hour: u64,
    pub bytes_per_day: u64,
    pub source_ip_allow_list: Option<Vec<String>>,
    /// Days from now, 1 to 92.
    pub days: u64,
}

/// The mandate payload a person is about to seal, valid from now: its
/// form checked as the registration will check it.
pub fn mandate(state: &(impl HasRegistry + HasClock), signed: &Signed, form: MandateForm) -> Result<(Vec<u8>, String)> {
    signed.require(SEALERS, "sealing a mandate")?;
    own_key(state, signed, &form.key_id)?;
    if !(1..=(MAX_VALIDITY_MS / DAY) as u64).contains(&form.days) {
        return Err(invalid("a mandate is valid 1 to 92 days"));
    }
    let now = state.clock().now();
    let until = UnixMs(now.0 + form.days as i64 * DAY);
    let mandate = Mandate {
        v: 1,
        mandate_id: format!("mdt_{}", hex::encode(svc_clock::random::<12>())),
        business_uuid: signed.account_uuid.clone(),
        key_id: form.key_id,
        scope: Scope {
            record_types: form.record_types,
            countries: form.countries.into_iter().map(|c| c.trim().to_uppercase()).collect(),
            directions: vec![DIRECTION_PUBLISH.into()],
            caps: Caps { records_per_hour: form.records_per_hour, bytes_per_day: form.bytes_per_day },
            source_ip_allow_list: form.source_ip_allow_list,
        },
        valid_from: now.to_rfc3339_secs(),
        valid_until: until.to_rfc3339_secs(),
    };
    let payload = mandate.to_payload().map_err(|r| {
        invalid(format!(
            "the mandate does not hold ({r}): at least one record type and country (ISO codes), caps above \
             zero, and allow-list entries that are addresses, CIDR blocks or AS numbers"
        ))
    })?;
    Ok((payload, mandate_payload_type()))
}

/// Revokes one of the business's mandates at once.
pub async fn revoke_mandate<R>(state: &R, signed: &Signed, key_id: &str, mandate_id: &str) -> Result<UnixMs>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(SEALERS, "revoking a mandate")?;
    business_keys::revoke_mandate(state, key_id, mandate_id, Some(&signed.account_uuid)).await
}
