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

use svc_store::{Store, StoreError, StoreResult, Table, cf, keys};

const META_KEY: &[u8] = keys::meta::SERVICE_KEY_SEEDS;
/// The seeds in clear, until the operator gives a key-encryption key.
pub const SEEDS: Table<Seeds> = Table::exact(cf::meta::FAMILY, "meta.service_key_seeds", META_KEY);
/// Home: the rotations of the non-root keys in clear, likewise.
pub const ROTATIONS: Table<Vec<Rotation>> = Table::exact(cf::meta::FAMILY, "meta.service_key_rotations", ROTATIONS_KEY);
/// Home's successors of its own keys, oldest first (`rotate`).
const ROTATIONS_KEY: &[u8] = keys::meta::SERVICE_KEY_ROTATIONS;
const WRAPPED_SEEDS_KEY: &[u8] = keys::meta::SERVICE_KEY_SEEDS_WRAPPED;
const WRAPPED_ROTATIONS_KEY: &[u8] = keys::meta::SERVICE_KEY_ROTATIONS_WRAPPED;
/// What each wrapped secret is for (its associated data).
const SEEDS_PURPOSE: &[u8] = b"svc-service-key-seeds/1";
const ROTATIONS_PURPOSE: &[u8] = b"svc-service-key-rotations/1";

/// The operator's key-encryption key (`key_encryption_key_file`, or the
/// `SVC_KEY_ENCRYPTION_KEY` variable): the node's seeds, and at home the
/// hosted businesses' seeds, are stored wrapped under it. Drawn from the
/// operator's token by SHA-256; cleared from memory when dropped; never
/// printed.
#[derive(Clone)]
pub struct KeyEncryptionKey(zeroize::Zeroizing<[u8; 32]>);

impl KeyEncryptionKey {
    pub fn from_token(token: &str) -> KeyEncryptionKey {
        let drawn = svc_core::digest::sha256(&[b"svc-key-encryption-key/1\0".as_slice(), token.as_bytes()].concat());
        KeyEncryptionKey(zeroize::Zeroizing::new(drawn))
    }

    pub fn wrap(&self, purpose: &[u8], secret: &[u8]) -> Vec<u8> {
        svc_core::wrap::wrap(&self.0, purpose, svc_clock::random(), secret)
    }

    pub fn unwrap(&self, purpose: &[u8], wrapped: &[u8]) -> Option<zeroize::Zeroizing<Vec<u8>>> {
        svc_core::wrap::unwrap(&self.0, purpose, wrapped).map(zeroize::Zeroizing::new)
    }
}

impl std::fmt::Debug for KeyEncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyEncryptionKey([redacted])")
    }
}

/// The rotations as they are stored: in clear, or wrapped.
pub enum StoredRotations {
    Clear(Vec<Rotation>),
    Wrapped(Vec<u8>),
}
/// When the seeds were drawn: the keys' `valid_from` in the key set.
const CREATED_KEY: &[u8] = keys::meta::SERVICE_KEYS_CREATED_AT;

#[derive(Clone, Serialize, Deserialize, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct Seeds {
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
        use svc_clock::random;
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

/// One successor key home drew for a purpose; the newest of each purpose signs.
#[derive(Clone, Serialize, Deserialize, zeroize::ZeroizeOnDrop)]
pub struct Rotation {
    #[zeroize(skip)]
    pub purpose: Purpose,
    classical: [u8; 32],
    /// The ML-DSA-65 half of a dual key (issuance, statement).
    post_quantum: Option<[u8; 32]>,
}

/// A successor drawn: the rotation, its key set entries, and every rotation
/// so far with it (what to store).
pub struct Successor {
    pub rotation: Rotation,
    pub entries: Vec<KeyEntry>,
    pub all: Vec<Rotation>,
}

/// The keys that sign now, where a rotation replaced the first ones.
#[derive(Default)]
struct Current {
    issuance: Option<DualKey>,
    statement: Option<DualKey>,
    projection: Option<SigningKey>,
    sidecar: Option<SigningKey>,
    checkpoint: Option<SigningKey>,
}

