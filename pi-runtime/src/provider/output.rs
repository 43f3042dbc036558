//! The assistant message a provider stream builds, and the events (SPEC §2.4) that report
//! each step of it. Every wire API's parser drives one [`Output`]; the transport drains its
//! events.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::Value;

use crate::json::{ArgumentChange, PartialJsonParser, apply_changes, parse_tool_call_arguments};
use crate::message::{AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall};
use crate::provider::Model;
use crate::stream::AssistantMessageEvent;

/// Turns one API's SSE events into [`Output`] steps. Parsers are synchronous: the transport
/// feeds them whatever arrived, so the same code replays a recorded body.
pub(crate) trait StreamParser: Send + 'static {
    /// One SSE event: its `event:` name (`message` when the server gave none) and its data.
    /// `Err` ends the response with `error` at once, keeping the partial content.
    fn event(&mut self, out: &mut Output, name: &str, data: &str) -> Result<(), String>;

    /// The body ended: close what the API leaves open and say why the response ended.
    /// `Err` is the `errorMessage` of an `error` ending.
    fn end(&mut self, out: &mut Output) -> Result<StopReason, String>;
}

/// The message under construction plus the events not yet handed out.
#[derive(Debug)]
pub(crate) struct Output {
    message: AssistantMessage,
    events: VecDeque<AssistantMessageEvent>,
    started_at: Instant,
    settled: bool,
}

