//! The actors of a region that are not running as they should: named by
//! the supervisor (failed and not restarted) or by the watchdog (frozen),
//! each with its reason. `/readyz` is unready while any is named.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The actors that failed and could not be brought back: name → reason.
#[derive(Clone, Default)]
pub struct Failures(Arc<Mutex<BTreeMap<String, String>>>);

impl Failures {
    pub fn list(&self) -> BTreeMap<String, String> {
        self.0.lock().map(|f| f.clone()).unwrap_or_default()
    }

    pub(crate) fn set(&self, name: &str, reason: String) {
        if let Ok(mut failures) = self.0.lock() {
            failures.insert(name.to_owned(), reason);
        }
    }

    pub(crate) fn clear(&self, name: &str) {
        if let Ok(mut failures) = self.0.lock() {
            failures.remove(name);
        }
    }
}