/// Every key a node signs with. The fields are the first keys drawn; sign
/// through the methods, which answer a rotation's successor once there is one.
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
    /// Signs home's own outbound requests (Web Bot Auth). Derived from the
    /// sidecar seed as `upload` is, so the stored seeds keep their form.
    pub web_bot_auth: SigningKey,
    /// Home's MAC key for portal sign-in tickets and the stand-in passkeys
    /// of unknown addresses (`svc_core::portal`). Derived as `upload` is.
    pub portal_secret: [u8; 32],
    /// The operator's key-encryption key, when the node was given one.
    kek: Option<KeyEncryptionKey>,
    /// Every rotation installed, oldest first: what is stored.
    installed: std::sync::Arc<std::sync::RwLock<Vec<Rotation>>>,
    current: std::sync::Arc<std::sync::RwLock<Current>>,
}

/// Why the node's keys could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the store's keys are wrapped under a key-encryption key: start the node with it \
         (key_encryption_key_file or SVC_KEY_ENCRYPTION_KEY)"
    )]
    KeyNeeded,
    #[error("the key-encryption key given is not the one the store's keys are wrapped under")]
    WrongKey,
}

impl ServiceKeys {
    /// Loads the node's keys, drawing and storing them on first start, with
    /// every rotation since. With a key-encryption key the seeds are kept
    /// wrapped under it (seeds stored in clear by an earlier start are
    /// wrapped now, and the clear ones deleted in the same write); seeds
    /// stored wrapped cannot be read without it.
    pub fn load_or_create(store: &Store, kek: Option<&KeyEncryptionKey>) -> Result<ServiceKeys, KeysError> {
        let clear = store.get::<Seeds>(SEEDS, META_KEY)?;
        let seeds = Self::stored_seeds(store, kek)?.unwrap_or_else(Seeds::draw);
        let mut batch = store.batch();
        match kek {
            Some(kek) => {
                let bytes = zeroize::Zeroizing::new(postcard::to_stdvec(&seeds).map_err(StoreError::Encode)?);
                if clear.is_some()
                    || store.get::<Vec<u8>>(cf::meta::SERVICE_KEY_SEEDS_WRAPPED, WRAPPED_SEEDS_KEY)?.is_none()
                {
                    batch.put(cf::meta::SERVICE_KEY_SEEDS_WRAPPED, WRAPPED_SEEDS_KEY, &kek.wrap(SEEDS_PURPOSE, &bytes));
                }
                batch.delete(SEEDS, META_KEY);
            }
            None if clear.is_none() => batch.put(SEEDS, META_KEY, &seeds),
            None => {}
        }
        let keys = Self::from_seeds(&seeds, kek.cloned());
        let rotations = keys.rotations(store)?;
        if kek.is_some() && store.get::<Vec<Rotation>>(ROTATIONS, ROTATIONS_KEY)?.is_some() {
            if let StoredRotations::Wrapped(wrapped) = keys.stored_rotations(&rotations)? {
                batch.put(cf::meta::SERVICE_KEY_ROTATIONS_WRAPPED, WRAPPED_ROTATIONS_KEY, &wrapped);
            }
            batch.delete(ROTATIONS, ROTATIONS_KEY);
        }
        batch.commit()?;
        for rotation in &rotations {
            keys.install(rotation);
        }
        Ok(keys)
    }

    /// The keys `store` holds with every rotation stored, writing nothing:
    /// what a member of home's group that does not lead signs with. `None`
    /// until the group's first leader drew them.
    pub fn load(store: &Store, kek: Option<&KeyEncryptionKey>) -> Result<Option<ServiceKeys>, KeysError> {
        let Some(seeds) = Self::stored_seeds(store, kek)? else { return Ok(None) };
        let keys = Self::from_seeds(&seeds, kek.cloned());
        keys.catch_up(store)?;
        Ok(Some(keys))
    }

