//! Every recorded provider stream in `fixtures/wire/`, served over loopback HTTP to the
//! real clients: the exact calls, text, reasoning, stop reason and usage each capture
//! holds, and the request each client sent.

use crate::provider_support;

use pi_runtime::message::{ContentBlock, ThinkingContent};
use pi_runtime::provider::Api;
use pi_runtime::provider::http::HttpModel;
use pi_runtime::{AssistantMessageEvent, LanguageModel, StopReason, StreamOptions, ToolCall};
use provider_support::{
    Reply, Server, assert_events_rebuild, chunks_to_sse, collect, context, final_message, fixture,
    model, options, trace,
};
use serde_json::{Value, json};

async fn openai_replay(
    provider: &str,
    id: &str,
    body: String,
) -> (Vec<AssistantMessageEvent>, Server) {
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, provider, id, &server),
        options(),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    (events, server)
}

/// The Chat Completions request every OpenAI-style test sends.
fn assert_openai_request(server: &Server, model_id: &str) {
    let request = server.only_request();
    assert_eq!(request.path_and_query, "/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    assert_eq!(request.body["model"], model_id);
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What's the weather in San Francisco?"}
        ])
    );
    assert_eq!(request.body["tools"][0]["type"], "function");
    assert_eq!(request.body["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        request.body["tools"][0]["function"]["parameters"]["required"],
        json!(["location"])
    );
}

fn call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall::new(id, name, arguments))
}

/// The text a chunks capture streams, concatenated naively (the oracle for long texts).
fn concatenated(chunks: &str, field: &str) -> String {
    chunks
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"][field]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn openai_text_then_tool_call() {
    let body = chunks_to_sse(
        &fixture("openai/gpt-4o-text-then-tool-call.chunks.txt"),
        Api::OpenAiCompletions,
    );
    let (events, server) = openai_replay("openai", "gpt-4o", body).await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0",
            "text_delta 0",
            "toolcall_start 1",
            "toolcall_delta 1",
            "toolcall_delta 1",
            "text_end 0",
            "toolcall_end 1",
            "done"
        ]
    );
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("PRE_TOOL"),
            call("call_NZa7xqfefoaMI2YYHowVXVlU", "weather", json!({})),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (58, 12, 70)
    );
    assert_eq!(
        message.response_id.as_deref(),
        Some("chatcmpl-E6yvi7cuDcHZEHTMxcLDyf3CMKIO2")
    );
    assert_events_rebuild(&events);
    assert_openai_request(&server, "gpt-4o");
}

#[tokio::test]
async fn openai_parallel_tool_calls_raw_body() {
    let body = fixture("openai/gpt-4o-parallel-tool-calls.sse");
    let (events, server) = openai_replay("openai", "gpt-4o", body).await;
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [
            call(
                "call_NS4iQj14cDFwc0BnrKqDHavt",
                "get_weather",
                json!({"city": "Mexico City"})
            ),
            call(
                "call_SkGkkGDvHQEEk0CGbnAh2AQw",
                "get_product_name",
                json!({})
            ),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!((message.usage.input, message.usage.output), (417, 44));
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ToolCallDelta {
                content_index: 0,
                delta,
                ..
            } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas, r#"{"city": "Mexico City"}"#,
        "deltas are the raw text"
    );
    assert_events_rebuild(&events);
    assert_openai_request(&server, "gpt-4o");
}

#[tokio::test]
async fn openai_compatible_continuation_chunks_with_empty_ids() {
    let body = chunks_to_sse(
        &fixture("openai-compatible/qwen3-max-tool-call-empty-id.chunks.txt"),
        Api::OpenAiCompletions,
    );
    let (events, server) = openai_replay("alibaba", "qwen3-max", body).await;
    // Four tool_calls entries, four deltas, one block: matched by index, never by "".
    assert_eq!(
        trace(&events),
        [
            "start",
            "toolcall_start 0",
            "toolcall_delta 0",
            "toolcall_delta 0",
            "toolcall_delta 0",
            "toolcall_delta 0",
            "toolcall_end 0",
            "done"
        ]
    );
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [call(
            "call_eee11723464a4b9eb8cee71d",
            "weather",
            json!({"location": "San Francisco"})
        )]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.usage.total_tokens, 317);
    assert_openai_request(&server, "qwen3-max");
}

