//! The OpenAI Responses API end to end: a real `Agent` with a `#[tool]` tool and the
//! `presets::openai` client against the loopback server speaking Responses SSE.
//!
//! Seed 2's self-correction loop with a reasoning model: each response reasons (an
//! encrypted reasoning item) before it calls `add`; the model first sends `b: "x"`, reads the
//! validation error, corrects itself, gets `3`, and answers. Every request body is pinned:
//! each one carries the earlier turns' reasoning items verbatim, `encrypted_content`
//! included, next to their `function_call` and a `function_call_output` per call. Then every
//! way a response can fail ends the run with stop reason `error` or `aborted` and a message
//! that says what happened.

use crate::provider_support;

use std::time::Duration;

use futures::StreamExt;
use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::message::{TextContent, ThinkingContent};
use pi_runtime::provider::http::RetryPolicy;
use pi_runtime::provider::presets::{self, Preset};
use pi_runtime::{
    AssistantMessage, ContentBlock, Message, StopReason, ThinkingLevel, ToolCall, tool,
};
use provider_support::{Recorded, Reply, Server, record_agent, recorded};
use serde_json::{Value, json};

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> String {
    (a + b).to_string()
}

const QUESTION: &str = "What is 1 + 2?";
const ANSWER: &str = "1 + 2 = 3";
const INVALID_B: &str = "Validation failed for tool \"add\":\n  - b: expected number, got string\n\nReceived arguments:\n{\n  \"a\": 1,\n  \"b\": \"x\"\n}";
const WRONG_ARGS: &str = r#"{"a":1,"b":"x"}"#;
const RIGHT_ARGS: &str = r#"{"a":1,"b":2}"#;
const MODEL: &str = "gpt-5-mini";
/// A hang in the code under test fails the test instead of stalling the suite.
const HANG: Duration = Duration::from_secs(60);

/// Responses SSE: each event as an `event:` line named by its `type`, then its `data:`,
/// numbered as the API numbers them.
fn sse(events: Vec<Value>) -> String {
    events
        .into_iter()
        .enumerate()
        .map(|(n, mut event)| {
            event["sequence_number"] = json!(n);
            let name = event["type"].as_str().unwrap_or_default().to_owned();
            format!("event: {name}\ndata: {event}\n\n")
        })
        .collect()
}

fn response(id: &str, status: &str, output: Vec<Value>) -> Value {
    json!({"id": id, "object": "response", "status": status, "model": MODEL,
           "output": output, "store": false})
}

fn created(id: &str) -> Value {
    json!({"type": "response.created", "response": response(id, "in_progress", vec![])})
}

fn completed(id: &str, output: Vec<Value>) -> Value {
    let mut done = response(id, "completed", output);
    done["usage"] = json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 100},
                           "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20},
                           "total_tokens": 150});
    json!({"type": "response.completed", "response": done})
}

/// The reasoning item of turn `turn`, as `output_item.done` brings it.
fn reasoning_item(turn: usize, summary: &str) -> Value {
    json!({"id": format!("rs_{turn}"), "type": "reasoning",
           "summary": [{"type": "summary_text", "text": summary}],
           "encrypted_content": format!("gAAAA-encrypted-reasoning-{turn}==")})
}

/// The events of a reasoning item at `index`: its summary streamed in two pieces.
fn reasoning_events(index: usize, item: &Value) -> Vec<Value> {
    let summary = item["summary"][0]["text"].as_str().unwrap_or_default();
    let (first, rest) = summary.split_at(summary.len() / 2);
    let mut added = item.clone();
    added["summary"] = json!([]);
    added["encrypted_content"] = Value::Null;
    vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": index,
               "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": index,
               "summary_index": 0, "delta": first}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": index,
               "summary_index": 0, "delta": rest}),
        json!({"type": "response.reasoning_summary_text.done", "output_index": index,
               "summary_index": 0, "text": summary}),
        json!({"type": "response.reasoning_summary_part.done", "output_index": index,
               "summary_index": 0, "part": {"type": "summary_text", "text": summary}}),
        json!({"type": "response.output_item.done", "output_index": index, "item": item}),
    ]
}