    /// The seeds stored, wrapped (unwrapped with `kek`) or in clear.
    fn stored_seeds(store: &Store, kek: Option<&KeyEncryptionKey>) -> Result<Option<Seeds>, KeysError> {
        let wrapped = store.get::<Vec<u8>>(cf::meta::SERVICE_KEY_SEEDS_WRAPPED, WRAPPED_SEEDS_KEY)?;
        match (wrapped, kek) {
            (Some(wrapped), Some(kek)) => {
                let bytes = kek.unwrap(SEEDS_PURPOSE, &wrapped).ok_or(KeysError::WrongKey)?;
                postcard::from_bytes::<Seeds>(&bytes).map(Some).map_err(|_| KeysError::WrongKey)
            }
            (Some(_), None) => Err(KeysError::KeyNeeded),
            (None, _) => Ok(store.get::<Seeds>(SEEDS, META_KEY)?),
        }
    }

    /// Installs the rotations `store` holds that these keys have not: a
    /// member that does not lead follows the leader's rotations this way.
    pub fn catch_up(&self, store: &Store) -> Result<(), KeysError> {
        let stored = self.rotations(store)?;
        let installed = self.installed.read().unwrap_or_else(|p| p.into_inner()).len();
        for rotation in stored.iter().skip(installed) {
            self.install(rotation);
        }
        Ok(())
    }

    /// The rotations stored, wrapped or in clear.
    fn rotations(&self, store: &Store) -> Result<Vec<Rotation>, KeysError> {
        if let Some(wrapped) = store.get::<Vec<u8>>(cf::meta::SERVICE_KEY_ROTATIONS_WRAPPED, WRAPPED_ROTATIONS_KEY)? {
            let kek = self.kek.as_ref().ok_or(KeysError::KeyNeeded)?;
            let bytes = kek.unwrap(ROTATIONS_PURPOSE, &wrapped).ok_or(KeysError::WrongKey)?;
            return postcard::from_bytes(&bytes).map_err(|_| KeysError::WrongKey);
        }
        Ok(store.get(ROTATIONS, ROTATIONS_KEY)?.unwrap_or_default())
    }

    /// How `rotations` are stored: wrapped under the key-encryption key
    /// when there is one (`WRAPPED_ROTATIONS_KEY`), else in clear
    /// (`ROTATIONS_KEY`).
    pub fn stored_rotations(&self, rotations: &[Rotation]) -> StoreResult<StoredRotations> {
        let Some(kek) = &self.kek else { return Ok(StoredRotations::Clear(rotations.to_vec())) };
        let bytes = zeroize::Zeroizing::new(postcard::to_stdvec(rotations).map_err(StoreError::Encode)?);
        Ok(StoredRotations::Wrapped(kek.wrap(ROTATIONS_PURPOSE, &bytes)))
    }

    /// The key-encryption key this node was started with, if any.
    pub fn kek(&self) -> Option<&KeyEncryptionKey> {
        self.kek.as_ref()
    }

    /// Draws a successor for `purpose` (issuance, statement, projection,
    /// sidecar or log checkpoint): its key set entries, valid from `now`,
    /// and the stored list of rotations with it, for the caller to write in
    /// one change before it [`install`](Self::install)s it. `None` for a
    /// purpose home does not rotate (the root; receipt keys rotate per region).
    pub fn draw_successor(&self, purpose: Purpose, now: UnixMs) -> Option<Successor> {
        use svc_clock::random;
        let dual = matches!(purpose, Purpose::Issuance | Purpose::Statement);
        if !dual && !matches!(purpose, Purpose::Projection | Purpose::Sidecar | Purpose::LogCheckpoint) {
            return None;
        }
        let rotation = Rotation { purpose, classical: random(), post_quantum: dual.then(random) };
        let entries = match Self::rotation_keys(&rotation) {
            (Some(dual), _) => vec![
                KeyEntry::new(&dual.classical.verifying_key(), purpose, None, now),
                KeyEntry::new(&dual.post_quantum.verifying_key(), purpose, None, now),
            ],
            (None, Some(key)) => vec![KeyEntry::new(&key.verifying_key(), purpose, None, now)],
            (None, None) => return None,
        };
        let mut all = self.installed.read().unwrap_or_else(|p| p.into_inner()).clone();
        all.push(rotation.clone());
        Some(Successor { rotation, entries, all })
    }

