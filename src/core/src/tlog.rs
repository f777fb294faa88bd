//! The transparency log's pure half (publishing 4.2): what each leaf holds,
//! the tree kept as complete subtrees, and checkpoints as C2SP signed notes
//! (c2sp.org/tlog-checkpoint over c2sp.org/signed-note), so that standard
//! witnesses and verifiers read them as they read any other log.
//!
//! Leaves are RFC 6962 leaves over canonical JSON bytes (RFC 8785): a seal is
//! its envelope, a key event and a region's receipt minute are small objects
//! with a `kind`. A leaf is named by `sha256:` of its RFC 6962 leaf hash.

use serde::Serialize;
use serde_json::{Value, json};

use crate::Reason;
use crate::b64;
use crate::digest::{parse_sha256_form, sha256};
use crate::dsse::Envelope;
use crate::keys::{SigningKey, VerifyingKey};
use crate::merkle::{self, Hash};
use crate::time::UnixMs;

/// Leaves are sequenced once an hour (P4.2.40, P8.19): a fresh seal or key
/// is not in the log until the next hour has been sequenced.
pub const SEQUENCE_EVERY_MS: i64 = 60 * 60 * 1000;

/// The longest note a verifier reads: a checkpoint is a few hundred bytes,
/// and C2SP asks verifiers to accept 16 signatures of up to 5 kB.
pub const MAX_NOTE_BYTES: usize = 96 * 1024;

/// `sha256:<hex>` naming a leaf: its RFC 6962 leaf hash.
pub fn leaf_name(data: &[u8]) -> String {
    merkle::root_form(&merkle::leaf_hash(data))
}

/// A leaf's hash from its `sha256:<hex>` name.
pub fn parse_leaf_name(name: &str) -> Option<Hash> {
    parse_sha256_form(name)
}

fn canonical<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // Strings and small integers only: canonical form never fails.
    crate::canonical::to_signed_bytes(value).unwrap_or_default()
}

/// A seal's leaf: its envelope (a batch seal, or a record's own seal) in
/// canonical form. Every record of a batch shares its batch seal's leaf.
pub fn seal_leaf(envelope: &Envelope) -> Vec<u8> {
    canonical(envelope)
}

/// A business key's `key_added` leaf. The key id is the JWK's thumbprint,
/// so the leaf binds the key itself.
pub fn key_added_leaf(business_uuid: &str, key_id: &str, purpose: &str, valid_from: UnixMs) -> Vec<u8> {
    canonical(&json!({
        "v": 1,
        "kind": "key_added",
        "business_uuid": business_uuid,
        "key_id": key_id,
        "purpose": purpose,
        "valid_from": valid_from.to_rfc3339_millis(),
    }))
}

/// A business key's revocation, with its compromise moment if it was stolen.
pub fn key_revoked_leaf(
    business_uuid: &str,
    key_id: &str,
    effective_from: UnixMs,
    compromised_at: Option<UnixMs>,
) -> Vec<u8> {
    canonical(&json!({
        "v": 1,
        "kind": "key_revoked",
        "business_uuid": business_uuid,
        "key_id": key_id,
        "revocation_effective_from": effective_from.to_rfc3339_millis(),
        "compromised_at": compromised_at.map(UnixMs::to_rfc3339_millis),
    }))
}

/// A custody statement issued for a business key (a switch to or from
/// hosted signing): which statement, so the log shows when custody changed.
pub fn key_custody_leaf(
    business_uuid: &str,
    key_id: &str,
    custody: &str,
    effective_from: UnixMs,
    statement_id: &str,
) -> Vec<u8> {
    canonical(&json!({
        "v": 1,
        "kind": "key_custody",
        "business_uuid": business_uuid,
        "key_id": key_id,
        "custody": custody,
        // As the statement itself says it.
        "effective_from": effective_from.to_rfc3339_secs(),
        "statement_id": statement_id,
    }))
}

