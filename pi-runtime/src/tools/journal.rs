//! Writes in place that survive their process being killed: the new contents are journaled
//! whole before the target is touched, and an interrupted write is finished from its journal
//! by the next tool that touches the file.
//!
//! A write in place (see [`replace`](super::replace)) overwrites a file through its own
//! inode, so that its hard links keep sharing it. No system call replaces an inode's
//! contents at once: the kernel checks for a fatal signal between the pages of one `write`,
//! so a `SIGKILL` cuts even a single call, and a cut write leaves a file that is neither the
//! old content nor the new. So, before the target is touched, the new contents go whole to
//! `<temp dir>/pi-write-journal-<uid>/<dev>-<ino>.journal`: written under a temporary name,
//! synced, then renamed, so a journal under its name is always complete. The journal is
//! locked (`flock`) while the write runs, and removed once the target is synced.
//!
//! A killed write leaves its journal unlocked, and [`recover`] (run by `read`, `edit` and
//! `write` before they touch a file) finishes the write from it. So through the tools a file
//! is its old content until its journal is complete, and its new content from then on. A
//! program that reads the file between the kill and the next tool call can still see it
//! half written.
//!
//! Rejected: refusing in-place writes above some size, since a write of more than one page
//! can be cut; reflinks (`FICLONE`), which swap a file's extents at once, but only on btrfs
//! and XFS. A journal is applied only while the path it names is still its inode, so a
//! stale one (its file deleted, the inode number reused) is dropped. The journals live under
//! the temp directory because the target's own directory may not be writable, which is one
//! of the reasons a write goes in place; so a journal outlives a power loss only where the
//! temp directory is on disk.

use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::file::{nonblocking, reserve};
use super::private_dir;

/// The journals' directory is `<temp dir>/<this><uid>`.
const DIR_PREFIX: &str = "pi-write-journal-";
/// The first line of a journal; the target's path (its length as 8 bytes, little-endian,
/// then its bytes) and the new contents follow.
const MAGIC: &[u8] = b"pi write journal 1\n";

/// The journal of a write in place that is running; [`Journal::end`] it once the target is
/// synced. Dropped without `end`, it stays for [`recover`] to finish the write.
#[derive(Debug)]
pub(crate) struct Journal {
    /// Held for the lock.
    _file: File,
    path: PathBuf,
}

impl Journal {
    /// Journal that `target` (opened as `meta`) is about to hold `contents`.
    pub(crate) fn begin(target: &Path, meta: &Metadata, contents: &[u8]) -> io::Result<Journal> {
        let dir = private_dir::ensure(&private_dir::shared_path(DIR_PREFIX))?;
        let target = std::path::absolute(target)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".pending-")
            .tempfile_in(&dir)?;
        // Locked before it has its name, so no one can find it unlocked while it runs.
        temp.as_file().lock()?;
        let file = temp.as_file_mut();
        let name = target.as_os_str().as_bytes();
        file.write_all(MAGIC)?;
        file.write_all(&(name.len() as u64).to_le_bytes())?;
        file.write_all(name)?;
        file.write_all(contents)?;
        file.sync_all()?;
        let path = journal_path(&dir, meta);
        let file = temp.persist(&path).map_err(|error| error.error)?;
        if let Ok(dir) = File::open(&dir) {
            let _ = dir.sync_all();
        }
        Ok(Journal { _file: file, path })
    }

    /// The target holds the new contents, synced, or still the old ones: the journal is not
    /// needed any more.
    pub(crate) fn end(self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn journal_path(dir: &Path, meta: &Metadata) -> PathBuf {
    dir.join(format!("{}-{}.journal", meta.dev(), meta.ino()))
}

/// Finish a write in place to the file at `target` whose process was killed, if there is
/// one. A write still running (its journal locked) is left alone.
pub(crate) fn recover(target: &Path) -> io::Result<()> {
    let Ok(meta) = fs::metadata(target) else {
        return Ok(());
    };
    let dir = private_dir::shared_path(DIR_PREFIX);
    // A directory someone else could write to may hold journals they planted.
    if !meta.is_file() || !private_dir::is_private_dir(&dir).unwrap_or(false) {
        return Ok(());
    }
    let path = journal_path(&dir, &meta);
    let mut journal = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    match journal.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(()),
        Err(TryLockError::Error(error)) => return Err(error),
    }
    // Finished and removed, or replaced by a new one, between the open and the lock.
    let opened = journal.metadata()?;
    if !fs::metadata(&path).is_ok_and(|now| now.ino() == opened.ino()) {
        return Ok(());
    }
    let named = read_header(&mut journal)?;
    let is_target = |meta: &Metadata| (meta.dev(), meta.ino());
    let still_its_inode = named
        .as_deref()
        .and_then(|named| fs::metadata(named).ok())
        .is_some_and(|now| is_target(&now) == is_target(&meta));
    if still_its_inode {
        let mut file = nonblocking(OpenOptions::new().write(true)).open(target)?;
        let old = file.metadata()?;
        if is_target(&old) == is_target(&meta) {
            // The contents start where the header ends.
            let len = opened.len().saturating_sub(journal.stream_position()?);
            if len > old.len() {
                reserve(&file, old.len(), len - old.len())?;
            }
            io::copy(&mut Read::by_ref(&mut journal).take(len), &mut file)?;
            file.set_len(len)?;
            file.sync_all()?;
        }
    }
    fs::remove_file(&path)
}

