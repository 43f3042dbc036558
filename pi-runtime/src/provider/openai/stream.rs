//! Stream parsing (SSE events -> assistant-message events) for Chat Completions chunks
//! (SPEC §6.5, `openai-completions`; DeepSeek and every compatible server).
//!
//! All blocks stay open until the body ends: text after tool calls joins the first text
//! block, and every `*_end` comes after the last chunk, in content order.

use std::collections::HashMap;

use serde_json::Value;

use crate::json::PartialJsonParser;
use crate::message::{StopReason, ToolCall, Usage};
use crate::provider::Model;
use crate::provider::output::{Output, StreamParser};

/// The reasoning fields servers use, in the order they are looked at; the first non-empty
/// one of a delta is taken (some servers fill two with the same text).
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// One streamed tool call.
#[derive(Debug)]
struct CallState {
    content_index: usize,
    stream_index: Option<u64>,
    arguments: PartialJsonParser,
}

/// The parser of one Chat Completions response.
#[derive(Debug)]
pub(crate) struct ChunkParser {
    requires_finish_reason: bool,
    text: Option<usize>,
    thinking: Option<usize>,
    calls: Vec<CallState>,
    by_index: HashMap<u64, usize>,
    by_id: HashMap<String, usize>,
    /// The mapped finish reason, with its error text for the ones that fail.
    finish: Option<Result<StopReason, String>>,
}

impl ChunkParser {
    pub(crate) fn new(model: &Model) -> Self {
        ChunkParser {
            requires_finish_reason: model.compat.supports_finish_reason != Some(false),
            text: None,
            thinking: None,
            calls: Vec::new(),
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            finish: None,
        }
    }

    fn chunk(&mut self, out: &mut Output, chunk: &Value) -> Result<(), String> {
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(provider_error(error));
        }
        let message = out.message_mut();
        if message.response_id.is_none()
            && let Some(id) = chunk
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
        {
            message.response_id = Some(id.to_owned());
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first());
        // Some servers (Moonshot) put usage on the choice instead of the chunk.
        let usage = chunk.get("usage").filter(|u| u.is_object()).or_else(|| {
            choice
                .and_then(|c| c.get("usage"))
                .filter(|u| u.is_object())
        });
        if let Some(usage) = usage {
            out.message_mut().usage = parse_usage(usage);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(map_finish_reason(reason));
        }
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            self.delta(out, delta);
        }
        Ok(())
    }

    fn delta(&mut self, out: &mut Output, delta: &Value) {
        // Reasoning first: a proxy may put reasoning and answer in one delta, and the
        // thinking block must come before the text block.
        let reasoning = REASONING_FIELDS.iter().find_map(|&field| {
            let text = delta.get(field)?.as_str()?;
            (!text.is_empty()).then_some((field, text))
        });
        if let Some((field, text)) = reasoning {
            let index = *self
                .thinking
                .get_or_insert_with(|| out.open_thinking("", Some(field.to_owned()), false));
            out.append(index, text);
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            let index = *self.text.get_or_insert_with(|| out.open_text(""));
            out.append(index, text);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call(out, call);
            }
        }
    }

    /// One `tool_calls` entry: find its block by `index`, then by `id`, or start one.
    fn tool_call(&mut self, out: &mut Output, entry: &Value) {
        let stream_index = entry.get("index").and_then(Value::as_u64);
        let id = entry
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = entry.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty());
        let known = stream_index
            .and_then(|i| self.by_index.get(&i))
            .or_else(|| id.and_then(|id| self.by_id.get(id)))
            .copied();
        let slot = match known {
            Some(slot) => slot,
            None => {
                let call = ToolCall::new(
                    id.unwrap_or(""),
                    name.unwrap_or(""),
                    Value::Object(Default::default()),
                );
                let content_index = out.open_tool_call(call);
                self.calls.push(CallState {
                    content_index,
                    stream_index,
                    arguments: PartialJsonParser::new(),
                });
                if let Some(i) = stream_index {
                    self.by_index.insert(i, self.calls.len() - 1);
                }
                self.calls.len() - 1
            }
        };
        let state = &mut self.calls[slot];
        if state.stream_index.is_none()
            && let Some(i) = stream_index
        {
            state.stream_index = Some(i);
            self.by_index.insert(i, slot);
        }
        // A later id is remembered as an alias; the block keeps the first.
        if let Some(id) = id {
            self.by_id.insert(id.to_owned(), slot);
        }
        let content_index = state.content_index;
        if let Some(block) = out.tool_call_mut(content_index) {
            if block.id.is_empty()
                && let Some(id) = id
            {
                id.clone_into(&mut block.id);
            }
            if block.name.is_empty()
                && let Some(name) = name
            {
                name.clone_into(&mut block.name);
            }
        }
        let delta = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        out.tool_call_delta(content_index, delta, &mut self.calls[slot].arguments);
    }
}

impl StreamParser for ChunkParser {
    fn event(&mut self, out: &mut Output, _name: &str, data: &str) -> Result<(), String> {
        if data.trim() == "[DONE]" {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|error| format!("Malformed SSE data: {error}; data={data}"))?;
        if chunk.is_object() {
            self.chunk(out, &chunk)?;
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Output) -> Result<StopReason, String> {
        let mut calls = self.calls.iter();
        for index in 0..out.message().content.len() {
            if Some(index) == self.text || Some(index) == self.thinking {
                out.close(index);
            } else if let Some(call) = calls.next() {
                out.finish_tool_call(call.content_index, call.arguments.text());
            }
        }
        match self.finish.take() {
            Some(finish) => finish,
            None if self.requires_finish_reason => {
                Err("Stream ended without finish_reason".to_owned())
            }
            None if self.calls.is_empty() => Ok(StopReason::Stop),
            None => Ok(StopReason::ToolUse),
        }
    }
}

fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "stop" | "end" => Ok(StopReason::Stop),
        "length" => Ok(StopReason::Length),
        "tool_calls" | "function_call" => Ok(StopReason::ToolUse),
        other => Err(format!("Provider finish_reason: {other}")),
    }
}

/// An `error` object sent inside the stream: its `message`, else its JSON.
fn provider_error(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None => error.to_string(),
    }
}

/// Chat Completions usage. Cached prompt tokens are reported apart from `input`: OpenAI puts
/// them in `prompt_tokens_details.cached_tokens`, DeepSeek in `prompt_cache_hit_tokens`,
/// Kimi in `cached_tokens`.
fn parse_usage(usage: &Value) -> Usage {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let prompt = count(usage.get("prompt_tokens"));
    let cache_read = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .or_else(|| usage.get("prompt_cache_hit_tokens"))
        .or_else(|| usage.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cache_write = count(usage.pointer("/prompt_tokens_details/cache_write_tokens"));
    let input = prompt.saturating_sub(cache_read + cache_write);
    let output = count(usage.get("completion_tokens"));
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    }
}
