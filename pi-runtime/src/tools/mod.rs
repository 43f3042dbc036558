//! Built-in coding tools (read, write, edit, bash) and the per-file mutation queue (SPEC §9).
//!
//! Each tool is a plain async function holding its logic ([`read()`], [`write()`], [`edit()`],
//! [`bash()`]) plus a type that implements [`AgentTool`](crate::AgentTool) and
//! [`ToolDefinition`](crate::ToolDefinition) with pi's exact schema, description, prompt
//! snippet and guidelines, constructed with the working directory relative paths resolve
//! against:
//!
//! ```
//! use std::sync::Arc;
//! use pi_runtime::ToolDefinition;
//! use pi_runtime::tools::{BashTool, EditTool, ReadTool, WriteTool};
//!
//! let cwd = std::env::temp_dir();
//! let tools: Vec<Arc<dyn ToolDefinition>> = vec![
//!     Arc::new(ReadTool::new(&cwd)),
//!     Arc::new(BashTool::new(&cwd)),
//!     Arc::new(EditTool::new(&cwd)),
//!     Arc::new(WriteTool::new(&cwd)),
//! ];
//! let prompt = pi_runtime::prompt::tool_section(&tools, &[]);
//! assert!(prompt.contains("- edit: Edit files via targeted text replacements"));
//! ```
//!
//! `edit` and `write` run their read-modify-write inside the [`FileMutationQueue`], so
//! parallel calls on one file apply one after another, and write atomically (a temporary
//! file in the same directory, then a rename).

mod atomic;
mod bash;
mod edit;
mod mutation_queue;
mod path;
mod read;
pub mod truncate;
mod write;

pub use bash::{BashArgs, BashTool, bash};
pub use edit::{EditArgs, EditTool, Replacement, edit, prepare_edit_arguments};
pub use mutation_queue::{FileMutationGuard, FileMutationQueue};
pub use path::resolve_to_cwd;
pub use read::{ReadArgs, ReadTool, read};
pub use write::{WriteArgs, WriteTool, write};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{ConstrainedSampling, Strictness, Tool, ToolError};

/// The failure text of a tool stopped by the run's cancellation signal.
pub(crate) const ABORTED: &str = "Operation aborted";

/// pi sends every built-in tool with `constrainedSampling: {type: json_schema, strict: prefer}`.
fn prefer_strict(tool: Tool) -> Tool {
    tool.with_constrained_sampling(ConstrainedSampling::JsonSchema {
        strict: Strictness::Prefer,
    })
}

/// Validated arguments into the tool's typed arguments. Fails only when a hook changed the
/// arguments after validation.
fn parse_args<T: DeserializeOwned>(params: Value) -> Result<T, ToolError> {
    serde_json::from_value(params)
        .map_err(|error| ToolError::new(format!("Invalid arguments: {error}")))
}
