//! `Agent`: a cheap, cloneable handle that runs prompts through the loop, keeps the
//! transcript and state, and delivers events.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, PoisonError};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::AgentEvent;
use super::approval::{ApprovalDecision, ApprovalError, PauseLedger};
use super::builder::AgentBuilder;
use super::config::{AgentDefinition, Config, Opening, Shared, check_context};
use super::dispatch::{Dispatcher, Lane, RunLimits, ToolPolicies};
use super::end::RunEnd;
use super::error::AgentError;
use super::hooks::Hooks;
use super::machine::held::Decided;
use super::machine::{RunState, StateLimits, deadline_after, instant_at};
use super::outcome::RunOutcome;
use super::prompt::Prompt;
use super::run;
use super::sink::{EventStream, Listener, SubscriptionId};
use super::state::{AgentState, Inner as StateInner};
use super::telemetry;
use crate::message::{Message, SystemMessage, ToolCall, UserContent};
use crate::stream::{LanguageModel, ThinkingLevel};
use crate::tool::{
    RegistryError, RunContext, ToolDefinition, ToolRegistry, ToolResult, ToolSet, ToolSwitch,
};

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
        let mut state = self.0.bus.state();
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
        let state = self.shared.bus.state();
        AgentDefinition {
            config: self.shared.config(),
            opening: Arc::new(Opening {
                messages: Vec::new(),
                steering_mode: state.steering_mode,
                follow_up_mode: state.follow_up_mode,
            }),
        }
    }

    /// Add the prompt to the transcript and run until the model is done. Returns the
    /// messages the run added (the prompt first) and how the run ended
    /// ([`RunOutcome::end`]): completed, terminated by a tool, a turn or time limit, an abort,
    /// or a model error with the provider's text. Failures inside the run (a failed request,
    /// a failing tool) are in the outcome, not an `Err`.
    ///
    /// # Errors
    /// A run is already in progress, or the last run is paused for approval
    /// ([`AgentError::AwaitingApproval`]: resume it or [`reset`](Self::reset)).
    pub async fn prompt(&self, prompt: impl Into<Prompt>) -> Result<RunOutcome, AgentError> {
        self.prompt_in(prompt.into(), None).await
    }

    /// [`prompt`](Self::prompt) with a context for this run only: every tool call (nested
    /// ones too) and hook of the run sees `context`, and a tool's `Ctx<T>` parameter gets a
    /// clone of it. Conversations of one [`AgentDefinition`] run at once, each with its own
    /// context.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    /// use pi_runtime::{Ctx, tool};
    /// use serde_json::json;
    ///
    /// struct Tenant(&'static str);
    ///
    /// /// Name the tenant.
    /// #[tool]
    /// async fn whoami(Ctx(tenant): Ctx<Arc<Tenant>>) -> String {
    ///     tenant.0.to_owned()
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "whoami", json!({})));
    /// let definition = Agent::builder().model(model).tools(Whoami).build_definition()?;
    /// let run = definition.conversation().prompt_with("Who am I?", Arc::new(Tenant("acme"))).await?;
    /// assert_eq!(run[2].as_tool_result().map(|r| r.text()).as_deref(), Some("acme"));
    ///
    /// let error = definition.conversation().prompt("Who am I?").await.unwrap_err();
    /// assert!(error.to_string().starts_with("tool \"whoami\" reads a context of type"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`prompt`](Self::prompt), and a tool reads a context of another type
    /// ([`AgentError::ContextType`]).
    pub async fn prompt_with<T: Send + Sync + 'static>(
        &self,
        prompt: impl Into<Prompt>,
        context: T,
    ) -> Result<RunOutcome, AgentError> {
        self.prompt_in(prompt.into(), Some(RunContext::new(context)))
            .await
    }

    /// Give every later run of this conversation that is not given its own
    /// ([`prompt_with`](Self::prompt_with)) this context.
    pub fn set_context<T: Send + Sync + 'static>(&self, context: T) {
        *self
            .shared
            .context
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(RunContext::new(context));
    }

    async fn prompt_in(
        &self,
        Prompt(prompts): Prompt,
        context: Option<RunContext>,
    ) -> Result<RunOutcome, AgentError> {
        let (limits, state) = self.start(AgentError::BusyPrompting, context, |_, messages| {
            Ok((messages, prompts, false))
        })?;
        Ok(self.drive(RunGuard(&self.shared), limits, state).await)
    }

    /// Run again from the current transcript (pi's `continue()`): after a tool result or a
    /// user message, ask the model; after an assistant message, deliver queued steering
    /// (else follow-up) messages as prompts.
    ///
    /// # Errors
    /// A run is in progress, the last run is paused for approval
    /// ([`AgentError::AwaitingApproval`]), the transcript is empty, or it ends with an
    /// assistant message and nothing is queued. A refused call changes nothing.
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        let (limits, state) =
            self.start(
                AgentError::BusyContinuing,
                None,
                |state, messages| match messages.last() {
                    None => Err(AgentError::NoMessages),
                    Some(Message::Assistant(_)) => {
                        let steering = state.poll_steering();
                        let (prompts, skip) = if steering.is_empty() {
                            (state.poll_follow_ups(), false)
                        } else {
                            (steering, true)
                        };
                        if prompts.is_empty() {
                            Err(AgentError::CannotContinueFrom("assistant"))
                        } else {
                            Ok((messages, prompts, skip))
                        }
                    }
                    Some(_) => Ok((messages, Vec::new(), false)),
                },
            )?;
        Ok(self.drive(RunGuard(&self.shared), limits, state).await)
    }

    /// Cancel the current run: running tools see the signal, the next model request is not
    /// made, and the run ends with an `aborted` response. Does nothing while idle.
    pub fn abort(&self) {
        if let Some(run) = self.shared.bus.state().slot.current() {
            run.signal.cancel();
        }
    }

    /// Queue a message for the next drain point of the current run (after the current
    /// turn's tools ran).
    pub fn steer(&self, message: impl Into<Message>) {
        self.shared.bus.state().steering.push_back(message.into());
    }

    /// Queue a message for when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        self.shared.bus.state().follow_ups.push_back(message.into());
    }

    /// Call `listener` for every event, in order, before the run goes on. For listeners that
    /// print, log or collect; see [`subscribe`](Self::subscribe) for one that awaits.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use pi_runtime::agent::{Agent, AgentEvent};
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = Agent::builder().model(FauxModel::new().respond(FauxResponse::text("hi"))).build()?;
    /// let kinds = Arc::new(Mutex::new(Vec::new()));
    /// let seen = Arc::clone(&kinds);
    /// agent.on_event(move |event: &AgentEvent| {
    ///     if !matches!(event, AgentEvent::MessageUpdate { .. }) {
    ///         seen.lock().unwrap().push(serde_json::to_value(event).unwrap()["type"].clone());
    ///     }
    /// });
    /// agent.prompt("hello").await?;
    /// let kinds = kinds.lock().unwrap();
    /// assert_eq!((kinds.len(), &kinds[0], &kinds[7]), (8, &"agent_start".into(), &"agent_end".into()));
    /// # Ok(()) }
    /// ```
    pub fn on_event<F>(&self, listener: F) -> SubscriptionId
    where
        F: Fn(&AgentEvent) + Send + Sync + 'static,
    {
        self.shared
            .bus
            .subscribe(Listener::Sync(Arc::new(listener)))
    }

    /// Call `listener` for every event, in order, and await each call's future before the
    /// run goes on (so a listener may apply back-pressure). The event is shared, so the
    /// obvious closure works:
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = Agent::builder().model(FauxModel::new().respond(FauxResponse::text("hi"))).build()?;
    /// agent.subscribe(|event| async move {
    ///     tokio::task::yield_now().await; // a slow consumer: the run waits for it
    ///     println!("{}", serde_json::to_string(&*event).unwrap_or_default());
    /// });
    /// agent.prompt("hello").await?;
    /// # Ok(()) }
    /// ```
    pub fn subscribe<F, Fut>(&self, listener: F) -> SubscriptionId
    where
        F: Fn(Arc<AgentEvent>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = move |event| -> BoxFuture<'static, ()> { Box::pin(listener(event)) };
        self.shared
            .bus
            .subscribe(Listener::Async(Arc::new(listener)))
    }

    /// Remove a subscription; `false` if it was already gone.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.shared.bus.unsubscribe(id)
    }

    /// Every event from now on, as a stream. The run never waits for it; a reader that
    /// falls far behind misses only `message_update` events, whose changes the next one's
    /// live message shows (see [`EventStream`]).
    pub fn events(&self) -> EventStream {
        self.shared.bus.stream()
    }

    /// A snapshot of the state.
    pub fn state(&self) -> AgentState {
        let state = self.shared.bus.state();
        let mut view = state.view.clone();
        view.is_streaming = state.slot.is_busy();
        view
    }

    /// The whole transcript as pi 1.6 keeps it: a leading system message with the agent's
    /// system prompt and the tools the conversation declared first, then
    /// [`messages`](Self::messages). Replaying its system messages
    /// ([`transcript::current_tools`](crate::transcript::current_tools)) gives the tools of
    /// the last request; saved and given back to [`set_messages`](Self::set_messages) or
    /// [`AgentBuilder::messages`](super::AgentBuilder::messages), it resumes the conversation
    /// with the same declared tools.
    pub fn transcript(&self) -> Vec<Message> {
        let config = self.shared.config();
        let state = self.shared.bus.state();
        let opening = match &state.opening_tools {
            Some(tools) => tools.to_vec(),
            None => config.tools.definitions(),
        };
        let leading = SystemMessage {
            content: UserContent::Text(config.system_prompt.clone()),
            tools_added: (!opening.is_empty()).then_some(opening),
            timestamp: 0,
            ..SystemMessage::default()
        };
        std::iter::once(leading.into())
            .chain(state.view.messages.iter().cloned())
            .collect()
    }

    /// The transcript: the prompts, responses and tool results, and the system messages
    /// that record tool changes. The tools the conversation declared first are not in it
    /// (see [`transcript`](Self::transcript)).
    pub fn messages(&self) -> Vec<Message> {
        self.shared.bus.state().view.messages.clone()
    }

    /// Replace the transcript (takes effect at the next run).
    pub fn set_messages(&self, messages: Vec<Message>) {
        self.shared.bus.state().set_transcript(messages);
    }

    /// The `error_message` of the last failed turn.
    pub fn error_message(&self) -> Option<String> {
        self.shared.bus.state().view.error_message.clone()
    }

    /// A run is in progress.
    pub fn is_streaming(&self) -> bool {
        self.shared.bus.state().slot.is_busy()
    }

    /// Clear the transcript, the queues and the last error; a run paused for approval is
    /// discarded (its saved state can still be resumed).
    ///
    /// # Errors
    /// A run is in progress.
    pub fn reset(&self) -> Result<(), AgentError> {
        let mut state = self.shared.bus.state();
        if state.slot.is_busy() {
            return Err(AgentError::BusyResetting);
        }
        state.view = AgentState::default();
        state.opening_tools = None;
        state.steering.clear();
        state.follow_ups.clear();
        state.awaiting_approval = false;
        Ok(())
    }

    /// Change the system prompt (from the next request on).
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.shared
            .update_config(|config| config.system_prompt = prompt);
    }

    /// Change the model (from the next request on).
    pub fn set_model(&self, model: Arc<dyn LanguageModel>) {
        self.shared.update_config(|config| config.model = model);
    }

    /// Change the thinking level (from the next request on).
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.shared
            .update_config(|config| config.thinking_level = level);
    }

    /// The registered tools, with the active ones, as the next request will see them.
    pub fn tools(&self) -> Arc<ToolRegistry> {
        self.shared.registry()
    }

    /// Make exactly these registered tools active, in this order (from the next request on).
    ///
    /// # Errors
    /// A name that is not registered.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.set_active(names))
    }

    /// Activate these registered tools, after the active ones, from the next request on; the
    /// request declares them to the model (a system message in the transcript records it).
    ///
    /// # Errors
    /// A name that is not registered; then nothing changes.
    pub fn activate_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.activate(names))
    }

    /// Deactivate these tools from the next request on: still registered, no longer declared.
    ///
    /// # Errors
    /// A name that is not registered; then nothing changes.
    pub fn deactivate_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.deactivate(names))
    }

    /// Register more tools from the next request on (a running turn keeps the tools it
    /// started with). Direct and model-only tools are active at once; deferred ones wait
    /// for activation (see [`Exposure`](crate::tool::Exposure)).
    ///
    /// # Errors
    /// A name already registered, or a schema that does not compile; then nothing changes.
    pub fn register_tools(&self, tools: impl ToolSet) -> Result<(), RegistryError> {
        let mut tools = Some(tools.into_registrations());
        self.shared
            .change(&mut |registry| registry.register_all(tools.take().unwrap_or_default()))
    }

    /// Put `tool` in the place of the registered tool of the same name (or register it),
    /// from the next request on; an active tool stays active and the request declares its
    /// new definition.
    ///
    /// # Errors
    /// A schema that does not compile; then nothing changes.
    pub fn replace_tool(&self, tool: impl ToolDefinition) -> Result<(), RegistryError> {
        let tool: Arc<dyn ToolDefinition> = Arc::new(tool);
        self.shared
            .change(&mut |registry| registry.replace(Arc::clone(&tool)))
    }

    /// Unregister the tool named `name` from the next request on; `false` if there is none.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.shared
            .change(&mut |registry| match registry.remove(name) {
                Some(_) => Ok(()),
                None => Err(RegistryError::UnknownTool(name.to_owned())),
            })
            .is_ok()
    }

    /// The conversation's tool set, for a source of tools that follows its own changes (an
    /// MCP server's list); it does not keep the conversation alive.
    #[cfg(feature = "mcp")]
    pub(crate) fn tool_switch(&self) -> std::sync::Weak<dyn ToolSwitch> {
        Arc::downgrade(&self.shared) as std::sync::Weak<dyn ToolSwitch>
    }

    /// The agent's hooks, to give to another dispatcher of its tools, such as an
    /// [`McpServer`](crate::mcp::McpServer) (`with_hooks`).
    pub fn hooks(&self) -> Hooks {
        Hooks::clone(&self.shared.config().hooks)
    }

    /// The agent's tool execution policies, to give to another dispatcher of its tools, such
    /// as an [`McpServer`](crate::mcp::McpServer) (`with_tool_policies`): the defaults, the
    /// named concurrency limits (shared with this agent) and the output saver.
    pub fn tool_policies(&self) -> ToolPolicies {
        ToolPolicies {
            inner: Arc::clone(&self.shared.config().policies),
        }
    }

    /// Wait until no run is in progress (returns at once when idle).
    pub async fn wait_for_idle(&self) {
        let mut busy = self.shared.bus.state().slot.watch();
        // `wait_for` only fails when the sender is gone, and `self` keeps it alive.
        let _ = busy.wait_for(|busy| !*busy).await;
    }

    /// Run one call outside the loop with the agent's tools and hooks, like pi's
    /// `runToolCall`: the same prepare → execute → finalize path, under the running run's
    /// signal and time limit, and with the tools its current turn offers, if there is one; no events, no messages, never failing. Tools
    /// that call other tools use it so that hooks (permissions) apply. While a run goes on, a
    /// failure counts toward the tool's retry budget for that run.
    pub async fn run_tool_call(&self, call: ToolCall) -> ToolResult {
        let config = self.shared.config();
        // During a run, the call finds the tools the run's current turn offers.
        let (limits, messages, tools) = {
            let state = self.shared.bus.state();
            let limits = state.slot.current().cloned().unwrap_or_default();
            let tools =
                (state.slot.turn_tools().cloned()).unwrap_or_else(|| Arc::clone(&config.tools));
            (limits, state.view.messages.clone(), tools)
        };
        let dispatcher = Dispatcher::new(
            tools,
            Arc::clone(&config.hooks),
            Arc::clone(&config.policies),
            config.execution,
            Arc::new(limits),
            config.capture_content,
        );
        let messages = dispatcher.hook_transcript(&messages);
        dispatcher
            .call(&call, messages, |_| std::future::ready(()))
            .await
    }

    /// What every conversation of this agent shares.
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Claim the run slot for a run over the transcript, as `input` decides from it (under
    /// the same lock, so a refused start changes nothing).
    pub(crate) fn start(
        &self,
        busy: AgentError,
        context: Option<RunContext>,
        input: impl FnOnce(
            &mut StateInner,
            Vec<Message>,
        ) -> Result<(Vec<Message>, Vec<Message>, bool), AgentError>,
    ) -> Result<(RunLimits, RunState), AgentError> {
        let config = self.shared.config();
        let context = context.or_else(|| self.shared.context());
        check_context(config.tools.registry(), context.as_ref())?;
        let time_limit = config.time_limit;
        let mut state = self.shared.bus.state();
        if state.slot.is_busy() {
            return Err(busy);
        }
        if state.awaiting_approval {
            return Err(AgentError::AwaitingApproval);
        }
        let transcript = state.view.messages.clone();
        let (messages, prompts, skip_initial_steering) = input(&mut state, transcript)?;
        let limits = RunLimits {
            signal: CancellationToken::new(),
            deadline: time_limit.map(|limit| tokio::time::Instant::now() + limit),
            context,
            run_key: None,
            nested_failures: Some(Arc::default()),
            lane: Lane::default(),
        };
        state.slot.claim(limits.clone());
        state.view.error_message = None;
        let limits_of_state = StateLimits {
            max_turns: config.max_turns,
            deadline_ms: time_limit.map(deadline_after),
        };
        let run = RunState::new(
            messages,
            state.opening_tools.clone(),
            prompts,
            skip_initial_steering,
            limits_of_state,
        );
        Ok((limits, run))
    }

    /// Drive a [`RunState`] (this process's, or another's read back with
    /// [`RunState::from_signed_json`]) to its
    /// end with this conversation's model, tools and hooks, exactly as the run it was taken
    /// from would have gone on. The transcript becomes the state's; the time limit is the
    /// absolute one the state carries. A run paused for approval needs
    /// [`resume_with`](Self::resume_with).
    ///
    /// # Errors
    /// A run is in progress here, the state has an unsupported version, or it waits for
    /// approval decisions.
    pub async fn resume(&self, state: RunState) -> Result<RunOutcome, AgentError> {
        self.resume_with(state, []).await
    }

    /// Resume a run paused for approval ([`RunEnd::AwaitingApproval`]) with exactly one
    /// decision per pending call, checked before anything runs (see
    /// [`approval`](super::approval)). The batch then goes on as it would have without the
    /// pause: the approved and edited calls execute with the calls that needed no approval,
    /// each denied call gets an error result carrying its reason, and the run continues.
    ///
    /// A pause resumes once: once the decisions are checked, the resume claims the state's
    /// [`pause_id`](RunState::pause_id) in the agent's
    /// [`PauseLedger`](super::approval::PauseLedger)
    /// ([`AgentBuilder::pause_ledger`](super::AgentBuilder::pause_ledger); by default one
    /// per process), and every later resume of the same pause fails.
    ///
    /// # Errors
    /// A run is in progress here, the state has an unsupported version, the decisions do
    /// not fit the pending calls ([`AgentError::Approval`]: missing, duplicate or unknown, an
    /// edit that does not validate or that `before_tool_call` blocks, changed arguments, a
    /// tool this agent lacks), or the pause was resumed before
    /// ([`ApprovalError::Claim`](super::approval::ApprovalError::Claim)). Nothing ran then.
    pub async fn resume_with(
        &self,
        mut state: RunState,
        decisions: impl IntoIterator<Item = ApprovalDecision>,
    ) -> Result<RunOutcome, AgentError> {
        state
            .check_version()
            .map_err(|error| AgentError::UnsupportedState(error.to_string()))?;
        let config = self.shared.config();
        let (mut limits, decided) = {
            let mut slot = self.shared.bus.state();
            if slot.slot.is_busy() {
                return Err(AgentError::BusyContinuing);
            }
            let decided = state.decided(decisions.into_iter().collect(), &tool_lookup(&config))?;
            let context = self.shared.context();
            check_context(config.tools.registry(), context.as_ref())?;
            let limits = RunLimits {
                signal: CancellationToken::new(),
                deadline: None,
                context,
                run_key: None,
                nested_failures: Some(Arc::default()),
                lane: Lane::default(),
            };
            // The slot is this resume's from here: the checks below wait (a hook, the
            // ledger), and the guard frees it if they refuse.
            slot.slot.claim(limits.clone());
            (limits, decided)
        };
        let guard = RunGuard(&self.shared);
        if let Some(decided) = decided {
            go_on(&config, &limits, &mut state, decided, Some(&*config.ledger)).await?;
        }
        // The time limit counts again from now (it stopped while the run was paused).
        limits.deadline = state.deadline_ms().map(instant_at);
        {
            let mut slot = self.shared.bus.state();
            slot.awaiting_approval = false;
            slot.slot.claim(limits.clone());
            slot.view.messages = state.transcript().to_vec();
            slot.opening_tools = state.opening_tools().cloned();
        }
        Ok(self.drive(guard, limits, state).await)
    }

    /// Run until `pause` holds between two steps, and return the state there (the run slot
    /// is free again); `None` if the run ended first.
    #[cfg(test)]
    pub(crate) async fn run_until(
        &self,
        prompt: impl Into<Prompt>,
        pause: &(dyn Fn(&RunState) -> bool + Sync),
    ) -> Option<RunState> {
        let Prompt(prompts) = prompt.into();
        let (limits, mut state) = self
            .start(AgentError::BusyPrompting, None, |_, messages| {
                Ok((messages, prompts, false))
            })
            .ok()?;
        let _guard = RunGuard(&self.shared);
        match run::run(&self.shared, limits, &mut state, Some(pause)).await {
            Some(_) => None,
            None => Some(state),
        }
    }

    /// Run the loop under the time limit, in the run's span; the slot is free again when
    /// this returns or is dropped.
    async fn drive(
        &self,
        _guard: RunGuard<'_>,
        limits: RunLimits,
        mut state: RunState,
    ) -> RunOutcome {
        let shared = &*self.shared;
        let config = shared.config();
        let span = telemetry::run_span(&*config.model);
        let signal = limits.signal.clone();
        let deadline = limits.deadline;
        let mut timed_out = false;
        let messages = {
            let mut run = pin!(run::run(&self.shared, limits, &mut state, None).instrument(span));
            match deadline {
                Some(deadline) => {
                    tokio::select! {
                        messages = &mut run => messages,
                        () = tokio::time::sleep_until(deadline) => {
                            timed_out = true;
                            signal.cancel();
                            run.await
                        }
                    }
                }
                None => run.await,
            }
        };
        // Without a pause hook the run ends, or pauses for approval.
        let messages = messages.unwrap_or_else(|| state.added().to_vec());
        outcome(state, messages, timed_out, &config)
    }
}