#[tokio::test]
async fn deepseek_reasoner_reasoning_then_call() {
    let chunks = fixture("deepseek/deepseek-reasoner-tool-call.chunks.txt");
    let body = chunks_to_sse(&chunks, Api::OpenAiCompletions);
    let (events, server) = openai_replay("deepseek", "deepseek-reasoner", body).await;
    let message = final_message(&events);
    let reasoning = concatenated(&chunks, "reasoning_content");
    assert!(reasoning.starts_with("The user is asking for the weather in San Francisco."));
    assert_eq!(
        message.content,
        [
            ContentBlock::Thinking(ThinkingContent {
                thinking: reasoning,
                thinking_signature: Some("reasoning_content".into()),
                redacted: None,
            }),
            call(
                "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                "weather",
                json!({"location": "San Francisco"})
            ),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // DeepSeek reports cache hits as prompt_cache_hit_tokens; they are not input.
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output
        ),
        (19, 320, 83)
    );
    let kinds = trace(&events);
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(kinds[1], "thinking_start 0");
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["thinking_end 0", "toolcall_end 1", "done"]
    );
    assert_events_rebuild(&events);
    assert_openai_request(&server, "deepseek-reasoner");
}

#[tokio::test]
async fn deepseek_chat_length_truncated() {
    let chunks = fixture("deepseek/deepseek-chat-length-truncated.chunks.txt");
    let body = chunks_to_sse(&chunks, Api::OpenAiCompletions);
    let (events, server) = openai_replay("deepseek", "deepseek-chat", body).await;
    let message = final_message(&events);
    let text = concatenated(&chunks, "content");
    assert_eq!(text.chars().count(), 1855);
    assert_eq!(message.content, [ContentBlock::text(text)]);
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.usage.output, 400);
    assert_events_rebuild(&events);
    assert_openai_request(&server, "deepseek-chat");
}

async fn anthropic_replay(body: String) -> (Vec<AssistantMessageEvent>, Server) {
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let client = HttpModel::new(
        model(
            Api::AnthropicMessages,
            "anthropic",
            "claude-sonnet-4-5",
            &server,
        ),
        options(),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    let request = server.only_request();
    assert_eq!(request.path_and_query, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.body["model"], "claude-sonnet-4-5");
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["system"][0]["text"], "You are terse.");
    assert_eq!(request.body["messages"][0]["role"], "user");
    assert_eq!(request.body["tools"][0]["name"], "weather");
    assert_eq!(
        request.body["tools"][0]["input_schema"]["properties"]["location"]["type"],
        "string"
    );
    (events, server)
}

fn anthropic_fixture(name: &str) -> String {
    chunks_to_sse(
        &fixture(&format!("anthropic/{name}.chunks.txt")),
        Api::AnthropicMessages,
    )
}