/// One folded part of a region's receipt minute, as its log leaf names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptMinute {
    pub region: String,
    pub minute: UnixMs,
    pub first_seq: u64,
    pub last_seq: u64,
    pub size: u64,
    pub root: Hash,
}

impl ReceiptMinute {
    pub fn leaf(&self) -> Vec<u8> {
        canonical(&json!({
            "v": 1,
            "kind": "receipt_minute",
            "region": self.region,
            "minute": self.minute.to_rfc3339_secs(),
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "size": self.size,
            "root": merkle::root_form(&self.root),
        }))
    }

    /// Reads a `receipt_minute` leaf; anything else is malformed.
    pub fn parse(leaf: &[u8]) -> Result<ReceiptMinute, Reason> {
        let value: Value = serde_json::from_slice(leaf).map_err(|_| Reason::PayloadMalformed)?;
        let text = |name: &str| value.get(name).and_then(Value::as_str).ok_or(Reason::PayloadMalformed);
        let number = |name: &str| value.get(name).and_then(Value::as_u64).ok_or(Reason::PayloadMalformed);
        if value.get("v").and_then(Value::as_u64) != Some(1) {
            return Err(Reason::VersionUnknown);
        }
        if text("kind")? != "receipt_minute" {
            return Err(Reason::PayloadMalformed);
        }
        let minute = ReceiptMinute {
            region: text("region")?.to_owned(),
            minute: UnixMs::parse_rfc3339(text("minute")?).ok_or(Reason::PayloadMalformed)?,
            first_seq: number("first_seq")?,
            last_seq: number("last_seq")?,
            size: number("size")?,
            root: parse_sha256_form(text("root")?).ok_or(Reason::PayloadMalformed)?,
        };
        // Only the exact bytes this leaf would have are that leaf.
        if minute.leaf() != leaf {
            return Err(Reason::PayloadMalformed);
        }
        Ok(minute)
    }
}

/// The log's tree, kept as every complete subtree: `levels[h][i]` is the
/// hash of leaves `i·2^h .. (i+1)·2^h`. Appending is O(log n); a root,
/// an inclusion proof or a consistency proof at any earlier size is
/// O(log² n) hashes.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    levels: Vec<Vec<Hash>>,
}

impl Tree {
    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |leaves| leaves.len() as u64)
    }

    pub fn push(&mut self, leaf: Hash) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        self.levels[0].push(leaf);
        let mut h = 0;
        while self.levels[h].len().is_multiple_of(2) {
            let n = self.levels[h].len();
            let parent = merkle::node_hash(&self.levels[h][n - 2], &self.levels[h][n - 1]);
            if self.levels.len() == h + 1 {
                self.levels.push(Vec::new());
            }
            self.levels[h + 1].push(parent);
            h += 1;
        }
    }

    /// Forgets every leaf from `size` on (an append that was not stored).
    pub fn truncate(&mut self, size: u64) {
        for (h, level) in self.levels.iter_mut().enumerate() {
            level.truncate((size >> h) as usize);
        }
    }

    /// MTH(D[start..end]); `start < end <= size`.
    fn mth(&self, start: usize, end: usize) -> Hash {
        let n = end - start;
        if n.is_power_of_two() && start.is_multiple_of(n) {
            return self.levels[n.trailing_zeros() as usize][start / n];
        }
        let k = merkle::split(n);
        merkle::node_hash(&self.mth(start, start + k), &self.mth(start + k, end))
    }

    /// The root of the tree's first `size` leaves.
    pub fn root(&self, size: u64) -> Option<Hash> {
        match size {
            0 => Some(merkle::empty_root()),
            s if s <= self.size() => Some(self.mth(0, s as usize)),
            _ => None,
        }
    }

    /// The audit path of leaf `index` in the tree of the first `size` leaves.
    pub fn inclusion(&self, index: u64, size: u64) -> Option<Vec<Hash>> {
        if size > self.size() {
            return None;
        }
        merkle::inclusion_proof_by(&|a, b| self.mth(a, b), size as usize, index as usize)
    }

    /// A hash tile's bytes (c2sp.org/tlog-tiles): its hashes of complete
    /// subtrees, concatenated; `None` when this tree does not hold it yet.
    pub fn tile(&self, tile: &crate::tiles::TileRef) -> Option<Vec<u8>> {
        let level = self.levels.get(tile.tree_level() as usize)?;
        let first = usize::try_from(tile.first()?).ok()?;
        let hashes = level.get(first..first.checked_add(tile.width as usize)?)?;
        Some(hashes.concat())
    }

    /// The proof that the tree of `old` leaves is a prefix of that of `new`.
    pub fn consistency(&self, old: u64, new: u64) -> Option<Vec<Hash>> {
        if new > self.size() {
            return None;
        }
        merkle::consistency_proof_by(&|a, b| self.mth(a, b), new as usize, old as usize)
    }
}

