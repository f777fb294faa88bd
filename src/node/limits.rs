//! Per-key rolling budgets held in memory: the catalogue read-back limit,
//! and a retrieval key's request rate and query-cost budget. A restart
//! forgets at most one window of spending, which only ever lets a key do
//! more, never less, for that window.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use svc_core::limits::RollingBudget;
use svc_core::publish::read_rate;
use svc_core::time::UnixMs;

use crate::config::RetrievalLimits;

/// Windows one ledger holds; past it the least recently used is forgotten.
pub const MAX_KEYS: usize = 100_000;

/// One kind of budget, one window per key.
pub struct Ledger {
    fresh: Box<dyn Fn() -> RollingBudget + Send + Sync>,
    windows: Mutex<lru::LruCache<String, RollingBudget>>,
}

impl Ledger {
    pub fn new(fresh: impl Fn() -> RollingBudget + Send + Sync + 'static) -> Ledger {
        Self::holding(MAX_KEYS, fresh)
    }

    fn holding(keys: usize, fresh: impl Fn() -> RollingBudget + Send + Sync + 'static) -> Ledger {
        let cap = std::num::NonZeroUsize::new(keys.max(1)).expect("at least one");
        Ledger { fresh: Box::new(fresh), windows: Mutex::new(lru::LruCache::new(cap)) }
    }

    fn with<T>(&self, key: &str, f: impl FnOnce(&mut RollingBudget) -> T) -> T {
        // A poisoned lock only means another request panicked mid-update;
        // the windows are still usable numbers.
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        // Keys are callers' addresses too, which an attacker can vary: past
        // the cap the least recently used window is forgotten (that key may
        // do more for a window, as after a restart), never everyone's.
        if !windows.contains(key) {
            windows.put(key.to_owned(), (self.fresh)());
        }
        f(windows.get_mut(key).expect("put above"))
    }

    /// Keys with a window held now.
    pub fn len(&self) -> usize {
        self.windows.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `key` may spend now; otherwise the milliseconds to wait.
    pub fn judge(&self, key: &str, now: UnixMs) -> Result<(), u64> {
        self.with(key, |w| w.judge(now))
    }

    pub fn spend(&self, key: &str, now: UnixMs, amount: u64) {
        self.with(key, |w| w.spend(now, amount))
    }

    /// Judges and, when allowed, spends `amount` in one step.
    pub fn take(&self, key: &str, now: UnixMs, amount: u64) -> Result<(), u64> {
        self.with(key, |w| {
            w.judge(now)?;
            w.spend(now, amount);
            Ok(())
        })
    }
}

/// Requests in flight per key (a caller's key id or address), each kept
/// under a cap: a held request is counted until its guard drops. Only keys
/// with a request in flight are held, so the map is as large as the
/// listener's connection cap at most.
#[derive(Debug)]
pub struct InFlight {
    cap: usize,
    held: Mutex<HashMap<String, usize>>,
}

/// One request counted in an [`InFlight`]; dropping it ends the count.
#[derive(Debug)]
pub struct InFlightGuard {
    of: Arc<InFlight>,
    key: String,
}

impl InFlight {
    pub fn new(cap: usize) -> Arc<InFlight> {
        Arc::new(InFlight { cap: cap.max(1), held: Mutex::new(HashMap::new()) })
    }

    /// Counts a request of `key`, unless `key` already has the cap in flight.
    pub fn enter(self: &Arc<Self>, key: &str) -> Option<InFlightGuard> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(key.to_owned()).or_default();
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(InFlightGuard { of: self.clone(), key: key.to_owned() })
    }

    /// Requests of `key` in flight now.
    pub fn of(&self, key: &str) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).get(key).copied().unwrap_or(0)
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut held = self.of.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// Publishes whose signed head passed, in flight at once per key id and per
/// client address, below the listener's publish cap (16): a holder of one
/// key, or one address, cannot take every publish slot.
pub const PUBLISHES_PER_KEY: usize = 4;
pub const PUBLISHES_PER_ADDRESS: usize = 8;

/// Portal sign-ins begun per client address share, and per e-mail address
/// signed in to, in a rolling minute: a flood from one place, or at one
/// person, is slowed without anyone else's sign-in.
pub const SIGN_INS_PER_CLIENT_MINUTE: u64 = 30;
pub const SIGN_INS_PER_EMAIL_MINUTE: u64 = 20;

/// Every in-memory budget of a node.
pub struct Limits {
    pub catalogue_reads: Ledger,
    pub request_rate: Ledger,
    pub query_cost: Ledger,
    /// Public verifications per client address.
    pub verify_rate: Ledger,
    pub publishes_per_key: Arc<InFlight>,
    pub publishes_per_address: Arc<InFlight>,
    /// Account exports under way, one per account.
    pub exports: Arc<InFlight>,
    /// Portal sign-ins begun per client address share, and per e-mail address.
    pub sign_ins_per_client: Ledger,
    pub sign_ins_per_email: Ledger,
}

impl Limits {
    pub fn new(retrieval: RetrievalLimits, verify_per_second: u64) -> Limits {
        Limits {
            catalogue_reads: Ledger::new(read_rate::read_window),
            request_rate: Ledger::new(move || RollingBudget::per_second(retrieval.requests_per_second)),
            query_cost: Ledger::new(move || RollingBudget::per_minute(retrieval.query_cost_per_minute)),
            verify_rate: Ledger::new(move || RollingBudget::per_second(verify_per_second)),
            publishes_per_key: InFlight::new(PUBLISHES_PER_KEY),
            publishes_per_address: InFlight::new(PUBLISHES_PER_ADDRESS),
            exports: InFlight::new(1),
            sign_ins_per_client: Ledger::new(|| RollingBudget::per_minute(SIGN_INS_PER_CLIENT_MINUTE)),
            sign_ins_per_email: Ledger::new(|| RollingBudget::per_minute(SIGN_INS_PER_EMAIL_MINUTE)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: UnixMs = UnixMs(1_795_341_600_000);

    // A flood of new keys (addresses an attacker varies) forgets the least
    // recently used window only: a busy key stays held to its rate.
    #[test]
    fn a_full_ledger_forgets_the_least_recently_used_window_not_everyones() {
        let ledger = Ledger::holding(3, || RollingBudget::per_second(1));
        assert!(ledger.take("busy", T, 1).is_ok());
        assert!(ledger.take("quiet", T, 1).is_ok());
        assert!(ledger.take("busy", T, 1).is_err(), "its second within the second");
        for n in 0..10 {
            let _ = ledger.take(&format!("stranger-{n}"), T, 1);
            assert!(ledger.take("busy", T, 1).is_err(), "still limited after {n} strangers");
        }
        assert_eq!(ledger.len(), 3);
    }

    #[test]
    fn a_key_holds_its_cap_in_flight_and_a_place_frees_when_its_guard_drops() {
        let in_flight = InFlight::new(2);
        let first = in_flight.enter("k").unwrap();
        let _second = in_flight.enter("k").unwrap();
        assert!(in_flight.enter("k").is_none(), "the cap");
        assert!(in_flight.enter("other").is_some(), "another key's own");
        drop(first);
        assert_eq!(in_flight.of("k"), 1);
        assert!(in_flight.enter("k").is_some());
    }
}
