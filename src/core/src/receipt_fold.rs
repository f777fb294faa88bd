//! Receipt folding: a region's receipts, in served order, cut into minutes
//! and each minute folded into an RFC 6962 Merkle tree whose leaves are the
//! receipt envelopes' bytes. The roots go home for the transparency log; a
//! receipt is proven by its place in its minute, and the minute in the log.
//!
//! Receipts come in the order the region served them. A run of receipts of
//! one minute closes when a receipt of another minute follows it (in the
//! slice folded, or as the newest receipt stored), when the
//! minute has been over for [`GRACE_MS`], or when the region stops (a
//! flush). A receipt of a minute already folded (a straggler) starts a new
//! part of that minute: each part is named by its first receipt's sequence.

use crate::merkle::{BatchTree, Hash};
use crate::time::UnixMs;

/// How long after a minute ends its receipts may still be arriving: longer
/// than any answer takes between its stamp and its receipt being stored.
pub const GRACE_MS: i64 = 10_000;
const MINUTE_MS: i64 = 60_000;

/// One receipt as folding sees it: its sequence, when it was served, and
/// its leaf hash (`merkle::leaf_hash` of its envelope's bytes).
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub seq: u64,
    pub served_at: UnixMs,
    pub leaf: Hash,
}

/// A folded part of a minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinutePart {
    /// The minute's start.
    pub minute: UnixMs,
    pub first_seq: u64,
    pub last_seq: u64,
    pub size: u64,
    pub root: Hash,
    /// The leaf hash of each receipt, in served order: the first level of
    /// a receipt's proof, kept so it need not read the receipts again.
    pub leaves: Vec<Hash>,
}

fn minute_of(at: UnixMs) -> UnixMs {
    UnixMs(at.0.div_euclid(MINUTE_MS) * MINUTE_MS)
}

/// Whether a fold may close anything, judged from the first receipt not
/// yet folded and the newest one: their minutes differ, or the first one's
/// minute is over. When neither holds, every receipt between them is (in
/// the usual served order) of one open minute, so a region need not read
/// them all each second. A receipt served out of order only waits for its
/// minute's grace; the parts folded then are the same.
pub fn may_close(first_served_at: UnixMs, newest_served_at: UnixMs, now: UnixMs) -> bool {
    let minute = minute_of(first_served_at);
    minute != minute_of(newest_served_at) || now.0 >= minute.0 + MINUTE_MS + GRACE_MS
}

/// Folds the closed runs of `receipts` (served order, from the first not
/// yet folded; `newest` is when the newest receipt stored was served, which
/// may lie beyond the slice). Answers the parts, oldest first; receipts
/// after the last part's `last_seq` stay for a later call.
pub fn fold(receipts: &[Served], newest: UnixMs, now: UnixMs, flush: bool) -> Vec<MinutePart> {
    let mut parts = Vec::new();
    let mut start = 0;
    while start < receipts.len() {
        let minute = minute_of(receipts[start].served_at);
        let end = receipts[start..]
            .iter()
            .position(|r| minute_of(r.served_at) != minute)
            .map_or(receipts.len(), |n| start + n);
        let followed = end < receipts.len() || minute_of(newest) != minute;
        let closed = followed || flush || now.0 >= minute.0 + MINUTE_MS + GRACE_MS;
        if !closed {
            break;
        }
        let run = &receipts[start..end];
        let leaves: Vec<Hash> = run.iter().map(|r| r.leaf).collect();
        parts.push(MinutePart {
            minute,
            first_seq: run[0].seq,
            last_seq: run[run.len() - 1].seq,
            size: run.len() as u64,
            root: BatchTree::from_leaf_hashes(&leaves).root(),
            leaves,
        });
        start = end;
    }
    parts
}

