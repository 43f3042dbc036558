//! Messages, content blocks, usage and stop reasons: the transcript.
//!
//! Field names on the wire follow pi's camelCase spelling; key order of every JSON value a
//! model sent is preserved (`serde_json` with `preserve_order`).

use std::ops::AddAssign;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::declaration::Tool;

/// Milliseconds since the Unix epoch, as pi stamps messages.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text(TextContent),
    /// Model reasoning.
    Thinking(ThinkingContent),
    /// An image, base64-encoded.
    Image(ImageContent),
    /// A sound clip, base64-encoded: a tool result's, for clients that take one (an MCP
    /// client). A provider's API that cannot carry it shows the model a note instead.
    Audio(AudioContent),
    /// A resource embedded whole, text or binary: a tool result's, as MCP sends one. A
    /// provider's API shows the model its text, its image, or a note of what was left out.
    Resource(EmbeddedResource),
    /// A call of a tool by the model.
    ToolCall(ToolCall),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image block from base64 data and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// An audio block from base64 data and its MIME type (`audio/wav`).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ContentBlock::Resource(EmbeddedResource::text(uri, mime_type, text))
    }

    /// An embedded binary resource from base64 data.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        ContentBlock::Resource(EmbeddedResource::blob(uri, mime_type, base64))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The call of a tool-call block.
    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        }
    }
}

/// `{"type":"text","text"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature of the text, replayed to the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// `{"type":"thinking","thinking"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Provider signature (for OpenAI-compatible APIs: the field it came from, e.g.
    /// `reasoning_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// Redacted reasoning (the signature carries it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// `{"type":"image","data","mimeType"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 data.
    pub data: String,
    /// For example `image/png`.
    pub mime_type: String,
}

/// `{"type":"audio","data","mimeType"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64 data.
    pub data: String,
    /// For example `audio/wav`.
    pub mime_type: String,
}

/// `{"type":"resource","uri","mimeType","text"|"blob"}`: a resource's contents, embedded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// For example `text/plain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its contents.
    #[serde(flatten)]
    pub body: ResourceBody,
}

impl EmbeddedResource {
    /// A text resource.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
        }
    }

    /// A binary resource from base64 data.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(base64.into()),
        }
    }
}

/// A resource's contents: text, or base64 data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Base64 data.
    Blob(String),
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// The tool the model called.
    pub name: String,
    /// The arguments as the model sent them: a JSON object once the call is complete.
    pub arguments: Value,
    /// Gemini's thought signature, replayed to the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// Set when the complete argument text was not a JSON object; `arguments` is then `{}`
    /// (see [`parse_tool_call_arguments`](crate::json::parse_tool_call_arguments)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

impl ToolCall {
    /// A call with the given id, name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            arguments_error: None,
        }
    }
}

/// Why a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum StopReason {
    /// Still streaming.
    Pending,
    /// The model finished.
    #[default]
    Stop,
    /// The output token limit was hit.
    Length,
    /// The model wants its tool calls run.
    ToolUse,
    /// The request or the stream failed; see `error_message`.
    Error,
    /// The run was cancelled.
    Aborted,
    /// The provider deferred the response.
    Deferred,
}

impl StopReason {
    /// `error` or `aborted`: the response failed and its calls are never run.
    pub fn is_failure(self) -> bool {
        matches!(self, StopReason::Error | StopReason::Aborted)
    }

    /// The wire name (`toolUse`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Pending => "pending",
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Deferred => "deferred",
        }
    }
}

/// Money spent, per token class.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
    /// The sum.
    pub total: f64,
}

/// The speed of one response as its server measured it: llama.cpp sends these as `timings`
/// on its last chunk. Fields the server leaves out stay `None`.
///
/// ```
/// use pi_runtime::message::Timings;
///
/// let timings: Timings = serde_json::from_value(serde_json::json!({
///     "promptTokens": 120, "promptMs": 40.0, "predictedTokens": 25, "predictedMs": 250.0,
///     "predictedPerSecond": 100.0
/// }))?;
/// assert_eq!(timings.predicted_per_second, Some(100.0));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Timings {
    /// Prompt tokens read from the server's cache instead of evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_tokens: Option<u64>,
    /// Prompt tokens evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Milliseconds spent on the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ms: Option<f64>,
    /// Prompt tokens per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_per_second: Option<f64>,
    /// Tokens generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_tokens: Option<u64>,
    /// Milliseconds spent generating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    /// Tokens generated per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_per_second: Option<f64>,
}

/// Token usage of a response or a tool.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
    /// Tokens written to the prompt cache.
    pub cache_write: u64,
    /// All tokens.
    pub total_tokens: u64,
    /// Output tokens spent on reasoning, already counted in `output` (OpenAI Responses;
    /// 0 where the provider does not say).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
    /// Cost in dollars.
    pub cost: Cost,
}

