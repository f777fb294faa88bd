//! The receipt log: every receipt this region issues, numbered in served
//! order and written before the answer leaves. `GET /v1/receipts` reads it;
//! receipt folding (minute roots for the transparency log) reads the leaf
//! hash written beside each receipt.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::actors::error::ActorError;
use crate::actors::gather::{Gather, answer_each};
use svc_store::model::{ReceiptLeaf, StoredReceipt};
use svc_store::{Batch, Store, be, cf, from_be, keys};

pub enum ReceiptLogMsg {
    /// Numbers and stores a receipt; answers its sequence.
    Append { receipt: Box<StoredReceipt>, reply: RpcReplyPort<Result<u64, ActorError>> },
    /// Stores the receipts gathered meanwhile, in one write, and answers them.
    Flush,
    /// Answers the sequence number the next receipt gets.
    Observe(RpcReplyPort<u64>),
}

#[derive(Clone)]
pub struct ReceiptLog;

pub struct ReceiptLogArgs {
    pub store: Store,
    /// Most receipts one write holds (`Config::answers_per_write`).
    pub per_write: usize,
}

pub struct ReceiptLogState {
    store: Store,
    next: u64,
    appends: Gather<Gathered>,
}

/// A receipt waiting for the next write, and whom to answer its sequence.
type Gathered = (Box<StoredReceipt>, RpcReplyPort<Result<u64, ActorError>>);

impl ReceiptLogState {
    /// Numbers the receipts gathered and stores them in one write; answers
    /// each its sequence once the write is in the store.
    fn append(&mut self, gathered: Vec<Gathered>) {
        if gathered.is_empty() {
            return;
        }
        let mut batch = self.store.batch();
        let (mut seqs, mut replies) = (Vec::with_capacity(gathered.len()), Vec::with_capacity(gathered.len()));
        for (seq, (mut receipt, reply)) in (self.next..).zip(gathered) {
            receipt.seq = seq;
            batch.put(cf::RECEIPTS, &be(seq), &*receipt);
            put_leaf(&mut batch, seq, &receipt);
            batch.put(cf::RECEIPTS_BY_GROUP, &keys::receipt_by_group(&receipt.group_id, receipt.served_at.0, seq), &());
            seqs.push(seq);
            replies.push(reply);
        }
        // Not synced: a killed process keeps it (the WAL is written before
        // this answers); a lost machine may lose the last few.
        let written = batch.commit_unsynced().map_err(ActorError::from);
        if written.is_ok() {
            self.next += seqs.len() as u64;
        }
        answer_each(replies, written.map(|()| seqs));
    }
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
    type Arguments = ReceiptLogArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<ReceiptLogMsg>,
        ReceiptLogArgs { store, per_write }: ReceiptLogArgs,
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
        Ok(ReceiptLogState { store, next, appends: Gather::new(per_write) })
    }

    async fn handle(
        &self,
        me: ActorRef<ReceiptLogMsg>,
        msg: ReceiptLogMsg,
        state: &mut ReceiptLogState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReceiptLogMsg::Append { receipt, reply } => {
                let gathered = state.appends.gather((receipt, reply), &me, ReceiptLogMsg::Flush);
                state.append(gathered);
            }
            ReceiptLogMsg::Flush => {
                let gathered = state.appends.flushed();
                state.append(gathered);
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

#[cfg(test)]
mod tests {
    use super::*;
    use svc_core::time::UnixMs;
    use svc_store::model::UsageKind;

    fn receipt(n: usize) -> Box<StoredReceipt> {
        Box::new(StoredReceipt {
            seq: 0,
            group_id: "g".into(),
            company_uuid: "c".into(),
            caller_key_id: "k".into(),
            retrieval_id: format!("r_{n}"),
            kind: UsageKind::Search,
            served_at: UnixMs(1_795_000_000_000),
            country: None,
            businesses: Vec::new(),
            envelope: format!("{{\"n\":{n}}}").into_bytes(),
        })
    }

    #[tokio::test]
    async fn receipts_that_queue_together_are_numbered_in_order_and_stored_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (log, handle) =
            Actor::spawn(None, ReceiptLog, ReceiptLogArgs { store: store.clone(), per_write: 256 }).await.unwrap();
        let writes = store.writes();
        // On this test's one thread, every append is queued before the
        // actor handles the first.
        let answers: Vec<_> = (0..30)
            .map(|n| {
                let (reply, answer) = ractor::concurrency::oneshot();
                log.send_message(ReceiptLogMsg::Append { receipt: receipt(n), reply: reply.into() }).unwrap();
                answer
            })
            .collect();
        let mut seqs = Vec::new();
        for answer in answers {
            seqs.push(answer.await.unwrap().unwrap());
        }
        assert_eq!(seqs, (1..=30).collect::<Vec<u64>>(), "numbered in the order asked");
        assert_eq!(store.writes() - writes, 1, "thirty receipts, one write");
        let stored: Vec<(Vec<u8>, StoredReceipt)> = store.scan_all(cf::RECEIPTS, &[]).unwrap();
        let ids: Vec<(u64, String)> = stored.into_iter().map(|(_, r)| (r.seq, r.retrieval_id)).collect();
        assert_eq!(ids, (0..30).map(|n| (n as u64 + 1, format!("r_{n}"))).collect::<Vec<_>>());
        log.stop(None);
        handle.await.unwrap();
    }
}
