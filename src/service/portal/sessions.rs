//! Signing in with a passkey, and the session a cookie names: it ends after
//! 30 idle minutes, 12 hours after sign-in, at sign-out, and at once when the
//! person is removed (every request reads the person again).

use serde_json::Value;
use svc_core::problem::Code;
use svc_core::time::UnixMs;
use webauthn_rs::prelude::{Passkey, PasskeyAuthentication, PublicKeyCredential};

use super::relying_party;
use super::{Signed, apply, digest, invalid, secret};
use crate::region::Region;
use crate::replication::Change;
use crate::service::{Error, Result};
use crate::store::model::*;
use crate::store::{cf, keys};
use svc_core::portal::{CEREMONY_MS, ceremony_id_prefix};

/// `last_seen` is written again only after this long, so reading pages is
/// not a write each time.
const TOUCH_MS: i64 = 60_000;
/// The longest e-mail address (RFC 5321's path limit).
pub const MAX_EMAIL: usize = 254;

/// A new session's cookie value and the token its forms carry.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub cookie: String,
    pub csrf: String,
}

/// An e-mail address as stored: trimmed, lower case, one `@` with text on
/// both sides, at most 254 characters.
pub fn normalise_email(email: &str) -> Result<String> {
    let email = email.trim().to_lowercase();
    let ok = email.len() <= MAX_EMAIL
        && email.split('@').count() == 2
        && email.split('@').all(|part| !part.is_empty())
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok { Ok(email) } else { Err(invalid("an e-mail address is name@domain, at most 254 characters")) }
}

/// The person an e-mail address signs in as, if present and not removed.
pub fn person_by_email(state: &Region, email: &str) -> Result<Option<Person>> {
    let Some(at) = state.store.get::<PersonRef>(cf::PEOPLE_EMAILS, email.as_bytes())? else { return Ok(None) };
    let person: Option<Person> = state.store.get(cf::PEOPLE, &keys::person(&at.account_uuid, &at.person_id))?;
    Ok(person.filter(|p| p.removed_at.is_none()))
}

pub fn person(state: &Region, business_uuid: &str, person_id: &str) -> Result<Option<Person>> {
    Ok(state.store.get(cf::PEOPLE, &keys::person(business_uuid, person_id))?)
}

pub use super::open_ceremonies::MAX_OPEN_CEREMONIES;

/// Stores a ceremony under a fresh id, in `change`; refused while
/// [`MAX_OPEN_CEREMONIES`] are open, so a flood of sign-in requests cannot
/// grow the store.
pub(super) fn begin_ceremony(
    state: &Region,
    change: &mut Change,
    kind: CeremonyKind,
    subject: String,
    state_json: Vec<u8>,
) -> Result<String> {
    // Only home writes; the open ceremonies are counted where they are kept.
    state.home()?;
    let now = state.clock.now();
    let expires_at = now.plus(CEREMONY_MS);
    let id = format!("{}{}", ceremony_id_prefix(expires_at), svc_core::b64::url_encode(&crate::clock::random::<18>()));
    if !state.ceremonies.admit(&state.store, &id, now)? {
        return Err(Error::retry_after(
            Code::Unavailable,
            60_000,
            "too many passkey requests are open; try again in a minute",
        ));
    }
    let ceremony = Ceremony { kind, subject, state: state_json, expires_at };
    change.put(cf::CEREMONIES, id.as_bytes(), &ceremony);
    Ok(id)
}

/// Takes a ceremony of `kind` (it is deleted in `change`, so an answer is
/// used once); an unknown, expired or other ceremony is refused.
pub(super) fn take_ceremony(state: &Region, change: &mut Change, id: &str, kind: CeremonyKind) -> Result<Ceremony> {
    let ceremony: Ceremony = state
        .store
        .get(cf::CEREMONIES, id.as_bytes())?
        .filter(|c: &Ceremony| c.kind == kind && c.expires_at > state.clock.now())
        .ok_or_else(|| {
            Error::detail(Code::PasskeyRefused, "this passkey request expired or was already used; start again")
        })?;
    change.require_unchanged(cf::CEREMONIES, id.as_bytes(), &ceremony);
    change.delete(cf::CEREMONIES, id.as_bytes());
    Ok(ceremony)
}

/// The stored credentials of a person's passkeys.
pub(super) fn credentials(person: &Person) -> Result<Vec<Passkey>> {
    person
        .passkeys
        .iter()
        .map(|p| serde_json::from_slice(&p.credential).map_err(|e| Error::internal(format!("stored passkey: {e}"))))
        .collect()
}

