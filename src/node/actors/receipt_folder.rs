//! Receipt folding: once a second, the receipts this region served are cut
//! into minutes (in served order) and each closed minute is folded into a
//! Merkle root (`svc_core::receipt_fold`). A read region sends its roots
//! home through its outbox; home keeps every region's roots for the
//! transparency log.
//!
//! The folded position is written in the same write as the roots, and the
//! receipt log is written before any answer leaves, so a region that crashes
//! folds on restart whatever it had returned. A region that stops folds
//! everything it holds, the open minute included.
//!
//! A fold writes little: each part's leaves, its root and the position.
//! The receipt log wrote each receipt's leaf and its sequence by leaf as it
//! stored it, so a proof finds a receipt's part and place from those. (A
//! write holds every writer behind it while it fills the memtable: writing
//! a busy minute's hundred thousand places at once froze answers.)
//!
//! Folds are written unsynced, like the receipts they fold. A synced write
//! holds every writer behind it until the disk answers, and a busy minute
//! folds in a dozen passes. The write-ahead log keeps writes in order, so a
//! crash of the machine can lose a fold only with the receipts after it.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use svc_core::receipt_fold::{self, Served};
use svc_core::time::UnixMs;

use crate::actors::error::ActorError;
use crate::actors::receipt_log::put_leaf;
use crate::replication::exchange::{Outgoing, Sequence};
use svc_clock::SharedClock;
use svc_store::model::{ReceiptLeaf, ReceiptRoot, StoredReceipt};
use svc_store::{Store, StoreResult, be, cf, from_be, keys};

const CURSOR: &[u8] = keys::meta::RECEIPT_FOLDED_SEQ;
/// Receipts read per pass.
const PASS: usize = 10_000;
/// The rest between passes. A pass is about 10 ms of a core; folding a
/// minute's passes back to back held a core for a tenth of a second, and
/// answers queued behind it. Rested, a pass still folds 10,000 receipts
/// in 50 ms, far above any rate a region serves.
const PAUSE: Duration = Duration::from_millis(40);

pub enum ReceiptFolderMsg {
    Tick,
    /// Folds what is closed now and answers how many parts it made (tests).
    Fold(ractor::RpcReplyPort<Result<usize, ActorError>>),
    /// Answers the receipt sequence folded through.
    Observe(ractor::RpcReplyPort<u64>),
}

pub struct ReceiptFolderArgs {
    pub store: Store,
    pub region: String,
    pub clock: SharedClock,
    /// A read region's outbox; home stores its own roots directly.
    pub outbox: Option<Sequence>,
}

#[derive(Clone)]
pub struct ReceiptFolder;

/// Stores a region's root (home: its own, or one a region reported).
pub fn keep(batch: &mut svc_store::Batch<'_>, root: &ReceiptRoot) {
    batch.put(cf::RECEIPT_ROOTS, &keys::receipt_root(&root.region, root.first_seq), root);
}

/// Stores a root at home and queues its leaf for the transparency log.
pub fn keep_at_home(batch: &mut svc_store::Batch<'_>, root: &ReceiptRoot, now: UnixMs) {
    keep(batch, root);
    let leaf = crate::transparency::minute_of(root).leaf();
    crate::transparency::queue_in_batch(batch, svc_store::model::LeafKind::ReceiptMinute, leaf, now);
}

/// Every root kept for `region`, oldest first.
pub fn roots(store: &Store, region: &str) -> StoreResult<Vec<ReceiptRoot>> {
    let prefix = keys::prefix(&[region]);
    Ok(store.scan_all::<ReceiptRoot>(cf::RECEIPT_ROOTS, &prefix)?.into_iter().map(|(_, r)| r).collect())
}

