//! The one writer of the assistant-message event protocol: every step of a
//! response changes the message in place and queues the event that reports it.
//!
//! Every provider adapter, the faux model, and a user's own [`LanguageModel`](super::LanguageModel)
//! drive a [`MessageWriter`]; nothing else defines what an event does to the message. The
//! consumer never replays events: the `start` event hands out a [`LiveMessage`], which
//! already shows every change.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::Value;

use super::AssistantMessageEvent;
use super::live::{LiveMessage, MessageGuard, MessageGuardMut};
use crate::json::{PartialJsonParser, parse_tool_call_arguments};
use crate::message::{AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall};

/// Builds one streamed assistant message and the events that report each step.
///
/// Steps change the [`LiveMessage`] at once and queue their event; the transport hands the
/// queued events out with [`pop_event`](Self::pop_event), in order. After
/// [`done`](Self::done) or [`fail`](Self::fail) nothing more is queued.
///
/// ```
/// use pi_runtime::stream::{AssistantMessageEvent, MessageWriter};
/// use pi_runtime::{AssistantMessage, StopReason};
///
/// let mut writer = MessageWriter::new(AssistantMessage::empty("my-api", "me", "model-1"));
/// writer.start();
/// let text = writer.open_text("");
/// writer.append(text, "Hello");
/// writer.close(text);
/// writer.done(StopReason::Stop);
/// let events: Vec<_> = std::iter::from_fn(|| writer.pop_event()).collect();
/// let kinds: Vec<_> = events.iter().map(AssistantMessageEvent::kind).collect();
/// assert_eq!(kinds, ["start", "text_start", "text_delta", "text_end", "done"]);
/// ```
#[derive(Debug)]
pub struct MessageWriter {
    live: LiveMessage,
    events: VecDeque<AssistantMessageEvent>,
    started_at: Instant,
    settled: bool,
}

impl MessageWriter {
    /// A writer of `message` (usually [`AssistantMessage::empty`]).
    pub fn new(message: AssistantMessage) -> Self {
        MessageWriter {
            live: LiveMessage::new(message),
            events: VecDeque::new(),
            started_at: Instant::now(),
            settled: false,
        }
    }

    /// The message being written, shared with every `start` event's readers.
    pub fn live(&self) -> &LiveMessage {
        &self.live
    }

