//! Where the full output of a truncated command is kept, and for how long: bounded retention
//! in one directory per user.
//!
//! The model is told the log's path and may read it in later turns, so a log must outlive
//! its call; a directory removed when the process exits would also need an exit hook, which
//! Rust does not run for statics. So logs live in `<temp dir>/pi-bash-logs-<uid>/`, and each
//! new log prunes that directory, oldest first, down to [`MAX_LOGS`] files and
//! [`MAX_TOTAL_BYTES`] bytes. The new log itself is never pruned, so the disk used is at most
//! the larger of that budget and the newest log.
//!
//! The directory is one of [`private_dir`]'s: `0700` and ours, or not used.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::tools::private_dir;

/// At most this many logs are kept.
pub(crate) const MAX_LOGS: usize = 50;
/// At most this many bytes of logs are kept (the newest log aside).
pub(crate) const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

const PREFIX: &str = "pi-bash-";
const SUFFIX: &str = ".log";

/// A directory of logs and its retention limits.
#[derive(Debug, Clone)]
pub(crate) struct LogDir {
    path: PathBuf,
    max_logs: usize,
    max_bytes: u64,
}

impl Default for LogDir {
    fn default() -> Self {
        LogDir::shared()
    }
}

impl LogDir {
    /// The directory the `bash` tool writes to.
    pub(crate) fn shared() -> LogDir {
        LogDir {
            path: private_dir::shared_path("pi-bash-logs-"),
            max_logs: MAX_LOGS,
            max_bytes: MAX_TOTAL_BYTES,
        }
    }

    #[cfg(test)]
    fn with_limits(path: &Path, max_logs: usize, max_bytes: u64) -> LogDir {
        LogDir {
            path: path.to_path_buf(),
            max_logs,
            max_bytes,
        }
    }

    /// A new, empty log file (`pi-bash-<random>.log`), after pruning the older ones.
    pub(crate) fn create(&self) -> io::Result<(File, PathBuf)> {
        let dir = self.ensure()?;
        let (file, path) = tempfile::Builder::new()
            .prefix(PREFIX)
            .suffix(SUFFIX)
            .tempfile_in(&dir)?
            .keep()
            .map_err(|error| error.error)?;
        prune(&dir, &path, self.max_logs, self.max_bytes);
        Ok((file, path))
    }

    /// The directory to write in: ours, created if needed, or the private fallback.
    fn ensure(&self) -> io::Result<PathBuf> {
        private_dir::ensure(&self.path)
    }
}

/// Delete the oldest logs in `dir` until at most `max_logs` are left and they hold at most
/// `max_bytes`, never deleting `keep`. Errors are ignored: another process may be pruning
/// the same directory, and a log left over is tried again next time.
fn prune(dir: &Path, keep: &Path, max_logs: usize, max_bytes: u64) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<(SystemTime, u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with(PREFIX) && name.ends_with(SUFFIX)
        })
        .filter(|entry| entry.path() != keep)
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            let modified = meta.modified().ok()?;
            meta.is_file().then(|| (modified, meta.len(), entry.path()))
        })
        .collect();
    // Newest first; `keep` counts as one of the kept logs.
    logs.sort_by_key(|log| std::cmp::Reverse(log.0));
    let mut kept = 1;
    let mut bytes = 0_u64;
    for (_, len, path) in logs {
        if kept < max_logs && bytes + len <= max_bytes {
            kept += 1;
            bytes += len;
        } else {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::time::Duration;

    use super::*;
    use crate::tools::private_dir::is_private_dir;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A log of `len` bytes, `age` seconds old.
    fn old_log(dir: &Path, name: &str, len: usize, age: u64) {
        let path = dir.join(format!("{PREFIX}{name}{SUFFIX}"));
        fs::write(&path, vec![b'x'; len]).unwrap();
        let when = SystemTime::now() - Duration::from_secs(age);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn a_new_log_prunes_the_oldest_by_count() {
        let temp = tempfile::tempdir().unwrap();
        let logs = LogDir::with_limits(&temp.path().join("logs"), 3, u64::MAX);
        let (_, first) = logs.create().unwrap();
        let dir = first.parent().unwrap().to_path_buf();
        fs::remove_file(first).unwrap();
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            old_log(&dir, name, 10, 100 - i as u64);
        }
        fs::write(dir.join("unrelated.txt"), "kept").unwrap();
        let (_, new) = logs.create().unwrap();
        let new_name = new.file_name().unwrap().to_string_lossy().into_owned();
        let mut expected = vec![
            format!("{PREFIX}c{SUFFIX}"),
            format!("{PREFIX}d{SUFFIX}"),
            new_name,
            "unrelated.txt".to_owned(),
        ];
        expected.sort();
        assert_eq!(names(&dir), expected);
    }

    #[test]
    fn a_new_log_prunes_the_oldest_by_size() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("logs");
        let logs = LogDir::with_limits(&dir, 100, 1000);
        fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        old_log(&dir, "old", 600, 30);
        old_log(&dir, "mid", 600, 20);
        old_log(&dir, "new", 300, 10);
        let (_, created) = logs.create().unwrap();
        let created = created.file_name().unwrap().to_string_lossy().into_owned();
        let mut expected = vec![
            format!("{PREFIX}mid{SUFFIX}"),
            format!("{PREFIX}new{SUFFIX}"),
            created,
        ];
        expected.sort();
        assert_eq!(names(&dir), expected);
    }

    #[test]
    fn a_directory_that_is_not_private_is_not_used() {
        let temp = tempfile::tempdir().unwrap();
        let shared = temp.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let logs = LogDir::with_limits(&shared, 10, u64::MAX);
        let (_, path) = logs.create().unwrap();
        assert_ne!(path.parent(), Some(shared.as_path()));
        let fallback = path.parent().unwrap();
        assert!(is_private_dir(fallback).unwrap());
        fs::remove_file(&path).unwrap();
        fs::remove_dir(fallback).unwrap();
    }
}
