//! The operator's operations (the spec shows none): businesses and their
//! certificates and keys, mandates, AI companies, groups and retrieval keys,
//! blocks, allowances, Terms, held pushes, and the service's own keys. The
//! caller is the operator, authenticated by the surface. Every change goes
//! through the publisher, so it replicates to the read regions.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::digest::sha256_prefixed;
use svc_core::dsse::{Envelope, payload_type};
use svc_core::ids::{self, RecordType};
use svc_core::keys::Jwk;
use svc_core::problem::Code;
use svc_core::seal::CertificateStatus;
use svc_core::time::UnixMs;

use crate::actors::billing::BillingMsg;
use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{
    HasAsTable, HasBilling, HasClock, HasConfig, HasHome, HasImages, HasKeySet, HasKeys, HasRegistry, HasRoster,
    HasStore, HasSupervisor, HasTraces,
};
use crate::replication::Change;
use crate::service::business_keys::{self, custody_statement, revoke_key};
use crate::service::company_keys::{self, renew_key_directory};
use crate::service::publishing::saves;
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::cf;
use svc_store::keys;
use svc_store::model::*;

/// Applies a change through the publisher, the one writer: it replicates.
use crate::service::writes::apply;

/// What an operation answers: a body, and whether it created something.
#[derive(Debug)]
pub enum Done {
    Ok(Value),
    Created(Value),
}

use crate::service::error::invalid;

/// An optional RFC 3339 member: absent stays absent.
fn optional_time(value: &Option<String>) -> Result<Option<UnixMs>> {
    value.as_ref().map(|t| parse_time(&Some(t.clone()), UnixMs(0))).transpose()
}

fn parse_time(value: &Option<String>, default: UnixMs) -> Result<UnixMs> {
    match value {
        None => Ok(default),
        Some(text) => UnixMs::parse_rfc3339(text).ok_or_else(|| invalid(format!("{text} is not an RFC 3339 time"))),
    }
}

pub async fn config(state: &impl HasConfig) -> Result<Done> {
    let c = state.config();
    Ok(Done::Ok(json!({
        "region": c.region,
        "role": c.role,
        "environment": c.environment,
        "public_authority": c.public_authority,
        "passkey_rp_id": c.passkey_rp_id,
        "passkey_origin": c.passkey_origin,
    })))
}

/// Every actor of the region: what each holds, and how the supervisor
/// sees it (restarts, and why it failed if it is not back). An actor that
/// does not answer within 2 s is shown as `null`.
pub async fn observe(state: &(impl HasSupervisor + HasRoster)) -> Result<Done> {
    let actors = state.roster().observe(std::time::Duration::from_secs(2)).await;
    let supervised = ractor::call!(state.supervisor(), crate::region::supervisor::SupervisorMsg::Observe)
        .map_err(Error::actor("supervisor"))?;
    let supervisor: Vec<Value> =
        supervised.into_iter().map(|c| json!({"name": c.name, "restarts": c.restarts, "failed": c.failed})).collect();
    Ok(Done::Ok(json!({"actors": actors, "supervisor": supervisor})))
}

/// Draws this region's next receipt key and asks home to certify it. The
/// region signs with its current key until the key set names the new one;
/// the old key stays valid for the overlap after that.
pub async fn rotate_receipt_key<R>(state: &R) -> Result<Done>
where
    R: HasConfig + HasClock + HasKeySet,
{
    let now = state.clock().now();
    let key = state.key_set().rotate(now).await.map_err(Error::internal)?;
    let signing = state.key_set().signer(now).map(|s| s.key_id);
    Ok(Done::Ok(json!({
        "region": state.config().region,
        "kid": key.thumbprint(),
        "signing_kid": signing,
        "overlap_ms": svc_core::keyset::KEY_OVERLAP_MS,
    })))
}

/// Whom a certificate is of: a business, or an AI company (the key
/// directory lists a company's keys while its certificate is active).
pub enum CertificateSubject<'a> {
    Business(&'a Business),
    Company(&'a Company),
}

impl CertificateSubject<'_> {
    fn uuid(&self) -> &str {
        match self {
            CertificateSubject::Business(b) => &b.uuid,
            CertificateSubject::Company(c) => &c.uuid,
        }
    }
}