    /// The message as it stands (held locked until the guard drops).
    pub fn message(&self) -> MessageGuard<'_> {
        self.live.guard()
    }

    /// Change what produces no event: usage, the response id.
    pub fn message_mut(&mut self) -> MessageGuardMut<'_> {
        MessageGuardMut::new(self.live.guard())
    }

    /// The next event to hand out.
    pub fn pop_event(&mut self) -> Option<AssistantMessageEvent> {
        self.events.pop_front()
    }

    /// `done` or `error` was queued; nothing more will be.
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The response began (`start`).
    pub fn start(&mut self) {
        let message = self.live.clone();
        self.emit(AssistantMessageEvent::Start { message });
    }

    /// Append a text block (`text_start`), then its initial text if any.
    pub fn open_text(&mut self, text: &str) -> usize {
        let index = self.push_block(ContentBlock::text(""));
        self.emit(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        self.append(index, text);
        index
    }

    /// Append a thinking block (`thinking_start`), then its initial text if any.
    pub fn open_thinking(
        &mut self,
        thinking: &str,
        signature: Option<String>,
        redacted: bool,
    ) -> usize {
        let index = self.push_block(ContentBlock::Thinking(ThinkingContent {
            thinking: String::new(),
            thinking_signature: signature,
            redacted: redacted.then_some(true),
        }));
        self.emit(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
        self.append(index, thinking);
        index
    }

    /// Append text to a text or thinking block (`text_delta` / `thinking_delta`). Empty
    /// pieces change nothing and are not reported.
    pub fn append(&mut self, index: usize, delta: &str) {
        if delta.is_empty() || self.settled {
            return;
        }
        let event = self
            .live
            .write(|message| match message.content.get_mut(index) {
                Some(ContentBlock::Text(block)) => {
                    block.text.push_str(delta);
                    Some(AssistantMessageEvent::TextDelta {
                        content_index: index,
                        delta: delta.to_owned(),
                    })
                }
                Some(ContentBlock::Thinking(block)) => {
                    block.thinking.push_str(delta);
                    Some(AssistantMessageEvent::ThinkingDelta {
                        content_index: index,
                        delta: delta.to_owned(),
                    })
                }
                _ => None,
            });
        if let Some(event) = event {
            self.emit(event);
        }
    }

    /// Extend a thinking block's signature (it arrives in pieces on some APIs).
    pub fn append_signature(&mut self, index: usize, piece: &str) {
        self.live.write(|message| {
            if let Some(ContentBlock::Thinking(block)) = message.content.get_mut(index) {
                block
                    .thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(piece);
            }
        });
    }

    /// Replace a text or thinking block's signature (Gemini repeats or updates it).
    pub fn set_signature(&mut self, index: usize, signature: &str) {
        self.live
            .write(|message| match message.content.get_mut(index) {
                Some(ContentBlock::Text(block)) => {
                    block.text_signature = Some(signature.to_owned());
                }
                Some(ContentBlock::Thinking(block)) => {
                    block.thinking_signature = Some(signature.to_owned());
                }
                _ => {}
            });
    }

    /// Replace a text or thinking block's text without an event. For an API that ends a
    /// block with its whole text, which may differ from the deltas (OpenAI Responses joins
    /// reasoning summary parts without the separators it streamed between them): the final
    /// copy wins, and the `*_end` event from [`close`](Self::close) reports it.
    pub fn set_text(&mut self, index: usize, text: &str) {
        self.live
            .write(|message| match message.content.get_mut(index) {
                Some(ContentBlock::Text(block)) => text.clone_into(&mut block.text),
                Some(ContentBlock::Thinking(block)) => text.clone_into(&mut block.thinking),
                _ => {}
            });
    }

    /// A text or thinking block is final (`text_end` / `thinking_end`).
    pub fn close(&mut self, index: usize) {
        let event = self.live.read(|message| match message.content.get(index) {
            Some(ContentBlock::Text(block)) => Some(AssistantMessageEvent::TextEnd {
                content_index: index,
                content: block.text.clone(),
            }),
            Some(ContentBlock::Thinking(block)) => Some(AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content: block.thinking.clone(),
            }),
            _ => None,
        });
        if let Some(event) = event {
            self.emit(event);
        }
    }

    /// Append a tool-call block (`toolcall_start`).
    pub fn open_tool_call(&mut self, call: ToolCall) -> usize {
        let index = self.push_block(ContentBlock::ToolCall(call.clone()));
        self.emit(AssistantMessageEvent::ToolCallStart {
            content_index: index,
            tool_call: call,
        });
        index
    }

    /// Change the tool call at `index` without an event (a late id or name).
    pub fn update_tool_call<R>(
        &mut self,
        index: usize,
        f: impl FnOnce(&mut ToolCall) -> R,
    ) -> Option<R> {
        self.live
            .write(|message| match message.content.get_mut(index) {
                Some(ContentBlock::ToolCall(call)) => Some(f(call)),
                _ => None,
            })
    }

    /// A piece of argument text arrived (`toolcall_delta`, also for `""`): `parser` reads it
    /// into the call's partial arguments in place, so the cost is linear in the delta.
    pub fn tool_call_delta(&mut self, index: usize, delta: &str, parser: &mut PartialJsonParser) {
        if !delta.is_empty() {
            self.update_tool_call(index, |call| parser.push(delta, &mut call.arguments));
        }
        self.tool_call_text(index, delta);
    }

    /// A `toolcall_delta` for text the caller already applied to the call's arguments
    /// (through [`update_tool_call`](Self::update_tool_call)); Gemini's streamed arguments
    /// are not JSON text.
    pub fn tool_call_text(&mut self, index: usize, delta: &str) {
        self.emit(AssistantMessageEvent::ToolCallDelta {
            content_index: index,
            delta: delta.to_owned(),
        });
    }

    /// The call's complete argument text arrived: parse it once, strictly, and
    /// emit `toolcall_end`.
    pub fn finish_tool_call(&mut self, index: usize, text: &str) {
        let parsed = parse_tool_call_arguments(text);
        self.finish_tool_call_with(index, parsed.arguments, parsed.error);
    }

    /// `toolcall_end` with arguments that need no parse.
    pub fn finish_tool_call_with(&mut self, index: usize, arguments: Value, error: Option<String>) {
        let call = self.update_tool_call(index, |call| {
            call.arguments = arguments;
            call.arguments_error = error;
            call.clone()
        });
        if let Some(call) = call {
            self.emit(AssistantMessageEvent::ToolCallEnd {
                content_index: index,
                tool_call: call,
            });
        }
    }

    /// Append a block that streams no events (an image a scripted assistant carries).
    pub fn push_silent_block(&mut self, block: ContentBlock) -> usize {
        self.push_block(block)
    }

    /// The response succeeded (`done`).
    pub fn done(&mut self, reason: StopReason) {
        if self.settled {
            return;
        }
        let elapsed = self.elapsed_ms();
        self.live.write(|message| {
            message.stop_reason = reason;
            message.duration_ms = Some(elapsed);
        });
        let message = self.live.share();
        self.settled = true;
        self.events
            .push_back(AssistantMessageEvent::Done { reason, message });
    }

    /// The response failed (`error`, reason `error` or `aborted`); partial content is kept.
    pub fn fail(&mut self, reason: StopReason, error_message: impl Into<String>) {
        if self.settled {
            return;
        }
        let elapsed = self.elapsed_ms();
        self.live.write(|message| {
            message.stop_reason = reason;
            message.error_message = Some(error_message.into());
            message.duration_ms = Some(elapsed);
        });
        let error = self.live.share();
        self.settled = true;
        self.events
            .push_back(AssistantMessageEvent::Error { reason, error });
    }

    fn push_block(&mut self, block: ContentBlock) -> usize {
        self.live.write(|message| {
            message.content.push(block);
            message.content.len() - 1
        })
    }

    fn emit(&mut self, event: AssistantMessageEvent) {
        if !self.settled {
            self.events.push_back(event);
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started_at.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
