//! How many passkey requests are open at home, for their cap, without
//! reading past the deletions of the taken ones on every request.

use svc_core::portal::ceremony_id_prefix;
use svc_core::time::UnixMs;

use crate::error::Result;
use svc_store::model::Ceremony;
use svc_store::{Store, cf};

/// The most passkey requests open at once; more wait until some end.
pub const MAX_OPEN_CEREMONIES: usize = 1_000;
/// The most one account (a business, an AI company, and the invitations to
/// it) holds open, so nobody holding one account's session or invitation
/// can take every business's places.
pub const MAX_OPEN_PER_ACCOUNT: usize = 50;

/// Where a request's id carries its account's tag: after the expiry's 16
/// hex digits, 8 hex digits of the account's digest.
const TAG: std::ops::Range<usize> = 16..24;

/// The tag a request's id carries for `account`.
pub fn account_tag(account: &str) -> String {
    hex::encode(&svc_core::digest::sha256(account.as_bytes())[..4])
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Every place of the node is taken.
    Node,
    /// The account holds its share.
    Account,
}

/// The ids of the ceremonies begun at home and not yet expired (ids sort
/// by expiry), some of them taken since: a count that never falls short of
/// the open ones. Only when it reaches [`MAX_OPEN_CEREMONIES`] is it read
/// again from the store, which drops the taken ones. Counting in the store
/// on every request would step over the deletion of every ceremony taken
/// in the last five minutes, a cost that grows with a busy portal's saves.
#[derive(Default)]
pub struct OpenCeremonies(std::sync::Mutex<Option<std::collections::BTreeSet<String>>>);

impl OpenCeremonies {
    /// Admits `id` unless [`MAX_OPEN_CEREMONIES`] are open at `now`, or
    /// [`MAX_OPEN_PER_ACCOUNT`] of its account's (its id's tag).
    pub fn admit(&self, store: &Store, id: &str, now: UnixMs) -> Result<std::result::Result<(), Full>> {
        let mut held = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let from = ceremony_id_prefix(now);
        let stored = || -> Result<std::collections::BTreeSet<String>> {
            let open = store.scan::<Ceremony>(cf::CEREMONIES, &[], Some(from.as_bytes()), MAX_OPEN_CEREMONIES)?;
            Ok(open.into_iter().filter_map(|(key, _)| String::from_utf8(key).ok()).collect())
        };
        let ids = match held.as_mut() {
            Some(ids) => {
                *ids = ids.split_off(from.as_str());
                if ids.len() >= MAX_OPEN_CEREMONIES {
                    *ids = stored()?;
                }
                ids
            }
            // First use since the node started: the store's count.
            None => held.insert(stored()?),
        };
        if ids.len() >= MAX_OPEN_CEREMONIES {
            return Ok(Err(Full::Node));
        }
        let tag = id.get(TAG);
        if tag.is_some() && ids.iter().filter(|open| open.get(TAG) == tag).count() >= MAX_OPEN_PER_ACCOUNT {
            return Ok(Err(Full::Account));
        }
        ids.insert(id.to_owned());
        Ok(Ok(()))
    }
}
