//! An AI company's groups, retrieval keys and Terms acceptance, as the
//! operator and the AI-company portal change them (retrieval 5): a sandbox
//! key needs nothing more; a production key needs a verified company that
//! accepted the Terms in force, that version by its hash.

use serde_json::{Value, json};
use svc_core::keys::{Alg, Jwk, VerifyingKey};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use crate::actors::publisher::PublisherMsg;
use crate::region::parts::{HasClock, HasConfig, HasHome, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::error::invalid;
use crate::service::writes::apply;
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::cf;
use svc_store::model::*;

/// Signs the key directory again if what it lists changed (home).
pub async fn renew_key_directory(state: &(impl HasClock + HasHome)) -> Result<bool> {
    let now = state.clock().now();
    Ok(state.home()?.publisher.call(|reply| PublisherMsg::RenewKeyDirectory { now, reply }).await??)
}

/// The most groups one company holds.
pub const MAX_GROUPS: usize = 100;
/// The longest group name.
pub const MAX_GROUP_NAME: usize = 120;

/// Adds a group to `company_uuid`.
pub async fn create_group<R>(state: &R, company_uuid: &str, name: &str) -> Result<Group>
where
    R: HasRegistry + HasClock + HasHome,
{
    state.registry().company(company_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_GROUP_NAME || name.chars().any(char::is_control) {
        return Err(invalid(format!("a group's name is 1 to {MAX_GROUP_NAME} characters on one line")));
    }
    if state.registry().groups_of(company_uuid)?.len() >= MAX_GROUPS {
        return Err(invalid(format!("a company holds at most {MAX_GROUPS} groups")));
    }
    let group = Group {
        group_id: format!("grp_{}", hex::encode(random::<12>())),
        company_uuid: company_uuid.to_owned(),
        name: name.to_owned(),
    };
    let mut change = Change::new();
    change.put(cf::GROUPS, group.group_id.as_bytes(), &group);
    apply(state, change).await?;
    Ok(group)
}

/// A registered retrieval key, and in the sandbox its grant and its first
/// hour's bearer token (shown once).
#[derive(Debug)]
pub struct Registered {
    pub key: RetrievalKey,
    pub sandbox_bearer_token: Option<String>,
}

impl Registered {
    pub fn to_json(&self) -> Value {
        let key = &self.key;
        let mut body = json!({"key_id": key.key_id, "environment": key.environment});
        if let (Some(grant), Some(token)) = (&key.grant, &self.sandbox_bearer_token) {
            body["sandbox_key_grant"] = json!(grant);
            body["sandbox_bearer_token"] = json!(token);
            body["sandbox_bearer_valid_until"] = json!(key.registered_at.plus(svc_core::time::HOUR).to_rfc3339_secs());
        }
        body
    }
}

/// Registers the public half of a retrieval key to `group`. A key
/// registered once stays with its company: registered again (to this or
/// another company), the one writer refuses it.
pub async fn register<R>(state: &R, group: &Group, jwk: &Jwk) -> Result<Registered>
where
    R: HasConfig + HasRegistry + HasClock + HasHome,
{
    let company = state.registry().company(&group.company_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let key = VerifyingKey::from_jwk(jwk).map_err(|e| invalid(e.to_string()))?;
    if !matches!(key.alg(), Alg::Ed25519 | Alg::Es256) {
        return Err(invalid("retrieval keys are Ed25519 or P-256"));
    }
    let sandbox = state.config().environment.is_sandbox();
    if !sandbox {
        production_key_allowed(state, &company)?;
    }
    let now = state.clock().now();
    let key_id = key.thumbprint();
    let token = sandbox.then(|| svc_core::b64::url_encode(&random::<32>()));
    let record = RetrievalKey {
        key_id: key_id.clone(),
        group_id: group.group_id.clone(),
        company_uuid: company.uuid,
        jwk: serde_json::to_vec(&key.to_jwk()).map_err(Error::internal)?,
        environment: state.config().environment,
        registered_at: now,
        revoked_at: None,
        grant: sandbox.then(|| svc_core::sandbox::grant_for(&key_id)),
        bearer_sha256: token.as_ref().map(|t| svc_core::sandbox::bearer_digest(t)),
        introduced: false,
    };
    let mut change = Change::new();
    change.require_absent(cf::RETRIEVAL_KEYS, key_id.as_bytes());
    change.put(cf::RETRIEVAL_KEYS, key_id.as_bytes(), &record);
    apply(state, change).await?;
    renew_key_directory(state).await?;
    Ok(Registered { key: record, sandbox_bearer_token: token })
}

/// A production key needs a verified company that accepted the Terms in
/// force, that version by its hash (retrieval 5). Before any Terms are in
/// force, an acceptance recorded at the company's creation stands.
pub fn production_key_allowed(state: &(impl HasRegistry + HasClock), company: &Company) -> Result<()> {
    if !company.verified {
        return Err(invalid("a production key needs a verified company"));
    }
    let now = state.clock().now();
    let Some(in_force) = state.registry().terms_in_force(now)? else {
        return match company.terms_accepted {
            Some(_) => Ok(()),
            None => Err(invalid("a production key needs a company that accepted the Terms")),
        };
    };
    let accepted = state.registry().terms_accepted(&company.uuid)?;
    match accepted {
        Some(a) if a.version == in_force.version && a.sha256 == in_force.sha256 => Ok(()),
        Some(a) => Err(invalid(format!(
            "a production key needs the Terms in force accepted: version {} ({}) is in force, the company accepted \
             version {}",
            in_force.version, in_force.sha256, a.version
        ))),
        None => Err(invalid(format!(
            "a production key needs the Terms in force accepted: version {} ({}), which the company has not accepted",
            in_force.version, in_force.sha256
        ))),
    }
}

/// Ends a retrieval key: from now on its signatures are `key_unknown` at
/// every region (as each applies the change). Revoking it again answers
/// the first revocation. `company_uuid`, when given, must be the key's.
pub async fn revoke<R>(state: &R, key_id: &str, company_uuid: Option<&str>) -> Result<UnixMs>
where
    R: HasRegistry + HasClock + HasHome,
{
    let mut key = state
        .registry()
        .retrieval_key(key_id)?
        .filter(|k| company_uuid.is_none_or(|c| c == k.company_uuid))
        .ok_or_else(|| Error::new(Code::NotFound))?;
    if let Some(at) = key.revoked_at {
        return Ok(at);
    }
    let now = state.clock().now();
    let as_read = key.clone();
    key.revoked_at = Some(now);
    let mut change = Change::new();
    // Of two revocations at once, the second finds the key changed (503,
    // ask again) and then answers the first.
    change.require_unchanged(cf::RETRIEVAL_KEYS, key_id.as_bytes(), &as_read);
    change.put(cf::RETRIEVAL_KEYS, key_id.as_bytes(), &key);
    apply(state, change).await?;
    renew_key_directory(state).await?;
    Ok(now)
}

/// Records that an AI company accepted a Terms version, pinned by its hash.
pub async fn accept_terms<R>(state: &R, company_uuid: &str, version: u64) -> Result<Value>
where
    R: HasRegistry + HasClock + HasHome,
{
    let mut company = state.registry().company(company_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let terms = state.registry().terms()?.into_iter().find(|t| t.version == version);
    let terms = terms.ok_or_else(|| invalid(format!("there is no Terms version {version}")))?;
    let accepted =
        TermsAcceptance { version: terms.version, sha256: terms.sha256.clone(), accepted_at: state.clock().now() };
    let mut change = Change::new();
    change.put(cf::TERMS_ACCEPTED, company_uuid.as_bytes(), &accepted);
    company.terms_accepted = Some(terms.version);
    change.put(cf::COMPANIES, company_uuid.as_bytes(), &company);
    apply(state, change).await?;
    Ok(json!({"ai_company_uuid": company_uuid, "version": terms.version, "sha256": terms.sha256,
        "accepted_at": accepted.accepted_at.to_rfc3339_secs()}))
}

/// An AI company opts in to the key directory (or out). Only a verified
/// company with an active certificate is listed; the directory says so
/// again while that holds.
pub async fn set_directory_listing<R>(state: &R, company_uuid: &str, listed: bool) -> Result<()>
where
    R: HasRegistry + HasClock + HasHome,
{
    let company = state.registry().company(company_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let now = state.clock().now();
    let mut change = Change::new();
    if listed {
        let active = state
            .registry()
            .certificate_in_force(company_uuid, now)?
            .is_some_and(|c| c.status == svc_core::seal::CertificateStatus::Active);
        if !company.verified || !active {
            return Err(invalid(
                "only a verified AI company with an active certificate is listed in the key directory",
            ));
        }
        change.put(cf::DIRECTORY, company_uuid.as_bytes(), &DirectoryListing { listed_since: now });
    } else {
        change.delete(cf::DIRECTORY, company_uuid.as_bytes());
    }
    apply(state, change).await?;
    renew_key_directory(state).await?;
    Ok(())
}

/// Whether the company is listed in the key directory.
pub fn listed(state: &impl HasStore, company_uuid: &str) -> Result<bool> {
    Ok(state.store().get::<DirectoryListing>(cf::DIRECTORY, company_uuid.as_bytes())?.is_some())
}