#[tokio::test]
async fn anthropic_tool_use_with_ping_between_deltas() {
    let (events, _server) = anthropic_replay(anthropic_fixture("claude-haiku-4-5-tool-use")).await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "toolcall_start 0",
            "toolcall_delta 0",
            "toolcall_delta 0",
            "toolcall_delta 0",
            "toolcall_end 0",
            "done"
        ]
    );
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [call(
            "toolu_01KFbKqPYSuAKujiL6mTfzYA",
            "json",
            json!({"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]})
        )]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!((message.usage.input, message.usage.output), (849, 47));
    // As pi reports them: the stop reason as the server wrote it, and the model that answered
    // when it is not the one requested (`claude-sonnet-4-5`).
    assert_eq!(message.raw_stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        message.response_model.as_deref(),
        Some("claude-haiku-4-5-20251001")
    );
    assert_events_rebuild(&events);
}

#[tokio::test]
async fn anthropic_text_then_tool_use_without_arguments() {
    let (events, _server) = anthropic_replay(anthropic_fixture(
        "claude-sonnet-4-5-text-then-tool-use-no-args",
    ))
    .await;
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("I'll update the issue list for you."),
            call(
                "toolu_01QE1WLsSVp5hy5Q3GmGTmjP",
                "updateIssueList",
                json!({})
            ),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // Anthropic closes each block at its own content_block_stop.
    let kinds = trace(&events);
    let text_end = kinds.iter().position(|k| k == "text_end 0");
    let call_start = kinds.iter().position(|k| k == "toolcall_start 1");
    assert!(text_end < call_start, "{kinds:?}");
    assert_events_rebuild(&events);
}

#[tokio::test]
async fn anthropic_parallel_tool_use_with_padded_json() {
    let (events, _server) = anthropic_replay(anthropic_fixture(
        "claude-sonnet-4-5-parallel-tool-use-padded",
    ))
    .await;
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [
            call(
                "toolu_01LtEf4h1QW7KCKLsYMuhTNB",
                "searchDocs",
                json!({"query": "alpha"})
            ),
            call(
                "toolu_016tfZE7otAFSBjhc67wu189",
                "searchDocs",
                json!({"query": "beta"})
            ),
            call(
                "toolu_01XkU35z8BVWqqc9tijDuLrA",
                "searchDocs",
                json!({"query": "gamma"})
            ),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.usage.output, 110);
}

#[tokio::test]
async fn anthropic_escaped_quotes_split_across_deltas() {
    let (events, _server) = anthropic_replay(anthropic_fixture(
        "claude-sonnet-4-5-tool-use-escaped-quotes",
    ))
    .await;
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [call(
            "toolu_01Cr31vcGoeeRgi3Eo5Ds8qN",
            "website_update",
            json!({
                "website_path": "/home/user/pace-landing",
                "tasks": [{
                    "description": "Today you post every run to Strava, but Strava does not answer the question: \"What should I do next after this run?\". It is a great log, but it is not adaptive.",
                    "type": "feature",
                    "passes": false
                }]
            })
        )]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn anthropic_max_tokens() {
    let (events, _server) =
        anthropic_replay(anthropic_fixture("claude-sonnet-4-6-max-tokens-padded")).await;
    let message = final_message(&events);
    assert_eq!(message.content, [ContentBlock::text("OK")]);
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(
        (
            message.usage.input,
            message.usage.cache_read,
            message.usage.output
        ),
        (3, 18639, 1)
    );
}

#[tokio::test]
async fn anthropic_events_without_event_lines_are_named_by_their_type() {
    let chunks = fixture("anthropic/claude-haiku-4-5-tool-use.chunks.txt");
    let body: String = chunks
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\n\n"))
        .collect();
    let (events, _server) = anthropic_replay(body).await;
    let message = final_message(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [call(
            "toolu_01KFbKqPYSuAKujiL6mTfzYA",
            "json",
            json!({"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]})
        )]
    );
}

async fn google_replay(id: &str, body: String) -> Vec<AssistantMessageEvent> {
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let client = HttpModel::new(
        model(Api::GoogleGenerativeAi, "google", id, &server),
        options(),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    let request = server.only_request();
    assert_eq!(
        request.path_and_query,
        format!("/models/{id}:streamGenerateContent?alt=sse")
    );
    assert_eq!(request.header("x-goog-api-key"), Some("test-key"));
    assert_eq!(request.body["contents"][0]["role"], "user");
    assert_eq!(
        request.body["contents"][0]["parts"][0]["text"],
        "What's the weather in San Francisco?"
    );
    let declarations = request
        .body
        .pointer("/tools/0/functionDeclarations")
        .or_else(|| request.body.pointer("/config/tools/0/functionDeclarations"))
        .expect("function declarations");
    assert_eq!(declarations[0]["name"], "weather");
    events
}

/// Gemini ids are synthesized as `<name>_<ms>_<counter>` when the part has none.
fn assert_generated_id(call: &ToolCall) {
    let rest = call
        .id
        .strip_prefix(&format!("{}_", call.name))
        .unwrap_or_else(|| panic!("generated id {:?}", call.id));
    let (ms, counter) = rest.split_once('_').expect("two numbers");
    assert!(
        ms.parse::<u64>().is_ok() && counter.parse::<u64>().is_ok(),
        "{}",
        call.id
    );
}

fn gemini_chunks(path: &str) -> String {
    fixture(path)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\r\n\r\n"))
        .collect()
}

#[tokio::test]
async fn google_function_call_with_thought_signature() {
    let events = google_replay(
        "gemini-3-pro-preview",
        gemini_chunks("google/gemini-3-pro-function-call.chunks.txt"),
    )
    .await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "toolcall_start 0",
            "toolcall_delta 0",
            "toolcall_end 0",
            "done"
        ]
    );
    let message = final_message(&events);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(
        message.content.len(),
        1,
        "the trailing empty text adds no block"
    );
    assert_eq!(calls[0].name, "weather");
    assert_eq!(calls[0].arguments, json!({"location": "San Francisco"}));
    assert!(
        calls[0]
            .thought_signature
            .as_deref()
            .is_some_and(|s| s.starts_with("EqUCCqICAb4+9vsh"))
    );
    assert_generated_id(calls[0]);
    // The single delta is the compact JSON of the arguments.
    assert!(events.iter().any(|event| matches!(
        event,
        AssistantMessageEvent::ToolCallDelta { delta, .. } if delta == r#"{"location":"San Francisco"}"#
    )));
    // STOP with a call in the message is a tool-use stop.
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (29, 60, 89)
    );
}

#[tokio::test]
async fn google_raw_body_with_crlf_frames() {
    let events = google_replay(
        "gemini-3-pro-preview",
        fixture("google/gemini-3-pro-function-call-thought-signature.sse"),
    )
    .await;
    let message = final_message(&events);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_country");
    assert_eq!(calls[0].arguments, json!({}));
    assert_generated_id(calls[0]);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.response_id.as_deref(),
        Some("QUVVadTSNJ6_qtsPvN7J8Q0")
    );
}

#[tokio::test]
async fn google_vertex_streamed_arguments() {
    let events = google_replay(
        "gemini-3.1-pro-preview",
        gemini_chunks("google/vertex-gemini-3.1-pro-stream-function-call-arguments.chunks.txt"),
    )
    .await;
    let message = final_message(&events);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let arguments: Vec<&Value> = calls.iter().map(|call| &call.arguments).collect();
    assert_eq!(
        arguments,
        [
            &json!({"location": "Boston"}),
            &json!({"location": "San Francisco"})
        ]
    );
    assert!(calls.iter().all(|call| call.name == "getWeather"));
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // Every call still ends with one delta holding its compact JSON.
    let last_deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ToolCallDelta { delta, .. } if !delta.is_empty() => {
                Some(delta.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        last_deltas,
        [
            r#"{"location":"Boston"}"#,
            r#"{"location":"San Francisco"}"#
        ]
    );
    assert_events_rebuild(&events);
}

#[tokio::test]
async fn google_vertex_thought_no_args_call_and_parallel_streamed_calls() {
    let events = google_replay(
        "gemini-3-flash-preview",
        gemini_chunks("google/vertex-gemini-3-flash-parallel-partial-args.chunks.txt"),
    )
    .await;
    let message = final_message(&events);
    assert!(matches!(
        &message.content[0],
        ContentBlock::Thinking(thinking) if thinking.thinking.starts_with("**Processing User Requests**")
    ));
    let calls: Vec<(&str, &Value)> = message
        .tool_calls()
        .map(|call| (call.name.as_str(), &call.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("read_theme", &json!({})),
            ("read_screen", &json!({"id": "A"})),
            ("read_screen", &json!({"id": "B"})),
            ("read_screen", &json!({"id": "C"})),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let kinds = trace(&events);
    assert_eq!(
        kinds[1..4],
        ["thinking_start 0", "thinking_delta 0", "thinking_end 0"]
    );
}