impl AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
    }
}

/// Usage adds up field by field, for the usage of several responses.
///
/// ```
/// use pi_runtime::Usage;
///
/// let mut total = Usage::default();
/// let mut one = Usage::default();
/// one.input = 10;
/// one.cost.total = 0.5;
/// total += one;
/// total += one;
/// assert_eq!((total.input, total.cost.total), (20, 1.0));
/// ```
impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.reasoning += other.reasoning;
        self.cost += other.cost;
    }
}

/// Takes a reference because serde's `skip_serializing_if` passes one.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The content of a user message: a plain string or blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum UserContent {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<ContentBlock>),
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// What the user said.
    pub content: UserContent,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: u64,
}

impl UserMessage {
    /// A user message with one text block, stamped now. Throughout the crate,
    /// `X::text(..)` builds and `.text_content()` reads.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_ms(),
        }
    }

    /// The text: the string, or the text blocks joined with `\n`.
    pub fn text_content(&self) -> String {
        match &self.content {
            UserContent::Text(text) => text.clone(),
            UserContent::Blocks(blocks) => join_text(blocks),
        }
    }
}

/// A system message: text for the system prompt, named sections of it, and the tools the
/// transcript declares from here on. The first message of a transcript, when it is a system
/// message, is the system prompt itself; a later one is an update the model reads in place,
/// or that a wire API without mid-conversation system messages folds into the first.
///
/// Replaying the transcript's system messages in order gives the tools declared to the model
/// ([`transcript::current_tools`](crate::transcript::current_tools)).
///
/// ```
/// use pi_runtime::message::{Message, SystemMessage};
///
/// let update: Message = SystemMessage::text("Be brief.").into();
/// assert_eq!(update.role(), "system");
/// assert_eq!(update.text_content(), "Be brief.");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SystemMessage {
    /// The text: a string, or text blocks read joined with `\n`.
    #[serde(default = "empty_content")]
    pub content: UserContent,
    /// Named sections of the system prompt, patched in order: a value replaces the section
    /// (or appends it), `None` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<IndexMap<String, Option<String>>>,
    /// Tools declared from here on; a name declared before takes the new definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<Tool>>,
    /// Tools no longer declared from here on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolRef>>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: u64,
}

fn empty_content() -> UserContent {
    UserContent::Text(String::new())
}

impl SystemMessage {
    /// A system message with `text` and no tool changes, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        SystemMessage {
            content: UserContent::Text(text.into()),
            ..SystemMessage::default()
        }
    }

    /// The text: the string, or the text blocks joined with `\n`.
    pub fn text_content(&self) -> String {
        match &self.content {
            UserContent::Text(text) => text.clone(),
            UserContent::Blocks(blocks) => join_text(blocks),
        }
    }

    /// This message, declaring `tools` from here on.
    #[must_use]
    pub fn with_tools_added(mut self, tools: Vec<Tool>) -> Self {
        self.tools_added = Some(tools);
        self
    }

    /// This message, removing the tools named `names` from here on.
    #[must_use]
    pub fn with_tools_removed<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let removed = names.into_iter().map(|name| ToolRef { name: name.into() });
        self.tools_removed = Some(removed.collect());
        self
    }

    /// This message, setting the system prompt's section `name` to `value` (`None` removes
    /// the section).
    #[must_use]
    pub fn with_section(mut self, name: impl Into<String>, value: Option<String>) -> Self {
        self.sections
            .get_or_insert_with(IndexMap::new)
            .insert(name.into(), value);
        self
    }

    /// The tools this message adds (empty when it adds none).
    pub fn added(&self) -> &[Tool] {
        self.tools_added.as_deref().unwrap_or_default()
    }

    /// The tools this message removes (empty when it removes none).
    pub fn removed(&self) -> &[ToolRef] {
        self.tools_removed.as_deref().unwrap_or_default()
    }

    /// Whether this message adds or removes any tool.
    pub fn changes_tools(&self) -> bool {
        !self.added().is_empty() || !self.removed().is_empty()
    }
}

impl Default for SystemMessage {
    /// Empty text, no sections, no tool changes, stamped now.
    fn default() -> Self {
        SystemMessage {
            content: empty_content(),
            sections: None,
            tools_added: None,
            tools_removed: None,
            timestamp: now_ms(),
        }
    }
}

/// A tool named in a system message's `toolsRemoved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    /// The tool's name.
    pub name: String,
}

