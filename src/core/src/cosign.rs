//! Witnesses' cosignatures on the log's checkpoints: the Ed25519
//! `cosignature/v1` of c2sp.org/tlog-cosignature, and the pure half of
//! c2sp.org/tlog-witness (the `add-checkpoint` body the log sends, the
//! answers a witness gives). A cosigned checkpoint is the log's note with
//! the witnesses' signature lines after its own, so a verifier that knows
//! only the log's key reads it as before.

use crate::Reason;
use crate::b64;
use crate::digest::sha256;
use crate::keys::{SigningKey, VerifyingKey};
use crate::merkle::Hash;

/// The signature type byte of an Ed25519 `cosignature/v1` key.
pub const COSIGNATURE_V1: u8 = 0x04;
/// The most consistency proof lines a request may carry.
pub const MAX_PROOF_LINES: usize = 63;
/// The longest answer read from a witness: a few signature lines.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024;
/// The content type of a witness's `409 Conflict`, which names its size.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// Why a witness's key, as configured, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessKeyError {
    #[error("a witness key is <name>+<8 hex digits>+<base64 of 0x04 and a 32-byte Ed25519 key>")]
    Shape,
    #[error("the key is not an Ed25519 cosignature/v1 key (type 0x04)")]
    Type,
    #[error("the key id does not match the name and key")]
    Id,
}

/// A witness as the log is configured with it: its name, key id and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessKey {
    pub name: String,
    pub id: [u8; 4],
    key: ed25519_dalek::VerifyingKey,
}

fn key_id(name: &str, key: &ed25519_dalek::VerifyingKey) -> [u8; 4] {
    let mut input = Vec::with_capacity(name.len() + 34);
    input.extend_from_slice(name.as_bytes());
    input.push(b'\n');
    input.push(COSIGNATURE_V1);
    input.extend_from_slice(key.as_bytes());
    let digest = sha256(&input);
    [digest[0], digest[1], digest[2], digest[3]]
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

impl WitnessKey {
    /// Reads a verifier key: `<name>+<hex key id>+<base64(0x04 || key)>`.
    pub fn parse(vkey: &str) -> Result<WitnessKey, WitnessKeyError> {
        let mut parts = vkey.splitn(3, '+');
        let (Some(name), Some(id), Some(encoded)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(WitnessKeyError::Shape);
        };
        let id: [u8; 4] = hex::decode(id)
            .ok()
            .filter(|_| id.len() == 8)
            .and_then(|id| id.try_into().ok())
            .ok_or(WitnessKeyError::Shape)?;
        let bytes = b64::std_decode(encoded).ok_or(WitnessKeyError::Shape)?;
        let (&kind, key) = bytes.split_first().ok_or(WitnessKeyError::Shape)?;
        if kind != COSIGNATURE_V1 {
            return Err(WitnessKeyError::Type);
        }
        let key: [u8; 32] = key.try_into().map_err(|_| WitnessKeyError::Shape)?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(|_| WitnessKeyError::Shape)?;
        if !valid_name(name) {
            return Err(WitnessKeyError::Shape);
        }
        if key_id(name, &key) != id {
            return Err(WitnessKeyError::Id);
        }
        Ok(WitnessKey { name: name.to_owned(), id, key })
    }

    /// A witness key from its name and public key (an Ed25519 key only).
    pub fn new(name: &str, key: &VerifyingKey) -> Option<WitnessKey> {
        let VerifyingKey::Ed25519(key) = key else { return None };
        valid_name(name).then(|| WitnessKey { name: name.to_owned(), id: key_id(name, key), key: *key })
    }

    /// The verifier key string, as `parse` reads it.
    pub fn vkey(&self) -> String {
        let mut encoded = vec![COSIGNATURE_V1];
        encoded.extend_from_slice(self.key.as_bytes());
        format!("{}+{}+{}", self.name, hex::encode(self.id), b64::std_encode(&encoded))
    }

    /// Judges one note signature line over the checkpoint `text`: `Ok(None)`
    /// for another key's line, the cosignature's time when it is this
    /// witness's and verifies, `Err` when it claims this key and does not.
    pub fn check_line(&self, line: &str, text: &str) -> Result<Option<u64>, Reason> {
        let invalid = Reason::CheckpointInvalid;
        let rest = line.strip_prefix("\u{2014} ").ok_or(invalid)?;
        let (signer, encoded) = rest.split_once(' ').ok_or(invalid)?;
        let signature = b64::std_decode(encoded).ok_or(invalid)?;
        if signer != self.name || signature.get(..4) != Some(self.id.as_slice()) {
            return Ok(None);
        }
        // key id, then the timestamped signature: a u64 time and 64 bytes.
        let body: &[u8; 72] = signature[4..].try_into().map_err(|_| Reason::SignatureInvalid)?;
        let timestamp = u64::from_be_bytes(body[..8].try_into().map_err(|_| invalid)?);
        if timestamp > i64::MAX as u64 {
            return Err(Reason::SignatureInvalid);
        }
        let signed = ed25519_dalek::Signature::from_bytes(body[8..].try_into().map_err(|_| invalid)?);
        self.key
            .verify_strict(cosigned_message(text, timestamp).as_bytes(), &signed)
            .map_err(|_| Reason::SignatureInvalid)?;
        Ok(Some(timestamp))
    }
}

/// What a `cosignature/v1` signs: its header, its time, then the note text.
pub fn cosigned_message(text: &str, timestamp: u64) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{text}")
}

