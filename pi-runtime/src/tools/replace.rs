//! Replace a file's contents for `write` and `edit` without destroying anything the file was:
//! its data, its inode, its owner, its mode, or another process's write.
//!
//! Two ways, chosen per target:
//!
//! - **By rename**, the default. The new contents go to a temporary file in the target's
//!   directory, which is flushed to disk and renamed over the target, so a crash leaves the
//!   old or the new file, never half of one. The temporary file has no name (`O_TMPFILE`)
//!   until it is complete: a process killed in the middle of a write leaves nothing behind,
//!   and the file gets a name only between `linkat` and `rename`. Where the file system has
//!   no `O_TMPFILE`, a named temporary file is used instead, removed on every error (though
//!   not when the process is killed). The new file gets the target's mode, owner and group;
//!   any of those that cannot be given sends the write the other way.
//! - **In place**, when a rename would change what the target is: it has other hard links
//!   (a rename would split them), its owner, group or mode cannot be given to a new file
//!   (a rename would change them), or its directory refuses the rename (not writable, or
//!   sticky). The target is overwritten through its own inode; its growth is reserved first
//!   with `fallocate`, so a full disk fails before a byte changes. The new contents are
//!   [`journal`](super::journal)ed first, so a process killed halfway leaves a write that the
//!   next tool to touch the file finishes: never a file that is neither old nor new.
//!
//! Either way, the target is first opened for writing, so the kernel's permission check of
//! the file itself decides: a file the process may not write is refused with `EACCES` even
//! when its directory would allow replacing it. A target that is not a regular file is
//! refused before anything is written.
//!
//! Given the [`Original`] that `edit` read, the target is compared with it right before the
//! commit, by identity (device and inode) and byte for byte, and the replace is refused
//! ([`ReplaceError::Changed`]) if anything differs, so another process's write is never
//! silently overwritten. A write that lands between that check and the rename, a few
//! microseconds, can still be lost: only mandatory locking would close that window.
//!
//! Not carried over by a rename: extended attributes and ACLs.

use std::fs::{self, File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags};
use nix::unistd::linkat;

use super::file::{SpecialKind, nonblocking, reserve, special_kind};
use super::journal::{self, Journal};

/// What the caller read: the replace is refused unless the target is still this.
#[derive(Debug)]
pub(crate) struct Original {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) bytes: Vec<u8>,
}

impl Original {
    /// The original of a file opened as `meta`, whose contents were `bytes`.
    pub(crate) fn new(meta: &Metadata, bytes: Vec<u8>) -> Self {
        Original {
            dev: meta.dev(),
            ino: meta.ino(),
            bytes,
        }
    }
}

/// Why a replace did not happen. On every one of them, the target is as it was.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplaceError {
    /// The target is a directory, a FIFO, a socket or a device.
    #[error("it is {}, not a regular file", .0.describe())]
    NotRegular(SpecialKind),
    /// The target is not the [`Original`] any more.
    #[error("the file changed since it was read")]
    Changed,
    /// The system call `call` (as Node's messages name it) failed.
    #[error("{call} failed: {source}")]
    Io {
        call: &'static str,
        #[source]
        source: io::Error,
    },
}

fn failed(call: &'static str) -> impl FnOnce(io::Error) -> ReplaceError {
    move |source| ReplaceError::Io { call, source }
}

/// Replace (or create) the file at `path` with `contents`; with `original`, only if the file
/// is still what was read. A symlink is followed, so the link stays a link and its target gets
/// the new contents; a new file gets `0o666` less the umask. Runs on the blocking pool.
pub(crate) async fn replace(
    path: &Path,
    contents: Vec<u8>,
    original: Option<Original>,
) -> Result<(), ReplaceError> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || replace_blocking(&path, &contents, original.as_ref()))
        .await
        .map_err(|error| failed("write")(io::Error::other(error)))?
}