/// A `function_call` item at `index`, its arguments in two deltas.
fn call_events(index: usize, call_id: &str, item_id: &str, arguments: &str) -> (Vec<Value>, Value) {
    let item = |status: &str, arguments: &str| {
        json!({"id": item_id, "type": "function_call", "status": status,
               "arguments": arguments, "call_id": call_id, "name": "add"})
    };
    let (first, rest) = arguments.split_at(arguments.len() / 2);
    let done = item("completed", arguments);
    let events = vec![
        json!({"type": "response.output_item.added", "output_index": index,
               "item": item("in_progress", "")}),
        json!({"type": "response.function_call_arguments.delta", "output_index": index,
               "item_id": item_id, "delta": first}),
        json!({"type": "response.function_call_arguments.delta", "output_index": index,
               "item_id": item_id, "delta": rest}),
        json!({"type": "response.function_call_arguments.done", "output_index": index,
               "item_id": item_id, "arguments": arguments}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done.clone()}),
    ];
    (events, done)
}

/// A response that reasons, then calls `add`.
fn call_turn(turn: usize, summary: &str, call_id: &str, arguments: &str) -> String {
    let reasoning = reasoning_item(turn, summary);
    let (calls, call) = call_events(1, call_id, &format!("fc_{turn}"), arguments);
    let id = format!("resp_{turn}");
    let mut events = vec![created(&id)];
    events.extend(reasoning_events(0, &reasoning));
    events.extend(calls);
    events.push(completed(&id, vec![reasoning, call]));
    sse(events)
}

/// A message item at `index`: `text` in two deltas, phase `final_answer`.
fn text_events(index: usize, text: &str) -> (Vec<Value>, Value) {
    let item = |status: &str, text: &str| {
        json!({"id": format!("msg_{index}"), "type": "message", "status": status,
               "content": [{"type": "output_text", "annotations": [], "text": text}],
               "phase": "final_answer", "role": "assistant"})
    };
    let (first, rest) = text.split_at(text.len() / 2);
    let mut added = item("in_progress", "");
    added["content"] = json!([]);
    let done = item("completed", text);
    let events = vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        json!({"type": "response.output_text.delta", "output_index": index, "content_index": 0,
               "delta": first}),
        json!({"type": "response.output_text.delta", "output_index": index, "content_index": 0,
               "delta": rest}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done.clone()}),
    ];
    (events, done)
}

/// A response that reasons, then answers in text.
fn text_turn(turn: usize, summary: &str, text: &str) -> String {
    let reasoning = reasoning_item(turn, summary);
    let (texts, message) = text_events(1, text);
    let id = format!("resp_{turn}");
    let mut events = vec![created(&id)];
    events.extend(reasoning_events(0, &reasoning));
    events.extend(texts);
    events.push(completed(&id, vec![reasoning, message]));
    sse(events)
}

/// The OpenAI preset's client pointed at the loopback server, failing at once.
fn preset(server: &Server) -> Preset {
    presets::openai(MODEL)
        .api_key("sk-test")
        .base_url(&server.base_url)
        .retry(RetryPolicy::none())
}

fn agent(preset: Preset) -> Agent {
    Agent::builder()
        .shared_model(preset.build())
        .system_prompt("You add numbers with the add tool.")
        .thinking_level(ThinkingLevel::Medium)
        .tools(Add)
        .build()
        .expect("agent")
}

/// A request's `input` after the system prompt (checked once, in the first test).
fn input(request: &Recorded) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .map(|input| input[1..].to_vec())
        .unwrap_or_default()
}

fn function_call(turn: usize, call_id: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc_{turn}"), "call_id": call_id,
           "name": "add", "arguments": arguments})
}

fn function_call_output(call_id: &str, output: &str) -> Value {
    json!({"type": "function_call_output", "call_id": call_id, "output": output})
}

