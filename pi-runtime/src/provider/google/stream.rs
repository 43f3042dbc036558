//! Stream parsing (SSE events -> assistant-message events) for Gemini
//! `streamGenerateContent` chunks (`google-generative-ai`).
//!
//! A `functionCall` part is normally complete: `toolcall_start`, one `toolcall_delta` with
//! the compact JSON of its args, and `toolcall_end`, back to back. Vertex AI's streamed
//! arguments (`willContinue` + `partialArgs`, closed by an empty `functionCall`) are read
//! too: each piece sets or extends one argument of the call in place, then is reported as an
//! empty `toolcall_delta`.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::message::{StopReason, ToolCall};
use crate::provider::wire::StreamParser;
use crate::stream::MessageWriter;

/// Numbers synthesized call ids across the process, so they never repeat in a transcript.
static GENERATED_IDS: AtomicU64 = AtomicU64::new(0);

/// The open text or thinking block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Text(usize),
    Thinking(usize),
}

/// A Vertex call whose arguments are still streaming (in the message's tool call).
#[derive(Debug)]
struct StreamedCall {
    content_index: usize,
    /// The string argument the last piece left open (`willContinue`).
    continuing: Option<Vec<PathSegment>>,
}

/// One step of a `jsonPath`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PathSegment {
    Key(String),
    Index(usize),
}

/// What one `partialArgs` piece does at its path.
enum Piece {
    Set(Value),
    Append(String),
}

/// The parser of one Gemini response.
#[derive(Debug, Default)]
pub(crate) struct ChunkParser {
    open: Option<Open>,
    streamed: Option<StreamedCall>,
    finish: Option<Result<StopReason, String>>,
}

impl ChunkParser {
    pub(crate) fn new() -> Self {
        ChunkParser::default()
    }

