//! A scripted HTTP server on 127.0.0.1 for provider tests: it answers each request with the
//! next scripted reply and records what the client sent. Nothing leaves the loopback
//! interface.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::message::{AssistantMessage, ContentBlock, UserContent, UserMessage};
use pi_runtime::provider::http::{HttpOptions, RetryPolicy};
use pi_runtime::provider::{Api, Model};
use pi_runtime::stream::AssistantEventStream;
use pi_runtime::{AssistantMessageEvent, Context, Tool};
use serde_json::{Value, json};

/// How the server answers one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// `200` with this SSE body.
    Sse(String),
    /// An error status with a body and extra headers.
    Status(u16, String, Vec<(&'static str, &'static str)>),
    /// `200`, these bytes, then the connection breaks.
    DropAfter(String),
    /// `200`, these bytes, then silence.
    StallAfter(String),
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path_and_query: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
    /// The body exactly as it arrived, for byte-level comparisons.
    pub(crate) raw: String,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    recorded: Mutex<Vec<Recorded>>,
}

/// The running server.
pub(crate) struct Server {
    pub(crate) base_url: String,
    script: Arc<Script>,
}

impl Server {
    /// Serve `replies` in order on a fresh port of 127.0.0.1.
    pub(crate) async fn start(replies: Vec<Reply>) -> Server {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            recorded: Mutex::default(),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().expect("local address");
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Server {
            base_url: format!("http://{address}"),
            script,
        }
    }

    /// Every request so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.script.recorded.lock().expect("lock").clone()
    }

    /// The one request of a test that sends one.
    pub(crate) fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests.into_iter().next().expect("one request")
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    script.recorded.lock().expect("lock").push(Recorded {
        path_and_query: uri
            .path_and_query()
            .map_or_else(String::new, ToString::to_string),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: String::from_utf8_lossy(&body).into_owned(),
    });
    let reply = script.replies.lock().expect("lock").pop_front();
    let sse = |body: Body| {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .expect("response")
    };
    match reply {
        Some(Reply::Sse(text)) => sse(Body::from(text)),
        Some(Reply::Status(status, text, extra)) => {
            let mut response = Response::builder().status(status);
            for (name, value) in extra {
                response = response.header(name, value);
            }
            response.body(Body::from(text)).expect("response")
        }
        Some(Reply::DropAfter(text)) => {
            // The pause lets hyper flush the head and the first bytes before the break.
            let pieces = futures::stream::iter([Ok(Bytes::from(text))]).chain(
                futures::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("connection reset by the test server"))
                }),
            );
            sse(Body::from_stream(pieces))
        }
        Some(Reply::StallAfter(text)) => {
            let pieces = futures::stream::iter([Ok::<_, Infallible>(Bytes::from(text))])
                .chain(futures::stream::pending());
            sse(Body::from_stream(pieces))
        }
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("no scripted reply left"))
            .expect("response"),
    }
}

/// A model of `api` served by `server`.
pub(crate) fn model(api: Api, provider: &str, id: &str, server: &Server) -> Model {
    serde_json::from_value(json!({
        "id": id, "provider": provider, "api": api.as_str(), "baseUrl": server.base_url,
    }))
    .expect("model")
}

/// A key, no retries, short timeouts: tests fail fast.
pub(crate) fn options() -> HttpOptions {
    HttpOptions::default()
        .with_api_key("test-key")
        .with_retry(RetryPolicy::none())
        .with_connect_timeout(Duration::from_secs(2))
        .with_read_timeout(Duration::from_secs(5))
}

/// Retries with waits short enough for a test.
pub(crate) fn quick_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy::new(
        max_retries,
        Duration::from_millis(5),
        Duration::from_secs(1),
    )
}

/// The question every test asks, with the one tool every test offers.
pub(crate) fn context() -> Context {
    Context::new(
        "You are terse.",
        vec![
            UserMessage {
                content: UserContent::Text("What's the weather in San Francisco?".into()),
                timestamp: 1,
            }
            .into(),
        ],
        vec![Tool::new(
            "weather",
            "Current weather for a place",
            json!({"type": "object", "properties": {"location": {"type": "string"}},
                   "required": ["location"]}),
        )],
    )
}

