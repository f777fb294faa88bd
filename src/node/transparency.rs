//! The transparency log's stored half: leaves queue at home in the same
//! write as what they record, the `transparency_log` actor sequences them
//! (`actors::transparency_log`), and every region reads the replicated log
//! through a [`LogView`] to answer checkpoints and proofs.

use std::sync::Arc;

use svc_core::merkle::{self, Hash};
use svc_core::tiles::TileRef;
use svc_core::time::UnixMs;
use svc_core::tlog::Tree;
use tokio::sync::RwLock;

use crate::replication::Change;
use svc_store::model::{Cosignature, LeafKind, LogCheckpoint, LogLeaf, PendingLeaf, ReceiptRoot};
use svc_store::{Batch, Store, StoreResult, be, cf};

/// The log's origin (its checkpoints' first line and key name): the
/// deployment's public host, so sandbox and production logs never mix.
pub fn origin(public_authority: &str) -> String {
    format!("{public_authority}/log")
}

fn pending(kind: LeafKind, data: Vec<u8>, now: UnixMs) -> (Hash, PendingLeaf) {
    (merkle::leaf_hash(&data), PendingLeaf { kind, data, queued_at: now })
}

/// Queues a leaf in a publisher change, so it lands with what it records.
/// The same leaf queued twice (a batch resent) is one leaf.
pub fn queue(change: &mut Change, kind: LeafKind, data: Vec<u8>, now: UnixMs) {
    let (key, leaf) = pending(kind, data, now);
    change.put(cf::TLOG_PENDING, &key, &leaf);
}

/// Queues a leaf in a home-only write (receipt minute roots).
pub fn queue_in_batch(batch: &mut Batch<'_>, kind: LeafKind, data: Vec<u8>, now: UnixMs) {
    let (key, leaf) = pending(kind, data, now);
    batch.put(cf::TLOG_PENDING, &key, &leaf);
}

/// The leaf of a region's folded receipt minute.
pub fn minute_of(root: &ReceiptRoot) -> svc_core::tlog::ReceiptMinute {
    svc_core::tlog::ReceiptMinute {
        region: root.region.clone(),
        minute: root.minute,
        first_seq: root.first_seq,
        last_seq: root.last_seq,
        size: root.size,
        root: root.root,
    }
}

/// The replicated log as one node reads it: the tree, rebuilt from the
/// stored leaves at start and caught up as entries arrive. Cheap to clone.
#[derive(Clone)]
pub struct LogView {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    origin: String,
    tree: RwLock<Tree>,
}

/// The most witnesses a checkpoint carries cosignatures of (C2SP asks
/// verifiers to read 16 signatures; the log's own is one).
pub const MAX_WITNESSES: usize = 15;

/// Leaves read per store scan while catching up.
const CATCH_UP: usize = 10_000;

impl LogView {
    pub fn open(store: Store, origin: String) -> StoreResult<LogView> {
        let mut tree = Tree::default();
        catch_up(&store, &mut tree)?;
        Ok(LogView { inner: Arc::new(Inner { store, origin, tree: RwLock::new(tree) }) })
    }

    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The newest signed checkpoint, if the log has signed one.
    pub fn latest(&self) -> StoreResult<Option<LogCheckpoint>> {
        let Some(key) = self.inner.store.last_key(cf::TLOG_CHECKPOINTS)? else { return Ok(None) };
        self.inner.store.get(cf::TLOG_CHECKPOINTS, &key)
    }

    /// The checkpoint signed at `size`, if one was.
    pub fn checkpoint(&self, size: u64) -> StoreResult<Option<LogCheckpoint>> {
        self.inner.store.get(cf::TLOG_CHECKPOINTS, &be(size))
    }

    /// The index of a leaf, if it is sequenced.
    pub fn find(&self, leaf: &Hash) -> StoreResult<Option<u64>> {
        self.inner.store.get(cf::TLOG_INDEX, leaf)
    }

    pub fn leaf(&self, index: u64) -> StoreResult<Option<LogLeaf>> {
        self.inner.store.get(cf::TLOG_LEAVES, &be(index))
    }