/// A response of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks in the order the model produced them.
    pub content: Vec<ContentBlock>,
    /// The wire API, e.g. `openai-completions`.
    #[serde(default)]
    pub api: String,
    /// The provider, e.g. `deepseek`.
    #[serde(default)]
    pub provider: String,
    /// The model id.
    #[serde(default)]
    pub model: String,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// Why the response ended.
    pub stop_reason: StopReason,
    /// What went wrong, for `error` and `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The provider's response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The model the server says answered, when it differs from [`model`](Self::model)
    /// (a local server names its file; a gateway its fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// The stop reason exactly as the server sent it (`finish_reason`, `finishReason`,
    /// `status`), before it was mapped to [`stop_reason`](Self::stop_reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    /// How fast the server worked, when it says (llama.cpp's `timings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: u64,
    /// How long the response took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl AssistantMessage {
    /// An empty message of the given model, stamped now, with `stopReason: "pending"`.
    pub fn empty(api: &str, provider: &str, model: &str) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: api.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            usage: Usage::default(),
            stop_reason: StopReason::Pending,
            error_message: None,
            response_id: None,
            response_model: None,
            raw_stop_reason: None,
            timings: None,
            timestamp: now_ms(),
            duration_ms: None,
        }
    }

    /// The tool calls, in source order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// The text blocks, concatenated.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect()
    }

    /// The text blocks, concatenated (the same as [`text`](Self::text); every message and
    /// result reads with `text_content`).
    pub fn text_content(&self) -> String {
        self.text()
    }
}

/// The result of one tool call as it is stored in the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool the model called.
    pub tool_name: String,
    /// What the model sees.
    pub content: Vec<ContentBlock>,
    /// For UIs and logs; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The tool's own usage (for example a sub-model call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The call failed.
    #[serde(default)]
    pub is_error: bool,
    /// How long `execute` took; absent when it never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: u64,
}

impl ToolResultMessage {
    /// The text blocks joined with `\n`.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }

    /// The text blocks joined with `\n` (the same as [`text`](Self::text); every message
    /// and result reads with `text_content`).
    pub fn text_content(&self) -> String {
        self.text()
    }
}

/// The text blocks of `content` joined with `\n`.
pub fn join_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for (i, text) in content.iter().filter_map(ContentBlock::as_text).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(text);
    }
    out
}

/// One message of the transcript.
///
/// Each variant holds its message behind an [`Arc`]: the same message is in the transcript,
/// in the agent's state, in every event that reports it and in each request's [`Context`](crate::Context),
/// and cloning a `Message` only counts a reference. Build one with
/// `.into()` from a [`UserMessage`], [`AssistantMessage`] or [`ToolResultMessage`]; read it
/// through the `Arc` as through a reference; change one in place with [`Arc::make_mut`],
/// which copies it only if it is shared.
///
/// ```
/// use pi_runtime::{Message, UserMessage};
///
/// let message: Message = UserMessage::text("hi").into();
/// let copy = message.clone(); // counts a reference; the text is not copied
/// assert_eq!(copy, message);
/// assert_eq!(copy.role(), "user");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Message {
    /// Instructions and tool changes: the system prompt's text and sections, and the tools
    /// added or removed from here on (see [`transcript`](crate::transcript)).
    System(Arc<SystemMessage>),
    /// From the user.
    User(Arc<UserMessage>),
    /// From the model.
    Assistant(Arc<AssistantMessage>),
    /// The result of a tool call.
    ToolResult(Arc<ToolResultMessage>),
}

impl Message {
    /// The message's text, whatever its role: a user message's text, an assistant
    /// message's text blocks, a tool result's text blocks.
    ///
    /// ```
    /// use pi_runtime::{Message, UserMessage};
    ///
    /// assert_eq!(Message::from(UserMessage::text("hi")).text_content(), "hi");
    /// ```
    pub fn text_content(&self) -> String {
        match self {
            Message::System(message) => message.text_content(),
            Message::User(message) => message.text_content(),
            Message::Assistant(message) => message.text(),
            Message::ToolResult(message) => message.text(),
        }
    }

    /// `system`, `user`, `assistant` or `toolResult`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::System(_) => "system",
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(message) => Some(message),
            _ => None,
        }
    }

    /// The system message, if this is one.
    pub fn as_system(&self) -> Option<&SystemMessage> {
        match self {
            Message::System(message) => Some(message),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Message::ToolResult(message) => Some(message),
            _ => None,
        }
    }
}

impl From<SystemMessage> for Message {
    fn from(m: SystemMessage) -> Self {
        Message::System(Arc::new(m))
    }
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Message::User(Arc::new(m))
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Message::Assistant(Arc::new(m))
    }
}

impl From<Arc<AssistantMessage>> for Message {
    fn from(m: Arc<AssistantMessage>) -> Self {
        Message::Assistant(m)
    }
}

impl From<Arc<ToolResultMessage>> for Message {
    fn from(m: Arc<ToolResultMessage>) -> Self {
        Message::ToolResult(m)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(m: ToolResultMessage) -> Self {
        Message::ToolResult(Arc::new(m))
    }
}
