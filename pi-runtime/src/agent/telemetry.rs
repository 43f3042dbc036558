//! `tracing` spans of a run, named and attributed after the OpenTelemetry GenAI semantic
//! conventions, so that a service exporting its spans (e.g. through `tracing-opentelemetry`)
//! sees its agent runs without any OpenTelemetry crate in this one.
//!
//! | span | `otel.name` | covers |
//! |---|---|---|
//! | `invoke_agent` | `invoke_agent` | a run, from the prompt to `agent_end` |
//! | `chat` | `chat {model}` | one model request and its stream (`otel.kind = "client"`) |
//! | `execute_tool` | `execute_tool {tool}` | one call, from preflight to `after_tool_call` |
//!
//! Tool calls run in spawned tasks; their spans are created on the loop's task, inside the
//! run's span, and travel with the tasks, so they nest under the run however the calls are
//! scheduled. A failure sets `error.type` (see [`CallFailure::error_type`]) and
//! `otel.status_code = "error"`; failures the model can fix are DEBUG events, panics and
//! time-outs WARN. Arguments, results and messages are recorded only when the agent is
//! built with [`capture_message_content`](super::AgentBuilder::capture_message_content) or
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
//!
//! With no subscriber, creating a span is one atomic load, and its fields are not computed.

use tracing::field::Empty;
use tracing::{Span, debug, info, info_span, warn};

use super::approval::PendingCall;
use super::failure::CallFailure;
use super::machine::CallOutcome;
use crate::message::{AssistantMessage, ToolCall};
use crate::stream::LanguageModel;

/// The environment variable of the GenAI conventions that opts in to content capture.
pub(crate) const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether the environment opts in to content capture.
pub(crate) fn capture_content_from_env() -> bool {
    std::env::var(CAPTURE_CONTENT_ENV).is_ok_and(|value| value.eq_ignore_ascii_case("true"))
}

/// The span of a run.
pub(crate) fn run_span(model: &dyn LanguageModel) -> Span {
    info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = model.provider(),
        gen_ai.request.model = model.id(),
    )
}

/// The span of one model request, filled in by [`record_response`].
pub(crate) fn chat_span(model: &dyn LanguageModel) -> Span {
    info_span!(
        "chat",
        otel.name = format_args!("chat {}", model.id()),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.provider(),
        gen_ai.request.model = model.id(),
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.output.messages = Empty,
        "error.type" = Empty,
    )
}

/// What a response says about its request: why it ended, its usage, and its error.
pub(crate) fn record_response(span: &Span, message: &AssistantMessage, capture: bool) {
    if span.is_disabled() {
        return;
    }
    let usage = &message.usage;
    // The conventions count cached input as input.
    let input = usage.input + usage.cache_read + usage.cache_write;
    span.record(
        "gen_ai.response.finish_reasons",
        format_args!("[\"{}\"]", message.stop_reason.as_str()),
    );
    span.record("gen_ai.usage.input_tokens", input);
    span.record("gen_ai.usage.output_tokens", usage.output);
    if let Some(id) = &message.response_id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if capture && let Ok(content) = serde_json::to_string(&message.content) {
        span.record("gen_ai.output.messages", content.as_str());
    }
    if message.stop_reason.is_failure() {
        // A provider that knows the HTTP status records it first; this only fills a gap.
        span.record("error.type", message.stop_reason.as_str());
        span.record("otel.status_code", "error");
    }
}

/// The span of one tool call, filled in by [`record_outcome`].
pub(crate) fn tool_span(call: &ToolCall, capture: bool) -> Span {
    let span = info_span!(
        "execute_tool",
        otel.name = format_args!("execute_tool {}", call.name),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        "error.type" = Empty,
    );
    if capture && !span.is_disabled() {
        span.record(
            "gen_ai.tool.call.arguments",
            call.arguments.to_string().as_str(),
        );
    }
    span
}

/// How the call ended, on its span, with an event for a failure.
pub(crate) fn record_outcome(span: &Span, outcome: &CallOutcome, capture: bool) {
    if span.is_disabled() {
        return;
    }
    if capture && let Ok(content) = serde_json::to_string(&outcome.result.content) {
        span.record("gen_ai.tool.call.result", content.as_str());
    }
    let Some(failure) = outcome.failure else {
        return;
    };
    span.record("error.type", failure.error_type());
    span.record("otel.status_code", "error");
    let _entered = span.enter();
    let error_type = failure.error_type();
    match failure {
        CallFailure::Panic | CallFailure::Timeout => {
            warn!("error.type" = error_type, "tool call failed");
        }
        // Failures the model sees and can correct, and cancellations it asked for.
        _ => debug!("error.type" = error_type, "tool call failed"),
    }
}

/// A run paused for approval: an INFO event on the run's span.
pub(crate) fn record_pause<'a>(pending: impl Iterator<Item = &'a PendingCall>) {
    let ids: Vec<&str> = pending.map(|call| call.id.as_str()).collect();
    info!(
        pending = ids.len(),
        pending_ids = ids.join(",").as_str(),
        "run paused for approval"
    );
}
