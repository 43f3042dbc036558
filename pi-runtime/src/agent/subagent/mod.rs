//! Agents as tools: [`AgentDefinition::as_tool`] turns a definition into a tool whose every
//! call runs a sub-agent, in a conversation of its own, to its end.
//!
//! The sub-agent inherits what the call has: its cancellation (aborting the parent stops
//! the sub-agent's model stream and tools), what is left of its time, its run context
//! (`Ctx<T>`), and its tracing span (the sub-agent's `invoke_agent` sits under the call's
//! `execute_tool`). Its events reach the parent's listeners as
//! [`AgentEvent::Nested`](super::AgentEvent::Nested), tagged with the call's path, while the
//! call runs. Its usage is the call's result's usage, so [`RunOutcome::usage`] adds it up.
//! A call that needs approval inside it pauses the whole run (see
//! [`approval`](super::approval)): the pending call's [`path`](super::approval::PendingCall::path)
//! names it, and the decision resumes the sub-agent where it paused.
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

mod extraction;
mod task;

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use self::task::{Task, inherited};
use super::dispatch::RunLink;
use super::end::RunEnd;
#[cfg(any(test, feature = "restate"))]
use super::nested_journal::NestedJournal;
use super::outcome::RunOutcome;
use super::{Agent, AgentDefinition, AgentError, Prompt};
use crate::message::Message;
#[cfg(any(test, feature = "restate"))]
use crate::message::now_ms;
use crate::tool::{
    AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSettings,
};

pub use self::extraction::Extraction;

/// What a sub-agent starts with, given the parent's transcript.
type History = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

/// A tool that runs an agent: made by [`AgentDefinition::as_tool`] (see the
/// [module docs](self)).
///
/// By default the model passes the task as text, `{"task": "..."}`; [`input`](Self::input)
/// takes a typed input instead. The call's result is the sub-agent's final text. A run
/// that does not complete (a model error, its time or turn limit, an abort, a guardrail) is
/// the call's error, with the reason. For a typed result, see [`Extraction`].
#[derive(Clone)]
pub struct SubAgent {
    definition: AgentDefinition,
    task: Task,
    history: Option<History>,
    settings: ToolSettings,
}

impl fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubAgent")
            .field("declaration", &self.task.declaration)
            .field("snippet", &self.task.snippet)
            .field("history", &self.history.is_some())
            .finish_non_exhaustive()
    }
}

impl AgentDefinition {
    /// This agent as a tool named `name`, described to the model by `description`: each
    /// call runs a fresh conversation of this definition on the task the model gives, and
    /// answers with its final text. See [`SubAgent`].
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> SubAgent {
        SubAgent {
            definition: self.clone(),
            task: Task::text(name.into(), description.into()),
            history: None,
            settings: ToolSettings {
                links_to_run: true,
                journals_itself: true,
                ..ToolSettings::new()
            },
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
        self.task.typed(task);
        self
    }

    /// Start each sub-agent's conversation with `filter(parent's transcript)` (the
    /// transcript before the response whose call runs it) instead of an empty one; the task
    /// follows it. Only a call of a run's batch has a transcript to copy.
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::FauxModel;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let reviewer = Agent::builder().model(FauxModel::new()).build_definition()?;
    /// // What the user said, without the tool traffic.
    /// let tool = reviewer
    ///     .as_tool("review", "Review the conversation so far.")
    ///     .history(|messages| messages.iter().filter(|m| m.role() == "user").cloned().collect());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn history<F>(mut self, filter: F) -> Self
    where
        F: Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static,
    {
        self.history = Some(Arc::new(filter));
        self.settings.reads_transcript = true;
        self
    }

    /// List the tool in the system prompt's `Available tools:` with this line.
    #[must_use]
    pub fn snippet(mut self, snippet: impl Into<String>) -> Self {
        self.task.snippet = Some(snippet.into());
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
        self.task.forward_events(&child, call_id, ctx);
        let name = self.task.name();
        let ran = match link.and_then(RunLink::take_resume) {
            Some(resume) => (child.resume_under(*resume.state, resume.decisions, inherited(ctx)))
                .await
                .map_err(|error| format!("The {name} agent could not go on: {error}")),
            None => {
                let task = self.task.prompt(params)?;
                if let (Some(filter), Some(link)) = (&self.history, link) {
                    child.set_messages(filter(link.transcript()));
                }
                let durable = link.and_then(|link| Some((link, link.durable_key()?)));
                let started = match durable {
                    Some(durable) => journaled(&child, task, call_id, durable, ctx).await,
                    None => child.prompt_under(task, inherited(ctx)).await,
                };
                started.map_err(|error| format!("The {name} agent could not run: {error}"))
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
        let name = self.task.name();
        let result = match &outcome.end {
            RunEnd::Completed | RunEnd::Terminated | RunEnd::EndedByHook => {
                ToolResult::text(outcome.final_text().unwrap_or_default())
            }
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
            end => ToolResult::error(unfinished(name, end)),
        };
        result.with_usage(outcome.usage())
    }
}

/// Run `child` on `task` under the durable run `run_key` that the call `call_id` belongs
/// to, through the call's `link`: each of its steps is a step of that run's journal, named
/// `<call id>/...`.
#[cfg(any(test, feature = "restate"))]
async fn journaled(
    child: &Agent,
    task: Prompt,
    call_id: &str,
    (link, run_key): (&RunLink, &Arc<str>),
    ctx: &ToolContext,
) -> Result<RunOutcome, AgentError> {
    let run_key: Arc<str> = Arc::from(format!("{run_key}/{call_id}"));
    let steps = NestedJournal::new(format!("{call_id}/"), link.clone());
    child
        .prompt_journaled_under(task, &steps, run_key, now_ms(), inherited(ctx))
        .await
}

/// Without durable runs no call is a durable run's; this is never reached.
#[cfg(not(any(test, feature = "restate")))]
async fn journaled(
    child: &Agent,
    task: Prompt,
    _call_id: &str,
    _durable: (&RunLink, &Arc<str>),
    ctx: &ToolContext,
) -> Result<RunOutcome, AgentError> {
    child.prompt_under(task, inherited(ctx)).await
}

/// Why the sub-agent `name` gave no answer, ending with `end`.
fn unfinished(name: &str, end: &RunEnd) -> String {
    match end {
        RunEnd::ModelError { message } => format!("The {name} agent failed: {message}"),
        RunEnd::TimeLimit { limit } => format!(
            "The {name} agent ran out of time ({} ms) before it answered",
            limit.as_millis()
        ),
        RunEnd::TurnLimit { max_turns } => format!(
            "The {name} agent reached its limit of {max_turns} model requests before it answered"
        ),
        RunEnd::RetriesExhausted { tool, retries } => {
            format!("The {name} agent gave up: its tool {tool} failed {retries} times in a row")
        }
        RunEnd::GuardrailTripped {
            guardrail, reason, ..
        } => format!("The {name} agent stopped: its guardrail {guardrail} tripped: {reason}"),
        _ => format!("The {name} agent was stopped before it answered"),
    }
}

impl AgentTool for SubAgent {
    fn definition(&self) -> &Tool {
        &self.task.declaration
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
        self.task.snippet.as_deref().map(Into::into)
    }

    fn settings(&self) -> &ToolSettings {
        &self.settings
    }
}
