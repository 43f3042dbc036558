//! Every recorded OpenAI Responses stream in `fixtures/wire/openai-responses/`, served over
//! loopback HTTP to the real client: the exact text, reasoning (with the reasoning item kept
//! for replay), calls, usage and stop reason each capture holds, and the request sent.
//!
//! The expected values come from the capture itself: the items of its
//! `response.output_item.done` events, the deltas it streams and the usage of its terminal
//! response, read here with plain JSON, not with the parser under test.

use crate::provider_support;

use pi_runtime::message::{AssistantMessage, ContentBlock, TextContent, ThinkingContent};
use pi_runtime::provider::Api;
use pi_runtime::provider::http::HttpModel;
use pi_runtime::{AssistantMessageEvent, LanguageModel, StopReason, StreamOptions, ToolCall};
use provider_support::{
    Reply, Server, collect, context, final_message, fixture, model, options, trace,
};
use serde_json::{Value, json};

/// One capture, parsed as plain JSON: each event's `type` and data.
struct Capture {
    events: Vec<Value>,
}

impl Capture {
    fn read(name: &str) -> (String, Capture) {
        let body = fixture(&format!("openai-responses/{name}"));
        let events = body
            .split("\n\n")
            .filter_map(|frame| frame.lines().find_map(|line| line.strip_prefix("data: ")))
            .map(|data| serde_json::from_str(data).expect("capture JSON"))
            .collect();
        (body, Capture { events })
    }

    fn of_type<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |event| event["type"] == kind)
    }

    /// The items of `response.output_item.done`, in order.
    fn done_items(&self) -> Vec<&Value> {
        self.of_type("response.output_item.done")
            .map(|event| &event["item"])
            .collect()
    }

    /// The `delta`s of events of `kind`, joined.
    fn deltas(&self, kind: &str) -> String {
        self.of_type(kind)
            .map(|event| event["delta"].as_str().expect("delta"))
            .collect()
    }

    /// The terminal response (`response.completed`).
    fn completed(&self) -> &Value {
        &self
            .of_type("response.completed")
            .next()
            .expect("response.completed")["response"]
    }

    /// What the terminal response's usage says, as (input without cached, output,
    /// cached, total, reasoning).
    fn usage(&self) -> (u64, u64, u64, u64, u64) {
        let usage = &self.completed()["usage"];
        let n = |value: &Value| value.as_u64().expect("a token count");
        let cached = n(&usage["input_tokens_details"]["cached_tokens"]);
        (
            n(&usage["input_tokens"]) - cached,
            n(&usage["output_tokens"]),
            cached,
            n(&usage["total_tokens"]),
            n(&usage["output_tokens_details"]["reasoning_tokens"]),
        )
    }
}

fn usage_of(message: &AssistantMessage) -> (u64, u64, u64, u64, u64) {
    let usage = &message.usage;
    (
        usage.input,
        usage.output,
        usage.cache_read,
        usage.total_tokens,
        usage.reasoning,
    )
}

/// The capture served once to a Responses client of `id`; its events and the server.
async fn replay(id: &str, body: String) -> (Vec<AssistantMessageEvent>, Server) {
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let mut model = model(Api::OpenAiResponses, "openai", id, &server);
    model.reasoning = id.starts_with("gpt-5");
    model.compat.supports_strict_mode = Some(true);
    let client = HttpModel::new(model, options());
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    (events, server)
}

/// The Responses request every test sends.
fn assert_request(server: &Server, model_id: &str) {
    let request = server.only_request();
    assert_eq!(request.path_and_query, "/responses");
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    let body = &request.body;
    assert_eq!(body["model"], model_id);
    assert_eq!(
        (&body["stream"], &body["store"]),
        (&json!(true), &json!(false))
    );
    let instructions = if model_id.starts_with("gpt-5") {
        "developer"
    } else {
        "system"
    };
    assert_eq!(
        body["input"],
        json!([
            {"role": instructions, "content": "You are terse."},
            {"role": "user", "content": [{"type": "input_text",
                                          "text": "What's the weather in San Francisco?"}]}
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "weather", "description": "Current weather for a place",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                               "required": ["location"]},
                "strict": false}])
    );
}

