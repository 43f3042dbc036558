//! Stream parsing (SSE events -> assistant-message events) for the Responses API.
//!
//! MessageWriter items are keyed by `output_index`, never by item id (GitHub Copilot changes the id
//! on every event). A block opens at `response.output_item.added` (or at its `.done`, for a
//! server that skips the `added`) and closes at its `response.output_item.done`, which also
//! brings what is replayed later: the reasoning item (the thinking block's signature) and the
//! message item's id and phase (the text block's signature). The stop reason comes from the
//! terminal event (`response.completed`, `response.incomplete`, `response.failed`, `error`);
//! a body that ends without one is an error.
//!
//! Events carry a `sequence_number` that only grows. One that does not grow (a proxy or a
//! resumed stream replaying events already sent) is dropped: applying it again would append
//! its delta twice (`ABC` then a replayed `AB` then `Z` would read `ABCABZ`), and only a
//! closing item that repeats the whole text would repair that. Events without a number are
//! applied as they come.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::excerpt::excerpt;
use crate::json::PartialJsonParser;
use crate::message::{ContentBlock, StopReason, ToolCall, Usage};
use crate::provider::wire::StreamParser;
use crate::stream::MessageWriter;

/// What the OpenAI SDK reports for an event whose data is not JSON.
const MALFORMED: &str = "Error reading response: malformed server-sent event JSON.";
const NO_TERMINAL_EVENT: &str = "OpenAI Responses stream ended before a terminal response event";
/// A `failed` or `cancelled` status on a completed response says nothing more.
const UNKNOWN_ERROR: &str = "An unknown error occurred";
/// Shown between reasoning summary parts while they stream.
const SUMMARY_PART_BREAK: &str = "\n\n";

/// The block an output item streams into.
#[derive(Debug)]
enum Slot {
    Thinking(usize),
    Text(usize),
    Call {
        index: usize,
        /// Boxed: the parser is large, and most slots are text.
        arguments: Box<PartialJsonParser>,
    },
}

/// The parser of one Responses stream.
#[derive(Debug, Default)]
pub(crate) struct EventParser {
    /// Open items by `output_index` (`None`: a server that sends none).
    slots: HashMap<Option<u64>, Slot>,
    /// Calls whose `output_item.done` has not come, by content index, oldest first.
    unfinished: Vec<usize>,
    /// Reasoning blocks by item id, for an `encrypted_content` that only the terminal
    /// response carries (Azure, pi#6409).
    reasoning: HashMap<String, usize>,
    /// How the terminal event ended the response; `None` until one came.
    outcome: Option<Result<StopReason, String>>,
    /// `data: [DONE]` came: the SDK stops reading there.
    closed: bool,
    /// The `sequence_number` of the last event applied.
    last_sequence: Option<u64>,
}

impl EventParser {
    pub(crate) fn new() -> Self {
        EventParser::default()
    }

