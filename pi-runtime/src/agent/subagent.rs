//! Agents as tools: [`AgentDefinition::as_tool`] turns a definition into a tool whose every
//! call runs a sub-agent, in a conversation of its own, to its end.
//!
//! The sub-agent inherits what the call has: its cancellation (aborting the parent stops
//! the sub-agent's model stream and tools), what is left of its time, its run context
//! (`Ctx<T>`), and its tracing span (the sub-agent's `invoke_agent` sits under the call's
//! `execute_tool`). Its events reach the parent's listeners as
//! [`AgentEvent::Nested`](super::AgentEvent::Nested), tagged with the call's path, while the call runs. Its usage is
//! the call's result's usage, so [`RunOutcome::usage`] adds it up.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//!
//! use pi_runtime::agent::{Agent, AgentEvent};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let summarizer = Agent::builder()
//!     .model(FauxModel::new().respond(FauxResponse::text("Rust is fast and safe.")))
//!     .system_prompt("Summarize in one sentence.")
//!     .build_definition()?;
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "summarize", json!({"task": "Summarize: ..."})))
//!     .respond(FauxResponse::text("The summary: Rust is fast and safe."));
//! let researcher = Agent::builder()
//!     .model(model)
//!     .tools(summarizer.as_tool("summarize", "Summarize a text."))
//!     .build()?;
//!
//! let nested = Arc::new(Mutex::new(Vec::new()));
//! let seen = Arc::clone(&nested);
//! researcher.on_event(move |event| {
//!     if let AgentEvent::Nested { path, event, .. } = event {
//!         seen.lock().unwrap().push(format!("{path}:{}", event.kind()));
//!     }
//! });
//! let run = researcher.prompt("Research Rust.").await?;
//! assert_eq!(run[2].as_tool_result().map(|r| r.text()).as_deref(), Some("Rust is fast and safe."));
//! assert_eq!(nested.lock().unwrap().first().map(String::as_str), Some("c1:agent_start"));
//! assert_eq!(nested.lock().unwrap().last().map(String::as_str), Some("c1:agent_end"));
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::AgentDefinition;
use super::dispatch::RunLink;
use super::end::RunEnd;
use super::handle::runs::Inherited;
use super::outcome::RunOutcome;
use super::prompt::Prompt;
use crate::__private::parameters_schema;
use crate::args::deserialize_arguments;
use crate::tool::{AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult};

/// Turns a call's arguments into the sub-agent's task.
type Render = Arc<dyn Fn(Value) -> Result<Prompt, ToolError> + Send + Sync>;

/// A tool that runs an agent: made by [`AgentDefinition::as_tool`] (see the
/// [module docs](self)).
///
/// By default the model passes the task as text, `{"task": "..."}`; [`input`](Self::input)
/// takes a typed input instead. The call's result is the sub-agent's final text. A run
/// that does not complete (a model error, its time or turn limit, an abort) is the call's
/// error, with the reason.
#[derive(Clone)]
pub struct SubAgent {
    definition: AgentDefinition,
    declaration: Tool,
    snippet: Option<String>,
    render: Render,
}

impl fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubAgent")
            .field("declaration", &self.declaration)
            .field("snippet", &self.snippet)
            .finish_non_exhaustive()
    }
}

impl AgentDefinition {
    /// This agent as a tool named `name`, described to the model by `description`: each
    /// call runs a fresh conversation of this definition on the task the model gives, and
    /// answers with its final text. See [`SubAgent`].
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> SubAgent {
        let name = name.into();
        let parameters = json!({
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task, with everything needed to do it: the agent does not see this conversation."
                }
            },
            "required": ["task"],
            "additionalProperties": false
        });
        let render: Render = Arc::new(|args: Value| match args.get("task") {
            Some(Value::String(task)) => Ok(Prompt::from(task.as_str())),
            _ => Err(ToolError::invalid_arguments("`task` must be a string")),
        });
        SubAgent {
            definition: self.clone(),
            declaration: Tool::new(name, description, parameters),
            snippet: None,
            render,
        }
    }
}

