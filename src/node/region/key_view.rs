//! The deployment's key set, kept by home and replicated to every region:
//! the register of keys (home's own, and each region's receipt keys) and the
//! root-signed document served at `/.well-known/keys`.
//!
//! Home alone holds the root, so home alone certifies: a region draws its
//! receipt key, asks home to certify it (through its outbox), and signs
//! receipts with it only once the replicated key set names it. A rotation
//! draws a new key the same way; home closes the region's old key an hour
//! later (`KEY_OVERLAP_MS`), and the region switches as soon as it
//! sees the new one.

use std::sync::{Arc, RwLock};

use svc_core::keys::{Alg, SigningKey, VerifyingKey};
use svc_core::keyset::{KeyEntry, Purpose};
use svc_core::receipt::ReceiptSigner;
use svc_core::time::UnixMs;

use crate::actors::publisher::PublisherMsg;
use crate::document::PublicDocument;
use crate::replication::exchange::{Outgoing, Sequence};
use crate::service_keys::ServiceKeys;
use svc_store::{Store, StoreResult, cf};

use crate::key_set::register::{DOCUMENT, entries};

/// Seeds of the receipt keys this region drew after its first, oldest first.
const ROTATIONS: &[u8] = svc_store::keys::meta::RECEIPT_KEY_ROTATIONS;
/// Why a receipt key could not be drawn or sent for certification.
#[derive(Debug, thiserror::Error)]
pub enum KeySetError {
    #[error(transparent)]
    Store(#[from] svc_store::StoreError),
    #[error("home's publisher: {0}")]
    Publisher(#[from] crate::actors::error::ActorError),
    #[error(transparent)]
    Mailbox(#[from] crate::actors::mailbox::MailboxError),
    #[error("a receipt key: {0}")]
    Key(#[from] svc_core::keys::KeyError),
    #[error("a receipt key's JWK: {0}")]
    Json(#[from] serde_json::Error),
}

/// How long a region trusts what it last read of the key set.
const RECHECK_MS: i64 = 250;

/// How a region's new receipt keys reach home for certification.
#[derive(Clone)]
pub enum Certifier {
    /// Home certifies its own through the publisher.
    Publisher(crate::actors::mailbox::Mailbox<PublisherMsg>),
    /// A read region reports them with its nonces and usage.
    Outbox(Sequence),
    /// A member of home's group that does not lead signs no receipt: it
    /// serves the key set and asks nothing (the leader certifies its own).
    Nobody,
}

/// A region's view of the key set: the document it serves and the receipt
/// key it signs with, re-read from the store at most every 250 ms.
#[derive(Clone)]
pub struct KeyView {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    region: String,
    certifier: Certifier,
    /// This region's receipt keys, oldest first.
    local: RwLock<Vec<SigningKey>>,
    current: RwLock<Current>,
}

#[derive(Default)]
struct Current {
    checked_at: Option<UnixMs>,
    document: Option<Arc<PublicDocument>>,
    entries: Vec<KeyEntry>,
    signer: Option<ReceiptSigner>,
}

impl KeyView {
    pub fn open(store: Store, region: &str, keys: &ServiceKeys, certifier: Certifier) -> StoreResult<KeyView> {
        let mut local = vec![keys.receipt.clone()];
        let rotations: Vec<[u8; 32]> = store.get(cf::meta::RECEIPT_KEY_ROTATIONS, ROTATIONS)?.unwrap_or_default();
        local.extend(rotations.iter().filter_map(|seed| SigningKey::from_seed(Alg::Ed25519, seed).ok()));
        let inner = Inner {
            store,
            region: region.to_owned(),
            certifier,
            local: RwLock::new(local),
            current: RwLock::new(Current::default()),
        };
        Ok(KeyView { inner: Arc::new(inner) })
    }

    /// The key set document, once home's has reached this region.
    pub fn document(&self, now: UnixMs) -> Option<Arc<PublicDocument>> {
        self.refresh(now);
        self.read().document.clone()
    }

    /// The receipt key to sign with now: this region's newest key that the
    /// key set names and holds valid. `None` until home certified one.
    pub fn signer(&self, now: UnixMs) -> Option<ReceiptSigner> {
        self.refresh(now);
        self.read().signer.clone()
    }

    /// A key of the set, of `purpose` and id `kid`, valid at `at`.
    pub fn key(&self, purpose: Purpose, kid: &str, at: UnixMs, now: UnixMs) -> Option<VerifyingKey> {
        self.refresh(now);
        svc_core::keyset::key_in(&self.read().entries, purpose, kid, at)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.inner.current.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Re-reads the key set when the last read is older than 250 ms (or
    /// `force`d), and chooses the signer for `now`.
    fn refresh_at(&self, now: UnixMs, force: bool) {
        let fresh =
            |current: &Current| !force && current.checked_at.is_some_and(|at| now.0 - at.0 < RECHECK_MS && at <= now);
        if fresh(&self.read()) {
            return;
        }
        let mut current = self.inner.current.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another request may have re-read it while this one waited.
        if fresh(&current) {
            return;
        }
        let store = &self.inner.store;
        let document: Option<String> = store.get(cf::key_set::DOCUMENT, DOCUMENT).ok().flatten();
        let held = current.document.as_ref().map(|d| &d.bytes[..]);
        if held != document.as_deref().map(str::as_bytes) {
            // Served byte for byte as home signed and stored it.
            current.document = document.map(|d| Arc::new(PublicDocument::new(d.into())));
            current.entries = entries(store).unwrap_or_default();
        }
        let local = self.inner.local.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let valid = |key: &SigningKey| {
            let kid = key.verifying_key().thumbprint();
            current.entries.iter().any(|e| {
                e.kid == kid
                    && e.purpose == Purpose::Receipt
                    && e.region.as_deref() == Some(&self.inner.region)
                    && e.valid_at(now)
            })
        };
        current.signer = local.iter().rev().find(|k| valid(k)).cloned().map(ReceiptSigner::new);
        current.checked_at = Some(now);
    }

    fn refresh(&self, now: UnixMs) {
        self.refresh_at(now, false)
    }

    /// This region's receipt keys the key set does not name yet.
    pub fn uncertified(&self, now: UnixMs) -> Vec<VerifyingKey> {
        self.refresh_at(now, true);
        let current = self.read();
        let local = self.inner.local.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        local
            .iter()
            .map(SigningKey::verifying_key)
            .filter(|k| {
                let kid = k.thumbprint();
                !current.entries.iter().any(|e| e.kid == kid)
            })
            .collect()
    }

    /// Asks home to certify every receipt key of this region that the key
    /// set does not name yet. Home takes each request idempotently.
    pub async fn ask_certification(&self, now: UnixMs) -> Result<(), KeySetError> {
        let keys = self.uncertified(now);
        if keys.is_empty() {
            return Ok(());
        }
        match &self.inner.certifier {
            Certifier::Publisher(publisher) => {
                for key in keys {
                    let region = self.inner.region.clone();
                    publisher.call(|reply| PublisherMsg::CertifyReceiptKey { region, key, now, reply }).await??;
                }
            }
            Certifier::Outbox(outbox) => {
                let mut batch = self.inner.store.batch();
                for key in keys {
                    let jwk = serde_json::to_string(&key.to_jwk())?;
                    outbox.append(&mut batch, &Outgoing::ReceiptKey { jwk });
                }
                batch.commit()?;
            }
            Certifier::Nobody => return Ok(()),
        }
        self.refresh_at(now, true);
        Ok(())
    }

    /// Draws this region's next receipt key and asks home to certify it.
    /// The region keeps signing with the current key until the key set
    /// names the new one. Answers the new key.
    pub async fn rotate(&self, now: UnixMs) -> Result<VerifyingKey, KeySetError> {
        let seed: [u8; 32] = svc_clock::random();
        let key = SigningKey::from_seed(Alg::Ed25519, &seed)?;
        {
            let mut local = self.inner.local.write().unwrap_or_else(|poisoned| poisoned.into_inner());
            let store = &self.inner.store;
            let mut rotations: Vec<[u8; 32]> =
                store.get(cf::meta::RECEIPT_KEY_ROTATIONS, ROTATIONS)?.unwrap_or_default();
            rotations.push(seed);
            store.put(cf::meta::RECEIPT_KEY_ROTATIONS, ROTATIONS, &rotations)?;
            local.push(key.clone());
        }
        self.ask_certification(now).await?;
        Ok(key.verifying_key())
    }
}
