//! Directories of this user under the temp directory that nobody else may enter: where
//! `bash` keeps its logs and in-place writes keep their journals.
//!
//! A directory is created `0700`; one that is not a directory of ours with that mode (a
//! symlink, or another user's) is never used, and a private directory of this process takes
//! its place.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// `<temp dir>/<prefix><euid>`: the shared directory of this user for one purpose.
pub(crate) fn shared_path(prefix: &str) -> PathBuf {
    let euid = nix::unistd::geteuid();
    std::env::temp_dir().join(format!("{prefix}{euid}"))
}

/// The directory to write in: `path`, created if needed, or the private fallback.
pub(crate) fn ensure(path: &Path) -> io::Result<PathBuf> {
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    if is_private_dir(path)? {
        return Ok(path.to_path_buf());
    }
    private_fallback()
}

/// Whether `path` itself (not a symlink to it) is a directory owned by us that nobody else
/// may enter.
pub(crate) fn is_private_dir(path: &Path) -> io::Result<bool> {
    let meta = fs::symlink_metadata(path)?;
    Ok(meta.is_dir()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.permissions().mode() & 0o077 == 0)
}

/// A fresh `0700` directory of this process, for when a shared one is not safe; made again
/// if it disappeared (a temp cleaner may remove it).
fn private_fallback() -> io::Result<PathBuf> {
    static FALLBACK: Mutex<Option<PathBuf>> = Mutex::new(None);
    // The slot holds no invariant a panic could break; keep using it.
    let mut slot = FALLBACK.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = slot
        .as_ref()
        .filter(|path| is_private_dir(path).unwrap_or(false))
    {
        return Ok(path.clone());
    }
    let dir = tempfile::Builder::new()
        .prefix("pi-private-")
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir()?
        .keep();
    *slot = Some(dir.clone());
    Ok(dir)
}