/// A C2SP signed-note key id for an Ed25519 key:
/// SHA-256(name || 0x0A || 0x01 || public key)[..4].
pub fn note_key_id(name: &str, key: &VerifyingKey) -> Option<[u8; 4]> {
    let VerifyingKey::Ed25519(key) = key else { return None };
    let mut input = Vec::with_capacity(name.len() + 34);
    input.extend_from_slice(name.as_bytes());
    input.push(b'\n');
    input.push(0x01);
    input.extend_from_slice(key.as_bytes());
    let digest = sha256(&input);
    Some([digest[0], digest[1], digest[2], digest[3]])
}

/// The verifier key string witnesses and note verifiers are configured
/// with: `<name>+<hex key id>+<base64(0x01 || public key)>`.
pub fn verifier_key(name: &str, key: &VerifyingKey) -> Option<String> {
    let id = note_key_id(name, key)?;
    let VerifyingKey::Ed25519(public) = key else { return None };
    let mut encoded = vec![0x01];
    encoded.extend_from_slice(public.as_bytes());
    Some(format!("{name}+{}+{}", hex::encode(id), b64::std_encode(&encoded)))
}

/// Signs `text` (which ends in a newline) as a note of one signature.
pub fn sign_note(text: &str, name: &str, key: &SigningKey) -> Option<String> {
    if !text.ends_with('\n') || name.is_empty() || name.contains(char::is_whitespace) || name.contains('+') {
        return None;
    }
    let id = note_key_id(name, &key.verifying_key())?;
    let mut signature = id.to_vec();
    signature.extend_from_slice(&key.sign(text.as_bytes()));
    Some(format!("{text}\n\u{2014} {name} {}\n", b64::std_encode(&signature)))
}

/// Opens a signed note: answers its text when a signature by `name` under
/// `key` verifies. Signatures by other keys are ignored (witnesses may add
/// theirs); a failing signature by this key refuses the whole note.
pub fn open_note<'a>(note: &'a str, name: &str, key: &VerifyingKey) -> Result<&'a str, Reason> {
    let invalid = Reason::CheckpointInvalid;
    if note.len() > MAX_NOTE_BYTES || note.chars().any(|c| c.is_control() && c != '\n') || !note.ends_with('\n') {
        return Err(invalid);
    }
    let split = note.rfind("\n\n").ok_or(invalid)?;
    let (text, signatures) = (&note[..split + 1], &note[split + 2..]);
    let want = note_key_id(name, key).ok_or(invalid)?;
    let mut verified = false;
    for line in signatures.lines() {
        let rest = line.strip_prefix("\u{2014} ").ok_or(invalid)?;
        let (signer, encoded) = rest.split_once(' ').ok_or(invalid)?;
        let signature = b64::std_decode(encoded).filter(|s| s.len() > 4).ok_or(invalid)?;
        if signer != name || signature[..4] != want {
            continue;
        }
        if !key.verify(text.as_bytes(), &signature[4..]) {
            return Err(invalid);
        }
        verified = true;
    }
    if verified { Ok(text) } else { Err(invalid) }
}

