//! The mandate's caps: records per hour and bytes per day, per key.
//!
//! Caps are judged before the body is parsed (P4.1.55), so only what the
//! request declares is known: its `Content-Length` (or, for a bulk import, the
//! file's size and the seal's `tree_size`). A request over either cap is
//! `429 rate_limited` with `Retry-After` (P4.1.56).
//!
//! Usage is kept in per-minute buckets so the ledger stays small (at most a
//! day of minutes) and the I/O side can persist it as it is. Usage recorded
//! during minute `m` counts until the end of that minute plus the window:
//! never less than the full window after the event, at most one minute more.
//! So no true sliding hour or day ever goes over a cap by the ledger's fault.
//!
//! A publish request is judged as publishing at least one record: it is
//! refused once the hour's records already reach the cap. A push of many
//! records that passes this check is then recorded whole; the cap can be
//! overshot by one request, which is the price of judging before parsing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::mandate::Caps;
use crate::time::{DAY, HOUR, MINUTE, SECOND, UnixMs};

/// The records cap's window.
pub const RECORDS_WINDOW_MS: i64 = HOUR;
/// The bytes cap's window.
pub const BYTES_WINDOW_MS: i64 = DAY;
/// The shortest `Retry-After` given.
pub const MIN_RETRY_AFTER_MS: i64 = SECOND;

/// Usage of one minute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub records: u64,
    pub bytes: u64,
}

/// How long to wait before the request could pass, in milliseconds (at least
/// one second).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RetryAfterMs(pub i64);

impl RetryAfterMs {
    /// Whole seconds, rounded up, for the `Retry-After` header.
    pub fn seconds(self) -> u64 {
        u64::try_from(self.0.max(0)).unwrap_or(0).div_ceil(1_000)
    }
}

/// Per-minute usage of one key, keyed by minute number (`ms / 60 000`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageLedger {
    pub minutes: BTreeMap<i64, Usage>,
}

fn minute_of(at: UnixMs) -> i64 {
    at.0.div_euclid(MINUTE)
}

/// The moment usage recorded in `minute` stops counting in a window.
fn ages_out(minute: i64, window: i64) -> i64 {
    minute.saturating_add(1).saturating_mul(MINUTE).saturating_add(window)
}

