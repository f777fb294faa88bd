//! Instants as Unix milliseconds, and the RFC 3339 forms the spec uses.
//!
//! The clock is never read here: callers pass `now` in.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// An instant, in milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnixMs(pub i64);

pub const SECOND: i64 = 1_000;
pub const MINUTE: i64 = 60 * SECOND;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;

impl UnixMs {
    pub fn from_secs(secs: i64) -> Self {
        UnixMs(secs.saturating_mul(SECOND))
    }

    /// Whole seconds, rounded down (towards the past).
    pub fn as_secs(self) -> i64 {
        self.0.div_euclid(SECOND)
    }

    pub fn plus(self, ms: i64) -> Self {
        UnixMs(self.0.saturating_add(ms))
    }

    pub fn minus(self, ms: i64) -> Self {
        UnixMs(self.0.saturating_sub(ms))
    }

    fn to_datetime(self) -> Option<OffsetDateTime> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000).ok()
    }

    /// `2026-11-01T12:00:00.000Z`: RFC 3339, UTC, exactly three fraction digits
    /// (the form of `sealed_at`).
    pub fn to_rfc3339_millis(self) -> String {
        match self.to_datetime() {
            Some(dt) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                dt.year(),
                u8::from(dt.month()),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second(),
                dt.millisecond()
            ),
            None => String::from("invalid"),
        }
    }

    /// `2026-11-01T12:00:00Z`: RFC 3339, UTC, whole seconds.
    pub fn to_rfc3339_secs(self) -> String {
        match self.to_datetime() {
            Some(dt) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                dt.year(),
                u8::from(dt.month()),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second()
            ),
            None => String::from("invalid"),
        }
    }

    /// `1 Mar 2027`: the day in UTC, as a person reads a date.
    pub fn to_day_month_year(self) -> String {
        match self.to_datetime() {
            Some(dt) => {
                let month = dt.month().to_string();
                format!("{} {} {}", dt.day(), &month[..3], dt.year())
            }
            None => String::from("invalid"),
        }
    }

    /// Any RFC 3339 date-time (offsets allowed), rounded down to the millisecond.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let dt = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        let ms = dt.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(ms).ok().map(UnixMs)
    }

    /// The strict `sealed_at` form: UTC `Z`, exactly millisecond precision.
    pub fn parse_rfc3339_millis_utc(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let shaped = bytes.len() == 24
            && bytes[10] == b'T'
            && bytes[19] == b'.'
            && bytes[23] == b'Z'
            && bytes[20..23].iter().all(u8::is_ascii_digit);
        if !shaped {
            return None;
        }
        Self::parse_rfc3339(text)
    }

    /// A calendar date `YYYY-MM-DD`, as its midnight UTC.
    pub fn parse_date(text: &str) -> Option<Self> {
        let format = time::macros::format_description!("[year]-[month]-[day]");
        let date = time::Date::parse(text, &format).ok()?;
        let dt = date.midnight().assume_utc();
        Some(UnixMs(dt.unix_timestamp().checked_mul(SECOND)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_reads_as_day_month_year() {
        assert_eq!(UnixMs::parse_rfc3339("2027-03-01T23:59:59Z").unwrap().to_day_month_year(), "1 Mar 2027");
        assert_eq!(UnixMs::parse_rfc3339("2026-12-25T00:00:00Z").unwrap().to_day_month_year(), "25 Dec 2026");
    }

    #[test]
    fn millis_round_trip() {
        let t = UnixMs::parse_rfc3339_millis_utc("2026-11-01T12:00:00.123Z").unwrap();
        assert_eq!(t.to_rfc3339_millis(), "2026-11-01T12:00:00.123Z");
        assert_eq!(t.to_rfc3339_secs(), "2026-11-01T12:00:00Z");
        assert_eq!(t.as_secs(), 1_793_534_400);
    }

    #[test]
    fn strict_sealed_at_form() {
        assert!(UnixMs::parse_rfc3339_millis_utc("2026-11-01T12:00:00Z").is_none());
        assert!(UnixMs::parse_rfc3339_millis_utc("2026-11-01T12:00:00.1234Z").is_none());
        assert!(UnixMs::parse_rfc3339_millis_utc("2026-11-01T12:00:00.123+01:00").is_none());
        assert!(UnixMs::parse_rfc3339("2026-11-01T13:00:00+01:00").is_some());
    }

    #[test]
    fn dates_are_midnight_utc() {
        let d = UnixMs::parse_date("2026-11-02").unwrap();
        assert_eq!(d.to_rfc3339_secs(), "2026-11-02T00:00:00Z");
        assert!(UnixMs::parse_date("2026-13-02").is_none());
    }
}
