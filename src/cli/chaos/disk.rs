//! A node's data directory on a small tmpfs of its own, so a `disk-full`
//! fault can fill it and free it again without touching the machine's
//! disk. Mounting needs root; the mount is undone when this is dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a small disk could not be made, filled or freed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {detail}", .path.display())]
pub struct DiskError {
    pub path: PathBuf,
    pub detail: String,
}

/// How big each small disk is: several times what a node writes in a run.
pub const SIZE_MB: u64 = 256;

pub struct SmallDisk {
    path: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `SIZE_MB` at `path` (made if absent).
    pub fn mount(path: &Path) -> Result<SmallDisk, DiskError> {
        let failed = |detail: String| DiskError { path: path.to_owned(), detail };
        std::fs::create_dir_all(path).map_err(|e| failed(e.to_string()))?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE_MB}m,mode=0700"), "svc-chaos"])
            .arg(path)
            .output()
            .map_err(|e| failed(format!("mount: {e}")))?;
        if !output.status.success() {
            return Err(failed(format!("mount: {}", String::from_utf8_lossy(&output.stderr).trim())));
        }
        Ok(SmallDisk { path: path.to_owned() })
    }

    fn filler(&self) -> PathBuf {
        self.path.join("chaos-filler")
    }

    /// Writes zeros until the disk is full; answers how many bytes it took.
    pub fn fill(&self) -> Result<u64, DiskError> {
        let failed = |detail: String| DiskError { path: self.filler(), detail };
        let mut file = std::fs::File::create(self.filler()).map_err(|e| failed(e.to_string()))?;
        let block = vec![0u8; 1 << 20];
        let mut written = 0u64;
        // A tmpfs has no sparse trick to defeat: written bytes are held.
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => return Err(failed(e.to_string())),
            }
        }
        Ok(written)
    }

    /// Deletes what `fill` wrote.
    pub fn free(&self) -> Result<(), DiskError> {
        match std::fs::remove_file(self.filler()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DiskError { path: self.filler(), detail: e.to_string() }),
        }
    }
}

impl Drop for SmallDisk {
    /// Unmounts, lazily if something still holds a file open there.
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.path).status().is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounted(path: &Path) -> bool {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        mounts.lines().any(|l| l.split(' ').nth(1) == Some(path.to_str().unwrap()))
    }

    // Where the machine allows mounting (root, as CI is), the disk fills to
    // its size, frees, and is unmounted when dropped; elsewhere the mount
    // is refused with the reason.
    #[test]
    fn a_small_disk_fills_frees_and_unmounts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node");
        let disk = match SmallDisk::mount(&path) {
            Ok(disk) => disk,
            Err(e) => {
                assert!(e.detail.starts_with("mount"), "{e}");
                return;
            }
        };
        assert!(mounted(&path));
        std::fs::write(path.join("data"), b"kept").unwrap();
        let written = disk.fill().unwrap();
        assert!(written > (SIZE_MB - 2) << 20 && written <= SIZE_MB << 20, "{written}");
        let full = std::fs::write(path.join("more"), vec![0u8; 8192]);
        assert_eq!(full.unwrap_err().raw_os_error(), Some(28), "no space left");
        disk.free().unwrap();
        std::fs::write(path.join("more"), vec![0u8; 8192]).unwrap();
        assert_eq!(std::fs::read(path.join("data")).unwrap(), b"kept");
        drop(disk);
        assert!(!mounted(&path), "unmounted when dropped");
    }
}
