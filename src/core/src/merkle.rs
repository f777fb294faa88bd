//! RFC 6962 Merkle trees: roots, inclusion proofs and consistency proofs.
//!
//! Batch roots and inclusion paths are built with `rs_merkle` under an RFC 6962
//! hasher (leaf = SHA-256(0x00 || bytes), node = SHA-256(0x01 || left || right),
//! a lone left node carried up unchanged), which yields RFC 6962's trees.
//! Consistency proofs, and the verification of both proof kinds, follow
//! RFC 9162 section 2.1 directly.

use sha2::{Digest, Sha256};

pub type Hash = [u8; 32];

/// RFC 6962 leaf hash: SHA-256(0x00 || data).
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// RFC 6962 interior node hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The `rs_merkle` hasher that makes its trees RFC 6962 trees. Leaves are
/// hashed with [`leaf_hash`] before insertion.
#[derive(Clone)]
pub struct Rfc6962Hasher;

impl rs_merkle::Hasher for Rfc6962Hasher {
    type Hash = Hash;

    fn hash(data: &[u8]) -> Hash {
        leaf_hash(data)
    }

    fn concat_and_hash(left: &Hash, right: Option<&Hash>) -> Hash {
        match right {
            Some(right) => node_hash(left, right),
            None => *left,
        }
    }
}

/// A batch's tree over the records' raw bytes, leaf i = record i.
pub struct BatchTree {
    tree: rs_merkle::MerkleTree<Rfc6962Hasher>,
    size: usize,
}

impl BatchTree {
    pub fn from_records<T: AsRef<[u8]>>(records: &[T]) -> Self {
        let leaves: Vec<Hash> = records.iter().map(|r| leaf_hash(r.as_ref())).collect();
        Self::from_leaf_hashes(&leaves)
    }

    pub fn from_leaf_hashes(leaves: &[Hash]) -> Self {
        BatchTree { tree: rs_merkle::MerkleTree::from_leaves(leaves), size: leaves.len() }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn root(&self) -> Hash {
        self.tree.root().unwrap_or_else(empty_root)
    }

    /// The audit path of leaf `index`, bottom-up. `None` when out of range.
    pub fn inclusion_proof(&self, index: usize) -> Option<Vec<Hash>> {
        if index >= self.size {
            return None;
        }
        Some(self.tree.proof(&[index]).proof_hashes().to_vec())
    }
}

/// Root of a tree over leaf hashes (RFC 6962 MTH), without building layers.
pub fn root_of(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root_of(&leaves[..k]), &root_of(&leaves[k..]))
        }
    }
}

/// The largest power of two strictly less than `n` (n >= 2).
pub(crate) fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

/// Inclusion proof (audit path) over leaf hashes, as RFC 6962 PATH(m, D[n]).
pub fn inclusion_proof_of(leaves: &[Hash], index: usize) -> Option<Vec<Hash>> {
    inclusion_proof_by(&|a, b| root_of(&leaves[a..b]), leaves.len(), index)
}

/// RFC 6962 PATH(m, D[n]) over any source of subtree hashes: `mth(a, b)` is
/// MTH(D[a..b]). The source may keep whole subtrees (the log) or hash leaves.
pub fn inclusion_proof_by(mth: &dyn Fn(usize, usize) -> Hash, size: usize, index: usize) -> Option<Vec<Hash>> {
    if index >= size {
        return None;
    }
    let mut path = Vec::new();
    collect_path(mth, 0, size, index, &mut path);
    Some(path)
}

fn collect_path(mth: &dyn Fn(usize, usize) -> Hash, start: usize, end: usize, m: usize, path: &mut Vec<Hash>) {
    let n = end - start;
    if n <= 1 {
        return;
    }
    let k = split(n);
    if m < k {
        collect_path(mth, start, start + k, m, path);
        path.push(mth(start + k, end));
    } else {
        collect_path(mth, start + k, end, m - k, path);
        path.push(mth(start, start + k));
    }
}

/// RFC 9162 2.1.3.2: whether `path` proves `leaf` at `index` in a tree of
/// `size` leaves with root `root`.
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, path: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && r == *root
}

