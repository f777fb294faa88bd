//! Bells on the feeds home serves its regions: a write that reaches one of
//! them rings its bell once it is in the store, so a region's long poll
//! answers at once instead of finding it on its next look.

use tokio::sync::watch;

use super::cf;

/// The column families a long poll waits on.
const RUNG: [&str; 3] = [cf::families::REPLOG, cf::families::NONCE_FEED, cf::families::AD_FEED];

/// The bell of `cf`, if it has one.
fn bell_of(cf: &str) -> Option<usize> {
    RUNG.iter().position(|rung| *rung == cf)
}

/// Which bells a batch rings, one bit per [`RUNG`] family.
#[derive(Clone, Copy, Default)]
pub(super) struct Rings(u8);

impl Rings {
    pub(super) fn note(&mut self, cf: &'static str) {
        if let Some(i) = bell_of(cf) {
            self.0 |= 1 << i;
        }
    }
}

/// One counter per family, bumped after each write that touched it.
pub(super) struct Bells([watch::Sender<u64>; 3]);

impl Bells {
    pub(super) fn new() -> Bells {
        Bells(std::array::from_fn(|_| watch::Sender::new(0)))
    }

    pub(super) fn ring(&self, rings: Rings) {
        for (i, bell) in self.0.iter().enumerate() {
            if rings.0 & (1 << i) != 0 {
                bell.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// How many writes touched `cf` since the store opened, from memory;
    /// `None` for a family without a bell.
    pub(super) fn count(&self, cf: &str) -> Option<u64> {
        bell_of(cf).map(|i| *self.0[i].borrow())
    }

    /// A receiver that sees each later write to `cf`; `None` for a family
    /// without a bell.
    pub(super) fn listen(&self, cf: &'static str) -> Option<watch::Receiver<u64>> {
        bell_of(cf).map(|i| self.0[i].subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_rings_only_its_own_familys_bell() {
        let bells = Bells::new();
        let mut log = bells.listen(cf::families::REPLOG).unwrap();
        let mut ads = bells.listen(cf::families::AD_FEED).unwrap();
        assert!(bells.listen(cf::RECORDS.name()).is_none());
        let mut rings = Rings::default();
        rings.note(cf::RECORDS.name());
        rings.note(cf::families::REPLOG);
        bells.ring(rings);
        assert!(log.has_changed().unwrap());
        assert!(!ads.has_changed().unwrap());
        log.mark_unchanged();
        bells.ring(Rings::default());
        assert!(!log.has_changed().unwrap());
        ads.mark_unchanged();
    }

    // The count a cache keyed by the log's head compares moves with each
    // write to the log, and with no other.
    #[test]
    fn the_count_of_writes_moves_with_its_own_family_only() {
        let bells = Bells::new();
        let before = bells.count(cf::families::REPLOG).unwrap();
        let mut records = Rings::default();
        records.note(cf::RECORDS.name());
        bells.ring(records);
        assert_eq!(bells.count(cf::families::REPLOG), Some(before));
        let mut log = Rings::default();
        log.note(cf::families::REPLOG);
        bells.ring(log);
        assert_eq!(bells.count(cf::families::REPLOG), Some(before + 1));
        assert_eq!(bells.count(cf::RECORDS.name()), None, "a family without a bell has no count");
    }
}