fn replace_blocking(
    path: &Path,
    contents: &[u8],
    original: Option<&Original>,
) -> Result<(), ReplaceError> {
    let target = real_target(path).map_err(failed("open"))?;
    // A write in place that a killed process left half done is finished before anything
    // else; if that fails, the write below replaces the file whole anyway.
    let _ = journal::recover(&target);
    let Some(existing) = Existing::open(&target)? else {
        if original.is_some() {
            // Deleted since it was read.
            return Err(ReplaceError::Changed);
        }
        return by_rename(&target, contents, None, None).map_err(RenameError::into_error);
    };
    if existing.meta.nlink() > 1 {
        return in_place(&existing, &target, contents, original);
    }
    match by_rename(&target, contents, Some(&existing.meta), original) {
        Ok(()) => Ok(()),
        Err(RenameError::Failed(error)) => Err(error),
        Err(RenameError::InPlace(_)) => in_place(&existing, &target, contents, original),
    }
}

/// The target as it is now, opened for writing (which is the permission check).
struct Existing {
    file: File,
    meta: Metadata,
}

impl Existing {
    /// `None` when there is no file yet.
    fn open(target: &Path) -> Result<Option<Existing>, ReplaceError> {
        // Looked at before opening: opening a FIFO without a reader, or a socket, fails
        // with a code (ENXIO) that would hide what it is.
        if let Some(kind) = fs::metadata(target).ok().as_ref().and_then(special_kind) {
            return Err(ReplaceError::NotRegular(kind));
        }
        let file = match nonblocking(OpenOptions::new().write(true)).open(target) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(failed("open")(error)),
        };
        let meta = file.metadata().map_err(failed("open"))?;
        // It may have been swapped between the look and the open.
        if let Some(kind) = special_kind(&meta) {
            return Err(ReplaceError::NotRegular(kind));
        }
        Ok(Some(Existing { file, meta }))
    }
}

/// How a replace by rename stopped.
enum RenameError {
    /// It cannot keep what the target is; overwrite the target in place instead.
    InPlace(io::Error),
    Failed(ReplaceError),
}

impl RenameError {
    /// For a new file, where there is no target to overwrite in place.
    fn into_error(self) -> ReplaceError {
        match self {
            RenameError::InPlace(source) => failed("open")(source),
            RenameError::Failed(error) => error,
        }
    }
}

/// A permission error on the directory means the rename way is closed, not the write.
fn in_place_if_denied(call: &'static str) -> impl FnOnce(io::Error) -> RenameError {
    move |error| match error.kind() {
        io::ErrorKind::PermissionDenied => RenameError::InPlace(error),
        _ if error.raw_os_error() == Some(Errno::EPERM as i32) => RenameError::InPlace(error),
        _ => RenameError::Failed(failed(call)(error)),
    }
}

fn by_rename(
    target: &Path,
    contents: &[u8],
    existing: Option<&Metadata>,
    original: Option<&Original>,
) -> Result<(), RenameError> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = Temp::create(dir, target).map_err(in_place_if_denied("open"))?;
    if let Some(meta) = existing {
        take_owner_and_mode(temp.file(), meta).map_err(RenameError::InPlace)?;
    }
    write_synced(temp.file(), contents)
        .map_err(|error| RenameError::Failed(failed("write")(error)))?;
    if let Some(original) = original {
        check_unchanged(target, original).map_err(RenameError::Failed)?;
    }
    temp.commit(target).map_err(in_place_if_denied("rename"))?;
    // The rename is durable once the directory is; a failure here loses nothing.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Give the new file the target's owner, group and mode, or fail if one of them does not
/// stick (only root may give a file away; a setgid bit of a group we are not in is dropped).
fn take_owner_and_mode(file: &File, target: &Metadata) -> io::Result<()> {
    let own = file.metadata()?;
    if (own.uid(), own.gid()) != (target.uid(), target.gid()) {
        std::os::unix::fs::fchown(file, Some(target.uid()), Some(target.gid()))?;
    }
    // After the chown, which clears the setuid and setgid bits.
    let mode = target.mode() & 0o7777;
    file.set_permissions(Permissions::from_mode(mode))?;
    if file.metadata()?.mode() & 0o7777 != mode {
        return Err(io::Error::other("the mode did not stick"));
    }
    Ok(())
}

fn write_synced(mut file: &File, contents: &[u8]) -> io::Result<()> {
    file.write_all(contents)?;
    file.sync_all()
}

