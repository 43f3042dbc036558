//! The stream rules of SPEC §6.5 that the captures do not exercise, checked on replayed
//! bodies: matching, aliases, block order, repairs, and every stop-reason mapping.

use crate::provider_support;

use pi_runtime::message::ThinkingContent;
use pi_runtime::provider::http::{HttpModel, HttpOptions};
use pi_runtime::provider::{Api, Model};
use pi_runtime::{AssistantMessageEvent, ContentBlock, StopReason, ToolCall};
use provider_support::{assert_events_rebuild, collect, final_message, trace};
use serde_json::{Value, json};

fn model(api: Api, provider: &str) -> Model {
    serde_json::from_value(json!({
        "id": "m", "provider": provider, "api": api.as_str(), "baseUrl": "http://127.0.0.1:9",
    }))
    .expect("model")
}

async fn openai(body: &str) -> Vec<AssistantMessageEvent> {
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "deepseek"),
        HttpOptions::default(),
    );
    collect(client.replay(body)).await
}

async fn anthropic(body: &str) -> Vec<AssistantMessageEvent> {
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic"),
        HttpOptions::default(),
    );
    collect(client.replay(body)).await
}

async fn google(body: &str) -> Vec<AssistantMessageEvent> {
    let client = HttpModel::new(
        model(Api::GoogleGenerativeAi, "google"),
        HttpOptions::default(),
    );
    collect(client.replay(body)).await
}

/// `data:` frames of Chat Completions deltas, then a finish reason.
fn openai_body(deltas: &[Value], finish: &str) -> String {
    let mut body: String = deltas
        .iter()
        .map(|delta| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": delta}]})
            )
        })
        .collect();
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    ));
    body
}

fn anthropic_body(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().expect("type")
            )
        })
        .collect()
}

fn outcome(events: &[AssistantMessageEvent]) -> (StopReason, Option<&str>) {
    let message = final_message(events);
    (message.stop_reason, message.error_message.as_deref())
}

#[tokio::test]
async fn openai_verified_sequence_of_spec_6_5() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut entry = json!({"index": index, "function": {"arguments": arguments}});
        if let Some(id) = id {
            entry["id"] = json!(id);
        }
        if let Some(name) = name {
            entry["function"]["name"] = json!(name);
        }
        json!({"tool_calls": [entry]})
    };
    let body = openai_body(
        &[
            json!({"reasoning_content": "think "}),
            json!({"reasoning_content": "more", "content": "Hello"}),
            call(0, Some("call_1"), Some("read"), ""),
            call(0, None, None, "{\"path\":"),
            call(1, Some("call_2"), Some("bash"), "{\"command\":"),
            call(0, None, None, "\"README.md\"}"),
            call(1, None, None, "\"ls\"}"),
            json!({"content": " after"}),
        ],
        "tool_calls",
    );
    let events = openai(&body).await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "thinking_start 0",
            "thinking_delta 0",
            "thinking_delta 0",
            "text_start 1",
            "text_delta 1",
            "toolcall_start 2",
            "toolcall_delta 2",
            "toolcall_delta 2",
            "toolcall_start 3",
            "toolcall_delta 3",
            "toolcall_delta 2",
            "toolcall_delta 3",
            "text_delta 1",
            "thinking_end 0",
            "text_end 1",
            "toolcall_end 2",
            "toolcall_end 3",
            "done"
        ]
    );
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [
            ContentBlock::Thinking(ThinkingContent {
                thinking: "think more".into(),
                thinking_signature: Some("reasoning_content".into()),
                redacted: None,
            }),
            ContentBlock::text("Hello after"),
            ContentBlock::ToolCall(ToolCall::new(
                "call_1",
                "read",
                json!({"path": "README.md"})
            )),
            ContentBlock::ToolCall(ToolCall::new("call_2", "bash", json!({"command": "ls"}))),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_events_rebuild(&events);
}

#[tokio::test]
async fn openai_later_ids_are_aliases_of_the_first() {
    // No index at all: the second entry is matched by the alias of its id.
    let body = openai_body(
        &[
            json!({"tool_calls": [{"id": "a", "function": {"name": "add", "arguments": "{\"x\""}}]}),
            json!({"tool_calls": [{"id": "a", "function": {"name": "other", "arguments": ":1}"}}]}),
        ],
        "tool_calls",
    );
    let events = openai(&body).await;
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [ContentBlock::ToolCall(ToolCall::new(
            "a",
            "add",
            json!({"x": 1})
        ))]
    );
}

#[tokio::test]
async fn openai_truncated_arguments_keep_the_raw_text() {
    let body = openai_body(
        &[
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "write", "arguments": "{\"path\":\"a"}}]}),
        ],
        "length",
    );
    let events = openai(&body).await;
    let message = final_message(&events);
    assert_eq!(message.stop_reason, StopReason::Length);
    let call = message.tool_calls().next().expect("a call");
    assert_eq!(call.arguments, json!({}));
    let error = call.arguments_error.as_deref().expect("an arguments error");
    assert!(
        error.ends_with("\n\nReceived arguments:\n{\"path\":\"a"),
        "{error}"
    );
}

#[tokio::test]
async fn openai_finish_reasons() {
    for (finish, expected) in [
        ("stop", (StopReason::Stop, None)),
        ("end", (StopReason::Stop, None)),
        ("length", (StopReason::Length, None)),
        ("function_call", (StopReason::ToolUse, None)),
        (
            "network_error",
            (
                StopReason::Error,
                Some("Provider finish_reason: network_error"),
            ),
        ),
    ] {
        let events = openai(&openai_body(&[json!({"content": "x"})], finish)).await;
        assert_eq!(outcome(&events), expected, "{finish}");
    }
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg", "usage": {"input_tokens": 3, "output_tokens": 1}}})
}