/// The reasoning block an item becomes: the summary parts joined, the item's JSON as it
/// arrived (key order included) as the signature.
fn thinking_of(item: &Value) -> ContentBlock {
    let summary: Vec<&str> = item["summary"]
        .as_array()
        .expect("summary")
        .iter()
        .map(|part| part["text"].as_str().expect("summary text"))
        .collect();
    ContentBlock::Thinking(ThinkingContent {
        thinking: summary.join("\n\n"),
        thinking_signature: Some(item.to_string()),
        redacted: None,
    })
}

/// The text block a message item becomes, signed with its id and phase.
fn text_of(item: &Value) -> ContentBlock {
    let text: String = item["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|part| part["text"].as_str().expect("output text"))
        .collect();
    let mut signature = json!({"v": 1, "id": item["id"]});
    if let Some(phase) = item["phase"].as_str() {
        signature["phase"] = json!(phase);
    }
    ContentBlock::Text(TextContent {
        text,
        text_signature: Some(signature.to_string()),
    })
}

/// The call block a function call item becomes: `call_id|id`, the parsed arguments.
fn call_of(item: &Value) -> ContentBlock {
    let id = format!(
        "{}|{}",
        item["call_id"].as_str().expect("call_id"),
        item["id"].as_str().expect("id")
    );
    let arguments = serde_json::from_str(item["arguments"].as_str().expect("arguments"))
        .expect("argument JSON");
    ContentBlock::ToolCall(ToolCall::new(
        id,
        item["name"].as_str().expect("name"),
        arguments,
    ))
}

/// The joined argument deltas of block `index`.
fn argument_deltas(events: &[AssistantMessageEvent], index: usize) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } if *content_index == index => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The joined text or thinking deltas of block `index`.
fn text_deltas(events: &[AssistantMessageEvent], index: usize) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            }
            | AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } if *content_index == index => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn repeated(line: &str, times: usize) -> Vec<String> {
    std::iter::repeat_n(line.to_owned(), times).collect()
}

/// `kind 0` lines: the start, `deltas` deltas and the end of one block.
fn block(kind: &str, index: usize, deltas: usize) -> Vec<String> {
    let mut lines = vec![format!("{kind}_start {index}")];
    lines.extend(repeated(&format!("{kind}_delta {index}"), deltas));
    lines.push(format!("{kind}_end {index}"));
    lines
}

fn with_ends(blocks: Vec<Vec<String>>) -> Vec<String> {
    let mut lines = vec!["start".to_owned()];
    lines.extend(blocks.into_iter().flatten());
    lines.push("done".to_owned());
    lines
}

#[tokio::test]
async fn reasoning_loop_turn_1_reasoning_summary_then_a_call() {
    let (body, capture) = Capture::read("gpt-5.1-codex-max-reasoning-tool-loop.turn1.sse");
    let (events, server) = replay("gpt-5.1-codex-max", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [thinking_of(items[0]), call_of(items[1])]);
    assert_eq!(
        message.content[1],
        ContentBlock::ToolCall(ToolCall::new(
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn|fc_01830d662ab3856501693c32151234819091cfca267e98cc5f",
            "calculator",
            json!({"a": 12, "b": 7, "op": "add"})
        ))
    );
    // The encrypted reasoning is kept whole, for the next request.
    let ContentBlock::Thinking(thinking) = &message.content[0] else {
        panic!("no thinking block");
    };
    let stored: Value =
        serde_json::from_str(thinking.thinking_signature.as_deref().expect("signature"))
            .expect("signature JSON");
    assert_eq!(stored["encrypted_content"], items[0]["encrypted_content"]);
    assert!(
        stored["encrypted_content"]
            .as_str()
            .is_some_and(|c| c.starts_with("gAAAAABpPDIV"))
    );
    // 32 summary deltas and the part break, then 13 argument deltas.
    assert_eq!(
        trace(&events),
        with_ends(vec![block("thinking", 0, 33), block("toolcall", 1, 13)])
    );
    assert_eq!(
        text_deltas(&events, 0),
        capture.deltas("response.reasoning_summary_text.delta") + "\n\n"
    );
    assert_eq!(
        argument_deltas(&events, 1),
        capture.deltas("response.function_call_arguments.delta")
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), (134, 28, 0, 162, 0));
    assert_eq!(
        message.response_id.as_deref(),
        Some("resp_01830d662ab3856501693c321345c88190b0de00f3b9975691")
    );
    assert_request(&server, "gpt-5.1-codex-max");
}

