//! The run loop (SPEC §5.1): turns of "stream a response, run its batch" until nothing asks
//! for another request, with steering and follow-up queues and the per-turn hooks.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::AgentEvent;
use super::batch::run_batch;
use super::call::{CallScope, guarded, panic_message};
use super::config::{Config, Shared};
use super::hooks::{FinishedTurn, RequestPlan, TurnControl};
use super::telemetry;
use crate::message::{AssistantMessage, ContentBlock, Message, StopReason, ToolResultMessage};
use crate::stream::{
    AssistantMessageEvent, Context, LanguageModel, LiveMessage, StreamOptions, ThinkingLevel,
};

/// The text of the response the loop makes up when the signal fired before a request
/// (SPEC §11.3.5), as providers word it.
const REQUEST_ABORTED: &str = "Request was aborted";

/// Where a run starts.
pub(crate) struct RunInput {
    /// The transcript so far.
    pub(crate) messages: Vec<Message>,
    /// New messages to add first (empty for a continue-run).
    pub(crate) prompts: Vec<Message>,
    /// The caller already took the first messages from the steering queue.
    pub(crate) skip_initial_steering: bool,
    /// When the time limit cancels the run, if it has one.
    pub(crate) deadline: Option<Instant>,
}

/// Run the loop to its end and return the messages it added.
pub(crate) async fn run(
    shared: &Shared,
    signal: CancellationToken,
    input: RunInput,
) -> Vec<Message> {
    let mut run = Run {
        shared,
        signal,
        first_new: input.messages.len(),
        context: input.messages,
        deadline: input.deadline,
        model: None,
        thinking_level: None,
    };
    run.emit(AgentEvent::AgentStart).await;
    run.emit(AgentEvent::TurnStart).await;
    for prompt in input.prompts {
        run.add_message(prompt).await;
    }
    let mut pending = if input.skip_initial_steering {
        Vec::new()
    } else {
        shared.bus.state().poll_steering()
    };
    let mut first_turn = true;
    let mut forced = false;
    'run: loop {
        let mut more_tool_calls = true;
        while more_tool_calls || forced || !pending.is_empty() {
            if first_turn {
                first_turn = false;
            } else {
                if pending.is_empty() {
                    pending = shared.bus.state().poll_steering();
                }
                run.emit(AgentEvent::TurnStart).await;
            }
            forced = false;
            for message in pending.drain(..) {
                run.add_message(message).await;
            }
            let config = shared.config();
            let message = run.respond(&config).await;
            if message.stop_reason.is_failure() {
                // Calls in a failed response never run (SPEC §5.8); the hook's answer cannot
                // keep the run going.
                run.finish_turn(&config, &message, &[]).await;
                run.emit(AgentEvent::TurnEnd {
                    message,
                    tool_results: Vec::new(),
                })
                .await;
                break 'run;
            }
            let mut results = Vec::new();
            more_tool_calls = false;
            if message.tool_calls().next().is_some() {
                let batch = run.run_batch(&config, Arc::clone(&message)).await;
                more_tool_calls = !batch.terminate;
                run.context
                    .extend(batch.results.iter().cloned().map(Message::from));
                results = batch.results;
            }
            let control = run.finish_turn(&config, &message, &results).await;
            run.emit(AgentEvent::TurnEnd {
                message,
                tool_results: results,
            })
            .await;
            match control {
                TurnControl::End => break 'run,
                TurnControl::Continue => forced = true,
                TurnControl::Proceed => {}
            }
            pending = shared.bus.state().poll_steering();
        }
        pending = shared.bus.state().poll_follow_ups();
        if pending.is_empty() {
            break;
        }
    }
    let messages = run.context.split_off(run.first_new);
    shared
        .bus
        .emit(AgentEvent::AgentEnd {
            messages: messages.clone(),
        })
        .await;
    messages
}

/// One run's working state.
struct Run<'a> {
    shared: &'a Shared,
    signal: CancellationToken,
    /// The transcript the model sees; what this run added starts at `first_new`.
    context: Vec<Message>,
    first_new: usize,
    deadline: Option<Instant>,
    /// Replacements `prepare_request` made for the rest of the run.
    model: Option<Arc<dyn LanguageModel>>,
    thinking_level: Option<ThinkingLevel>,
}

