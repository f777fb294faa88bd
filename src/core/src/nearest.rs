//! Which region the front door prefers. Each region's latency is a moving
//! estimate of its probes' round trips, and the region the door leads with
//! changes only when another is clearly nearer, so regions whose latencies
//! are close (or whose probes jitter) do not take turns.
//!
//! A region's health always comes first: a leader that is no longer among
//! the healthiest gives way at once, whatever its latency.

/// The weight of a new round trip in the estimate (an exponentially
/// weighted moving average: a step change is 90 % absorbed after 8 probes).
pub const WEIGHT: f64 = 0.25;
/// A challenger leads only below this share of the leader's estimate...
pub const SWITCH_RATIO: f64 = 0.8;
/// ...and at least this many milliseconds nearer.
pub const SWITCH_MARGIN_MS: f64 = 2.0;

/// One region's latency: a configured guess until its first round trip is
/// measured, then the moving estimate of the measured ones.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    ms: Option<f64>,
    measured: bool,
}

impl Estimate {
    /// The estimate before any probe: `prior_ms` if the operator gave one.
    pub fn prior(prior_ms: Option<u64>) -> Estimate {
        Estimate { ms: prior_ms.map(|ms| ms as f64), measured: false }
    }

    /// Takes in one measured round trip; a value that is not a finite,
    /// non-negative number of milliseconds is ignored.
    pub fn observe(&mut self, round_trip_ms: f64) {
        if !round_trip_ms.is_finite() || round_trip_ms < 0.0 {
            return;
        }
        self.ms = Some(match (self.ms, self.measured) {
            (Some(ms), true) => ms + WEIGHT * (round_trip_ms - ms),
            _ => round_trip_ms,
        });
        self.measured = true;
    }

    /// The current estimate in milliseconds, if there is one.
    pub fn ms(&self) -> Option<f64> {
        self.ms
    }

    /// Whether it comes from probes rather than the configured guess.
    pub fn measured(&self) -> bool {
        self.measured
    }
}

