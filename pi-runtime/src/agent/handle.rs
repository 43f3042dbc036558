//! `Agent`: a cheap, cloneable handle that runs prompts through the loop, keeps the
//! transcript and state, and delivers events (SPEC §5.13).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::AgentEvent;
use super::builder::AgentBuilder;
use super::call::{self, CallScope, Preflight};
use super::config::Shared;
use super::error::AgentError;
use super::run::{self, RunInput};
use super::sink::{EventStream, SubscriptionId};
use super::state::AgentState;
use super::telemetry;
use crate::message::{
    AssistantMessage, ContentBlock, Message, ToolCall, UserContent, UserMessage, now_ms,
};
use crate::stream::{LanguageModel, ThinkingLevel};
use crate::tool::{RegistryError, ToolRegistry, ToolResult};

/// What [`Agent::prompt`] accepts: text, a user message, any message, or several.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt(Vec<Message>);

impl Prompt {
    /// Text followed by images, as one user message.
    pub fn with_images(text: impl Into<String>, images: Vec<ContentBlock>) -> Self {
        let mut content = vec![ContentBlock::text(text)];
        content.extend(images);
        Prompt(vec![Message::from(UserMessage {
            content: UserContent::Blocks(content),
            timestamp: now_ms(),
        })])
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt(vec![UserMessage::text(text).into()])
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt(vec![UserMessage::text(text).into()])
    }
}

impl From<UserMessage> for Prompt {
    fn from(message: UserMessage) -> Self {
        Prompt(vec![message.into()])
    }
}

impl From<Message> for Prompt {
    fn from(message: Message) -> Self {
        Prompt(vec![message])
    }
}

impl From<Vec<Message>> for Prompt {
    fn from(messages: Vec<Message>) -> Self {
        Prompt(messages)
    }
}

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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Shared,
    busy: watch::Sender<bool>,
}

/// Marks the agent idle when a run ends, even if its future was dropped half-way; then it
/// also cancels the run's signal, so that tasks the tools started see the run is over.
struct RunGuard<'a>(&'a Inner);

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.0.shared.bus.state();
            if let Some(signal) = state.run_signal.take() {
                signal.cancel();
            }
            state.view.is_streaming = false;
            state.view.streaming_message = None;
            state.view.pending_tool_calls.clear();
        }
        self.0.busy.send_replace(false);
    }
}