fn stop(reason: &str) -> Vec<Value> {
    vec![
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ]
}

#[tokio::test]
async fn anthropic_keeps_a_complete_input_without_deltas() {
    let mut events = vec![
        message_start(),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t", "name": "ls", "input": {"path": "src"}}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    events.extend(stop("tool_use"));
    let events = anthropic(&anthropic_body(&events)).await;
    assert_eq!(
        trace(&events),
        ["start", "toolcall_start 0", "toolcall_end 0", "done"]
    );
    let message = final_message(&events);
    assert_eq!(
        message.content,
        [ContentBlock::ToolCall(ToolCall::new(
            "t",
            "ls",
            json!({"path": "src"})
        ))]
    );
    assert_eq!(message.usage.total_tokens, 5);
}

#[tokio::test]
async fn anthropic_repairs_a_raw_tab_in_event_data() {
    let body = format!(
        "event: message_start\ndata: {}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"a\tb\"}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n{}",
        message_start(),
        anthropic_body(&stop("end_turn"))
    );
    let events = anthropic(&body).await;
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    assert_eq!(final_message(&events).content, [ContentBlock::text("a\tb")]);
}

#[tokio::test]
async fn anthropic_unparsable_event_names_itself() {
    let body = format!(
        "event: message_start\ndata: {}\n\nevent: content_block_start\ndata: {{\"type\": nope}}\n\n",
        message_start()
    );
    let events = anthropic(&body).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(
                "Could not parse Anthropic SSE event content_block_start: expected ident at line 1 column 11; data={\"type\": nope}"
            )
        )
    );
}

#[tokio::test]
async fn anthropic_stop_reasons() {
    for (reason, expected) in [
        ("end_turn", (StopReason::Stop, None)),
        ("pause_turn", (StopReason::Stop, None)),
        ("stop_sequence", (StopReason::Stop, None)),
        ("max_tokens", (StopReason::Length, None)),
        (
            "refusal",
            (
                StopReason::Error,
                Some("The model refused to complete the request"),
            ),
        ),
        (
            "sensitive",
            (StopReason::Error, Some("Provider stopped with: sensitive")),
        ),
        (
            "banana",
            (StopReason::Error, Some("Unhandled stop reason: banana")),
        ),
    ] {
        let mut events = vec![message_start()];
        events.extend(stop(reason));
        let events = anthropic(&anthropic_body(&events)).await;
        assert_eq!(outcome(&events), expected, "{reason}");
    }
    let events = anthropic(&anthropic_body(&[
        message_start(),
        json!({"type": "message_stop"}),
    ]))
    .await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("Anthropic stream ended without a stop reason")
        )
    );
}

fn gemini(parts: Value, finish: Option<&str>) -> String {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    format!("data: {}\r\n\r\n", json!({"candidates": [candidate]}))
}

#[tokio::test]
async fn google_repeated_id_gets_a_fresh_one() {
    let body = gemini(
        json!([
            {"functionCall": {"id": "c1", "name": "read", "args": {"path": "a"}}},
            {"functionCall": {"id": "c1", "name": "read", "args": {"path": "b"}}}
        ]),
        Some("STOP"),
    );
    let events = google(&body).await;
    let message = final_message(&events);
    let ids: Vec<&str> = message.tool_calls().map(|call| call.id.as_str()).collect();
    assert_eq!(ids[0], "c1");
    assert_ne!(ids[1], "c1");
    assert!(ids[1].starts_with("read_"), "{}", ids[1]);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn google_finish_reasons() {
    let call = json!([{"functionCall": {"name": "read", "args": {}}}]);
    let text = json!([{"text": "x"}]);
    for (parts, finish, expected) in [
        (&text, "STOP", (StopReason::Stop, None)),
        (&call, "STOP", (StopReason::ToolUse, None)),
        // A truncated response stays `length` even with a call (SPEC §5.7 applies).
        (&call, "MAX_TOKENS", (StopReason::Length, None)),
        (&text, "CONTINUATION", (StopReason::Length, None)),
        (
            &call,
            "MALFORMED_FUNCTION_CALL",
            (
                StopReason::Error,
                Some("Provider stopped with: MALFORMED_FUNCTION_CALL"),
            ),
        ),
    ] {
        let events = google(&gemini(parts.clone(), Some(finish))).await;
        assert_eq!(outcome(&events), expected, "{finish}");
    }
}

#[tokio::test]
async fn google_text_and_thought_alternate_blocks() {
    let body = format!(
        "{}{}",
        gemini(
            json!([{"text": "plan", "thought": true}, {"text": "Answer "}]),
            None
        ),
        gemini(json!([{"text": "done."}]), Some("STOP"))
    );
    let events = google(&body).await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "thinking_start 0",
            "thinking_delta 0",
            "thinking_end 0",
            "text_start 1",
            "text_delta 1",
            "text_delta 1",
            "text_end 1",
            "done"
        ]
    );
    assert_eq!(final_message(&events).text(), "Answer done.");
}

#[tokio::test]
async fn google_keeps_the_latest_text_signature() {
    let body = format!(
        "{}{}",
        gemini(
            json!([{"text": "Hi", "thoughtSignature": "c2lnMQ=="}]),
            None
        ),
        gemini(
            json!([{"text": "", "thoughtSignature": "c2lnMg=="}]),
            Some("STOP")
        )
    );
    let events = google(&body).await;
    let message = final_message(&events);
    assert_eq!(message.content.len(), 1, "the empty part opens no block");
    assert!(matches!(
        &message.content[0],
        ContentBlock::Text(text) if text.text == "Hi" && text.text_signature.as_deref() == Some("c2lnMg==")
    ));
}
