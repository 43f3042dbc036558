//! `Agent`: a cheap, cloneable handle that runs prompts through the loop, keeps the
//! transcript and state, and delivers events.

mod conversation;
mod listeners;
pub(crate) mod resume;
pub(crate) mod runs;
mod tools;

use std::sync::Arc;

use super::builder::AgentBuilder;
use super::config::{AgentDefinition, Opening, Shared};

/// An agent: a model, tools and hooks, and the transcript of its runs.
///
/// ```
/// use pi_runtime::agent::Agent;
/// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
/// use pi_runtime::{FnTool, ToolResult};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let add = FnTool::new(
///     "add",
///     "Add two numbers.",
///     json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
///     |args, _ctx| async move {
///         let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
///         Ok(ToolResult::text(sum.to_string()))
///     },
/// );
/// let model = FauxModel::new()
///     .respond(FauxResponse::tool_call("c1", "add", json!({"a": 1, "b": 2})))
///     .respond(FauxResponse::text("1 + 2 = 3"));
/// let agent = Agent::builder().model(model).tools(add).build()?;
///
/// let messages = agent.prompt("What is 1 + 2?").await?;
/// let roles: Vec<_> = messages.iter().map(|m| m.role()).collect();
/// assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Agent {
    shared: Arc<Shared>,
}

/// Frees the run slot when a run ends, even if its future was dropped half-way; that also
/// cancels the run's signal, so that tasks the tools started see the run is over.
pub(crate) struct RunGuard<'a>(pub(crate) &'a Shared);

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.0.conversation();
        state.slot.release();
        state.view.streaming_message = None;
        state.view.pending_tool_calls.clear();
    }
}

impl AgentDefinition {
    /// Start a conversation of this definition: its own transcript, queues, state, events
    /// and run slot, sharing the model, tools, hooks and settings.
    pub fn conversation(&self) -> Agent {
        Agent {
            shared: Arc::new(Shared::new(self)),
        }
    }
}

impl Agent {
    /// Start building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// This conversation's definition as it stands (with the changes made through this
    /// handle): start more conversations from it.
    pub fn definition(&self) -> AgentDefinition {
        let state = self.shared.conversation();
        AgentDefinition {
            config: self.shared.config(),
            opening: Arc::new(Opening {
                messages: Vec::new(),
                steering_mode: state.steering_mode,
                follow_up_mode: state.follow_up_mode,
            }),
        }
    }

    /// What every conversation of this agent shares.
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}
