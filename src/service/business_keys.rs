//! A business's keys as the operator and the portal change them: adding a
//! key the business holds (with its custody statement and log leaf), and
//! revoking one (with its log leaf), each into a `Change` the caller applies.

use svc_core::time::UnixMs;

use crate::region::Region;
use crate::replication::Change;
use crate::store::model::*;
use crate::store::{cf, keys};

/// Adds a business key the business holds itself, in `change`: the key
/// (refused if its id is taken, checked by the one writer as it writes),
/// its `self` custody statement and its log leaf. The operator's key
/// registration and a person's new passkey in the portal both add keys so.
pub fn add_key(state: &Region, change: &mut Change, record: &BusinessKey, now: UnixMs) -> CustodyRecord {
    let family = if record.kind == KeyKind::Passkey { cf::PASSKEYS } else { cf::INTEGRATION_KEYS };
    change.require_absent(cf::INTEGRATION_KEYS, record.key_id.as_bytes());
    change.require_absent(cf::PASSKEYS, record.key_id.as_bytes());
    change.put(family, record.key_id.as_bytes(), record);
    let custody = custody_statement(state, record, svc_core::custody::Custody::OwnKey, now, now);
    change.put(cf::CUSTODY, &keys::custody(&custody.business_uuid, now, &custody.statement_id), &custody);
    let added = svc_core::tlog::key_added_leaf(
        &record.business_uuid,
        &record.key_id,
        record.purpose.as_str(),
        record.valid_from,
    );
    crate::transparency::queue(change, LeafKind::KeyAdded, added, now);
    custody
}

/// Revokes a business key from `effective_from` in `change`, with its log
/// leaf; `compromised_at` invalidates what it sealed after that moment.
pub fn revoke_key(
    change: &mut Change,
    mut key: BusinessKey,
    effective_from: UnixMs,
    compromised_at: Option<UnixMs>,
    now: UnixMs,
) -> BusinessKey {
    key.revocation_effective_from = Some(effective_from);
    key.compromised_at = compromised_at;
    let family = if key.kind == KeyKind::Passkey { cf::PASSKEYS } else { cf::INTEGRATION_KEYS };
    change.put(family, key.key_id.as_bytes(), &key);
    let revoked = svc_core::tlog::key_revoked_leaf(&key.business_uuid, &key.key_id, effective_from, compromised_at);
    crate::transparency::queue(change, LeafKind::KeyRevoked, revoked, now);
    key
}

/// A dual-signed key-custody statement for `key`.
pub fn custody_statement(
    state: &Region,
    key: &BusinessKey,
    custody: svc_core::custody::Custody,
    issued_at: UnixMs,
    effective_from: UnixMs,
) -> CustodyRecord {
    let issued = svc_core::custody::issue(
        &key.business_uuid,
        &key.key_id,
        custody,
        issued_at,
        effective_from,
        &state.keys.issuer(),
    );
    CustodyRecord {
        business_uuid: key.business_uuid.clone(),
        key_id: key.key_id.clone(),
        custody,
        effective_from,
        issued_at,
        statement_id: issued.statement_id,
        envelope: issued.envelope.to_json(),
    }
}
