//! The per-file mutation queue (pi's `withFileMutationQueue`): operations on one file run one
//! after another in call order, operations on different files run concurrently. It is the
//! named concurrency limits' machinery ([`Semaphores`]) with one permit per file, plus the
//! ordering of calls across the asynchronous resolution of their paths.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::task::Poll;

use tokio::sync::{Mutex, OwnedSemaphorePermit};

use crate::tool::limits::Semaphores;

/// Serialises the operations that modify one file.
///
/// Each file is keyed by its real path (symlinks resolved), so a symlink and its target share
/// one queue; a path that does not exist yet is keyed by its absolute form. Operations on one
/// key run one at a time in the order the calls were made (keys are resolved and places
/// reserved under one registration lock, a global FIFO), a failed operation releases its place
/// like a successful one, and a key is forgotten when its last operation finishes. Each key is
/// a limit of one permit, as a tool's `concurrency = "name:1"` is (see
/// [`ConcurrencyLimits`](crate::tool::ConcurrencyLimits)), keyed by the file instead of a
/// name.
///
/// Built-in `edit` and `write` use [`FileMutationQueue::global`]; any tool that rewrites files
/// should do the same so that parallel calls on one file never lose an update.
///
/// ```
/// use pi_runtime::tools::FileMutationQueue;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("notes.txt");
/// FileMutationQueue::global()
///     .run(&path, async { std::fs::write(&path, "hello\n") })
///     .await??;
/// assert_eq!(std::fs::read_to_string(&path)?, "hello\n");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct FileMutationQueue {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Held while a key is resolved and its place reserved, so that places are taken in call
    /// order even though resolving is asynchronous. tokio's mutex is fair (FIFO).
    registration: Mutex<()>,
    /// One permit per key; a key lives while an operation holds or awaits its permit.
    files: Semaphores<PathBuf>,
}

/// A held place in a [`FileMutationQueue`]: the file is this operation's until the guard is
/// dropped.
#[derive(Debug)]
pub struct FileMutationGuard {
    queue: Arc<Inner>,
    key: PathBuf,
    permit: Option<OwnedSemaphorePermit>,
}

impl FileMutationQueue {
    /// A queue of its own, independent of [`global`](Self::global) (for tests and for tools
    /// that own a private set of files).
    pub fn new() -> Self {
        FileMutationQueue::default()
    }

    /// The process-wide queue the built-in tools share.
    pub fn global() -> &'static FileMutationQueue {
        static GLOBAL: LazyLock<FileMutationQueue> = LazyLock::new(FileMutationQueue::new);
        &GLOBAL
    }

    /// Wait for this file's turn and hold it until the returned guard is dropped.
    ///
    /// `path` should be absolute; a relative path is taken against the process's current
    /// directory.
    ///
    /// # Errors
    /// Resolving the real path failed for a reason other than a missing file or parent
    /// (`ENOENT`, `ENOTDIR`), for example `EACCES` or a symlink loop.
    pub async fn lock(&self, path: impl AsRef<Path>) -> io::Result<FileMutationGuard> {
        let registration = self.inner.registration.lock().await;
        let key = queue_key(path.as_ref()).await?;
        let (_, file) = self.inner.files.get(&key, 1);
        // Declared before `acquire` so that it drops after it: a call cancelled while waiting
        // must give up its reference before the guard checks whether the key is still used.
        let mut guard = FileMutationGuard {
            queue: Arc::clone(&self.inner),
            key,
            permit: None,
        };
        let mut acquire = Box::pin(file.acquire_owned());
        // The first poll enqueues this call in the file's FIFO while the registration lock
        // still orders it behind every earlier call.
        let first = futures::poll!(acquire.as_mut());
        drop(registration);
        let permit = match first {
            Poll::Ready(permit) => permit,
            Poll::Pending => acquire.await,
        };
        // The queue never closes a file's semaphore.
        guard.permit = Some(permit.map_err(io::Error::other)?);
        Ok(guard)
    }

    /// Run `operation` in this file's turn, as pi's `withFileMutationQueue` does. The place is
    /// released when the operation settles, whatever its result.
    ///
    /// # Errors
    /// Resolving the key failed (see [`lock`](Self::lock)); `operation` did not run.
    pub async fn run<F: Future>(
        &self,
        path: impl AsRef<Path>,
        operation: F,
    ) -> io::Result<F::Output> {
        let _guard = self.lock(path).await?;
        Ok(operation.await)
    }

    /// The number of files with an operation running or waiting (for tests and metrics).
    pub fn active_files(&self) -> usize {
        self.inner.files.len()
    }
}

impl Drop for FileMutationGuard {
    fn drop(&mut self) {
        // Release first, so that only other holders and waiters keep the key.
        drop(self.permit.take());
        self.queue.files.forget_if_idle(self.key.as_path());
    }
}

/// The real path of `path` (made absolute), or the absolute path when it does not exist.
async fn queue_key(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    match tokio::fs::canonicalize(&absolute).await {
        Ok(real) => Ok(real),
        Err(error) if is_missing(&error) => Ok(absolute),
        Err(error) => Err(error),
    }
}

fn is_missing(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound
        || error.kind() == io::ErrorKind::NotADirectory
        || error.raw_os_error() == Some(nix::errno::Errno::ENOTDIR as i32)
}