    /// Where the list of rotations is stored in clear (home's own `meta`),
    /// and where wrapped.
    pub fn rotations_keys() -> (&'static [u8], &'static [u8]) {
        (ROTATIONS_KEY, WRAPPED_ROTATIONS_KEY)
    }

    fn rotation_keys(rotation: &Rotation) -> (Option<DualKey>, Option<SigningKey>) {
        match rotation.post_quantum {
            Some(pq) => (DualKey::from_seeds(&rotation.classical, &pq).ok(), None),
            None => (None, SigningKey::from_seed(Alg::Ed25519, &rotation.classical).ok()),
        }
    }

    /// Signs with `rotation`'s key from now on.
    pub fn install(&self, rotation: &Rotation) {
        self.installed.write().unwrap_or_else(|p| p.into_inner()).push(rotation.clone());
        let (dual, single) = Self::rotation_keys(rotation);
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        match rotation.purpose {
            Purpose::Issuance => current.issuance = dual,
            Purpose::Statement => current.statement = dual,
            Purpose::Projection => current.projection = single,
            Purpose::Sidecar => current.sidecar = single,
            Purpose::LogCheckpoint => current.checkpoint = single,
            Purpose::Root | Purpose::Receipt => {}
        }
    }

    fn now_signing(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The ids of the keys that sign now (every half of a dual key).
    pub fn signing_kids(&self) -> Vec<String> {
        let (issuance, statement) = (self.issuer(), self.statement_key());
        [
            issuance.classical,
            issuance.post_quantum,
            statement.classical,
            statement.post_quantum,
            self.projection_key(),
            self.sidecar_key(),
            self.checkpoint_key(),
        ]
        .iter()
        .map(|k| k.verifying_key().thumbprint())
        .collect()
    }

    /// The issuance key that signs now (certificates, custody statements).
    pub fn issuer(&self) -> DualKey {
        self.now_signing().issuance.clone().unwrap_or_else(|| self.issuance.clone())
    }

    /// The statement key that signs now (business keys, verify statements).
    pub fn statement_key(&self) -> DualKey {
        self.now_signing().statement.clone().unwrap_or_else(|| self.statement.clone())
    }

    /// The projection key that signs rows now.
    pub fn projection_key(&self) -> SigningKey {
        self.now_signing().projection.clone().unwrap_or_else(|| self.projection.clone())
    }

    /// The sidecar key that signs now.
    pub fn sidecar_key(&self) -> SigningKey {
        self.now_signing().sidecar.clone().unwrap_or_else(|| self.sidecar.clone())
    }

    /// The key that signs the transparency log's checkpoints now.
    pub fn checkpoint_key(&self) -> SigningKey {
        self.now_signing().checkpoint.clone().unwrap_or_else(|| self.checkpoint.clone())
    }

    /// When this node's keys were drawn, recorded at `now` the first time it
    /// is asked (stores made before the record existed get it then).
    pub fn created_at(store: &Store, now: UnixMs) -> StoreResult<UnixMs> {
        match store.get::<UnixMs>(cf::meta::SERVICE_KEYS_CREATED_AT, CREATED_KEY)? {
            Some(at) => Ok(at),
            None => {
                store.put(cf::meta::SERVICE_KEYS_CREATED_AT, CREATED_KEY, &now)?;
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
        Self::from_seeds(
            &Seeds {
                root: (s(1), s(2)),
                issuance: (s(3), s(4)),
                statement: (s(5), s(6)),
                projection: s(7),
                sidecar: s(8),
                receipt: s(9),
                checkpoint: s(10),
            },
            None,
        )
    }

    fn from_seeds(s: &Seeds, kek: Option<KeyEncryptionKey>) -> ServiceKeys {
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
            web_bot_auth: ed(svc_core::digest::sha256(&[b"svc-web-bot-auth/1\0".as_slice(), &s.sidecar].concat())),
            portal_secret: svc_core::digest::sha256(&[b"svc-portal-sign-in/1\0".as_slice(), &s.sidecar].concat()),
            kek,
            installed: Default::default(),
            current: Default::default(),
        }
    }
}
