//! The AI-company portal's use cases (retrieval 5, last paragraph): people
//! with the owner, admin or integration-manager role register and revoke
//! retrieval keys (a sandbox key needs nothing more; a production key a
//! verified company that accepted the Terms in force); owners and admins
//! accept the Terms; everyone reads the company's receipts, usage and
//! bills. Each calls the same use case as the signed API or the operator.

use serde_json::Value;
use svc_core::keys::Jwk;
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use super::Signed;
use crate::region::parts::{HasBilling, HasClock, HasConfig, HasHome, HasRegistry, HasStore};
use crate::service::company_keys::{self, Registered};
use crate::service::error::invalid;
use crate::service::retrieval::account::{self, ReceiptsQuery, UsageQuery};
use crate::service::{Error, Result};
use svc_store::model::*;

/// Who registers and revokes retrieval keys, and makes groups for them.
pub const KEY_MANAGERS: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin, PasskeyRole::IntegrationManager];
/// Who decides for the company: accepting the Terms, listing its keys in
/// the key directory.
pub const DECIDERS: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin];

/// A group and its retrieval keys, newest first.
pub struct GroupKeys {
    pub group: Group,
    pub keys: Vec<RetrievalKey>,
}

/// The company's groups, each with its keys.
pub fn groups(state: &impl HasRegistry, signed: &Signed) -> Result<Vec<GroupKeys>> {
    let keys = state.registry().retrieval_keys()?;
    let mut out: Vec<GroupKeys> = state
        .registry()
        .groups_of(&signed.account_uuid)?
        .into_iter()
        .map(|group| {
            let mut of: Vec<RetrievalKey> = keys.iter().filter(|k| k.group_id == group.group_id).cloned().collect();
            of.sort_by_key(|k| std::cmp::Reverse(k.registered_at));
            GroupKeys { group, keys: of }
        })
        .collect();
    out.sort_by(|a, b| a.group.name.cmp(&b.group.name));
    Ok(out)
}

/// One of the company's groups.
fn own_group(state: &impl HasRegistry, signed: &Signed, group_id: &str) -> Result<Group> {
    state
        .registry()
        .group(group_id)?
        .filter(|g| g.company_uuid == signed.account_uuid)
        .ok_or_else(|| Error::detail(Code::NotFound, "no such group"))
}

pub async fn add_group<R>(state: &R, signed: &Signed, name: &str) -> Result<Group>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(KEY_MANAGERS, "making a group")?;
    company_keys::create_group(state, &signed.account_uuid, name).await
}

/// Registers the public key (a JWK, as text) to one of the company's groups.
pub async fn register_key<R>(state: &R, signed: &Signed, group_id: &str, jwk: &str) -> Result<Registered>
where
    R: HasConfig + HasRegistry + HasClock + HasHome,
{
    signed.require(KEY_MANAGERS, "registering a retrieval key")?;
    let group = own_group(state, signed, group_id)?;
    let jwk: Jwk = serde_json::from_str(jwk.trim())
        .map_err(|_| invalid("paste the key's public JWK (Ed25519 or P-256), as JSON"))?;
    company_keys::register(state, &group, &jwk).await
}

pub async fn revoke_key<R>(state: &R, signed: &Signed, key_id: &str) -> Result<UnixMs>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(KEY_MANAGERS, "revoking a retrieval key")?;
    company_keys::revoke(state, key_id, Some(&signed.account_uuid)).await
}

/// Whether the company's live keys are listed in the key directory.
pub fn listed(state: &impl HasStore, signed: &Signed) -> Result<bool> {
    company_keys::listed(state, &signed.account_uuid)
}

/// Lists the company's keys in the key directory, or stops.
pub async fn set_listing<R>(state: &R, signed: &Signed, listed: bool) -> Result<()>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(DECIDERS, "listing the company in the key directory")?;
    company_keys::set_directory_listing(state, &signed.account_uuid, listed).await
}

