//! A business's keys and mandates as the operator and the portal change
//! them: registering a key (with its custody statement and log leaf),
//! revoking one (with its log leaf), and registering and revoking the
//! mandates a passkey sealed.

use serde_json::{Value, json};
use svc_core::dsse::Envelope;
use svc_core::keys::{Alg, Jwk, VerifyingKey};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use crate::region::parts::{HasAsTable, HasClock, HasConfig, HasHome, HasKeys, HasRegistry};
use crate::replication::Change;
use crate::service::error::invalid;
use crate::service::writes::apply;
use crate::service::{Error, Result};
use svc_store::model::*;
use svc_store::{cf, keys};

/// Adds a business key in `change`: the key (refused if its id is taken,
/// checked by the one writer as it writes), its custody statement and its
/// `key_added` log leaf. The operator's key registration and a person's new
/// passkey add keys the business holds (`self`); hosted signing adds the
/// key the service holds (`hosted`), and logs that custody too.
pub fn add_key(
    state: &impl HasKeys,
    change: &mut Change,
    record: &BusinessKey,
    custody: svc_core::custody::Custody,
    now: UnixMs,
) -> CustodyRecord {
    change.require_absent(cf::INTEGRATION_KEYS, record.key_id.as_bytes());
    change.require_absent(cf::PASSKEYS, record.key_id.as_bytes());
    change.put(crate::registry::family_of(record), record.key_id.as_bytes(), record);
    for (entry, value) in crate::registry::index_entries(record) {
        change.put(cf::KEY_INDEX, &entry, &value);
    }
    let statement = custody_statement(state, record, custody, now, now);
    change.put(cf::CUSTODY, &keys::custody(&statement.business_uuid, now, &statement.statement_id), &statement);
    let added = svc_core::tlog::key_added_leaf(
        &record.business_uuid,
        &record.key_id,
        record.purpose.as_str(),
        record.valid_from,
    );
    crate::transparency::queue(change, LeafKind::KeyAdded, added, now);
    if custody == svc_core::custody::Custody::Hosted {
        log_custody(change, &statement, now);
    }
    statement
}

/// A sealing key of `business_uuid`, valid from now: a person's passkey
/// (with their role), or without a role the Ed25519 key the service holds
/// for the business (hosted signing).
pub fn sealing_key(
    state: &impl HasConfig,
    business_uuid: &str,
    public: &VerifyingKey,
    role: Option<PasskeyRole>,
    now: UnixMs,
) -> Result<BusinessKey> {
    Ok(BusinessKey {
        key_id: public.thumbprint(),
        business_uuid: business_uuid.to_owned(),
        purpose: KeyPurpose::Sealing,
        kind: if role.is_some() { KeyKind::Passkey } else { KeyKind::Ed25519 },
        role,
        jwk: serde_json::to_vec(&public.to_jwk()).map_err(Error::internal)?,
        valid_from: now,
        valid_until: None,
        revocation_effective_from: None,
        compromised_at: None,
        registered_at: now,
        environment: state.config().environment,
        sandbox: None,
    })
}

/// Logs a custody statement that changes who holds a key, so the log shows
/// when a business's keys moved to or from the service.
pub fn log_custody(change: &mut Change, statement: &CustodyRecord, now: UnixMs) {
    let leaf = svc_core::tlog::key_custody_leaf(
        &statement.business_uuid,
        &statement.key_id,
        statement.custody.as_str(),
        statement.effective_from,
        &statement.statement_id,
    );
    crate::transparency::queue(change, LeafKind::KeyCustody, leaf, now);
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
    change.put(crate::registry::family_of(&key), key.key_id.as_bytes(), &key);
    let revoked = svc_core::tlog::key_revoked_leaf(&key.business_uuid, &key.key_id, effective_from, compromised_at);
    crate::transparency::queue(change, LeafKind::KeyRevoked, revoked, now);
    key
}