    fn dispatch(&mut self, out: &mut MessageWriter, event: wire::Event<'_>) -> Result<(), String> {
        let index = event.output_index.0;
        match event.kind.as_deref().unwrap_or_default() {
            "response.created" => {
                if let Some(id) = event.response.as_ref().and_then(|r| r["id"].as_str()) {
                    out.message_mut().response_id = Some(id.to_owned());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.open(out, index, item);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(Slot::Thinking(block)) = self.slots.get(&index) {
                    out.append(*block, event.delta.as_deref().unwrap_or_default());
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Some(Slot::Thinking(block)) = self.slots.get(&index) {
                    out.append(*block, SUMMARY_PART_BREAK);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(Slot::Text(block)) = self.slots.get(&index) {
                    out.append(*block, event.delta.as_deref().unwrap_or_default());
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(Slot::Call { index, arguments }), Some(delta)) =
                    (self.slots.get_mut(&index), event.delta.as_deref())
                {
                    out.tool_call_delta(*index, delta, arguments);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(Slot::Call { index, arguments }), Some(text)) =
                    (self.slots.get_mut(&index), event.arguments.as_deref())
                {
                    replace_arguments(out, *index, arguments, text);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = &event.item {
                    self.item_done(out, index, item);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or(Value::Null);
                self.finalize(out, &response)?;
            }
            "response.failed" => {
                if let Some(status) = event.response.as_ref().and_then(|r| r["status"].as_str()) {
                    out.message_mut().raw_stop_reason = Some(status.to_owned());
                }
                return Err(failed_message(event.response.as_ref()));
            }
            "error" => {
                return Err(format!(
                    "Error Code {}: {}",
                    js_text(event.code.as_ref()),
                    js_text(event.message.as_ref())
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Open the block of a new output item (`toolcall_start` carries a call's initial
    /// arguments, if the item came with some).
    fn open(
        &mut self,
        out: &mut MessageWriter,
        index: Option<u64>,
        item: &Value,
    ) -> Option<&mut Slot> {
        let slot = match item["type"].as_str()? {
            "reasoning" => Slot::Thinking(out.open_thinking("", None, false)),
            "message" => Slot::Text(out.open_text("")),
            "function_call" => {
                let id = format!(
                    "{}|{}",
                    item["call_id"].as_str().unwrap_or_default(),
                    item["id"].as_str().unwrap_or_default()
                );
                let name = item["name"].as_str().unwrap_or_default();
                let mut arguments = PartialJsonParser::new();
                let mut partial = Value::Object(Map::new());
                if let Some(text) = item["arguments"].as_str().filter(|t| !t.is_empty()) {
                    arguments.push(text, &mut partial);
                }
                let block = out.open_tool_call(ToolCall::new(id, name, partial));
                self.unfinished.push(block);
                Slot::Call {
                    index: block,
                    arguments: Box::new(arguments),
                }
            }
            _ => return None,
        };
        self.slots.insert(index, slot);
        self.slots.get_mut(&index)
    }

    /// An output item is complete: its block takes the item's final content and closes.
    fn item_done(&mut self, out: &mut MessageWriter, index: Option<u64>, item: &Value) {
        if !self.slots.contains_key(&index) && self.open(out, index, item).is_none() {
            return;
        }
        let Some(slot) = self.slots.get_mut(&index) else {
            return;
        };
        match (item["type"].as_str(), slot) {
            (Some("reasoning"), Slot::Thinking(block)) => {
                let block = *block;
                let summary = joined_texts(&item["summary"], "\n\n");
                let content = joined_texts(&item["content"], "\n\n");
                let text = if summary.is_empty() { content } else { summary };
                if !text.is_empty() {
                    out.set_text(block, &text);
                }
                out.set_signature(block, &item.to_string());
                if let Some(id) = item["id"].as_str() {
                    self.reasoning.insert(id.to_owned(), block);
                }
                out.close(block);
            }
            (Some("message"), Slot::Text(block)) => {
                let block = *block;
                out.set_text(block, &message_text(&item["content"]));
                out.set_signature(block, &text_signature(item));
                out.close(block);
            }
            (
                Some("function_call"),
                Slot::Call {
                    index: block,
                    arguments,
                },
            ) => {
                let block = *block;
                // The item's arguments are the whole text: the deltas, or what replaced them.
                match item["arguments"].as_str().filter(|text| !text.is_empty()) {
                    Some(text) => out.finish_tool_call(block, text),
                    None => out.finish_tool_call(block, arguments.text()),
                }
                self.unfinished.retain(|&call| call != block);
            }
            _ => return,
        }
        self.slots.remove(&index);
    }

    /// `response.completed` / `.incomplete`: usage, the stop reason, and `encrypted_content`
    /// the reasoning items lacked.
    fn finalize(&mut self, out: &mut MessageWriter, response: &Value) -> Result<(), String> {
        if let Some(output) = response["output"].as_array() {
            self.backfill_reasoning(out, output);
        }
        let mut message = out.message_mut();
        if let Some(id) = response["id"].as_str() {
            message.response_id = Some(id.to_owned());
        }
        if response["usage"].is_object() {
            message.usage = usage(&response["usage"]);
        }
        if let Some(status) = response["status"].as_str() {
            // `incomplete.max_output_tokens`: the reason beside the status, as pi keeps it.
            message.raw_stop_reason =
                Some(match response["incomplete_details"]["reason"].as_str() {
                    Some(reason) if !reason.is_empty() => format!("{status}.{reason}"),
                    _ => status.to_owned(),
                });
        }
        let has_calls = message
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolCall(_)));
        drop(message);
        let outcome = match stop_reason(response)? {
            Ok(StopReason::Stop) if has_calls => Ok(StopReason::ToolUse),
            other => other,
        };
        self.outcome = Some(outcome);
        Ok(())
    }

    fn backfill_reasoning(&self, out: &mut MessageWriter, output: &[Value]) {
        for item in output {
            if item["type"] != "reasoning" || !is_truthy(&item["encrypted_content"]) {
                continue;
            }
            let Some(&block) = item["id"].as_str().and_then(|id| self.reasoning.get(id)) else {
                continue;
            };
            let stored = match out.message().content.get(block) {
                Some(ContentBlock::Thinking(thinking)) => thinking.thinking_signature.clone(),
                _ => None,
            };
            let Some(Ok(Value::Object(mut stored))) =
                stored.map(|signature| serde_json::from_str::<Value>(&signature))
            else {
                continue;
            };
            if stored.get("encrypted_content").is_some_and(is_truthy) {
                continue;
            }
            stored.insert(
                "encrypted_content".to_owned(),
                item["encrypted_content"].clone(),
            );
            out.set_signature(block, &Value::Object(stored).to_string());
        }
    }
}

impl StreamParser for EventParser {
    fn event(&mut self, out: &mut MessageWriter, name: &str, data: &str) -> Result<(), String> {
        if self.closed {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.closed = true;
            return Ok(());
        }
        let event: wire::Event<'_> = serde_json::from_str(data).map_err(|_| MALFORMED)?;
        // The OpenAI SDK turns these into errors before pi sees the event.
        if name == "error" {
            return Err(match event.error.filter(|e| !e.is_null()) {
                Some(error) => api_error_message(&error),
                None => api_error_message(&serde_json::from_str(data).unwrap_or(Value::Null)),
            });
        }
        if let Some(error) = event.error.as_ref().filter(|e| is_truthy(e)) {
            return Err(api_error_message(error));
        }
        // The SDK hands on Assistants events in another shape, which pi ignores.
        if name.starts_with("thread.") {
            return Ok(());
        }
        if let Some(sequence) = event.sequence_number.0 {
            if self.last_sequence.is_some_and(|last| sequence <= last) {
                return Ok(());
            }
            self.last_sequence = Some(sequence);
        }
        self.dispatch(out, event)
    }

    fn end(&mut self, out: &mut MessageWriter) -> Result<StopReason, String> {
        match self.outcome.take() {
            None => Err(NO_TERMINAL_EVENT.to_owned()),
            // The agent runs every call of a finished message: a call whose item never
            // completed may have cut or mixed-up arguments.
            Some(Ok(StopReason::ToolUse)) if !self.unfinished.is_empty() => {
                let message = out.message();
                let call =
                    self.unfinished
                        .first()
                        .and_then(|&index| match message.content.get(index) {
                            Some(ContentBlock::ToolCall(call)) => Some((&call.name, &call.id)),
                            _ => None,
                        });
                Err(match call {
                    Some((name, id)) => format!(
                        "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
                    ),
                    None => {
                        "OpenAI Responses stream completed with an unfinished tool call".to_owned()
                    }
                })
            }
            Some(outcome) => outcome,
        }
    }
}

/// `function_call_arguments.done`: the whole text. When it continues the deltas, the
/// missing piece is one more delta; otherwise the arguments start over from it, silently.
fn replace_arguments(
    out: &mut MessageWriter,
    block: usize,
    arguments: &mut PartialJsonParser,
    text: &str,
) {
    let read = arguments.text().len();
    if text.starts_with(arguments.text()) {
        if read < text.len() {
            out.tool_call_delta(block, &text[read..], arguments);
        }
        return;
    }
    *arguments = PartialJsonParser::new();
    out.update_tool_call(block, |call| {
        call.arguments = Value::Object(Map::new());
        arguments.push(text, &mut call.arguments);
    });
}

/// The stop reason of a terminal response's status, as pi maps it. The outer `Err` is a
/// status pi does not know, which ends the stream at once.
fn stop_reason(response: &Value) -> Result<Result<StopReason, String>, String> {
    let reason = response["incomplete_details"]["reason"].as_str();
    Ok(match response["status"].as_str() {
        None | Some("" | "completed" | "in_progress" | "queued") => Ok(StopReason::Stop),
        Some("incomplete") => match reason {
            Some("max_output_tokens") => Ok(StopReason::Length),
            Some(reason) => Err(format!("Response incomplete: {reason}")),
            None => Err("Response incomplete without a provider reason".to_owned()),
        },
        Some("failed" | "cancelled") => Err(UNKNOWN_ERROR.to_owned()),
        Some(other) => return Err(format!("Unhandled stop reason: {}", excerpt(other))),
    })
}

/// `response.failed`: the error's code and message, else the incomplete reason.
fn failed_message(response: Option<&Value>) -> String {
    let response = response.unwrap_or(&Value::Null);
    let error = &response["error"];
    if is_truthy(error) {
        let part = |value: &Value, default: &str| {
            if is_truthy(value) {
                js_text(Some(value))
            } else {
                default.to_owned()
            }
        };
        return format!(
            "{}: {}",
            part(&error["code"], "unknown"),
            excerpt(&part(&error["message"], "no message"))
        );
    }
    let reason = &response["incomplete_details"]["reason"];
    if is_truthy(reason) {
        return format!("incomplete: {}", js_text(Some(reason)));
    }
    "Unknown error (no error details in response)".to_owned()
}

/// The message the OpenAI SDK gives an error object: its `message`, else its JSON.
fn api_error_message(error: &Value) -> String {
    let text = match error.get("message").filter(|m| is_truthy(m)) {
        Some(Value::String(message)) => message.clone(),
        Some(message) => message.to_string(),
        None if is_truthy(error) => error.to_string(),
        None => "(no status code or body)".to_owned(),
    };
    excerpt(&text).to_string()
}

/// Usage of a terminal response: OpenAI counts cached and cache-write tokens inside
/// `input_tokens`, so both are taken out of `input`.
fn usage(usage: &Value) -> Usage {
    let count = |value: &Value| value.as_u64().unwrap_or(0);
    let cache_read = count(&usage["input_tokens_details"]["cached_tokens"]);
    let cache_write = count(&usage["input_tokens_details"]["cache_write_tokens"]);
    Usage {
        input: count(&usage["input_tokens"]).saturating_sub(cache_read + cache_write),
        output: count(&usage["output_tokens"]),
        cache_read,
        cache_write,
        total_tokens: count(&usage["total_tokens"]),
        reasoning: count(&usage["output_tokens_details"]["reasoning_tokens"]),
        ..Usage::default()
    }
}

/// The `text` of each part, joined with `separator` (parts without one count as empty).
fn joined_texts(parts: &Value, separator: &str) -> String {
    let Some(parts) = parts.as_array() else {
        return String::new();
    };
    let texts: Vec<&str> = parts
        .iter()
        .map(|part| part["text"].as_str().unwrap_or_default())
        .collect();
    texts.join(separator)
}

/// A message item's text: its `output_text` parts, and the `refusal` of the others.
fn message_text(content: &Value) -> String {
    let Some(parts) = content.as_array() else {
        return String::new();
    };
    parts
        .iter()
        .map(|part| {
            let field = if part["type"] == "output_text" {
                "text"
            } else {
                "refusal"
            };
            part[field].as_str().unwrap_or_default()
        })
        .collect()
}

/// `{"v":1,"id","phase"?}`: what the next request needs to replay the message item.
fn text_signature(item: &Value) -> String {
    let mut signature = Map::new();
    signature.insert("v".to_owned(), Value::from(1));
    if let Some(id) = item.get("id") {
        signature.insert("id".to_owned(), id.clone());
    }
    if let Some(phase) = item.get("phase").filter(|phase| is_truthy(phase)) {
        signature.insert("phase".to_owned(), phase.clone());
    }
    Value::Object(signature).to_string()
}

/// JavaScript's truthiness of a JSON value.
pub(super) fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A value as a JavaScript template literal shows it (`undefined` when absent).
fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => excerpt(s).to_string(),
        Some(other) => excerpt(&other.to_string()).to_string(),
    }
}

/// The event fields this parser reads; everything else is skipped unparsed. The fields
/// every event may carry are lenient: one of another type reads as absent, as pi would
/// ignore it.
mod wire {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde_json::Value;

    /// The visitor methods of every other JSON value, each returning `$absent` (containers
    /// are read through and dropped).
    macro_rules! other_values_are_absent {
        ($absent:expr) => {
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok($absent)
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok($absent)
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok($absent)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok($absent)
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok($absent)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok($absent)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok($absent)
            }
        };
    }

    /// One event's data.
    #[derive(Debug, serde::Deserialize)]
    pub(super) struct Event<'a> {
        #[serde(rename = "type", borrow, default)]
        pub(super) kind: Text<'a>,
        #[serde(default)]
        pub(super) output_index: Index,
        #[serde(default)]
        pub(super) sequence_number: Index,
        #[serde(borrow, default)]
        pub(super) delta: Text<'a>,
        #[serde(borrow, default)]
        pub(super) arguments: Text<'a>,
        #[serde(default)]
        pub(super) item: Option<Value>,
        #[serde(default)]
        pub(super) response: Option<Value>,
        #[serde(default)]
        pub(super) error: Option<Value>,
        #[serde(default)]
        pub(super) code: Option<Value>,
        #[serde(default)]
        pub(super) message: Option<Value>,
    }

    /// A string field, borrowed from the data unless it holds escapes; `None` when absent or
    /// not a string.
    #[derive(Debug, Default)]
    pub(super) struct Text<'a>(pub(super) Option<Cow<'a, str>>);

    impl Text<'_> {
        pub(super) fn as_deref(&self) -> Option<&str> {
            self.0.as_deref()
        }
    }

    /// An `output_index` or `sequence_number`; `None` when absent or not an unsigned integer.
    #[derive(Debug, Default)]
    pub(super) struct Index(pub(super) Option<u64>);

    impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(TextVisitor)
        }
    }

    impl<'de> Deserialize<'de> for Index {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(IndexVisitor)
        }
    }

    struct TextVisitor;

    impl<'de> Visitor<'de> for TextVisitor {
        type Value = Text<'de>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(Text(Some(Cow::Borrowed(text))))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Text(Some(Cow::Owned(text.to_owned()))))
        }

        fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
            Ok(Text(Some(Cow::Owned(text))))
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Text(None))
        }

        other_values_are_absent!(Text(None));
    }

    struct IndexVisitor;

    impl<'de> Visitor<'de> for IndexVisitor {
        type Value = Index;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            Ok(Index(Some(n)))
        }

        fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
            Ok(Index(None))
        }

        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Index(None))
        }

        other_values_are_absent!(Index(None));
    }
}
