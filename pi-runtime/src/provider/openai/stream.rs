//! Stream parsing (SSE events -> assistant-message events) for Chat Completions chunks
//! (`openai-completions`; DeepSeek and every compatible server).
//!
//! All blocks stay open until the body ends: text after tool calls joins the first text
//! block, and every `*_end` comes after the last chunk, in content order.

use std::collections::HashMap;

use serde_json::Value;

use crate::json::PartialJsonParser;
use crate::message::{StopReason, Timings, ToolCall};
use crate::provider::Model;
use crate::provider::wire::StreamParser;
use crate::stream::MessageWriter;

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
    /// The model asked for: a chunk naming another one sets `responseModel`.
    model_id: String,
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
            model_id: model.id.clone(),
            requires_finish_reason: model.compat.supports_finish_reason != Some(false),
            text: None,
            thinking: None,
            calls: Vec::new(),
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            finish: None,
        }
    }

    fn chunk(&mut self, out: &mut MessageWriter, chunk: wire::Chunk<'_>) -> Result<(), String> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(provider_error(&error));
        }
        if let Some(id) = chunk.id.filter(|id| !id.is_empty()) {
            let mut message = out.message_mut();
            if message.response_id.is_none() {
                message.response_id = Some(id.into_owned());
            }
        }
        if let Some(name) = chunk
            .model
            .filter(|name| !name.is_empty() && **name != *self.model_id)
        {
            let mut message = out.message_mut();
            if message.response_model.is_none() {
                message.response_model = Some(name.into_owned());
            }
        }
        if let Some(timings) = chunk.timings.as_ref().and_then(timings) {
            out.message_mut().timings = Some(timings);
        }
        let mut choice = chunk.choices.into_iter().next();
        // Some servers (Moonshot) put usage on the choice instead of the chunk.
        let usage = chunk
            .usage
            .or_else(|| choice.as_mut().and_then(|c| c.usage.take()));
        if let Some(usage) = usage {
            out.message_mut().usage = usage.into();
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some(map_finish_reason(&reason));
            out.message_mut().raw_stop_reason = Some(reason.into_owned());
        }
        if let Some(delta) = choice.delta {
            self.delta(out, delta);
        }
        Ok(())
    }

    fn delta(&mut self, out: &mut MessageWriter, delta: wire::Delta<'_>) {
        // Reasoning first: a proxy may put reasoning and answer in one delta, and the
        // thinking block must come before the text block.
        let reasoning = [
            (REASONING_FIELDS[0], &delta.reasoning_content),
            (REASONING_FIELDS[1], &delta.reasoning),
            (REASONING_FIELDS[2], &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, text)| Some((field, text.as_deref().filter(|t| !t.is_empty())?)));
        if let Some((field, text)) = reasoning {
            let index = *self
                .thinking
                .get_or_insert_with(|| out.open_thinking("", Some(field.to_owned()), false));
            out.append(index, text);
        }
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            let index = *self.text.get_or_insert_with(|| out.open_text(""));
            out.append(index, text);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(out, call);
        }
    }

    /// One `tool_calls` entry: find its block by `index`, then by `id`, or start one.
    fn tool_call(&mut self, out: &mut MessageWriter, entry: wire::ToolCallDelta<'_>) {
        let stream_index = entry.index;
        let id = entry.id.as_deref().filter(|id| !id.is_empty());
        let function = entry.function;
        let name = function.name.as_deref().filter(|name| !name.is_empty());
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
        out.update_tool_call(content_index, |block| {
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
        });
        let delta = function.arguments.as_deref().unwrap_or("");
        out.tool_call_delta(content_index, delta, &mut self.calls[slot].arguments);
    }
}