/// RFC 6962 2.1.2 PROOF(m, D[n]): the consistency proof between the tree of
/// the first `old_size` leaves and the whole tree.
pub fn consistency_proof(leaves: &[Hash], old_size: usize) -> Option<Vec<Hash>> {
    consistency_proof_by(&|a, b| root_of(&leaves[a..b]), leaves.len(), old_size)
}

/// RFC 6962 PROOF(m, D[n]) over any source of subtree hashes (see
/// [`inclusion_proof_by`]).
pub fn consistency_proof_by(mth: &dyn Fn(usize, usize) -> Hash, size: usize, old_size: usize) -> Option<Vec<Hash>> {
    if old_size == 0 || old_size > size {
        return None;
    }
    let mut proof = Vec::new();
    subproof(mth, old_size, 0, size, true, &mut proof);
    Some(proof)
}

fn subproof(
    mth: &dyn Fn(usize, usize) -> Hash,
    m: usize,
    start: usize,
    end: usize,
    complete: bool,
    proof: &mut Vec<Hash>,
) {
    let n = end - start;
    if m == n {
        if !complete {
            proof.push(mth(start, end));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(mth, m, start, start + k, complete, proof);
        proof.push(mth(start + k, end));
    } else {
        subproof(mth, m - k, start + k, end, false, proof);
        proof.push(mth(start, start + k));
    }
}

/// RFC 9162 2.1.4.2: whether `proof` shows the tree (`old_size`, `old_root`)
/// is a prefix of the tree (`new_size`, `new_root`).
pub fn verify_consistency(old_size: u64, new_size: u64, proof: &[Hash], old_root: &Hash, new_root: &Hash) -> bool {
    if old_size == 0 || old_size > new_size {
        return false;
    }
    if old_size == new_size {
        return proof.is_empty() && old_root == new_root;
    }
    let mut proof = proof.to_vec();
    if old_size.is_power_of_two() {
        proof.insert(0, *old_root);
    }
    let Some((first, rest)) = proof.split_first() else {
        return false;
    };
    let (mut fnode, mut snode) = (old_size - 1, new_size - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && fr == *old_root && sr == *new_root
}

/// `sha256:<hex>` of a Merkle root, the form of a batch seal's `root`.
pub fn root_form(root: &Hash) -> String {
    format!("sha256:{}", hex::encode(root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(format!("leaf-{i}").as_bytes())).collect()
    }

    #[test]
    fn empty_tree_root_is_sha256_of_nothing() {
        assert_eq!(BatchTree::from_records::<&[u8]>(&[]).root(), empty_root());
        assert_eq!(root_of(&[]), empty_root());
    }

    #[test]
    fn out_of_range_proofs_are_none() {
        assert!(BatchTree::from_leaf_hashes(&leaves(3)).inclusion_proof(3).is_none());
        assert!(consistency_proof(&leaves(3), 0).is_none());
        assert!(consistency_proof(&leaves(3), 4).is_none());
        assert!(!verify_inclusion(&leaves(1)[0], 1, 1, &[], &leaves(1)[0]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        // rs_merkle's trees and proofs equal the RFC 6962 definitions, and
        // every proof verifies while a tampered one does not.
        #[test]
        fn random_sizes_up_to_ten_thousand(n in 1usize..=10_000, pick in any::<u64>(), old_pick in any::<u64>()) {
            let l = leaves(n);
            let tree = BatchTree::from_leaf_hashes(&l);
            let root = tree.root();
            prop_assert_eq!(root, root_of(&l));
            let i = (pick % n as u64) as usize;
            let path = tree.inclusion_proof(i).unwrap();
            prop_assert_eq!(&path, &inclusion_proof_of(&l, i).unwrap());
            prop_assert!(verify_inclusion(&l[i], i as u64, n as u64, &path, &root));
            let other = (i + 1) % n;
            if other != i {
                prop_assert!(!verify_inclusion(&l[other], i as u64, n as u64, &path, &root));
            }
            let m = 1 + (old_pick % n as u64) as usize;
            let proof = consistency_proof(&l, m).unwrap();
            let old_root = root_of(&l[..m]);
            prop_assert!(verify_consistency(m as u64, n as u64, &proof, &old_root, &root));
            if m < n {
                let mut wrong = old_root;
                wrong[0] ^= 1;
                prop_assert!(!verify_consistency(m as u64, n as u64, &proof, &wrong, &root));
            }
        }
    }
}