/// Every event of a stream.
pub(crate) async fn collect(stream: AssistantEventStream) -> Vec<AssistantMessageEvent> {
    stream.collect().await
}

/// The final message (of `done` or `error`).
pub(crate) fn final_message(events: &[AssistantMessageEvent]) -> &AssistantMessage {
    match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => message,
        Some(AssistantMessageEvent::Error { error, .. }) => error,
        other => panic!("the stream did not settle: {other:?}"),
    }
}

/// `kind` or `kind index` per event, for asserting orders.
pub(crate) fn trace(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event.content_index() {
            Some(index) => format!("{} {index}", event.kind()),
            None => event.kind().to_owned(),
        })
        .collect()
}

/// The events tell the whole story: the live message `start` handed out ends as the final
/// message, and each text or thinking block is exactly its deltas joined.
pub(crate) fn assert_events_rebuild(events: &[AssistantMessageEvent]) {
    let message = final_message(events);
    let Some(AssistantMessageEvent::Start { message: live }) = events.first() else {
        panic!("the first event is not start: {:?}", events.first());
    };
    assert_eq!(
        live.snapshot().content,
        message.content,
        "the live message is final"
    );
    let mut joined: std::collections::BTreeMap<usize, String> = Default::default();
    for event in events {
        if let AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        }
        | AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta,
        } = event
        {
            joined.entry(*content_index).or_default().push_str(delta);
        }
    }
    for (index, block) in message.content.iter().enumerate() {
        let text = match block {
            ContentBlock::Text(text) => &text.text,
            ContentBlock::Thinking(thinking) => &thinking.thinking,
            _ => continue,
        };
        assert_eq!(
            joined.get(&index).map_or("", String::as_str),
            text,
            "block {index} is its deltas joined"
        );
    }
}

/// Read a recorded capture under `fixtures/wire/`.
pub(crate) fn fixture(path: &str) -> String {
    let full = format!(
        "{}/../../shared/fixtures/wire/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{full}: {error}"))
}

/// A `*.chunks.txt` capture as the SSE body its server sent (SOURCES.md): `data:` frames,
/// OpenAI's `[DONE]`, Anthropic's `event:` lines.
pub(crate) fn chunks_to_sse(chunks: &str, api: Api) -> String {
    let mut body = String::new();
    for line in chunks.lines().filter(|line| !line.trim().is_empty()) {
        if api == Api::AnthropicMessages {
            let event: Value = serde_json::from_str(line).expect("chunk JSON");
            let name = event["type"].as_str().expect("event type");
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {line}\n\n"));
    }
    if api == Api::OpenAiCompletions {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

/// An OpenAI chunk: one choice with this delta and finish reason.
pub(crate) fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

/// OpenAI SSE: one `data:` frame per chunk, then `[DONE]`.
pub(crate) fn openai_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// An OpenAI response that calls `name`: the id and name first, then the argument text,
/// then `finish_reason: tool_calls` (the shape the real API streams).
pub(crate) fn openai_tool_call(id: &str, name: &str, arguments: &str) -> String {
    openai_sse(&[
        openai_chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id,
                   "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            Some("tool_calls"),
        ),
    ])
}

/// An OpenAI response of plain text.
pub(crate) fn openai_text(text: &str) -> String {
    openai_sse(&[openai_chunk(
        json!({"role": "assistant", "content": text}),
        Some("stop"),
    )])
}

/// OpenAI Responses SSE: each event as an `event:` line named by its `type`, then its
/// `data:`.
pub(crate) fn responses_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            let name = event["type"].as_str().unwrap_or_default();
            format!("event: {name}\ndata: {event}\n\n")
        })
        .collect()
}