impl StreamParser for ChunkParser {
    fn event(&mut self, out: &mut MessageWriter, _name: &str, data: &str) -> Result<(), String> {
        if data.trim() == "[DONE]" {
            return Ok(());
        }
        let chunk: wire::Chunk<'_> = serde_json::from_str(data).map_err(|error| {
            format!(
                "Malformed SSE data: {error}; data={}",
                crate::excerpt::excerpt(data)
            )
        })?;
        self.chunk(out, chunk)
    }

    fn end(&mut self, out: &mut MessageWriter) -> Result<StopReason, String> {
        let mut calls = self.calls.iter();
        let blocks = out.message().content.len();
        for index in 0..blocks {
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

/// llama.cpp's `timings` object; `None` when it carries none of its fields (a field of
/// another type is left out rather than failing the response).
fn timings(value: &Value) -> Option<Timings> {
    let count = |name: &str| value.get(name).and_then(Value::as_u64);
    let measure = |name: &str| value.get(name).and_then(Value::as_f64);
    let timings = Timings {
        cache_tokens: count("cache_n"),
        prompt_tokens: count("prompt_n"),
        prompt_ms: measure("prompt_ms"),
        prompt_per_second: measure("prompt_per_second"),
        predicted_tokens: count("predicted_n"),
        predicted_ms: measure("predicted_ms"),
        predicted_per_second: measure("predicted_per_second"),
    };
    (timings != Timings::default()).then_some(timings)
}

/// An `error` object sent inside the stream: its `message`, else its JSON.
fn provider_error(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => crate::excerpt::excerpt(message).to_string(),
        None => crate::excerpt::excerpt(&error.to_string()).to_string(),
    }
}

/// The chunk fields this parser reads; everything else is skipped unparsed. Strings borrow
/// from the event data unless they hold escapes.
mod wire {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::Value;

    use crate::message::Usage;

    /// One `chat.completion.chunk`.
    #[derive(Debug, Deserialize)]
    pub(super) struct Chunk<'a> {
        #[serde(borrow, default)]
        pub(super) id: Option<Cow<'a, str>>,
        /// The model that answered, as the server names it.
        #[serde(borrow, default)]
        pub(super) model: Option<Cow<'a, str>>,
        /// llama.cpp's speed report (`prompt_n`, `predicted_per_second`, ...).
        #[serde(default)]
        pub(super) timings: Option<Value>,
        #[serde(borrow, default, deserialize_with = "null_as_empty")]
        pub(super) choices: Vec<Choice<'a>>,
        #[serde(default)]
        pub(super) usage: Option<WireUsage>,
        /// An error some servers send inside a 200 stream.
        #[serde(default)]
        pub(super) error: Option<Value>,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct Choice<'a> {
        #[serde(borrow, default)]
        pub(super) delta: Option<Delta<'a>>,
        #[serde(borrow, default)]
        pub(super) finish_reason: Option<Cow<'a, str>>,
        #[serde(default)]
        pub(super) usage: Option<WireUsage>,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct Delta<'a> {
        #[serde(borrow, default)]
        pub(super) content: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) reasoning_content: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) reasoning: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) reasoning_text: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct ToolCallDelta<'a> {
        #[serde(default)]
        pub(super) index: Option<u64>,
        #[serde(borrow, default)]
        pub(super) id: Option<Cow<'a, str>>,
        /// Required: an entry without a function (or with `null`) is a malformed chunk,
        /// not a nameless call.
        #[serde(borrow)]
        pub(super) function: FunctionDelta<'a>,
    }

    #[derive(Debug, Default, Deserialize)]
    pub(super) struct FunctionDelta<'a> {
        #[serde(borrow, default)]
        pub(super) name: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) arguments: Option<Cow<'a, str>>,
    }

    /// Cached prompt tokens are reported apart from `input`: OpenAI puts them in
    /// `prompt_tokens_details.cached_tokens`, DeepSeek in `prompt_cache_hit_tokens`, Kimi in
    /// `cached_tokens`.
    #[derive(Debug, Deserialize)]
    pub(super) struct WireUsage {
        #[serde(default)]
        prompt_tokens: Option<u64>,
        #[serde(default)]
        completion_tokens: Option<u64>,
        #[serde(default)]
        prompt_tokens_details: Option<PromptDetails>,
        #[serde(default)]
        prompt_cache_hit_tokens: Option<u64>,
        #[serde(default)]
        cached_tokens: Option<u64>,
    }

    #[derive(Debug, Deserialize)]
    struct PromptDetails {
        #[serde(default)]
        cached_tokens: Option<u64>,
        #[serde(default)]
        cache_write_tokens: Option<u64>,
    }

    impl From<WireUsage> for Usage {
        fn from(usage: WireUsage) -> Self {
            let details = usage.prompt_tokens_details.as_ref();
            let cache_read = details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens)
                .or(usage.cached_tokens)
                .unwrap_or(0);
            let cache_write = details.and_then(|d| d.cache_write_tokens).unwrap_or(0);
            let input = usage
                .prompt_tokens
                .unwrap_or(0)
                .saturating_sub(cache_read + cache_write);
            let output = usage.completion_tokens.unwrap_or(0);
            Usage {
                input,
                output,
                cache_read,
                cache_write,
                total_tokens: input + output + cache_read + cache_write,
                ..Usage::default()
            }
        }
    }

    /// `"choices": null` reads as no choices.
    fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
    }
}
