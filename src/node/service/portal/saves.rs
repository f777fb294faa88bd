//! A person's save, sealed by their passkey (Path B). The portal shows the
//! record's exact bytes and asks the passkey the person signed in with to
//! sign the `seal.v2` payload over them; WebAuthn cannot sign arbitrary
//! bytes, so the challenge is the SHA-256 of the payload's DSSE encoding
//! (`svc_core::publish::webauthn`). The signed envelope then goes through
//! the same save as the operator's scripted one.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use svc_core::dsse::{self, Envelope};
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_core::publish::documents::{Action, Document};
use svc_core::seal::SealV2;

use super::sessions::{begin_ceremony, json_bytes, take_ceremony};
use super::{SEALERS, Signed, apply};
use crate::region::parts::{
    HasAsTable, HasCeremonies, HasClock, HasConfig, HasHome, HasImages, HasKeys, HasRegionPositions, HasRegistry,
    HasStore,
};
use crate::replication::Change;
use crate::service::publishing::saves::{self, AiPolicySaved, Saved};
use crate::service::{Error, Result};
use svc_store::model::*;

/// What a save ceremony holds until the passkey answers.
#[derive(Serialize, Deserialize)]
struct Pending {
    business_uuid: String,
    record_type: String,
    /// `save`, `withdraw` or `delete` with a document as the bytes, or
    /// `mandate` (the bytes are the mandate, signed itself).
    purpose: String,
    /// What the passkey signs: a `seal.v2`, or a `mandate.v1`.
    payload_type: String,
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
}

/// A save waiting for the passkey: the ceremony, the options for
/// `navigator.credentials.get`, and what is being sealed.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub ceremony_id: String,
    pub options: Value,
    pub payload: Vec<u8>,
}

/// The WebAuthn members a passkey's answer carries (base64url, as the
/// browser gives them).
#[derive(Debug, Clone, Deserialize)]
pub struct Assertion {
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
}

/// What a finished save came to.
#[derive(Debug)]
pub enum Finished {
    Record(Saved),
    AiPolicy(AiPolicySaved),
    /// A withdrawal or deletion: `{record_id, action, live_in}`.
    Ended(Value),
    Mandate(MandateRecord),
    /// A held push, published or discarded.
    Released(Box<PushRecord>),
    /// Hosted signing switched: whether it is now on.
    Custody(bool),
    /// A campaign started.
    Campaign(Box<Campaign>),
}

const MANDATE: &str = "mandate";
const RELEASE: &str = "release";
const CUSTODY: &str = "custody";
const CAMPAIGN: &str = "campaign";

/// A document a passkey signs itself, not a seal over it: a mandate
/// (publishing 2.4), a decision on a held push (`push-release.v1`, naming
/// the push), a custody request (`custody-request.v1`, owners only) or a
/// campaign (`campaign.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasskeyDocument {
    Mandate,
    Release { push_id: String },
    Custody,
    Campaign,
}

impl PasskeyDocument {
    /// How the ceremony names what it prepares.
    fn purpose(&self) -> String {
        match self {
            PasskeyDocument::Mandate => MANDATE.into(),
            PasskeyDocument::Release { push_id } => format!("{RELEASE}:{push_id}"),
            PasskeyDocument::Custody => CUSTODY.into(),
            PasskeyDocument::Campaign => CAMPAIGN.into(),
        }
    }
}

/// Prepares a document the person's passkey signs itself.
pub async fn prepare_document<R>(
    state: &R,
    signed: &Signed,
    document: PasskeyDocument,
    payload: Vec<u8>,
    payload_type: String,
) -> Result<Prepared>
where
    R: HasConfig + HasStore + HasClock + HasHome + HasCeremonies,
{
    signed.require(SEALERS, "sealing with a passkey")?;
    let pending = Pending {
        business_uuid: signed.account_uuid.clone(),
        record_type: String::new(),
        purpose: document.purpose(),
        payload_type,
        bytes: payload.clone(),
        payload,
    };
    ask_passkey(state, signed, pending).await
}

const SAVE: &str = "save";

/// Prepares sealing `bytes` as a record of `record_type` (a collection or
/// the AI policy): the `seal.v2` payload names the passkey the person
/// signed in with, the certificate and AI policy version in force now.
pub async fn prepare<R>(state: &R, signed: &Signed, record_type: RecordType, bytes: Vec<u8>) -> Result<Prepared>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasCeremonies,
{
    prepare_for(state, signed, record_type, bytes, SAVE).await
}

