//! The tool layers, plus results, errors, the execution context, run-time tools and the
//! registry. Each layer adds one thing to the one before:
//!
//! - [`Tool`] (struct): what a model request declares: name, description, JSON Schema.
//! - [`AgentTool`] (trait): a `Tool` that executes.
//! - [`ToolDefinition`] (trait): an `AgentTool` with what the agent needs around it (prompt
//!   snippet and guidelines, output schema, and its [`ToolSettings`]: exposure, approval,
//!   hints, execution policy, context type). `#[tool]` generates one; [`FnTool`] is one made
//!   at run time.
//! - [`ToolSet`] (trait): anything that registers as tools in one call, as
//!   [`Registration`]s (a tool with the settings its registry entry gets); [`ContextTools`]
//!   (trait): `#[tool]` types whose context type is checked at compile time.
//! - [`FromToolContext`] (trait): a `#[tool]` fn's parameter built from the call rather than
//!   sent by the model (an extractor): [`ToolContext`], [`Ctx`], or a type of yours.
//! - [`ToolRegistry`] (struct): registered tools by name, with the active subset.

mod approval;
pub(crate) mod context;
mod dynamic;
mod exposure;
mod extract;
mod hints;
mod layers;
pub(crate) mod limits;
pub(crate) mod output;
mod params;
mod policy;
mod registry;
mod result;
mod run_context;
mod settings;
mod switch;
mod toolset;

pub use crate::declaration::{ConstrainedSampling, GrammarVariants, Strictness, Tool};
pub use approval::{Approval, ApprovalPolicy};
pub use context::ToolContext;
pub use dynamic::FnTool;
pub use exposure::Exposure;
pub use extract::{ContextRejection, FromToolContext};
pub use hints::ToolHints;
pub use layers::{AgentTool, ExecutionMode, RegisteredTools, RequestLoadout, ToolDefinition};
pub use limits::{ConcurrencyConflict, ConcurrencyLimits};
pub use output::{OutputSaver, TempFileSaver};
pub use params::{Args, Ctx, State};
pub use policy::{Concurrency, ToolPolicy};
pub use registry::{RegistryError, ToolRegistry};
pub use result::{
    IntoToolError, IntoToolResult, Json, JsonOutput, ToolError, ToolErrorKind, ToolResult,
};
pub use run_context::{ContextType, RunContext};
pub use settings::ToolSettings;
pub use switch::ConversationTools;
pub(crate) use switch::ToolSwitch;
pub use toolset::{ContextTools, Exposed, Registration, ToolSet, ToolSetExt};
