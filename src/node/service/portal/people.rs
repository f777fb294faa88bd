//! People and roles, of a business or an AI company: an owner invites
//! people and sets their roles; the first owner is invited by the operator
//! when it creates the account. An invited person creates a passkey; a
//! business's is also its sealing key (with the person's role, no name).
//! Removing a person revokes their passkeys and ends their sessions at once.

use serde::Serialize;
use serde_json::Value;
use svc_core::problem::Code;
use webauthn_rs::prelude::{PasskeyRegistration, RegisterPublicKeyCredential, Uuid};

use super::relying_party::{self, public_key};
use super::sessions::{self, NewSession, begin_ceremony, json_bytes, normalise_email, open_session, take_ceremony};
use super::{Signed, apply, digest, invalid, secret};
use crate::region::parts::{HasCeremonies, HasClock, HasConfig, HasHome, HasKeys, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::business_keys::{add_key, revoke_key, sealing_key};
use crate::service::{Error, Result};
use svc_store::model::*;
use svc_store::{cf, keys};

/// An invitation is open this long.
pub const INVITATION_MS: i64 = 7 * 24 * 60 * 60_000;
/// The longest name a person gives.
pub const MAX_NAME: usize = 120;
/// The most people a business's portal holds (removed ones included).
pub const MAX_PEOPLE: usize = 200;
/// At most this many invitations of one account wait at once (until used,
/// cancelled or lapsed), so an owner's mistake or a stolen session cannot
/// fill the store.
pub const MAX_OPEN_INVITATIONS: usize = 50;

/// A new invitation: the token its link carries, shown once.
#[derive(Debug, Clone, Serialize)]
pub struct NewInvitation {
    pub token: String,
    pub path: String,
    pub email: String,
    pub role: &'static str,
    pub expires_at: String,
}

/// The roles a business's people hold.
pub const BUSINESS_ROLES: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin, PasskeyRole::Developer];
/// The roles an AI company's people hold (retrieval 5).
pub const COMPANY_ROLES: &[PasskeyRole] = &[PasskeyRole::Owner, PasskeyRole::Admin, PasskeyRole::IntegrationManager];

/// An account people join: a business, or an AI company.
#[derive(Debug, Clone)]
pub struct Account {
    pub name: String,
    pub company: bool,
}

impl Account {
    pub fn of(state: &impl HasRegistry, uuid: &str) -> Result<Account> {
        if let Some(business) = state.registry().business(uuid)? {
            return Ok(Account { name: business.legal_name, company: false });
        }
        let company = state.registry().company(uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
        Ok(Account { name: company.name, company: true })
    }

    pub fn roles(&self) -> &'static [PasskeyRole] {
        if self.company { COMPANY_ROLES } else { BUSINESS_ROLES }
    }

    /// Refused unless `role` is one of this kind of account's.
    pub fn check_role(&self, role: PasskeyRole) -> Result<()> {
        if self.roles().contains(&role) {
            return Ok(());
        }
        let names: Vec<&str> = self.roles().iter().map(|r| r.as_str()).collect();
        let kind = if self.company { "an AI company's" } else { "a business's" };
        Err(invalid(format!("{kind} people are {}", names.join(", "))))
    }
}

/// Invites `email` to the portal of `account_uuid` (a business or an AI
/// company) in `role`. `by` is the owner who invites, or `None` for the
/// operator (the first owner).
pub async fn invite<R>(
    state: &R,
    by: Option<&Signed>,
    account_uuid: &str,
    email: &str,
    role: PasskeyRole,
) -> Result<NewInvitation>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    if let Some(by) = by {
        by.require(&[PasskeyRole::Owner], "inviting people")?;
    }
    Account::of(state, account_uuid)?.check_role(role)?;
    let email = normalise_email(email)?;
    if sessions::person_by_email(state, &email)?.is_some() {
        return Err(invalid("this address already belongs to a person of a business portal"));
    }
    if people(state, account_uuid)?.len() >= MAX_PEOPLE {
        return Err(invalid(format!("a portal holds at most {MAX_PEOPLE} people per account")));
    }
    let waiting = state.store().scan::<()>(
        cf::ACCOUNT_INVITATIONS,
        &keys::prefix(&[account_uuid]),
        None,
        MAX_OPEN_INVITATIONS,
    )?;
    if waiting.len() >= MAX_OPEN_INVITATIONS {
        return Err(invalid(format!("at most {MAX_OPEN_INVITATIONS} invitations wait at once: cancel one first")));
    }
    let now = state.clock().now();
    let invitation = Invitation {
        account_uuid: account_uuid.to_owned(),
        email,
        role,
        invited_by: by.map(|b| b.person_id.clone()),
        invited_at: now,
        expires_at: now.plus(INVITATION_MS),
    };
    let mut change = Change::new();
    let made = put_invitation(&mut change, invitation);
    apply(state, change).await?;
    Ok(made)
}