/// Prepares sealing the document that withdraws or deletes one of the
/// business's records (publishing 2.3): `{record_id, action, at}`.
pub async fn prepare_end<R>(state: &R, signed: &Signed, record_id: &str, delete: bool) -> Result<(Prepared, Vec<u8>)>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasCeremonies,
{
    let head = state
        .registry()
        .record_head(record_id)?
        .filter(|h| h.business_uuid == signed.account_uuid)
        .ok_or_else(|| Error::new(Code::NotFound))?;
    let action = if delete { Action::Delete } else { Action::Withdraw };
    let document =
        Document { record_id: record_id.to_owned(), action, at: state.clock().now().to_rfc3339_secs() }.to_bytes();
    let prepared = prepare_for(state, signed, head.record_type, document.clone(), action.as_str()).await?;
    Ok((prepared, document))
}

async fn prepare_for<R>(
    state: &R,
    signed: &Signed,
    record_type: RecordType,
    bytes: Vec<u8>,
    purpose: &str,
) -> Result<Prepared>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasCeremonies,
{
    signed.require(SEALERS, "sealing a record")?;
    let now = state.clock().now();
    let uuid = &signed.account_uuid;
    let cert = state
        .registry()
        .certificate_in_force(uuid, now)?
        .ok_or_else(|| Error::detail(Code::SealInvalid, "the business has no certificate in force"))?;
    let (current, next) = saves::ai_policy_versions(state, uuid, now)?;
    let seal = SealV2 {
        v: 2,
        key_id: signed.key_id.clone(),
        cert_id: cert.cert_id,
        hash: svc_core::digest::sha256_prefixed(&bytes),
        sealed_at: now.to_rfc3339_millis(),
        record_type: record_type.name().into(),
        ai_policy_version: current,
        next_ai_policy_version: (record_type == RecordType::AiPolicy).then_some(next),
    };
    let payload = svc_core::canonical::to_signed_bytes(&seal).map_err(Error::internal)?;
    let pending = Pending {
        business_uuid: uuid.clone(),
        record_type: record_type.name().into(),
        purpose: purpose.into(),
        payload_type: seal_type(),
        bytes,
        payload,
    };
    ask_passkey(state, signed, pending).await
}

/// Stores the ceremony and the options that ask the passkey the person
/// signed in with to sign `pending.payload`.
async fn ask_passkey<R>(state: &R, signed: &Signed, pending: Pending) -> Result<Prepared>
where
    R: HasConfig + HasStore + HasClock + HasHome + HasCeremonies,
{
    let uuid = &signed.account_uuid;
    let challenge = svc_core::publish::webauthn::challenge(&pending.payload_type, &pending.payload);
    let person = super::sessions::person(state, uuid, &signed.person_id)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let credential = person
        .passkeys
        .iter()
        .find(|p| p.key_id == signed.key_id)
        .ok_or_else(|| Error::detail(Code::SignInRequired, "sign in again with your passkey"))?;
    let stored: webauthn_rs::prelude::Passkey =
        serde_json::from_slice(&credential.credential).map_err(Error::internal)?;
    let options = json!({"publicKey": {
        "challenge": challenge,
        "rpId": state.config().passkey_rp_id,
        "allowCredentials": [{"type": "public-key", "id": svc_core::b64::url_encode(stored.cred_id())}],
        "userVerification": "required",
        "timeout": svc_core::portal::CEREMONY_MS,
    }});
    let payload = pending.payload.clone();
    let mut change = Change::new();
    let subject = format!("{uuid}/{}", signed.person_id);
    let ceremony_id = begin_ceremony(state, &mut change, (CeremonyKind::Seal, uuid), subject, json_bytes(&pending)?)?;
    apply(state, change).await?;
    Ok(Prepared { ceremony_id, options, payload })
}

fn seal_type() -> String {
    dsse::payload_type(svc_core::seal::SEAL_V2)
}

/// The save a ceremony holds, taken (used up) for the person who began it.
async fn take_pending<R>(state: &R, signed: &Signed, ceremony_id: &str) -> Result<Pending>
where
    R: HasStore + HasClock + HasHome,
{
    signed.require(SEALERS, "sealing a record")?;
    let mut change = Change::new();
    let ceremony = take_ceremony(state, &mut change, ceremony_id, CeremonyKind::Seal)?;
    if ceremony.subject != format!("{}/{}", signed.account_uuid, signed.person_id) {
        return Err(Error::detail(Code::PasskeyRefused, "this save was begun by someone else"));
    }
    apply(state, change).await?;
    serde_json::from_slice(&ceremony.state).map_err(Error::internal)
}

