//! The built-in `write` tool: create or replace a file, creating its parent
//! directories, inside the file's mutation queue.

use std::path::Path;

use super::file::node_message;
use super::replace::{ReplaceError, replace};
use super::{ABORTED, FileMutationQueue, WorkingDir, path::resolve_to_cwd};
use crate::tool;
use crate::tool::{State, ToolContext, ToolError};

/// Create or replace a file, creating its parent directories: the `write` tool. Returns
/// `Successfully wrote to <path>` (the path as the model gave it).
///
/// Runs inside the file's [`FileMutationQueue`] slot. The signal is checked after each
/// file-system step, never in the middle of one, so the slot is held until the step in flight
/// has settled.
///
/// An existing file keeps its inode when it has other hard links, and its owner, group and
/// mode always; a file the process may not write is refused, as `open(2)` would refuse it,
/// even when its directory would allow replacing it. Otherwise the new contents are written
/// to a temporary file and renamed over the old one, so a crash or a failed write leaves the
/// old file whole and no temporary file behind.
///
/// # Errors
/// The directory or the file could not be written (Node's wording: `EACCES: permission
/// denied, open '<absolute path>'`), the target is not a regular file (`Cannot write <path>:
/// it is a named pipe (FIFO), not a regular file.`), or the run was aborted (`Operation
/// aborted`).
///
/// ```
/// use pi_runtime::tools::{WorkingDir, write};
/// use pi_runtime::{State, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let cwd = State(WorkingDir::from(dir.path()));
/// let ctx = ToolContext::detached("c1");
/// let text = write(cwd, "new/dir/a.txt".into(), "hi\n".into(), ctx).await.unwrap();
/// assert_eq!(text, "Successfully wrote to new/dir/a.txt");
/// assert_eq!(std::fs::read_to_string(dir.path().join("new/dir/a.txt")).unwrap(), "hi\n");
/// # });
/// ```
#[tool(
    description = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
    snippet = "Create or overwrite files",
    guidelines = ["Use write only for new files or complete rewrites."],
    strict = "prefer",
    closed = false
)]
pub async fn write(
    State(cwd): State<WorkingDir>,
    /// Path to the file to write (relative or absolute)
    path: String,
    /// Content to write to the file
    content: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let signal = ctx.signal();
    let absolute = resolve_to_cwd(&path, &cwd);
    let _turn = FileMutationQueue::global().lock(&absolute).await?;
    let check = || {
        if signal.is_cancelled() {
            Err(ToolError::new(ABORTED))
        } else {
            Ok(())
        }
    };
    check()?;
    if let Some(dir) = absolute.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|error| ToolError::new(node_message(&error, "mkdir", dir)))?;
    }
    check()?;
    replace(&absolute, content.into_bytes(), None)
        .await
        .map_err(|error| write_error(&error, &path, &absolute))?;
    check()?;
    Ok(format!("Successfully wrote to {path}"))
}

fn write_error(error: &ReplaceError, path: &str, absolute: &Path) -> ToolError {
    ToolError::new(match error {
        ReplaceError::NotRegular(kind) => format!(
            "Cannot write {path}: it is {}, not a regular file.",
            kind.describe()
        ),
        ReplaceError::Io { call, source } => node_message(source, call, absolute),
        // `write` gives no original to compare with.
        ReplaceError::Changed => format!("Cannot write {path}: {error}."),
    })
}
