//! Signing in with a passkey, and the session a cookie names: it ends after
//! 30 idle minutes, 12 hours after sign-in, at sign-out, and at once when the
//! person is removed or the passkey it was opened with is revoked or
//! compromised (every request reads the person and the key again).

use serde_json::Value;
use svc_core::problem::Code;
use svc_core::time::UnixMs;
use webauthn_rs::prelude::{Passkey, PasskeyAuthentication, PublicKeyCredential};

use super::relying_party;
use super::{Signed, apply, digest, invalid, secret};
use crate::region::parts::{HasCeremonies, HasClock, HasConfig, HasHome, HasKeys, HasLimits, HasRegistry, HasStore};
use crate::replication::Change;
use crate::service::{Error, Result};
use svc_core::portal::{CEREMONY_MS, ceremony_id_prefix};
use svc_store::model::*;
use svc_store::{cf, keys};

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
pub fn person_by_email(state: &impl HasStore, email: &str) -> Result<Option<Person>> {
    let Some(at) = state.store().get::<PersonRef>(cf::PEOPLE_EMAILS, email.as_bytes())? else { return Ok(None) };
    let person: Option<Person> = state.store().get(cf::PEOPLE, &keys::person(&at.account_uuid, &at.person_id))?;
    Ok(person.filter(|p| p.removed_at.is_none()))
}

pub fn person(state: &impl HasStore, business_uuid: &str, person_id: &str) -> Result<Option<Person>> {
    Ok(state.store().get(cf::PEOPLE, &keys::person(business_uuid, person_id))?)
}

pub use crate::region::open_ceremonies::MAX_OPEN_CEREMONIES;

/// Stores a ceremony of `account` under a fresh id, in `change`; refused
/// while [`MAX_OPEN_CEREMONIES`] are open (`503`), or the account's share
/// ([`crate::region::open_ceremonies::MAX_OPEN_PER_ACCOUNT`], `429`), so no flood
/// grows the store or takes another account's places.
pub(super) fn begin_ceremony<R>(
    state: &R,
    change: &mut Change,
    (kind, account): (CeremonyKind, &str),
    subject: String,
    state_json: Vec<u8>,
) -> Result<String>
where
    R: HasStore + HasClock + HasHome + HasCeremonies,
{
    // Only home writes; the open ceremonies are counted where they are kept.
    state.home()?;
    let now = state.clock().now();
    let expires_at = now.plus(CEREMONY_MS);
    let tag = crate::region::open_ceremonies::account_tag(account);
    let random = svc_core::b64::url_encode(&svc_clock::random::<18>());
    let id = format!("{}{tag}{random}", ceremony_id_prefix(expires_at));
    match state.ceremonies().admit(state.store(), &id, now)? {
        Ok(()) => {}
        Err(crate::region::open_ceremonies::Full::Node) => {
            return Err(Error::retry_after(
                Code::Unavailable,
                60_000,
                "too many passkey requests are open; try again in a minute",
            ));
        }
        Err(crate::region::open_ceremonies::Full::Account) => {
            return Err(Error::retry_after(
                Code::RateLimited,
                60_000,
                "this account has too many passkey requests open; finish or wait for one",
            ));
        }
    }
    let ceremony = Ceremony { kind, subject, state: state_json, expires_at };
    change.put(cf::CEREMONIES, id.as_bytes(), &ceremony);
    Ok(id)
}

/// Takes a ceremony of `kind` (it is deleted in `change`, so an answer is
/// used once); an unknown, expired or other ceremony is refused.
pub(super) fn take_ceremony(
    state: &(impl HasStore + HasClock),
    change: &mut Change,
    id: &str,
    kind: CeremonyKind,
) -> Result<Ceremony> {
    let ceremony: Ceremony = state
        .store()
        .get(cf::CEREMONIES, id.as_bytes())?
        .filter(|c: &Ceremony| c.kind == kind && c.expires_at > state.clock().now())
        .ok_or_else(|| {
            Error::detail(Code::PasskeyRefused, "this passkey request expired or was already used; start again")
        })?;
    change.require_unchanged(cf::CEREMONIES, id.as_bytes(), &ceremony);
    change.delete(cf::CEREMONIES, id.as_bytes());
    Ok(ceremony)
}

/// Whether a person's passkey may act now: a business's passkey is one of
/// its keys, live until its revocation takes effect or its compromise; an
/// AI company's only signs its people in and is never registered as a key.
pub fn passkey_live(state: &impl HasRegistry, account_uuid: &str, key_id: &str, now: UnixMs) -> Result<bool> {
    match state.registry().passkey(key_id)? {
        Some(key) => Ok(key.business_uuid == account_uuid
            && key.valid_from <= now
            && key.valid_until.is_none_or(|t| now < t)
            && key.revocation_effective_from.is_none_or(|t| now < t)
            && key.compromised_at.is_none_or(|t| now < t)),
        None => Ok(state.registry().company(account_uuid)?.is_some()),
    }
}