impl SubAgent {
    /// Take a typed input instead of the task as text: the tool's parameters are `T`'s
    /// schema (a [`#[tool_args]`](crate::tool_args) struct, say), and `task` turns the
    /// validated input into the sub-agent's prompt.
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    /// use pi_runtime::tool_args;
    ///
    /// /// What to translate.
    /// #[tool_args]
    /// struct Translation {
    ///     /// The text.
    ///     text: String,
    ///     /// The language to translate into.
    ///     into: String,
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let translator = Agent::builder()
    ///     .model(FauxModel::new().respond(FauxResponse::text("Bonjour")))
    ///     .build_definition()?
    ///     .as_tool("translate", "Translate a text.")
    ///     .input(|t: Translation| format!("Translate into {}: {}", t.into, t.text));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn input<T, F>(mut self, task: F) -> Self
    where
        T: DeserializeOwned + JsonSchema,
        F: Fn(T) -> String + Send + Sync + 'static,
    {
        self.declaration.parameters = parameters_schema::<T>(true);
        let name = self.declaration.name.clone();
        self.render = Arc::new(move |args: Value| {
            let input = deserialize_arguments::<T>(&name, args)
                .map_err(|error| ToolError::invalid_arguments(error.message()))?;
            Ok(Prompt::from(task(input)))
        });
        self
    }

    /// List the tool in the system prompt's `Available tools:` with this line.
    #[must_use]
    pub fn snippet(mut self, snippet: impl Into<String>) -> Self {
        self.snippet = Some(snippet.into());
        self
    }

    /// Run the sub-agent for the call `call_id` on the task in `params`, or go on from its
    /// pause when the call resumes after one.
    async fn run(
        &self,
        call_id: &str,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let link = RunLink::of(ctx);
        let child = self.definition.conversation();
        if let Some(link) = link.cloned() {
            let (call_id, agent) = (call_id.to_owned(), self.declaration.name.clone());
            child.on_event(move |event| link.forward(&call_id, &agent, event.clone()));
        }
        let inherited = Inherited {
            signal: ctx.signal().child_token(),
            deadline: ctx.deadline(),
            context: ctx.run_context().cloned(),
        };
        let name = &self.declaration.name;
        let ran = match link.and_then(RunLink::take_resume) {
            Some(resume) => (child
                .resume_under(*resume.state, resume.decisions, inherited)
                .await)
                .map_err(|error| format!("The {name} agent could not go on: {error}")),
            None => {
                let task = (self.render)(params)?;
                (child.prompt_under(task, inherited).await)
                    .map_err(|error| format!("The {name} agent could not start: {error}"))
            }
        };
        Ok(match ran {
            Ok(outcome) => self.answer(outcome, link),
            Err(text) => ToolResult::error(text),
        })
    }

    /// The call's result from the sub-agent's outcome: its final text, or why it has none.
    /// A sub-agent paused for approval hands its state to the run above through `link`;
    /// where that cannot wait, the call fails closed and nothing the sub-agent held runs.
    fn answer(&self, outcome: RunOutcome, link: Option<&RunLink>) -> ToolResult {
        let name = &self.declaration.name;
        let result = match &outcome.end {
            RunEnd::Completed | RunEnd::Terminated | RunEnd::EndedByHook => {
                ToolResult::text(outcome.final_text().unwrap_or_default())
            }
            RunEnd::ModelError { message } => {
                ToolResult::error(format!("The {name} agent failed: {message}"))
            }
            RunEnd::TimeLimit { limit } => ToolResult::error(format!(
                "The {name} agent ran out of time ({} ms) before it answered",
                limit.as_millis()
            )),
            RunEnd::TurnLimit { max_turns } => ToolResult::error(format!(
                "The {name} agent reached its limit of {max_turns} model requests before it answered"
            )),
            RunEnd::Aborted => {
                ToolResult::error(format!("The {name} agent was stopped before it answered"))
            }
            RunEnd::RetriesExhausted { tool, retries } => ToolResult::error(format!(
                "The {name} agent gave up: its tool {tool} failed {retries} times in a row"
            )),
            RunEnd::GuardrailTripped {
                guardrail, reason, ..
            } => ToolResult::error(format!(
                "The {name} agent stopped: its guardrail {guardrail} tripped: {reason}"
            )),
            RunEnd::AwaitingApproval { pending } => {
                let held = pending.len();
                let usage = outcome.usage();
                // The run above takes the pause if it can (its driver then discards this
                // result); where it cannot, the call fails closed, and nothing held runs.
                if let (Some(state), Some(link)) = (outcome.into_paused_state(), link) {
                    link.pause(state);
                }
                return ToolResult::error(format!(
                    "The {name} agent paused: {held} of its calls need approval, which this call cannot wait for"
                ))
                .with_usage(usage);
            }
        };
        result.with_usage(outcome.usage())
    }
}

impl AgentTool for SubAgent {
    fn definition(&self) -> &Tool {
        &self.declaration
    }

    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move { self.run(&call_id, params, &ctx).await })
    }
}

impl ToolDefinition for SubAgent {
    fn prompt_snippet(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.snippet.as_deref().map(Into::into)
    }
}
