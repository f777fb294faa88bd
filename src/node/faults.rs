//! Faults a chaos run injects into a live node: a crash at one step of the
//! write path, and a clock running ahead or behind. They are armed only
//! through the admin API of a node whose configuration says
//! `fault_injection = true` (off by default; then the routes answer 404).
//! Both are process-wide, as a crash and a machine clock are, so they live
//! in statics rather than in the region's state.

use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};

use svc_core::time::UnixMs;

use svc_clock::{Clock, SystemClock};

/// A step of the write path at which an armed node aborts, as SIGKILL
/// would end it there: mid-push, mid-index, mid-sequencing, mid-apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    /// Home stored a new push, before its answer is sent.
    PushAccepted,
    /// Home handed a chunk's records to the disk, before the write settled.
    ChunkWritten,
    /// Home marked a push complete, before a bulk file is deleted.
    PushFinished,
    /// The indexer applied a step to the shards, before it stored how far.
    IndexApplied,
    /// Home wrote a checkpoint's leaves and note, before it answers.
    LogSequenced,
    /// A read region applied replicated frames, before it acknowledges them.
    FramesApplied,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 6] = [
        CrashPoint::PushAccepted,
        CrashPoint::ChunkWritten,
        CrashPoint::PushFinished,
        CrashPoint::IndexApplied,
        CrashPoint::LogSequenced,
        CrashPoint::FramesApplied,
    ];

    fn code(self) -> u8 {
        CrashPoint::ALL.iter().position(|p| *p == self).map_or(0, |i| i as u8 + 1)
    }

    /// Whether only home passes this step (a read region passes
    /// `frames-applied`; every node passes `index-applied`).
    pub fn runs_at_home(self) -> bool {
        !matches!(self, CrashPoint::FramesApplied)
    }

    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::PushAccepted => "push-accepted",
            CrashPoint::ChunkWritten => "chunk-written",
            CrashPoint::PushFinished => "push-finished",
            CrashPoint::IndexApplied => "index-applied",
            CrashPoint::LogSequenced => "log-sequenced",
            CrashPoint::FramesApplied => "frames-applied",
        }
    }
}

/// The armed crash point (0: none).
static ARMED: AtomicU8 = AtomicU8::new(0);
/// How far the node's clock is moved from the machine's, in milliseconds.
static SKEW_MS: AtomicI64 = AtomicI64::new(0);

/// Arms `point` (or disarms, with `None`): the next pass through it aborts.
pub fn arm(point: Option<CrashPoint>) {
    ARMED.store(point.map_or(0, CrashPoint::code), Ordering::SeqCst);
}

/// Aborts the process here if `point` is armed: no destructor, no flush,
/// as a crash would.
pub fn crash_point(point: CrashPoint) {
    if ARMED.load(Ordering::Relaxed) == point.code() {
        eprintln!("svc node: crashing on purpose at {} (fault injection)", point.name());
        std::process::abort();
    }
}

/// Moves the node's clock `skew_ms` from the machine's.
pub fn skew(skew_ms: i64) {
    SKEW_MS.store(skew_ms, Ordering::SeqCst);
}

/// The machine's clock moved by the injected skew: the clock of a node
/// run with `fault_injection = true`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SkewedClock;

impl Clock for SkewedClock {
    fn now(&self) -> UnixMs {
        UnixMs(SystemClock.now().0.saturating_add(SKEW_MS.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_crash_point_has_its_own_code_and_name() {
        let codes: std::collections::BTreeSet<u8> = CrashPoint::ALL.iter().map(|p| p.code()).collect();
        assert_eq!(codes.len(), CrashPoint::ALL.len());
        assert!(!codes.contains(&0), "0 means disarmed");
        for point in CrashPoint::ALL {
            let json = serde_json::to_string(&point).unwrap();
            assert_eq!(json, format!("\"{}\"", point.name()));
        }
    }

    #[test]
    fn the_skewed_clock_runs_the_skew_from_the_machines() {
        skew(-90_000);
        let moved = SystemClock.now().0 - SkewedClock.now().0;
        skew(0);
        assert!((89_000..=91_000).contains(&moved), "{moved}");
    }
}