/// The relying party's credentials of a person's passkeys live now.
fn live_passkeys(state: &impl HasRegistry, person: &Person, now: UnixMs) -> Result<Vec<Passkey>> {
    let mut live = Vec::new();
    for stored in &person.passkeys {
        if passkey_live(state, &person.account_uuid, &stored.key_id, now)? {
            live.push(serde_json::from_slice::<Passkey>(&stored.credential).map_err(Error::internal)?);
        }
    }
    Ok(live)
}

/// What a sign-in ticket carries (`svc_core::portal::seal_ticket`): the
/// address, until when, and the relying party's state for the answer with
/// its credentials left out (the browser can read a ticket; the passkeys
/// are read again at the second step), so every ticket has one shape.
#[derive(serde::Serialize, serde::Deserialize)]
struct SignInTicket {
    email: String,
    expires_at: UnixMs,
    #[serde(with = "serde_bytes")]
    authentication: Vec<u8>,
}

/// Where webauthn-rs's serialised authentication state keeps the
/// credentials it accepts (its persistence format, `danger-allow-state-
/// serialisation`); the sign-in test fails if a new version moves them.
fn with_credentials(mut authentication: Value, passkeys: &[Passkey]) -> Result<Value> {
    let credentials = passkeys
        .iter()
        .map(|p| serde_json::to_value(p).map(|mut v| v["cred"].take()))
        .collect::<std::result::Result<Vec<Value>, _>>()
        .map_err(Error::internal)?;
    let slot = authentication
        .get_mut("ast")
        .and_then(|ast| ast.get_mut("credentials"))
        .ok_or_else(|| Error::internal("webauthn-rs's authentication state has no ast.credentials"))?;
    *slot = Value::Array(credentials);
    Ok(authentication)
}

/// Asks the person's authenticator to sign in: a ticket for the second step
/// and the options for `navigator.credentials.get`. Nothing is stored: the
/// ticket carries the relying party's state under home's MAC. An address
/// that signs nobody in (unknown, removed, or with no live passkey) is
/// answered alike, with a stand-in passkey derived from it, so the answer
/// never tells whether a person exists. `client`'s share and the address
/// are each held to a rate.
pub async fn begin_sign_in<R>(state: &R, email: &str, client: Option<std::net::IpAddr>) -> Result<(String, Value)>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome + HasLimits,
{
    state.home()?;
    let email = normalise_email(email)?;
    let now = state.clock().now();
    let share = client.map_or_else(String::new, svc_core::limits::address_share);
    let limits = state.limits();
    for (ledger, key) in [(&limits.sign_ins_per_client, &share), (&limits.sign_ins_per_email, &email)] {
        if let Err(wait_ms) = ledger.take(key, now, 1) {
            return Err(Error::retry_after(
                Code::RateLimited,
                wait_ms,
                "too many sign-ins from here or for this address",
            ));
        }
    }
    let mut passkeys = match person_by_email(state, &email)? {
        Some(person) => live_passkeys(state, &person, now)?,
        None => Vec::new(),
    };
    if passkeys.is_empty() {
        passkeys.push(decoy(state, &email)?);
    }
    let rp = relying_party::relying_party(state.config())?;
    let (options, authentication) = rp.start_passkey_authentication(&passkeys).map_err(relying_party::refused)?;
    let bare = with_credentials(serde_json::to_value(&authentication).map_err(Error::internal)?, &[])?;
    let ticket = SignInTicket { email, expires_at: now.plus(CEREMONY_MS), authentication: json_bytes(&bare)? };
    let ticket = postcard::to_stdvec(&ticket).map_err(Error::internal)?;
    let sealed = svc_core::portal::seal_ticket(&state.keys().portal_secret, &ticket);
    let mut options = serde_json::to_value(options).map_err(Error::internal)?;
    // Transports are a browser's hint, kept from an attested registration
    // (packed, TPM) and absent from a stand-in: none is offered, so the two
    // always look alike.
    if let Some(allowed) = options.pointer_mut("/publicKey/allowCredentials").and_then(Value::as_array_mut) {
        for credential in allowed.iter_mut().filter_map(Value::as_object_mut) {
            credential.remove("transports");
        }
    }
    Ok((sealed, options))
}