/// Where the company stands with the Terms.
pub struct TermsStatus {
    pub in_force: Option<TermsVersion>,
    pub accepted: Option<TermsAcceptance>,
    pub verified: bool,
    /// Whether this node serves the sandbox (its keys need no Terms).
    pub sandbox: bool,
    /// Why a production key would be refused now, if it would.
    pub production_refusal: Option<String>,
}

pub fn terms<R>(state: &R, signed: &Signed) -> Result<TermsStatus>
where
    R: HasConfig + HasRegistry + HasClock,
{
    let company = state.registry().company(&signed.account_uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    Ok(TermsStatus {
        in_force: state.registry().terms_in_force(state.clock().now())?,
        accepted: state.registry().terms_accepted(&company.uuid)?,
        verified: company.verified,
        sandbox: state.config().environment.is_sandbox(),
        production_refusal: company_keys::production_key_allowed(state, &company).err().map(|e| e.to_string()),
    })
}

/// Accepts the Terms version in force, as the person read it: `sha256`
/// must be that version's, so a version published meanwhile is not
/// accepted unread.
pub async fn accept_terms<R>(state: &R, signed: &Signed, version: u64, sha256: &str) -> Result<Value>
where
    R: HasRegistry + HasClock + HasHome,
{
    signed.require(DECIDERS, "accepting the Terms")?;
    let in_force = state.registry().terms_in_force(state.clock().now())?;
    match in_force {
        Some(t) if t.version == version && t.sha256 == sha256 => {}
        _ => return Err(invalid("that is not the Terms version in force now; read it again")),
    }
    company_keys::accept_terms(state, &signed.account_uuid, version).await
}

/// A page of one of the company's groups' receipts (as `GET /v1/receipts`).
pub fn receipts(
    state: &(impl HasStore + HasRegistry),
    signed: &Signed,
    group_id: &str,
    q: ReceiptsQuery,
) -> Result<Value> {
    let group = own_group(state, signed, group_id)?;
    account::group_receipts(state, &group.group_id, q)
}

/// The company's usage per day, as `GET /v1/usage` reports it.
pub async fn usage<R>(state: &R, signed: &Signed, q: UsageQuery) -> Result<Value>
where
    R: HasConfig + HasClock + HasBilling,
{
    account::company_usage(state, &signed.account_uuid, state.clock().now(), q).await
}

/// One month's bill: what was billed, and whether it is invoiced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bill {
    /// `YYYY-MM`.
    pub month: String,
    pub searches: u64,
    pub fetches: u64,
    pub billed: u64,
}

/// The company's bills for this month and the eleven before it, newest
/// first (months without usage included, at zero).
pub async fn bills<R>(state: &R, signed: &Signed) -> Result<(Vec<Bill>, bool)>
where
    R: HasConfig + HasClock + HasBilling,
{
    let today = state.clock().now().to_rfc3339_secs();
    let (year, month): (i64, i64) = (today[..4].parse().unwrap_or(1970), today[5..7].parse().unwrap_or(1));
    let months: Vec<String> = (0..12)
        .map(|back| {
            let index = year * 12 + (month - 1) - back;
            format!("{:04}-{:02}", index / 12, index % 12 + 1)
        })
        .collect();
    let from = format!("{}-01", months[11]);
    let q = UsageQuery { from: Some(from), to: Some(today[..10].to_owned()) };
    let usage = usage(state, signed, q).await?;
    let mut bills: Vec<Bill> =
        months.into_iter().map(|month| Bill { month, searches: 0, fetches: 0, billed: 0 }).collect();
    for day in usage["days"].as_array().into_iter().flatten() {
        let date = day["date"].as_str().unwrap_or_default();
        if let Some(bill) = bills.iter_mut().find(|b| date.starts_with(&b.month)) {
            bill.searches += day["searches"].as_u64().unwrap_or(0);
            bill.fetches += day["fetches"].as_u64().unwrap_or(0);
            bill.billed += day["billed"].as_u64().unwrap_or(0);
        }
    }
    Ok((bills, usage["invoiced"].as_bool().unwrap_or(false)))
}
