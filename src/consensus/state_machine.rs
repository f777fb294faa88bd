//! The group's state machine: the member's store. Committed entries are
//! applied in order, their writes and the last applied entry's id (with the
//! membership then, `meta.raft_applied`) in one synced write.
//!
//! A snapshot is the group's whole state (every value but the member's
//! own) as of one applied entry, in one file under the member's snapshot
//! folder: a frame of its `SnapshotMeta`, then a frame per value (each a
//! little-endian `u32` length and postcard bytes). It is written a value at
//! a time, never held whole in memory, and made the current one by a
//! rename; a snapshot received from the leader is written to a file of
//! its own and becomes the current one once installed. Once a snapshot is
//! made, openraft purges the log entries it covers (keeping the newest
//! ones, `Settings::logs_kept`), and a member behind the purged part takes
//! the snapshot instead.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta,
    StorageError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use svc_store::{Store, StoreError, StoreResult, Write, cf, keys};

use crate::{Group, decoded, encoded, io};

/// What a member applied last, and the group's membership then.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Applied {
    last: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
}

/// The current snapshot's file in a member's snapshot folder.
const CURRENT: &str = "current.snapshot";

/// The largest frame a snapshot holds: a stored value is far smaller.
const MAX_FRAME: u32 = 256 << 20;

/// A member's state machine: a handle on its store, and the folder of its
/// snapshots.
#[derive(Clone)]
pub struct StateMachine {
    store: Store,
    snapshots: Arc<PathBuf>,
    /// Files made since start, for their names and each snapshot's id.
    made: Arc<AtomicU64>,
    /// The file a snapshot from the leader is being received in (one at a
    /// time), until it is installed.
    receiving: Arc<Mutex<Option<PathBuf>>>,
}

impl StateMachine {
    /// Over `store`, keeping snapshots in `snapshots` (made if missing;
    /// what an earlier process left half-written there is deleted).
    ///
    /// The current snapshot is kept only if the store recorded it as its
    /// own: after `db/` was restored from a backup, a file from later is
    /// deleted. A member whose log was purged and that has no snapshot
    /// (that one deleted, or the folder lost) makes one before it starts,
    /// since a member behind would need it.
    pub fn new(store: Store, snapshots: &Path) -> StoreResult<StateMachine> {
        std::fs::create_dir_all(snapshots)?;
        for entry in std::fs::read_dir(snapshots)? {
            let path = entry?.path();
            if path.file_name().is_some_and(|name| name != CURRENT) {
                std::fs::remove_file(&path)?;
            }
        }
        let snapshots = Arc::new(snapshots.to_owned());
        let this = StateMachine { store, snapshots, made: Arc::default(), receiving: Arc::default() };
        let recorded: Option<SnapshotMeta<u64, BasicNode>> = this
            .store
            .get(cf::meta::RAFT_SNAPSHOT, keys::meta::RAFT_SNAPSHOT)?
            .map(|bytes| decoded(cf::meta::RAFT_SNAPSHOT.name(), &bytes))
            .transpose()?;
        let current = this.current().ok().flatten().map(|(meta, _)| meta);
        if current.is_some() && current != recorded {
            tracing::warn!(?current, ?recorded, "a snapshot file this store did not make: deleted");
            std::fs::remove_file(this.snapshots.join(CURRENT))?;
        }
        let purged = this.store.get(cf::meta::RAFT_PURGED, keys::meta::RAFT_PURGED)?.is_some();
        if purged && !this.snapshots.join(CURRENT).exists() {
            tracing::info!("this member's log was purged and it has no snapshot: making one");
            this.build()?;
        }
        Ok(this)
    }

    fn applied(&self) -> Result<Applied, StoreError> {
        let stored = self.store.get(cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)?;
        stored.map(|bytes| decoded(cf::meta::RAFT_APPLIED.name(), &bytes)).transpose().map(Option::unwrap_or_default)
    }

