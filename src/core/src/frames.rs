//! Replication frames: how log entries travel from home to a read region.
//!
//! A frame is `seq` (8 bytes, big-endian), the payload's length (4 bytes,
//! big-endian), the payload (the entry, opaque here), and a checksum: the
//! first 8 bytes of SHA-256 over everything before it. A reader takes frames
//! in order and stops at the first one that is cut short, fails its
//! checksum, or does not carry the next sequence number: what came before
//! it is good, and the rest is fetched again. Nothing after a bad frame is
//! ever handed out, so a region never applies a gap or a corrupt entry.

use sha2::{Digest, Sha256};

const HEADER: usize = 12;
const CHECKSUM: usize = 8;

/// The largest payload a frame may carry; a longer declared length is
/// corruption, refused before anything is read past it.
pub const MAX_PAYLOAD: usize = 64 * 1024 * 1024;

/// Why a reader stopped before the end of the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame {seq} is cut short")]
    Truncated { seq: u64 },
    #[error("frame {seq} fails its checksum")]
    Corrupt { seq: u64 },
    #[error("frame {got} where {expected} was expected")]
    Gap { expected: u64, got: u64 },
    #[error("frame {seq} declares {len} bytes, beyond the limit")]
    TooLarge { seq: u64, len: usize },
}

fn checksum(bytes: &[u8]) -> [u8; CHECKSUM] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; CHECKSUM];
    out.copy_from_slice(&digest[..CHECKSUM]);
    out
}

/// Appends one frame to `out`.
pub fn encode(seq: u64, payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum);
}

/// The frames of `bytes` that follow `after` with no gap, in order, and why
/// reading stopped early, if it did.
pub fn decode(bytes: &[u8], after: u64) -> (Vec<(u64, &[u8])>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut rest = bytes;
    let mut expected = after.saturating_add(1);
    while !rest.is_empty() {
        match next_frame(rest, expected) {
            Ok((seq, payload, used)) => {
                frames.push((seq, payload));
                rest = &rest[used..];
                expected = seq.saturating_add(1);
            }
            Err(e) => return (frames, Some(e)),
        }
    }
    (frames, None)
}

fn next_frame(bytes: &[u8], expected: u64) -> Result<(u64, &[u8], usize), FrameError> {
    let seq = bytes.get(..8).map(|b| u64::from_be_bytes(b.try_into().unwrap_or_default()));
    let Some(seq) = seq else { return Err(FrameError::Truncated { seq: expected }) };
    let Some(len) = bytes.get(8..HEADER).map(|b| u32::from_be_bytes(b.try_into().unwrap_or_default()) as usize) else {
        return Err(FrameError::Truncated { seq });
    };
    if len > MAX_PAYLOAD {
        return Err(FrameError::TooLarge { seq, len });
    }
    let end = HEADER + len;
    let Some(sum) = bytes.get(end..end + CHECKSUM) else { return Err(FrameError::Truncated { seq }) };
    // The checksum is judged before the sequence number: a corrupt number
    // must read as corruption, not as a gap.
    if checksum(&bytes[..end]) != sum {
        return Err(FrameError::Corrupt { seq });
    }
    if seq != expected {
        return Err(FrameError::Gap { expected, got: seq });
    }
    Ok((seq, &bytes[HEADER..end], end + CHECKSUM))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(seqs: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for seq in seqs {
            encode(*seq, format!("entry {seq}").as_bytes(), &mut out);
        }
        out
    }

    #[test]
    fn frames_round_trip_in_order() {
        let bytes = frames(&[5, 6, 7]);
        let (got, stopped) = decode(&bytes, 4);
        assert_eq!(stopped, None);
        assert_eq!(got, vec![(5, &b"entry 5"[..]), (6, &b"entry 6"[..]), (7, &b"entry 7"[..])]);
        assert_eq!(decode(&[], 4), (vec![], None));
    }

    #[test]
    fn a_gap_stops_the_reader_and_keeps_the_frames_before_it() {
        let bytes = frames(&[5, 6, 8, 9]);
        let (got, stopped) = decode(&bytes, 4);
        assert_eq!(got.iter().map(|f| f.0).collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!(stopped, Some(FrameError::Gap { expected: 7, got: 8 }));
        // A first frame that is not the next one is a gap too (a duplicate).
        let duplicate = frames(&[4, 5]);
        let (got, stopped) = decode(&duplicate, 4);
        assert!(got.is_empty());
        assert_eq!(stopped, Some(FrameError::Gap { expected: 5, got: 4 }));
    }

    #[test]
    fn every_flipped_bit_is_refused_and_nothing_after_it_is_returned() {
        let bytes = frames(&[1, 2]);
        let first_len = bytes.len() / 2;
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                let (got, stopped) = decode(&bad, 0);
                let good = if i < first_len { 0 } else { 1 };
                assert_eq!(got.len(), good, "byte {i} bit {bit}");
                assert!(stopped.is_some(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn a_cut_frame_is_truncated_and_a_huge_length_is_refused_before_reading() {
        let bytes = frames(&[1, 2]);
        for cut in 1..bytes.len() / 2 {
            let (got, stopped) = decode(&bytes[..bytes.len() - cut], 0);
            assert_eq!(got.len(), 1);
            assert_eq!(stopped, Some(FrameError::Truncated { seq: 2 }));
        }
        let mut huge = Vec::new();
        huge.extend_from_slice(&1u64.to_be_bytes());
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode(&huge, 0).1, Some(FrameError::TooLarge { seq: 1, len: u32::MAX as usize }));
    }
}
