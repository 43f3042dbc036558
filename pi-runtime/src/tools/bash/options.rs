//! The `bash` tool's state: the directory commands run in, and how much of one command's
//! output its log keeps.

use std::path::{Path, PathBuf};

use crate::tools::WorkingDir;

/// What the [`Bash`](super::Bash) tool holds: the [`WorkingDir`] commands run in, and the
/// cap on one command's output log.
///
/// Converts from anything a [`WorkingDir`] does, with the default cap.
///
/// ```
/// use pi_runtime::tools::{Bash, BashOptions, WorkingDir};
///
/// let bash = Bash::new(WorkingDir::from("/work").into());
/// let options = BashOptions::new("/work").with_max_log_bytes(16 << 20);
/// assert_eq!(options.max_log_bytes(), 16 << 20);
/// let capped = Bash::new(options);
/// # let _ = (bash, capped);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BashOptions {
    cwd: WorkingDir,
    max_log_bytes: u64,
}

impl BashOptions {
    /// The most raw output one command's log keeps unless told otherwise: 64 MiB.
    pub const DEFAULT_MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;
    /// The least a log may be capped to, 4 MiB: `structuredContent.output` shows up to 1 MiB
    /// of the output's start and end, read back from the log's halves.
    pub const MIN_LOG_BYTES: u64 = 4 * 1024 * 1024;

    /// Commands run in `cwd`; logs are capped at [`DEFAULT_MAX_LOG_BYTES`](Self::DEFAULT_MAX_LOG_BYTES).
    pub fn new(cwd: impl Into<WorkingDir>) -> Self {
        BashOptions {
            cwd: cwd.into(),
            max_log_bytes: Self::DEFAULT_MAX_LOG_BYTES,
        }
    }

    /// Keep at most `bytes` of one command's raw output in its log (at least
    /// [`MIN_LOG_BYTES`](Self::MIN_LOG_BYTES)): a longer output keeps its first and last `bytes / 2`, with a line
    /// between them saying how much was left out.
    #[must_use]
    pub fn with_max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = bytes.max(Self::MIN_LOG_BYTES);
        self
    }

    /// The directory commands run in.
    pub fn cwd(&self) -> &WorkingDir {
        &self.cwd
    }

    /// The cap on one command's log.
    pub fn max_log_bytes(&self) -> u64 {
        self.max_log_bytes
    }
}

impl From<WorkingDir> for BashOptions {
    fn from(cwd: WorkingDir) -> Self {
        BashOptions::new(cwd)
    }
}

impl From<&Path> for BashOptions {
    fn from(cwd: &Path) -> Self {
        BashOptions::new(cwd)
    }
}

impl From<PathBuf> for BashOptions {
    fn from(cwd: PathBuf) -> Self {
        BashOptions::new(cwd)
    }
}

impl From<&PathBuf> for BashOptions {
    fn from(cwd: &PathBuf) -> Self {
        BashOptions::new(cwd)
    }
}

impl From<&str> for BashOptions {
    fn from(cwd: &str) -> Self {
        BashOptions::new(cwd)
    }
}