/// Asks the person's authenticator to sign in: the options for
/// `navigator.credentials.get` and the ceremony's id.
pub async fn begin_sign_in(state: &Region, email: &str) -> Result<(String, Value)> {
    let email = normalise_email(email)?;
    let person = person_by_email(state, &email)?.filter(|p| !p.passkeys.is_empty()).ok_or_else(|| {
        Error::detail(Code::SignInRequired, "no person of a business portal signs in with this address")
    })?;
    let rp = relying_party::relying_party(&state.config)?;
    let (options, ceremony) =
        rp.start_passkey_authentication(&credentials(&person)?).map_err(relying_party::refused)?;
    let mut change = Change::new();
    let subject = format!("{}/{}", person.account_uuid, person.person_id);
    let id = begin_ceremony(state, &mut change, CeremonyKind::SignIn, subject, json_bytes(&ceremony)?)?;
    apply(state, change).await?;
    Ok((id, serde_json::to_value(options).map_err(Error::internal)?))
}

/// Checks the authenticator's answer and opens a session.
pub async fn finish_sign_in(state: &Region, ceremony_id: &str, answer: &PublicKeyCredential) -> Result<NewSession> {
    let mut change = Change::new();
    let ceremony = take_ceremony(state, &mut change, ceremony_id, CeremonyKind::SignIn)?;
    let (business_uuid, person_id) = ceremony.subject.split_once('/').ok_or_else(|| Error::internal("ceremony"))?;
    let as_read = person(state, business_uuid, person_id)?
        .filter(|p| p.removed_at.is_none())
        .ok_or_else(|| Error::detail(Code::SignInRequired, "this person was removed from the portal"))?;
    let auth: PasskeyAuthentication = serde_json::from_slice(&ceremony.state).map_err(Error::internal)?;
    let rp = relying_party::relying_party(&state.config)?;
    let result = rp.finish_passkey_authentication(answer, &auth).map_err(relying_party::refused)?;
    // The sign counter moves on (webauthn-rs refuses one that went back).
    let mut person = as_read.clone();
    let mut key_id = None;
    for stored in &mut person.passkeys {
        let mut credential: Passkey = serde_json::from_slice(&stored.credential).map_err(Error::internal)?;
        if credential.cred_id() == result.cred_id() {
            credential.update_credential(&result);
            stored.credential = json_bytes(&credential)?;
            key_id = Some(stored.key_id.clone());
        }
    }
    let key_id = key_id.ok_or_else(|| relying_party::refused("a passkey this person does not hold"))?;
    let key = keys::person(business_uuid, person_id);
    change.require_unchanged(cf::PEOPLE, &key, &as_read);
    change.put(cf::PEOPLE, &key, &person);
    let session = open_session(&mut change, &person, key_id, state.clock.now());
    apply(state, change).await?;
    Ok(session)
}

/// A session for `person`, written in `change`.
pub(super) fn open_session(change: &mut Change, person: &Person, key_id: String, now: UnixMs) -> NewSession {
    let (cookie, cookie_digest) = secret();
    let (csrf, _) = secret();
    let session = PortalSession {
        person: PersonRef { account_uuid: person.account_uuid.clone(), person_id: person.person_id.clone() },
        key_id,
        csrf: csrf.clone(),
        created_at: now,
        last_seen: now,
    };
    change.put(cf::PORTAL_SESSIONS, &cookie_digest, &session);
    NewSession { cookie, csrf }
}

/// The person a session cookie signs in, while the session lasts and the
/// person is still there.
pub async fn resolve(state: &Region, cookie: &str) -> Result<Signed> {
    let key = digest(cookie);
    let ended = || Error::detail(Code::SignInRequired, "your session ended; sign in again");
    let session: PortalSession = state.store.get(cf::PORTAL_SESSIONS, &key)?.ok_or_else(ended)?;
    let now = state.clock.now();
    if svc_core::portal::session_ended(session.created_at, session.last_seen, now) {
        return Err(ended());
    }
    let person = person(state, &session.person.account_uuid, &session.person.person_id)?
        .filter(|p| p.removed_at.is_none() && p.passkeys.iter().any(|k| k.key_id == session.key_id))
        .ok_or_else(ended)?;
    if now.0 >= session.last_seen.0 + TOUCH_MS {
        let mut change = Change::new();
        change.put(cf::PORTAL_SESSIONS, &key, &PortalSession { last_seen: now, ..session.clone() });
        apply(state, change).await?;
    }
    Ok(Signed {
        company: state.registry.company(&person.account_uuid)?.is_some(),
        account_uuid: person.account_uuid,
        person_id: person.person_id,
        name: person.name,
        role: person.role,
        key_id: session.key_id,
        csrf: session.csrf,
    })
}

/// Ends the session the cookie names.
pub async fn sign_out(state: &Region, cookie: &str) -> Result<()> {
    let mut change = Change::new();
    change.delete(cf::PORTAL_SESSIONS, &digest(cookie));
    apply(state, change).await
}

pub(super) fn json_bytes(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(Error::internal)
}