/// Finishes a save with the passkey's answer: the envelope is assembled
/// from the payload prepared and the authenticator's output, and judged and
/// published as any passkey seal. The ceremony is used up either way.
pub async fn finish<R>(state: &R, signed: &Signed, ceremony_id: &str, answer: &Assertion) -> Result<Finished>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome + HasAsTable + HasRegionPositions + HasImages,
{
    let pending = take_pending(state, signed, ceremony_id).await?;
    let std = |member: &str, text: &str| {
        svc_core::b64::url_decode(text)
            .map(|bytes| svc_core::b64::std_encode(&bytes))
            .ok_or_else(|| Error::detail(Code::PasskeyRefused, format!("{member} is not base64url")))
    };
    let envelope = Envelope {
        payload_type: pending.payload_type.clone(),
        payload: svc_core::b64::std_encode(&pending.payload),
        signatures: vec![dsse::Signature {
            keyid: signed.key_id.clone(),
            sig: std("signature", &answer.signature)?,
            authenticator_data: Some(std("authenticatorData", &answer.authenticator_data)?),
            client_data_json: Some(std("clientDataJSON", &answer.client_data_json)?),
        }],
    };
    // Say plainly why an answer made for another save or site is refused,
    // before the seal's own checks (which refuse it too).
    let client_data = svc_core::b64::url_decode(&answer.client_data_json).unwrap_or_default();
    svc_core::publish::webauthn::binding(
        &client_data,
        &pending.payload_type,
        &pending.payload,
        &state.config().passkey_origin,
    )
    .map_err(|why| Error::detail(Code::PasskeyRefused, format!("nothing was saved: {why}")))?;
    if let Some(push_id) = pending.purpose.strip_prefix(RELEASE).and_then(|p| p.strip_prefix(':')) {
        let settled = saves::release_held(state, push_id, &envelope).await?;
        return Ok(Finished::Released(Box::new(settled)));
    }
    match pending.purpose.as_str() {
        MANDATE => Ok(Finished::Mandate(crate::service::business_keys::register_mandate(state, &envelope).await?)),
        CUSTODY => Ok(Finished::Custody(super::hosted::switch(state, &pending.business_uuid, &envelope).await?)),
        CAMPAIGN => {
            let started = super::campaigns::start(state, &pending.business_uuid, &envelope).await?;
            Ok(Finished::Campaign(Box::new(started)))
        }
        _ => publish(state, pending, &envelope).await,
    }
}

/// Confirms a save the service signs for the business (hosted signing):
/// the person confirms the exact bytes their review page showed, and the
/// seal prepared for them is signed by the business's hosted key instead.
/// Mandates, releases, custody switches and campaigns always need a
/// passkey, and so do a withdrawal and a deletion: a session alone (a
/// stolen cookie) can never take a record down.
pub async fn confirm_hosted<R>(state: &R, signed: &Signed, ceremony_id: &str) -> Result<Finished>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome + HasRegionPositions + HasImages,
{
    let pending = take_pending(state, signed, ceremony_id).await?;
    if pending.purpose != SAVE {
        return Err(Error::detail(Code::Forbidden, "this is signed by your passkey, never by the service"));
    }
    let envelope = super::hosted::sign(state, &pending.business_uuid, &pending.payload_type, &pending.payload)?;
    publish(state, pending, &envelope).await
}

/// Publishes a sealed save, withdrawal or deletion of a record.
async fn publish<R>(state: &R, pending: Pending, envelope: &Envelope) -> Result<Finished>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasRegionPositions + HasImages,
{
    let record_type = RecordType::from_name(&pending.record_type).ok_or_else(|| Error::internal("ceremony"))?;
    if pending.purpose != SAVE {
        let delete = pending.purpose == Action::Delete.as_str();
        let ended =
            saves::end_record(state, &pending.business_uuid, record_type, &pending.bytes, envelope, delete).await?;
        return Ok(Finished::Ended(ended));
    }
    if record_type == RecordType::AiPolicy {
        let saved = saves::save_ai_policy(state, &pending.business_uuid, pending.bytes, envelope).await?;
        Ok(Finished::AiPolicy(saved))
    } else {
        let saved = saves::save_record(state, &pending.business_uuid, record_type, pending.bytes, envelope).await?;
        Ok(Finished::Record(saved))
    }
}

/// The AI policy in force now, read back as its flags.
pub fn ai_policy_in_force(
    state: &(impl HasRegistry + HasClock),
    signed: &Signed,
) -> Result<Option<svc_core::ai_policy::AiPolicyRecord>> {
    let policy = state.registry().ai_policy_at(&signed.account_uuid, state.clock().now())?;
    Ok(policy.and_then(|p| svc_core::ai_policy::parse_record(&p.bytes).ok()))
}