    /// Where `leaf` stands in the tree `checkpoint` signed, with its audit
    /// path; `None` for a leaf sequenced after it, or never.
    pub async fn prove(&self, leaf: &Hash, checkpoint: &LogCheckpoint) -> StoreResult<Option<(u64, Vec<Hash>)>> {
        let Some(index) = self.find(leaf)?.filter(|i| *i < checkpoint.size) else { return Ok(None) };
        Ok(self.inclusion(index, checkpoint.size).await?.map(|path| (index, path)))
    }

    /// The audit path of leaf `index` in the tree of `size` leaves.
    pub async fn inclusion(&self, index: u64, size: u64) -> StoreResult<Option<Vec<Hash>>> {
        self.caught_up(size).await?;
        Ok(self.inner.tree.read().await.inclusion(index, size))
    }

    /// The proof that the tree of `old` leaves is a prefix of that of `new`.
    pub async fn consistency(&self, old: u64, new: u64) -> StoreResult<Option<Vec<Hash>>> {
        self.caught_up(new).await?;
        Ok(self.inner.tree.read().await.consistency(old, new))
    }

    /// A hash tile of the tree of `size` leaves (c2sp.org/tlog-tiles);
    /// `None` when that tree does not hold it.
    pub async fn tile(&self, tile: &TileRef, size: u64) -> StoreResult<Option<Vec<u8>>> {
        if !tile.within(size) {
            return Ok(None);
        }
        self.caught_up(size).await?;
        Ok(self.inner.tree.read().await.tile(tile))
    }

    /// An entry bundle's leaves, in order; `None` when the tree of `size`
    /// leaves does not hold it or a leaf is not stored here yet.
    pub fn entries(&self, tile: &TileRef, size: u64) -> StoreResult<Option<Vec<LogLeaf>>> {
        let Some(first) = tile.first().filter(|_| tile.within(size)) else { return Ok(None) };
        let leaves: Vec<LogLeaf> = self
            .inner
            .store
            .scan::<LogLeaf>(cf::TLOG_LEAVES, &[], Some(&be(first)), tile.width as usize)?
            .into_iter()
            .map(|(_, leaf)| leaf)
            .collect();
        let whole = leaves.len() as u64 == tile.width && leaves.iter().zip(first..).all(|(leaf, i)| leaf.index == i);
        Ok(whole.then_some(leaves))
    }

    /// The witnesses' cosignature lines on the checkpoint of `size` leaves.
    pub fn cosignatures(&self, size: u64) -> StoreResult<Vec<Cosignature>> {
        let found = self.inner.store.scan::<Cosignature>(cf::TLOG_COSIGNATURES, &be(size), None, MAX_WITNESSES)?;
        Ok(found.into_iter().map(|(_, c)| c).collect())
    }

    /// Reads leaves the tree lacks, when it is shorter than `size`.
    async fn caught_up(&self, size: u64) -> StoreResult<()> {
        if self.inner.tree.read().await.size() >= size {
            return Ok(());
        }
        let mut tree = self.inner.tree.write().await;
        catch_up(&self.inner.store, &mut tree)
    }

    /// The tree for the one writer (home's sequencer), caught up with the
    /// store; readers wait while the writer holds it.
    pub async fn writer(&self) -> StoreResult<tokio::sync::RwLockWriteGuard<'_, Tree>> {
        let mut tree = self.inner.tree.write().await;
        catch_up(&self.inner.store, &mut tree)?;
        Ok(tree)
    }
}

fn catch_up(store: &Store, tree: &mut Tree) -> StoreResult<()> {
    loop {
        let from = be(tree.size());
        let leaves = store.scan::<LogLeaf>(cf::TLOG_LEAVES, &[], Some(&from), CATCH_UP)?;
        for (_, leaf) in &leaves {
            if leaf.index != tree.size() {
                // A gap: the rest has not been applied yet.
                return Ok(());
            }
            tree.push(leaf.hash);
        }
        if leaves.len() < CATCH_UP {
            return Ok(());
        }
    }
}
