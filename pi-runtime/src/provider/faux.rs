//! The faux model: replays scripted assistant messages, streaming text and tool-call
//! arguments in small deltas, like pi's faux provider. Use it to test your own tools and
//! hooks without a network.
//!
//! ```
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::{Context, LanguageModel, StreamOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let model = FauxModel::new()
//!     .respond(FauxResponse::text("Let me look.").and_tool_call("c1", "read", json!({"path": "a.txt"})));
//! let events: Vec<_> = model.stream(Context::default(), StreamOptions::default()).collect().await;
//! let kinds: Vec<_> = events.iter().map(|e| e.kind()).collect();
//! assert_eq!(kinds, ["start", "text_start", "text_delta", "text_end",
//!                    "toolcall_start", "toolcall_delta", "toolcall_end", "done"]);
//! assert_eq!(model.request_count(), 1);
//!
//! // The script ran out: every further request answers "(done)".
//! let events: Vec<_> = model.stream(Context::default(), StreamOptions::default()).collect().await;
//! assert_eq!(events.len(), 5);
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::aborted::REQUEST_ABORTED;
use crate::json::PartialJsonParser;
use crate::message::{
    AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall, Usage, now_ms,
};
use crate::stream::{
    AssistantEventStream, AssistantMessageEvent, Context, LanguageModel, MessageWriter,
    StreamOptions,
};

/// Characters per delta unless [`FauxModel::with_chunk_chars`] says otherwise (pi's faux
/// provider streams 3 to 5 tokens of about 4 characters).
const DEFAULT_CHUNK_CHARS: usize = 16;

/// One scripted response: content blocks, a stop reason and an optional error message.
#[derive(Debug, Clone, PartialEq)]
pub struct FauxResponse {
    content: Vec<ContentBlock>,
    stop_reason: Option<StopReason>,
    error_message: Option<String>,
    usage: Usage,
}

impl FauxResponse {
    /// A response with these blocks. The stop reason is `toolUse` when there is a tool
    /// call, else `stop`, unless [`with_stop_reason`](Self::with_stop_reason) says otherwise.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        FauxResponse {
            content,
            stop_reason: None,
            error_message: None,
            usage: Usage::default(),
        }
    }

    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        FauxResponse::new(vec![ContentBlock::text(text)])
    }

    /// A single tool call. Arguments that are not a JSON object end with `argumentsError`,
    /// as a real provider's would.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        FauxResponse::new(Vec::new()).and_tool_call(id, name, arguments)
    }

    /// A failed request: no content, stop reason `error`, this error message.
    pub fn error(message: impl Into<String>) -> Self {
        FauxResponse::new(Vec::new()).with_error(StopReason::Error, message)
    }

    /// Append a text block.
    #[must_use]
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::text(text));
        self
    }

    /// Append a thinking block.
    #[must_use]
    pub fn and_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: None,
            redacted: None,
        }));
        self
    }

    /// Append a tool call.
    #[must_use]
    pub fn and_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.content
            .push(ContentBlock::ToolCall(ToolCall::new(id, name, arguments)));
        self
    }

    /// Set the stop reason (`length` to simulate a response cut off by the token limit).
    #[must_use]
    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// End with `error` or `aborted` and this message; the content streams first.
    #[must_use]
    pub fn with_error(mut self, reason: StopReason, message: impl Into<String>) -> Self {
        self.stop_reason = Some(reason);
        self.error_message = Some(message.into());
        self
    }

    /// Report this usage for the response (none by default).
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    fn stop_reason(&self) -> StopReason {
        self.stop_reason.unwrap_or_else(|| {
            if self.content.iter().any(|b| b.as_tool_call().is_some()) {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            }
        })
    }
}

type Responder = Arc<dyn Fn(&Context) -> FauxResponse + Send + Sync>;

enum Step {
    Fixed(FauxResponse),
    Computed(Responder),
}

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    requests: Vec<Context>,
}

