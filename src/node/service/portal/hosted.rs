//! Hosted signing (publishing section 1, the third way to seal): an owner
//! lets the service sign for the business with a key it holds, and from
//! then on a person confirms each publication on its review page instead of
//! signing it with a passkey. Switching custody either way is itself signed
//! by an owner's passkey (`custody-request.v1`), issues a `hosted` custody
//! statement for the new key (logged as a `key_custody` leaf beside its
//! `key_added` one), and on the way back revokes the key (`key_revoked`)
//! and destroys its secret. The secret lives in a home-only column family.

use svc_core::custody::{CUSTODY_REQUEST_V1, Custody, CustodyRequest};
use svc_core::dsse::{self, Envelope};
use svc_core::keys::{Alg, SigningKey};
use svc_core::problem::Code;

use super::{Signed, apply};
use crate::hosted_seeds::{seed_purpose, stored_seed};
use crate::region::parts::{HasClock, HasConfig, HasHome, HasKeys, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::business_keys::{add_key, passkey_document, revoke_key, sealing_key};
use crate::service::error::invalid;
use crate::service::{Error, Result};
use svc_store::cf;
use svc_store::model::*;

/// Who may switch custody: it decides who signs for the whole business.
pub const SWITCHERS: &[PasskeyRole] = &[PasskeyRole::Owner];

/// The key the service holds for the business, while hosted signing is on.
pub fn held(state: &impl HasStore, business_uuid: &str) -> Result<Option<HostedKey>> {
    Ok(state.store().get::<HostedKey>(cf::HOSTED_KEYS, business_uuid.as_bytes())?)
}

/// The document an owner's passkey signs to turn hosted signing on
/// (`Custody::Hosted`) or off (`Custody::OwnKey`), and its payload type.
pub fn request(state: &(impl HasStore + HasClock), signed: &Signed, custody: Custody) -> Result<(Vec<u8>, String)> {
    signed.require(SWITCHERS, "switching who holds the sealing key")?;
    let on = held(state, &signed.account_uuid)?.is_some();
    match (custody, on) {
        (Custody::Hosted, true) => return Err(invalid("hosted signing is already on")),
        (Custody::OwnKey, false) => return Err(invalid("hosted signing is already off")),
        _ => {}
    }
    let bytes = CustodyRequest::new(&signed.account_uuid, custody, state.clock().now()).to_bytes();
    Ok((bytes, dsse::payload_type(CUSTODY_REQUEST_V1)))
}

/// Carries out a custody request an owner's passkey signed: on, a fresh
/// Ed25519 key with its `hosted` statement; off, the key revoked now and
/// its secret deleted. Answers whether hosted signing is now on.
pub async fn switch<R>(state: &R, business_uuid: &str, envelope: &Envelope) -> Result<bool>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome,
{
    let now = state.clock().now();
    let payload = passkey_document(state, business_uuid, envelope, CUSTODY_REQUEST_V1, SWITCHERS, |bytes| {
        CustodyRequest::parse(bytes).map(|(_, at)| at)
    })?;
    let (request, _) = CustodyRequest::parse(&payload).ok_or_else(|| Error::internal("custody request"))?;
    if request.business_uuid != business_uuid {
        return Err(Error::detail(Code::SealInvalid, "custody-request.v1 refused: it names another business"));
    }
    let current = held(state, business_uuid)?;
    let mut change = Change::new();
    match (request.custody, current) {
        (Custody::Hosted, None) => {
            let seed = zeroize::Zeroizing::new(svc_clock::random::<32>());
            let signing = SigningKey::from_seed(Alg::Ed25519, &seed).map_err(Error::internal)?;
            let public = signing.verifying_key();
            let key = sealing_key(state, business_uuid, &public, None, now)?;
            add_key(state, &mut change, &key, Custody::Hosted, now);
            let seed = stored_seed(state.keys().kek(), business_uuid, seed.as_slice());
            let hosted = HostedKey { key_id: key.key_id, seed, consent: envelope.to_json(), enabled_at: now };
            change.require_absent(cf::HOSTED_KEYS, business_uuid.as_bytes());
            change.put(cf::HOSTED_KEYS, business_uuid.as_bytes(), &hosted);
        }
        (Custody::OwnKey, Some(hosted)) => {
            let key = state.registry().passkey(&hosted.key_id)?.ok_or_else(|| Error::internal("hosted key"))?;
            revoke_key(&mut change, key, now, None, now);
            change.require_unchanged(cf::HOSTED_KEYS, business_uuid.as_bytes(), &hosted);
            change.delete(cf::HOSTED_KEYS, business_uuid.as_bytes());
        }
        (Custody::Hosted, Some(_)) => return Err(invalid("hosted signing is already on")),
        (Custody::OwnKey, None) => return Err(invalid("hosted signing is already off")),
    }
    apply(state, change).await?;
    if request.custody == Custody::OwnKey {
        // The deleted seed leaves the store's files too, as a deleted
        // record's bytes do.
        let key = business_uuid.as_bytes().to_vec();
        tokio::task::block_in_place(|| state.store().purge_replaced(&[(cf::HOSTED_KEYS.name(), key.clone(), key)]))?;
    }
    Ok(request.custody == Custody::Hosted)
}

/// The seed a stored one holds, cleared from memory when dropped.
fn open_seed(state: &impl HasKeys, business_uuid: &str, stored: &[u8]) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    if stored.len() == 32 {
        return Ok(zeroize::Zeroizing::new(stored.to_vec()));
    }
    let kek = state
        .keys()
        .kek()
        .ok_or_else(|| Error::internal("a hosted seed is wrapped and no key-encryption key was given"))?;
    kek.unwrap(&seed_purpose(business_uuid), stored).ok_or_else(|| Error::internal("a hosted seed does not unwrap"))
}

/// Signs a prepared seal payload with the business's hosted key, naming
/// that key: what a person's confirmation publishes.
pub fn sign(
    state: &(impl HasStore + HasKeys),
    business_uuid: &str,
    payload_type: &str,
    seal_payload: &[u8],
) -> Result<Envelope> {
    let hosted = held(state, business_uuid)?.ok_or_else(|| invalid("hosted signing is off for this business"))?;
    let mut seal: svc_core::seal::SealV2 = serde_json::from_slice(seal_payload).map_err(Error::internal)?;
    seal.key_id = hosted.key_id;
    let payload = svc_core::canonical::to_signed_bytes(&seal).map_err(Error::internal)?;
    let seed = open_seed(state, business_uuid, &hosted.seed)?;
    let seed: &[u8; 32] = seed.as_slice().try_into().map_err(|_| Error::internal("hosted key seed"))?;
    let key = SigningKey::from_seed(Alg::Ed25519, seed).map_err(Error::internal)?;
    Ok(Envelope::sign(payload_type, &payload, &[&key]))
}

/// The business's key-custody statements, newest issued first.
pub fn statements(state: &impl HasRegistry, signed: &Signed) -> Result<Vec<CustodyRecord>> {
    let mut all = state.registry().custody_statements(&signed.account_uuid)?;
    all.reverse();
    Ok(all)
}
