//! The three tool layers of SPEC §1: [`Tool`] (what the provider sees), [`AgentTool`] (adds
//! execution) and [`ToolDefinition`] (adds prompt metadata), plus results, errors, the
//! execution context, run-time tools and the registry.

mod context;
mod definition;
mod dynamic;
mod layers;
mod params;
mod registry;
mod result;

pub use context::ToolContext;
pub use definition::{ConstrainedSampling, GrammarVariants, Strictness, Tool};
pub use dynamic::FnTool;
pub use layers::{AgentTool, ExecutionMode, ToolDefinition};
pub use params::{Args, State};
pub use registry::{RegistryError, ToolRegistry, ToolSet};
pub use result::{IntoToolError, IntoToolResult, Json, ToolError, ToolErrorKind, ToolResult};