impl Run<'_> {
    async fn emit(&self, event: AgentEvent) {
        self.shared.bus.emit(event).await;
    }

    /// A prompt or a queued message: emitted, then part of the transcript.
    async fn add_message(&mut self, message: Message) {
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await;
        self.context.push(message);
    }

    /// Ask the model and stream its response into events; the final message joins the
    /// transcript (which shares it with the events and the caller).
    async fn respond(&mut self, config: &Config) -> Arc<AssistantMessage> {
        let model = self
            .model
            .clone()
            .unwrap_or_else(|| Arc::clone(&config.model));
        let message = if self.signal.is_cancelled() {
            let mut aborted = failed_message(&*model, StopReason::Aborted, REQUEST_ABORTED);
            aborted.content.clear();
            self.started(aborted).await
        } else {
            let span = telemetry::chat_span(&*model);
            let message = self
                .stream_response(config, model)
                .instrument(span.clone())
                .await;
            telemetry::record_response(&span, &message, config.capture_content);
            message
        };
        self.emit(AgentEvent::MessageEnd {
            message: Arc::clone(&message).into(),
        })
        .await;
        self.context.push(Arc::clone(&message).into());
        message
    }

    /// Stream one response, emitting `message_start` and the updates (not `message_end`).
    async fn stream_response(
        &mut self,
        config: &Config,
        mut model: Arc<dyn LanguageModel>,
    ) -> Arc<AssistantMessage> {
        let mut context = Context {
            system_prompt: config.system_prompt(),
            messages: self.context.clone(),
            tools: config
                .tools
                .active()
                .map(|tool| tool.definition().clone())
                .collect(),
        };
        let mut thinking_level = self.thinking_level.unwrap_or(config.thinking_level);
        if let Some(prepare) = &config.hooks.prepare_request {
            let plan = RequestPlan {
                context,
                model: Arc::clone(&model),
                thinking_level,
            };
            match guarded(|| prepare(plan)).await {
                Ok(plan) => {
                    context = plan.context;
                    model = plan.model;
                    thinking_level = plan.thinking_level;
                    self.model = Some(Arc::clone(&model));
                    self.thinking_level = Some(thinking_level);
                }
                Err(panic) => {
                    return self
                        .started(failed_message(&*model, self.failure_reason(), &panic))
                        .await;
                }
            }
        }
        let options = StreamOptions {
            signal: self.signal.clone(),
            reasoning: (thinking_level != ThinkingLevel::Off).then_some(thinking_level),
            max_tokens: config.max_tokens,
            ..StreamOptions::default()
        };
        let mut stream =
            match std::panic::catch_unwind(AssertUnwindSafe(|| model.stream(context, options))) {
                Ok(stream) => stream,
                Err(panic) => {
                    let reason = self.failure_reason();
                    let message = failed_message(&*model, reason, &panic_message(&*panic));
                    return self.started(message).await;
                }
            };
        // The writer keeps this message current; every update only hands the handle on.
        let mut partial: Option<LiveMessage> = None;
        loop {
            let event = match AssertUnwindSafe(stream.next()).catch_unwind().await {
                Ok(Some(event)) => event,
                Ok(None) => {
                    let text = "the model's response ended without a final event";
                    return self.fail_stream(&*model, partial, text.to_owned()).await;
                }
                Err(panic) => {
                    return self
                        .fail_stream(&*model, partial, panic_message(&*panic))
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
        if self.signal.is_cancelled() {
            StopReason::Aborted
        } else {
            StopReason::Error
        }
    }

    async fn run_batch(
        &self,
        config: &Config,
        message: Arc<AssistantMessage>,
    ) -> super::batch::BatchOutcome {
        let messages: Arc<[Message]> = if config.hooks.wants_transcript() {
            Arc::from(self.context.as_slice())
        } else {
            Arc::from(Vec::new())
        };
        let scope = CallScope {
            hooks: Arc::clone(&config.hooks),
            assistant: message,
            messages,
            signal: self.signal.clone(),
            deadline: self.deadline,
            capture_content: config.capture_content,
        };
        run_batch(&config.tools, config.execution, scope, &self.shared.bus).await
    }

    async fn finish_turn(
        &self,
        config: &Config,
        message: &Arc<AssistantMessage>,
        results: &[Arc<ToolResultMessage>],
    ) -> TurnControl {
        let Some(finish) = &config.hooks.finish_turn else {
            return TurnControl::Proceed;
        };
        let turn = FinishedTurn {
            message: Arc::clone(message),
            tool_results: results.to_vec(),
            new_messages: self.context.len() - self.first_new,
            signal: self.signal.clone(),
        };
        // A panicking turn hook ends the run: it may be the hook that enforces a limit.
        guarded(|| finish(turn)).await.unwrap_or(TurnControl::End)
    }
}

/// The assistant message of a request that failed before or while streaming (SPEC §5.13).
fn failed_message(model: &dyn LanguageModel, reason: StopReason, error: &str) -> AssistantMessage {
    let mut message = AssistantMessage::empty(model.api(), model.provider(), model.id());
    message.content.push(ContentBlock::text(""));
    message.stop_reason = reason;
    message.error_message = Some(error.to_owned());
    message
}