/// A checkpoint: the log's origin, its size and its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// The note text: origin, size in decimal, base64 root, each on its line.
    pub fn text(&self) -> String {
        format!("{}\n{}\n{}\n", self.origin, self.size, b64::std_encode(&self.root))
    }

    /// Reads a checkpoint's text (extension lines after the root are allowed).
    pub fn parse(text: &str) -> Result<Checkpoint, Reason> {
        let invalid = Reason::CheckpointInvalid;
        let mut lines = text.split_terminator('\n');
        let origin = lines.next().filter(|o| !o.is_empty()).ok_or(invalid)?;
        let size = lines.next().ok_or(invalid)?;
        if size.is_empty() || (size.len() > 1 && size.starts_with('0')) || !size.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid);
        }
        let size = size.parse().map_err(|_| invalid)?;
        let root = lines.next().and_then(b64::std_decode).and_then(|r| Hash::try_from(r).ok()).ok_or(invalid)?;
        if lines.any(str::is_empty) {
            return Err(invalid);
        }
        Ok(Checkpoint { origin: origin.to_owned(), size, root })
    }

    /// The signed note, its key named after the origin as C2SP advises.
    pub fn sign(&self, key: &SigningKey) -> Option<String> {
        sign_note(&self.text(), &self.origin, key)
    }

    /// Opens a signed checkpoint of the log `origin` under its checkpoint key.
    pub fn open(note: &str, origin: &str, key: &VerifyingKey) -> Result<Checkpoint, Reason> {
        let checkpoint = Checkpoint::parse(open_note(note, origin, key)?)?;
        if checkpoint.origin != origin {
            return Err(Reason::CheckpointInvalid);
        }
        Ok(checkpoint)
    }

    /// Whether `path` proves `leaf` at `index` in this checkpoint's tree.
    pub fn check_inclusion(&self, leaf: &Hash, index: u64, path: &[Hash]) -> Result<(), Reason> {
        if merkle::verify_inclusion(leaf, index, self.size, path, &self.root) {
            Ok(())
        } else {
            Err(Reason::InclusionInvalid)
        }
    }

    /// Whether `path` proves this checkpoint's tree a prefix of `newer`'s.
    pub fn check_consistency(&self, newer: &Checkpoint, path: &[Hash]) -> Result<(), Reason> {
        let ok = self.origin == newer.origin
            && merkle::verify_consistency(self.size, newer.size, path, &self.root, &newer.root);
        if ok { Ok(()) } else { Err(Reason::ConsistencyInvalid) }
    }
}

/// A receipt's two-level proof: the receipt in its minute part, and the
/// part's leaf in the log.
#[derive(Debug, Clone)]
pub struct ReceiptProof {
    pub index: u64,
    pub path: Vec<Hash>,
    pub minute: ReceiptMinute,
    pub leaf_index: u64,
    pub log_path: Vec<Hash>,
}

impl ReceiptProof {
    /// Checks that `receipt` (the receipt envelope's exact bytes as served)
    /// is in the minute part, and the part in `checkpoint`'s tree.
    pub fn check(&self, receipt: &[u8], checkpoint: &Checkpoint) -> Result<(), Reason> {
        self.check_in_minute(receipt)?;
        checkpoint.check_inclusion(&merkle::leaf_hash(&self.minute.leaf()), self.leaf_index, &self.log_path)
    }
}

impl ReceiptProof {
    /// The first level alone: `receipt` is in the minute part (all a proof
    /// shows until home sequences the minute).
    pub fn check_in_minute(&self, receipt: &[u8]) -> Result<(), Reason> {
        let leaf = merkle::leaf_hash(receipt);
        if merkle::verify_inclusion(&leaf, self.index, self.minute.size, &self.path, &self.minute.root) {
            Ok(())
        } else {
            Err(Reason::InclusionInvalid)
        }
    }
}

/// Reads a proof path given as hex strings.
pub fn parse_path(value: &Value) -> Result<Vec<Hash>, Reason> {
    value
        .as_array()
        .ok_or(Reason::PayloadMalformed)?
        .iter()
        .map(|h| {
            h.as_str()
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| Hash::try_from(b).ok())
                .ok_or(Reason::PayloadMalformed)
        })
        .collect()
}

