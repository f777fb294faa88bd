//! The catalogue read-back limit (publishing 8, P-NS-19): a key may read
//! 1,000 catalogue records in any rolling minute; past that it waits. The
//! manifest is for keeping a system in step, not for exporting.

use std::collections::VecDeque;

use crate::time::{MINUTE, UnixMs};

pub const CATALOGUE_RECORDS_PER_MINUTE: u64 = 1_000;

/// What one key read in the last minute.
#[derive(Debug, Clone, Default)]
pub struct ReadWindow {
    reads: VecDeque<(UnixMs, u64)>,
}

impl ReadWindow {
    fn prune(&mut self, now: UnixMs) {
        while self.reads.front().is_some_and(|(at, _)| now.0 - at.0 >= MINUTE) {
            self.reads.pop_front();
        }
    }

    /// Whether a read may start now; otherwise the milliseconds to wait
    /// until the oldest read leaves the minute.
    pub fn judge(&mut self, now: UnixMs) -> Result<(), u64> {
        self.prune(now);
        let read: u64 = self.reads.iter().map(|(_, n)| n).sum();
        match self.reads.front() {
            Some((oldest, _)) if read >= CATALOGUE_RECORDS_PER_MINUTE => Err((oldest.0 + MINUTE - now.0).max(1) as u64),
            _ => Ok(()),
        }
    }

    pub fn record(&mut self, now: UnixMs, records: u64) {
        self.reads.push_back((now, records));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: P8.20, P7.5, P-NS-19
    #[test]
    fn a_thousand_records_a_minute_then_a_wait() {
        let mut window = ReadWindow::default();
        let t = UnixMs(1_000_000);
        assert!(window.judge(t).is_ok());
        window.record(t, 999);
        assert!(window.judge(t.plus(10)).is_ok(), "999 read: one more page may start");
        window.record(t.plus(10), 1);
        assert_eq!(window.judge(t.plus(20_000)), Err(40_000));
        assert_eq!(window.judge(t.plus(MINUTE - 1)), Err(1), "the 999 still count");
        assert!(window.judge(t.plus(MINUTE)).is_ok(), "the 999 left the minute; 1 read remains");
    }
}
