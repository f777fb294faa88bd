//! Path B (publishing section 1): a person seals one record, or the AI
//! policy, with a passkey over its exact bytes, and it is published through
//! the publisher's write path (validation, projection, replication, log
//! leaf, catalogue). The business portal and the operator's scripted route
//! both call these.

use serde_json::{Value, json};
use svc_core::ads::images::Slot;
use svc_core::dsse::Envelope;
use svc_core::ids::{self, RecordType};
use svc_core::problem::{Code, Problem};
use svc_core::publish::outcome::Outcome;
use svc_core::records::{ErrorCode, RecordError};
use svc_core::seal::{CertificateStatus, RecordSeal, SealV2};
use svc_core::time::UnixMs;

use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{HasClock, HasConfig, HasHome, HasImages, HasRegionPositions, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::{Error, Result};
use svc_store::model::*;
use svc_store::{cf, keys};

/// What a record's save came to.
#[derive(Debug)]
pub enum Saved {
    Published {
        outcome: Outcome,
        record_id: String,
        version: u64,
        sha256: String,
    },
    /// The record failed validation: every reason, as a push reports them.
    Rejected(Vec<RecordError>),
}

impl Saved {
    pub fn to_json(&self) -> Value {
        match self {
            Saved::Published { outcome, record_id, version, sha256 } => {
                json!({"outcome": outcome, "record_id": record_id, "version": version, "sha256": sha256})
            }
            Saved::Rejected(errors) => json!({"outcome": "rejected", "errors": errors}),
        }
    }
}

/// A new AI policy version, live from `live_from`.
#[derive(Debug)]
pub struct AiPolicySaved {
    pub version: u64,
    pub record_id: String,
    pub business_uuid: String,
    pub live_from: UnixMs,
}

impl AiPolicySaved {
    pub fn to_json(&self) -> Value {
        json!({"business_uuid": self.business_uuid, "ai_policy_version": self.version,
            "ai_policy_record_id": self.record_id, "live_from": self.live_from.to_rfc3339_secs()})
    }
}

fn refused(detail: impl Into<String>) -> Error {
    Error::detail(Code::SealInvalid, detail)
}

/// The `seal.v2` payload of `envelope`, once its key is shown to be one of
/// `business_uuid`'s sealing keys and to have signed it: a passkey held by
/// an owner or admin (its WebAuthn signature), or the key the service holds
/// for the business while hosted signing is on (a plain signature).
fn person_seal<R>(state: &R, business_uuid: &str, envelope: &Envelope) -> Result<(SealV2, BusinessKey)>
where
    R: HasConfig + HasStore + HasRegistry,
{
    let RecordSeal::V2(seal) = svc_core::seal::read_record_seal(envelope).map_err(|r| refused(r.to_string()))? else {
        return Err(refused("a person's save is sealed with seal.v2"));
    };
    let key = state
        .registry()
        .passkey(&seal.key_id)?
        .filter(|p| p.business_uuid == business_uuid)
        .ok_or_else(|| refused("the seal's key is not a sealing key of this business"))?;
    let public = crate::memo::key_from_jwk(&key.jwk).ok_or_else(|| Error::internal("stored sealing key"))?;
    let opened = envelope.open().map_err(|r| refused(r.to_string()))?;
    let signature = envelope
        .signatures
        .iter()
        .find(|s| s.keyid == seal.key_id)
        .ok_or_else(|| refused("no signature by the seal's key"))?;
    if key.kind != KeyKind::Passkey {
        let held = state.store().get::<HostedKey>(cf::HOSTED_KEYS, business_uuid.as_bytes())?;
        if held.is_none_or(|h| h.key_id != key.key_id) {
            return Err(refused("the seal's key is no longer held for this business"));
        }
        envelope.verify(&envelope.payload_type, &public).map_err(|r| refused(format!("the hosted signature: {r}")))?;
        return Ok((seal, key));
    }
    if !matches!(key.role, Some(PasskeyRole::Owner | PasskeyRole::Admin)) {
        return Err(refused("a record is sealed by an owner's or admin's passkey"));
    }
    svc_core::publish::webauthn::verify_assertion(
        signature,
        &envelope.payload_type,
        &opened.payload,
        &public,
        &state.config().passkey_rp_id,
        &state.config().passkey_origin,
    )
    .map_err(|r| refused(format!("the passkey signature: {r}")))?;
    Ok((seal, key))
}

/// Publishes one record of a collection a person sealed. Judged like a Path
/// A seal: the passkey's validity, the hash, the certificate and AI policy
/// version in force at `sealed_at`, and the five-minute window; then the
/// publisher validates the record and publishes it in one write.
pub async fn save_record<R>(
    state: &R,
    business_uuid: &str,
    record_type: RecordType,
    bytes: Vec<u8>,
    envelope: &Envelope,
) -> Result<Saved>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasImages,
{
    let now = state.clock().now();
    let (seal, passkey) = person_seal(state, business_uuid, envelope)?;
    svc_core::seal::check_hash(&seal.hash, &bytes).map_err(|r| refused(r.to_string()))?;
    if seal.record_type != record_type.name() {
        return Err(refused("the seal names another record type"));
    }
    let sealed_at = UnixMs::parse_rfc3339_millis_utc(&seal.sealed_at).ok_or_else(|| refused("sealed_at"))?;
    if !svc_core::seal::sealed_at_fresh(sealed_at, now) {
        return Err(refused("sealed_at is more than five minutes from receipt"));
    }
    passkey.validity().judge(sealed_at).map_err(|r| refused(format!("the sealing key at sealed_at: {r}")))?;
    super::check_certificate_in_force(&state.registry().certificates(business_uuid)?, &seal.cert_id, sealed_at)?;
    super::check_ai_policy_version(state, business_uuid, seal.ai_policy_version, sealed_at)?;
    let images = match record_type {
        RecordType::Ads => match fetch_images(state, &bytes).await {
            Ok(images) => images,
            Err(errors) => return Ok(Saved::Rejected(errors)),
        },
        _ => Vec::new(),
    };
    let save = crate::publish::SealedSave {
        business_uuid: business_uuid.to_owned(),
        record_type,
        bytes,
        seal_json: envelope.to_json(),
        key_id: passkey.key_id,
        cert_id: seal.cert_id,
        certificate_status: CertificateStatus::Active.as_str().into(),
        ai_policy_version: seal.ai_policy_version,
        now,
        images,
    };
    let saved = state.home()?.publisher.call(|reply| PublisherMsg::SaveSealed(Box::new(save), reply)).await??;
    Ok(match saved {
        Ok(s) => Saved::Published { outcome: s.outcome, record_id: s.record_id, version: s.version, sha256: s.sha256 },
        Err(errors) => Saved::Rejected(errors),
    })
}

/// The images an ad names, fetched by the service now (R4.1.22) and each
/// judged for its slot; every one that cannot be used is a reason the save
/// is refused. A record that is not JSON names none: validation refuses it.
async fn fetch_images(state: &impl HasImages, bytes: &[u8]) -> Result<Vec<(Slot, AdImage)>, Vec<RecordError>> {
    let record: Value = serde_json::from_slice(bytes).unwrap_or_default();
    let mut images = Vec::new();
    let mut errors = Vec::new();
    for slot in Slot::ALL {
        let Some(url) = record.get(slot.url_member()).and_then(Value::as_str) else { continue };
        let fetched = state.images().fetch(url).await.and_then(|bytes| {
            let judged =
                svc_core::ads::images::judge(slot, &bytes).map_err(crate::image_fetch::FetchError::Unusable)?;
            Ok(AdImage { content_type: judged.content_type.into(), width: judged.width, height: judged.height, bytes })
        });
        match fetched {
            Ok(image) => images.push((slot, image)),
            Err(why) => errors.push(RecordError::new(
                ErrorCode::FieldInvalid,
                format!("/{}", slot.url_member()),
                format!("the service could not use this image: {why}"),
            )),
        }
    }
    if errors.is_empty() { Ok(images) } else { Err(errors) }
}

/// Every reason the write path would refuse `bytes` as a record of
/// `record_type` of the business for (none when it would publish), judged
/// before a person seals it.
pub fn judge_record(
    state: &impl HasRegistry,
    business_uuid: &str,
    record_type: RecordType,
    bytes: &[u8],
) -> Result<Vec<RecordError>> {
    let (_, ctx) =
        state.registry().validation_context(business_uuid, None)?.ok_or_else(|| Error::new(Code::NotFound))?;
    Ok(svc_core::records::validate(bytes, record_type, &ctx).err().unwrap_or_default())
}

/// The AI policy version a new policy sealed now would create, and the one
/// in force it must name.
pub fn ai_policy_versions(state: &impl HasRegistry, business_uuid: &str, at: UnixMs) -> Result<(u64, u64)> {
    let current = state.registry().ai_policy_at(business_uuid, at)?.map_or(0, |p| p.version);
    Ok((current, current + 1))
}

/// Makes a new AI policy version live: sealed by an owner's or admin's
/// passkey, naming the version in force and the one it creates.
pub async fn save_ai_policy<R>(
    state: &R,
    business_uuid: &str,
    bytes: Vec<u8>,
    envelope: &Envelope,
) -> Result<AiPolicySaved>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    svc_core::ai_policy::parse_record(&bytes)
        .map_err(|e| Error::detail(Code::RequestInvalid, format!("AI policy record: {e}")))?;
    let (seal, _) = person_seal(state, business_uuid, envelope)?;
    svc_core::seal::check_hash(&seal.hash, &bytes).map_err(|r| refused(r.to_string()))?;
    let now = state.clock().now();
    let (current, next) = ai_policy_versions(state, business_uuid, now)?;
    if seal.record_type != RecordType::AiPolicy.name()
        || seal.next_ai_policy_version != Some(next)
        || seal.ai_policy_version != current
    {
        return Err(Error::from(
            Problem::new(Code::SealInvalid)
                .detail(format!("the seal must name ai_policy_version {current} and next_ai_policy_version {next}"))
                .ai_policy_version(current),
        ));
    }
    let record_id = ids::ai_policy_record_id(business_uuid, next);
    let version = AiPolicyVersion {
        business_uuid: business_uuid.to_owned(),
        version: next,
        record_id: record_id.clone(),
        bytes,
        seal: envelope.to_json(),
        live_from: now,
    };
    let mut change = Change::new();
    change.put(cf::AI_POLICIES, &keys::ai_policy(business_uuid, next), &version);
    crate::publish::queue_seal(&mut change, &version.seal, now);
    state.home()?.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
    Ok(AiPolicySaved { version: next, record_id, business_uuid: business_uuid.to_owned(), live_from: now })
}