/// The tools a paused batch's decisions are checked against: the agent's, as configured now.
pub(crate) fn tool_lookup(config: &Config) -> impl Fn(&str) -> Option<Arc<dyn ToolDefinition>> {
    let tools = Arc::clone(&config.tools);
    move |name| {
        tools
            .get(name)
            .map(|registration| Arc::clone(registration.tool()))
    }
}

/// Go on with a paused batch as `decided` (checked by [`RunState::decided`], the one place
/// decisions are applied): its edits through the whole preflight again, then its pause
/// claimed in `ledger` (a journal's own runs take each decision once and claim nothing),
/// then the state goes on. Nothing changes when this fails.
pub(crate) async fn go_on(
    config: &Config,
    limits: &RunLimits,
    state: &mut RunState,
    decided: Decided,
    ledger: Option<&dyn PauseLedger>,
) -> Result<(), ApprovalError> {
    let decided = preflight_edits(config, limits, state, decided).await?;
    if let (Some(ledger), Some(pause_id)) = (ledger, state.pause_id()) {
        ledger.claim(pause_id).await?;
    }
    state.go_on(decided);
    Ok(())
}

/// Put the edited calls of `decided` (the paused batch of `state`) through their preflight
/// again, with `config`'s tools and hooks under `limits`.
async fn preflight_edits(
    config: &Config,
    limits: &RunLimits,
    state: &RunState,
    decided: Decided,
) -> Result<Decided, ApprovalError> {
    let Some(response) = state.paused_response() else {
        return Ok(decided);
    };
    let dispatcher = Dispatcher::new(
        Arc::clone(&config.tools),
        Arc::clone(&config.hooks),
        Arc::clone(&config.policies),
        config.execution,
        Arc::new(limits.clone()),
        config.capture_content,
    );
    // The hooks see the transcript before the batch, as on the model's path.
    let messages = dispatcher.hook_transcript(state.transcript());
    dispatcher
        .preflight_edits(Arc::clone(response), messages, decided)
        .await
}

/// How a run that stopped driving ended: paused for approval, or its end, with an abort by
/// the time limit reported as such.
pub(crate) fn outcome(
    state: RunState,
    messages: Vec<Message>,
    timed_out: bool,
    config: &Config,
) -> RunOutcome {
    if state.is_paused() {
        let end = state.end().cloned().unwrap_or(RunEnd::Aborted);
        return RunOutcome {
            messages,
            turns: state.turns(),
            end,
            paused: Some(Box::new(state)),
        };
    }
    let end = match state.end() {
        Some(RunEnd::Aborted) | None if timed_out => RunEnd::TimeLimit {
            limit: config.time_limit.unwrap_or_default(),
        },
        Some(end) => end.clone(),
        None => RunEnd::Aborted,
    };
    RunOutcome {
        messages,
        turns: state.turns(),
        end,
        paused: None,
    }
}