/// The target path a journal names; `None` when it is not a journal of ours.
fn read_header(journal: &mut File) -> io::Result<Option<PathBuf>> {
    let mut magic = [0_u8; MAGIC.len()];
    let mut len = [0_u8; 8];
    if journal.read_exact(&mut magic).is_err()
        || magic != MAGIC
        || journal.read_exact(&mut len).is_err()
    {
        return Ok(None);
    }
    let Ok(len) = usize::try_from(u64::from_le_bytes(len)) else {
        return Ok(None);
    };
    let mut name = Vec::new();
    Read::by_ref(journal)
        .take(len as u64)
        .read_to_end(&mut name)?;
    if name.len() != len {
        return Ok(None);
    }
    Ok(Some(PathBuf::from(OsStr::from_bytes(&name))))
}

/// [`recover`] on the blocking pool. Errors are not the caller's: the file is then as the
/// killed write left it, which the caller's own read or write deals with.
pub(crate) async fn recover_async(target: &Path) {
    let target = target.to_path_buf();
    let _ = tokio::task::spawn_blocking(move || recover(&target)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_write_is_finished_and_a_running_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, "old contents\n").unwrap();
        let meta = fs::metadata(&target).unwrap();
        let journal = Journal::begin(&target, &meta, b"new\n").unwrap();
        // Cut halfway: neither old nor new.
        fs::write(&target, "ne").unwrap();
        recover(&target).unwrap();
        assert_eq!(
            fs::read(&target).unwrap(),
            b"ne",
            "a running write is left alone"
        );
        // Its process dies: the lock goes with it.
        drop(journal);
        recover(&target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new\n");
        let path = journal_path(&private_dir::shared_path(DIR_PREFIX), &meta);
        assert!(!path.exists());
    }

    #[test]
    fn a_journal_whose_path_is_another_inode_now_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (target, other) = (dir.path().join("f.txt"), dir.path().join("g.txt"));
        fs::write(&target, "old\n").unwrap();
        let meta = fs::metadata(&target).unwrap();
        drop(Journal::begin(&target, &meta, b"new\n").unwrap());
        // The inode now has another name only; `f.txt` is a different file.
        fs::rename(&target, &other).unwrap();
        fs::write(&target, "unrelated\n").unwrap();
        recover(&other).unwrap();
        assert_eq!(fs::read(&other).unwrap(), b"old\n");
        assert!(!journal_path(&private_dir::shared_path(DIR_PREFIX), &meta).exists());
    }
}