/// Withdraws or deletes a record with a document `{record_id, action, at}`
/// a person sealed with their passkey (publishing 2.3; no bare delete): the
/// seal is judged as a record's, over the document's bytes, and the record
/// leaves serving as when an integration key sends the same document.
pub async fn end_record<R>(
    state: &R,
    business_uuid: &str,
    record_type: RecordType,
    document_bytes: &[u8],
    envelope: &Envelope,
    delete: bool,
) -> Result<Value>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasRegionPositions,
{
    use svc_core::publish::documents;
    let now = state.clock().now();
    let (seal, passkey) = person_seal(state, business_uuid, envelope)?;
    documents::check_document_seal(document_bytes, &seal, record_type)
        .map_err(|r| refused(format!("document: {r}")))?;
    let document = documents::read_document(document_bytes).map_err(|d| Error::detail(Code::RequestInvalid, d))?;
    let wanted = if delete { documents::Action::Delete } else { documents::Action::Withdraw };
    if document.action != wanted {
        return Err(Error::detail(Code::RequestInvalid, format!("the document's action is not {}", wanted.as_str())));
    }
    let sealed_at = UnixMs::parse_rfc3339_millis_utc(&seal.sealed_at).ok_or_else(|| refused("sealed_at"))?;
    if !svc_core::seal::sealed_at_fresh(sealed_at, now) {
        return Err(refused("sealed_at is more than five minutes from receipt"));
    }
    passkey.validity().judge(sealed_at).map_err(|r| refused(format!("the sealing key at sealed_at: {r}")))?;
    super::check_ai_policy_version(state, business_uuid, seal.ai_policy_version, sealed_at)?;
    super::check_certificate_in_force(&state.registry().certificates(business_uuid)?, &seal.cert_id, sealed_at)?;
    super::end_documented(state, business_uuid, &document, envelope.to_json(), now, delete).await
}