/// A certificate issuance signed by the issuance key. It names the
/// subject, its legal name (and a business's country), that the service
/// verified it and since when, and its status; never how.
pub fn issue_certificate(
    state: &(impl HasConfig + HasKeys),
    subject: CertificateSubject<'_>,
    verified_since: UnixMs,
    status: CertificateStatus,
    status_effective_from: UnixMs,
    status_reason: Option<String>,
    issued_at: UnixMs,
) -> Result<CertificateIssuance> {
    let verified_on = &verified_since.to_rfc3339_secs()[..10];
    let (kind, uuid_member, name, country) = match &subject {
        CertificateSubject::Business(b) => ("business", "business_uuid", &b.legal_name, Some(&b.country)),
        CertificateSubject::Company(c) => ("ai_company", "ai_company_uuid", &c.name, None),
    };
    let named = match country {
        Some(country) => format!("{name} ({country})"),
        None => name.clone(),
    };
    let statement = format!("{named} was verified by the service on {verified_on}. Status: {}.", status.as_str());
    let mut payload = json!({
        "v": 1,
        "subject": kind,
        uuid_member: subject.uuid(),
        "legal_name": name,
        "verified_since": verified_since.to_rfc3339_secs(),
        "status": status.as_str(),
        "status_effective_from": status_effective_from.to_rfc3339_secs(),
        "issued_at": issued_at.to_rfc3339_millis(),
        "statement": statement,
        "sandbox": state.config().environment.is_sandbox(),
    });
    if let Some(country) = country {
        payload["country"] = json!(country);
    }
    if let Some(reason) = &status_reason {
        payload["status_reason"] = json!(reason);
    }
    let bytes = svc_core::canonical::to_signed_bytes(&payload).map_err(Error::internal)?;
    let envelope = state.keys().issuer().sign(&payload_type("certificate.v1"), &bytes);
    Ok(CertificateIssuance {
        cert_id: sha256_prefixed(&bytes),
        business_uuid: subject.uuid().to_owned(),
        status,
        status_effective_from,
        issued_at,
        status_reason,
        envelope: envelope.to_json(),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewBusiness {
    legal_name: String,
    country: String,
    #[serde(default)]
    brands: Vec<String>,
    /// The first owner, invited to the business portal.
    owner_email: Option<String>,
}

pub async fn create_business<R>(state: &R, req: NewBusiness) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome,
{
    if !ids::is_country(&req.country) {
        return Err(invalid("country must be an ISO 3166-1 alpha-2 code"));
    }
    if req.legal_name.trim().is_empty() || req.legal_name.len() > 200 {
        return Err(invalid("legal_name must be 1 to 200 characters"));
    }
    let now = state.clock().now();
    let business = Business {
        uuid: ids::uuid_v4(random()),
        legal_name: req.legal_name,
        country: req.country,
        created_at: now,
        brands: req.brands,
    };
    let cert = issue_certificate(
        state,
        CertificateSubject::Business(&business),
        now,
        CertificateStatus::Active,
        now,
        None,
        now,
    )?;
    let mut change = Change::new();
    change.put(cf::BUSINESSES, business.uuid.as_bytes(), &business);
    change.put(cf::CERTIFICATES, &keys::certificate(&business.uuid, now, &cert.cert_id), &cert);
    if let Some(email) = &req.owner_email {
        crate::service::portal::sessions::normalise_email(email)?;
    }
    apply(state, change).await?;
    let mut body = json!({"business_uuid": business.uuid, "cert_id": cert.cert_id, "status": "active"});
    if let Some(email) = &req.owner_email {
        body["owner_invitation"] = owner_invitation(state, &business.uuid, email).await?;
    }
    Ok(Done::Created(body))
}

/// Invites an owner of a business or an AI company to the portal: the
/// first owner at creation, or another when the owners lost their
/// passkeys. The link is shown once.
pub async fn owner_invitation<R>(state: &R, uuid: &str, email: &str) -> Result<Value>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    let made = crate::service::portal::people::invite(state, None, uuid, email, PasskeyRole::Owner).await?;
    let url = format!("{}{}", state.config().passkey_origin, made.path);
    Ok(json!({"email": made.email, "role": made.role, "url": url, "expires_at": made.expires_at}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerInvitation {
    email: String,
}

pub async fn invite_owner<R>(state: &R, uuid: String, req: OwnerInvitation) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    Ok(Done::Created(owner_invitation(state, &uuid, &req.email).await?))
}

/// A business as the operator sees it: its certificate in force and the AI
/// policy version a seal made now must name.
pub async fn show_business(state: &(impl HasRegistry + HasClock), uuid: String) -> Result<Done> {
    let business = state.registry().business(&uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let now = state.clock().now();
    let cert = state.registry().certificate_in_force(&uuid, now)?;
    let policy = state.registry().ai_policy_at(&uuid, now)?;
    Ok(Done::Ok(json!({
        "business_uuid": business.uuid,
        "legal_name": business.legal_name,
        "country": business.country,
        "brands": business.brands,
        "cert_id": cert.as_ref().map(|c| c.cert_id.clone()),
        "certificate_status": cert.as_ref().map(|c| c.status.as_str()),
        "ai_policy_version": policy.as_ref().map_or(0, |p| p.version),
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusChange {
    status: CertificateStatus,
    effective_from: Option<String>,
    reason: Option<String>,
}

/// A new issuance with another status, for a business or an AI company.
pub async fn change_certificate_status<R>(state: &R, uuid: String, req: StatusChange) -> Result<Done>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasHome,
{
    let business = state.registry().business(&uuid)?;
    let company = match &business {
        Some(_) => None,
        None => Some(state.registry().company(&uuid)?.ok_or_else(|| Error::new(Code::NotFound))?),
    };
    let subject = match (&business, &company) {
        (Some(b), _) => CertificateSubject::Business(b),
        (None, Some(c)) => CertificateSubject::Company(c),
        (None, None) => return Err(Error::new(Code::NotFound)),
    };
    let history = state.registry().certificates(&uuid)?;
    // Each issuance is strictly later than the one before, so the history
    // has one order even when two are made within a millisecond.
    let now = history.last().map_or(state.clock().now(), |last| state.clock().now().max(last.issued_at.plus(1)));
    let effective = parse_time(&req.effective_from, now)?;
    let verified_since = history.first().map_or(now, |c| c.issued_at);
    let cert = issue_certificate(state, subject, verified_since, req.status, effective, req.reason, now)?;
    let mut change = Change::new();
    change.put(cf::CERTIFICATES, &keys::certificate(&uuid, now, &cert.cert_id), &cert);
    apply(state, change).await?;
    renew_key_directory(state).await?;
    Ok(Done::Created(json!({"business_uuid": uuid, "cert_id": cert.cert_id, "status": req.status.as_str(),
        "status_effective_from": effective.to_rfc3339_secs()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewBusinessKey {
    jwk: Jwk,
    /// `integration`, or `sealing` for a passkey.
    purpose: String,
    /// Passkeys: `owner`, `admin` or `developer`.
    role: Option<String>,
    valid_from: Option<String>,
    valid_until: Option<String>,
}

pub async fn register_business_key<R>(state: &R, uuid: String, req: NewBusinessKey) -> Result<Done>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasHome,
{
    let now = state.clock().now();
    let new = business_keys::NewKey {
        jwk: req.jwk,
        purpose: req.purpose,
        role: req.role,
        valid_from: parse_time(&req.valid_from, now)?,
        valid_until: optional_time(&req.valid_until)?,
    };
    let added = business_keys::register(state, &uuid, new).await?;
    Ok(Done::Created(added.to_json()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustodyChange {
    /// `hosted` or `self`.
    custody: String,
    effective_from: Option<String>,
}

/// Re-states who holds a key: a new statement, never an edit.
pub async fn restate_custody<R>(state: &R, key_id: String, req: CustodyChange) -> Result<Done>
where
    R: HasRegistry + HasKeys + HasClock + HasHome,
{
    let custody =
        svc_core::custody::Custody::parse(&req.custody).ok_or_else(|| invalid("custody is hosted or self"))?;
    let key = match state.registry().integration_key(&key_id)? {
        Some(k) => k,
        None => state.registry().passkey(&key_id)?.ok_or_else(|| Error::new(Code::NotFound))?,
    };
    let last = state.registry().custody_statements(&key.business_uuid)?.last().map(|c| c.issued_at);
    // Strictly after the previous statement, so the history has one order.
    let now = state.clock().now();
    let issued_at = last.map_or(now, |l| now.max(l.plus(1)));
    let effective = parse_time(&req.effective_from, now)?;
    let statement = custody_statement(state, &key, custody, issued_at, effective);
    let mut change = Change::new();
    change.put(cf::CUSTODY, &keys::custody(&key.business_uuid, issued_at, &statement.statement_id), &statement);
    crate::service::business_keys::log_custody(&mut change, &statement, now);
    apply(state, change).await?;
    Ok(Done::Created(json!({"key_id": key_id, "custody": statement.custody, "statement_id": statement.statement_id,
        "effective_from": effective.to_rfc3339_secs()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    effective_from: Option<String>,
    compromised_at: Option<String>,
}

pub async fn revoke_business_key<R>(state: &R, key_id: String, req: Revocation) -> Result<Done>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    let now = state.clock().now();
    let key = match state.registry().integration_key(&key_id)? {
        Some(k) => k,
        None => state.registry().passkey(&key_id)?.ok_or_else(|| Error::new(Code::NotFound))?,
    };
    let effective_from = parse_time(&req.effective_from, now)?;
    let compromised_at = optional_time(&req.compromised_at)?;
    let mut change = Change::new();
    // A passkey out from now leaves its person at once: every session it
    // opened ends and it signs nobody in again. One revoked from a later
    // moment stays until then (sessions check the key on every request).
    let out_now = effective_from <= now || compromised_at.is_some_and(|at| at <= now);
    if key.kind == KeyKind::Passkey && out_now {
        crate::service::portal::people::drop_passkey(state, &mut change, &key.business_uuid, &key.key_id)?;
    }
    let key = revoke_key(&mut change, key, effective_from, compromised_at, now);
    apply(state, change).await?;
    Ok(Done::Ok(
        json!({"key_id": key_id, "revocation_effective_from": key.revocation_effective_from.map(|t| t.to_rfc3339_secs()),
        "compromised_at": key.compromised_at.map(|t| t.to_rfc3339_secs())}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MandateRegistration {
    /// The passkey-sealed `mandate.v1` envelope.
    envelope: Envelope,
}

pub async fn register_mandate<R>(state: &R, req: MandateRegistration) -> Result<Done>
where
    R: HasConfig + HasRegistry + HasClock + HasHome + HasAsTable,
{
    let record = business_keys::register_mandate(state, &req.envelope).await?;
    Ok(Done::Created(json!({"mandate_id": record.mandate_id, "key_id": record.key_id,
        "valid_until": record.valid_until.to_rfc3339_secs()})))
}

/// Ends a retrieval key (`company_keys::revoke`).
pub async fn revoke_retrieval_key<R>(state: &R, key_id: String) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    let revoked_at = company_keys::revoke(state, &key_id, None).await?;
    Ok(Done::Ok(json!({"key_id": key_id, "revoked_at": revoked_at.to_rfc3339_secs()})))
}

pub async fn revoke_mandate<R>(state: &R, key_id: String, mandate_id: String) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    let revoked_at = business_keys::revoke_mandate(state, &key_id, &mandate_id, None).await?;
    Ok(Done::Ok(json!({"mandate_id": mandate_id, "revoked_at": revoked_at.to_rfc3339_secs()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiPolicySeal {
    record_base64: String,
    /// `seal.v2` signed by an owner's or admin's passkey, naming
    /// `next_ai_policy_version`.
    seal: Envelope,
}

/// The portal's AI policy save, scripted (Path B): see [`saves::save_ai_policy`].
pub async fn seal_ai_policy<R>(state: &R, uuid: String, req: AiPolicySeal) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    let bytes = svc_core::b64::std_decode(&req.record_base64).ok_or_else(|| invalid("record_base64 is not base64"))?;
    let saved = saves::save_ai_policy(state, &uuid, bytes, &req.seal).await?;
    Ok(Done::Created(saved.to_json()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedRecord {
    record_type: String,
    record_base64: String,
    /// `seal.v2` by a passkey of the business over the record's bytes.
    seal: Envelope,
}

/// The business portal's save (Path B), scripted: see [`saves::save_record`].
pub async fn save_sealed_record<R>(state: &R, uuid: String, req: SealedRecord) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasImages,
{
    let record_type = RecordType::from_name(&req.record_type)
        .filter(|t| t.is_collection() || *t == RecordType::Ads)
        .ok_or_else(|| invalid("record_type is a collection name or ads"))?;
    let bytes = svc_core::b64::std_decode(&req.record_base64).ok_or_else(|| invalid("record_base64 is not base64"))?;
    Ok(match saves::save_record(state, &uuid, record_type, bytes, &req.seal).await? {
        saved @ saves::Saved::Published { .. } => Done::Created(saved.to_json()),
        rejected @ saves::Saved::Rejected(_) => Done::Ok(rejected.to_json()),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryChange {
    listed: bool,
}

/// An AI company opts in to the key directory (or out): `company_keys`.
pub async fn set_directory_listing<R>(state: &R, uuid: String, req: DirectoryChange) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    company_keys::set_directory_listing(state, &uuid, req.listed).await?;
    Ok(Done::Ok(json!({"ai_company_uuid": uuid, "listed": req.listed})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TermsAcceptanceChange {
    version: u64,
}

/// Records that an AI company accepted a Terms version (the portal asks
/// the person; the operator may record it too).
pub async fn accept_terms<R>(state: &R, uuid: String, req: TermsAcceptanceChange) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    Ok(Done::Ok(company_keys::accept_terms(state, &uuid, req.version).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewCompany {
    name: String,
    #[serde(default)]
    verified: bool,
    terms_accepted: Option<u64>,
    /// The first owner, invited to the AI-company portal.
    owner_email: Option<String>,
}

pub async fn create_company<R>(state: &R, req: NewCompany) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome,
{
    if req.name.trim().is_empty() {
        return Err(invalid("name is required"));
    }
    if let Some(email) = &req.owner_email {
        crate::service::portal::sessions::normalise_email(email)?;
    }
    let company = Company {
        uuid: ids::uuid_v4(random()),
        name: req.name,
        verified: req.verified,
        terms_accepted: req.terms_accepted,
        environment: state.config().environment,
        created_at: state.clock().now(),
    };
    let mut change = Change::new();
    change.put(cf::COMPANIES, company.uuid.as_bytes(), &company);
    // A version given must exist, unless none is published yet (an
    // acceptance recorded before any Terms, kept for older deployments).
    if let Some(version) = company.terms_accepted {
        let terms = state.registry().terms()?;
        let published = !terms.is_empty();
        match terms.into_iter().find(|t| t.version == version) {
            Some(t) => {
                let accepted = TermsAcceptance { version, sha256: t.sha256, accepted_at: company.created_at };
                change.put(cf::TERMS_ACCEPTED, company.uuid.as_bytes(), &accepted);
            }
            None if !published => {}
            None => return Err(invalid(format!("there is no Terms version {version}"))),
        }
    }
    // A verified company holds a certificate, as a business does.
    if company.verified {
        let now = company.created_at;
        let active = CertificateStatus::Active;
        let cert = issue_certificate(state, CertificateSubject::Company(&company), now, active, now, None, now)?;
        change.put(cf::CERTIFICATES, &keys::certificate(&company.uuid, now, &cert.cert_id), &cert);
    }
    apply(state, change).await?;
    renew_key_directory(state).await?;
    let mut body = json!({"ai_company_uuid": company.uuid, "name": company.name});
    if let Some(email) = &req.owner_email {
        body["owner_invitation"] = owner_invitation(state, &company.uuid, email).await?;
    }
    Ok(Done::Created(body))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    name: String,
}

pub async fn create_group<R>(state: &R, uuid: String, req: NewGroup) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    let group = company_keys::create_group(state, &uuid, &req.name).await?;
    Ok(Done::Created(json!({"ai_group_id": group.group_id, "name": group.name})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRetrievalKey {
    jwk: Jwk,
}

pub async fn register_retrieval_key<R>(state: &R, group_id: String, req: NewRetrievalKey) -> Result<Done>
where
    R: HasConfig + HasRegistry + HasClock + HasHome,
{
    let group = state.registry().group(&group_id)?.ok_or_else(|| Error::new(Code::NotFound))?;
    Ok(Done::Created(company_keys::register(state, &group, &req.jwk).await?.to_json()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockChange {
    business_uuid: String,
    ai_group_id: String,
    #[serde(default = "yes")]
    blocked: bool,
}

fn yes() -> bool {
    true
}

pub async fn set_block<R>(state: &R, req: BlockChange) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    state.registry().business(&req.business_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    state.registry().group(&req.ai_group_id)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let now = state.clock().now();
    let key = keys::block(&req.business_uuid, &req.ai_group_id);
    let mut change = Change::new();
    if req.blocked {
        change.put(
            cf::BLOCKS,
            &key,
            &Block { business_uuid: req.business_uuid.clone(), group_id: req.ai_group_id.clone(), since: now },
        );
    } else {
        change.delete(cf::BLOCKS, &key);
    }
    apply(state, change).await?;
    Ok(Done::Ok(json!({"business_uuid": req.business_uuid, "ai_group_id": req.ai_group_id, "blocked": req.blocked})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushRelease {
    envelope: Envelope,
}

/// An owner's or admin's confirmation of a held push, made in the portal:
/// a `push-release.v1` sealed by their passkey, naming the push, its
/// business and the decision, confirmed within the last five minutes.
pub async fn release_push<R>(state: &R, push_id: String, req: PushRelease) -> Result<Done>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    let settled = saves::release_held(state, &push_id, &req.envelope).await?;
    Ok(Done::Ok(
        json!({"push_id": push_id, "state": settled.state, "held": settled.held, "counts": settled.outcome_counts()}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointsChange {
    business_uuid: String,
    suspended: bool,
    #[serde(default)]
    reason: String,
}

/// Runs a domain assurance pass now (the schedule runs them every
/// `domain_assurance.every_ms`) and answers what it found.
pub async fn check_domains(state: &impl HasHome) -> Result<Done> {
    let actor = state.home()?.domain_assurance.as_ref().ok_or_else(|| {
        Error::detail(Code::NotImplemented, "domain assurance is not configured on this node ([domain_assurance])")
    })?;
    let pass = actor.call(crate::actors::domain_assurance::DomainAssuranceMsg::CheckNow).await??;
    Ok(Done::Ok(json!({
        "businesses": pass.businesses,
        "domains": {"confirmed": pass.confirmed, "refused": pass.refused, "expired": pass.expired,
                    "unchecked": pass.unchecked},
        "endpoints_suspended": pass.suspended,
    })))
}

/// Suspends (domain assurance lost) or restores a business's authorised
/// endpoints: while suspended, `purchase` is withheld on its rows and its
/// business file's `endpoints` read `suspended`.
pub async fn set_endpoints<R>(state: &R, req: EndpointsChange) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome,
{
    state.registry().business(&req.business_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let mut change = Change::new();
    if req.suspended {
        let suspension = EndpointsSuspension {
            business_uuid: req.business_uuid.clone(),
            since: state.clock().now(),
            reason: req.reason,
        };
        change.put(cf::ENDPOINTS, req.business_uuid.as_bytes(), &suspension);
    } else {
        change.delete(cf::ENDPOINTS, req.business_uuid.as_bytes());
    }
    apply(state, change).await?;
    Ok(Done::Ok(
        json!({"business_uuid": req.business_uuid, "endpoints": if req.suspended { "suspended" } else { "live" }}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowanceChange {
    ai_company_uuid: String,
    prepay: bool,
    remaining: i64,
}

pub async fn set_allowance<R>(state: &R, req: AllowanceChange) -> Result<Done>
where
    R: HasRegistry + HasClock + HasHome + HasBilling,
{
    // Allowances are home's: a read region serves from leases of them.
    state.home()?;
    state.registry().company(&req.ai_company_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    // The plan first, through the log, so read regions learn whom they may
    // serve without a lease; then the allowance, which is home's alone.
    let plan = BillingPlan { company_uuid: req.ai_company_uuid.clone(), prepay: req.prepay };
    let mut change = Change::new();
    change.put(cf::BILLING_PLANS, plan.company_uuid.as_bytes(), &plan);
    apply(state, change).await?;
    let allowance =
        Allowance { company_uuid: req.ai_company_uuid.clone(), prepay: req.prepay, remaining: req.remaining };
    // Allowances belong to the billing actor, which judges every reservation.
    state.billing().call(|reply| BillingMsg::SetAllowance { allowance, reply }).await??;
    Ok(Done::Ok(json!({"ai_company_uuid": req.ai_company_uuid, "prepay": req.prepay, "remaining": req.remaining})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTerms {
    version: u64,
    effective_from: Option<String>,
    text: String,
}

pub async fn publish_terms<R>(state: &R, req: NewTerms) -> Result<Done>
where
    R: HasStore + HasClock + HasHome,
{
    if state.store().contains(cf::TERMS, &svc_store::be(req.version))? {
        return Err(invalid("that Terms version exists; versions are never edited"));
    }
    let now = state.clock().now();
    let terms = TermsVersion {
        version: req.version,
        effective_from: parse_time(&req.effective_from, now)?,
        sha256: sha256_prefixed(req.text.as_bytes()),
        text: req.text,
    };
    let mut change = Change::new();
    change.put(cf::TERMS, &svc_store::be(terms.version), &terms);
    apply(state, change).await?;
    Ok(Done::Created(
        json!({"version": terms.version, "effective_from": terms.effective_from.to_rfc3339_secs(), "sha256": terms.sha256}),
    ))
}

/// Sequences the transparency log's waiting leaves now, without waiting for
/// the hour, and answers the checkpoint signed (home only).
pub async fn sequence_log(state: &impl HasHome) -> Result<Done> {
    let log = &state.home()?.transparency_log;
    let signed = log.call(crate::actors::transparency_log::TransparencyLogMsg::Sequence).await??;
    Ok(Done::Ok(json!({
        "tree_size": signed.size,
        "root_hash": svc_core::merkle::root_form(&signed.root),
        "checkpoint": signed.note,
    })))
}

/// `GET /admin/traces/{trace_id}`: the public requests of one trace this
/// node served lately (its last [`crate::trace::RECENT`]).
pub fn trace(state: &(impl HasConfig + HasTraces), trace_id: &str) -> Result<Done> {
    let trace = svc_core::trace_context::parse_trace_id(trace_id)
        .ok_or_else(|| Error::detail(Code::RequestInvalid, "a trace id is 32 lower-case hex digits, not all zero"))?;
    let served = state.traces().of(&trace);
    Ok(Done::Ok(json!({ "region": state.config().region, "role": state.config().role, "served": served })))
}

/// `POST /admin/log/cosign`: asks every witness missing from the newest
/// checkpoint now; answers each witness's state.
pub async fn cosign_log(state: &impl HasHome) -> Result<Done> {
    let Some(witnesses) = &state.home()?.witnesses else {
        return Err(Error::detail(Code::NotFound, "no witness is configured ([[log_witnesses.witness]])"));
    };
    let states = witnesses.call(crate::actors::witnesses::WitnessesMsg::CosignNow).await?;
    let witnesses: Vec<Value> = states
        .iter()
        .map(|w| {
            json!({
                "name": w.name,
                "cosigned_size": w.cosigned,
                "last_failure": w.last_failure.map(|f| f.as_str()),
                "failures": w.failures,
            })
        })
        .collect();
    Ok(Done::Ok(json!({ "witnesses": witnesses })))
}

/// `POST /admin/faults/crash`: the crash point to arm, or `null` to disarm.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashArm {
    at: Option<crate::faults::CrashPoint>,
}

/// `POST /admin/faults/clock`: how far this node's clock runs from the machine's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSkew {
    skew_ms: i64,
}

/// Faults are injected only into a node configured for them; elsewhere
/// the routes do not exist.
fn fault_injection(state: &impl HasConfig) -> Result<()> {
    if state.config().fault_injection { Ok(()) } else { Err(Error::new(Code::NotFound)) }
}

pub fn arm_crash(state: &impl HasConfig, req: CrashArm) -> Result<Done> {
    fault_injection(state)?;
    crate::faults::arm(req.at);
    Ok(Done::Ok(json!({ "armed": req.at })))
}

/// At most a day either way: enough to cross every window the spec names.
pub fn skew_clock(state: &(impl HasConfig + HasClock), req: ClockSkew) -> Result<Done> {
    fault_injection(state)?;
    if req.skew_ms.abs() > 86_400_000 {
        return Err(Error::detail(Code::RequestInvalid, "skew_ms is at most a day either way"));
    }
    crate::faults::skew(req.skew_ms);
    Ok(Done::Ok(json!({ "skew_ms": req.skew_ms, "now": state.clock().now().to_rfc3339_millis() })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceKeyEnd {
    valid_until: Option<String>,
    compromised_at: Option<String>,
}

/// Ends one of the service's own keys in the key set (home only): retired
/// from `valid_until` once its successor is listed, or compromised from
/// `compromised_at` (which may precede now). Root keys are refused.
pub async fn end_service_key<R>(state: &R, kid: String, req: ServiceKeyEnd) -> Result<Done>
where
    R: HasKeys + HasClock + HasHome,
{
    let now = state.clock().now();
    let valid_until = optional_time(&req.valid_until)?;
    let compromised_at = optional_time(&req.compromised_at)?;
    if valid_until.is_none() && compromised_at.is_none() {
        return Err(invalid("give valid_until, compromised_at, or both"));
    }
    if state.keys().signing_kids().contains(&kid) {
        return Err(invalid("this key signs now: rotate its purpose first (svc admin service-key-rotate)"));
    }
    let publisher = &state.home()?.publisher;
    let ended = publisher
        .call(|reply| PublisherMsg::EndServiceKey { kid: kid.clone(), valid_until, compromised_at, now, reply })
        .await??;
    match ended {
        Ok(()) => Ok(Done::Ok(json!({
            "kid": kid,
            "valid_until": valid_until.map(|t| t.to_rfc3339_secs()),
            "compromised_at": compromised_at.map(|t| t.to_rfc3339_secs()),
        }))),
        Err(svc_core::Reason::KeyUnknown) => Err(Error::detail(Code::NotFound, "no service key has that id")),
        Err(_) => Err(invalid("a root key is not ended by its own root: pin a new deployment's anchors")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceKeyRotation {
    purpose: svc_core::keyset::Purpose,
}

/// Draws a successor for one of home's own keys (issuance, statement,
/// projection, sidecar, log checkpoint): listed in the key set from now,
/// signing from now; the old one closes after the overlap (home only).
pub async fn rotate_service_key(state: &(impl HasClock + HasHome), req: ServiceKeyRotation) -> Result<Done> {
    let now = state.clock().now();
    let publisher = &state.home()?.publisher;
    let purpose = req.purpose;
    let kids = publisher
        .call(|reply| PublisherMsg::RotateServiceKey { purpose, now, reply })
        .await??
        .ok_or_else(|| invalid("home rotates issuance, statement, projection, sidecar and log_checkpoint keys"))?;
    Ok(Done::Ok(json!({
        "purpose": purpose,
        "key_ids": kids,
        "previous_valid_until": now.plus(svc_core::keyset::KEY_OVERLAP_MS).to_rfc3339_secs(),
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewCampaign {
    terms: svc_core::ads::campaign::CampaignTerms,
    #[serde(default)]
    items: Vec<String>,
}

/// A campaign as the operator reads it: its terms with money as decimal
/// dollars (and no gross price: there is none), and its money as home's
/// ledger counts it (spent, leased to regions, left).
pub fn campaign_json(state: &(impl HasStore + HasClock), c: &Campaign) -> Result<Value> {
    let t = &c.terms;
    let (spent, leased, left) = crate::service::ads::ledger::standing(state, c)?;
    Ok(json!({
        "campaign_id": c.campaign_id, "business_uuid": c.business_uuid, "name": t.name,
        "placement": t.placement, "budget": t.budget.to_decimal(),
        "net_price": {"amount": t.net_price.to_decimal(), "currency": "USD", "basis": t.basis},
        "keywords": t.keywords, "countries": t.countries, "subdivisions": t.subdivisions, "formats": t.formats,
        "repeats": t.repeats, "items": c.items, "state": c.state.name(), "funded": c.funded.to_decimal(),
        "spent": spent.to_decimal(), "leased": leased.to_decimal(), "left": left.to_decimal(),
        "created_at": c.created_at.to_rfc3339_secs(), "updated_at": c.updated_at.to_rfc3339_secs(),
    }))
}

/// A business's campaign, made for it (the portal's form, scripted).
pub async fn create_campaign<R>(state: &R, uuid: String, req: NewCampaign) -> Result<Done>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    let campaign = crate::service::ads::campaigns::create(state, &uuid, &req.terms, &req.items, Vec::new()).await?;
    Ok(Done::Created(campaign_json(state, &campaign)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFunds {
    /// Dollars, a decimal string.
    amount: String,
}

pub async fn fund_campaign<R>(state: &R, campaign_id: String, req: CampaignFunds) -> Result<Done>
where
    R: HasStore + HasClock + HasHome,
{
    let campaign = crate::service::ads::campaigns::fund(state, &campaign_id, &req.amount).await?;
    Ok(Done::Ok(campaign_json(state, &campaign)?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignStateChange {
    state: String,
}

/// A campaign with its money as home counts it now.
pub fn show_campaign(state: &(impl HasStore + HasClock), campaign_id: &str) -> Result<Done> {
    let campaign = state
        .store()
        .get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())?
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))?;
    Ok(Done::Ok(campaign_json(state, &campaign)?))
}

pub async fn set_campaign_state<R>(state: &R, campaign_id: String, req: CampaignStateChange) -> Result<Done>
where
    R: HasStore + HasClock + HasHome,
{
    let to = CampaignState::from_name(&req.state).ok_or_else(|| invalid("state is active, paused or ended"))?;
    let business = state
        .store()
        .get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())?
        .ok_or_else(|| Error::detail(Code::NotFound, "no such campaign"))?
        .business_uuid;
    let campaign = crate::service::ads::campaigns::set_state(state, &business, &campaign_id, to).await?;
    Ok(Done::Ok(campaign_json(state, &campaign)?))
}