/// The events an agent shows for a response that reasoned (two pieces and the part break),
/// then streamed one call in two pieces.
fn call_turn_trace(id: &str, is_error: bool) -> Vec<String> {
    [
        "start assistant",
        "update thinking_start 0",
        "update thinking_delta 0",
        "update thinking_delta 0",
        "update thinking_delta 0",
        "update thinking_end 0",
        "update toolcall_start 1",
        "update toolcall_delta 1",
        "update toolcall_delta 1",
        "update toolcall_end 1",
        "end assistant",
    ]
    .into_iter()
    .map(String::from)
    .chain([
        format!("tool_start {id}"),
        format!("tool_end {id}{}", if is_error { " error" } else { "" }),
        "start toolResult".into(),
        "end toolResult".into(),
        format!("turn_end toolUse [{id}]"),
    ])
    .collect()
}

#[tokio::test]
async fn self_correction_replays_encrypted_reasoning_through_the_agent() {
    let summaries = [
        "The user wants 1 + 2; call add.",
        "b must be a number; call add again.",
        "The sum is 3.",
    ];
    let server = Server::start(vec![
        Reply::Sse(call_turn(1, summaries[0], "call_1", WRONG_ARGS)),
        Reply::Sse(call_turn(2, summaries[1], "call_2", RIGHT_ARGS)),
        Reply::Sse(text_turn(3, summaries[2], ANSWER)),
    ])
    .await;
    let agent = agent(preset(&server));
    let trace = record_agent(&agent);

    let added = agent.prompt(QUESTION).await.expect("idle agent");

    // The transcript: each response's reasoning block holds the item it came from.
    let thinking = |turn: usize| {
        ContentBlock::Thinking(ThinkingContent {
            thinking: summaries[turn - 1].to_owned(),
            thinking_signature: Some(reasoning_item(turn, summaries[turn - 1]).to_string()),
            redacted: None,
        })
    };
    let assistant = |message: &Message| match message {
        Message::Assistant(assistant) => (assistant.stop_reason, assistant.content.clone()),
        other => panic!("not an assistant message: {other:?}"),
    };
    assert_eq!(added.len(), 6);
    assert_eq!(
        assistant(&added[1]),
        (
            StopReason::ToolUse,
            vec![
                thinking(1),
                ContentBlock::ToolCall(ToolCall::new(
                    "call_1|fc_1",
                    "add",
                    json!({"a": 1, "b": "x"})
                )),
            ]
        )
    );
    let Message::ToolResult(rejected) = &added[2] else {
        panic!("no tool result: {:?}", added[2]);
    };
    assert_eq!(
        (
            rejected.tool_call_id.as_str(),
            rejected.is_error,
            rejected.text()
        ),
        ("call_1|fc_1", true, INVALID_B.to_owned())
    );
    assert_eq!(
        assistant(&added[3]),
        (
            StopReason::ToolUse,
            vec![
                thinking(2),
                ContentBlock::ToolCall(ToolCall::new(
                    "call_2|fc_2",
                    "add",
                    json!({"a": 1, "b": 2})
                )),
            ]
        )
    );
    let Message::ToolResult(accepted) = &added[4] else {
        panic!("no tool result: {:?}", added[4]);
    };
    assert_eq!(
        (
            accepted.tool_call_id.as_str(),
            accepted.is_error,
            accepted.text()
        ),
        ("call_2|fc_2", false, "3".to_owned())
    );
    assert_eq!(
        assistant(&added[5]),
        (
            StopReason::Stop,
            vec![
                thinking(3),
                ContentBlock::Text(TextContent {
                    text: ANSWER.into(),
                    text_signature: Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#.into()),
                }),
            ]
        )
    );
    let Message::Assistant(last) = &added[5] else {
        unreachable!()
    };
    assert_eq!(
        (
            last.usage.input,
            last.usage.cache_read,
            last.usage.reasoning
        ),
        (20, 100, 20)
    );
    assert_eq!(last.response_id.as_deref(), Some("resp_3"));
    assert_eq!(agent.error_message(), None);

    let mut expected: Vec<String> = ["agent_start", "turn_start", "start user", "end user"]
        .map(String::from)
        .into();
    expected.extend(call_turn_trace("call_1|fc_1", true));
    expected.push("turn_start".into());
    expected.extend(call_turn_trace("call_2|fc_2", false));
    expected.push("turn_start".into());
    expected.extend(
        [
            "start assistant",
            "update thinking_start 0",
            "update thinking_delta 0",
            "update thinking_delta 0",
            "update thinking_delta 0",
            "update thinking_end 0",
            "update text_start 1",
            "update text_delta 1",
            "update text_delta 1",
            "update text_end 1",
            "end assistant",
            "turn_end stop []",
            "agent_end",
        ]
        .map(String::from),
    );
    assert_eq!(recorded(&trace), expected);

    // Every request: the Responses endpoint, the key, the tool, reasoning asked for and
    // returned encrypted, nothing stored.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path_and_query, "/responses");
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        let body = &request.body;
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["stream"], true);
        assert_eq!(body["store"], false);
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["max_output_tokens"], 8192);
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "name": "add", "description": "Add two numbers.",
                    "parameters": {"type": "object",
                                   "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                                   "required": ["a", "b"], "additionalProperties": false},
                    "strict": false}])
        );
        assert_eq!(body.get("tool_choice"), None);
        let system = &body["input"][0];
        assert_eq!(system["role"], "developer");
        assert!(
            system["content"]
                .as_str()
                .is_some_and(|prompt| prompt.starts_with("You add numbers with the add tool."))
        );
    }
    let question = json!({"role": "user", "content": [{"type": "input_text", "text": QUESTION}]});
    assert_eq!(input(&requests[0]), std::slice::from_ref(&question));
    // The second request: the first turn's reasoning item verbatim, encrypted content and
    // all, before its call; the call's output.
    let first_round = [
        question,
        reasoning_item(1, summaries[0]),
        function_call(1, "call_1", WRONG_ARGS),
        function_call_output("call_1", INVALID_B),
    ];
    assert_eq!(input(&requests[1]), first_round);
    assert_eq!(
        requests[1].body["input"][2]["encrypted_content"],
        "gAAAA-encrypted-reasoning-1=="
    );
    let mut second_round = first_round.to_vec();
    second_round.extend([
        reasoning_item(2, summaries[1]),
        function_call(2, "call_2", RIGHT_ARGS),
        function_call_output("call_2", "3"),
    ]);
    assert_eq!(input(&requests[2]), second_round);
}

