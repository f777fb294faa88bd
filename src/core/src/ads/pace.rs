//! The pool-to-render ratio (R4.1.21): past 600 pools in an hour, a key may
//! ask for at most 20 pools per render it confirmed in that hour. Counted
//! per minute over the last sixty, so a key's pace costs sixty counters.
//! A region counts its own pools and renders as they happen and adds the
//! other regions' as home's ad feed brings them, so one key has one pace.

use std::collections::BTreeMap;

use super::{FREE_POOLS_PER_HOUR, POOLS_PER_RENDER};
use crate::time::{MINUTE, UnixMs};

const HOUR_MINUTES: i64 = 60;

/// One key's pools and confirmed renders, per minute of the last hour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pace {
    /// minute → (pools, renders).
    minutes: BTreeMap<i64, (u64, u64)>,
}

/// The minute an instant falls in, as paces count it.
pub fn minute_of(at: UnixMs) -> i64 {
    at.0.div_euclid(MINUTE)
}

impl Pace {
    /// The first minute within the hour before `now`.
    fn first_minute(now: UnixMs) -> i64 {
        minute_of(now) - HOUR_MINUTES + 1
    }

    fn forget_before(&mut self, now: UnixMs) {
        let first = Self::first_minute(now);
        // Split only when a minute has left: a pool's usual step allocates nothing.
        if self.minutes.first_key_value().is_some_and(|(minute, _)| *minute < first) {
            self.minutes = self.minutes.split_off(&first);
        }
    }

    /// Counts a pool if the key may ask for one now; otherwise answers how
    /// long until the oldest counted minute leaves the hour (ms).
    pub fn pool(&mut self, now: UnixMs) -> Result<(), i64> {
        let (pools, renders) = self.counted(now);
        if pools >= FREE_POOLS_PER_HOUR && pools >= renders.saturating_mul(POOLS_PER_RENDER) {
            let oldest = self.minutes.keys().next().map_or(now.0, |m| m * MINUTE);
            return Err((oldest + HOUR_MINUTES * MINUTE - now.0).max(1));
        }
        self.minutes.entry(minute_of(now)).or_default().0 += 1;
        Ok(())
    }

    /// Counts a confirmed render.
    pub fn rendered(&mut self, now: UnixMs) {
        self.add(minute_of(now), 0, 1, now);
    }

    /// Adds another region's pools and renders in `minute`, if that minute
    /// is still within the hour.
    pub fn add(&mut self, minute: i64, pools: u64, renders: u64, now: UnixMs) {
        self.forget_before(now);
        if minute >= Self::first_minute(now) {
            let counts = self.minutes.entry(minute).or_default();
            counts.0 = counts.0.saturating_add(pools);
            counts.1 = counts.1.saturating_add(renders);
        }
    }

    /// The pools and renders counted within the hour.
    pub fn counted(&mut self, now: UnixMs) -> (u64, u64) {
        self.forget_before(now);
        self.minutes.values().fold((0, 0), |(p, r), m| (p + m.0, r + m.1))
    }

    /// Nothing counted within the hour: the key's pace may be forgotten.
    pub fn idle(&mut self, now: UnixMs) -> bool {
        self.forget_before(now);
        self.minutes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: UnixMs = UnixMs(1_795_341_600_000);

    // rule: R4.1.21
    #[test]
    fn past_600_pools_an_hour_each_render_buys_20() {
        let mut pace = Pace::default();
        for i in 0..600 {
            assert_eq!(pace.pool(T.plus(i)), Ok(()), "pool {i} is free");
        }
        let wait = pace.pool(T.plus(600)).unwrap_err();
        assert_eq!(wait, 60 * MINUTE - 600, "until the first minute leaves the hour");
        // 31 renders buy pools up to 620.
        for _ in 0..31 {
            pace.rendered(T.plus(700));
        }
        for i in 0..20 {
            assert_eq!(pace.pool(T.plus(800 + i)), Ok(()), "pool {} of 620", 601 + i);
        }
        assert!(pace.pool(T.plus(900)).is_err());
        // An hour later every count has left.
        assert_eq!(pace.pool(T.plus(60 * MINUTE)), Ok(()));
        assert!(!pace.idle(T.plus(60 * MINUTE)));
        assert!(pace.idle(T.plus(120 * MINUTE)));
    }

    // rule: R4.1.21
    #[test]
    fn another_regions_pools_and_renders_count_in_their_own_minutes() {
        let mut pace = Pace::default();
        let now = T.plus(30 * MINUTE);
        // 599 pools elsewhere half an hour ago, one here: the hour's 600 are used.
        pace.add(minute_of(T), 599, 0, now);
        assert_eq!(pace.pool(now), Ok(()));
        assert_eq!(pace.pool(now).unwrap_err(), 30 * MINUTE, "until the other region's minute leaves");
        // A render confirmed elsewhere buys twenty more.
        pace.add(minute_of(now), 0, 31, now);
        for _ in 0..20 {
            assert_eq!(pace.pool(now), Ok(()));
        }
        assert!(pace.pool(now).is_err());
        // What arrives past its hour counts for nothing.
        let mut late = Pace::default();
        late.add(minute_of(T), 10_000, 0, T.plus(60 * MINUTE));
        assert!(late.idle(T.plus(60 * MINUTE)));
    }
}
