//! The replication log's running hash: each entry's hash chains the one
//! before it, so one hash at a sequence number stands for the whole
//! history up to there.
//!
//! Home computes it as it commits an entry (over the entry's bytes then:
//! a later purge rewrites an entry, never its hash) and sends it with each
//! frame. A read region keeps home's hashes and, on every page, compares
//! home's hash at the entry it resumes after with its own. Two histories
//! that differ anywhere up to there differ there, so a home restored from
//! a backup, or any other fork, is found and never merged.

use sha2::{Digest, Sha256};

/// A running hash.
pub type Hash = [u8; 32];

/// The running hash before the first entry.
pub const GENESIS: Hash = [0; 32];

/// The running hash after entry `seq`, whose bytes are `entry`, follows
/// `previous`.
pub fn next(previous: &Hash, seq: u64, entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update(b"svc-log-chain/1\0");
    h.update(previous);
    h.update(seq.to_be_bytes());
    h.update(Sha256::digest(entry));
    h.finalize().into()
}

/// Why a region must not apply a page of home's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fork {
    #[error(
        "home's log ends at entry {head}, before entry {applied} this region applied: home lost entries \
         (restored from a backup?) and would write others under their numbers"
    )]
    HomeBehind { head: u64, applied: u64 },
    #[error(
        "home's history differs from this region's at entry {seq}: home's running hash there is {home}, this region's is {own}"
    )]
    Differs { seq: u64, home: String, own: String },
}

/// Judges a page of home's log against a region's history: the region
/// holds entries up to `applied` (its running hash there `own`, if it kept
/// one); home's newest entry is `head`, and its running hash at `applied`
/// is `home`.
pub fn judge(applied: u64, own: Option<&Hash>, head: u64, home: Option<&Hash>) -> Result<(), Fork> {
    if head < applied {
        return Err(Fork::HomeBehind { head, applied });
    }
    match (own, home) {
        (Some(own), Some(home)) if own != home => {
            Err(Fork::Differs { seq: applied, home: hex::encode(home), own: hex::encode(own) })
        }
        _ => Ok(()),
    }
}

/// The log head a page of home's log carries (its header's value): home's
/// newest sequence number, then (hex) home's running hash at the entry the
/// page follows, when home has one there.
pub fn head_value(head: u64, at_after: Option<&Hash>) -> String {
    match at_after {
        Some(hash) => format!("{head} {}", hex::encode(hash)),
        None => head.to_string(),
    }
}

/// Reads a log head value; `None` when it is not one.
pub fn parse_head_value(value: &str) -> Option<(u64, Option<Hash>)> {
    let mut parts = value.split(' ');
    let head = parts.next()?.parse().ok()?;
    let hash = match parts.next() {
        Some(hex) => Some(hex::decode(hex).ok()?.try_into().ok()?),
        None => None,
    };
    parts.next().is_none().then_some((head, hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_hash_stands_for_every_entry_before_it() {
        let chain = |entries: &[&[u8]]| {
            entries.iter().enumerate().fold(GENESIS, |hash, (i, entry)| next(&hash, i as u64 + 1, entry))
        };
        let ours = chain(&[b"a", b"b", b"c"]);
        assert_eq!(ours, chain(&[b"a", b"b", b"c"]), "the same history, the same hash");
        assert_ne!(ours, chain(&[b"x", b"b", b"c"]), "a first entry that differs shows at the third");
        assert_ne!(ours, chain(&[b"a", b"b", b"d"]));
        // The number is part of it: the same bytes under another number differ.
        assert_ne!(next(&GENESIS, 1, b"a"), next(&GENESIS, 2, b"a"));
    }

    #[test]
    fn a_region_refuses_a_home_behind_it_or_with_another_hash_where_it_resumes() {
        let (own, other) = (next(&GENESIS, 1, b"a"), next(&GENESIS, 1, b"b"));
        assert_eq!(judge(1, Some(&own), 5, Some(&own)), Ok(()));
        assert!(matches!(judge(1, Some(&own), 5, Some(&other)), Err(Fork::Differs { seq: 1, .. })));
        assert_eq!(judge(7, Some(&own), 5, None), Err(Fork::HomeBehind { head: 5, applied: 7 }));
        // A region with no hash of its own (a first pull) takes home's.
        assert_eq!(judge(1, None, 5, Some(&other)), Ok(()));
        assert_eq!(judge(0, None, 0, None), Ok(()));
        let said = judge(1, Some(&own), 5, Some(&other)).unwrap_err().to_string();
        assert!(said.contains(&hex::encode(other)) && said.contains("entry 1"), "{said}");
    }

    #[test]
    fn a_log_head_value_reads_back_and_nothing_else_reads() {
        let hash = next(&GENESIS, 1, b"a");
        assert_eq!(parse_head_value(&head_value(9, Some(&hash))), Some((9, Some(hash))));
        assert_eq!(parse_head_value(&head_value(9, None)), Some((9, None)));
        for bad in ["", "x", "9 zz", "9 abcd", &format!("9 {} 1", hex::encode(hash))] {
            assert_eq!(parse_head_value(bad), None, "{bad}");
        }
    }
}
