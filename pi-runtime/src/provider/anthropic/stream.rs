//! Stream parsing (SSE events -> assistant-message events) for Anthropic Messages
//! (`anthropic-messages`).
//!
//! Blocks are addressed by the event's `index` and each ends at its own
//! `content_block_stop`, so events interleave start/delta/end per block.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::wire;
use crate::json::{PartialJsonParser, parse_tool_call_arguments};
use crate::message::{StopReason, ToolCall, Usage};
use crate::provider::wire::StreamParser;
use crate::stream::MessageWriter;

/// A block between its `content_block_start` and `content_block_stop`.
#[derive(Debug)]
struct OpenBlock {
    content_index: usize,
    /// Tool calls only.
    call: Option<CallState>,
}

#[derive(Debug)]
struct CallState {
    arguments: PartialJsonParser,
    /// Whether any `input_json_delta` arrived (empty ones included).
    streamed: bool,
}

/// The parser of one Messages response.
#[derive(Debug, Default)]
pub(crate) struct EventParser {
    /// The requested model: a `message_start` naming another one sets `response_model`.
    model_id: String,
    open: HashMap<u64, OpenBlock>,
    saw_start: bool,
    saw_stop: bool,
    stop: Option<Result<StopReason, String>>,
}

impl EventParser {
    pub(crate) fn new(model_id: &str) -> Self {
        EventParser {
            model_id: model_id.to_owned(),
            ..EventParser::default()
        }
    }

    fn apply(
        &mut self,
        out: &mut MessageWriter,
        event: wire::Event<'_>,
        data: &str,
    ) -> Result<(), String> {
        match event {
            wire::Event::MessageStart { message } => self.message_start(out, message),
            wire::Event::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(out, index, content_block),
            wire::Event::ContentBlockDelta { index, delta } => self.block_delta(out, index, delta),
            wire::Event::ContentBlockStop { index } => self.block_stop(out, index),
            wire::Event::MessageDelta { delta, usage } => self.message_delta(out, delta, usage)?,
            wire::Event::MessageStop => self.saw_stop = true,
            wire::Event::Error => return Err(crate::excerpt::excerpt(data).to_string()),
            wire::Event::Other => {}
        }
        Ok(())
    }

    fn message_start(&mut self, out: &mut MessageWriter, start: wire::MessageStart<'_>) {
        self.saw_start = true;
        let mut message = out.message_mut();
        if let Some(id) = start.id {
            message.response_id = Some(id.into_owned());
        }
        if let Some(name) = start
            .model
            .filter(|name| !name.is_empty() && **name != *self.model_id)
        {
            message.response_model = Some(name.into_owned());
        }
        if let Some(usage) = start.usage {
            message.usage = Usage::default();
            usage.update(&mut message.usage);
        }
    }

    fn block_start(&mut self, out: &mut MessageWriter, index: u64, block: wire::Block<'_>) {
        let (content_index, call) = match block {
            wire::Block::Text { text } => (out.open_text(&text), None),
            wire::Block::Thinking {
                thinking,
                signature,
            } => {
                let signature = Some(signature.into_owned());
                (out.open_thinking(&thinking, signature, false), None)
            }
            wire::Block::RedactedThinking { data } => {
                let signature = Some(data.into_owned());
                (
                    out.open_thinking("[Reasoning redacted]", signature, true),
                    None,
                )
            }
            wire::Block::ToolUse { id, name, input } => {
                let input = input
                    .filter(Value::is_object)
                    .unwrap_or_else(|| Value::Object(Default::default()));
                let state = CallState {
                    arguments: PartialJsonParser::new(),
                    streamed: false,
                };
                (
                    out.open_tool_call(ToolCall::new(id, name, input)),
                    Some(state),
                )
            }
            wire::Block::Other => return,
        };
        self.open.insert(
            index,
            OpenBlock {
                content_index,
                call,
            },
        );
    }

