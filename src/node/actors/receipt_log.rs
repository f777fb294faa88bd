//! The receipt log: every receipt this region issues, numbered in served
//! order and written before the answer leaves. `GET /v1/receipts` reads it;
//! receipt folding (minute roots for the transparency log) reads the leaf
//! hash written beside each receipt.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::actors::error::ActorError;
use svc_store::model::{ReceiptLeaf, StoredReceipt};
use svc_store::{Batch, Store, be, cf, from_be, keys};

pub enum ReceiptLogMsg {
    /// Numbers and stores a receipt; answers its sequence.
    Append { receipt: Box<StoredReceipt>, reply: RpcReplyPort<Result<u64, ActorError>> },
    /// Answers the sequence number the next receipt gets.
    Observe(RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct ReceiptLog;

pub struct ReceiptLogState {
    store: Store,
    next: u64,
}

/// A receipt's leaf, hashed here so that folding a minute reads 40 bytes
/// per receipt instead of hashing a minute's receipts at once.
pub fn leaf_of(receipt: &StoredReceipt) -> ReceiptLeaf {
    ReceiptLeaf { served_at: receipt.served_at, leaf: svc_core::merkle::leaf_hash(&receipt.envelope) }
}

/// Writes a receipt's leaf by its sequence (for folding) and its sequence
/// by its leaf hash (for proofs).
pub fn put_leaf(batch: &mut Batch<'_>, seq: u64, receipt: &StoredReceipt) {
    let leaf = leaf_of(receipt);
    batch.put(cf::RECEIPT_LEAVES, &be(seq), &leaf);
    batch.put(cf::RECEIPT_SEQS, &leaf.leaf, &seq);
}

impl Actor for ReceiptLog {
    type Msg = ReceiptLogMsg;
    type State = ReceiptLogState;
    type Arguments = Store;

    async fn pre_start(
        &self,
        _me: ActorRef<ReceiptLogMsg>,
        store: Store,
    ) -> Result<ReceiptLogState, ActorProcessingErr> {
        // The leaves are never deleted (an expired caller's receipts are),
        // so numbering goes on after the highest either holds.
        let mut last = 0;
        for family in [cf::RECEIPTS.named(), cf::RECEIPT_LEAVES.named()] {
            if let Some(k) = store.last_key(family)? {
                last = last.max(from_be(&k).ok_or(ActorError::Refused("malformed receipt sequence"))?);
            }
        }
        let next = last + 1;
        Ok(ReceiptLogState { store, next })
    }

    async fn handle(
        &self,
        _me: ActorRef<ReceiptLogMsg>,
        msg: ReceiptLogMsg,
        state: &mut ReceiptLogState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReceiptLogMsg::Append { mut receipt, reply } => {
                let seq = state.next;
                receipt.seq = seq;
                let mut batch = state.store.batch();
                batch.put(cf::RECEIPTS, &be(seq), &*receipt);
                put_leaf(&mut batch, seq, &receipt);
                batch.put(
                    cf::RECEIPTS_BY_GROUP,
                    &keys::receipt_by_group(&receipt.group_id, receipt.served_at.0, seq),
                    &(),
                );
                // Not synced: a killed process keeps it (the WAL is written
                // before this answers); a lost machine may lose the last few.
                let written = batch.commit_unsynced().map_err(ActorError::from);
                if written.is_ok() {
                    state.next += 1;
                }
                let _ = reply.send(written.map(|()| seq));
            }
            ReceiptLogMsg::Observe(reply) => {
                let _ = reply.send(state.next);
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for ReceiptLogMsg {
    type Seen = u64;

    fn observe(reply: ractor::RpcReplyPort<u64>) -> Self {
        ReceiptLogMsg::Observe(reply)
    }

    fn describe(seen: u64) -> serde_json::Value {
        serde_json::json!({"next_seq": seen})
    }
}