/// Turns 2 and 3 of the loop: one call each, its arguments in 13 deltas.
async fn one_call_turn(name: &str, arguments: Value, usage: (u64, u64, u64, u64, u64)) {
    let (body, capture) = Capture::read(name);
    let (events, server) = replay("gpt-5.1-codex-max", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [call_of(items[0])]);
    let ContentBlock::ToolCall(call) = &message.content[0] else {
        panic!("no call");
    };
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("calculator", &arguments)
    );
    assert_eq!(trace(&events), with_ends(vec![block("toolcall", 0, 13)]));
    assert_eq!(
        argument_deltas(&events, 0),
        capture.deltas("response.function_call_arguments.delta")
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), usage);
    assert_request(&server, "gpt-5.1-codex-max");
}

#[tokio::test]
async fn reasoning_loop_turn_2_one_call() {
    one_call_turn(
        "gpt-5.1-codex-max-reasoning-tool-loop.turn2.sse",
        json!({"a": 19, "b": 3, "op": "multiply"}),
        (221, 26, 0, 247, 0),
    )
    .await;
}

#[tokio::test]
async fn reasoning_loop_turn_3_one_call() {
    one_call_turn(
        "gpt-5.1-codex-max-reasoning-tool-loop.turn3.sse",
        json!({"a": 57, "b": 10, "op": "multiply"}),
        (260, 26, 0, 286, 0),
    )
    .await;
}

#[tokio::test]
async fn reasoning_loop_turn_4_the_answer() {
    let (body, capture) = Capture::read("gpt-5.1-codex-max-reasoning-tool-loop.turn4.sse");
    let (events, server) = replay("gpt-5.1-codex-max", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [text_of(items[0])]);
    assert_eq!(message.text(), "The final result is **570**.");
    assert_eq!(
        message.content[0],
        ContentBlock::Text(TextContent {
            text: "The final result is **570**.".into(),
            text_signature: Some(
                r#"{"v":1,"id":"msg_01830d662ab3856501693c32183a488190a612c410a0a39823"}"#.into()
            ),
        })
    );
    assert_eq!(trace(&events), with_ends(vec![block("text", 0, 8)]));
    assert_eq!(
        text_deltas(&events, 0),
        capture.deltas("response.output_text.delta")
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), (299, 12, 0, 311, 0));
    assert_request(&server, "gpt-5.1-codex-max");
}

#[tokio::test]
async fn encrypted_reasoning_without_summary_then_a_strict_call() {
    let (body, capture) = Capture::read("gpt-5.2-reasoning-then-strict-function-call.sse");
    let (events, server) = replay("gpt-5.2", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [thinking_of(items[0]), call_of(items[1])]);
    // The `.done` item is replayed, not the `.added` one: their encrypted contents differ.
    let added = capture
        .of_type("response.output_item.added")
        .next()
        .expect("added");
    assert_ne!(
        added["item"]["encrypted_content"],
        items[0]["encrypted_content"]
    );
    assert_eq!(
        message.content[1],
        ContentBlock::ToolCall(ToolCall::new(
            "call_wMUhph1s1bedjPJraJvGw62X|fc_017eebd5643f46d6016a4b35e00698819b8e15db8d3200f1b8",
            "lookupVerificationCode",
            json!({"label": "issue-11239"})
        ))
    );
    assert_eq!(
        trace(&events),
        with_ends(vec![block("thinking", 0, 0), block("toolcall", 1, 8)])
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), (84, 39, 0, 123, 15));
    assert_request(&server, "gpt-5.2");
}

