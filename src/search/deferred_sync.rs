//! Index files written without waiting for the disk, made durable together
//! at a checkpoint.
//!
//! A tantivy commit syncs each file it wrote, its `meta.json` and the
//! directory: most of a small commit's time is those waits. The index is
//! derived from the replication log, so it may lose its newest commits in a
//! machine crash, as long as it knows it did. Before the first write after a
//! checkpoint, an `unsynced` marker naming the machine's boot is written and
//! synced at the index's root; a checkpoint syncs every file written since,
//! then removes the marker. At start, a marker from another boot means the
//! machine stopped while index writes were in its page cache only, and the
//! index is rebuilt from the log (`prepare_layout`); a marker from this boot
//! means only the process stopped, and the page cache still holds every
//! write it made.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

const MARKER: &str = "unsynced";
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// What was written since the last checkpoint, for every shard of one index.
#[derive(Debug)]
pub struct Ledger {
    root: PathBuf,
    state: Mutex<Unsynced>,
    /// Names temporary files apart.
    temp: AtomicU64,
}

#[derive(Debug, Default)]
struct Unsynced {
    /// The marker is on disk.
    marked: bool,
    /// When the marker was written, by this process.
    since: Option<std::time::Instant>,
    /// Writers not yet terminated: a checkpoint waits for them.
    open_writers: usize,
    files: HashSet<PathBuf>,
    dirs: HashSet<PathBuf>,
}

impl Ledger {
    pub fn new(root: &Path) -> Arc<Ledger> {
        let marked = root.join(MARKER).exists();
        let state = Mutex::new(Unsynced { marked, ..Unsynced::default() });
        Arc::new(Ledger { root: root.to_owned(), state, temp: AtomicU64::new(0) })
    }

    fn lock(&self) -> MutexGuard<'_, Unsynced> {
        // The state is a few sets and counters, consistent after any panic.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks the index unsynced, durably, before its first write since the
    /// last checkpoint; then notes the file and its directory.
    fn will_write(&self, state: &mut Unsynced, file: &Path) -> io::Result<()> {
        if !state.marked {
            let marker = self.root.join(MARKER);
            let mut out = File::create(&marker)?;
            out.write_all(boot_id().unwrap_or_default().as_bytes())?;
            out.sync_data()?;
            sync_dir(&self.root)?;
            state.marked = true;
            state.since = Some(svc_clock::monotonic());
        }
        state.files.insert(file.to_owned());
        if let Some(dir) = file.parent() {
            state.dirs.insert(dir.to_owned());
        }
        Ok(())
    }

    /// Makes every write since the last checkpoint durable and removes the
    /// marker. Answers `false`, syncing nothing, while a file is still being
    /// written (a merge): its later bytes would not be covered.
    pub fn checkpoint(&self) -> io::Result<bool> {
        let mut state = self.lock();
        if !state.marked {
            return Ok(true);
        }
        if state.open_writers > 0 {
            return Ok(false);
        }
        for file in &state.files {
            match File::open(file) {
                Ok(file) => file.sync_data()?,
                // Deleted since, by a merge: nothing of it is needed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        for dir in &state.dirs {
            sync_dir(dir)?;
        }
        std::fs::remove_file(self.root.join(MARKER))?;
        sync_dir(&self.root)?;
        *state = Unsynced::default();
        Ok(true)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether writes since the last checkpoint wait for one.
    pub fn unsynced(&self) -> bool {
        self.lock().marked
    }

    /// Whether the oldest write no checkpoint covers is older than `age`.
    pub fn due(&self, age: std::time::Duration) -> bool {
        self.lock().since.is_some_and(|since| since.elapsed() >= age)
    }
}

/// Whether the index under `root` may have lost writes: the machine
/// restarted (or its boot cannot be told) since a write no checkpoint
/// covered.
pub fn torn(root: &Path) -> bool {
    match std::fs::read_to_string(root.join(MARKER)) {
        Ok(boot) => boot_id().is_none_or(|now| now != boot.trim()),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string(BOOT_ID).ok().map(|id| id.trim().to_owned()).filter(|id| !id.is_empty())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// tantivy's memory-mapped directory, but what it writes is synced at the
/// [`Ledger`]'s checkpoint rather than at each commit.
#[derive(Debug, Clone)]
pub struct DeferredSyncDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    ledger: Arc<Ledger>,
}

impl DeferredSyncDirectory {
    pub fn open(dir: &Path, ledger: Arc<Ledger>) -> Result<Self, OpenDirectoryError> {
        Ok(DeferredSyncDirectory { inner: MmapDirectory::open(dir)?, root: dir.to_owned(), ledger })
    }
}

impl Directory for DeferredSyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)?;
        self.ledger.lock().files.remove(&self.root.join(path));
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full = self.root.join(path);
        let failed = |e: io::Error| match e.kind() {
            io::ErrorKind::AlreadyExists => OpenWriteError::FileAlreadyExists(path.to_owned()),
            _ => OpenWriteError::wrap_io_error(e, path.to_owned()),
        };
        let mut state = self.ledger.lock();
        self.ledger.will_write(&mut state, &full).map_err(failed)?;
        let file = OpenOptions::new().write(true).create_new(true).open(&full).map_err(failed)?;
        state.open_writers += 1;
        let writer = UnsyncedFile { file, ledger: self.ledger.clone(), open: true };
        Ok(BufWriter::new(Box::new(writer)))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// Written beside its place and renamed over it, so a reader sees the
    /// old bytes or the new, never part of them.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let full = self.root.join(path);
        let n = self.ledger.temp.fetch_add(1, Ordering::Relaxed);
        let temp = self.root.join(format!(".{}.{n}.tmp", path.display()).replace('/', "_"));
        let mut state = self.ledger.lock();
        self.ledger.will_write(&mut state, &full)?;
        std::fs::write(&temp, data)?;
        std::fs::rename(&temp, &full)
    }