/// An invitation under a new secret, written with its account's index entry.
fn put_invitation(change: &mut Change, invitation: Invitation) -> NewInvitation {
    let (token, token_digest) = secret();
    change.put(cf::INVITATIONS, &token_digest, &invitation);
    change.put(cf::ACCOUNT_INVITATIONS, &keys::account_invitation(&invitation.account_uuid, &token_digest), &());
    NewInvitation {
        path: format!("/portal/invitations/{token}"),
        token,
        email: invitation.email,
        role: invitation.role.as_str(),
        expires_at: invitation.expires_at.to_rfc3339_secs(),
    }
}

/// An invitation waiting for its person, as its account's owners see it:
/// named by the digest of its secret, never by the secret.
#[derive(Debug, Serialize)]
pub struct OpenInvitation {
    pub invitation_id: String,
    pub email: String,
    pub role: &'static str,
    pub invited_at: svc_core::time::UnixMs,
    pub expires_at: svc_core::time::UnixMs,
}

/// The account's invitations still open, oldest first.
pub fn open_invitations<R>(state: &R, account_uuid: &str) -> Result<Vec<OpenInvitation>>
where
    R: HasStore + HasClock,
{
    let prefix = keys::prefix(&[account_uuid]);
    let now = state.clock().now();
    let mut open = Vec::new();
    for (key, ()) in state.store().scan::<()>(cf::ACCOUNT_INVITATIONS, &prefix, None, MAX_OPEN_INVITATIONS)? {
        let token_digest = &key[prefix.len()..];
        let Some(invitation) = state.store().get::<Invitation>(cf::INVITATIONS, token_digest)? else { continue };
        if invitation.expires_at > now {
            open.push(OpenInvitation {
                invitation_id: hex::encode(token_digest),
                email: invitation.email,
                role: invitation.role.as_str(),
                invited_at: invitation.invited_at,
                expires_at: invitation.expires_at,
            });
        }
    }
    open.sort_by_key(|i| i.invited_at);
    Ok(open)
}

/// One of the owner's account's open invitations, by its id; another
/// account's, or one used or lapsed, is unknown.
fn owned_invitation<R>(state: &R, by: &Signed, invitation_id: &str) -> Result<(Vec<u8>, Invitation)>
where
    R: HasStore + HasClock,
{
    by.require(&[PasskeyRole::Owner], "managing invitations")?;
    let unknown = || Error::detail(Code::NotFound, "no such open invitation");
    let token_digest = hex::decode(invitation_id).ok().filter(|d| d.len() == 32).ok_or_else(unknown)?;
    let invitation = state
        .store()
        .get::<Invitation>(cf::INVITATIONS, &token_digest)?
        .filter(|i| i.account_uuid == by.account_uuid && i.expires_at > state.clock().now())
        .ok_or_else(unknown)?;
    Ok((token_digest, invitation))
}

/// Cancels an open invitation: its link no longer lets anyone in.
pub async fn cancel_invitation<R>(state: &R, by: &Signed, invitation_id: &str) -> Result<OpenInvitation>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    let (token_digest, invitation) = owned_invitation(state, by, invitation_id)?;
    let mut change = Change::new();
    change.delete(cf::INVITATIONS, &token_digest);
    change.delete(cf::ACCOUNT_INVITATIONS, &keys::account_invitation(&invitation.account_uuid, &token_digest));
    apply(state, change).await?;
    Ok(OpenInvitation {
        invitation_id: invitation_id.to_owned(),
        email: invitation.email,
        role: invitation.role.as_str(),
        invited_at: invitation.invited_at,
        expires_at: invitation.expires_at,
    })
}