/// The stand-in passkey offered for an address that signs nobody in.
fn decoy(state: &impl HasKeys, email: &str) -> Result<Passkey> {
    use webauthn_rs::prelude::*;
    let (id, key) = svc_core::portal::decoy_passkey(&state.keys().portal_secret, email);
    let jwk = key.verifying_key().to_jwk();
    let coordinate =
        |c: Option<&str>| c.and_then(svc_core::b64::url_decode).ok_or_else(|| Error::internal("decoy key"));
    let credential = Credential {
        cred_id: id,
        cred: COSEKey {
            type_: COSEAlgorithm::ES256,
            key: COSEKeyType::EC_EC2(COSEEC2Key {
                curve: ECDSACurve::SECP256R1,
                x: coordinate(jwk.x.as_deref())?,
                y: coordinate(jwk.y.as_deref())?,
            }),
        },
        counter: 0,
        transports: None,
        user_verified: true,
        backup_eligible: false,
        backup_state: false,
        registration_policy: Default::default(),
        extensions: Default::default(),
        attestation: ParsedAttestation { data: ParsedAttestationData::None, metadata: AttestationMetadata::None },
        attestation_format: AttestationFormat::None,
    };
    Ok(Passkey::from(credential))
}

/// Checks the authenticator's answer to a sign-in ticket and opens a
/// session. The ticket is used once: its digest is kept until it expires.
pub async fn finish_sign_in<R>(state: &R, ticket: &str, answer: &PublicKeyCredential) -> Result<NewSession>
where
    R: HasConfig + HasStore + HasRegistry + HasKeys + HasClock + HasHome,
{
    state.home()?;
    let now = state.clock().now();
    let refused =
        || Error::detail(Code::PasskeyRefused, "this passkey request expired or was already used; start again");
    let payload = svc_core::portal::open_ticket(&state.keys().portal_secret, ticket).ok_or_else(refused)?;
    let ticket_of: SignInTicket = postcard::from_bytes(&payload).map_err(|_| refused())?;
    if ticket_of.expires_at <= now {
        return Err(refused());
    }
    let used = [
        ceremony_id_prefix(ticket_of.expires_at).as_bytes(),
        b"used-",
        svc_core::b64::url_encode(&svc_core::digest::sha256(ticket.as_bytes())).as_bytes(),
    ]
    .concat();
    if state.store().get::<Ceremony>(cf::CEREMONIES, &used)?.is_some() {
        return Err(refused());
    }
    let as_read = person_by_email(state, &ticket_of.email)?
        .ok_or_else(|| relying_party::refused("no passkey of this address signs anyone in"))?;
    let (business_uuid, person_id) = (as_read.account_uuid.clone(), as_read.person_id.clone());
    let live = live_passkeys(state, &as_read, now)?;
    let bare: Value = serde_json::from_slice(&ticket_of.authentication).map_err(|_| refused())?;
    let auth: PasskeyAuthentication =
        serde_json::from_value(with_credentials(bare, &live)?).map_err(Error::internal)?;
    let rp = relying_party::relying_party(state.config())?;
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
    let mut change = Change::new();
    let marker = Ceremony {
        kind: CeremonyKind::SignIn,
        subject: String::new(),
        state: Vec::new(),
        expires_at: ticket_of.expires_at,
    };
    change.require_absent(cf::CEREMONIES, &used);
    change.put(cf::CEREMONIES, &used, &marker);
    let key = keys::person(&business_uuid, &person_id);
    change.require_unchanged(cf::PEOPLE, &key, &as_read);
    change.put(cf::PEOPLE, &key, &person);
    let session = open_session(&mut change, &person, key_id, now);
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
pub async fn resolve<R>(state: &R, cookie: &str) -> Result<Signed>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    let key = digest(cookie);
    let ended = || Error::detail(Code::SignInRequired, "your session ended; sign in again");
    let session: PortalSession = state.store().get(cf::PORTAL_SESSIONS, &key)?.ok_or_else(ended)?;
    let now = state.clock().now();
    if svc_core::portal::session_ended(session.created_at, session.last_seen, now) {
        return Err(ended());
    }
    let person = person(state, &session.person.account_uuid, &session.person.person_id)?
        .filter(|p| p.removed_at.is_none() && p.passkeys.iter().any(|k| k.key_id == session.key_id))
        .ok_or_else(ended)?;
    if !passkey_live(state, &person.account_uuid, &session.key_id, now)? {
        return Err(ended());
    }
    crate::service::publishing::note_use(state, &person.account_uuid, now)?;
    if now.0 >= session.last_seen.0 + TOUCH_MS {
        let mut change = Change::new();
        change.put(cf::PORTAL_SESSIONS, &key, &PortalSession { last_seen: now, ..session.clone() });
        apply(state, change).await?;
    }
    Ok(Signed {
        company: state.registry().company(&person.account_uuid)?.is_some(),
        account_uuid: person.account_uuid,
        person_id: person.person_id,
        name: person.name,
        role: person.role,
        key_id: session.key_id,
        csrf: session.csrf,
    })
}

/// Ends the session the cookie names.
pub async fn sign_out(state: &(impl HasClock + HasHome), cookie: &str) -> Result<()> {
    let mut change = Change::new();
    change.delete(cf::PORTAL_SESSIONS, &digest(cookie));
    apply(state, change).await
}

pub(super) fn json_bytes(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(Error::internal)
}
