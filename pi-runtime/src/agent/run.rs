//! The in-memory driver of a run: it performs each [`Effect`] the [`RunState`] asks for
//! (events, queues, model requests, batches, the turn hook) until the run is done.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tracing::Instrument;

use super::AgentEvent;
use super::config::{Config, Shared};
use super::dispatch::{
    BatchOutcome, BatchRun, Dispatcher, HeldCall, RunLimits, guarded, panic_message,
};
use super::failure::REQUEST_ABORTED;
use super::hooks::{FinishedTurn, RequestPlan, TurnControl};
use super::journal::Journal;
use super::outcome::RunEnd;
use super::run_state::{Effect, RunState};
use super::telemetry;
use super::turn_tools::TurnTools;
use crate::message::{AssistantMessage, ContentBlock, Message, StopReason, SystemMessage};
use crate::stream::{
    AssistantEventStream, AssistantMessageEvent, Context, LanguageModel, LiveMessage,
    StreamOptions, ThinkingLevel,
};
use crate::tool::{ConversationTools, ToolSwitch};

/// Drive `state` to its end and return the messages the run added; or, when `pause` says
/// so between two effects or a batch pauses for approval, stop there and return `None` (the
/// state then serializes). With a `journal`, every model response and tool execution is a
/// step of it.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    limits: RunLimits,
    state: &mut RunState,
    pause: Option<&(dyn Fn(&RunState) -> bool + Sync)>,
    journal: Option<&dyn Journal>,
) -> Option<Vec<Message>> {
    let mut driver = Driver {
        shared,
        limits: Arc::new(limits),
        model: None,
        turn: None,
        journal,
    };
    loop {
        if pause.is_some_and(|pause| pause(state)) {
            return None;
        }
        match state.next() {
            Effect::Emit => {
                if let Some(event) = state.take_event() {
                    shared.bus.emit(event).await;
                }
            }
            Effect::Declare => {
                // A request follows every declaration: pin its configuration and tools now,
                // so the request offers (and dispatch finds) exactly the tools declared.
                let turn = driver.pin_turn();
                let executable = turn.tools.definitions();
                state.declare(&executable);
                let opening = state.opening_tools();
                let mut conversation = shared.bus.state();
                if conversation.opening_tools.is_none() {
                    conversation.opening_tools = opening.cloned();
                }
            }
            Effect::PollSteering => {
                let queued = shared.bus.state().poll_steering();
                state.queued(queued);
            }
            Effect::PollFollowUps => {
                let queued = shared.bus.state().poll_follow_ups();
                state.queued(queued);
            }
            Effect::Request => {
                let response = driver.respond(state).await;
                state.responded(response);
            }
            Effect::RunBatch(response) => match driver.run_batch(state, response).await {
                BatchRun::Finished(batch) => driver.batch_finished(state, batch),
                BatchRun::Held(calls) => state.batch_held(calls),
            },
            Effect::ResumeBatch(response, calls) => {
                let batch = driver.resume_batch(state, response, calls).await;
                driver.batch_finished(state, batch);
            }
            Effect::Pause => {
                telemetry::record_pause(state.pending_approvals());
                return None;
            }
            Effect::FinishTurn => {
                let control = driver.finish_turn(state).await;
                state.turn_finished(control);
            }
            Effect::Done(messages) => return Some(messages),
        }
    }
}

/// The configuration and tools one turn uses from its request to its batch.
struct Turn {
    config: Arc<Config>,
    tools: Arc<TurnTools>,
}

/// What the driver keeps besides the state: the run's limits, the model a
/// `prepare_request` hook chose, and the current turn's pinned configuration.
struct Driver<'a> {
    shared: &'a Arc<Shared>,
    /// Shared with every batch's dispatcher.
    limits: Arc<RunLimits>,
    model: Option<Arc<dyn LanguageModel>>,
    turn: Option<Turn>,
    journal: Option<&'a dyn Journal>,
}

