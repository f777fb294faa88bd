//! The business portal's windows: how long a session lasts, and how a
//! passkey request's id orders requests by expiry.

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
}
