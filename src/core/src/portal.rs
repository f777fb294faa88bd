//! The business portal's windows: how long a session lasts, and how a
//! passkey request's id orders requests by expiry; the sign-in ticket the
//! browser carries instead of state the service keeps, and the stand-in
//! passkey an address that signs nobody in is answered with.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::keys::{Alg, SigningKey};
use crate::time::UnixMs;

/// A session ends this long after its last request.
pub const SESSION_IDLE_MS: i64 = 30 * 60_000;
/// And this long after sign-in, however busy.
pub const SESSION_LONGEST_MS: i64 = 12 * 60 * 60_000;
/// How long a person has to answer their authenticator.
pub const CEREMONY_MS: i64 = 5 * 60_000;

/// Whether a session signed in at `created_at` and last used at
/// `last_seen` has ended at `now`.
pub fn session_ended(created_at: UnixMs, last_seen: UnixMs, now: UnixMs) -> bool {
    now.0 >= last_seen.0.saturating_add(SESSION_IDLE_MS) || now.0 >= created_at.0.saturating_add(SESSION_LONGEST_MS)
}

/// A passkey request's id begins with its expiry as 16 hex digits, so ids
/// sort by expiry: the open ones are those from `ceremony_id_prefix(now)` on.
pub fn ceremony_id_prefix(expires_at: UnixMs) -> String {
    format!("{:016x}", expires_at.0.max(0))
}

/// A sign-in ticket: what the service needs to judge the authenticator's
/// answer, carried by the browser between the two steps under the
/// service's MAC, so beginning a sign-in costs the service no state.
pub fn seal_ticket(secret: &[u8; 32], payload: &[u8]) -> String {
    let tag = ticket_mac(secret, payload).finalize().into_bytes();
    format!("{}.{}", crate::b64::url_encode(payload), crate::b64::url_encode(&tag))
}

/// The payload of a ticket this service sealed; `None` for any other.
pub fn open_ticket(secret: &[u8; 32], ticket: &str) -> Option<Vec<u8>> {
    let (payload, tag) = ticket.split_once('.')?;
    let (payload, tag) = (crate::b64::url_decode(payload)?, crate::b64::url_decode(tag)?);
    ticket_mac(secret, &payload).verify_slice(&tag).ok()?;
    Some(payload)
}

fn ticket_mac(secret: &[u8; 32], payload: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(b"svc-portal-sign-in-ticket/1\0");
    mac.update(payload);
    mac
}

/// The stand-in passkey an e-mail address that signs nobody in is offered:
/// a credential id and a P-256 key derived from the address under the
/// service's secret, the same every time and like a real one, so the
/// answer to a sign-in never tells whether the address has a person.
pub fn decoy_passkey(secret: &[u8; 32], email: &str) -> (Vec<u8>, SigningKey) {
    let derive = |label: &[u8]| -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
        mac.update(label);
        mac.update(email.as_bytes());
        mac.finalize().into_bytes().into()
    };
    let id = derive(b"svc-portal-decoy-id/1\0").to_vec();
    // A seed that is no valid P-256 scalar (about 2^-32 of them) is derived again.
    let mut seed = derive(b"svc-portal-decoy-key/1\0");
    loop {
        if let Ok(key) = SigningKey::from_seed(Alg::Es256, &seed) {
            return (id, key);
        }
        seed = crate::digest::sha256(&seed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ends_idle_or_long_after_sign_in() {
        let at = UnixMs(1_000_000);
        assert!(!session_ended(at, at, UnixMs(at.0 + SESSION_IDLE_MS - 1)));
        assert!(session_ended(at, at, UnixMs(at.0 + SESSION_IDLE_MS)));
        let busy = UnixMs(at.0 + SESSION_LONGEST_MS - 1);
        assert!(!session_ended(at, busy, busy));
        assert!(session_ended(at, busy, UnixMs(at.0 + SESSION_LONGEST_MS)));
    }

    #[test]
    fn ceremony_ids_sort_by_expiry() {
        let early = ceremony_id_prefix(UnixMs(9));
        let late = ceremony_id_prefix(UnixMs(10_000_000_000_000));
        assert_eq!(early.len(), 16);
        assert!(early < late && format!("{early}zzz") < late);
    }

    #[test]
    fn a_ticket_opens_only_as_sealed_under_its_secret() {
        let secret = [7; 32];
        let ticket = seal_ticket(&secret, b"state");
        assert_eq!(open_ticket(&secret, &ticket).as_deref(), Some(&b"state"[..]));
        assert_eq!(open_ticket(&[8; 32], &ticket), None, "another secret");
        let (payload, tag) = ticket.split_once('.').unwrap();
        let other = crate::b64::url_encode(b"statf");
        assert_eq!(open_ticket(&secret, &format!("{other}.{tag}")), None, "another payload");
        assert_eq!(open_ticket(&secret, payload), None, "no tag");
        assert_eq!(open_ticket(&secret, "not a ticket"), None);
    }

    #[test]
    fn a_decoy_is_the_same_for_one_address_and_different_for_another() {
        let secret = [7; 32];
        let (id, key) = decoy_passkey(&secret, "nobody@example.com");
        let (again, same) = decoy_passkey(&secret, "nobody@example.com");
        assert_eq!((&id, key.verifying_key().thumbprint()), (&again, same.verifying_key().thumbprint()));
        let (other, other_key) = decoy_passkey(&secret, "somebody@example.com");
        assert_ne!(id, other);
        assert_ne!(key.verifying_key().thumbprint(), other_key.verifying_key().thumbprint());
        assert_ne!(decoy_passkey(&[8; 32], "nobody@example.com").0, id, "another deployment's");
    }
}