#[tokio::test]
async fn parallel_calls_get_one_output_each_after_their_reasoning() {
    let reasoning = reasoning_item(1, "Two sums at once.");
    let (first, first_done) = call_events(1, "call_a", "fc_a", r#"{"a":1,"b":2}"#);
    let (second, second_done) = call_events(2, "call_b", "fc_b", r#"{"a":3,"b":4}"#);
    let mut events = vec![created("resp_1")];
    events.extend(reasoning_events(0, &reasoning));
    events.extend(first);
    events.extend(second);
    events.push(completed(
        "resp_1",
        vec![reasoning.clone(), first_done, second_done],
    ));
    let server = Server::start(vec![
        Reply::Sse(sse(events)),
        Reply::Sse(text_turn(2, "Both done.", "3 and 7")),
    ])
    .await;
    let agent = agent(preset(&server));

    let added = agent
        .prompt("What are 1 + 2 and 3 + 4?")
        .await
        .expect("idle agent");

    let results: Vec<(&str, String)> = added
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some((result.tool_call_id.as_str(), result.text())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_a|fc_a", "3".to_owned()),
            ("call_b|fc_b", "7".to_owned())
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        input(&requests[1])[1..],
        [
            reasoning,
            function_call_named("fc_a", "call_a", r#"{"a":1,"b":2}"#),
            function_call_named("fc_b", "call_b", r#"{"a":3,"b":4}"#),
            function_call_output("call_a", "3"),
            function_call_output("call_b", "7"),
        ]
    );
}

fn function_call_named(item_id: &str, call_id: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": "add",
           "arguments": arguments})
}

// ---- failures ----

fn last_assistant(messages: &[Message]) -> &AssistantMessage {
    messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::Assistant(assistant) => Some(assistant),
            _ => None,
        })
        .expect("an assistant message")
}

