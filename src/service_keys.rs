//! The service's own keys: root, issuance, statement (dual P-256 + ML-DSA-65),
//! projection, sidecar, receipt and log checkpoint (Ed25519).
//!
//! Seeds are drawn from the operating system at a node's first start and kept
//! in its store, so a restart signs with the same keys.

use serde::{Deserialize, Serialize};
use svc_core::dsse::DualKey;
use svc_core::keys::{Alg, SigningKey};
use svc_core::keyset::{KeyEntry, Purpose};
use svc_core::time::UnixMs;

use crate::store::{Store, StoreResult, cf};

const META_KEY: &[u8] = b"service_key_seeds";
/// When the seeds were drawn: the keys' `valid_from` in the key set.
const CREATED_KEY: &[u8] = b"service_keys_created_at";

#[derive(Clone, Serialize, Deserialize)]
struct Seeds {
    root: ([u8; 32], [u8; 32]),
    issuance: ([u8; 32], [u8; 32]),
    statement: ([u8; 32], [u8; 32]),
    projection: [u8; 32],
    sidecar: [u8; 32],
    receipt: [u8; 32],
    checkpoint: [u8; 32],
}

impl Seeds {
    fn draw() -> Seeds {
        use crate::clock::random;
        Seeds {
            root: (random(), random()),
            issuance: (random(), random()),
            statement: (random(), random()),
            projection: random(),
            sidecar: random(),
            receipt: random(),
            checkpoint: random(),
        }
    }
}

/// Every key a node signs with.
#[derive(Clone)]
pub struct ServiceKeys {
    pub root: DualKey,
    pub issuance: DualKey,
    pub statement: DualKey,
    pub projection: SigningKey,
    pub sidecar: SigningKey,
    pub receipt: SigningKey,
    pub checkpoint: SigningKey,
    /// Signs upload policies (bulk upload addresses). Never leaves the home
    /// region; derived from the sidecar seed so the stored seeds keep their form.
    pub upload: SigningKey,
}

impl ServiceKeys {
    /// Loads the node's keys, drawing and storing them on first start.
    pub fn load_or_create(store: &Store) -> StoreResult<ServiceKeys> {
        let seeds = match store.get::<Seeds>(cf::META, META_KEY)? {
            Some(seeds) => seeds,
            None => {
                let seeds = Seeds::draw();
                store.put(cf::META, META_KEY, &seeds)?;
                seeds
            }
        };
        Ok(Self::from_seeds(&seeds))
    }

    /// When this node's keys were drawn, recorded at `now` the first time it
    /// is asked (stores made before the record existed get it then).
    pub fn created_at(store: &Store, now: UnixMs) -> StoreResult<UnixMs> {
        match store.get::<UnixMs>(cf::META, CREATED_KEY)? {
            Some(at) => Ok(at),
            None => {
                store.put(cf::META, CREATED_KEY, &now)?;
                Ok(now)
            }
        }
    }

    /// The public keys home certifies for itself in the key set (receipt
    /// keys are certified per region, `key_set::certification`).
    pub fn entries(&self, valid_from: UnixMs) -> Vec<KeyEntry> {
        let entry = |key: &SigningKey, purpose: Purpose| KeyEntry::new(&key.verifying_key(), purpose, None, valid_from);
        vec![
            entry(&self.root.classical, Purpose::Root),
            entry(&self.root.post_quantum, Purpose::Root),
            entry(&self.issuance.classical, Purpose::Issuance),
            entry(&self.issuance.post_quantum, Purpose::Issuance),
            entry(&self.statement.classical, Purpose::Statement),
            entry(&self.statement.post_quantum, Purpose::Statement),
            entry(&self.projection, Purpose::Projection),
            entry(&self.sidecar, Purpose::Sidecar),
            entry(&self.checkpoint, Purpose::LogCheckpoint),
        ]
    }

    /// Deterministic keys for tests and benchmarks.
    pub fn from_test_seed(n: u8) -> ServiceKeys {
        let s = |i: u8| [n.wrapping_mul(31).wrapping_add(i); 32];
        Self::from_seeds(&Seeds {
            root: (s(1), s(2)),
            issuance: (s(3), s(4)),
            statement: (s(5), s(6)),
            projection: s(7),
            sidecar: s(8),
            receipt: s(9),
            checkpoint: s(10),
        })
    }

    fn from_seeds(s: &Seeds) -> ServiceKeys {
        let dual = |(c, p): ([u8; 32], [u8; 32])| {
            // A drawn P-256 seed out of range has probability about 2^-128.
            DualKey::from_seeds(&c, &p).expect("P-256 seed in range")
        };
        let ed = |seed: [u8; 32]| SigningKey::from_seed(Alg::Ed25519, &seed).expect("Ed25519 takes any seed");
        ServiceKeys {
            root: dual(s.root),
            issuance: dual(s.issuance),
            statement: dual(s.statement),
            projection: ed(s.projection),
            sidecar: ed(s.sidecar),
            receipt: ed(s.receipt),
            checkpoint: ed(s.checkpoint),
            upload: ed(svc_core::digest::sha256(&[b"svc-upload-policy/1\0".as_slice(), &s.sidecar].concat())),
        }
    }
}
