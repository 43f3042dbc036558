//! The built-in `write` tool (SPEC §9.4): create or replace a file, creating its parent
//! directories, inside the file's mutation queue.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::atomic::write_atomic;
use super::{ABORTED, FileMutationQueue, parse_args, path::resolve_to_cwd, prefer_strict};
use crate::tool::{AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult};

const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.";
const SNIPPET: &str = "Create or overwrite files";
const GUIDELINE: &str = "Use write only for new files or complete rewrites.";

/// The arguments of `write`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WriteArgs {
    /// Path to the file to write (relative or absolute).
    pub path: String,
    /// Content to write to the file.
    pub content: String,
}

/// The `write` tool, writing relative paths against its working directory.
#[derive(Debug, Clone)]
pub struct WriteTool {
    cwd: PathBuf,
    definition: Tool,
}

impl WriteTool {
    /// A `write` tool for files under (or relative to) `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let parameters = json!({
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                "content": {"type": "string", "description": "Content to write to the file"}
            }
        });
        WriteTool {
            cwd: cwd.into(),
            definition: prefer_strict(Tool::new("write", DESCRIPTION, parameters)),
        }
    }
}

impl AgentTool for WriteTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn execute(
        &self,
        _call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let args: WriteArgs = parse_args(params)?;
            write(&self.cwd, &args, ctx.signal())
                .await
                .map(ToolResult::text)
        })
    }
}

impl ToolDefinition for WriteTool {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        Some(SNIPPET.into())
    }

    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        vec![GUIDELINE.into()]
    }
}

/// Run `write`: `Successfully wrote to <path>` (the path as the model gave it).
///
/// The signal is checked after each file-system step, never in the middle of one, so the
/// file's queue slot is held until the step in flight has settled (SPEC §9.1).
///
/// # Errors
/// The directory or the file could not be written, or the run was aborted
/// (`Operation aborted`).
///
/// ```
/// use pi_runtime::tools::{WriteArgs, write};
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let args = WriteArgs { path: "new/dir/a.txt".into(), content: "hi\n".into() };
/// let text = write(dir.path(), &args, &CancellationToken::new()).await.unwrap();
/// assert_eq!(text, "Successfully wrote to new/dir/a.txt");
/// assert_eq!(std::fs::read_to_string(dir.path().join("new/dir/a.txt")).unwrap(), "hi\n");
/// # });
/// ```
pub async fn write(
    cwd: &Path,
    args: &WriteArgs,
    signal: &CancellationToken,
) -> Result<String, ToolError> {
    let absolute = resolve_to_cwd(&args.path, cwd);
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
        tokio::fs::create_dir_all(dir).await?;
    }
    check()?;
    write_atomic(&absolute, args.content.as_bytes().to_vec()).await?;
    check()?;
    Ok(format!("Successfully wrote to {}", args.path))
}
