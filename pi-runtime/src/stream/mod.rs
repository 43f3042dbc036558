//! Assistant-message stream events, their one writer, and the model interface
//! every provider and the faux model implement.

use std::fmt;
use std::sync::Arc;

use futures::stream::BoxStream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::declaration::Tool;
use crate::message::{AssistantMessage, Message, StopReason, ToolCall};

mod live;
mod writer;

pub use live::{LiveMessage, MessageGuard, MessageGuardMut};
pub use writer::MessageWriter;

/// One event of a streaming response, as its [`MessageWriter`] reports it.
///
/// Unlike pi, deltas do not carry a copy of the whole partial message (that would make a
/// stream quadratic): `start` hands out a [`LiveMessage`] that the writer keeps current,
/// and every later event says only what changed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// The response began.
    Start {
        /// The message being built, kept current by the writer.
        message: LiveMessage,
    },
    /// A text block was appended (empty).
    TextStart {
        /// Its index in `content`.
        content_index: usize,
    },
    /// Text was appended.
    TextDelta {
        /// The block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A text block is final.
    TextEnd {
        /// The block.
        content_index: usize,
        /// Its full text.
        content: String,
    },
    /// A thinking block was appended (empty).
    ThinkingStart {
        /// Its index in `content`.
        content_index: usize,
    },
    /// Thinking text was appended.
    ThinkingDelta {
        /// The block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A thinking block is final.
    ThinkingEnd {
        /// The block.
        content_index: usize,
        /// Its full text.
        content: String,
    },
    /// A tool-call block was appended; id and name are set when known.
    ToolCallStart {
        /// Its index in `content`.
        content_index: usize,
        /// The block as it starts (arguments usually `{}`).
        tool_call: ToolCall,
    },
    /// A piece of raw argument text arrived (possibly `""`).
    ToolCallDelta {
        /// The block.
        content_index: usize,
        /// The raw argument text piece; the call's partial arguments in the live message
        /// already show it (see [`parse_partial`](crate::json::parse_partial)).
        delta: String,
    },
    /// A tool call's arguments are final: the one strict parse of the complete text.
    ToolCallEnd {
        /// The block.
        content_index: usize,
        /// The final block.
        tool_call: ToolCall,
    },
    /// The response succeeded (`stop`, `length`, `toolUse` or `deferred`).
    Done {
        /// Why it ended.
        reason: StopReason,
        /// The final message (the live message's own, shared).
        message: Arc<AssistantMessage>,
    },
    /// The response failed (`error` or `aborted`); partial content is kept.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The message, with `error_message` set (the live message's own, shared).
        error: Arc<AssistantMessage>,
    },
}

impl AssistantMessageEvent {
    /// The event's wire name (`text_delta`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            AssistantMessageEvent::Start { .. } => "start",
            AssistantMessageEvent::TextStart { .. } => "text_start",
            AssistantMessageEvent::TextDelta { .. } => "text_delta",
            AssistantMessageEvent::TextEnd { .. } => "text_end",
            AssistantMessageEvent::ThinkingStart { .. } => "thinking_start",
            AssistantMessageEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantMessageEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantMessageEvent::ToolCallStart { .. } => "toolcall_start",
            AssistantMessageEvent::ToolCallDelta { .. } => "toolcall_delta",
            AssistantMessageEvent::ToolCallEnd { .. } => "toolcall_end",
            AssistantMessageEvent::Done { .. } => "done",
            AssistantMessageEvent::Error { .. } => "error",
        }
    }

    /// The content index of block events.
    pub fn content_index(&self) -> Option<usize> {
        match self {
            AssistantMessageEvent::TextStart { content_index }
            | AssistantMessageEvent::TextDelta { content_index, .. }
            | AssistantMessageEvent::TextEnd { content_index, .. }
            | AssistantMessageEvent::ThinkingStart { content_index }
            | AssistantMessageEvent::ThinkingDelta { content_index, .. }
            | AssistantMessageEvent::ThinkingEnd { content_index, .. }
            | AssistantMessageEvent::ToolCallStart { content_index, .. }
            | AssistantMessageEvent::ToolCallDelta { content_index, .. }
            | AssistantMessageEvent::ToolCallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        }
    }
}

/// What a model is asked: system prompt, transcript and tools. `tools` are the ones the
/// conversation declared first; system messages in `messages` may add and remove tools from
/// there ([`current_tools`](Self::current_tools) replays them).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Context {
    /// The system prompt.
    pub system_prompt: String,
    /// The transcript.
    pub messages: Vec<Message>,
    /// The active tools' provider-facing definitions.
    pub tools: Vec<Tool>,
}

impl Context {
    /// A request for `messages` under `system_prompt`, offering `tools`.
    pub fn new(system_prompt: impl Into<String>, messages: Vec<Message>, tools: Vec<Tool>) -> Self {
        Context {
            system_prompt: system_prompt.into(),
            messages,
            tools,
        }
    }
}

/// Reasoning effort requested from a model that reasons.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ThinkingLevel {
    /// No reasoning.
    #[default]
    Off,
    /// Minimal.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
    /// Maximum.
    Max,
}