#[tokio::test]
async fn text_after_a_function_call_output() {
    let (body, capture) = Capture::read("gpt-5.2-text-after-function-call-output.sse");
    let (events, server) = replay("gpt-5.2", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [text_of(items[0])]);
    assert_eq!(
        message.text(),
        "Verification code for issue-11239 is blue-42."
    );
    assert_eq!(trace(&events), with_ends(vec![block("text", 0, 12)]));
    assert_eq!(
        text_deltas(&events, 0),
        capture.deltas("response.output_text.delta")
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(usage_of(message), (146, 16, 0, 162, 0));
    assert_request(&server, "gpt-5.2");
}

#[tokio::test]
async fn twelve_strict_tools_raw_body_final_answer() {
    let (body, capture) = Capture::read("gpt-5.4-twelve-strict-tools-final-answer.sse");
    let (events, server) = replay("gpt-5.4", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [text_of(items[0])]);
    assert_eq!(message.text(), "READY");
    let ContentBlock::Text(text) = &message.content[0] else {
        panic!("no text");
    };
    assert_eq!(
        text.text_signature.as_deref(),
        Some(
            r#"{"v":1,"id":"msg_0c3fd355454926f2006a4e40244084819faed6477f199b4b4c","phase":"final_answer"}"#
        )
    );
    assert_eq!(trace(&events), with_ends(vec![block("text", 0, 1)]));
    assert_eq!(message.stop_reason, StopReason::Stop);
    // 9728 of the 10132 input tokens were cached: they are not input.
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), (404, 5, 9728, 10137, 0));
    assert_request(&server, "gpt-5.4");
}

#[tokio::test]
async fn copilot_item_ids_that_change_on_every_event() {
    let (body, capture) = Capture::read("gpt-5.3-codex-copilot-rotating-item-ids.sse");
    // Every delta names another item id than its item's `added` event.
    let added_ids: Vec<&Value> = capture
        .of_type("response.output_item.added")
        .map(|event| &event["item"]["id"])
        .collect();
    assert!(
        capture
            .of_type("response.output_text.delta")
            .all(|event| !added_ids.contains(&&event["item_id"]))
    );
    let (events, server) = replay("gpt-5.3-codex", body).await;
    let items = capture.done_items();
    let message = final_message(&events);
    assert_eq!(message.content, [thinking_of(items[0]), text_of(items[1])]);
    assert_eq!(message.content[0], thinking_of(items[0]));
    assert_eq!(
        message.text(),
        "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**."
    );
    // The keys of the stored item keep the order they arrived in (alphabetical here).
    let ContentBlock::Thinking(thinking) = &message.content[0] else {
        panic!("no thinking");
    };
    assert_eq!(
        thinking.thinking_signature.as_deref(),
        Some(
            r#"{"content":[],"encrypted_content":null,"id":"capture-id-8","summary":[{"text":"**Counting character occurrences**","type":"summary_text"}],"type":"reasoning"}"#
        )
    );
    assert_eq!(
        trace(&events),
        with_ends(vec![block("thinking", 0, 2), block("text", 1, 55)])
    );
    assert_eq!(
        text_deltas(&events, 1),
        capture.deltas("response.output_text.delta")
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(usage_of(message), capture.usage());
    assert_eq!(usage_of(message), (19, 105, 0, 124, 44));
    assert_request(&server, "gpt-5.3-codex");
}

#[tokio::test]
async fn response_failed_by_a_rate_limit() {
    let (body, _) = Capture::read("gpt-4o-mini-response-failed-rate-limit.sse");
    let (events, server) = replay("gpt-4o-mini", body).await;
    let message = final_message(&events);
    assert_eq!(trace(&events), ["start", "error"]);
    assert!(message.content.is_empty());
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(
            "rate_limit_exceeded: Request too large for gpt-4o-mini in organization on tokens \
             per min (TPM): Limit 30000, Requested 35364."
        )
    );
    assert_eq!(message.response_id.as_deref(), Some("resp_test_failed_001"));
    assert_request(&server, "gpt-4o-mini");
}

#[tokio::test]
async fn nested_error_event_for_an_exhausted_quota() {
    let (body, capture) = Capture::read("gpt-5-nano-error-event-insufficient-quota.sse");
    let (events, server) = replay("gpt-5-nano", body).await;
    let message = final_message(&events);
    // The `error` event ends the response; the `response.failed` after it is not read.
    assert_eq!(trace(&events), ["start", "error"]);
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = capture.of_type("error").next().expect("error event");
    assert_eq!(
        message.error_message.as_deref(),
        error["error"]["message"].as_str()
    );
    assert!(
        message
            .error_message
            .as_deref()
            .is_some_and(|m| m.starts_with("You exceeded your current quota"))
    );
    assert_request(&server, "gpt-5-nano");
}