impl ReceiptFolder {
    /// Two reads instead of a pass over the open minute: whether the first
    /// waiting receipt and the newest one allow anything to close. Answers
    /// when the newest was served, if something may close.
    fn may_close(args: &ReceiptFolderArgs, from: &[u8]) -> StoreResult<Option<UnixMs>> {
        let Some((_, first)) = args.store.scan::<ReceiptLeaf>(cf::RECEIPT_LEAVES, &[], Some(from), 1)?.pop() else {
            return Ok(None);
        };
        let newest = Self::newest(args)?.unwrap_or(first.served_at);
        Ok(receipt_fold::may_close(first.served_at, newest, args.clock.now()).then_some(newest))
    }

    /// When the newest receipt stored was served.
    fn newest(args: &ReceiptFolderArgs) -> StoreResult<Option<UnixMs>> {
        let Some(key) = args.store.last_key(cf::RECEIPT_LEAVES)? else { return Ok(None) };
        Ok(args.store.get::<ReceiptLeaf>(cf::RECEIPT_LEAVES, &key)?.map(|r| r.served_at))
    }

    /// A store written before receipts had their leaves beside them: the
    /// receipts not folded yet get theirs (the same the log writes). Since
    /// the log writes a leaf with every receipt, only the oldest unfolded
    /// receipts can lack one, and the first with a leaf ends the search.
    fn add_missing_leaves(store: &Store) -> StoreResult<usize> {
        let cursor: u64 = store.get(cf::meta::RECEIPT_FOLDED_SEQ, CURSOR)?.unwrap_or(0);
        let mut next = cursor + 1;
        let mut added = 0;
        loop {
            let page = store.scan::<StoredReceipt>(cf::RECEIPTS, &[], Some(&be(next)), PASS)?;
            let mut batch = store.batch();
            let mut done = page.len() < PASS;
            for (key, receipt) in &page {
                if store.contains(cf::RECEIPT_LEAVES, key)? {
                    done = true;
                    break;
                }
                let seq = from_be(key).unwrap_or(receipt.seq);
                put_leaf(&mut batch, seq, receipt);
                added += 1;
                next = seq + 1;
            }
            batch.commit()?;
            if done {
                return Ok(added);
            }
        }
    }

    /// Folds what is closed (everything, on `flush`); answers the roots made.
    fn pass(args: &ReceiptFolderArgs, flush: bool) -> StoreResult<usize> {
        let mut made = 0;
        loop {
            let cursor: u64 = args.store.get(cf::meta::RECEIPT_FOLDED_SEQ, CURSOR)?.unwrap_or(0);
            let from = be(cursor + 1);
            let newest = if flush { Self::newest(args)? } else { Self::may_close(args, &from)? };
            let Some(newest) = newest else { return Ok(made) };
            let pending = args.store.scan::<ReceiptLeaf>(cf::RECEIPT_LEAVES, &[], Some(&from), PASS)?;
            let sabotaged = crate::sabotage::on(crate::sabotage::Sabotage::UnfoldedReceipts);
            let served: Vec<Served> = pending
                .iter()
                .map(|(key, r)| Served { seq: from_be(key).unwrap_or(0), served_at: r.served_at, leaf: r.leaf })
                .filter(|s| !(sabotaged && s.seq % 10 == 0))
                .collect();
            // (A pass cut by its size may close a minute in two parts: both
            // are sound, each named by its first receipt.)
            let parts = receipt_fold::fold(&served, newest, args.clock.now(), flush);
            let Some(last) = parts.last() else { return Ok(made) };
            let mut batch = args.store.batch();
            for part in &parts {
                let root = ReceiptRoot {
                    region: args.region.clone(),
                    minute: part.minute,
                    first_seq: part.first_seq,
                    last_seq: part.last_seq,
                    size: part.size,
                    root: part.root,
                };
                batch.put(cf::RECEIPT_PARTS, &be(part.first_seq), &part.leaves);
                match &args.outbox {
                    Some(outbox) => {
                        keep(&mut batch, &root);
                        outbox.append(&mut batch, &Outgoing::ReceiptRoot(root));
                    }
                    None => keep_at_home(&mut batch, &root, args.clock.now()),
                }
            }
            batch.put(cf::meta::RECEIPT_FOLDED_SEQ, CURSOR, &last.last_seq);
            batch.commit_unsynced()?;
            made += parts.len();
            if pending.len() < PASS {
                return Ok(made);
            }
            if !flush {
                // A minute is many passes: leave the cores to the serving
                // workers between them.
                std::thread::sleep(PAUSE);
            }
        }
    }
}

