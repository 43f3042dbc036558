//! The in-memory driver of a run: it performs each [`Effect`] the [`RunState`] asks for
//! (events, queues, model requests, the batch's preflights and executions, the turn hook)
//! until the run is done. The journaled driver (`journaled.rs`) performs the same effects
//! except the model requests and the executions, which it makes steps of a journal.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tracing::{Instrument, Span};

use super::AgentEvent;
use super::config::{AgentDefinition, Config, Shared};
use super::dispatch::{BatchCalls, Dispatcher, JobReport, RunLimits};
use super::end::RunEnd;
use super::failure::{CallFailure, REQUEST_ABORTED};
use super::guardrail::{GuardrailInput, GuardrailOutput, Guardrails};
use super::hooks::{FinishedTurn, RequestPlan, TurnControl};
use super::machine::{CallOutcome, Effect, ReadyCall, RunState, ToolNote};
use super::panics::{guarded, panic_message};
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
/// state then serializes).
pub(crate) async fn run(
    shared: &Arc<Shared>,
    limits: RunLimits,
    state: &mut RunState,
    pause: Option<&(dyn Fn(&RunState) -> bool + Sync)>,
) -> Option<Vec<Message>> {
    let mut driver = Driver::new(shared, limits);
    loop {
        if pause.is_some_and(|pause| pause(state)) {
            return None;
        }
        match state.next() {
            Effect::Request => {
                // Most requests have no guardrail to run: they skip its larger future.
                let response = match driver.input_checks(state) {
                    Some(checks) => driver.guarded_respond(state, checks).await,
                    None => Some(driver.respond(state).await),
                };
                if let Some(response) = response {
                    state.responded(response);
                }
            }
            Effect::Execute(calls) => driver.execute(state, calls).await,
            Effect::Pause => {
                driver.paused(state);
                return None;
            }
            Effect::Done(messages) => return Some(messages),
            // Events are the most frequent effect: delivered here, not through `perform`,
            // whose future is as large as its largest arm and is copied on every call.
            Effect::Emit => driver.deliver(state).await,
            effect => driver.perform(state, effect).await,
        }
    }
}

/// The configuration and tools one turn uses from its request to its batch.
struct Turn {
    config: Arc<Config>,
    tools: Arc<TurnTools>,
}

/// The batch the driver runs: its calls' shared scope and one span per call, made with the
/// call's `tool_execution_start` (or, for a batch resumed after its pause, when first
/// needed).
struct DriverBatch {
    response: Arc<AssistantMessage>,
    calls: BatchCalls,
    spans: Vec<Option<Span>>,
}

/// What a driver keeps besides the state: the run's limits, the model a
/// `prepare_request` hook chose, the current turn's pinned configuration, and its batch.
pub(crate) struct Driver<'a> {
    shared: &'a Arc<Shared>,
    /// Shared with every batch's dispatcher.
    pub(crate) limits: Arc<RunLimits>,
    model: Option<Arc<dyn LanguageModel>>,
    turn: Option<Turn>,
    batch: Option<DriverBatch>,
}

impl<'a> Driver<'a> {
    pub(crate) fn new(shared: &'a Arc<Shared>, limits: RunLimits) -> Self {
        Driver {
            shared,
            limits: Arc::new(limits),
            model: None,
            turn: None,
            batch: None,
        }
    }

