//! The one place svc reads the time. Everything else is handed `now`.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use svc_core::time::UnixMs;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> UnixMs;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixMs {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        UnixMs(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to, for tests of every time window.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn at(t: UnixMs) -> Self {
        ManualClock(Arc::new(AtomicI64::new(t.0)))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, t: UnixMs) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixMs {
        UnixMs(self.0.load(Ordering::SeqCst))
    }
}

pub type SharedClock = Arc<dyn Clock>;

/// Random bytes from the operating system.
pub fn random<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // The OS source failing means the machine cannot run anything safely.
    getrandom::fill(&mut out).expect("operating system random source");
    out
}

/// The monotonic clock, for durations and deadlines within this process
/// (a search's budget, a floor on a 404, a latency). Never a timestamp.
pub fn monotonic() -> std::time::Instant {
    std::time::Instant::now()
}
