//! The agent loop (SPEC §5), the [`Agent`] and its builder, agent events and hooks.
//!
//! A run streams a model response, runs its batch of tool calls (sequentially or in
//! parallel), appends the results and asks the model again, until a response has no calls,
//! every result of a batch asks to terminate, a hook ends the run, or the run is aborted.
//! Everything that goes wrong inside a run (an unknown tool, invalid arguments, a failing
//! or panicking tool or hook) becomes a result the model sees; the run itself never fails.
//!
//! Hooks are async closures. A permission check, a turn limit and a time limit:
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//!
//! use pi_runtime::agent::{Agent, ToolCallDecision, TurnControl};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{FnTool, Message, ToolResult};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bash = FnTool::new("bash", "Run a command.", json!({"type": "object"}), |_, _| async {
//!     Ok(ToolResult::text("ran"))
//! });
//! let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "bash", json!({"cmd": "rm -rf /"})));
//! let turns = AtomicUsize::new(0);
//! let agent = Agent::builder()
//!     .model(model)
//!     .tools(bash)
//!     .before_tool_call(|call| async move {
//!         let dangerous = call.args["cmd"].as_str().is_some_and(|cmd| cmd.starts_with("rm"));
//!         Ok(if dangerous { ToolCallDecision::block("Deleting files is not allowed") } else { ToolCallDecision::Allow })
//!     })
//!     .finish_turn(move |_| {
//!         let done = turns.fetch_add(1, Ordering::Relaxed) + 1;
//!         std::future::ready(if done >= 4 { TurnControl::End } else { TurnControl::Proceed })
//!     })
//!     .time_limit(Duration::from_secs(30))
//!     .build()?;
//!
//! let messages = agent.prompt("Clean up.").await?;
//! let Message::ToolResult(result) = &messages[2] else { unreachable!() };
//! assert_eq!((result.is_error, result.text()), (true, "Deleting files is not allowed".to_owned()));
//! # Ok(()) }
//! ```

mod batch;
mod builder;
pub(crate) mod call;
mod config;
mod error;
mod events;
mod failure;
mod handle;
pub(crate) mod hooks;
mod run;
mod sink;
mod state;
mod telemetry;

pub mod extract;

pub use builder::AgentBuilder;
pub use call::validate_tool_call;
pub use error::{AgentError, BuildError};
pub use events::AgentEvent;
pub use extract::{ExtractBuilder, ExtractError, ExtractOptions, Extracted, Extractor};
pub use handle::{Agent, Prompt};
pub use hooks::{
    AfterToolCall, BeforeToolCall, FinishedTurn, RequestPlan, ToolCallDecision, ToolResultPatch,
    TurnControl,
};
pub use sink::{EVENT_STREAM_BACKLOG, EventStream, SubscriptionId};
pub use state::{AgentState, QueueMode};