    pub(crate) fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send + 'static {
        self.shared.emit(event)
    }

    /// Perform the effects every driver performs alike: declarations, queues, the batch's
    /// plan and preflights, the turn hook. Each driver delivers events ([`Effect::Emit`])
    /// with [`Driver::deliver`] itself.
    pub(crate) async fn perform(&mut self, state: &mut RunState, effect: Effect) {
        match effect {
            Effect::Declare => {
                // A request follows every declaration: pin its configuration and tools now,
                // so the request offers (and dispatch finds) exactly the tools declared.
                let turn = self.pin_turn();
                let executable = turn.tools.definitions();
                state.declare(&executable);
                let opening = state.opening_tools();
                let mut conversation = self.shared.conversation();
                if conversation.opening_tools.is_none() {
                    conversation.opening_tools = opening.cloned();
                }
            }
            Effect::PollSteering => {
                let queued = self.shared.conversation().poll_steering();
                state.queued(queued);
            }
            Effect::PollFollowUps => {
                let queued = self.shared.conversation().poll_follow_ups();
                state.queued(queued);
            }
            Effect::PlanBatch(response) => {
                // Calls from outside the loop since the last batch count at this one's end.
                self.report_nested(state);
                let dispatcher = self.dispatcher();
                let plan = dispatcher.plan(&response);
                self.begin_batch(state, &dispatcher, response);
                state.plan_batch(plan);
            }
            Effect::Preflight(call) => {
                let index = call.index();
                let span = self.span(state, call.response(), index);
                let batch = self.batch(state, call.response());
                let preflighted = batch.calls.preflight(call.call()).instrument(span).await;
                state.preflighted(index, preflighted);
            }
            Effect::Wait => {
                // This driver sees every call it starts to its end; calls still running now
                // were started by another (a state saved while they ran): none will answer.
                for call in state.running_calls() {
                    let outcome = CallOutcome::failed(CallFailure::Panic, TASK_ENDED_EARLY);
                    state.executed(call.index(), outcome);
                }
            }
            Effect::FinishTurn => {
                self.batch = None;
                if let Some(end) = self.check_output(state).await {
                    state.trip(end, false);
                }
                let control = self.finish_turn(state).await;
                state.turn_finished(control);
            }
            Effect::Emit
            | Effect::Request
            | Effect::Execute(_)
            | Effect::Pause
            | Effect::Done(_) => {
                unreachable!("each driver performs {effect:?} its own way")
            }
        }
    }

    /// Deliver every queued event, starting each tool call's span with its start and
    /// recording its outcome with its end.
    pub(crate) async fn deliver(&mut self, state: &mut RunState) {
        loop {
            match state.tool_note() {
                Some(ToolNote::Start(index, call)) => {
                    let span = telemetry::tool_span(call, self.capture_content());
                    if let Some(batch) = &mut self.batch
                        && let Some(slot) = batch.spans.get_mut(index)
                    {
                        *slot = Some(span);
                    }
                }
                Some(ToolNote::End(index, call, outcome)) => {
                    let capture = self.capture_content();
                    let span = (self.batch.as_mut())
                        .and_then(|batch| batch.spans.get_mut(index))
                        .and_then(Option::take)
                        .unwrap_or_else(|| telemetry::tool_span(call, capture));
                    telemetry::record_outcome(&span, outcome, capture);
                }
                None => {}
            }
            let delivered = match state.take_event() {
                Some(event) => self.emit(event),
                None => return,
            };
            delivered.await;
        }
    }

    fn capture_content(&mut self) -> bool {
        self.turn().config.capture_content
    }

    /// The paused run's calls on the run's span.
    pub(crate) fn paused(&mut self, state: &RunState) {
        self.batch = None;
        telemetry::record_pause(state.pending_approvals());
    }

    /// Start driving `response`'s batch: its hooks see the transcript before its results.
    fn begin_batch(
        &mut self,
        state: &RunState,
        dispatcher: &Dispatcher,
        response: Arc<AssistantMessage>,
    ) {
        let messages = dispatcher.hook_transcript(state.transcript());
        let spans = vec![None; response.tool_calls().count()];
        self.batch = Some(DriverBatch {
            calls: dispatcher.batch(Arc::clone(&response), messages),
            response,
            spans,
        });
    }

    /// The batch of `response`, made now if this driver did not plan it (a state saved
    /// inside its batch).
    fn batch(&mut self, state: &RunState, response: &Arc<AssistantMessage>) -> &DriverBatch {
        let planned = (self.batch.as_ref()).is_some_and(|b| Arc::ptr_eq(&b.response, response));
        if !planned {
            let dispatcher = self.dispatcher();
            self.begin_batch(state, &dispatcher, Arc::clone(response));
        }
        self.batch
            .as_ref()
            .unwrap_or_else(|| unreachable!("begun above"))
    }

    /// The span of the batch's call `index` (a new one for a call whose span ended with a
    /// paused run).
    fn span(&mut self, state: &RunState, response: &Arc<AssistantMessage>, index: usize) -> Span {
        let capture = self.capture_content();
        let batch = self.batch(state, response);
        if let Some(Some(span)) = batch.spans.get(index) {
            return span.clone();
        }
        let span = response
            .tool_calls()
            .nth(index)
            .map_or_else(Span::none, |call| telemetry::tool_span(call, capture));
        if let Some(batch) = &mut self.batch
            && let Some(slot) = batch.spans.get_mut(index)
        {
            *slot = Some(span.clone());
        }
        span
    }

    /// Execute `calls` beside each other, handing each update and end to the state and
    /// delivering the events they queue as they come.
    async fn execute(&mut self, state: &mut RunState, calls: Vec<ReadyCall>) {
        let Some(first) = calls.first() else {
            return;
        };
        let response = Arc::clone(first.call().response());
        let mut with_spans = Vec::with_capacity(calls.len());
        for call in calls {
            let span = self.span(state, &response, call.index());
            with_spans.push((call, span));
        }
        let mut execution = self.batch(state, &response).calls.execute(with_spans);
        while let Some(report) = execution.next().await {
            match report {
                JobReport::Update(index, partial) => state.updated(index, partial),
                JobReport::Nested(index, event) => state.nested(index, event),
                JobReport::Paused(index, child) => state.sub_agent_paused(index, *child),
                JobReport::HandOff(to) => self.hand_off(state, &to),
                // Only a durable run's calls ask for steps; unanswered, the asking call
                // fails.
                JobReport::Step(_) => {}
                JobReport::Done(index, outcome) => {
                    self.report_nested(state);
                    state.executed(index, outcome);
                }
            }
            self.deliver(state).await;
        }
        // A job that reports no end ended early (its task was lost).
        for call in state.running_calls() {
            let outcome = CallOutcome::failed(CallFailure::Panic, TASK_ENDED_EARLY);
            state.executed(call.index(), outcome);
        }
        self.deliver(state).await;
    }

    /// The execution of `call` in its span, as a future another driver can own (a durable
    /// run's step).
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn job(
        &mut self,
        state: &RunState,
        call: ReadyCall,
        updates: tokio::sync::mpsc::UnboundedSender<JobReport>,
    ) -> (Span, futures::future::BoxFuture<'static, CallOutcome>) {
        let response = Arc::clone(call.call().response());
        let span = self.span(state, &response, call.index());
        let job = self.batch(state, &response).calls.job(call, updates);
        (span, job)
    }

    /// Whether `call`'s tool records its own steps in a durable run (a sub-agent, whose
    /// steps are steps of the run's), so that its execution must not be one step.
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn journals_itself(&mut self, state: &RunState, call: &ReadyCall) -> bool {
        let response = Arc::clone(call.call().response());
        let batch = self.batch(state, &response);
        batch.calls.journals_itself(&call.call().call().name)
    }

    /// Hand the conversation to `to` (a [handoff](super::handoff)): the next request is
    /// its, and so is the conversation after the run.
    pub(crate) fn hand_off(&mut self, state: &mut RunState, to: &AgentDefinition) {
        self.shared.hand_to(to);
        // A model a `prepare_request` hook chose was the previous agent's choice.
        self.model = None;
        state.handed_to(to.config.name.clone());
    }

    /// Hand the state the failures of nested calls counted since the last report, with
    /// their tools' retry budgets, so the batch's end counts them.
    pub(crate) fn report_nested(&mut self, state: &mut RunState) {
        let Some(failures) = &self.limits.nested_failures else {
            return;
        };
        let failures = failures.take();
        if failures.is_empty() {
            return;
        }
        let dispatcher = self.dispatcher();
        for (tool, count) in failures {
            state.nested_failed(&tool, count, dispatcher.retry_budget(&tool));
        }
    }

    /// Pin the agent's configuration as it is now for the next request.
    fn pin_turn(&mut self) -> &Turn {
        self.turn = None;
        self.turn()
    }

    /// The current turn, pinned at its declaration; a state resumed after that pins the
    /// agent's configuration now.
    fn turn(&mut self) -> &Turn {
        if self.turn.is_none() {
            let config = self.shared.config();
            let tools = Arc::clone(&config.tools);
            self.offer(&tools);
            self.turn = Some(Turn { config, tools });
        }
        self.turn
            .as_ref()
            .unwrap_or_else(|| unreachable!("pinned above"))
    }

    /// The turn offers `tools`: calls from outside the loop during the run
    /// ([`Agent::run_tool_call`](super::Agent::run_tool_call)) find the same tools.
    fn offer(&self, tools: &Arc<TurnTools>) {
        self.shared
            .conversation()
            .slot
            .set_turn_tools(Arc::clone(tools));
    }

    /// The input guardrails to run now, with what they check: those of the run's first
    /// request, when the run starts with messages.
    pub(crate) fn input_checks(
        &mut self,
        state: &RunState,
    ) -> Option<(Arc<Guardrails>, GuardrailInput)> {
        if state.turns() > 0
            || self.turn().config.guardrails.input.is_empty()
            || state.input().is_empty()
        {
            return None;
        }
        let guardrails = Arc::clone(&self.turn().config.guardrails);
        let input = GuardrailInput {
            messages: state.input().to_vec(),
            context: self.limits.context.clone(),
        };
        Some((guardrails, input))
    }

    /// [`respond`](Self::respond), with the input guardrails of the run's first request
    /// ([`input_checks`](Self::input_checks)): those that run before it first (if one
    /// trips, the run ends without the request: `None`), then those that run beside it. If
    /// one of those trips, the request is cancelled, and the run ends after its response,
    /// none of whose calls run.
    async fn guarded_respond(
        &mut self,
        state: &mut RunState,
        (guardrails, input): (Arc<Guardrails>, GuardrailInput),
    ) -> Option<Arc<AssistantMessage>> {
        if guardrails.checks_input(false)
            && let Some(end) = guardrails.check_input(false, input.clone()).await
        {
            state.trip(end, true);
            return None;
        }
        if !guardrails.checks_input(true) {
            return Some(self.respond(state).await);
        }
        let mut checks = pin!(guardrails.check_input(true, input));
        let signal = self.limits.signal.clone();
        let (response, trip) = {
            let mut respond = pin!(self.respond(state));
            tokio::select! {
                response = &mut respond => (response, checks.await),
                trip = &mut checks => {
                    if trip.is_some() {
                        // The run ends here: nothing after this request may happen.
                        signal.cancel();
                    }
                    (respond.await, trip)
                }
            }
        };
        if let Some(end) = trip {
            state.trip(end, false);
        }
        Some(response)
    }

    /// The output guardrails' verdict on the turn that is finishing, if its response is an
    /// answer (no tool calls, not failed): the run's end if one trips.
    async fn check_output(&mut self, state: &RunState) -> Option<RunEnd> {
        if self.turn().config.guardrails.output.is_empty() {
            return None;
        }
        let guardrails = Arc::clone(&self.turn().config.guardrails);
        let (response, _) = state.finishing_turn()?;
        let answer = !response.stop_reason.is_failure() && response.tool_calls().next().is_none();
        if !answer {
            return None;
        }
        let output = GuardrailOutput {
            message: Arc::clone(response),
            context: self.limits.context.clone(),
        };
        guardrails.check_output(output).await
    }

    /// Ask the model and stream its response into events, `message_end` included.
    async fn respond(&mut self, state: &mut RunState) -> Arc<AssistantMessage> {
        let message = self.response(state).await;
        self.responded(&message).await;
        message
    }

    /// The response's `message_end`.
    pub(crate) async fn responded(&self, message: &Arc<AssistantMessage>) {
        self.emit(AgentEvent::MessageEnd {
            message: Arc::clone(message).into(),
        })
        .await;
    }

    /// The model the turn's configuration names.
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn configured_model(&mut self) -> Arc<dyn LanguageModel> {
        Arc::clone(&self.turn().config.model)
    }

    /// Ask the model and stream its response into events, up to `message_end`.
    pub(crate) async fn response(&mut self, state: &mut RunState) -> Arc<AssistantMessage> {
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
        let messages = match &config.history {
            Some(filter) => filter.shown(state.transcript()),
            None => state.transcript().to_vec(),
        };
        let context = Context {
            system_prompt,
            messages,
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
            let offered = Arc::new(offered);
            self.offer(&offered);
            if let Some(turn) = &mut self.turn {
                turn.tools = offered;
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
    pub(crate) async fn started(&self, message: AssistantMessage) -> Arc<AssistantMessage> {
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

/// The text of a call whose job ended without reporting an end.
const TASK_ENDED_EARLY: &str = "the tool task ended early";

/// The assistant message of a request that failed before or while streaming: an empty
/// text block, the stop reason and the error, as pi writes it.
pub(crate) fn failed_message(
    model: &dyn LanguageModel,
    reason: StopReason,
    error: &str,
) -> AssistantMessage {
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
