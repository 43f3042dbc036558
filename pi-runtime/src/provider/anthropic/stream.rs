//! Stream parsing (SSE events -> assistant-message events) for Anthropic Messages
//! (SPEC §6.5, `anthropic-messages`).
//!
//! Blocks are addressed by the event's `index` and each ends at its own
//! `content_block_stop`, so events interleave start/delta/end per block.

use std::collections::HashMap;

use serde_json::Value;

use crate::json::{PartialJsonParser, parse_tool_call_arguments};
use crate::message::{StopReason, ToolCall};
use crate::provider::output::{Output, StreamParser};

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
    open: HashMap<u64, OpenBlock>,
    saw_start: bool,
    saw_stop: bool,
    stop: Option<Result<StopReason, String>>,
}

impl EventParser {
    pub(crate) fn new() -> Self {
        EventParser::default()
    }

    fn message_start(&mut self, out: &mut Output, event: &Value) {
        self.saw_start = true;
        let message = out.message_mut();
        if let Some(id) = event.pointer("/message/id").and_then(Value::as_str) {
            message.response_id = Some(id.to_owned());
        }
        if let Some(usage) = event.pointer("/message/usage") {
            let usage_of = |key: &str| usage.get(key).and_then(Value::as_u64);
            let totals = &mut message.usage;
            totals.input = usage_of("input_tokens").unwrap_or(0);
            totals.output = usage_of("output_tokens").unwrap_or(0);
            totals.cache_read = usage_of("cache_read_input_tokens").unwrap_or(0);
            totals.cache_write = usage_of("cache_creation_input_tokens").unwrap_or(0);
            totals.total_tokens =
                totals.input + totals.output + totals.cache_read + totals.cache_write;
        }
    }

    fn block_start(&mut self, out: &mut Output, event: &Value) {
        let (Some(index), Some(block)) = (
            event.get("index").and_then(Value::as_u64),
            event.get("content_block"),
        ) else {
            return;
        };
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        let (content_index, call) = match block.get("type").and_then(Value::as_str) {
            Some("text") => (out.open_text(text("text")), None),
            Some("thinking") => {
                let signature = Some(text("signature").to_owned());
                (out.open_thinking(text("thinking"), signature, false), None)
            }
            Some("redacted_thinking") => {
                let signature = Some(text("data").to_owned());
                (
                    out.open_thinking("[Reasoning redacted]", signature, true),
                    None,
                )
            }
            Some("tool_use") => {
                let input = block
                    .get("input")
                    .filter(|input| input.is_object())
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default()));
                let call = ToolCall::new(text("id"), text("name"), input);
                let state = CallState {
                    arguments: PartialJsonParser::new(),
                    streamed: false,
                };
                (out.open_tool_call(call), Some(state))
            }
            _ => return,
        };
        self.open.insert(
            index,
            OpenBlock {
                content_index,
                call,
            },
        );
    }

    fn block_delta(&mut self, out: &mut Output, event: &Value) {
        let Some(open) = event
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|index| self.open.get_mut(&index))
        else {
            return;
        };
        let Some(delta) = event.get("delta") else {
            return;
        };
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => out.append(open.content_index, field("text")),
            Some("thinking_delta") => out.append(open.content_index, field("thinking")),
            Some("signature_delta") => out.append_signature(open.content_index, field("signature")),
            Some("input_json_delta") => {
                if let Some(call) = &mut open.call {
                    call.streamed = true;
                    out.tool_call_delta(
                        open.content_index,
                        field("partial_json"),
                        &mut call.arguments,
                    );
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, out: &mut Output, event: &Value) {
        let Some(open) = event
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|index| self.open.remove(&index))
        else {
            return;
        };
        match open.call {
            Some(call) if call.streamed => {
                out.finish_tool_call(open.content_index, call.arguments.text());
            }
            // [RUST] SPEC §6.5: a complete `input` in `content_block_start` with no delta is
            // kept (pi overwrites it with the parse of the empty text, `{}`).
            Some(_) => {
                let input = out
                    .tool_call_mut(open.content_index)
                    .map(|call| std::mem::take(&mut call.arguments))
                    .unwrap_or_default();
                out.finish_tool_call_with(open.content_index, input, None);
            }
            None => out.close(open.content_index),
        }
    }

    fn message_delta(&mut self, out: &mut Output, event: &Value) -> Result<(), String> {
        if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
            let explanation = event
                .pointer("/delta/stop_details/explanation")
                .and_then(Value::as_str);
            self.stop = Some(map_stop_reason(reason, explanation)?);
        }
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            let totals = &mut out.message_mut().usage;
            let update = |key: &str, slot: &mut u64| {
                if let Some(n) = usage.get(key).and_then(Value::as_u64) {
                    *slot = n;
                }
            };
            update("input_tokens", &mut totals.input);
            update("output_tokens", &mut totals.output);
            update("cache_read_input_tokens", &mut totals.cache_read);
            update("cache_creation_input_tokens", &mut totals.cache_write);
            totals.total_tokens =
                totals.input + totals.output + totals.cache_read + totals.cache_write;
        }
        Ok(())
    }
}

impl StreamParser for EventParser {
    fn event(&mut self, out: &mut Output, name: &str, data: &str) -> Result<(), String> {
        if name == "error" {
            return Err(data.to_owned());
        }
        let event = parse_event(name, data)?;
        // Without an `event:` line the payload's own type names the event.
        let kind = match name {
            "message" => event.get("type").and_then(Value::as_str).unwrap_or(""),
            named => named,
        };
        match kind {
            "error" => return Err(data.to_owned()),
            "message_start" => self.message_start(out, &event),
            "content_block_start" => self.block_start(out, &event),
            "content_block_delta" => self.block_delta(out, &event),
            "content_block_stop" => self.block_stop(out, &event),
            "message_delta" => self.message_delta(out, &event)?,
            "message_stop" => self.saw_stop = true,
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, _out: &mut Output) -> Result<StopReason, String> {
        if self.saw_start && !self.saw_stop {
            return Err("Anthropic stream ended before message_stop".to_owned());
        }
        self.stop
            .take()
            .unwrap_or_else(|| Err("Anthropic stream ended without a stop reason".to_owned()))
    }
}

/// The event's JSON, repaired like tool arguments when a raw control character or a bad
/// escape broke it (SPEC §6.5).
fn parse_event(name: &str, data: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(data) {
        Ok(event) => Ok(event),
        Err(error) => match parse_tool_call_arguments(data) {
            (event, None) => Ok(event),
            (_, Some(_)) => Err(format!(
                "Could not parse Anthropic SSE event {name}: {error}; data={data}"
            )),
        },
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