    fn chunk(&mut self, out: &mut MessageWriter, chunk: wire::Chunk<'_>) -> Result<(), String> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(match error.get("message").and_then(Value::as_str) {
                Some(message) => crate::excerpt::excerpt(message).to_string(),
                None => crate::excerpt::excerpt(&error.to_string()).to_string(),
            });
        }
        if out.message().response_id.is_none()
            && let Some(id) = chunk.response_id
        {
            out.message_mut().response_id = Some(id.into_owned());
        }
        let candidate = chunk.candidates.into_iter().next();
        let (parts, finish_reason) = match candidate {
            Some(candidate) => (
                candidate.content.map(|c| c.parts).unwrap_or_default(),
                candidate.finish_reason,
            ),
            None => (Vec::new(), None),
        };
        for part in parts {
            if let Some(text) = &part.text {
                let signature = part.thought_signature.as_deref();
                self.text(out, text, part.thought == Some(true), signature);
            }
            if let Some(call) = part.function_call {
                self.function_call(out, call, part.thought_signature);
            }
        }
        if let Some(reason) = finish_reason.filter(|r| !r.is_empty()) {
            let has_call = out.message().tool_calls().next().is_some();
            self.finish = Some(match map_finish_reason(&reason) {
                Ok(StopReason::Stop) if has_call => Ok(StopReason::ToolUse),
                mapped => mapped,
            });
            out.message_mut().raw_stop_reason = Some(reason.into_owned());
        }
        if let Some(usage) = chunk.usage_metadata {
            out.message_mut().usage = usage.into();
        }
        Ok(())
    }

    /// Text or thought text: joins the open block of its kind, else closes the other kind
    /// and opens a new block. Empty pieces (Gemini ends with `{"text":""}`) open nothing,
    /// but their signature still goes to the open block of their kind: the latest
    /// non-empty signature is the one to replay.
    fn text(
        &mut self,
        out: &mut MessageWriter,
        text: &str,
        thought: bool,
        signature: Option<&str>,
    ) {
        let open = match (self.open, thought) {
            (Some(Open::Thinking(index)), true) | (Some(Open::Text(index)), false) => Some(index),
            _ => None,
        };
        let index = match open {
            Some(index) => index,
            None if text.is_empty() => return,
            None => {
                self.close_open(out);
                if thought {
                    let index = out.open_thinking("", None, false);
                    self.open = Some(Open::Thinking(index));
                    index
                } else {
                    let index = out.open_text("");
                    self.open = Some(Open::Text(index));
                    index
                }
            }
        };
        out.append(index, text);
        if let Some(signature) = signature.filter(|s| !s.is_empty()) {
            out.set_signature(index, signature);
        }
    }

    fn close_open(&mut self, out: &mut MessageWriter) {
        if let Some(Open::Text(index) | Open::Thinking(index)) = self.open.take() {
            out.close(index);
        }
    }

    fn function_call(
        &mut self,
        out: &mut MessageWriter,
        call: wire::FunctionCall<'_>,
        signature: Option<Cow<'_, str>>,
    ) {
        let name = call.name.as_deref().filter(|n| !n.is_empty());
        let continues = call.will_continue == Some(true);
        if self.streamed.is_some() && name.is_none() {
            match call.partial_args {
                Some(pieces) => self.partial_args(out, pieces),
                None if !continues => self.finish_streamed(out),
                None => {}
            }
            return;
        }
        // A new call while one still streams: the old one is as complete as it will get.
        self.finish_streamed(out);
        self.close_open(out);
        let id = self.call_id(out, call.id.as_deref(), name.unwrap_or(""));
        let mut tool_call = ToolCall::new(id, name.unwrap_or(""), Value::Object(Map::new()));
        tool_call.thought_signature = signature.map(Cow::into_owned);
        if continues {
            let content_index = out.open_tool_call(tool_call);
            self.streamed = Some(StreamedCall {
                content_index,
                continuing: None,
            });
            if let Some(pieces) = call.partial_args {
                self.partial_args(out, pieces);
            }
            return;
        }
        let arguments = call
            .args
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        let content_index = out.open_tool_call(tool_call);
        let text = arguments.to_string();
        out.update_tool_call(content_index, |call| call.arguments = arguments.clone());
        out.tool_call_text(content_index, &text);
        out.finish_tool_call_with(content_index, arguments, None);
    }

    /// `functionCall.id`, unless missing or already used in this message: then
    /// `<name>_<ms timestamp>_<counter>`, as pi builds it (any unique id would do).
    fn call_id(&self, out: &MessageWriter, given: Option<&str>, name: &str) -> String {
        if let Some(id) = given.filter(|id| !id.is_empty())
            && !out.message().tool_calls().any(|call| call.id == id)
        {
            return id.to_owned();
        }
        let n = GENERATED_IDS.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{name}_{}_{n}", crate::message::now_ms())
    }

    /// Vertex `partialArgs`: each piece sets the value at its `jsonPath`; a string piece
    /// after one marked `willContinue` extends that string.
    fn partial_args(&mut self, out: &mut MessageWriter, pieces: Vec<wire::PartialArg<'_>>) {
        let Some(streamed) = &mut self.streamed else {
            return;
        };
        for piece in pieces {
            let Some(path) = parse_json_path(&piece.json_path) else {
                continue;
            };
            let change = if let Some(text) = piece.string_value {
                if streamed.continuing.as_ref() == Some(&path) {
                    Piece::Append(text.into_owned())
                } else {
                    Piece::Set(Value::String(text.into_owned()))
                }
            } else if let Some(value) = piece.number_value.or(piece.bool_value) {
                Piece::Set(value)
            } else if piece.null_value {
                Piece::Set(Value::Null)
            } else {
                continue;
            };
            out.update_tool_call(streamed.content_index, |call| {
                apply(&mut call.arguments, &path, change)
            });
            streamed.continuing = (piece.will_continue == Some(true)).then_some(path);
            out.tool_call_text(streamed.content_index, "");
        }
    }

    /// Close a streamed call: one last delta carries its compact JSON, so the deltas of
    /// every call still concatenate to its argument text.
    fn finish_streamed(&mut self, out: &mut MessageWriter) {
        if let Some(call) = self.streamed.take() {
            let arguments = out
                .update_tool_call(call.content_index, |call| call.arguments.clone())
                .unwrap_or_else(|| Value::Object(Map::new()));
            out.tool_call_text(call.content_index, &arguments.to_string());
            out.finish_tool_call_with(call.content_index, arguments, None);
        }
    }
}

impl StreamParser for ChunkParser {
    fn event(&mut self, out: &mut MessageWriter, _name: &str, data: &str) -> Result<(), String> {
        let chunk: wire::Chunk<'_> = serde_json::from_str(data).map_err(|error| {
            format!(
                "Malformed SSE data: {error}; data={}",
                crate::excerpt::excerpt(data)
            )
        })?;
        self.chunk(out, chunk)
    }

    fn end(&mut self, out: &mut MessageWriter) -> Result<StopReason, String> {
        self.finish_streamed(out);
        self.close_open(out);
        self.finish
            .take()
            .unwrap_or_else(|| Err("Google stream ended without a finish reason".to_owned()))
    }
}

fn map_finish_reason(reason: &str) -> Result<StopReason, String> {
    match reason {
        "STOP" => Ok(StopReason::Stop),
        // pi does not resume with the continuation token either.
        "MAX_TOKENS" | "CONTINUATION" => Ok(StopReason::Length),
        other => Err(format!("Provider stopped with: {other}")),
    }
}