/// A scripted [`LanguageModel`]. Cloning shares the script, so a test can keep a clone to
/// add responses or inspect the requests after handing the model to an agent.
#[derive(Clone)]
pub struct FauxModel {
    script: Arc<Mutex<Script>>,
    fallback: Option<FauxResponse>,
    /// Answers every request once the script runs out, before `fallback`.
    responder: Option<Responder>,
    chunk_chars: usize,
    chunk_delay: Option<Duration>,
}

impl Default for FauxModel {
    fn default() -> Self {
        FauxModel::new()
    }
}

impl fmt::Debug for FauxModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FauxModel")
            .field("queued", &self.script().steps.len())
            .field("requests", &self.script().requests.len())
            .field("fallback", &self.fallback)
            .field("chunk_chars", &self.chunk_chars)
            .finish_non_exhaustive()
    }
}

impl FauxModel {
    /// A model with an empty script; once the script runs out it answers `(done)`.
    pub fn new() -> Self {
        FauxModel {
            script: Arc::default(),
            fallback: Some(FauxResponse::text("(done)")),
            responder: None,
            chunk_chars: DEFAULT_CHUNK_CHARS,
            chunk_delay: None,
        }
    }

    /// Queue a response.
    #[must_use]
    pub fn respond(self, response: FauxResponse) -> Self {
        self.push(response);
        self
    }

    /// Queue a response computed from the request (for example from the tool results the
    /// model would see).
    #[must_use]
    pub fn respond_with<F>(self, responder: F) -> Self
    where
        F: Fn(&Context) -> FauxResponse + Send + Sync + 'static,
    {
        self.script()
            .steps
            .push_back(Step::Computed(Arc::new(responder)));
        self
    }

    /// Answer every request the script does not, from the request itself: a model for a
    /// server's offline mode, where requests of many conversations arrive in any order.
    #[must_use]
    pub fn respond_always<F>(mut self, responder: F) -> Self
    where
        F: Fn(&Context) -> FauxResponse + Send + Sync + 'static,
    {
        self.responder = Some(Arc::new(responder));
        self
    }

    /// Queue a response on a shared model (for example while a run is in progress).
    pub fn push(&self, response: FauxResponse) {
        self.script().steps.push_back(Step::Fixed(response));
    }

    /// What to answer once the script ran out (default: the text `(done)`).
    #[must_use]
    pub fn with_fallback(mut self, response: FauxResponse) -> Self {
        self.fallback = Some(response);
        self
    }

    /// Answer an exhausted script with the error `No more faux responses queued`, as pi does.
    #[must_use]
    pub fn without_fallback(mut self) -> Self {
        self.fallback = None;
        self
    }

    /// Characters per text, thinking or argument delta (at least 1).
    #[must_use]
    pub fn with_chunk_chars(mut self, chars: usize) -> Self {
        self.chunk_chars = chars.max(1);
        self
    }

    /// Wait this long before each event after `start`, like a model that takes its time;
    /// an abort during the wait ends the response at once.
    #[must_use]
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// How many requests the model answered.
    pub fn request_count(&self) -> usize {
        self.script().requests.len()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Context> {
        self.script().requests.clone()
    }

    fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_response(&self, context: Context) -> FauxResponse {
        let mut script = self.script();
        let response = match script.steps.pop_front() {
            Some(Step::Fixed(response)) => response,
            Some(Step::Computed(responder)) => responder(&context),
            None => match &self.responder {
                Some(responder) => responder(&context),
                None => self
                    .fallback
                    .clone()
                    .unwrap_or_else(|| FauxResponse::error("No more faux responses queued")),
            },
        };
        // A model that answers everything serves for as long as a server runs: keeping
        // every request would grow without bound.
        if self.responder.is_none() {
            script.requests.push(context);
        }
        response
    }

    fn message(&self) -> AssistantMessage {
        AssistantMessage::empty(self.api(), self.provider(), self.id())
    }
}

impl LanguageModel for FauxModel {
    fn api(&self) -> &str {
        "faux"
    }