/// A proof path as hex strings.
pub fn path_value(path: &[Hash]) -> Value {
    Value::Array(path.iter().map(|h| Value::String(hex::encode(h))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Alg;

    fn key(n: u8) -> SigningKey {
        SigningKey::from_seed(Alg::Ed25519, &[n; 32]).unwrap()
    }

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| merkle::leaf_hash(format!("leaf {i}").as_bytes())).collect()
    }

    // Tiles hold the tree's complete subtrees: level 0 the leaf hashes, level
    // 1 each the root of 256 leaves, computed here from a tree of just those.
    #[test]
    fn tiles_hold_the_roots_of_full_subtrees() {
        use crate::tiles::{TileKind, TileRef};
        let all = leaves(256 * 3 + 17);
        let mut tree = Tree::default();
        all.iter().for_each(|leaf| tree.push(*leaf));
        let tile = |level, index, width| TileRef { kind: TileKind::Hashes { level }, index, width };
        assert_eq!(tree.tile(&tile(0, 1, 256)).unwrap(), all[256..512].concat());
        assert_eq!(tree.tile(&tile(0, 3, 17)).unwrap(), all[768..].concat());
        assert_eq!(tree.tile(&tile(0, 3, 18)), None, "past the tree");
        let level1 = tree.tile(&tile(1, 0, 3)).unwrap();
        for (i, chunk) in all.chunks(256).take(3).enumerate() {
            let mut part = Tree::default();
            chunk.iter().for_each(|leaf| part.push(*leaf));
            assert_eq!(level1[i * 32..(i + 1) * 32], part.root(256).unwrap());
        }
        assert_eq!(tree.tile(&tile(1, 0, 4)), None, "a partial level 0 tile is never hashed upward");
        assert_eq!(tree.tile(&tile(2, 0, 1)), None);
        assert_eq!(tree.tile(&tile(0, u64::MAX, 256)), None);
    }

    // rule: P4.2.14, P4.2.15, P4.2.56
    #[test]
    fn the_tree_of_subtrees_gives_rfc_6962_roots_and_proofs_at_every_size() {
        let all = leaves(70);
        let mut tree = Tree::default();
        for (n, leaf) in all.iter().enumerate() {
            tree.push(*leaf);
            assert_eq!(tree.size(), n as u64 + 1);
        }
        for size in 1..=70usize {
            let root = merkle::root_of(&all[..size]);
            assert_eq!(tree.root(size as u64), Some(root), "root at {size}");
            for index in [0, size / 2, size - 1] {
                let path = tree.inclusion(index as u64, size as u64).unwrap();
                assert_eq!(path, merkle::inclusion_proof_of(&all[..size], index).unwrap());
                assert!(merkle::verify_inclusion(&all[index], index as u64, size as u64, &path, &root));
            }
            for old in [1, size / 3 + 1, size] {
                let proof = tree.consistency(old as u64, size as u64).unwrap();
                assert_eq!(proof, merkle::consistency_proof(&all[..size], old).unwrap());
                let old_root = merkle::root_of(&all[..old]);
                assert!(merkle::verify_consistency(old as u64, size as u64, &proof, &old_root, &root));
            }
        }
        assert_eq!(tree.root(71), None);
        assert_eq!(tree.root(0), Some(merkle::empty_root()));
        tree.truncate(33);
        assert_eq!(tree.size(), 33);
        assert_eq!(tree.root(33), Some(merkle::root_of(&all[..33])));
        tree.push(all[33]);
        assert_eq!(tree.root(34), Some(merkle::root_of(&all[..34])), "appending after a truncate");
    }

    #[test]
    fn a_checkpoint_is_a_c2sp_signed_note_that_opens_only_under_its_key() {
        let signer = key(7);
        let checkpoint = Checkpoint { origin: "svc.example/log".into(), size: 5, root: [9; 32] };
        let note = checkpoint.sign(&signer).unwrap();
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines[..4], ["svc.example/log", "5", &b64::std_encode(&[9; 32]), ""]);
        assert!(lines[4].starts_with("\u{2014} svc.example/log "));
        let public = signer.verifying_key();
        assert_eq!(Checkpoint::open(&note, "svc.example/log", &public), Ok(checkpoint.clone()));
        // rule: P4.2.57
        assert_eq!(Checkpoint::open(&note, "svc.example/log", &key(8).verifying_key()), Err(Reason::CheckpointInvalid));
        assert_eq!(Checkpoint::open(&note, "other.example/log", &public), Err(Reason::CheckpointInvalid));
        let forged = note.replacen("\n5\n", "\n6\n", 1);
        assert_eq!(Checkpoint::open(&forged, "svc.example/log", &public), Err(Reason::CheckpointInvalid));
        // A witness's cosignature beside the log's is ignored, not refused.
        let cosigned = format!("{note}\u{2014} witness.example/w {}\n", b64::std_encode(&[1u8; 68]));
        assert_eq!(Checkpoint::open(&cosigned, "svc.example/log", &public), Ok(checkpoint));
        assert!(Checkpoint::parse("svc\n05\nAAAA\n").is_err(), "a leading zero");
    }

    #[test]
    fn consistency_and_inclusion_checks_refuse_what_does_not_prove() {
        let all = leaves(9);
        let mut tree = Tree::default();
        all.iter().for_each(|l| tree.push(*l));
        let old = Checkpoint { origin: "o".into(), size: 4, root: tree.root(4).unwrap() };
        let new = Checkpoint { origin: "o".into(), size: 9, root: tree.root(9).unwrap() };
        let proof = tree.consistency(4, 9).unwrap();
        assert_eq!(old.check_consistency(&new, &proof), Ok(()));
        let mut bent = proof.clone();
        bent[0][0] ^= 1;
        assert_eq!(old.check_consistency(&new, &bent), Err(Reason::ConsistencyInvalid));
        let forked = Checkpoint { root: [0; 32], ..new.clone() };
        assert_eq!(old.check_consistency(&forked, &proof), Err(Reason::ConsistencyInvalid));
        let path = tree.inclusion(3, 9).unwrap();
        assert_eq!(new.check_inclusion(&all[3], 3, &path), Ok(()));
        assert_eq!(new.check_inclusion(&all[3], 4, &path), Err(Reason::InclusionInvalid));
    }

    #[test]
    fn a_receipt_is_proven_in_two_levels() {
        let receipts: Vec<&[u8]> = vec![b"r0", b"r1", b"r2"];
        let part = merkle::BatchTree::from_records(&receipts);
        let minute = ReceiptMinute {
            region: "eu".into(),
            minute: UnixMs(1_795_000_020_000),
            first_seq: 10,
            last_seq: 12,
            size: 3,
            root: part.root(),
        };
        assert_eq!(ReceiptMinute::parse(&minute.leaf()), Ok(minute.clone()));
        let mut tree = Tree::default();
        tree.push(merkle::leaf_hash(b"a seal"));
        tree.push(merkle::leaf_hash(&minute.leaf()));
        let checkpoint = Checkpoint { origin: "o".into(), size: 2, root: tree.root(2).unwrap() };
        let proof = ReceiptProof {
            index: 1,
            path: part.inclusion_proof(1).unwrap(),
            minute: minute.clone(),
            leaf_index: 1,
            log_path: tree.inclusion(1, 2).unwrap(),
        };
        assert_eq!(proof.check(b"r1", &checkpoint), Ok(()));
        assert_eq!(proof.check(b"r2", &checkpoint), Err(Reason::InclusionInvalid));
        let elsewhere = ReceiptProof { minute: ReceiptMinute { region: "ap".into(), ..minute }, ..proof };
        assert_eq!(elsewhere.check(b"r1", &checkpoint), Err(Reason::InclusionInvalid), "the leaf names its region");
    }
}
