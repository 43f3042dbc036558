//! Give an LLM agent tools.
//!
//! Write an ordinary `async fn`, put `#[tool]` on it, register it with one builder call;
//! the runtime does the rest: the JSON Schema the model sees, argument coercion and
//! validation with errors the model can correct itself from, hooks, parallel execution,
//! streaming, and the wire formats of the big providers.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod agent;
pub mod args;
pub mod json;
pub mod message;
pub mod prompt;
pub mod provider;
pub mod stream;
pub mod tool;
pub mod tools;

pub use message::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
pub use stream::{AssistantMessageEvent, Context, LanguageModel, StreamOptions, ThinkingLevel};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    AgentTool, Args, ConstrainedSampling, ExecutionMode, FnTool, IntoToolResult, Json, State,
    Strictness, Tool, ToolContext, ToolDefinition, ToolError, ToolRegistry, ToolResult, ToolSet,
};

// Lets code inside this crate (the built-in tools, doc tests) use `#[tool]`, whose
// expansion names `::pi_runtime`.
#[allow(
    unused_extern_crates,
    reason = "used by macro expansions, which the lint does not see"
)]
extern crate self as pi_runtime;

pub use pi_macros::{tool, tool_args};

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;
