//! Per-key rolling budgets held in memory: the catalogue read-back limit,
//! and a retrieval key's request rate and query-cost budget. A restart
//! forgets at most one window of spending, which only ever lets a key do
//! more, never less, for that window.

use std::collections::HashMap;
use std::sync::Mutex;

use svc_core::limits::RollingBudget;
use svc_core::publish::read_rate;
use svc_core::time::UnixMs;

use crate::config::RetrievalLimits;

/// Windows one ledger holds before it starts over.
const MAX_KEYS: usize = 100_000;

/// One kind of budget, one window per key.
pub struct Ledger {
    fresh: Box<dyn Fn() -> RollingBudget + Send + Sync>,
    windows: Mutex<HashMap<String, RollingBudget>>,
}

impl Ledger {
    pub fn new(fresh: impl Fn() -> RollingBudget + Send + Sync + 'static) -> Ledger {
        Ledger { fresh: Box::new(fresh), windows: Mutex::new(HashMap::new()) }
    }

    fn with<T>(&self, key: &str, f: impl FnOnce(&mut RollingBudget) -> T) -> T {
        // A poisoned lock only means another request panicked mid-update;
        // the windows are still usable numbers.
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if !windows.contains_key(key) && windows.len() >= MAX_KEYS {
            // Keys are callers' addresses too, which an attacker can vary:
            // starting over forgets one window, as a restart does.
            windows.clear();
        }
        let window = match windows.get_mut(key) {
            Some(w) => w,
            None => windows.entry(key.to_owned()).or_insert_with(&self.fresh),
        };
        f(window)
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

/// Every in-memory budget of a node.
pub struct Limits {
    pub catalogue_reads: Ledger,
    pub request_rate: Ledger,
    pub query_cost: Ledger,
    /// Public verifications per client address.
    pub verify_rate: Ledger,
}

impl Limits {
    pub fn new(retrieval: RetrievalLimits, verify_per_second: u64) -> Limits {
        Limits {
            catalogue_reads: Ledger::new(read_rate::read_window),
            request_rate: Ledger::new(move || RollingBudget::per_second(retrieval.requests_per_second)),
            query_cost: Ledger::new(move || RollingBudget::per_minute(retrieval.query_cost_per_minute)),
            verify_rate: Ledger::new(move || RollingBudget::per_second(verify_per_second)),
        }
    }
}