impl UsageLedger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an accepted request's usage at `now`.
    pub fn record(&mut self, now: UnixMs, records: u64, bytes: u64) {
        let usage = self.minutes.entry(minute_of(now)).or_default();
        usage.records = usage.records.saturating_add(records);
        usage.bytes = usage.bytes.saturating_add(bytes);
    }

    /// Drops buckets that no longer count in any window.
    pub fn prune(&mut self, now: UnixMs) {
        self.minutes.retain(|&minute, _| ages_out(minute, BYTES_WINDOW_MS.max(RECORDS_WINDOW_MS)) > now.0);
    }

    /// Buckets still counting in a window of `window` ms at `now`, oldest first.
    fn live(&self, now: UnixMs, window: i64) -> impl Iterator<Item = (i64, &Usage)> {
        self.minutes.iter().filter(move |(m, _)| ages_out(**m, window) > now.0).map(|(m, u)| (*m, u))
    }

    /// Records counting in the hour at `now`.
    pub fn records_in_window(&self, now: UnixMs) -> u64 {
        self.live(now, RECORDS_WINDOW_MS).fold(0, |sum, (_, u)| sum.saturating_add(u.records))
    }

    /// Bytes counting in the day at `now`.
    pub fn bytes_in_window(&self, now: UnixMs) -> u64 {
        self.live(now, BYTES_WINDOW_MS).fold(0, |sum, (_, u)| sum.saturating_add(u.bytes))
    }

    /// How long until at least `excess` of a quantity ages out of `window`.
    /// If even all of it would not be enough, the whole window: the request
    /// is larger than the cap itself and cannot pass until the cap is raised.
    fn wait_for(&self, now: UnixMs, window: i64, excess: u64, quantity: impl Fn(&Usage) -> u64) -> i64 {
        let mut freed = 0u64;
        for (minute, usage) in self.live(now, window) {
            freed = freed.saturating_add(quantity(usage));
            if freed >= excess {
                return ages_out(minute, window).saturating_sub(now.0);
            }
        }
        window
    }

    /// Judges a request declaring `declared_bytes`, publishing at least one
    /// record. Refused when the hour's records already reach
    /// `records_per_hour`, or the day's bytes plus `declared_bytes` exceed
    /// `bytes_per_day`.
    pub fn judge(&self, now: UnixMs, declared_bytes: u64, caps: &Caps) -> Result<(), RetryAfterMs> {
        self.judge_declared(now, 1, declared_bytes, caps)
    }

    /// Judges a request that declares its record count as well (a bulk import
    /// knows it from the seal's `tree_size`). Refused when the hour's records
    /// plus `declared_records` exceed `records_per_hour`, or the day's bytes
    /// plus `declared_bytes` exceed `bytes_per_day`. `Retry-After` is the time
    /// until enough usage ages out for both to fit.
    pub fn judge_declared(
        &self,
        now: UnixMs,
        declared_records: u64,
        declared_bytes: u64,
        caps: &Caps,
    ) -> Result<(), RetryAfterMs> {
        let records = self.records_in_window(now).saturating_add(declared_records);
        let bytes = self.bytes_in_window(now).saturating_add(declared_bytes);
        let mut wait = 0i64;
        if records > caps.records_per_hour {
            let excess = records - caps.records_per_hour;
            let too_big = declared_records > caps.records_per_hour;
            let w =
                if too_big { RECORDS_WINDOW_MS } else { self.wait_for(now, RECORDS_WINDOW_MS, excess, |u| u.records) };
            wait = wait.max(w);
        }
        if bytes > caps.bytes_per_day {
            let excess = bytes - caps.bytes_per_day;
            let too_big = declared_bytes > caps.bytes_per_day;
            let w = if too_big { BYTES_WINDOW_MS } else { self.wait_for(now, BYTES_WINDOW_MS, excess, |u| u.bytes) };
            wait = wait.max(w);
        }
        if records > caps.records_per_hour || bytes > caps.bytes_per_day {
            Err(RetryAfterMs(wait.max(MIN_RETRY_AFTER_MS)))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAPS: Caps = Caps { records_per_hour: 100, bytes_per_day: 1_000 };

    /// A minute boundary, so bucket arithmetic is easy to read.
    fn t0() -> UnixMs {
        UnixMs(1_793_534_400_000)
    }

    // rule: P4.1.55, P4.1.56, P8.9
    #[test]
    fn records_cap_refuses_at_the_cap() {
        let mut ledger = UsageLedger::new();
        ledger.record(t0(), 99, 10);
        assert_eq!(ledger.judge(t0(), 10, &CAPS), Ok(()));
        ledger.record(t0(), 1, 10);
        assert!(ledger.judge(t0(), 10, &CAPS).is_err());
    }

    // rule: P4.1.56, P8.9
    #[test]
    fn records_window_edge_is_exact() {
        let mut ledger = UsageLedger::new();
        // Recorded 30 s into a minute: counts until that minute's end + 1 h.
        ledger.record(t0().plus(30 * SECOND), 100, 0);
        let expiry = t0().plus(MINUTE + HOUR);
        assert_eq!(ledger.records_in_window(expiry.minus(1)), 100);
        assert_eq!(ledger.records_in_window(expiry), 0);
        assert_eq!(ledger.judge(expiry.minus(1), 0, &CAPS), Err(RetryAfterMs(1_000)));
        assert_eq!(ledger.judge(expiry, 0, &CAPS), Ok(()));
        // Never less than the full hour after the event itself.
        assert!(expiry.0 - t0().plus(59 * SECOND).0 > HOUR);
        // Retry-After from the moment of the event: to the bucket's expiry.
        assert_eq!(ledger.judge(t0().plus(30 * SECOND), 0, &CAPS), Err(RetryAfterMs(HOUR + 30 * SECOND)));
    }

    // rule: P4.1.56, P8.9
    #[test]
    fn bytes_window_edge_is_exact() {
        let mut ledger = UsageLedger::new();
        ledger.record(t0(), 1, 600);
        // 600 + 400 = 1000 fits exactly; 401 does not.
        assert_eq!(ledger.judge(t0(), 400, &CAPS), Ok(()));
        assert_eq!(ledger.judge(t0(), 401, &CAPS), Err(RetryAfterMs(DAY + MINUTE)));
        let expiry = t0().plus(MINUTE + DAY);
        assert_eq!(ledger.bytes_in_window(expiry.minus(1)), 600);
        assert_eq!(ledger.judge(expiry.minus(1), 401, &CAPS), Err(RetryAfterMs(1_000)));
        assert_eq!(ledger.judge(expiry, 401, &CAPS), Ok(()));
    }

    // rule: P4.1.56
    #[test]
    fn retry_after_waits_only_for_enough_usage() {
        let mut ledger = UsageLedger::new();
        ledger.record(t0(), 0, 300);
        ledger.record(t0().plus(10 * MINUTE), 0, 300);
        ledger.record(t0().plus(20 * MINUTE), 0, 300);
        let now = t0().plus(30 * MINUTE);
        // 900 used; 400 declared: 300 must age out, the oldest bucket does it.
        assert_eq!(ledger.judge(now, 400, &CAPS), Err(RetryAfterMs(MINUTE + DAY - 30 * MINUTE)));
        // 700 declared: 600 must age out, the second bucket too.
        assert_eq!(ledger.judge(now, 700, &CAPS), Err(RetryAfterMs(11 * MINUTE + DAY - 30 * MINUTE)));
        assert_eq!(RetryAfterMs(1_001).seconds(), 2);
        assert_eq!(RetryAfterMs(1_000).seconds(), 1);
    }

    // rule: P4.1.56
    #[test]
    fn a_request_larger_than_the_cap_waits_a_whole_window() {
        let ledger = UsageLedger::new();
        assert_eq!(ledger.judge(t0(), 1_001, &CAPS), Err(RetryAfterMs(DAY)));
        assert_eq!(ledger.judge_declared(t0(), 101, 0, &CAPS), Err(RetryAfterMs(HOUR)));
        assert_eq!(ledger.judge_declared(t0(), 100, 1_000, &CAPS), Ok(()));
    }

    // rule: P4.1.48
    #[test]
    fn bulk_imports_declare_records_too() {
        let mut ledger = UsageLedger::new();
        ledger.record(t0(), 60, 0);
        assert_eq!(ledger.judge_declared(t0(), 40, 0, &CAPS), Ok(()));
        assert_eq!(ledger.judge_declared(t0(), 41, 0, &CAPS), Err(RetryAfterMs(MINUTE + HOUR)));
        // Both caps over: the longer wait is given.
        assert_eq!(ledger.judge_declared(t0(), 41, 1_001, &CAPS), Err(RetryAfterMs(DAY)));
    }

    #[test]
    fn prune_keeps_what_still_counts_and_serialises() {
        let mut ledger = UsageLedger::new();
        ledger.record(t0(), 1, 1);
        ledger.record(t0().plus(DAY), 2, 2);
        ledger.record(t0().plus(DAY), 1, 1);
        ledger.prune(t0().plus(DAY + MINUTE - 1));
        assert_eq!(ledger.minutes.len(), 2);
        ledger.prune(t0().plus(DAY + MINUTE));
        assert_eq!(ledger.minutes.len(), 1);
        assert_eq!(ledger.records_in_window(t0().plus(DAY)), 3);
        let json = serde_json::to_string(&ledger).unwrap();
        let back: UsageLedger = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ledger);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn judging_never_panics_and_retry_is_positive(
            events in proptest::collection::vec((any::<i64>(), any::<u64>(), any::<u64>()), 0..20),
            now in any::<i64>(),
            declared in any::<u64>(),
            records_per_hour in any::<u64>(),
            bytes_per_day in any::<u64>(),
        ) {
            let mut ledger = UsageLedger::new();
            for (at, r, b) in events {
                ledger.record(UnixMs(at), r, b);
            }
            let caps = Caps { records_per_hour, bytes_per_day };
            if let Err(wait) = ledger.judge(UnixMs(now), declared, &caps) {
                prop_assert!(wait.0 >= MIN_RETRY_AFTER_MS);
            }
            ledger.prune(UnixMs(now));
        }

        #[test]
        fn waiting_the_retry_after_lets_the_request_through(
            events in proptest::collection::vec((0i64..2 * DAY, 0u64..50, 0u64..500), 1..30),
            declared in 0u64..1_000,
        ) {
            let mut ledger = UsageLedger::new();
            for (at, r, b) in &events {
                ledger.record(t0().plus(*at), *r, *b);
            }
            let now = t0().plus(2 * DAY);
            if let Err(wait) = ledger.judge(now, declared, &CAPS) {
                prop_assert!(ledger.judge(now.plus(wait.0), declared, &CAPS).is_ok());
                if wait.0 > MIN_RETRY_AFTER_MS {
                    prop_assert!(ledger.judge(now.plus(wait.0 - 1), declared, &CAPS).is_err());
                }
            }
        }
    }
}