impl Agent {
    /// Start building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    pub(crate) fn from_shared(shared: Shared) -> Self {
        Agent {
            inner: Arc::new(Inner {
                shared,
                busy: watch::Sender::new(false),
            }),
        }
    }

    /// Add the prompt to the transcript and run until the model is done. Returns the
    /// messages the run added (the prompt first). Failures inside the run (a failed
    /// request, a failing tool) are in those messages, not an `Err`.
    ///
    /// # Errors
    /// A run is already in progress.
    pub async fn prompt(&self, prompt: impl Into<Prompt>) -> Result<Vec<Message>, AgentError> {
        let Prompt(prompts) = prompt.into();
        let (signal, messages) = self.start(AgentError::BusyPrompting)?;
        Ok(self
            .drive(
                signal,
                RunInput {
                    messages,
                    prompts,
                    skip_initial_steering: false,
                    deadline: None,
                },
            )
            .await)
    }

    /// Run again from the current transcript (pi's `continue()`): after a tool result or a
    /// user message, ask the model; after an assistant message, deliver queued steering
    /// (else follow-up) messages as prompts.
    ///
    /// # Errors
    /// A run is in progress, the transcript is empty, or it ends with an assistant message
    /// and nothing is queued.
    pub async fn continue_run(&self) -> Result<Vec<Message>, AgentError> {
        let (signal, messages) = self.start(AgentError::BusyContinuing)?;
        let input = {
            let mut state = self.inner.shared.bus.state();
            match messages.last() {
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
                        Ok(RunInput {
                            messages,
                            prompts,
                            skip_initial_steering: skip,
                            deadline: None,
                        })
                    }
                }
                Some(_) => Ok(RunInput {
                    messages,
                    prompts: Vec::new(),
                    skip_initial_steering: false,
                    deadline: None,
                }),
            }
        };
        match input {
            Ok(input) => Ok(self.drive(signal, input).await),
            Err(error) => {
                drop(RunGuard(&self.inner));
                Err(error)
            }
        }
    }

    /// Cancel the current run: running tools see the signal, the next model request is not
    /// made, and the run ends with an `aborted` response. Does nothing while idle.
    pub fn abort(&self) {
        if let Some(signal) = &self.inner.shared.bus.state().run_signal {
            signal.cancel();
        }
    }

    /// Queue a message for the next drain point of the current run (after the current
    /// turn's tools ran).
    pub fn steer(&self, message: impl Into<Message>) {
        self.inner
            .shared
            .bus
            .state()
            .steering
            .push_back(message.into());
    }

    /// Queue a message for when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        self.inner
            .shared
            .bus
            .state()
            .follow_ups
            .push_back(message.into());
    }

    /// Call `listener` for every event, in order; each call's future is awaited before the
    /// run goes on (so a listener may apply back-pressure). The listener gets the event by
    /// reference: copy what the returned future needs.
    pub fn subscribe<F, Fut>(&self, listener: F) -> SubscriptionId
    where
        F: Fn(&AgentEvent) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.inner
            .shared
            .bus
            .subscribe(Arc::new(move |event| Box::pin(listener(event))))
    }

    /// Remove a subscription; `false` if it was already gone.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.inner.shared.bus.unsubscribe(id)
    }

    /// Every event from now on, as a stream. The run never waits for it; a reader that
    /// falls far behind misses only `message_update` events, whose changes the next one's
    /// live message shows (see [`EventStream`]).
    pub fn events(&self) -> EventStream {
        self.inner.shared.bus.stream()
    }

    /// A snapshot of the state.
    pub fn state(&self) -> AgentState {
        self.inner.shared.bus.state().view.clone()
    }

    /// The transcript.
    pub fn messages(&self) -> Vec<Message> {
        self.inner.shared.bus.state().view.messages.clone()
    }

    /// Replace the transcript (takes effect at the next run).
    pub fn set_messages(&self, messages: Vec<Message>) {
        self.inner.shared.bus.state().view.messages = messages;
    }

    /// The `error_message` of the last failed turn.
    pub fn error_message(&self) -> Option<String> {
        self.inner.shared.bus.state().view.error_message.clone()
    }

    /// A run is in progress.
    pub fn is_streaming(&self) -> bool {
        self.inner.shared.bus.state().view.is_streaming
    }

    /// Clear the transcript, the queues and the last error.
    ///
    /// # Errors
    /// A run is in progress.
    pub fn reset(&self) -> Result<(), AgentError> {
        let mut state = self.inner.shared.bus.state();
        if state.run_signal.is_some() {
            return Err(AgentError::BusyResetting);
        }
        state.view = AgentState::default();
        state.steering.clear();
        state.follow_ups.clear();
        Ok(())
    }

    /// Change the system prompt (from the next request on).
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.inner
            .shared
            .update_config(|config| config.system_prompt = prompt);
    }

    /// Change the model (from the next request on).
    pub fn set_model(&self, model: Arc<dyn LanguageModel>) {
        self.inner
            .shared
            .update_config(|config| config.model = model);
    }

    /// Change the thinking level (from the next request on).
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.inner
            .shared
            .update_config(|config| config.thinking_level = level);
    }

    /// Make exactly these registered tools active, in this order (from the next request on).
    ///
    /// # Errors
    /// A name that is not registered.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        // A copy: a running turn may still hold the current registry.
        let mut tools = ToolRegistry::clone(&self.inner.shared.config().tools);
        tools.set_active(names)?;
        self.inner
            .shared
            .update_config(|config| config.tools = Arc::new(tools));
        Ok(())
    }

    /// Wait until no run is in progress (returns at once when idle).
    pub async fn wait_for_idle(&self) {
        let mut busy = self.inner.busy.subscribe();
        // `wait_for` only fails when the sender is gone, and `self` keeps it alive.
        let _ = busy.wait_for(|busy| !*busy).await;
    }

    /// Run one call outside the loop with the agent's tools and hooks (SPEC §3.8): the same
    /// prepare → execute → finalize path, no events, no messages, never failing. Tools that
    /// call other tools use it so that hooks (permissions) apply.
    pub async fn run_tool_call(&self, call: ToolCall) -> ToolResult {
        let config = self.inner.shared.config();
        let signal = self
            .inner
            .shared
            .bus
            .state()
            .run_signal
            .clone()
            .unwrap_or_default();
        let mut assistant = AssistantMessage::empty(
            config.model.api(),
            config.model.provider(),
            config.model.id(),
        );
        assistant.content.push(ContentBlock::ToolCall(call.clone()));
        let scope = CallScope {
            hooks: Arc::clone(&config.hooks),
            assistant: Arc::new(assistant),
            messages: Arc::from(self.messages()),
            signal,
            deadline: None,
            capture_content: config.capture_content,
        };
        match call::prepare(&call, &config.tools, &scope).await {
            Preflight::Immediate(outcome) => outcome.result,
            Preflight::Ready(ready) => {
                call::execute(ready, &call, &scope, |_| std::future::ready(()))
                    .await
                    .result
            }
        }
    }

    /// Claim the agent for a run: its signal and the transcript to start from.
    fn start(&self, busy: AgentError) -> Result<(CancellationToken, Vec<Message>), AgentError> {
        let mut state = self.inner.shared.bus.state();
        if state.run_signal.is_some() {
            return Err(busy);
        }
        let signal = CancellationToken::new();
        state.run_signal = Some(signal.clone());
        state.view.is_streaming = true;
        state.view.error_message = None;
        self.inner.busy.send_replace(true);
        Ok((signal, state.view.messages.clone()))
    }

    /// Run the loop under the time limit, in the run's span; the agent is idle again when
    /// this returns or is dropped.
    async fn drive(&self, signal: CancellationToken, mut input: RunInput) -> Vec<Message> {
        let _guard = RunGuard(&self.inner);
        let shared = &self.inner.shared;
        let config = shared.config();
        let deadline = config
            .time_limit
            .map(|limit| tokio::time::Instant::now() + limit);
        input.deadline = deadline;
        let span = telemetry::run_span(&*config.model);
        let mut run = pin!(run::run(shared, signal.clone(), input).instrument(span));
        if let Some(deadline) = deadline {
            tokio::select! {
                messages = &mut run => return messages,
                () = tokio::time::sleep_until(deadline) => signal.cancel(),
            }
        }
        run.await
    }
}