impl Output {
    /// An empty, pending message of `model`.
    pub(crate) fn new(model: &Model) -> Self {
        Output {
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id),
            events: VecDeque::new(),
            started_at: Instant::now(),
            settled: false,
        }
    }

    /// The message as it stands.
    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// For usage and the response id, which produce no event.
    pub(crate) fn message_mut(&mut self) -> &mut AssistantMessage {
        &mut self.message
    }

    /// The next event to hand out.
    pub(crate) fn pop_event(&mut self) -> Option<AssistantMessageEvent> {
        self.events.pop_front()
    }

    /// `done` or `error` was emitted; nothing more will be.
    pub(crate) fn is_settled(&self) -> bool {
        self.settled
    }

    /// The response began (`start`).
    pub(crate) fn start(&mut self) {
        self.emit(AssistantMessageEvent::Start {
            partial: self.message.clone(),
        });
    }

    /// Append a text block (`text_start`), then its initial text if any.
    pub(crate) fn open_text(&mut self, text: &str) -> usize {
        let index = self.push_block(ContentBlock::text(""));
        self.emit(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        self.append(index, text);
        index
    }

    /// Append a thinking block (`thinking_start`), then its initial text if any.
    pub(crate) fn open_thinking(
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
    pub(crate) fn append(&mut self, index: usize, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let event = match self.message.content.get_mut(index) {
            Some(ContentBlock::Text(block)) => {
                block.text.push_str(delta);
                AssistantMessageEvent::TextDelta {
                    content_index: index,
                    delta: delta.to_owned(),
                }
            }
            Some(ContentBlock::Thinking(block)) => {
                block.thinking.push_str(delta);
                AssistantMessageEvent::ThinkingDelta {
                    content_index: index,
                    delta: delta.to_owned(),
                }
            }
            _ => return,
        };
        self.emit(event);
    }

    /// Extend a thinking block's signature (it arrives in pieces on some APIs).
    pub(crate) fn append_signature(&mut self, index: usize, piece: &str) {
        if let Some(ContentBlock::Thinking(block)) = self.message.content.get_mut(index) {
            block
                .thinking_signature
                .get_or_insert_with(String::new)
                .push_str(piece);
        }
    }

    /// Replace a text or thinking block's signature (Gemini repeats or updates it).
    pub(crate) fn set_signature(&mut self, index: usize, signature: &str) {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Text(block)) => block.text_signature = Some(signature.to_owned()),
            Some(ContentBlock::Thinking(block)) => {
                block.thinking_signature = Some(signature.to_owned());
            }
            _ => {}
        }
    }

    /// A text or thinking block is final (`text_end` / `thinking_end`).
    pub(crate) fn close(&mut self, index: usize) {
        let event = match self.message.content.get(index) {
            Some(ContentBlock::Text(block)) => AssistantMessageEvent::TextEnd {
                content_index: index,
                content: block.text.clone(),
            },
            Some(ContentBlock::Thinking(block)) => AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content: block.thinking.clone(),
            },
            _ => return,
        };
        self.emit(event);
    }

    /// Append a tool-call block (`toolcall_start`).
    pub(crate) fn open_tool_call(&mut self, call: ToolCall) -> usize {
        let index = self.push_block(ContentBlock::ToolCall(call.clone()));
        self.emit(AssistantMessageEvent::ToolCallStart {
            content_index: index,
            tool_call: call,
        });
        index
    }

    /// The tool call at `index`, to set a late id or name.
    pub(crate) fn tool_call_mut(&mut self, index: usize) -> Option<&mut ToolCall> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::ToolCall(call)) => Some(call),
            _ => None,
        }
    }

    /// A piece of argument text arrived (`toolcall_delta`, also for `""`): the block's
    /// partial arguments follow the parser's changes, so the cost stays linear.
    pub(crate) fn tool_call_delta(
        &mut self,
        index: usize,
        delta: &str,
        arguments: &mut PartialJsonParser,
    ) {
        let changes = if delta.is_empty() {
            Vec::new()
        } else {
            arguments.push(delta).to_vec()
        };
        self.tool_call_changes(index, delta, changes);
    }

    /// A `toolcall_delta` whose changes the parser computed itself (Google's streamed
    /// arguments, which are not JSON text).
    pub(crate) fn tool_call_changes(
        &mut self,
        index: usize,
        delta: &str,
        changes: Vec<ArgumentChange>,
    ) {
        if let Some(call) = self.tool_call_mut(index) {
            apply_changes(&mut call.arguments, &changes);
        }
        self.emit(AssistantMessageEvent::ToolCallDelta {
            content_index: index,
            delta: delta.to_owned(),
            changes,
        });
    }

    /// The call's complete argument text arrived: parse it once, strictly (SPEC §6.4), and
    /// emit `toolcall_end`.
    pub(crate) fn finish_tool_call(&mut self, index: usize, text: &str) {
        let (arguments, error) = parse_tool_call_arguments(text);
        self.finish_tool_call_with(index, arguments, error);
    }

    /// `toolcall_end` with arguments that need no parse.
    pub(crate) fn finish_tool_call_with(
        &mut self,
        index: usize,
        arguments: Value,
        error: Option<String>,
    ) {
        let Some(call) = self.tool_call_mut(index) else {
            return;
        };
        call.arguments = arguments;
        call.arguments_error = error;
        let call = call.clone();
        self.emit(AssistantMessageEvent::ToolCallEnd {
            content_index: index,
            tool_call: call,
        });
    }

    /// The response succeeded (`done`).
    pub(crate) fn done(&mut self, reason: StopReason) {
        if self.settled {
            return;
        }
        self.message.stop_reason = reason;
        self.message.duration_ms = Some(self.elapsed_ms());
        self.settled = true;
        self.events.push_back(AssistantMessageEvent::Done {
            reason,
            message: self.message.clone(),
        });
    }

    /// The response failed (`error`, reason `error` or `aborted`); partial content is kept.
    pub(crate) fn fail(&mut self, reason: StopReason, message: impl Into<String>) {
        if self.settled {
            return;
        }
        self.message.stop_reason = reason;
        self.message.error_message = Some(message.into());
        self.message.duration_ms = Some(self.elapsed_ms());
        self.settled = true;
        self.events.push_back(AssistantMessageEvent::Error {
            reason,
            error: self.message.clone(),
        });
    }

    fn push_block(&mut self, block: ContentBlock) -> usize {
        self.message.content.push(block);
        self.message.content.len() - 1
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