/// A new link for an open invitation, open for another [`INVITATION_MS`]:
/// the old link stops working (it may have been lost or seen by another).
pub async fn renew_invitation<R>(state: &R, by: &Signed, invitation_id: &str) -> Result<NewInvitation>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    let (token_digest, invitation) = owned_invitation(state, by, invitation_id)?;
    let now = state.clock().now();
    let mut change = Change::new();
    change.delete(cf::INVITATIONS, &token_digest);
    change.delete(cf::ACCOUNT_INVITATIONS, &keys::account_invitation(&invitation.account_uuid, &token_digest));
    let made =
        put_invitation(&mut change, Invitation { invited_at: now, expires_at: now.plus(INVITATION_MS), ..invitation });
    apply(state, change).await?;
    Ok(made)
}

/// An open invitation, with its account's name for the page.
pub fn invitation<R>(state: &R, token: &str) -> Result<(Invitation, Account)>
where
    R: HasStore + HasRegistry + HasClock,
{
    let invitation: Invitation = state
        .store()
        .get(cf::INVITATIONS, &digest(token))?
        .filter(|i: &Invitation| i.expires_at > state.clock().now())
        .ok_or_else(|| Error::detail(Code::NotFound, "this invitation is unknown, used or expired"))?;
    let account = Account::of(state, &invitation.account_uuid)?;
    Ok((invitation, account))
}

/// The person an invitation will make, kept with the ceremony.
#[derive(serde::Serialize, serde::Deserialize)]
struct Registering {
    person_id: String,
    name: String,
    registration: PasskeyRegistration,
}

/// Asks the invited person's authenticator for a new passkey.
pub async fn begin_registration<R>(state: &R, token: &str, name: &str) -> Result<(String, Value)>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome + HasCeremonies,
{
    let (invitation, _) = invitation(state, token)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(invalid(format!("a name is 1 to {MAX_NAME} characters on one line")));
    }
    let person_id = svc_core::ids::uuid_v4(svc_clock::random::<16>());
    let handle = Uuid::parse_str(&person_id).map_err(Error::internal)?;
    let rp = relying_party::relying_party(state.config())?;
    let (options, registration) =
        rp.start_passkey_registration(handle, &invitation.email, name, None).map_err(relying_party::refused)?;
    let registering = Registering { person_id, name: name.to_owned(), registration };
    let mut change = Change::new();
    let subject = svc_core::b64::url_encode(&digest(token));
    let kind = (CeremonyKind::Register, invitation.account_uuid.as_str());
    let id = begin_ceremony(state, &mut change, kind, subject, json_bytes(&registering)?)?;
    apply(state, change).await?;
    Ok((id, serde_json::to_value(options).map_err(Error::internal)?))
}

/// Checks the new passkey, makes the person, adds the passkey as a
/// sealing key of the business, uses up the invitation and signs in.
pub async fn finish_registration<R>(
    state: &R,
    ceremony_id: &str,
    answer: &RegisterPublicKeyCredential,
) -> Result<NewSession>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome,
{
    let mut change = Change::new();
    let ceremony = take_ceremony(state, &mut change, ceremony_id, CeremonyKind::Register)?;
    let token_digest = svc_core::b64::url_decode(&ceremony.subject).ok_or_else(|| Error::internal("ceremony"))?;
    let invitation: Invitation = state
        .store()
        .get(cf::INVITATIONS, &token_digest)?
        .ok_or_else(|| Error::detail(Code::NotFound, "this invitation was used meanwhile"))?;
    let registering: Registering = serde_json::from_slice(&ceremony.state).map_err(Error::internal)?;
    let rp = relying_party::relying_party(state.config())?;
    let credential =
        rp.finish_passkey_registration(answer, &registering.registration).map_err(relying_party::refused)?;
    let public = public_key(&credential)?;
    let now = state.clock().now();
    if sessions::person_by_email(state, &invitation.email)?.is_some() {
        return Err(invalid("this address already belongs to a person of a business portal"));
    }
    // A business's passkey is also its sealing key; an AI company's only
    // signs its people in.
    let company = Account::of(state, &invitation.account_uuid)?.company;
    let key = sealing_key(state, &invitation.account_uuid, &public, Some(invitation.role), now)?;
    let person = Person {
        person_id: registering.person_id,
        account_uuid: invitation.account_uuid.clone(),
        email: invitation.email.clone(),
        name: registering.name,
        role: invitation.role,
        passkeys: vec![PersonPasskey {
            key_id: key.key_id.clone(),
            credential: json_bytes(&credential)?,
            added_at: now,
        }],
        added_at: now,
        removed_at: None,
    };
    change.delete(cf::INVITATIONS, &token_digest);
    change.delete(cf::ACCOUNT_INVITATIONS, &keys::account_invitation(&invitation.account_uuid, &token_digest));
    change.require_absent(cf::PEOPLE_EMAILS, person.email.as_bytes());
    change.put(
        cf::PEOPLE_EMAILS,
        person.email.as_bytes(),
        &PersonRef { account_uuid: person.account_uuid.clone(), person_id: person.person_id.clone() },
    );
    change.put(cf::PEOPLE, &keys::person(&person.account_uuid, &person.person_id), &person);
    if !company {
        add_key(state, &mut change, &key, svc_core::custody::Custody::OwnKey, now);
    }
    let session = open_session(&mut change, &person, key.key_id, now);
    apply(state, change).await?;
    Ok(session)
}