    fn provider(&self) -> &str {
        "faux"
    }

    fn id(&self) -> &str {
        "faux-1"
    }

    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream {
        let response = self.next_response(context);
        let replay = Replay {
            writer: MessageWriter::new(self.message()),
            beats: script_beats(response),
            chunk_chars: self.chunk_chars,
            parser: PartialJsonParser::new(),
            signal: options.signal,
            delay: self.chunk_delay,
            started: false,
        };
        // Boxed, so each event moves a pointer rather than the whole replay state.
        futures::stream::unfold(Box::new(replay), Replay::next).boxed()
    }
}

/// One step of a scripted response; each makes the writer queue exactly one event, so a
/// delay or an abort falls between two events.
#[derive(Debug)]
enum Beat {
    Start,
    OpenText,
    OpenThinking,
    /// Text or thinking for the block at `index`, still to stream from byte `at`: one
    /// chunk per beat.
    Text {
        index: usize,
        text: String,
        at: usize,
    },
    Close(usize),
    OpenToolCall(ToolCall),
    /// Argument text for the call at `index`, still to stream from byte `at`.
    Arguments {
        index: usize,
        text: String,
        at: usize,
    },
    /// The call's final arguments and arguments error, as scripted. Like pi's faux
    /// provider, an object is taken as it is (the streamed text only showed it growing);
    /// anything else gets the final parse's verdict on the text.
    FinishToolCall(usize, Value, Option<String>),
    /// A block that streams no events.
    Silent(ContentBlock),
    End(StopReason, Option<String>, Usage),
}

/// Every step of one scripted response, in order.
fn script_beats(response: FauxResponse) -> VecDeque<Beat> {
    let stop_reason = response.stop_reason();
    let mut steps = VecDeque::from([Beat::Start]);
    for (index, block) in response.content.into_iter().enumerate() {
        match block {
            ContentBlock::Text(text) => {
                steps.push_back(Beat::OpenText);
                push_text(&mut steps, index, text.text);
            }
            ContentBlock::Thinking(thinking) => {
                steps.push_back(Beat::OpenThinking);
                push_text(&mut steps, index, thinking.thinking);
            }
            ContentBlock::ToolCall(call) => {
                let mut start = ToolCall::new(
                    call.id.clone(),
                    call.name.clone(),
                    Value::Object(Default::default()),
                );
                start.thought_signature.clone_from(&call.thought_signature);
                steps.push_back(Beat::OpenToolCall(start));
                // Even `{}` is streamed, as one delta.
                steps.push_back(Beat::Arguments {
                    index,
                    text: call.arguments.to_string(),
                    at: 0,
                });
                steps.push_back(Beat::FinishToolCall(
                    index,
                    call.arguments,
                    call.arguments_error,
                ));
            }
            // Assistants do not send media; keep the block without events.
            media @ (ContentBlock::Image(_)
            | ContentBlock::Audio(_)
            | ContentBlock::Resource(_)) => {
                steps.push_back(Beat::Silent(media));
            }
        }
    }
    steps.push_back(Beat::End(
        stop_reason,
        response.error_message,
        response.usage,
    ));
    steps
}

/// A block's text in deltas, then its end; pi streams an empty text as one empty delta,
/// which reports nothing.
fn push_text(steps: &mut VecDeque<Beat>, index: usize, text: String) {
    if !text.is_empty() {
        steps.push_back(Beat::Text { index, text, at: 0 });
    }
    steps.push_back(Beat::Close(index));
}

/// The length in bytes of the first `count` characters of `text` (all of it if shorter).
fn chars_len(text: &str, count: usize) -> usize {
    // Mostly ASCII, where a character is a byte: checking that is a fast scan, where
    // walking characters costs a decode each.
    match text.as_bytes().get(..count) {
        Some(head) if head.is_ascii() => count,
        _ => text
            .char_indices()
            .nth(count)
            .map_or(text.len(), |(at, _)| at),
    }
}

/// The state of a replayed response.
struct Replay {
    writer: MessageWriter,
    beats: VecDeque<Beat>,
    /// Characters per text or argument delta.
    chunk_chars: usize,
    /// The arguments of the call that is streaming.
    parser: PartialJsonParser,
    signal: CancellationToken,
    delay: Option<Duration>,
    started: bool,
}

impl Replay {
    async fn next(mut self: Box<Self>) -> Option<(AssistantMessageEvent, Box<Self>)> {
        loop {
            if let Some(event) = self.writer.pop_event() {
                return Some((event, self));
            }
            if self.writer.is_settled() {
                return None;
            }
            if let (Some(delay), true) = (self.delay, self.started) {
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = self.signal.cancelled() => {}
                }
            }
            self.started = true;
            if self.signal.is_cancelled() {
                self.writer.message_mut().timestamp = now_ms();
                self.writer.fail(StopReason::Aborted, REQUEST_ABORTED);
                continue;
            }
            match self.beats.pop_front() {
                Some(beat) => self.take(beat),
                None => self
                    .writer
                    .fail(StopReason::Error, "the script ended early"),
            }
        }
    }