impl Driver<'_> {
    async fn emit(&self, event: AgentEvent) {
        self.shared.bus.emit(event).await;
    }

    /// Pin the agent's configuration as it is now for the next request.
    fn pin_turn(&mut self) -> &Turn {
        self.turn = None;
        self.turn()
    }

    /// The current turn, pinned at its declaration; a state resumed after that pins the
    /// agent's configuration now.
    fn turn(&mut self) -> &Turn {
        self.turn.get_or_insert_with(|| {
            let config = self.shared.config();
            let tools = Arc::clone(&config.tools);
            Turn { config, tools }
        })
    }

    /// Ask the model and stream its response into events, `message_end` included.
    async fn respond(&mut self, state: &mut RunState) -> Arc<AssistantMessage> {
        let message = match self.journal {
            Some(journal) => self.respond_journaled(journal, state).await,
            None => self.response(state).await,
        };
        self.emit(AgentEvent::MessageEnd {
            message: Arc::clone(&message).into(),
        })
        .await;
        message
    }

    /// The response as a step of `journal`. A replayed response arrives whole: its
    /// `message_start` is emitted here, with no updates.
    async fn respond_journaled(
        &mut self,
        journal: &dyn Journal,
        state: &mut RunState,
    ) -> Arc<AssistantMessage> {
        let limits = Arc::clone(&self.limits);
        let signal = &limits.signal;
        let name = format!("turn {}: model response", state.turns() + 1);
        let mut ran = false;
        let work = async {
            ran = true;
            serde_json::to_value(&*self.response(state).await).unwrap_or(Value::Null)
        };
        let recorded = journal.step(name, Box::pin(work), &limits).await;
        let model = Arc::clone(&self.turn().config.model);
        let message = match recorded.map(serde_json::from_value::<AssistantMessage>) {
            Ok(Ok(message)) => Arc::new(message),
            Ok(Err(error)) => {
                let error = format!("the journal's record of the response is unreadable: {error}");
                Arc::new(failed_message(&*model, StopReason::Error, &error))
            }
            Err(error) => {
                signal.cancel();
                Arc::new(failed_message(&*model, StopReason::Aborted, &error.0))
            }
        };
        if !ran {
            self.emit(AgentEvent::MessageStart {
                message: Arc::clone(&message).into(),
            })
            .await;
        }
        message
    }

    /// Ask the model and stream its response into events, up to `message_end`.
    async fn response(&mut self, state: &mut RunState) -> Arc<AssistantMessage> {
        let config = Arc::clone(&self.turn().config);
        let model = self
            .model
            .clone()
            .unwrap_or_else(|| Arc::clone(&config.model));
        if self.limits.signal.is_cancelled() {
            let mut aborted = failed_message(&*model, StopReason::Aborted, REQUEST_ABORTED);
            aborted.content.clear();
            return self.started(aborted).await;
        }
        let span = telemetry::chat_span(&*model);
        let message = self
            .stream_response(state, &config, model)
            .instrument(span.clone())
            .await;
        telemetry::record_response(&span, &message, config.capture_content);
        message
    }

    /// Build the request from the turn's tools, let `prepare_request` change it, and pin
    /// the tools it finally offers.
    async fn plan_request(
        &mut self,
        state: &mut RunState,
        config: &Config,
        model: Arc<dyn LanguageModel>,
    ) -> Result<RequestPlan, String> {
        let turn = self.turn();
        let tools = Arc::clone(&turn.tools);
        let system_prompt = config.system_prompt(&tools);
        let context = Context {
            system_prompt,
            messages: state.transcript().to_vec(),
            tools: tools.definitions(),
        };
        let thinking_level = state.thinking_level().unwrap_or(config.thinking_level);
        let plan = RequestPlan {
            context,
            model,
            thinking_level,
            tool_choice: config.tool_choice.clone(),
            parallel_tool_calls: config.parallel_tool_calls,
            max_tool_calls: config.max_tool_calls,
        };
        let Some(prepare) = &config.hooks.prepare_request else {
            return Ok(with_declarations(plan, state));
        };
        let built_prompt = plan.context.system_prompt.clone();
        let declared: Vec<String> = (plan.context.tools.iter())
            .map(|tool| tool.name.clone())
            .collect();
        let mut plan = guarded(|| prepare(plan)).await?;
        self.model = Some(Arc::clone(&plan.model));
        state.set_thinking_level(plan.thinking_level);
        // The tools the request offers are the tools dispatch finds, and the prompt's tool
        // section lists them unless the hook wrote its own prompt.
        let unchanged = (plan.context.tools.iter().map(|tool| tool.name.as_str()))
            .eq(declared.iter().map(String::as_str));
        if !unchanged {
            let offered =
                TurnTools::named(Arc::clone(config.tools.registry()), &plan.context.tools);
            if plan.context.system_prompt == built_prompt {
                plan.context.system_prompt = config.system_prompt(&offered);
            }
            if let Some(turn) = &mut self.turn {
                turn.tools = Arc::new(offered);
            }
            // The hook's list is this request's whole tool set: it stands in for what the
            // transcript declares.
            plan.context.messages = without_tool_changes(plan.context.messages);
            return Ok(plan);
        }
        Ok(with_declarations(plan, state))
    }

    /// Plan and stream one response, emitting `message_start` and the updates (not
    /// `message_end`).
    async fn stream_response(
        &mut self,
        state: &mut RunState,
        config: &Config,
        model: Arc<dyn LanguageModel>,
    ) -> Arc<AssistantMessage> {
        let plan = match self.plan_request(state, config, Arc::clone(&model)).await {
            Ok(plan) => plan,
            Err(panic) => {
                let message = failed_message(&*model, self.failure_reason(), &panic);
                return self.started(message).await;
            }
        };
        let RequestPlan {
            context,
            model,
            thinking_level,
            tool_choice,
            parallel_tool_calls,
            max_tool_calls,
        } = plan;
        let options = StreamOptions {
            signal: self.limits.signal.clone(),
            reasoning: (thinking_level != ThinkingLevel::Off).then_some(thinking_level),
            max_tokens: config.max_tokens,
            tool_choice,
            parallel_tool_calls,
            max_tool_calls,
            ..StreamOptions::default()
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| model.stream(context, options))) {
            Ok(stream) => self.drain(&*model, stream).await,
            Err(panic) => {
                let reason = self.failure_reason();
                let message = failed_message(&*model, reason, &panic_message(&*panic));
                self.started(message).await
            }
        }
    }

    /// Turn a response stream into events until its final message.
    async fn drain(
        &self,
        model: &dyn LanguageModel,
        mut stream: AssistantEventStream,
    ) -> Arc<AssistantMessage> {
        // The writer keeps this message current; every update only hands the handle on.
        let mut partial: Option<LiveMessage> = None;
        loop {
            let event = match AssertUnwindSafe(stream.next()).catch_unwind().await {
                Ok(Some(event)) => event,
                Ok(None) => {
                    let text = "the model's response ended without a final event";
                    return self.fail_stream(model, partial, text.to_owned()).await;
                }
                Err(panic) => {
                    return self
                        .fail_stream(model, partial, panic_message(&*panic))
                        .await;
                }
            };
            match event {
                AssistantMessageEvent::Start { message } => {
                    self.emit(AgentEvent::MessageStart {
                        message: message.snapshot().into(),
                    })
                    .await;
                    partial = Some(message);
                }
                AssistantMessageEvent::Done { message, .. }
                | AssistantMessageEvent::Error { error: message, .. } => {
                    if partial.is_none() {
                        self.emit(AgentEvent::MessageStart {
                            message: Arc::clone(&message).into(),
                        })
                        .await;
                    }
                    return message;
                }
                event => {
                    // Events before `start` have nothing to update (pi ignores them too).
                    if let Some(current) = &partial {
                        self.emit(AgentEvent::MessageUpdate {
                            message: current.clone(),
                            assistant_message_event: event,
                        })
                        .await;
                    }
                }
            }
        }
    }

    /// The response broke off without a final event: keep what arrived, marked failed.
    async fn fail_stream(
        &self,
        model: &dyn LanguageModel,
        partial: Option<LiveMessage>,
        error: String,
    ) -> Arc<AssistantMessage> {
        let reason = self.failure_reason();
        match partial {
            Some(message) => {
                let mut message = message.snapshot();
                message.stop_reason = reason;
                message.error_message = Some(error);
                Arc::new(message)
            }
            None => self.started(failed_message(model, reason, &error)).await,
        }
    }

    /// Emit `message_start` for a response that never started on its own.
    async fn started(&self, message: AssistantMessage) -> Arc<AssistantMessage> {
        let message = Arc::new(message);
        self.emit(AgentEvent::MessageStart {
            message: Arc::clone(&message).into(),
        })
        .await;
        message
    }

    fn failure_reason(&self) -> StopReason {
        if self.limits.signal.is_cancelled() {
            StopReason::Aborted
        } else {
            StopReason::Error
        }
    }

    /// Record a finished batch, and end the run after this turn when a tool's calls failed
    /// more often than its retry budget allows. The budget counts the failures the run's
    /// result messages record and those of the calls that leave none (nested calls,
    /// `run_tool_call`), which the dispatcher counted meanwhile; both are in the state, so a
    /// run resumed from a saved state keeps counting where it stopped.
    fn batch_finished(&mut self, state: &mut RunState, batch: BatchOutcome) {
        let nested = (self.limits.nested_failures.as_ref()).map_or_else(Vec::new, |f| f.take());
        let mut retried: Vec<String> = Vec::new();
        let answered = (batch.results.iter().zip(&batch.records))
            .filter(|(_, record)| record.failure.is_some_and(|f| f.counts_as_retry()))
            .map(|(result, _)| &result.tool_name);
        for name in answered.chain(nested.iter().map(|(name, _)| name)) {
            if !retried.contains(name) {
                retried.push(name.clone());
            }
        }
        state.batch_finished(batch);
        state.nested_failed(nested);
        let turn = self.turn();
        for name in retried {
            let Some(tool) = turn.tools.get_nested(&name) else {
                continue;
            };
            let Some(retries) = turn.config.policies.of(tool.as_ref()).retries else {
                continue;
            };
            if state.retry_failures(&name) > retries as usize {
                state.end_after_turn(RunEnd::RetriesExhausted {
                    tool: name,
                    retries,
                });
                return;
            }
        }
    }

    /// The dispatcher of the current turn's batch.
    fn dispatcher(&mut self) -> Dispatcher {
        let limits = Arc::clone(&self.limits);
        let shared = self.shared;
        let turn = self.turn();
        Dispatcher::new(
            Arc::clone(&turn.tools),
            Arc::clone(&turn.config.hooks),
            Arc::clone(&turn.config.policies),
            turn.config.execution,
            limits,
            turn.config.capture_content,
        )
        .with_switch(Arc::clone(shared) as Arc<dyn ToolSwitch>)
    }

    async fn run_batch(&mut self, state: &RunState, response: Arc<AssistantMessage>) -> BatchRun {
        let dispatcher = self.dispatcher();
        // The hooks see the transcript before this batch: up to and including the response.
        let messages = dispatcher.hook_transcript(state.transcript());
        dispatcher
            .run_batch(response, messages, &self.shared.bus, self.journal)
            .await
    }

    /// Go on with a batch that was held for approval and is now decided.
    async fn resume_batch(
        &mut self,
        state: &RunState,
        response: Arc<AssistantMessage>,
        calls: Vec<HeldCall>,
    ) -> BatchOutcome {
        let dispatcher = self.dispatcher();
        let messages = dispatcher.hook_transcript(state.transcript());
        dispatcher
            .resume_batch(response, calls, messages, &self.shared.bus, self.journal)
            .await
    }

    async fn finish_turn(&mut self, state: &RunState) -> TurnControl {
        let signal = self.limits.signal.clone();
        let config = Arc::clone(&self.turn().config);
        let (Some(finish), Some((response, results))) =
            (&config.hooks.finish_turn, state.finishing_turn())
        else {
            return TurnControl::Proceed;
        };
        let turn = FinishedTurn {
            message: Arc::clone(response),
            tool_results: results.to_vec(),
            new_messages: state.new_messages(),
            turn: state.turns(),
            signal,
            tools: ConversationTools::new(Arc::clone(self.shared) as Arc<dyn ToolSwitch>),
        };
        // A panicking turn hook ends the run: it may be the hook that enforces a limit.
        guarded(|| finish(turn)).await.unwrap_or(TurnControl::End)
    }
}