/// Overwrite the target through its own inode.
fn in_place(
    existing: &Existing,
    target: &Path,
    contents: &[u8],
    original: Option<&Original>,
) -> Result<(), ReplaceError> {
    if let Some(original) = original {
        check_unchanged(target, original)?;
    }
    let new_len = contents.len() as u64;
    let old_len = existing.meta.len();
    let journal = Journal::begin(target, &existing.meta, contents).map_err(failed("write"))?;
    if new_len > old_len
        && let Err(error) = reserve(&existing.file, old_len, new_len - old_len)
    {
        // Nothing changed yet: the failed write must not be finished later.
        journal.end();
        return Err(failed("write")(error));
    }
    // From here a failure leaves the journal, so the next tool finishes the write rather
    // than leave the file half written.
    let mut file = &existing.file;
    file.seek(SeekFrom::Start(0)).map_err(failed("write"))?;
    file.write_all(contents).map_err(failed("write"))?;
    file.set_len(new_len).map_err(failed("write"))?;
    file.sync_all().map_err(failed("write"))?;
    journal.end();
    Ok(())
}

/// `Ok` if the file at `target` is still `original`: the same inode with the same bytes.
fn check_unchanged(target: &Path, original: &Original) -> Result<(), ReplaceError> {
    let mut file = match nonblocking(OpenOptions::new().read(true)).open(target) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(ReplaceError::Changed);
        }
        Err(error) => return Err(failed("open")(error)),
    };
    let meta = file.metadata().map_err(failed("open"))?;
    if (meta.dev(), meta.ino()) != (original.dev, original.ino)
        || meta.len() != original.bytes.len() as u64
        || !meta.is_file()
    {
        return Err(ReplaceError::Changed);
    }
    if same_bytes(&mut file, &original.bytes).map_err(failed("read"))? {
        Ok(())
    } else {
        Err(ReplaceError::Changed)
    }
}

/// Whether `file` holds exactly `expected`, compared a chunk at a time.
fn same_bytes(file: &mut File, expected: &[u8]) -> io::Result<bool> {
    let mut buf = vec![0_u8; 64 * 1024];
    let mut rest = expected;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(rest.is_empty());
        }
        if n > rest.len() || buf[..n] != rest[..n] {
            return Ok(false);
        }
        rest = &rest[n..];
    }
}

/// The file the new contents are written to before the rename.
enum Temp {
    /// `O_TMPFILE`: no name until it is linked in.
    Unnamed {
        file: File,
        dir: PathBuf,
    },
    Named(tempfile::NamedTempFile),
}

impl Temp {
    /// A temporary file in `dir` for `target`: unnamed where the file system allows.
    fn create(dir: &Path, target: &Path) -> io::Result<Temp> {
        // Linking an unnamed file in goes through its /proc/self/fd entry.
        if Path::new("/proc/self/fd").is_dir() {
            let unnamed = OpenOptions::new()
                .write(true)
                // The mode goes to open(2), so the umask applies, as for any new file.
                .mode(0o666)
                .custom_flags(nix::libc::O_TMPFILE)
                .open(dir);
            match unnamed {
                Ok(file) => {
                    return Ok(Temp::Unnamed {
                        file,
                        dir: dir.to_path_buf(),
                    });
                }
                // The codes of a file system without O_TMPFILE.
                Err(error)
                    if matches!(
                        error.raw_os_error().map(Errno::from_raw),
                        Some(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL)
                    ) => {}
                Err(error) => return Err(error),
            }
        }
        let named = tempfile::Builder::new()
            .prefix(&format!(".{}.", file_name(target)))
            .suffix(".tmp")
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        Ok(Temp::Named(named))
    }

    fn file(&self) -> &File {
        match self {
            Temp::Unnamed { file, .. } => file,
            Temp::Named(named) => named.as_file(),
        }
    }

    /// Put the file in the target's place.
    fn commit(self, target: &Path) -> io::Result<()> {
        match self {
            // On failure the error carries the file, whose drop deletes it.
            Temp::Named(named) => named.persist(target).map(drop).map_err(|e| e.error),
            Temp::Unnamed { file, dir } => {
                let name = link_in(&file, &dir, target)?;
                fs::rename(&name, target).inspect_err(|_| {
                    let _ = fs::remove_file(&name);
                })
            }
        }
    }
}