/// A dual-signed key-custody statement for `key`.
pub fn custody_statement(
    state: &impl HasKeys,
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
        &state.keys().issuer(),
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

/// A key a business registers: integration (Ed25519 or P-256, no role) or
/// sealing (a P-256 passkey with its role).
pub struct NewKey {
    pub jwk: Jwk,
    /// `integration` or `sealing`.
    pub purpose: String,
    /// Passkeys: `owner`, `admin` or `developer`.
    pub role: Option<String>,
    pub valid_from: UnixMs,
    pub valid_until: Option<UnixMs>,
}

/// A registered key, its custody statement, and in the sandbox the bearer
/// token of an integration key's first hour (shown once).
pub struct Registered {
    pub key: BusinessKey,
    pub custody: CustodyRecord,
    pub sandbox_token: Option<String>,
    pub registered_at: UnixMs,
}

impl Registered {
    pub fn to_json(&self) -> Value {
        let key = &self.key;
        let mut body = json!({"key_id": key.key_id, "purpose": key.purpose, "kind": key.kind,
            "custody": self.custody.custody, "custody_statement_id": self.custody.statement_id});
        if let (Some(sandbox), Some(token)) = (&key.sandbox, &self.sandbox_token) {
            body["sandbox_key_grant"] = json!(sandbox.grant);
            body["sandbox_bearer_token"] = json!(token);
            body["sandbox_bearer_valid_until"] =
                json!(self.registered_at.plus(svc_core::sandbox::BEARER_VALID_MS).to_rfc3339_secs());
        }
        body
    }
}

/// Registers a key of `business_uuid` (the operator's route, and a
/// developer's integration key in the portal).
pub async fn register<R>(state: &R, business_uuid: &str, new: NewKey) -> Result<Registered>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasHome,
{
    state.registry().business(business_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let key = VerifyingKey::from_jwk(&new.jwk).map_err(|e| invalid(e.to_string()))?;
    let now = state.clock().now();
    let purpose = KeyPurpose::from_name(&new.purpose);
    let role = new.role.as_deref().map(|r| PasskeyRole::from_name(r).ok_or(r));
    let (kind, role) = match (purpose, key.alg(), role) {
        (Some(KeyPurpose::Integration), Alg::Ed25519, None) => (KeyKind::Ed25519, None),
        (Some(KeyPurpose::Integration), Alg::Es256, None) => (KeyKind::P256, None),
        (Some(KeyPurpose::Sealing), Alg::Es256, Some(Ok(role))) => (KeyKind::Passkey, Some(role)),
        _ => {
            return Err(invalid(
                "integration keys are Ed25519 or P-256 without a role; passkeys are P-256 with a role",
            ));
        }
    };
    let mut record = BusinessKey {
        key_id: key.thumbprint(),
        business_uuid: business_uuid.to_owned(),
        purpose: if kind == KeyKind::Passkey { KeyPurpose::Sealing } else { KeyPurpose::Integration },
        kind,
        role,
        jwk: serde_json::to_vec(&key.to_jwk()).map_err(Error::internal)?,
        valid_from: new.valid_from,
        valid_until: new.valid_until,
        revocation_effective_from: None,
        compromised_at: None,
        registered_at: now,
        environment: state.config().environment,
        sandbox: None,
    };
    // A sandbox integration key is introduced by its grant on its first
    // request, and may use a bearer token for its first hour.
    let sandbox_token = (state.config().environment.is_sandbox() && kind != KeyKind::Passkey)
        .then(|| svc_core::b64::url_encode(&svc_clock::random::<32>()));
    if let Some(token) = &sandbox_token {
        record.sandbox = Some(SandboxCredentials {
            grant: svc_core::sandbox::grant_for(&record.key_id),
            bearer_sha256: svc_core::sandbox::bearer_digest(token),
            introduced: false,
        });
    }
    let mut change = Change::new();
    let custody = add_key(state, &mut change, &record, svc_core::custody::Custody::OwnKey, now);
    apply(state, change).await?;
    Ok(Registered { key: record, custody, sandbox_token, registered_at: now })
}

/// Registers a mandate an owner or admin sealed with a passkey (publishing
/// 2.4) for one of the business's integration keys.
pub async fn register_mandate<R>(state: &R, envelope: &Envelope) -> Result<MandateRecord>
where
    R: HasConfig + HasRegistry + HasClock + HasHome + HasAsTable,
{
    let registry = state.registry();
    let mandate = svc_core::publish::mandate::verify_mandate(
        envelope,
        |keyid| {
            let key = registry.passkey(keyid).ok().flatten()?;
            let public = crate::memo::key_from_jwk(&key.jwk)?;
            Some((public, key.role.map(|r| r.as_str().to_owned()).unwrap_or_default()))
        },
        &state.config().passkey_rp_id,
        &state.config().passkey_origin,
    )
    .map_err(|r| Error::detail(Code::SealInvalid, format!("mandate refused: {r}")))?;
    // The sealing passkey and the integration key belong to the mandate's business.
    let signer_business = envelope.signatures.iter().find_map(|s| registry.passkey(&s.keyid).ok().flatten());
    let key = registry
        .integration_key(&mandate.key_id)?
        .ok_or_else(|| invalid("the mandate names an unknown integration key"))?;
    if key.business_uuid != mandate.business_uuid
        || signer_business.is_none_or(|p| p.business_uuid != mandate.business_uuid)
    {
        return Err(Error::detail(
            Code::SealInvalid,
            "the mandate, its key and its passkey belong to different businesses",
        ));
    }
    let (Some(valid_from), Some(valid_until)) = (mandate.valid_from_ms(), mandate.valid_until_ms()) else {
        return Err(invalid("mandate validity"));
    };
    if state.as_table().is_none() && svc_core::publish::mandate::names_asn(&mandate.scope.source_ip_allow_list) {
        return Err(invalid(
            "the source allow-list names an autonomous system (AS…), and this service has no IP-to-AS table to \
             match it (ip_to_as_file): list addresses or CIDR blocks instead",
        ));
    }
    let record = MandateRecord {
        mandate_id: mandate.mandate_id.clone(),
        business_uuid: mandate.business_uuid.clone(),
        key_id: mandate.key_id.clone(),
        envelope: envelope.to_json(),
        record_types: mandate.scope.record_types.clone(),
        countries: mandate.scope.countries.clone(),
        records_per_hour: mandate.scope.caps.records_per_hour,
        bytes_per_day: mandate.scope.caps.bytes_per_day,
        source_ip_allow_list: mandate.scope.source_ip_allow_list.clone(),
        valid_from,
        valid_until,
        revoked_at: None,
    };
    let mut change = Change::new();
    change.put(cf::MANDATES, &keys::mandate(&record.key_id, &record.mandate_id), &record);
    apply(state, change).await?;
    Ok(record)
}

/// Revokes a mandate at once (publishing 2.4); `business_uuid`, when given,
/// must be the mandate's. Answers when it was revoked.
pub async fn revoke_mandate<R>(state: &R, key_id: &str, mandate_id: &str, business_uuid: Option<&str>) -> Result<UnixMs>
where
    R: HasRegistry + HasClock + HasHome,
{
    let mut mandate = state
        .registry()
        .mandates_of_key(key_id)?
        .into_iter()
        .find(|m| m.mandate_id == mandate_id && business_uuid.is_none_or(|b| b == m.business_uuid))
        .ok_or_else(|| Error::new(Code::NotFound))?;
    if let Some(at) = mandate.revoked_at {
        return Ok(at);
    }
    let now = state.clock().now();
    mandate.revoked_at = Some(now);
    let mut change = Change::new();
    change.put(cf::MANDATES, &keys::mandate(key_id, mandate_id), &mandate);
    apply(state, change).await?;
    Ok(now)
}

/// The payload of a document of type `name` (`custody-request.v1`,
/// `campaign.v1`, …) that a live passkey of `business_uuid`, held in one of
/// `roles`, signed through WebAuthn for this deployment; made at most five
/// minutes from now (`made_at` reads that instant from the payload). Every
/// refusal is `seal_invalid`, saying what is wrong.
pub fn passkey_document<R>(
    state: &R,
    business_uuid: &str,
    envelope: &Envelope,
    name: &str,
    roles: &[PasskeyRole],
    made_at: impl Fn(&[u8]) -> Option<UnixMs>,
) -> Result<Vec<u8>>
where
    R: HasConfig + HasRegistry + HasClock,
{
    let now = state.clock().now();
    let refused = |why: &str| Error::detail(Code::SealInvalid, format!("{name} refused: {why}"));
    let signature = envelope.signatures.first().ok_or_else(|| refused("it is not signed"))?;
    let signer = state
        .registry()
        .passkey(&signature.keyid)?
        .filter(|k| k.business_uuid == business_uuid && k.live_at(now) && k.kind == KeyKind::Passkey)
        .filter(|k| k.role.is_some_and(|r| roles.contains(&r)))
        .ok_or_else(|| refused("it is not signed by a live passkey of this business in a role that may"))?;
    let public = crate::memo::key_from_jwk(&signer.jwk).ok_or_else(|| Error::internal("stored passkey"))?;
    if envelope.payload_type != svc_core::dsse::payload_type(name) {
        return Err(refused(&format!("it is not a {name}")));
    }
    let payload = envelope.payload_bytes().map_err(|r| refused(r.as_str()))?;
    svc_core::publish::webauthn::verify_assertion(
        signature,
        &envelope.payload_type,
        &payload,
        &public,
        &state.config().passkey_rp_id,
        &state.config().passkey_origin,
    )
    .map_err(|r| refused(r.as_str()))?;
    let at = made_at(&payload).ok_or_else(|| refused("its payload is malformed"))?;
    if at.0.abs_diff(now.0) > svc_core::portal::CEREMONY_MS.unsigned_abs() {
        return Err(refused("it was made more than five minutes ago"));
    }
    Ok(payload)
}
