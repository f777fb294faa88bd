//! Sandbox credentials (retrieval 5, publishing 4.1 and 5): a key's grant,
//! which introduces the key on its first request, and the one-hour bearer
//! token returned with the registration. Production accepts neither.

use crate::digest::sha256_prefixed;
use crate::time::{DAY, HOUR, MINUTE, UnixMs};

/// The header carrying a sandbox grant. It is not part of the signature.
pub const GRANT_HEADER: &str = "svc-sandbox-key";
pub const GRANT_PREFIX: &str = "svc_sbxk1.";
pub const GRANT_MAX_CHARS: usize = 8192;
/// How long after registration the bearer token is accepted.
pub const BEARER_VALID_MS: i64 = HOUR;

/// A grant names the key it introduces; it holds no secret.
pub fn grant_for(key_id: &str) -> String {
    format!("{GRANT_PREFIX}{}", crate::b64::url_encode(format!("{{\"key_id\":\"{key_id}\"}}").as_bytes()))
}

/// The header's form: begins `svc_sbxk1.`, 1 to 8192 characters.
pub fn is_grant(text: &str) -> bool {
    text.starts_with(GRANT_PREFIX) && text.chars().count() <= GRANT_MAX_CHARS
}

/// Whether a request introduces a key the sandbox has not seen: it must
/// carry exactly the key's grant.
pub fn introduces(presented: Option<&str>, key_grant: &str) -> bool {
    presented.is_some_and(|g| is_grant(g) && g == key_grant)
}

/// Whether the sandbox takes a request from a key: a key it has already
/// seen, or one whose grant the request carries.
pub fn admits(introduced: bool, key_grant: Option<&str>, presented: Option<&str>) -> bool {
    introduced || key_grant.is_some_and(|g| introduces(presented, g))
}

/// What the store keeps of a bearer token: its hash, never the token.
pub fn bearer_digest(token: &str) -> String {
    sha256_prefixed(token.as_bytes())
}

/// Whether `token` is the key's bearer token and still within its hour.
pub fn bearer_accepted(token: &str, stored_digest: &str, registered_at: UnixMs, now: UnixMs) -> bool {
    bearer_digest(token) == stored_digest && now <= registered_at.plus(BEARER_VALID_MS) && now >= registered_at
}

/// Caller-created sandbox data is kept this long from its last use (R1.42).
pub const CALLER_DATA_KEPT_MS: i64 = 90 * DAY;

/// Whether a caller's sandbox data has expired: 90 days after the later of
/// its creation and the end of the last day it used the sandbox.
pub fn caller_expired(created_at: UnixMs, last_used_day: Option<UnixMs>, now: UnixMs) -> bool {
    let last = last_used_day.map_or(created_at, |day| day.plus(DAY).max(created_at));
    now >= last.plus(CALLER_DATA_KEPT_MS)
}

/// A time of day in UTC, `HH:MM`, as minutes after midnight.
pub fn time_of_day(text: &str) -> Option<i64> {
    let (hours, minutes) = text.split_once(':')?;
    let two_digits =
        |s: &str| (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<i64>().ok())?;
    let (hours, minutes) = (two_digits(hours)?, two_digits(minutes)?);
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

/// The first moment after `after` at `minute_of_day` (UTC): when the
/// nightly republish that follows the one at `after` is due (R1.41).
pub fn next_republish(after: UnixMs, minute_of_day: i64) -> UnixMs {
    let midnight = after.0.div_euclid(DAY) * DAY;
    let today = midnight + minute_of_day * MINUTE;
    UnixMs(if today > after.0 { today } else { today + DAY })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_of_day_is_two_digit_hours_and_minutes() {
        assert_eq!(time_of_day("03:00"), Some(180));
        assert_eq!(time_of_day("23:59"), Some(23 * 60 + 59));
        for bad in ["3:00", "24:00", "12:60", "12-00", "", "ab:cd", "+1:00"] {
            assert_eq!(time_of_day(bad), None, "{bad}");
        }
    }

    // rule: R1.42
    #[test]
    fn caller_data_is_kept_ninety_days_from_the_end_of_its_last_day_of_use() {
        let created = UnixMs(1_795_305_600_000); // 2026-11-22T00:00:00Z
        assert!(!caller_expired(created, None, created.plus(CALLER_DATA_KEPT_MS - 1)));
        assert!(caller_expired(created, None, created.plus(CALLER_DATA_KEPT_MS)));
        let used = created.plus(10 * DAY);
        let until = used.plus(DAY + CALLER_DATA_KEPT_MS);
        assert!(!caller_expired(created, Some(used), until.minus(1)), "kept through its 90th day");
        assert!(caller_expired(created, Some(used), until));
    }

    // rule: R1.41
    #[test]
    fn the_next_republish_is_the_next_time_the_clock_shows_the_hour() {
        let day = UnixMs(1_795_305_600_000); // 2026-11-22T00:00:00Z
        assert_eq!(next_republish(day.plus(2 * HOUR), 180), day.plus(3 * HOUR));
        assert_eq!(next_republish(day.plus(3 * HOUR), 180), day.plus(DAY + 3 * HOUR), "not twice at the same minute");
        assert_eq!(next_republish(day.plus(5 * HOUR), 180), day.plus(DAY + 3 * HOUR));
    }

    // rule: R5.40, R5.41, R5.42, P5.10
    #[test]
    fn a_grant_introduces_only_its_own_key() {
        let grant = grant_for("abc");
        assert!(is_grant(&grant));
        assert!(introduces(Some(&grant), &grant));
        assert!(!introduces(Some(&grant_for("other")), &grant));
        assert!(!introduces(None, &grant));
        assert!(!is_grant("svc_sbxk2.x"));
        assert!(!is_grant(&format!("{GRANT_PREFIX}{}", "a".repeat(GRANT_MAX_CHARS))));
        assert!(admits(true, None, None));
        assert!(admits(false, Some(&grant), Some(&grant)));
        assert!(!admits(false, Some(&grant), None));
        assert!(!admits(false, None, Some(&grant)));
    }

    // rule: P5.11
    #[test]
    fn a_bearer_token_lasts_one_hour_from_registration() {
        let at = UnixMs(1_000_000);
        let digest = bearer_digest("token");
        assert!(bearer_accepted("token", &digest, at, at.plus(HOUR)));
        assert!(!bearer_accepted("token", &digest, at, at.plus(HOUR + 1)));
        assert!(!bearer_accepted("other", &digest, at, at));
    }
}