/// A witness's signature line over a checkpoint's `text` (the witness's
/// half, for tests and drills).
pub fn cosign(text: &str, name: &str, key: &SigningKey, timestamp: u64) -> Option<String> {
    let witness = WitnessKey::new(name, &key.verifying_key())?;
    let mut signature = witness.id.to_vec();
    signature.extend_from_slice(&timestamp.to_be_bytes());
    signature.extend_from_slice(&key.sign(cosigned_message(text, timestamp).as_bytes()));
    Some(format!("\u{2014} {name} {}", b64::std_encode(&signature)))
}

/// The body of `POST <prefix>/add-checkpoint`: the old size, the
/// consistency proof from it, an empty line, then the signed checkpoint.
pub fn add_checkpoint_body(old: u64, proof: &[Hash], note: &str) -> String {
    let mut body = format!("old {old}\n");
    for hash in proof {
        body.push_str(&b64::std_encode(hash));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(note);
    body
}

/// A witness's `409 Conflict`: the size it last cosigned, as it says it.
pub fn parse_size(body: &str) -> Option<u64> {
    let size = body.strip_suffix('\n')?;
    let canonical = !size.is_empty() && (size == "0" || !size.starts_with('0'));
    if canonical && size.bytes().all(|b| b.is_ascii_digit()) { size.parse().ok() } else { None }
}

/// The witness's cosignature in its `200` answer over `text`: the line and
/// its time. A line by this key that does not verify refuses the answer;
/// other keys' lines are ignored, as the protocol asks.
pub fn cosignature_in(answer: &str, text: &str, witness: &WitnessKey) -> Result<Option<(String, u64)>, Reason> {
    if answer.len() > MAX_ANSWER_BYTES || !answer.ends_with('\n') {
        return Err(Reason::CheckpointInvalid);
    }
    let mut found = None;
    for line in answer.lines() {
        if let Some(timestamp) = witness.check_line(line, text)? {
            found = Some((line.to_owned(), timestamp));
        }
    }
    Ok(found)
}

/// The note with cosignature lines after the log's own signatures.
pub fn cosigned_note(note: &str, lines: &[String]) -> String {
    let mut cosigned = note.to_owned();
    for line in lines {
        cosigned.push_str(line);
        cosigned.push('\n');
    }
    cosigned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;
    use crate::tlog::{Checkpoint, open_note};

    fn witness_key(seed: u8) -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[seed; 32]).unwrap()
    }

    fn checkpoint_note(log: &SigningKey) -> (Checkpoint, String) {
        let checkpoint = Checkpoint { origin: "svc.test/log".into(), size: 5, root: [7; 32] };
        let note = checkpoint.sign(log).unwrap();
        (checkpoint, note)
    }

    #[test]
    fn a_witness_key_reads_back_and_its_id_is_checked() {
        let key = witness_key(1);
        let witness = WitnessKey::new("witness.test/w1", &key.verifying_key()).unwrap();
        assert_eq!(WitnessKey::parse(&witness.vkey()), Ok(witness.clone()));
        let vkey = witness.vkey();
        let (name_and_id, encoded) = vkey.rsplit_once('+').unwrap();
        let wrong_id = format!("{}+00000000+{encoded}", &name_and_id[..name_and_id.len() - 9]);
        assert_eq!(WitnessKey::parse(&wrong_id), Err(WitnessKeyError::Id));
        let mut note_key = b64::std_decode(encoded).unwrap();
        note_key[0] = 0x01;
        let note_type = format!("{name_and_id}+{}", b64::std_encode(&note_key));
        assert_eq!(WitnessKey::parse(&note_type), Err(WitnessKeyError::Type), "a note key is not a cosigning key");
        for bad in ["", "a+b", "name+0102+AAAA", "has space+01020304+BAAA", "n+zzzzzzzz+BA=="] {
            assert_eq!(WitnessKey::parse(bad), Err(WitnessKeyError::Shape), "{bad}");
        }
    }

    #[test]
    fn a_cosignature_verifies_and_the_note_still_opens_under_the_logs_key() {
        let log = witness_key(9);
        let (checkpoint, note) = checkpoint_note(&log);
        let text = checkpoint.text();
        let key = witness_key(1);
        let witness = WitnessKey::new("witness.test/w1", &key.verifying_key()).unwrap();
        let line = cosign(&text, "witness.test/w1", &key, 1_795_000_000).unwrap();
        let answer = format!("{line}\n");
        assert_eq!(cosignature_in(&answer, &text, &witness), Ok(Some((line.clone(), 1_795_000_000))));
        let cosigned = cosigned_note(&note, std::slice::from_ref(&line));
        assert_eq!(open_note(&cosigned, "svc.test/log", &log.verifying_key()), Ok(text.as_str()));
        // The same line over another checkpoint's text does not verify.
        let other = Checkpoint { size: 6, ..checkpoint }.text();
        assert_eq!(cosignature_in(&answer, &other, &witness), Err(Reason::SignatureInvalid));
        // Another witness's line is ignored, not refused.
        let stranger = cosign(&text, "witness.test/w2", &witness_key(2), 1).unwrap();
        assert_eq!(cosignature_in(&format!("{stranger}\n"), &text, &witness), Ok(None));
        // A line by this key with a flipped time does not verify.
        let mut raw = b64::std_decode(line.rsplit_once(' ').unwrap().1).unwrap();
        raw[11] ^= 1;
        let forged = format!("\u{2014} witness.test/w1 {}\n", b64::std_encode(&raw));
        assert_eq!(cosignature_in(&forged, &text, &witness), Err(Reason::SignatureInvalid));
        assert_eq!(cosignature_in("garbage\n", &text, &witness), Err(Reason::CheckpointInvalid));
        assert_eq!(cosignature_in(&line, &text, &witness), Err(Reason::CheckpointInvalid), "lines end in newlines");
    }

    #[test]
    fn the_add_checkpoint_body_and_size_answers_are_as_the_protocol_writes_them() {
        let log = witness_key(9);
        let (_, note) = checkpoint_note(&log);
        let body = add_checkpoint_body(3, &[[0; 32], [255; 32]], &note);
        let expected = format!(
            "old 3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n//////////////////////////////////////////8=\n\n{note}"
        );
        assert_eq!(body, expected);
        assert_eq!(add_checkpoint_body(0, &[], &note), format!("old 0\n\n{note}"));
        assert_eq!(parse_size("20852014\n"), Some(20_852_014));
        assert_eq!(parse_size("0\n"), Some(0));
        for bad in ["", "\n", "12", "012\n", "-1\n", "1 2\n", "99999999999999999999999\n"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }
}
