//! Claims (key id, nonce) pairs: each is accepted once, held until its
//! signature expires, and persisted so a restart still refuses it.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::UnixMs;

use crate::store::{Store, cf, key};

pub enum NonceMsg {
    /// Claims a nonce; answers true when it was not seen before.
    Claim {
        key_id: String,
        nonce: String,
        expires_secs: i64,
        now: UnixMs,
        reply: RpcReplyPort<bool>,
    },
    /// Forgets nonces whose signatures have expired.
    Purge {
        now: UnixMs,
    },
    Observe(RpcReplyPort<NonceSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceSnapshot {
    pub held: usize,
}

pub struct NonceStore;

pub struct NonceState {
    store: Store,
    /// (key id, nonce) → expires (Unix seconds).
    held: HashMap<(String, String), i64>,
}

fn nonce_key(key_id: &str, nonce: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), nonce.as_bytes()])
}

impl Actor for NonceStore {
    type Msg = NonceMsg;
    type State = NonceState;
    type Arguments = Store;

    async fn pre_start(&self, _me: ActorRef<NonceMsg>, store: Store) -> Result<NonceState, ActorProcessingErr> {
        let mut held = HashMap::new();
        for (k, expires) in store.scan::<i64>(cf::NONCES, &[], None, usize::MAX)? {
            let mut parts = k.splitn(2, |b| *b == 0);
            let (Some(key_id), Some(nonce)) = (parts.next(), parts.next()) else { continue };
            held.insert(
                (String::from_utf8_lossy(key_id).into_owned(), String::from_utf8_lossy(nonce).into_owned()),
                expires,
            );
        }
        Ok(NonceState { store, held })
    }

    async fn handle(
        &self,
        _me: ActorRef<NonceMsg>,
        msg: NonceMsg,
        state: &mut NonceState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NonceMsg::Claim { key_id, nonce, expires_secs, now, reply } => {
                let k = (key_id, nonce);
                let fresh = match state.held.get(&k) {
                    Some(expires) => *expires < now.as_secs(),
                    None => true,
                };
                if fresh {
                    let mut batch = state.store.batch();
                    batch.put(cf::NONCES, &nonce_key(&k.0, &k.1), &expires_secs);
                    // A nonce store that cannot persist must not accept: refuse.
                    if batch.commit_unsynced().is_err() {
                        let _ = reply.send(false);
                        return Ok(());
                    }
                    state.held.insert(k, expires_secs);
                }
                let _ = reply.send(fresh);
            }
            NonceMsg::Purge { now } => {
                let cutoff = now.as_secs();
                let expired: Vec<(String, String)> =
                    state.held.iter().filter(|(_, e)| **e < cutoff).map(|(k, _)| k.clone()).collect();
                let mut batch = state.store.batch();
                for (key_id, nonce) in &expired {
                    batch.delete(cf::NONCES, &nonce_key(key_id, nonce));
                    state.held.remove(&(key_id.clone(), nonce.clone()));
                }
                batch.commit_unsynced()?;
            }
            NonceMsg::Observe(reply) => {
                let _ = reply.send(NonceSnapshot { held: state.held.len() });
            }
        }
        Ok(())
    }
}