/// The inclusion proof of the receipt at `index` in its part (the part's
/// receipts in served order), checked by `merkle::verify_inclusion`.
pub fn proof(part_envelopes: &[&[u8]], index: usize) -> Option<Vec<Hash>> {
    BatchTree::from_records(part_envelopes).inclusion_proof(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::leaf_hash;

    const T: i64 = 1_795_000_040_000; // 20 s into a minute

    fn served(seq: u64, at: i64, body: &[u8]) -> Served {
        Served { seq, served_at: UnixMs(at), leaf: leaf_hash(body) }
    }

    #[test]
    fn a_minute_closes_when_the_next_begins_or_its_grace_is_over() {
        let receipts = [served(1, T, b"a"), served(2, T + 1_000, b"b"), served(3, T + 60_000, b"c")];
        let newest = receipts[2].served_at;
        let parts = fold(&receipts, newest, UnixMs(T + 60_000), false);
        assert_eq!(parts.len(), 1, "the second minute is still open");
        assert_eq!((parts[0].first_seq, parts[0].last_seq, parts[0].size), (1, 2, 2));
        assert_eq!(parts[0].minute, UnixMs(T - 20_000));
        assert_eq!(parts[0].root, BatchTree::from_records(&[b"a", b"b"]).root());
        let later = fold(&receipts[2..], newest, UnixMs(T - 20_000 + 120_000 + GRACE_MS), false);
        assert_eq!(later.len(), 1, "over with its grace");
        assert_eq!(later[0].root, leaf_hash(b"c"), "one leaf: the root is its hash");
        assert!(fold(&receipts[2..], newest, UnixMs(T + 60_000), false).is_empty());
        assert_eq!(fold(&receipts[2..], newest, UnixMs(T + 60_000), true).len(), 1, "a flush closes it");
    }

    #[test]
    fn a_slice_of_a_minute_closes_when_a_later_minute_was_served_beyond_it() {
        // A pass reads a slice of the first minute only; the newest receipt
        // stored is of the next minute, so the slice is closed at once.
        let slice = [served(1, T, b"a"), served(2, T + 1_000, b"b")];
        let parts = fold(&slice, UnixMs(T + 40_000), UnixMs(T + 40_001), false);
        assert_eq!(parts.iter().map(|p| (p.first_seq, p.size)).collect::<Vec<_>>(), [(1, 2)]);
        // While the newest is of the same minute, the slice waits.
        assert!(fold(&slice, UnixMs(T + 39_000), UnixMs(T + 39_001), false).is_empty());
    }

    #[test]
    fn nothing_may_close_while_the_first_waiting_minute_is_open_and_alone() {
        let (first, newest) = (UnixMs(T), UnixMs(T + 15_000));
        assert!(!may_close(first, newest, UnixMs(T + 20_000)));
        // Its grace is over.
        assert!(may_close(first, newest, UnixMs(T - 20_000 + MINUTE_MS + GRACE_MS)));
        // The next minute has begun.
        assert!(may_close(first, UnixMs(T + 40_000), UnixMs(T + 40_000)));
        // The verdict agrees with what a fold of the same receipts makes.
        let receipts = [served(1, T, b"a"), served(2, T + 15_000, b"b")];
        assert!(fold(&receipts, newest, UnixMs(T + 20_000), false).is_empty());
    }

    #[test]
    fn a_straggler_starts_its_own_part_and_every_receipt_is_provable() {
        let receipts =
            [served(1, T, b"a"), served(2, T + 60_000, b"b"), served(3, T + 1, b"late"), served(4, T + 60_001, b"d")];
        let parts = fold(&receipts, receipts[3].served_at, UnixMs(T + 200_000), false);
        let shape: Vec<(u64, u64, UnixMs)> = parts.iter().map(|p| (p.first_seq, p.size, p.minute)).collect();
        assert_eq!(
            shape,
            [
                (1, 1, UnixMs(T - 20_000)),
                (2, 1, UnixMs(T + 40_000)),
                (3, 1, UnixMs(T - 20_000)),
                (4, 1, UnixMs(T + 40_000))
            ]
        );
        let envelopes: [&[u8]; 3] = [b"x", b"y", b"z"];
        let root = BatchTree::from_records(&envelopes).root();
        for (i, e) in envelopes.iter().enumerate() {
            let path = proof(&envelopes, i).unwrap();
            assert!(crate::merkle::verify_inclusion(&leaf_hash(e), i as u64, 3, &path, &root));
        }
    }
}
