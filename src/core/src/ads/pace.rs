//! The pool-to-render ratio (R4.1.21): past 600 pools in an hour, a key may
//! ask for at most 20 pools per render it confirmed in that hour. Counted
//! per minute over the last sixty, so a key's pace costs sixty counters.

use std::collections::VecDeque;

use super::{FREE_POOLS_PER_HOUR, POOLS_PER_RENDER};
use crate::time::{MINUTE, UnixMs};

const HOUR_MINUTES: i64 = 60;

/// One key's pools and confirmed renders, per minute of the last hour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pace {
    /// (minute, pools, renders), oldest first.
    minutes: VecDeque<(i64, u64, u64)>,
}

impl Pace {
    fn forget_before(&mut self, now: UnixMs) {
        let first = now.0.div_euclid(MINUTE) - HOUR_MINUTES + 1;
        while self.minutes.front().is_some_and(|(minute, _, _)| *minute < first) {
            self.minutes.pop_front();
        }
    }

    fn this_minute(&mut self, now: UnixMs) -> &mut (i64, u64, u64) {
        let minute = now.0.div_euclid(MINUTE);
        if self.minutes.back().is_none_or(|(last, _, _)| *last != minute) {
            self.minutes.push_back((minute, 0, 0));
        }
        let last = self.minutes.len() - 1;
        &mut self.minutes[last]
    }

    /// Counts a pool if the key may ask for one now; otherwise answers how
    /// long until the oldest counted minute leaves the hour (ms).
    pub fn pool(&mut self, now: UnixMs) -> Result<(), i64> {
        self.forget_before(now);
        let pools: u64 = self.minutes.iter().map(|m| m.1).sum();
        let renders: u64 = self.minutes.iter().map(|m| m.2).sum();
        if pools >= FREE_POOLS_PER_HOUR && pools >= renders.saturating_mul(POOLS_PER_RENDER) {
            let oldest = self.minutes.front().map_or(now.0, |m| m.0 * MINUTE);
            return Err((oldest + HOUR_MINUTES * MINUTE - now.0).max(1));
        }
        self.this_minute(now).1 += 1;
        Ok(())
    }

    /// Counts a confirmed render.
    pub fn rendered(&mut self, now: UnixMs) {
        self.forget_before(now);
        self.this_minute(now).2 += 1;
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
}
