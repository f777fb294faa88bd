//! Home's view of how far each read region serves: the log sequence its
//! index had applied when it last pulled home's log. `live_in` answers
//! from it, so it names only regions that serve a record's change, and
//! not a region that stopped pulling (it may be gone).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A region pulls at least every long poll (2 s); one silent for longer
/// than this is not counted as serving.
const SILENT_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
pub struct RegionPositions {
    indexed: Mutex<BTreeMap<String, (u64, Instant)>>,
}

impl RegionPositions {
    /// Records what a region said on a pull (a region rebuilt from empty
    /// says less than before, and that is what it serves).
    pub fn saw(&self, region: &str, indexed: u64) {
        if let Ok(mut known) = self.indexed.lock() {
            known.insert(region.to_owned(), (indexed, svc_clock::monotonic()));
        }
    }

    /// The regions, `home` first, whose index holds the change at `from`
    /// and not yet the one at `until` (when there is a later change).
    pub fn serving(&self, home: (&str, u64), from: u64, until: Option<u64>) -> Vec<String> {
        let holds = |indexed: u64| indexed >= from && until.is_none_or(|u| indexed < u);
        let mut regions: Vec<String> = Vec::new();
        if holds(home.1) {
            regions.push(home.0.to_owned());
        }
        if let Ok(known) = self.indexed.lock() {
            let heard = |at: &Instant| at.elapsed() <= SILENT_AFTER;
            let serving = known.iter().filter(|(_, (indexed, at))| holds(*indexed) && heard(at));
            regions.extend(serving.map(|(name, _)| name.clone()));
        }
        regions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_serves_a_change_once_its_index_holds_it_and_until_it_holds_the_next() {
        let positions = RegionPositions::default();
        positions.saw("eu", 10);
        positions.saw("ap", 4);
        assert_eq!(positions.serving(("home", 12), 5, None), ["home", "eu"]);
        assert_eq!(positions.serving(("home", 12), 5, Some(11)), ["eu"], "home holds the next change already");
        positions.saw("ap", 5);
        assert_eq!(positions.serving(("home", 4), 5, None), ["ap", "eu"]);
        positions.saw("eu", 0);
        assert_eq!(positions.serving(("home", 4), 5, None), ["ap"], "a region rebuilt from empty serves what it says");
    }
}
