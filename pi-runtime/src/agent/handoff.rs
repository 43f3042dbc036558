//! Handoffs: [`AgentDefinition::handoff`] makes a tool that hands the conversation to
//! another agent. Once the batch of the call ends, the run goes on under the other
//! definition: its system prompt, its tools, its model, its hooks, and the conversation
//! stays with it for later prompts. The transcript stays one; a [`history`](Handoff::history)
//! filter shapes what the next agent is shown of it. [`RunOutcome::agent`] names the agent
//! that answered ([`AgentBuilder::name`](super::AgentBuilder::name)). A run's turn limit
//! bounds agents that hand the conversation back and forth.
//!
//! ```
//! use pi_runtime::agent::Agent;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let billing = Agent::builder()
//!     .name("billing")
//!     .model(FauxModel::new().respond(FauxResponse::text("Your invoice is on its way.")))
//!     .system_prompt("You handle billing.")
//!     .build_definition()?;
//! let triage = Agent::builder()
//!     .name("triage")
//!     .model(FauxModel::new().respond(FauxResponse::tool_call("h1", "transfer_to_billing", json!({}))))
//!     .tools(billing.handoff("transfer_to_billing", "Hand billing questions to billing."))
//!     .build()?;
//! let run = triage.prompt("Where is my invoice?").await?;
//! assert_eq!(run.agent.as_deref(), Some("billing"));
//! assert_eq!(run.final_text().as_deref(), Some("Your invoice is on its way."));
//! # Ok(()) }
//! ```
//!
//! [`RunOutcome::agent`]: super::RunOutcome::agent

use std::fmt;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::config::{AgentDefinition, HistoryFilter};
use super::dispatch::RunLink;
use crate::message::Message;
use crate::tool::{
    AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSettings,
};

/// A tool that hands the conversation to another agent: made by
/// [`AgentDefinition::handoff`] (see the [module docs](self)). It takes no arguments.
#[derive(Clone)]
pub struct Handoff {
    to: AgentDefinition,
    declaration: Tool,
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("declaration", &self.declaration)
            .finish_non_exhaustive()
    }
}

impl AgentDefinition {
    /// A tool named `name` that hands the conversation to this agent (see
    /// [`handoff`](super::handoff)).
    pub fn handoff(&self, name: impl Into<String>, description: impl Into<String>) -> Handoff {
        let parameters = json!({"type": "object", "properties": {}, "additionalProperties": false});
        Handoff {
            to: self.clone(),
            declaration: Tool::new(name, description, parameters),
        }
    }
}

impl Handoff {
    /// Show the next agent `filter(transcript)` instead of the whole transcript, in every
    /// request it makes (the transcript itself keeps everything).
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::FauxModel;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let billing = Agent::builder().model(FauxModel::new()).build_definition()?;
    /// // Only the user's own words: no tool calls, no results.
    /// let handoff = billing
    ///     .handoff("transfer_to_billing", "Hand over to billing.")
    ///     .history(|messages| messages.iter().filter(|m| m.role() == "user").cloned().collect());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn history<F>(mut self, filter: F) -> Self
    where
        F: Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static,
    {
        self.to = self.to.with_history(HistoryFilter::new(filter));
        self
    }

    /// The name of the agent it hands over to, if it has one.
    pub fn target(&self) -> Option<&str> {
        self.to.config.name.as_deref()
    }
}

impl AgentTool for Handoff {
    fn definition(&self) -> &Tool {
        &self.declaration
    }

    fn execute(
        &self,
        _call_id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let target = self.target().unwrap_or(&self.declaration.name);
            let handed = RunLink::of(&ctx).is_some_and(|link| link.hand_off(self.to.clone()));
            if handed {
                Ok(ToolResult::text(format!("Transferred to {target}.")))
            } else {
                Err(ToolError::new(format!(
                    "Cannot transfer to {target} here: only a call of the conversation's own run can hand it over"
                )))
            }
        })
    }
}

impl ToolDefinition for Handoff {
    fn settings(&self) -> &ToolSettings {
        // A handoff reports to the run that calls it.
        static LINKED: ToolSettings = ToolSettings::new().linked_to_run();
        &LINKED
    }
}