/// One prompt against a server that answers `reply` (or `replies`), the run's last response.
async fn failed_run(
    preset: impl FnOnce(&Server) -> Preset,
    replies: Vec<Reply>,
) -> (AssistantMessage, Agent) {
    let server = Server::start(replies).await;
    let agent = agent(preset(&server));
    let added = tokio::time::timeout(HANG, agent.prompt(QUESTION))
        .await
        .expect("the run ends")
        .expect("idle agent");
    assert!(!agent.is_streaming());
    (last_assistant(&added).clone(), agent)
}

/// The run ended in an `error` response with `message`, which the agent reports too.
fn assert_error(failed: &AssistantMessage, agent: &Agent, message: &str) {
    assert_eq!(failed.stop_reason, StopReason::Error);
    assert_eq!(failed.error_message.as_deref(), Some(message));
    assert_eq!(agent.error_message().as_deref(), Some(message));
}

/// The first events of a text answer, then nothing more.
fn text_start() -> String {
    let (mut events, _) = text_events(0, "Let me think");
    events.truncate(2);
    let mut all = vec![created("resp_cut")];
    all.extend(events);
    sse(all)
}

#[tokio::test]
async fn http_error_statuses_end_the_run_with_their_body() {
    // pi's text (SPEC §7.7): the body's error object, as compact JSON.
    let error =
        r#"{"message":"Invalid 'input[2].encrypted_content'.","type":"invalid_request_error"}"#;
    let body = format!(r#"{{"error":{error}}}"#);
    let (failed, agent) = failed_run(preset, vec![Reply::Status(400, body, vec![])]).await;
    assert_error(&failed, &agent, &format!("OpenAI API error (400): {error}"));
    assert!(failed.content.is_empty());

    let error = r#"{"message":"The server had an error","type":"server_error"}"#;
    let body = format!(r#"{{"error":{error}}}"#);
    let (failed, agent) = failed_run(preset, vec![Reply::Status(500, body, vec![])]).await;
    assert_error(&failed, &agent, &format!("OpenAI API error (500): {error}"));
}

#[tokio::test]
async fn a_malformed_event_ends_the_run() {
    let body = format!(
        "{}event: response.output_text.delta\ndata: {{\"type\":\n\n",
        text_start()
    );
    let (failed, agent) = failed_run(preset, vec![Reply::Sse(body)]).await;
    assert_error(
        &failed,
        &agent,
        "Error reading response: malformed server-sent event JSON.",
    );
    // What arrived before is kept.
    assert_eq!(failed.content, [ContentBlock::text("Let me")]);
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_ends_the_run() {
    let (failed, agent) = failed_run(preset, vec![Reply::DropAfter(text_start())]).await;
    assert_eq!(failed.stop_reason, StopReason::Error);
    let message = failed.error_message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("Connection dropped mid-stream: "),
        "{message}"
    );
    assert_eq!(agent.error_message().as_deref(), Some(message));
    assert_eq!(failed.content, [ContentBlock::text("Let me")]);
}

#[tokio::test]
async fn a_stream_without_a_terminal_event_ends_the_run() {
    let (failed, agent) = failed_run(preset, vec![Reply::Sse(text_start())]).await;
    assert_error(
        &failed,
        &agent,
        "OpenAI Responses stream ended before a terminal response event",
    );
    assert_eq!(failed.content, [ContentBlock::text("Let me")]);
}

#[tokio::test]
async fn failed_and_incomplete_responses_end_the_run() {
    let failed_event = json!({"type": "response.failed", "response": {
        "id": "resp_f", "status": "failed",
        "error": {"code": "server_error", "message": "The model crashed."}}});
    let (failed, agent) = failed_run(
        preset,
        vec![Reply::Sse(sse(vec![created("resp_f"), failed_event]))],
    )
    .await;
    assert_error(&failed, &agent, "server_error: The model crashed.");

    let mut incomplete = response("resp_i", "incomplete", vec![]);
    incomplete["incomplete_details"] = json!({"reason": "content_filter"});
    let body = sse(vec![
        created("resp_i"),
        json!({"type": "response.incomplete", "response": incomplete}),
    ]);
    let (failed, agent) = failed_run(preset, vec![Reply::Sse(body)]).await;
    assert_error(&failed, &agent, "Response incomplete: content_filter");

    let error_event = json!({"type": "error", "error": {"type": "insufficient_quota",
        "code": "insufficient_quota", "message": "You exceeded your current quota."}});
    let (failed, agent) = failed_run(
        preset,
        vec![Reply::Sse(sse(vec![created("resp_e"), error_event]))],
    )
    .await;
    assert_error(&failed, &agent, "You exceeded your current quota.");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // Long enough for the first piece to arrive before it on a loaded machine.
    let quick = |server: &Server| preset(server).read_timeout(Duration::from_secs(2));
    let (failed, agent) = failed_run(quick, vec![Reply::StallAfter(text_start())]).await;
    assert_error(
        &failed,
        &agent,
        "Read timed out: no data from the server for 2s",
    );
    assert_eq!(failed.content, [ContentBlock::text("Let me")]);
}

#[tokio::test]
async fn an_abort_while_the_server_stalls_ends_the_run_aborted() {
    let server = Server::start(vec![Reply::StallAfter(text_start())]).await;
    let agent = agent(preset(&server));
    let mut events = agent.events();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt(QUESTION).await }
    });
    let delta_seen = async {
        while let Some(event) = events.next().await {
            if let AgentEvent::MessageUpdate {
                assistant_message_event: update,
                ..
            } = &event
                && update.kind() == "text_delta"
            {
                return;
            }
        }
        panic!("the events ended before any text arrived");
    };
    tokio::time::timeout(HANG, delta_seen)
        .await
        .expect("text arrives");
    agent.abort();
    let added = tokio::time::timeout(HANG, run)
        .await
        .expect("the abort ends the run")
        .expect("the run's task")
        .expect("idle agent");
    let aborted = last_assistant(&added);
    assert_eq!(aborted.stop_reason, StopReason::Aborted);
    assert_eq!(
        aborted.error_message.as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(aborted.content, [ContentBlock::text("Let me")]);
    assert!(!agent.is_streaming());
}