impl Actor for ReceiptFolder {
    type Msg = ReceiptFolderMsg;
    type State = Arc<ReceiptFolderArgs>;
    type Arguments = ReceiptFolderArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<ReceiptFolderMsg>,
        args: ReceiptFolderArgs,
    ) -> Result<Arc<ReceiptFolderArgs>, ActorProcessingErr> {
        let added = Self::add_missing_leaves(&args.store)?;
        if added > 0 {
            tracing::info!(added, "hashed the leaves of receipts stored before leaves were kept");
        }
        Ok(Arc::new(args))
    }

    /// A stopping region folds everything it served, the open minute too.
    async fn post_stop(
        &self,
        _me: ActorRef<ReceiptFolderMsg>,
        args: &mut Arc<ReceiptFolderArgs>,
    ) -> Result<(), ActorProcessingErr> {
        Self::pass(args, true)?;
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<ReceiptFolderMsg>,
        msg: ReceiptFolderMsg,
        args: &mut Arc<ReceiptFolderArgs>,
    ) -> Result<(), ActorProcessingErr> {
        if let ReceiptFolderMsg::Observe(reply) = msg {
            let _ = reply.send(args.store.get(cf::meta::RECEIPT_FOLDED_SEQ, CURSOR).ok().flatten().unwrap_or(0));
            return Ok(());
        }
        // A closing minute is a pass over every receipt in it: off the async
        // workers, which serve searches.
        let args = args.clone();
        let folded = tokio::task::spawn_blocking(move || Self::pass(&args, false).map_err(ActorError::from))
            .await
            .unwrap_or_else(|e| Err(ActorError::from(e)));
        match msg {
            ReceiptFolderMsg::Tick => {
                if let Err(e) = folded {
                    tracing::warn!(error = %e, "receipt folding failed; trying again next tick");
                }
            }
            ReceiptFolderMsg::Fold(reply) => {
                let _ = reply.send(folded);
            }
            ReceiptFolderMsg::Observe(_) => {}
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for ReceiptFolderMsg {
    type Seen = u64;

    fn observe(reply: ractor::RpcReplyPort<u64>) -> Self {
        ReceiptFolderMsg::Observe(reply)
    }

    fn describe(seen: u64) -> serde_json::Value {
        serde_json::json!({"folded_seq": seen})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::receipt_log::leaf_of;
    use svc_clock::ManualClock;
    use svc_core::merkle::BatchTree;
    use svc_core::time::UnixMs;
    use svc_store::model::UsageKind;

    const T: i64 = 1_795_000_020_000; // 20 s into a minute

    fn receipt(seq: u64) -> StoredReceipt {
        StoredReceipt {
            seq,
            group_id: "g".into(),
            company_uuid: "c".into(),
            caller_key_id: "k".into(),
            retrieval_id: format!("r{seq}"),
            kind: UsageKind::Search,
            served_at: UnixMs(T + seq as i64),
            country: Some("FR".into()),
            businesses: vec!["b".into()],
            envelope: format!("{{\"receipt\":{seq}}}").into_bytes(),
        }
    }

    // rule: P4.2.39
    #[test]
    fn receipts_stored_before_leaves_were_kept_are_folded_as_their_envelopes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let receipts: Vec<StoredReceipt> = (1..=5).map(receipt).collect();
        let mut batch = store.batch();
        for r in &receipts {
            batch.put(cf::RECEIPTS, &be(r.seq), r);
        }
        // As an older store holds them: leaves only from the fourth on, and
        // the fifth's is not what it would hash to, to show it is kept as is.
        batch.put(cf::RECEIPT_LEAVES, &be(4), &leaf_of(&receipts[3]));
        let odd = ReceiptLeaf { served_at: receipts[4].served_at, leaf: [9; 32] };
        batch.put(cf::RECEIPT_LEAVES, &be(5), &odd);
        batch.commit().unwrap();

        assert_eq!(ReceiptFolder::add_missing_leaves(&store).unwrap(), 3);
        for r in &receipts[..4] {
            assert_eq!(store.get::<ReceiptLeaf>(cf::RECEIPT_LEAVES, &be(r.seq)).unwrap(), Some(leaf_of(r)));
        }
        for r in &receipts[..3] {
            assert_eq!(store.get::<u64>(cf::RECEIPT_SEQS, &leaf_of(r).leaf).unwrap(), Some(r.seq));
        }
        assert_eq!(store.get::<ReceiptLeaf>(cf::RECEIPT_LEAVES, &be(5)).unwrap(), Some(odd));
        assert_eq!(ReceiptFolder::add_missing_leaves(&store).unwrap(), 0, "nothing is hashed twice");

        // The minute folds from the leaves into the tree of the envelopes.
        let clock = ManualClock::at(UnixMs(T));
        let args = ReceiptFolderArgs {
            store: store.clone(),
            region: "home".into(),
            clock: Arc::new(clock.clone()),
            outbox: None,
        };
        assert_eq!(ReceiptFolder::pass(&args, false).unwrap(), 0, "the minute is still open");
        clock.advance(60_000 + receipt_fold::GRACE_MS);
        assert_eq!(ReceiptFolder::pass(&args, false).unwrap(), 1);
        let root = roots(&store, "home").unwrap().pop().unwrap();
        assert_eq!((root.first_seq, root.last_seq, root.size), (1, 5, 5));
        let mut leaves: Vec<_> = receipts[..4].iter().map(|r| leaf_of(r).leaf).collect();
        leaves.push(odd.leaf);
        assert_eq!(root.root, BatchTree::from_leaf_hashes(&leaves).root());
        let envelopes: Vec<&[u8]> = receipts[..4].iter().map(|r| r.envelope.as_slice()).collect();
        let four = BatchTree::from_records(&envelopes).root();
        assert_eq!(BatchTree::from_leaf_hashes(&leaves[..4]).root(), four, "a leaf is its envelope's hash");
    }

    // rule: P4.2.39
    #[test]
    fn a_minute_longer_than_a_pass_closes_as_soon_as_the_next_minute_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let minute = T - T.rem_euclid(60_000);
        let leaf = |at: i64| ReceiptLeaf { served_at: UnixMs(at), leaf: [7; 32] };
        let mut batch = store.batch();
        for seq in 1..=PASS as u64 + 5 {
            batch.put(cf::RECEIPT_LEAVES, &be(seq), &leaf(minute + 1_000));
        }
        batch.put(cf::RECEIPT_LEAVES, &be(PASS as u64 + 6), &leaf(minute + 60_000));
        batch.commit().unwrap();
        // A second into the next minute, long before the grace is over.
        let clock = ManualClock::at(UnixMs(minute + 61_000));
        let args =
            ReceiptFolderArgs { store: store.clone(), region: "home".into(), clock: Arc::new(clock), outbox: None };
        assert_eq!(ReceiptFolder::pass(&args, false).unwrap(), 2, "a part per pass");
        let parts: Vec<(u64, u64)> = roots(&store, "home").unwrap().iter().map(|r| (r.first_seq, r.size)).collect();
        assert_eq!(parts, [(1, PASS as u64), (PASS as u64 + 1, 5)], "the next minute's receipt waits");
    }
}
