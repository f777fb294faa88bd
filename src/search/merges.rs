//! Which segments tantivy merges while batches stream in: its log merge
//! policy, over the segments that have settled. A region indexing 1,000
//! records a second commits a small segment every step, and the default
//! policy merged each group of eight as soon as it formed, then the merged
//! ones again (tantivy's merges were 16% of the CPU in the replication
//! profile of 2026-11-28, `benches/README.md`), rewriting documents that
//! the next seconds would rewrite once more. A segment younger than
//! `SETTLE` is left alone; the shard merges everything into one once the
//! stream is quiet (`IndexShard`'s compaction).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

/// How long a new segment is left out of merges.
pub const SETTLE: Duration = Duration::from_secs(3);

#[derive(Debug, Default)]
pub struct SettledFirst {
    policy: LogMergePolicy,
    /// When each live segment was first offered to the policy.
    first_seen: Mutex<HashMap<SegmentId, Instant>>,
}

impl SettledFirst {
    /// The candidates among `segments` as of `now`.
    fn candidates_at(&self, segments: &[SegmentMeta], now: Instant) -> Vec<MergeCandidate> {
        let mut first_seen = self.first_seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Forget the segments merged away or deleted.
        first_seen.retain(|id, _| segments.iter().any(|s| s.id() == *id));
        let settled: Vec<SegmentMeta> = segments
            .iter()
            .filter(|s| now.saturating_duration_since(*first_seen.entry(s.id()).or_insert(now)) >= SETTLE)
            .cloned()
            .collect();
        drop(first_seen);
        self.policy.compute_merge_candidates(&settled)
    }
}

impl MergePolicy for SettledFirst {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        self.candidates_at(segments, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_small_segments_is_merged_only_once_they_have_settled() {
        let index = tantivy::Index::create_in_ram(tantivy::schema::Schema::builder().build());
        let segments: Vec<SegmentMeta> =
            (0..10).map(|_| index.new_segment_meta(SegmentId::generate_random(), 100)).collect();
        // tantivy's own policy merges them the moment it sees them.
        assert!(!LogMergePolicy::default().compute_merge_candidates(&segments).is_empty());
        let policy = SettledFirst::default();
        let now = Instant::now();
        assert!(policy.candidates_at(&segments, now).is_empty(), "all fresh");
        assert!(policy.candidates_at(&segments, now + SETTLE / 2).is_empty(), "still fresh");
        let merged = policy.candidates_at(&segments, now + SETTLE);
        assert_eq!(merged.iter().map(|c| c.0.len()).sum::<usize>(), 10, "every settled segment in a merge");
        // A segment merged away is forgotten; a new one starts fresh.
        let newer = [segments[0].clone(), index.new_segment_meta(SegmentId::generate_random(), 100)];
        assert!(policy.candidates_at(&newer, now + SETTLE).is_empty());
        assert_eq!(policy.first_seen.lock().unwrap().len(), 2);
    }
}
