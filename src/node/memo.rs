//! Values a region works out once from bytes that name them for good: a
//! verifying key from its stored JWK, a statement's signature from the
//! statement's bytes. The region holds them; the use cases ask them.

use svc_core::keys::{Jwk, VerifyingKey};

/// A JWK stored as JSON bytes, as a verifying key.
pub fn key_from_jwk(jwk: &[u8]) -> Option<VerifyingKey> {
    let jwk: Jwk = serde_json::from_slice(jwk).ok()?;
    VerifyingKey::from_jwk(&jwk).ok()
}

/// Values derived from bytes that name them for good, kept so the work is
/// done once: such an entry never goes stale. At most 10,000 are held;
/// past that the map starts over (values in use come back).
pub struct Memo<K, V> {
    made: std::sync::Mutex<std::collections::HashMap<K, V>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo { made: std::sync::Mutex::default() }
    }
}

impl<K: Eq + std::hash::Hash, V: Clone> Memo<K, V> {
    const MAX: usize = 10_000;

    pub fn get_or_make<Q>(&self, key: &Q, make: impl FnOnce() -> V) -> V
    where
        K: std::borrow::Borrow<Q>,
        Q: ToOwned<Owned = K> + Eq + std::hash::Hash + ?Sized,
    {
        // A poisoned lock only means another caller panicked mid-insert;
        // the map is still a map.
        let lock = || self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = lock().get(key) {
            return found.clone();
        }
        let value = make();
        let mut made = lock();
        if made.len() >= Self::MAX {
            made.clear();
        }
        made.insert(key.to_owned(), value.clone());
        value
    }
}

/// Verifying keys by their stored JWK text, for the signed routes. A JWK
/// names one key for good (or none, if it does not parse): whether the key
/// may sign is still read from its record on every request. Parsing the
/// JWK and decompressing its point was 2% of a loaded node's CPU.
#[derive(Default)]
pub struct JwkKeys(Memo<Vec<u8>, Option<VerifyingKey>>);

impl JwkKeys {
    pub fn get(&self, jwk: &[u8]) -> Option<VerifyingKey> {
        self.0.get_or_make(jwk, || key_from_jwk(jwk))
    }
}

/// Statements the statement key signed, by the digest of their bytes: a
/// public statement is signed once per change, however often it is asked
/// for, since the bytes name what was signed.
#[derive(Default)]
pub struct SignedStatements(Memo<[u8; 32], svc_core::dsse::Envelope>);

impl SignedStatements {
    pub fn get_or_sign(
        &self,
        bytes: &[u8],
        sign: impl FnOnce() -> svc_core::dsse::Envelope,
    ) -> svc_core::dsse::Envelope {
        self.0.get_or_make(&svc_core::digest::sha256(bytes), sign)
    }
}

#[cfg(test)]
mod tests {
    use svc_core::dsse::Envelope;
    use svc_core::keys::{Alg, SigningKey};

    use super::SignedStatements;

    // A statement asked for again is not signed again; other bytes are.
    #[test]
    fn a_statement_is_signed_once_per_change() {
        let statements = SignedStatements::default();
        let key = SigningKey::from_seed(Alg::Ed25519, &[3; 32]).unwrap();
        let signings = std::cell::Cell::new(0);
        let sign = |bytes: &[u8]| {
            signings.set(signings.get() + 1);
            Envelope::sign("t", bytes, &[&key])
        };
        let first = statements.get_or_sign(b"keys v1", || sign(b"keys v1"));
        let again = statements.get_or_sign(b"keys v1", || sign(b"keys v1"));
        assert_eq!((first, signings.get()), (again, 1));
        statements.get_or_sign(b"keys v2", || sign(b"keys v2"));
        assert_eq!(signings.get(), 2, "a change is signed anew");
    }
}
