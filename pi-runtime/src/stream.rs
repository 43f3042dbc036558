//! Assistant-message stream events (SPEC §2.4) and the model interface every provider and
//! the faux model implement.

use std::fmt;

use futures::stream::BoxStream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::json::{ArgumentChange, apply_changes};
use crate::message::{
    AssistantMessage, ContentBlock, Message, StopReason, ThinkingContent, ToolCall,
};
use crate::tool::Tool;

/// One event of a streaming response.
///
/// Unlike pi, deltas do not carry a copy of the whole partial message (that would make a
/// stream quadratic). [`AssistantMessage::apply_event`] keeps a partial message current
/// from the events in linear time.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantMessageEvent {
    /// The response began; `partial` is the empty message.
    Start {
        /// The message being built.
        partial: AssistantMessage,
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
        /// The raw argument text piece.
        delta: String,
        /// How the partial arguments (SPEC §6.2) changed.
        changes: Vec<ArgumentChange>,
    },
    /// A tool call's arguments are final (SPEC §6.4).
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
        /// The final message.
        message: AssistantMessage,
    },
    /// The response failed (`error` or `aborted`); partial content is kept.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The message, with `error_message` set.
        error: AssistantMessage,
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

impl AssistantMessage {
    /// Bring a partial message up to date with one event (linear in the event's size).
    pub fn apply_event(&mut self, event: &AssistantMessageEvent) {
        match event {
            AssistantMessageEvent::Start { partial } => *self = partial.clone(),
            AssistantMessageEvent::TextStart { content_index } => {
                self.put_block(*content_index, ContentBlock::text(""));
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                if let Some(ContentBlock::Text(t)) = self.content.get_mut(*content_index) {
                    t.text.push_str(delta);
                }
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
            } => {
                if let Some(ContentBlock::Text(t)) = self.content.get_mut(*content_index) {
                    t.text.clone_from(content);
                }
            }
            AssistantMessageEvent::ThinkingStart { content_index } => {
                let block = ContentBlock::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                });
                self.put_block(*content_index, block);
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let Some(ContentBlock::Thinking(t)) = self.content.get_mut(*content_index) {
                    t.thinking.push_str(delta);
                }
            }
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
            } => {
                if let Some(ContentBlock::Thinking(t)) = self.content.get_mut(*content_index) {
                    t.thinking.clone_from(content);
                }
            }
            AssistantMessageEvent::ToolCallStart {
                content_index,
                tool_call,
            } => {
                self.put_block(*content_index, ContentBlock::ToolCall(tool_call.clone()));
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                changes,
                ..
            } => {
                if let Some(ContentBlock::ToolCall(c)) = self.content.get_mut(*content_index) {
                    apply_changes(&mut c.arguments, changes);
                }
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                self.put_block(*content_index, ContentBlock::ToolCall(tool_call.clone()));
            }
            AssistantMessageEvent::Done { message, .. } => *self = message.clone(),
            AssistantMessageEvent::Error { error, .. } => *self = error.clone(),
        }
    }

    fn put_block(&mut self, index: usize, block: ContentBlock) {
        if index < self.content.len() {
            self.content[index] = block;
        } else {
            self.content.push(block);
        }
    }
}

/// What a model is asked: system prompt, transcript and active tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// The system prompt.
    pub system_prompt: String,
    /// The transcript.
    pub messages: Vec<Message>,
    /// The active tools' provider-facing definitions.
    pub tools: Vec<Tool>,
}

/// Reasoning effort requested from a model that reasons.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
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

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// The run's cancellation signal; a fired signal ends the stream with `aborted`.
    pub signal: CancellationToken,
    /// Requested reasoning level (`None` or `Off`: no reasoning).
    pub reasoning: Option<ThinkingLevel>,
    /// Forwarded as the provider's tool choice (`"auto"`, `"none"`, or an object).
    pub tool_choice: Option<Value>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Prompt caching of providers that mark cache breakpoints (Anthropic); `None` means
    /// [`CacheRetention::Short`].
    pub cache_retention: Option<CacheRetention>,
}

/// How long a provider should keep the request's prompt prefix cached.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
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