/// Every person of a business, in the order they joined.
pub fn people(state: &impl HasStore, business_uuid: &str) -> Result<Vec<Person>> {
    let mut people: Vec<Person> = state
        .store()
        .scan::<Person>(cf::PEOPLE, &keys::prefix(&[business_uuid]), None, MAX_PEOPLE + 1)?
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    people.sort_by_key(|p| p.added_at);
    Ok(people)
}

/// The other person of `by`'s business an owner acts on, as read.
fn other_person(state: &impl HasStore, by: &Signed, person_id: &str) -> Result<Person> {
    by.require(&[PasskeyRole::Owner], "changing people")?;
    if person_id == by.person_id {
        return Err(invalid("an owner does not change their own role or remove themselves; another owner does"));
    }
    sessions::person(state, &by.account_uuid, person_id)?
        .filter(|p| p.removed_at.is_none())
        .ok_or_else(|| Error::new(Code::NotFound))
}

/// An owner sets another person's role; their passkeys take the role too.
pub async fn set_role<R>(state: &R, by: &Signed, person_id: &str, role: PasskeyRole) -> Result<()>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    Account::of(state, &by.account_uuid)?.check_role(role)?;
    let as_read = other_person(state, by, person_id)?;
    let mut change = Change::new();
    let key = keys::person(&by.account_uuid, person_id);
    change.require_unchanged(cf::PEOPLE, &key, &as_read);
    change.put(cf::PEOPLE, &key, &Person { role, ..as_read.clone() });
    for passkey in &as_read.passkeys {
        if let Some(mut stored) = state.registry().passkey(&passkey.key_id)? {
            stored.role = Some(role);
            change.put(cf::PASSKEYS, passkey.key_id.as_bytes(), &stored);
        }
    }
    apply(state, change).await
}

/// Takes a revoked passkey off the person who holds it, in `change`, so
/// no session it opened and no sign-in with it goes on (the key itself
/// stays in the business's key history). Nothing when no person holds it.
pub fn drop_passkey(state: &impl HasStore, change: &mut Change, business_uuid: &str, key_id: &str) -> Result<()> {
    for as_read in people(state, business_uuid)? {
        if as_read.passkeys.iter().any(|p| p.key_id == key_id) {
            let key = keys::person(business_uuid, &as_read.person_id);
            let mut person = as_read.clone();
            person.passkeys.retain(|p| p.key_id != key_id);
            change.require_unchanged(cf::PEOPLE, &key, &as_read);
            change.put(cf::PEOPLE, &key, &person);
        }
    }
    Ok(())
}

/// An owner removes another person: their passkeys are revoked from now
/// (what they sealed before stands) and their sessions end at once.
pub async fn remove<R>(state: &R, by: &Signed, person_id: &str) -> Result<()>
where
    R: HasStore + HasRegistry + HasClock + HasHome,
{
    let as_read = other_person(state, by, person_id)?;
    let now = state.clock().now();
    let mut change = Change::new();
    let key = keys::person(&by.account_uuid, person_id);
    change.require_unchanged(cf::PEOPLE, &key, &as_read);
    change.put(cf::PEOPLE, &key, &Person { removed_at: Some(now), ..as_read.clone() });
    change.delete(cf::PEOPLE_EMAILS, as_read.email.as_bytes());
    change.delete(cf::NOTICES_SEEN, &key);
    for passkey in &as_read.passkeys {
        if let Some(stored) = state.registry().passkey(&passkey.key_id)?
            && stored.revocation_effective_from.is_none()
        {
            revoke_key(&mut change, stored, now, None, now);
        }
    }
    apply(state, change).await
}
