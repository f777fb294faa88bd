//! Hosted signing seeds at rest: wrapped under the node's key-encryption
//! key when it has one, else in clear until a start given the key wraps
//! them. Signing with them is a use case (`service::portal::hosted`).

use crate::service_keys::KeyEncryptionKey;
use svc_store::cf;
use svc_store::model::HostedKey;

/// What a hosted seed's wrapping is for: the business's own seed.
pub fn seed_purpose(business_uuid: &str) -> Vec<u8> {
    [b"svc-hosted-seed/1\0".as_slice(), business_uuid.as_bytes()].concat()
}

/// A seed as stored: wrapped under the key-encryption key when the node
/// has one, else in clear.
pub fn stored_seed(kek: Option<&KeyEncryptionKey>, business_uuid: &str, seed: &[u8]) -> Vec<u8> {
    match kek {
        Some(kek) => kek.wrap(&seed_purpose(business_uuid), seed),
        None => seed.to_vec(),
    }
}

/// Wraps every hosted seed stored in clear (written by a start without a
/// key-encryption key), in one write: home's start, given the key.
pub fn wrap_clear_seeds(store: &svc_store::Store, kek: &KeyEncryptionKey) -> svc_store::StoreResult<usize> {
    let mut batch = store.batch();
    let mut wrapped = 0;
    for (key, hosted) in store.scan_all::<HostedKey>(cf::HOSTED_KEYS, &[])? {
        if hosted.seed.len() == 32 {
            let business_uuid = String::from_utf8_lossy(&key).into_owned();
            let seed = zeroize::Zeroizing::new(hosted.seed.clone());
            batch.put(
                cf::HOSTED_KEYS,
                &key,
                &HostedKey { seed: stored_seed(Some(kek), &business_uuid, &seed), ..hosted },
            );
            wrapped += 1;
        }
    }
    batch.commit()?;
    Ok(wrapped)
}
