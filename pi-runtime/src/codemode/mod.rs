//! Code mode (pi 1.6's `codemode` tool): the model writes one JavaScript program that calls
//! many tools, and only what the program returns reaches the model's context.
//!
//! - [`CodemodeTool`]: the tool itself. Each script runs in a fresh QuickJS VM (through
//!   `rquickjs`) on its own thread: frozen built-ins, no modules, timers, file system or
//!   network, a 256 MiB heap, a time limit of 60 s unless the script or the tool sets another. Every `tools.x(args)` call runs through the agent's own tool
//!   pipeline ([`ToolContext::call_tool`](crate::ToolContext::call_tool)).
//! - [`Sandbox`]: the same VM on its own, with tools that are plain async functions and an
//!   interrupt budget (pi-codemode's `InlineCodemodeSandbox`).

mod declarations;
mod heap;
mod identifier;
mod loadout;
mod output;
mod runtime;
mod sandbox;
mod source;
mod tool;
mod vm;

pub use loadout::{
    CODEMODE_TOOL_NAME, CodemodeMode, CodemodeSettings, DEFAULT_INLINE_BUDGET, Namespace,
    PROMPT_GUIDELINE, PROMPT_SNIPPET, base_description,
};
pub use output::{OutputFiles, TempOutputFiles};
pub use runtime::{CallRecord, CallStatus, ErrorKind, ScriptError};
pub use sandbox::{DEFAULT_INTERRUPT_BUDGET, Sandbox, SandboxOutput, SandboxResult};
pub use source::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
pub use tool::{CodemodeStore, CodemodeTool, StoreEntry};

/// The pieces only the conformance runner calls, each compared with pi's own: the
/// declaration renderers, the loadout hook and the source parser. Public at
/// [`pi_runtime::__conformance`](crate::__conformance), not in the user API.
pub(crate) mod conformance {
    pub use super::declarations::{
        Declaration, Global, INPUT_SCHEMA_MAX_CHARS, render_declarations, render_tool_sample,
        render_tool_signature, resolve_schema_ref, schema_to_type,
    };
    pub use super::identifier::to_codemode_identifier;
    pub use super::loadout::{
        Loadout, LoadoutTool, codemode_declaration, is_callable, prepare_loadout,
    };
    pub use super::source::{
        CodemodeSource, OPTIONS_PREFIX, SOURCE_GRAMMAR, SourceError, SourceOptions,
        parse_codemode_source,
    };
}