    /// A batch of the member's own tables recording `applied`.
    fn record<'s>(&'s self, applied: &Applied) -> svc_store::Batch<'s> {
        let mut own = self.store.batch_own();
        match encoded(applied) {
            Ok(bytes) => own.put(cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED, &bytes),
            Err(e) => own.fail(e),
        }
        own
    }

    /// A new file's path in the snapshot folder.
    fn fresh(&self, what: &str) -> PathBuf {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        self.snapshots.join(format!("{what}-{n}.part"))
    }

    /// Makes `file` (of `meta`) the current snapshot, durably, and records
    /// it in the store as this store's.
    fn make_current(&self, file: &Path, meta: &SnapshotMeta<u64, BasicNode>) -> StoreResult<()> {
        std::fs::rename(file, self.snapshots.join(CURRENT))?;
        File::open(self.snapshots.as_path())?.sync_all()?;
        let mut own = self.store.batch_own();
        own.put(cf::meta::RAFT_SNAPSHOT, keys::meta::RAFT_SNAPSHOT, &encoded(meta)?);
        own.commit()
    }

    /// Writes the group's state as of what this member applied to a file,
    /// a value at a time, and makes it the current snapshot; answers it
    /// opened at its start.
    fn build(&self) -> StoreResult<(SnapshotMeta<u64, BasicNode>, File)> {
        let path = self.fresh("building");
        // Both readers below write to it, one after the other.
        let out = std::cell::RefCell::new(BufWriter::new(File::create(&path)?));
        let mut meta = None;
        let made = self.made.load(Ordering::Relaxed);
        self.store.each_group_value(
            (cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED),
            |applied| {
                let applied: Applied = applied
                    .map(|bytes| decoded(cf::meta::RAFT_APPLIED.name(), &bytes))
                    .transpose()?
                    .unwrap_or_default();
                let snapshot_id = match applied.last {
                    Some(last) => format!("{last}-{made}"),
                    None => format!("empty-{made}"),
                };
                let made = SnapshotMeta { last_log_id: applied.last, last_membership: applied.membership, snapshot_id };
                frame(&mut *out.borrow_mut(), &made)?;
                meta = Some(made);
                Ok(())
            },
            |write| frame(&mut *out.borrow_mut(), &write),
        )?;
        out.into_inner().into_inner().map_err(|e| StoreError::Io(e.into_error()))?.sync_all()?;
        let meta = meta.ok_or_else(|| StoreError::Group("the snapshot read no record of what was applied".into()))?;
        let file = File::open(&path)?;
        self.make_current(&path, &meta)?;
        Ok((meta, file))
    }

    /// The current snapshot, opened at its start, with its meta.
    fn current(&self) -> StoreResult<Option<(SnapshotMeta<u64, BasicNode>, File)>> {
        let mut file = match File::open(self.snapshots.join(CURRENT)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = read_frame(&mut BufReader::new(&mut file))?
            .ok_or_else(|| StoreError::Group("the current snapshot is empty".into()))?;
        file.seek(SeekFrom::Start(0))?;
        Ok(Some((meta, file)))
    }

    /// Replaces the group's state with the snapshot in `file`, and records
    /// `meta` as applied, in one synced write.
    fn install(&self, meta: &SnapshotMeta<u64, BasicNode>, file: &mut File) -> StoreResult<()> {
        file.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::new(file);
        let _: SnapshotMeta<u64, BasicNode> =
            read_frame(&mut reader)?.ok_or_else(|| StoreError::Group("the snapshot received is empty".into()))?;
        let values = std::iter::from_fn(|| read_frame::<Write>(&mut reader).transpose());
        let applied = Applied { last: meta.last_log_id, membership: meta.last_membership.clone() };
        self.store.replace_group_state(values, self.record(&applied))
    }
}

/// Writes `value` as one frame: its length, then its postcard bytes.
fn frame<T: Serialize>(out: &mut impl std::io::Write, value: &T) -> StoreResult<()> {
    let bytes = encoded(value)?;
    let length = u32::try_from(bytes.len()).map_err(|_| StoreError::Group("a snapshot value over 4 GiB".into()))?;
    out.write_all(&length.to_le_bytes())?;
    out.write_all(&bytes)?;
    Ok(())
}

