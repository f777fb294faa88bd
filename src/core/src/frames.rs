//! Replication frames: how log entries travel from home to a read region.
//!
//! A frame is `seq` (8 bytes, big-endian), the payload's length (4 bytes,
//! big-endian), the payload, and a checksum: the first 8 bytes of SHA-256
//! over everything before it. The payload is a version byte ([`VERSION`])
//! and the entry (opaque here; version 2 is the entry's running hash,
//! `log_chain`, then the caller's postcard entry). A
//! reader takes frames in order and stops at the first one that is cut
//! short, fails its checksum, carries a version it does not know, or does
//! not carry the next sequence number: what came before it is good, and the
//! rest is fetched again. Nothing after a bad frame is ever handed out, so a
//! region never applies a gap, a corrupt entry or one it would misread.

use sha2::{Digest, Sha256};

const HEADER: usize = 12;
const CHECKSUM: usize = 8;

/// The version byte each payload begins with: the layout of the entry that
/// follows it. A reader refuses any other.
pub const VERSION: u8 = 2;

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
    #[error("frame {seq} has version {version}, which this reader does not know (it reads version {VERSION})")]
    UnknownVersion { seq: u64, version: u8 },
    #[error("frame {seq} is empty: it has no version byte")]
    Empty { seq: u64 },
}

fn checksum(bytes: &[u8]) -> [u8; CHECKSUM] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; CHECKSUM];
    out.copy_from_slice(&digest[..CHECKSUM]);
    out
}

/// Appends one frame carrying `entry` to `out`, its payload the version
/// byte and the entry.
pub fn encode(seq: u64, entry: &[u8], out: &mut Vec<u8>) {
    encode_versioned(seq, VERSION, entry, out)
}

/// Appends one frame whose payload is `version` and `entry` (tests make
/// frames of other versions with it).
pub fn encode_versioned(seq: u64, version: u8, entry: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&((entry.len() + 1) as u32).to_be_bytes());
    out.push(version);
    out.extend_from_slice(entry);
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum);
}

/// The entries of the frames of `bytes` that follow `after` with no gap, in
/// order (each without its version byte), and why reading stopped early, if
/// it did.
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
    // A frame of a version this reader does not know is refused before
    // anything else is judged of it: its entry would be misread.
    let entry = match bytes[HEADER..end].split_first() {
        Some((&VERSION, entry)) => entry,
        Some((&version, _)) => return Err(FrameError::UnknownVersion { seq, version }),
        None => return Err(FrameError::Empty { seq }),
    };
    if seq != expected {
        return Err(FrameError::Gap { expected, got: seq });
    }
    Ok((seq, entry, end + CHECKSUM))
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

    #[test]
    fn a_frame_of_an_unknown_version_stops_the_reader_and_names_the_version() {
        let mut bytes = frames(&[1]);
        encode_versioned(2, VERSION + 1, b"entry 2", &mut bytes);
        encode(3, b"entry 3", &mut bytes);
        let (got, stopped) = decode(&bytes, 0);
        assert_eq!(got, vec![(1, &b"entry 1"[..])], "nothing from the unknown frame on");
        assert_eq!(stopped, Some(FrameError::UnknownVersion { seq: 2, version: VERSION + 1 }));
        assert!(stopped.unwrap().to_string().contains(&format!("version {}", VERSION + 1)));
        // A payload with no version byte at all is refused too.
        let mut empty = Vec::new();
        empty.extend_from_slice(&1u64.to_be_bytes());
        empty.extend_from_slice(&0u32.to_be_bytes());
        let sum = checksum(&empty);
        empty.extend_from_slice(&sum);
        assert_eq!(decode(&empty, 0), (vec![], Some(FrameError::Empty { seq: 1 })));
    }

    #[test]
    fn the_version_byte_leads_the_payload() {
        let mut bytes = Vec::new();
        encode(7, b"xy", &mut bytes);
        let mut expected = Vec::new();
        expected.extend_from_slice(&7u64.to_be_bytes());
        expected.extend_from_slice(&3u32.to_be_bytes());
        expected.extend_from_slice(&[VERSION, b'x', b'y']);
        let sum = checksum(&expected);
        expected.extend_from_slice(&sum);
        assert_eq!(bytes, expected);
    }
}
