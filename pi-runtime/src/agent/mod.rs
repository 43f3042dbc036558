//! The agent loop, the [`Agent`] and its builder, agent events and hooks.
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
//! use std::time::Duration;
//!
//! use pi_runtime::agent::{Agent, RunEnd, ToolCallDecision};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{FnTool, Message, ToolResult};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bash = FnTool::new("bash", "Run a command.", json!({"type": "object"}), |_, _| async {
//!     Ok(ToolResult::text("ran"))
//! });
//! let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "bash", json!({"cmd": "rm -rf /"})));
//! let agent = Agent::builder()
//!     .model(model)
//!     .tools(bash)
//!     .before_tool_call(|call| async move {
//!         let dangerous = call.args["cmd"].as_str().is_some_and(|cmd| cmd.starts_with("rm"));
//!         Ok(if dangerous { ToolCallDecision::block("Deleting files is not allowed") } else { ToolCallDecision::Allow })
//!     })
//!     .max_turns(4)
//!     .time_limit(Duration::from_secs(30))
//!     .build()?;
//!
//! let run = agent.prompt("Clean up.").await?;
//! let Message::ToolResult(result) = &run[2] else { unreachable!() };
//! assert_eq!((result.is_error, result.text()), (true, "Deleting files is not allowed".to_owned()));
//! assert_eq!(run.end, RunEnd::Completed);
//! # Ok(()) }
//! ```
//!
//! ## How a run ends
//!
//! `prompt()` and `continue_run()` return a [`RunOutcome`]: the messages the run added (it
//! reads as their slice), the number of model requests, and a [`RunEnd`]:
//!
//! | `RunEnd` | when |
//! |---|---|
//! | `Completed` | the model answered without calling a tool, and nothing was queued |
//! | `Terminated` | every result of the last batch asked to stop (`terminate`) |
//! | `EndedByHook` | a `finish_turn` hook answered `TurnControl::End` |
//! | `TurnLimit` | [`max_turns`](AgentBuilder::max_turns) requests were made and the run wanted another |
//! | `TimeLimit` | the [`time_limit`](AgentBuilder::time_limit) aborted the run |
//! | `Aborted` | [`Agent::abort`] |
//! | `ModelError` | a request failed; it carries the provider's text |
//!
//! Only `Err` is a run that could not start (another is in progress, nothing to continue).

pub mod approval;
mod builder;
mod config;
pub(crate) mod dispatch;
mod end;
mod error;
mod events;
pub(crate) mod failure;
pub mod guardrail;
mod handle;
pub mod handoff;
pub(crate) mod hooks;
pub(crate) mod journal;
#[cfg(any(test, feature = "restate"))]
mod journaled;
pub mod machine;
pub(crate) mod nested_journal;
mod outcome;
pub(crate) mod panics;
mod prompt;
mod run;
mod sink;
mod state;
pub(crate) mod step;
pub mod subagent;
mod telemetry;
#[cfg(test)]
mod test_support;
pub(crate) mod turn_tools;

pub mod extract;

pub use builder::AgentBuilder;
pub use config::AgentDefinition;
pub use dispatch::{ToolPolicies, validate_tool_call};
pub use end::RunEnd;
pub use error::{AgentError, BuildError};
pub use events::AgentEvent;
pub use handle::Agent;
pub use handoff::Handoff;
pub use hooks::{
    AfterToolCall, BeforeToolCall, FinishedTurn, Hooks, RequestPlan, ToolCallDecision,
    ToolResultPatch, TurnControl,
};
pub use machine::state::{RUN_STATE_VERSION, RunState, UnsupportedRunState};
pub use outcome::RunOutcome;
pub use prompt::Prompt;
pub use sink::{EVENT_STREAM_BACKLOG, EventStream, SubscriptionId};
pub use state::{AgentState, QueueMode};
pub use subagent::{Extraction, SubAgent};
