//! The common path in one import: `use pi_runtime::prelude::*;`.
//!
//! What most programs name: the macros, the agent and its definition, how a run ends, hooks,
//! tool results and errors, what a running tool receives (its context and the extractors),
//! and messages. Everything else stays in its module ([`agent`](crate::agent),
//! [`tool`](mod@crate::tool), [`provider`](crate::provider), ...).
//!
//! ```
//! use pi_runtime::prelude::*;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use serde_json::json;
//!
//! /// Add two numbers.
//! #[tool(snippet = "Add two numbers")]
//! async fn add(a: f64, b: f64) -> String {
//!     (a + b).to_string()
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "add", json!({"a": 1, "b": 2})))
//!     .respond(FauxResponse::text("1 + 2 = 3"));
//! let agent = Agent::builder().model(model).tools((Add,)).build()?;
//! let run: RunOutcome = agent.prompt("What is 1 + 2?").await?;
//! assert_eq!(run.end, RunEnd::Completed);
//! assert_eq!(run.final_text().as_deref(), Some("1 + 2 = 3"));
//! # Ok(())
//! # }
//! ```

pub use crate::agent::{
    Agent, AgentDefinition, AgentError, AgentEvent, BuildError, Hooks, RunEnd, RunOutcome,
    ToolCallDecision,
};
pub use crate::message::Message;
pub use crate::tool::{
    Args, Ctx, FnTool, FromToolContext, Json, State, ToolContext, ToolDefinition, ToolError,
    ToolResult,
};
pub use pi_macros::{tool, tool_args};