    /// Deferred to the checkpoint.
    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}

/// A file being written: flushed to the page cache when terminated.
struct UnsyncedFile {
    file: File,
    ledger: Arc<Ledger>,
    open: bool,
}

impl UnsyncedFile {
    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            self.ledger.lock().open_writers -= 1;
        }
    }
}

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    /// The `BufWriter` above does the buffering; bytes reach the file as it
    /// writes them.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.file.flush()?;
        self.close();
        Ok(())
    }
}

impl Drop for UnsyncedFile {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &DeferredSyncDirectory, name: &str) -> WritePtr {
        let mut out = dir.open_write(Path::new(name)).unwrap();
        out.write_all(b"bytes").unwrap();
        out
    }

    #[test]
    fn a_write_marks_the_index_until_a_checkpoint_syncs_it() {
        let root = tempfile::tempdir().unwrap();
        let shard = root.path().join("product/0");
        std::fs::create_dir_all(&shard).unwrap();
        let ledger = Ledger::new(root.path());
        let dir = DeferredSyncDirectory::open(&shard, ledger.clone()).unwrap();
        assert!(!ledger.unsynced() && !torn(root.path()));

        let out = write(&dir, "a.idx");
        assert!(ledger.unsynced(), "marked before the first byte was written");
        assert!(root.path().join(MARKER).exists());
        assert!(!torn(root.path()), "a marker from this boot: the page cache holds the writes");
        assert!(!ledger.checkpoint().unwrap(), "a file still being written is not covered");
        out.terminate().unwrap();
        dir.atomic_write(Path::new("meta.json"), b"{}").unwrap();
        assert_eq!(dir.atomic_read(Path::new("meta.json")).unwrap(), b"{}");

        assert!(ledger.checkpoint().unwrap());
        assert!(!ledger.unsynced() && !root.path().join(MARKER).exists());
        assert_eq!(std::fs::read(shard.join("a.idx")).unwrap(), b"bytes");
    }

    #[test]
    fn a_writer_dropped_unterminated_does_not_hold_checkpoints_off() {
        let root = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(root.path());
        let dir = DeferredSyncDirectory::open(root.path(), ledger.clone()).unwrap();
        drop(write(&dir, "b.pos"));
        dir.delete(Path::new("b.pos")).unwrap();
        assert!(ledger.checkpoint().unwrap());
        assert!(!ledger.unsynced());
        write(&dir, "c.store").terminate().unwrap();
        assert!(ledger.unsynced(), "the first write after a checkpoint marks the index again");
    }

    #[test]
    fn a_marker_from_another_boot_means_the_index_may_be_torn() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(MARKER), "another-boot").unwrap();
        assert!(torn(root.path()));
        let ledger = Ledger::new(root.path());
        assert!(ledger.unsynced(), "a marker found at start is cleared only by a checkpoint");
        assert!(ledger.checkpoint().unwrap());
        assert!(!torn(root.path()));
    }
}
