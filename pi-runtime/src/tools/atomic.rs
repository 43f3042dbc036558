//! Replace a file's contents so that a crash leaves either the old or the new file, never a
//! half-written one: write a temporary file next to it, flush it to disk, rename it over.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Atomically replace (or create) the file at `path` with `contents`.
///
/// A symlink is followed, so the link stays a link and its target gets the new contents. An
/// existing file keeps its permission bits; a new one gets `0o666` less the umask, as a plain
/// `open(O_CREAT)` would. Runs on the blocking pool.
pub(crate) async fn write_atomic(path: &Path, contents: Vec<u8>) -> io::Result<()> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || write_atomic_blocking(&path, &contents))
        .await
        .map_err(io::Error::other)?
}

fn write_atomic_blocking(path: &Path, contents: &[u8]) -> io::Result<()> {
    let target = real_target(path)?;
    let existing = fs::metadata(&target).ok().map(|meta| meta.permissions());
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        // The mode goes to open(2), so the umask applies, as for any newly created file.
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    if let Some(permissions) = existing {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.write_all(contents)?;
    temp.as_file().sync_all()?;
    temp.persist(&target).map_err(|error| error.error)?;
    Ok(())
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
    Err(io::Error::other("too many levels of symbolic links"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_mode_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script.sh");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, Permissions::from_mode(0o750)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("script.sh", &link).unwrap();
        write_atomic(&link, b"new".to_vec()).await.unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o750
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 2, "no temporary file is left behind");
    }
}