/// Give an unnamed file a fresh hidden name in `dir`, and return that name.
fn link_in(file: &File, dir: &Path, target: &Path) -> io::Result<PathBuf> {
    static NAMES: AtomicU64 = AtomicU64::new(0);
    let source = format!("/proc/self/fd/{}", file.as_raw_fd());
    let base = file_name(target);
    loop {
        let n = NAMES.fetch_add(1, Ordering::Relaxed);
        let name = dir.join(format!(".{base}.{}-{n}.tmp", std::process::id()));
        match linkat(
            AT_FDCWD,
            source.as_str(),
            AT_FDCWD,
            &name,
            AtFlags::AT_SYMLINK_FOLLOW,
        ) {
            Ok(()) => return Ok(name),
            // Left by a process that had our pid before; try the next number.
            Err(Errno::EEXIST) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

fn file_name(target: &Path) -> String {
    target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy().into_owned())
}

/// The file a write to `path` should replace: the end of its symlink chain, or `path`
/// itself when it is not a symlink. A dangling link resolves to the missing target's path.
fn real_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // Bounded like the kernel's own loop limit (ELOOP after 40 links).
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(error) => return Err(error),
        }
    }
    Err(Errno::ELOOP.into())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, symlink};

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn original_of(path: &Path) -> Original {
        Original::new(&fs::metadata(path).unwrap(), fs::read(path).unwrap())
    }

    #[tokio::test]
    async fn keeps_mode_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script.sh");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, Permissions::from_mode(0o750)).unwrap();
        let link = dir.path().join("link");
        symlink("script.sh", &link).unwrap();
        replace(&link, b"new".to_vec(), None).await.unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o750);
        assert_eq!(names(dir.path()), ["link", "script.sh"]);
    }

    #[tokio::test]
    async fn a_file_that_changed_since_it_was_read_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "one\n").unwrap();
        let original = original_of(&path);
        // Same size, same inode, other bytes: only the comparison can tell.
        fs::write(&path, "two\n").unwrap();
        let error = replace(&path, b"edited\n".to_vec(), Some(original)).await;
        assert!(matches!(error, Err(ReplaceError::Changed)), "{error:?}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(names(dir.path()), ["f.txt"]);

        // Replaced by another file (a rename over it).
        let original = original_of(&path);
        fs::write(dir.path().join("other"), "two\n").unwrap();
        fs::rename(dir.path().join("other"), &path).unwrap();
        let error = replace(&path, b"edited\n".to_vec(), Some(original)).await;
        assert!(matches!(error, Err(ReplaceError::Changed)), "{error:?}");

        // Deleted.
        let original = original_of(&path);
        fs::remove_file(&path).unwrap();
        let error = replace(&path, b"edited\n".to_vec(), Some(original)).await;
        assert!(matches!(error, Err(ReplaceError::Changed)), "{error:?}");
        assert!(names(dir.path()).is_empty());
    }

    #[tokio::test]
    async fn an_unchanged_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "one\n").unwrap();
        let original = original_of(&path);
        replace(&path, b"edited\n".to_vec(), Some(original))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "edited\n");
    }

    #[tokio::test]
    async fn a_hard_linked_file_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        fs::write(&path, "a longer old text\n").unwrap();
        fs::hard_link(&path, dir.path().join("b")).unwrap();
        let inode = fs::metadata(&path).unwrap().ino();
        let original = original_of(&path);
        replace(&path, b"short\n".to_vec(), Some(original))
            .await
            .unwrap();
        assert_eq!(fs::metadata(&path).unwrap().ino(), inode);
        assert_eq!(fs::read_to_string(dir.path().join("b")).unwrap(), "short\n");
        replace(&path, b"grown to a longer text\n".to_vec(), None)
            .await
            .unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("b")).unwrap(),
            "grown to a longer text\n"
        );
        assert_eq!(names(dir.path()), ["a", "b"]);
    }

    #[tokio::test]
    async fn special_files_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let error = replace(&fifo, b"x".to_vec(), None).await;
        assert!(
            matches!(error, Err(ReplaceError::NotRegular(SpecialKind::Fifo))),
            "{error:?}"
        );
        let error = replace(dir.path(), b"x".to_vec(), None).await;
        assert!(
            matches!(error, Err(ReplaceError::NotRegular(SpecialKind::Directory))),
            "{error:?}"
        );
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["fifo"]);
    }
}
