//! The catalogue read-back limit (publishing 8, P-NS-19): a key may read
//! 1,000 catalogue records in any rolling minute; past that it waits. The
//! manifest is for keeping a system in step, not for exporting.

use crate::limits::RollingBudget;

pub const CATALOGUE_RECORDS_PER_MINUTE: u64 = 1_000;

/// What one key read in the last minute.
pub fn read_window() -> RollingBudget {
    RollingBudget::per_minute(CATALOGUE_RECORDS_PER_MINUTE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MINUTE, UnixMs};

    // rule: P8.20, P7.5, P-NS-19
    #[test]
    fn a_thousand_records_a_minute_then_a_wait() {
        let mut window = read_window();
        let t = UnixMs(1_000_000);
        assert!(window.judge(t).is_ok());
        window.spend(t, 999);
        assert!(window.judge(t.plus(10)).is_ok(), "999 read: one more page may start");
        window.spend(t.plus(1_000), 1);
        assert_eq!(window.judge(t.plus(20_000)), Err(40_000));
        assert_eq!(window.judge(t.plus(MINUTE - 1)), Err(1), "the 999 still count");
        assert!(window.judge(t.plus(MINUTE)).is_ok(), "the 999 left the minute; 1 read remains");
    }
}