/// A recorded body through the Responses parser, no network.
async fn replay(body: String) -> Vec<pi_runtime::AssistantMessageEvent> {
    let model = serde_json::from_value(json!({
        "id": MODEL, "provider": "openai", "api": "openai-responses",
        "baseUrl": "http://127.0.0.1:9"
    }))
    .expect("model");
    pi_runtime::provider::http::HttpModel::new(model, provider_support::options())
        .replay(body)
        .collect()
        .await
}

#[tokio::test]
async fn a_huge_error_message_is_quoted_not_copied() {
    let payload = "x".repeat(1 << 20);
    let error = json!({"type": "error", "error": {"code": "boom", "message": payload}});
    let events = replay(sse(vec![created("resp_e"), error])).await;
    let message = provider_support::final_message(&events);
    let text = message.error_message.as_deref().unwrap_or_default();
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(text.starts_with("xxx"), "{}", &text[..20]);
    assert!(
        text.ends_with(" more bytes not shown)"),
        "{}",
        &text[text.len() - 40..]
    );
    assert!(text.len() < 4200, "{}", text.len());
}

#[tokio::test]
async fn unknown_events_and_a_done_marker_are_tolerated() {
    let (texts, message) = text_events(0, "Hi there");
    let mut events = vec![
        created("resp_u"),
        json!({"type": "response.web_search_call.searching", "output_index": 5}),
        json!({"type": "response.output_text.delta", "output_index": 9, "delta": "nowhere"}),
        // A lenient field of another type reads as absent.
        json!({"type": "response.output_text.delta", "output_index": "0", "delta": {"x": 1}}),
    ];
    events.extend(texts);
    events.push(completed("resp_u", vec![message]));
    let mut body = sse(events);
    body.push_str("data: [DONE]\n\n");
    let events = replay(body).await;
    let message = provider_support::final_message(&events);
    assert_eq!(
        (message.stop_reason, message.text()),
        (StopReason::Stop, "Hi there".to_owned())
    );
    assert_eq!(
        provider_support::trace(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0",
            "text_delta 0",
            "text_end 0",
            "done"
        ]
    );
}