/// `$.a.b[0]` / `$['a']` -> path segments; `None` for anything else.
fn parse_json_path(path: &str) -> Option<Vec<PathSegment>> {
    let mut rest = path.strip_prefix('$')?;
    let mut segments = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            segments.push(PathSegment::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            segments.push(PathSegment::Key(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            segments.push(PathSegment::Index(after[..end].parse().ok()?));
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(segments)
}

/// Apply one piece to the call's arguments, creating the containers its path needs.
fn apply(arguments: &mut Value, path: &[PathSegment], piece: Piece) -> Option<()> {
    let mut slot = arguments;
    for segment in path {
        slot = child(slot, segment)?;
    }
    match (piece, slot) {
        (Piece::Set(value), slot) => *slot = value,
        (Piece::Append(text), Value::String(existing)) => existing.push_str(&text),
        (Piece::Append(text), slot) => *slot = Value::String(text),
    }
    Some(())
}

/// The member or item at `segment`, created (and its parent made a container) if missing.
fn child<'a>(value: &'a mut Value, segment: &PathSegment) -> Option<&'a mut Value> {
    match segment {
        PathSegment::Key(key) => {
            if !value.is_object() {
                *value = Value::Object(Map::new());
            }
            Some(
                value
                    .as_object_mut()?
                    .entry(key.clone())
                    .or_insert(Value::Null),
            )
        }
        PathSegment::Index(i) => {
            if !value.is_array() {
                *value = Value::Array(Vec::new());
            }
            let items = value.as_array_mut()?;
            if items.len() <= *i {
                items.resize(*i + 1, Value::Null);
            }
            items.get_mut(*i)
        }
    }
}

/// The chunk fields this parser reads; everything else is skipped unparsed. Strings borrow
/// from the event data unless they hold escapes.
mod wire {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::Value;

    use crate::message::Usage;

    /// One `GenerateContentResponse` of the stream.
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Chunk<'a> {
        #[serde(borrow, default)]
        pub(super) candidates: Vec<Candidate<'a>>,
        #[serde(default)]
        pub(super) usage_metadata: Option<UsageMetadata>,
        #[serde(borrow, default)]
        pub(super) response_id: Option<Cow<'a, str>>,
        /// An error sent inside a 200 stream.
        #[serde(default)]
        pub(super) error: Option<Value>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Candidate<'a> {
        #[serde(borrow, default)]
        pub(super) content: Option<Content<'a>>,
        #[serde(borrow, default)]
        pub(super) finish_reason: Option<Cow<'a, str>>,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct Content<'a> {
        #[serde(borrow, default)]
        pub(super) parts: Vec<Part<'a>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Part<'a> {
        #[serde(borrow, default)]
        pub(super) text: Option<Cow<'a, str>>,
        #[serde(default)]
        pub(super) thought: Option<bool>,
        #[serde(borrow, default)]
        pub(super) function_call: Option<FunctionCall<'a>>,
        #[serde(borrow, default)]
        pub(super) thought_signature: Option<Cow<'a, str>>,
    }

    /// A whole call, or (Vertex `streamFunctionCallArguments`) one piece of a streamed one.
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct FunctionCall<'a> {
        #[serde(borrow, default)]
        pub(super) id: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub(super) name: Option<Cow<'a, str>>,
        #[serde(default)]
        pub(super) args: Option<Value>,
        #[serde(default)]
        pub(super) will_continue: Option<bool>,
        #[serde(borrow, default)]
        pub(super) partial_args: Option<Vec<PartialArg<'a>>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct PartialArg<'a> {
        #[serde(borrow, default)]
        pub(super) json_path: Cow<'a, str>,
        #[serde(borrow, default)]
        pub(super) string_value: Option<Cow<'a, str>>,
        #[serde(default)]
        pub(super) number_value: Option<Value>,
        #[serde(default)]
        pub(super) bool_value: Option<Value>,
        /// Protobuf writes `NullValue` as JSON `null`: the key's presence is the value.
        #[serde(default, deserialize_with = "present")]
        pub(super) null_value: bool,
        #[serde(default)]
        pub(super) will_continue: Option<bool>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct UsageMetadata {
        #[serde(default)]
        prompt_token_count: u64,
        #[serde(default)]
        cached_content_token_count: u64,
        #[serde(default)]
        candidates_token_count: u64,
        #[serde(default)]
        thoughts_token_count: u64,
        #[serde(default)]
        total_token_count: u64,
    }

    impl From<UsageMetadata> for Usage {
        /// Thoughts are output; cached prompt tokens are not input.
        fn from(usage: UsageMetadata) -> Self {
            Usage {
                input: usage
                    .prompt_token_count
                    .saturating_sub(usage.cached_content_token_count),
                output: usage.candidates_token_count + usage.thoughts_token_count,
                cache_read: usage.cached_content_token_count,
                cache_write: 0,
                total_tokens: usage.total_token_count,
                ..Usage::default()
            }
        }
    }

    fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(true)
    }
}