/// The assistant message of a request that failed before or while streaming: an empty
/// text block, the stop reason and the error, as pi writes it.
fn failed_message(model: &dyn LanguageModel, reason: StopReason, error: &str) -> AssistantMessage {
    let mut message = AssistantMessage::empty(model.api(), model.provider(), model.id());
    message.content.push(ContentBlock::text(""));
    message.stop_reason = reason;
    message.error_message = Some(error.to_owned());
    message
}

/// The request as the transcript declares its tools: the conversation's opening tools are
/// the request's own list (the leading system message), and the transcript's system
/// messages change them from there. `plan.context.tools` (the turn's tools, what hooks see)
/// is what that replays to.
fn with_declarations(mut plan: RequestPlan, state: &RunState) -> RequestPlan {
    if let Some(opening) = state.opening_tools() {
        let changed = state
            .transcript()
            .iter()
            .any(|m| m.as_system().is_some_and(SystemMessage::changes_tools));
        if changed {
            plan.context.tools = opening.to_vec();
        }
    }
    plan
}

/// `messages` with the tool fields of their system messages removed.
fn without_tool_changes(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .map(|message| match message {
            Message::System(system) if system.changes_tools() => SystemMessage {
                tools_added: None,
                tools_removed: None,
                ..SystemMessage::clone(&system)
            }
            .into(),
            other => other,
        })
        .collect()
}