/// Whether `challenger` is clearly nearer than `leader`.
fn clearly_nearer(challenger: Option<f64>, leader: Option<f64>) -> bool {
    match (challenger, leader) {
        (Some(c), Some(l)) => c < l * SWITCH_RATIO && l - c >= SWITCH_MARGIN_MS,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The order to try regions in, and the leader it starts with. `regions`
/// holds each region's health rank (lower is healthier) and estimate;
/// `leader` is the one the door led with before. The rest follow by health,
/// then estimate (regions without one last), then their configured order.
pub fn order<H: Ord + Copy>(regions: &[(H, Estimate)], leader: Option<usize>) -> (Vec<usize>, Option<usize>) {
    let key = |i: usize| (regions[i].0, regions[i].1.ms().map_or(f64::INFINITY, |ms| ms));
    let mut sorted: Vec<usize> = (0..regions.len()).collect();
    sorted.sort_by(|&a, &b| {
        let ((ha, ea), (hb, eb)) = (key(a), key(b));
        ha.cmp(&hb).then(ea.total_cmp(&eb)).then(a.cmp(&b))
    });
    let Some(&best) = sorted.first() else { return (sorted, None) };
    let kept = leader.filter(|&l| {
        l < regions.len() && regions[l].0 == regions[best].0 && !clearly_nearer(regions[best].1.ms(), regions[l].1.ms())
    });
    let first = kept.unwrap_or(best);
    let mut order = vec![first];
    order.extend(sorted.into_iter().filter(|&i| i != first));
    (order, Some(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn measured(ms: f64) -> Estimate {
        let mut e = Estimate::prior(None);
        e.observe(ms);
        e
    }

    #[test]
    fn the_first_round_trip_replaces_the_guess_and_later_ones_move_it_a_quarter() {
        let mut e = Estimate::prior(Some(90));
        assert_eq!((e.ms(), e.measured()), (Some(90.0), false));
        e.observe(4.0);
        assert_eq!((e.ms(), e.measured()), (Some(4.0), true));
        e.observe(8.0);
        assert_eq!(e.ms(), Some(5.0));
        e.observe(f64::NAN);
        e.observe(-1.0);
        assert_eq!(e.ms(), Some(5.0), "nonsense is ignored");
    }

    #[test]
    fn a_clearly_nearer_region_takes_the_lead_and_a_slightly_nearer_one_does_not() {
        let regions = [(0, measured(10.0)), (0, measured(9.0))];
        assert_eq!(order(&regions, Some(0)), (vec![0, 1], Some(0)), "9 ms is not clearly nearer than 10");
        let regions = [(0, measured(10.0)), (0, measured(7.0))];
        assert_eq!(order(&regions, Some(0)), (vec![1, 0], Some(1)));
        // Below a few milliseconds the margin holds the leader too.
        let regions = [(0, measured(1.0)), (0, measured(0.3))];
        assert_eq!(order(&regions, Some(0)).1, Some(0));
        // With no leader yet, the nearest leads.
        assert_eq!(order(&regions, None).1, Some(1));
    }

    #[test]
    fn a_leader_that_is_no_longer_among_the_healthiest_gives_way_at_once() {
        let regions = [(1, measured(1.0)), (0, measured(80.0)), (2, measured(0.5))];
        assert_eq!(order(&regions, Some(0)), (vec![1, 0, 2], Some(1)));
    }

    #[test]
    fn regions_without_an_estimate_come_after_those_with_one() {
        let regions = [(0, Estimate::prior(None)), (0, Estimate::prior(Some(40))), (0, measured(60.0))];
        assert_eq!(order(&regions, None), (vec![1, 2, 0], Some(1)));
        assert_eq!(order::<u8>(&[], Some(3)), (vec![], None));
        assert_eq!(order(&regions, Some(9)).1, Some(1), "a leader that is not a region is dropped");
    }

    #[test]
    fn a_step_change_moves_the_lead_within_a_few_probes() {
        let (mut near, mut far) = (measured(5.0), measured(20.0));
        let mut leader = order(&[(0, near), (0, far)], None).1;
        assert_eq!(leader, Some(0));
        let mut probes = 0;
        while leader == Some(0) {
            near.observe(40.0);
            far.observe(20.0);
            leader = order(&[(0, near), (0, far)], leader).1;
            probes += 1;
            assert!(probes < 20, "the lead never moved");
        }
        assert!(probes >= 2, "one slow probe does not move the lead: {probes}");
    }

    proptest! {
        /// Two regions 30 and 36 ms away, probes jittering by up to ±10 %:
        /// the lead never changes hands.
        #[test]
        fn jitter_between_close_regions_never_moves_the_lead(jitter in proptest::collection::vec((-0.1f64..0.1, -0.1f64..0.1), 1..200)) {
            let (mut a, mut b) = (measured(30.0), measured(36.0));
            let mut leader = order(&[(0, a), (0, b)], None).1;
            prop_assert_eq!(leader, Some(0));
            for (ja, jb) in jitter {
                a.observe(30.0 * (1.0 + ja));
                b.observe(36.0 * (1.0 + jb));
                leader = order(&[(0, a), (0, b)], leader).1;
                prop_assert_eq!(leader, Some(0));
            }
        }

        /// Whatever the estimates, every region is tried exactly once.
        #[test]
        fn the_order_names_every_region_once(ms in proptest::collection::vec((0u8..3, proptest::option::of(0.0f64..500.0)), 0..8), leader in proptest::option::of(0usize..10)) {
            let regions: Vec<(u8, Estimate)> = ms.iter().map(|&(h, m)| (h, m.map_or(Estimate::prior(None), measured))).collect();
            let (mut order, first) = order(&regions, leader);
            prop_assert_eq!(first, order.first().copied());
            order.sort_unstable();
            prop_assert_eq!(order, (0..regions.len()).collect::<Vec<_>>());
        }
    }
}