/// Per-request options: the default, changed with the `with_*` methods.
///
/// ```
/// use pi_runtime::StreamOptions;
///
/// let options = StreamOptions::default().with_max_tokens(1024).with_temperature(0.2);
/// assert_eq!(options.max_tokens, Some(1024));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StreamOptions {
    /// The run's cancellation signal; a fired signal ends the stream with `aborted`.
    pub signal: CancellationToken,
    /// Requested reasoning level (`None` or `Off`: no reasoning).
    pub reasoning: Option<ThinkingLevel>,
    /// Which tools the model may or must call; `None` sends no tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may ask for several tool calls in one response (`None`: the
    /// provider's default, which allows it). Sent only with tools: Chat Completions' and
    /// Responses' `parallel_tool_calls`, Anthropic's `tool_choice.disable_parallel_tool_use`
    /// (`Some(false)` only); Gemini has no such field and sends nothing.
    pub parallel_tool_calls: Option<bool>,
    /// The most tool calls one response may make (OpenAI Responses' `max_tool_calls`, which
    /// counts built-in tools too). The other APIs have no such field and send nothing.
    pub max_tool_calls: Option<u32>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Prompt caching of providers that mark cache breakpoints (Anthropic); `None` means
    /// [`CacheRetention::Short`].
    pub cache_retention: Option<CacheRetention>,
    /// A conversation id for providers that route requests of one conversation to the same
    /// prompt cache (OpenAI Responses' `prompt_cache_key`, cut to 64 characters). Not sent
    /// with [`CacheRetention::None`].
    pub session_id: Option<String>,
}

impl StreamOptions {
    /// End the stream with `aborted` when this signal fires.
    #[must_use]
    pub fn with_signal(mut self, signal: CancellationToken) -> Self {
        self.signal = signal;
        self
    }

    /// Ask for this reasoning level.
    #[must_use]
    pub fn with_reasoning(mut self, level: ThinkingLevel) -> Self {
        self.reasoning = Some(level);
        self
    }

    /// Send this tool choice.
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Allow (`true`) or forbid (`false`) several tool calls in one response.
    #[must_use]
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Let one response make at most this many tool calls (OpenAI Responses only).
    #[must_use]
    pub fn with_max_tool_calls(mut self, max: u32) -> Self {
        self.max_tool_calls = Some(max);
        self
    }

    /// Limit the output to this many tokens.
    #[must_use]
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Sample at this temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Cache the prompt prefix this long.
    #[must_use]
    pub fn with_cache_retention(mut self, retention: CacheRetention) -> Self {
        self.cache_retention = Some(retention);
        self
    }

    /// Route the request with the others of this conversation.
    #[must_use]
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
}

/// Which tools the model may or must call, whatever its provider. Each wire API's request
/// writes it in its own format:
///
/// | choice | OpenAI Chat Completions | OpenAI Responses | Anthropic Messages | Google Gemini (`functionCallingConfig.mode`) |
/// |---|---|---|---|---|
/// | `Auto` | `"auto"` | `"auto"` | `{"type":"auto"}` | `AUTO` (`VALIDATED` with a strict tool) |
/// | `None` | `"none"` | `"none"` | `{"type":"none"}` | `NONE` |
/// | `Required` | `"required"` | `"required"` | `{"type":"any"}` | `ANY` |
/// | `Tool(name)` | `{"type":"function","function":{"name":name}}` | `{"type":"function","name":name}` | `{"type":"tool","name":name}` | `ANY`, with `allowedFunctionNames: [name]` |
/// | `Raw(json)` | `json` | `json` | a string `s` as `{"type":s}`, an object as is | `"none"` and `"any"` as `NONE` and `ANY`; `null`, `false` and `""` as no choice; anything else as `Auto` |
///
/// With [`StreamOptions::parallel_tool_calls`] `Some(false)`, Anthropic's choice also carries
/// `"disable_parallel_tool_use": true` (except `none` and a `Raw` object, sent as given), and a
/// request with tools but no choice sends `{"type":"auto","disable_parallel_tool_use":true}`.
///
/// Models that are not HTTP wire APIs (the faux model, your own [`LanguageModel`]) may
/// ignore it; the faux model does.
///
/// ```
/// use pi_runtime::{StreamOptions, ToolChoice};
///
/// let options = StreamOptions::default().with_tool_choice(ToolChoice::Tool("submit".into()));
/// assert_eq!(options.tool_choice, Some(ToolChoice::Tool("submit".into())));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides whether to call tools.
    Auto,
    /// The model calls no tool.
    None,
    /// The model calls at least one tool, of its choosing (Anthropic and Gemini: "any").
    Required,
    /// The model calls this tool (on Gemini: some tool, see the table).
    Tool(String),
    /// The provider's own `tool_choice` JSON, forwarded as given, for what the
    /// variants above do not say, such as OpenAI Responses' `allowed_tools`.
    Raw(Value),
}

/// How long a provider should keep the request's prompt prefix cached.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheRetention {
    /// No cache breakpoints.
    None,
    /// The provider's default lifetime (Anthropic: 5 minutes).
    #[default]
    Short,
    /// The long lifetime (Anthropic: one hour).
    Long,
}

/// A stream of events that ends with `Done` or `Error`.
pub type AssistantEventStream = BoxStream<'static, AssistantMessageEvent>;

/// Anything that answers a context with a streamed assistant message: real providers, the
/// faux model, or a user's own function.
///
/// Failures are never panics: they are an `Error` event with `stopReason` `error` or
/// `aborted` and an `error_message` that says what happened.
pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// The wire API (`openai-completions`, `anthropic-messages`, `google-generative-ai`,
    /// `faux`).
    fn api(&self) -> &str;
    /// The provider name (`openai`, `deepseek`, ...).
    fn provider(&self) -> &str;
    /// The model id.
    fn id(&self) -> &str;
    /// Stream a response.
    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream;
}

/// A shared model is a model: `Agent::builder().model(presets::openai("gpt-4o").build())`.
impl<M: LanguageModel + ?Sized> LanguageModel for std::sync::Arc<M> {
    fn api(&self) -> &str {
        (**self).api()
    }
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn id(&self) -> &str {
        (**self).id()
    }
    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream {
        (**self).stream(context, options)
    }
}