/// Reads the next frame; `None` at the end of the file.
fn read_frame<T: serde::de::DeserializeOwned>(input: &mut impl Read) -> StoreResult<Option<T>> {
    let mut length = [0u8; 4];
    match input.read_exact(&mut length) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let length = u32::from_le_bytes(length);
    if length > MAX_FRAME {
        return Err(StoreError::Group(format!("a snapshot frame of {length} bytes is past the {MAX_FRAME} allowed")));
    }
    let mut bytes = vec![0; length as usize];
    input.read_exact(&mut bytes)?;
    decoded("snapshot", &bytes).map(Some)
}

/// Whether `file` is the one at `path`.
fn same_file(file: &File, path: &Path) -> StoreResult<bool> {
    use std::os::unix::fs::MetadataExt;
    let (open, named) = (file.metadata()?, std::fs::metadata(path)?);
    Ok((open.dev(), open.ino()) == (named.dev(), named.ino()))
}

/// Runs `work` off the Raft node's threads: a snapshot reads or writes
/// the whole state.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> StoreResult<T> + Send + 'static,
    failed: impl Fn(StoreError) -> StorageError<u64>,
) -> Result<T, StorageError<u64>> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done.map_err(failed),
        Err(e) => Err(failed(StoreError::Group(format!("a snapshot task ended: {e}")))),
    }
}

impl RaftStateMachine<Group> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        let applied = self.applied().map_err(io(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        Ok((applied.last, applied.membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<Group>> + Send,
        I::IntoIter: Send,
    {
        let mut applied = self.applied().map_err(io(ErrorSubject::StateMachine, ErrorVerb::Read))?;
        let mut writes: Vec<Write> = Vec::new();
        let mut answers = Vec::new();
        for entry in entries {
            applied.last = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(proposal) => writes.extend(proposal.writes),
                EntryPayload::Membership(membership) => {
                    applied.membership = StoredMembership::new(Some(entry.log_id), membership)
                }
            }
            answers.push(());
        }
        if answers.is_empty() {
            return Ok(answers);
        }
        // In order, in one write: a later entry's write to a key wins.
        let own = self.record(&applied);
        self.store.apply_group_writes(&writes, own).map_err(io(ErrorSubject::StateMachine, ErrorVerb::Write))?;
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> StateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError<u64>> {
        let failed = io(ErrorSubject::Snapshot(None), ErrorVerb::Write);
        let path = self.fresh("receiving");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| failed(e.into()))?;
        if let Some(earlier) = self.receiving.lock().ok().and_then(|mut receiving| receiving.replace(path)) {
            // One abandoned for this one.
            let _ = std::fs::remove_file(earlier);
        }
        Ok(Box::new(tokio::fs::File::from_std(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError<u64>> {
        let failed = io(ErrorSubject::Snapshot(Some(meta.signature())), ErrorVerb::Write);
        let mut file = (*snapshot).into_std().await;
        let (this, meta) = (self.clone(), meta.clone());
        blocking(
            move || {
                file.sync_all()?;
                this.install(&meta, &mut file)?;
                // What was received is the current snapshot now: the file
                // it was received in, or a copy of what was handed over.
                let received = this.receiving.lock().ok().and_then(|mut receiving| receiving.take());
                match received {
                    Some(path) if same_file(&file, &path)? => this.make_current(&path, &meta),
                    other => {
                        if let Some(path) = other {
                            std::fs::remove_file(path)?;
                        }
                        let copy = this.fresh("copying");
                        file.seek(SeekFrom::Start(0))?;
                        let mut out = File::create(&copy)?;
                        std::io::copy(&mut file, &mut out)?;
                        out.sync_all()?;
                        this.make_current(&copy, &meta)
                    }
                }
            },
            failed,
        )
        .await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Group>>, StorageError<u64>> {
        let this = self.clone();
        let current = blocking(move || this.current(), io(ErrorSubject::Snapshot(None), ErrorVerb::Read)).await?;
        Ok(current.map(|(meta, file)| Snapshot { meta, snapshot: Box::new(tokio::fs::File::from_std(file)) }))
    }
}

impl RaftSnapshotBuilder<Group> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Group>, StorageError<u64>> {
        let this = self.clone();
        let failed = io(ErrorSubject::Snapshot(None), ErrorVerb::Write);
        blocking(
            move || {
                let (meta, file) = this.build()?;
                Ok(Snapshot { meta, snapshot: Box::new(tokio::fs::File::from_std(file)) })
            },
            failed,
        )
        .await
    }
}
