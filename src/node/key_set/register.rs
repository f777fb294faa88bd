//! The key set's register as home stores it (replicated): its entries and
//! the root-signed document over them. A leaf the publisher's engine amends
//! and every region's `KeyView` reads.

use svc_core::keyset::KeyEntry;
use svc_core::time::UnixMs;

use crate::replication::Change;
use crate::service_keys::ServiceKeys;
use svc_store::{Store, StoreResult, cf};

pub(crate) const ENTRIES: &[u8] = svc_store::keys::key_set::ENTRIES;
pub(crate) const DOCUMENT: &[u8] = svc_store::keys::key_set::DOCUMENT;

pub(crate) fn entries(store: &Store) -> StoreResult<Vec<KeyEntry>> {
    let stored: Vec<String> = store.get(cf::key_set::ENTRIES, ENTRIES)?.unwrap_or_default();
    // Home wrote these entries itself: one that does not read back is skipped.
    Ok(stored
        .iter()
        .filter_map(|s| serde_json::from_str(s).ok())
        .filter_map(|v| KeyEntry::from_value(&v).ok())
        .collect())
}

/// The change that stores `entries` and a document signed over them now.
fn publish(entries: &[KeyEntry], keys: &ServiceKeys, now: UnixMs) -> Change {
    let stored: Vec<String> = entries.iter().map(|e| e.to_value().to_string()).collect();
    let document = svc_core::keyset::document(entries, now, &keys.root).to_string();
    let mut change = Change::new();
    change.put(cf::key_set::ENTRIES, ENTRIES, &stored).put(cf::key_set::DOCUMENT, DOCUMENT, &document);
    change
}

/// Home: the change that applies `edit` to the register (registering home's
/// own keys, certifying a region's receipt key, a successor, an end) and
/// signs the set again; `None` when `edit` changed nothing.
pub fn amend(
    store: &Store,
    keys: &ServiceKeys,
    now: UnixMs,
    edit: impl FnOnce(&mut Vec<KeyEntry>) -> Result<bool, svc_core::Reason>,
) -> StoreResult<Result<Option<Change>, svc_core::Reason>> {
    let mut entries = entries(store)?;
    Ok(match edit(&mut entries) {
        Ok(true) => Ok(Some(publish(&entries, keys, now))),
        Ok(false) => Ok(None),
        Err(reason) => Err(reason),
    })
}