    fn block_delta(&mut self, out: &mut MessageWriter, index: u64, delta: wire::BlockDelta<'_>) {
        let Some(open) = self.open.get_mut(&index) else {
            return;
        };
        match delta {
            wire::BlockDelta::TextDelta { text } => out.append(open.content_index, &text),
            wire::BlockDelta::ThinkingDelta { thinking } => {
                out.append(open.content_index, &thinking);
            }
            wire::BlockDelta::SignatureDelta { signature } => {
                out.append_signature(open.content_index, &signature);
            }
            wire::BlockDelta::InputJsonDelta { partial_json } => {
                if let Some(call) = &mut open.call {
                    call.streamed = true;
                    out.tool_call_delta(open.content_index, &partial_json, &mut call.arguments);
                }
            }
            wire::BlockDelta::Other => {}
        }
    }

    fn block_stop(&mut self, out: &mut MessageWriter, index: u64) {
        let Some(open) = self.open.remove(&index) else {
            return;
        };
        match open.call {
            Some(call) if call.streamed => {
                out.finish_tool_call(open.content_index, call.arguments.text());
            }
            // A complete `input` in `content_block_start` with no delta is kept (a deliberate
            // difference: pi overwrites it with the parse of the empty text, `{}`).
            Some(_) => {
                let input = out
                    .update_tool_call(open.content_index, |call| {
                        std::mem::take(&mut call.arguments)
                    })
                    .unwrap_or_default();
                out.finish_tool_call_with(open.content_index, input, None);
            }
            None => out.close(open.content_index),
        }
    }

    fn message_delta(
        &mut self,
        out: &mut MessageWriter,
        delta: wire::MessageDelta<'_>,
        usage: Option<wire::WireUsage>,
    ) -> Result<(), String> {
        if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
            out.message_mut().raw_stop_reason = Some(reason.to_string());
            let explanation = delta.stop_details.and_then(|details| details.explanation);
            self.stop = Some(map_stop_reason(&reason, explanation.as_deref())?);
        }
        if let Some(usage) = usage {
            usage.update(&mut out.message_mut().usage);
        }
        Ok(())
    }
}

/// The `event:` names of the Messages stream; others (`ping`) are skipped unparsed.
const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

impl StreamParser for EventParser {
    fn event(&mut self, out: &mut MessageWriter, name: &str, data: &str) -> Result<(), String> {
        // Without an `event:` line (`message`), the payload's own type names the event.
        match name {
            "error" => return Err(crate::excerpt::excerpt(data).to_string()),
            "message" => {}
            named if !MESSAGE_EVENTS.contains(&named) => return Ok(()),
            _ => {}
        }
        match wire::Event::parse(data) {
            Ok(event) => self.apply(out, event, data),
            // Like pi, retry the payload with the repair of a call's final arguments (a raw
            // control character or a bad escape inside a string).
            Err(error) => {
                let unparsable = || {
                    format!(
                        "Could not parse Anthropic SSE event {name}: {error}; data={}",
                        crate::excerpt::excerpt(data)
                    )
                };
                let parsed = parse_tool_call_arguments(data);
                if parsed.error.is_some() {
                    return Err(unparsable());
                }
                let event =
                    wire::Event::deserialize(&parsed.arguments).map_err(|_| unparsable())?;
                self.apply(out, event, data)
            }
        }
    }

    fn end(&mut self, _out: &mut MessageWriter) -> Result<StopReason, String> {
        if self.saw_start && !self.saw_stop {
            return Err("Anthropic stream ended before message_stop".to_owned());
        }
        self.stop
            .take()
            .unwrap_or_else(|| Err("Anthropic stream ended without a stop reason".to_owned()))
    }
}

/// A `stop_reason`: `Ok` for a finished response, `Ok(Err)` for one that failed, `Err` for
/// a reason this runtime does not know (ends the response at once).
fn map_stop_reason(
    reason: &str,
    explanation: Option<&str>,
) -> Result<Result<StopReason, String>, String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => Ok(StopReason::Stop),
        "max_tokens" => Ok(StopReason::Length),
        "tool_use" => Ok(StopReason::ToolUse),
        "refusal" => Err(explanation
            .filter(|text| !text.is_empty())
            .unwrap_or("The model refused to complete the request")
            .to_owned()),
        "sensitive" => Err("Provider stopped with: sensitive".to_owned()),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}