    fn take(&mut self, beat: Beat) {
        let writer = &mut self.writer;
        match beat {
            Beat::Start => writer.start(),
            Beat::OpenText => {
                writer.open_text("");
            }
            Beat::OpenThinking => {
                writer.open_thinking("", None, false);
            }
            Beat::Text { index, text, at } => {
                let end = at + chars_len(&text[at..], self.chunk_chars);
                writer.append(index, &text[at..end]);
                if end < text.len() {
                    self.beats.push_front(Beat::Text {
                        index,
                        text,
                        at: end,
                    });
                }
            }
            Beat::Close(index) => writer.close(index),
            Beat::OpenToolCall(call) => {
                self.parser = PartialJsonParser::new();
                writer.open_tool_call(call);
            }
            Beat::Arguments { index, text, at } => {
                let end = at + chars_len(&text[at..], self.chunk_chars);
                writer.tool_call_delta(index, &text[at..end], &mut self.parser);
                if end < text.len() {
                    self.beats.push_front(Beat::Arguments {
                        index,
                        text,
                        at: end,
                    });
                }
            }
            Beat::FinishToolCall(index, arguments, error) => {
                let (arguments, error) = match (arguments, error) {
                    (arguments @ Value::Object(_), None) => (arguments, None),
                    (_, None) => {
                        let parsed = self.parser.finish();
                        (parsed.arguments, parsed.error)
                    }
                    (arguments, error) => (arguments, error),
                };
                writer.finish_tool_call_with(index, arguments, error);
            }
            Beat::Silent(block) => {
                writer.push_silent_block(block);
            }
            Beat::End(reason, error, usage) if reason.is_failure() => {
                let error = error.unwrap_or_else(|| "the scripted response failed".to_owned());
                writer.message_mut().usage = usage;
                writer.fail(reason, error);
            }
            Beat::End(reason, error, usage) => {
                {
                    let mut message = writer.message_mut();
                    message.error_message = error;
                    message.usage = usage;
                }
                writer.done(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn replay(model: &FauxModel, signal: CancellationToken) -> Vec<AssistantMessageEvent> {
        let options = StreamOptions {
            signal,
            ..StreamOptions::default()
        };
        model.stream(Context::default(), options).collect().await
    }

    fn last_message(events: &[AssistantMessageEvent]) -> &AssistantMessage {
        match events.last() {
            Some(AssistantMessageEvent::Done { message, .. }) => message,
            Some(AssistantMessageEvent::Error { error, .. }) => error,
            other => panic!("no final event: {other:?}"),
        }
    }

    #[test]
    fn chunks_end_at_characters() {
        assert_eq!(chars_len("", 3), 0);
        assert_eq!(chars_len("abcdefg", 3), 3);
        assert_eq!(chars_len("äöüß", 2), 4);
        assert_eq!(chars_len("abä", 3), 4);
        assert_eq!(chars_len("aäbc", 2), 3);
        assert_eq!(chars_len("ab", 5), 2);
    }

    #[tokio::test]
    async fn text_streams_in_deltas_and_ends_with_the_message() {
        let model = FauxModel::new()
            .with_chunk_chars(4)
            .respond(FauxResponse::text("Hello world"));
        let events = replay(&model, CancellationToken::new()).await;
        let deltas: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["Hell", "o wo", "rld"]);
        let message = last_message(&events);
        assert_eq!(message.text(), "Hello world");
        assert_eq!(message.stop_reason, StopReason::Stop);
        assert_eq!(message.api, "faux");
    }

    #[tokio::test]
    async fn tool_calls_stream_their_arguments_and_parse_them_at_the_end() {
        let model = FauxModel::new()
            .with_chunk_chars(5)
            .respond(FauxResponse::tool_call(
                "c1",
                "add",
                json!({"a": 1, "b": 2}),
            ));
        let events = replay(&model, CancellationToken::new()).await;
        let mut text = String::new();
        for event in &events {
            if let AssistantMessageEvent::ToolCallDelta { delta, .. } = event {
                text.push_str(delta);
            }
        }
        assert_eq!(text, r#"{"a":1,"b":2}"#);
        let message = last_message(&events);
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        let call = message.tool_calls().next().cloned();
        assert_eq!(
            call,
            Some(ToolCall::new("c1", "add", json!({"a": 1, "b": 2})))
        );
    }

    #[tokio::test]
    async fn arguments_that_are_not_an_object_get_an_arguments_error() {
        let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "add", json!([1])));
        let events = replay(&model, CancellationToken::new()).await;
        let call = last_message(&events).tool_calls().next().cloned();
        let call = call.expect("one call");
        assert_eq!(call.arguments, json!({}));
        assert_eq!(
            call.arguments_error.as_deref(),
            Some("Tool arguments must be a JSON object\n\nReceived arguments:\n[1]")
        );
    }

    #[tokio::test]
    async fn an_exhausted_script_answers_done_or_an_error() {
        let model = FauxModel::new();
        let events = replay(&model, CancellationToken::new()).await;
        assert_eq!(last_message(&events).text(), "(done)");

        let strict = FauxModel::new().without_fallback();
        let events = replay(&strict, CancellationToken::new()).await;
        let message = last_message(&events);
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(
            message.error_message.as_deref(),
            Some("No more faux responses queued")
        );
        assert_eq!(strict.request_count(), 1);
    }

    #[tokio::test]
    async fn a_cancelled_signal_ends_the_response_as_aborted() {
        let model = FauxModel::new().respond(FauxResponse::text("never"));
        let signal = CancellationToken::new();
        signal.cancel();
        let events = replay(&model, signal).await;
        assert_eq!(events.len(), 1);
        let message = last_message(&events);
        assert_eq!(message.stop_reason, StopReason::Aborted);
        assert_eq!(
            message.error_message.as_deref(),
            Some("Request was aborted")
        );
    }

    #[tokio::test]
    async fn responses_can_be_computed_from_the_request() {
        let model = FauxModel::new().respond_with(|context| {
            FauxResponse::text(format!("{} messages", context.messages.len()))
        });
        let events = replay(&model, CancellationToken::new()).await;
        assert_eq!(last_message(&events).text(), "0 messages");
    }

    #[tokio::test]
    async fn scripted_errors_stream_their_content_first() {
        let model = FauxModel::new().respond(
            FauxResponse::text("partial").with_error(StopReason::Error, "connection reset"),
        );
        let events = replay(&model, CancellationToken::new()).await;
        let kinds: Vec<_> = events.iter().map(AssistantMessageEvent::kind).collect();
        assert_eq!(
            kinds,
            ["start", "text_start", "text_delta", "text_end", "error"]
        );
        assert_eq!(
            last_message(&events).error_message.as_deref(),
            Some("connection reset")
        );
    }
}