/// An OpenAI Responses response that calls `name` (id `call_id|item_id`), its arguments
/// streamed as one delta, completed.
pub(crate) fn responses_tool_call(
    call_id: &str,
    item_id: &str,
    name: &str,
    arguments: &str,
) -> String {
    let item = |status: &str, arguments: &str| {
        json!({"id": item_id, "type": "function_call", "status": status,
               "arguments": arguments, "call_id": call_id, "name": name})
    };
    responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": item("in_progress", "")}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
               "item_id": item_id, "delta": arguments}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": item("completed", arguments)}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
               "output": [item("completed", arguments)]}}),
    ])
}

/// An OpenAI Responses response of plain text (one `message` item, no signature phase).
pub(crate) fn responses_text(text: &str) -> String {
    let item = |status: &str, text: &str| {
        json!({"id": "msg_1", "type": "message", "status": status, "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "text": text}]})
    };
    let mut added = item("in_progress", "");
    added["content"] = json!([]);
    responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
               "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": item("completed", text)}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
               "output": [item("completed", text)]}}),
    ])
}

/// A Gemini response of plain text, finished.
pub(crate) fn google_text(text: &str) -> String {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                       "finishReason": "STOP"}]});
    format!("data: {chunk}\r\n\r\n")
}

/// Anthropic SSE: each event as an `event:` line named by its `type`, then its `data:`.
pub(crate) fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            let name = event["type"].as_str().unwrap_or_default();
            format!("event: {name}\ndata: {event}\n\n")
        })
        .collect()
}

/// One Anthropic message: `message_start`, these content events, the stop reason,
/// `message_stop`.
fn anthropic_message(blocks: Vec<Value>, stop_reason: &str) -> String {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1}}})];
    events.extend(blocks);
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                       "usage": {"output_tokens": 12}}),
    );
    events.push(json!({"type": "message_stop"}));
    anthropic_sse(&events)
}

/// An Anthropic response that calls `name`, its input streamed as one `input_json_delta`.
pub(crate) fn anthropic_tool_call(id: &str, name: &str, arguments: &str) -> String {
    anthropic_message(
        vec![
            json!({"type": "content_block_start", "index": 0, "content_block":
                   {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta":
                   {"type": "input_json_delta", "partial_json": arguments}}),
            json!({"type": "content_block_stop", "index": 0}),
        ],
        "tool_use",
    )
}

/// An Anthropic response of plain text.
pub(crate) fn anthropic_text(text: &str) -> String {
    anthropic_message(
        vec![
            json!({"type": "content_block_start", "index": 0, "content_block":
                   {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta":
                   {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
        ],
        "end_turn",
    )
}

/// Record an agent's events as short lines, in delivery order: `message_update` shows the
/// stream event it carries (`update toolcall_delta 0`), tool events their call id.
pub(crate) fn record_agent(agent: &Agent) -> Arc<Mutex<Vec<String>>> {
    let trace = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&trace);
    agent.on_event(move |event| {
        let line = match event {
            AgentEvent::MessageStart { message } => format!("start {}", message.role()),
            AgentEvent::MessageUpdate {
                assistant_message_event: update,
                ..
            } => match update.content_index() {
                Some(index) => format!("update {} {index}", update.kind()),
                None => format!("update {}", update.kind()),
            },
            AgentEvent::MessageEnd { message } => format!("end {}", message.role()),
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                format!("tool_start {tool_call_id}")
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
                format!("tool_update {tool_call_id}")
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                ..
            } => format!(
                "tool_end {tool_call_id}{}",
                if *is_error { " error" } else { "" }
            ),
            AgentEvent::TurnEnd {
                message,
                tool_results,
                ..
            } => {
                let ids: Vec<&str> = tool_results
                    .iter()
                    .map(|result| result.tool_call_id.as_str())
                    .collect();
                format!(
                    "turn_end {} [{}]",
                    message.stop_reason.as_str(),
                    ids.join(",")
                )
            }
            other => other.kind().to_owned(),
        };
        sink.lock().expect("lock").push(line);
    });
    trace
}

/// The lines [`record_agent`] collected so far.
pub(crate) fn recorded(trace: &Mutex<Vec<String>>) -> Vec<String> {
    trace.lock().expect("lock").clone()
}