/// A release the publisher refused (the push is not held) is the caller's
/// fault; anything else failed on the service's side.
fn refused_release(error: crate::actors::error::ActorError) -> Error {
    match error {
        crate::actors::error::ActorError::Invalid(why) => Error::detail(Code::RequestInvalid, why),
        other => Error::from(other),
    }
}

/// Publishes or discards a push held by the price-shock rule, as an owner
/// or admin decided with their passkey (a `push-release.v1` confirmed
/// within five minutes). Answers the push as it settled.
pub async fn release_held<R>(state: &R, push_id: &str, envelope: &Envelope) -> Result<PushRecord>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    use svc_core::publish::release::{Decision, verify_release};
    let push =
        state.store().get::<PushRecord>(cf::PUSHES, &keys::push(push_id))?.ok_or_else(|| Error::new(Code::NotFound))?;
    let now = state.clock().now();
    let registry = state.registry();
    let release = verify_release(
        envelope,
        |keyid| {
            let key = registry.passkey(keyid).ok().flatten()?;
            let usable = key.business_uuid == push.business_uuid && key.live_at(now);
            let public = crate::memo::key_from_jwk(&key.jwk).filter(|_| usable)?;
            Some((public, key.role.map(|r| r.as_str().to_owned()).unwrap_or_default()))
        },
        &state.config().passkey_rp_id,
        &state.config().passkey_origin,
        now,
    )
    .map_err(|r| Error::detail(Code::SealInvalid, format!("release refused: {r}")))?;
    if release.push_id != push_id || release.business_uuid != push.business_uuid {
        return Err(Error::detail(Code::SealInvalid, "the confirmation names another push or business"));
    }
    if push.state != svc_core::publish::outcome::PushState::Held {
        return Err(Error::detail(Code::RequestInvalid, format!("the push is {}, not held", push.state.name())));
    }
    let publisher = &state.home()?.publisher;
    Ok(match release.decision {
        Decision::Publish => {
            let mut from = Some(0);
            let mut settled = push;
            while let Some(leaf) = from {
                let id = push_id.to_owned();
                let (pushed, next) = publisher
                    .call(|reply| PublisherMsg::ReleaseChunk { push_id: id, from: leaf, now, reply })
                    .await?
                    .map_err(refused_release)?;
                settled = pushed;
                from = next;
            }
            settled
        }
        Decision::Discard => {
            let id = push_id.to_owned();
            publisher.call(|reply| PublisherMsg::Discard { push_id: id, now, reply }).await?.map_err(refused_release)?
        }
    })
}
