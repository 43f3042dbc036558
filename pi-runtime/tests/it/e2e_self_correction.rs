//! Seed 2's self-correction loop end to end: a real `Agent` with a `#[tool]` tool and a
//! preset provider client, against the loopback server speaking OpenAI, DeepSeek or
//! Anthropic SSE. The model first sends `b: "x"`, reads the validation error in the next
//! request, corrects itself, gets `3`, and answers in text.

use crate::provider_support;

use pi_runtime::agent::Agent;
use pi_runtime::message::ThinkingContent;
use pi_runtime::provider::http::RetryPolicy;
use pi_runtime::provider::presets::{self, Preset};
use pi_runtime::{ContentBlock, Message, StopReason, ToolCall, tool};
use provider_support::{
    Recorded, Reply, Server, anthropic_text, anthropic_tool_call, openai_chunk, openai_sse,
    openai_text, openai_tool_call, record_agent, recorded,
};
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

/// The preset's client pointed at the loopback server, failing at once instead of retrying.
fn agent(preset: Preset, server: &Server) -> Agent {
    let model = preset
        .base_url(&server.base_url)
        .retry(RetryPolicy::none())
        .build();
    Agent::builder()
        .shared_model(model)
        .system_prompt("You add numbers with the add tool.")
        .tools(Add)
        .build()
        .expect("agent")
}

/// The events of a turn whose response streamed one call in `deltas` argument pieces.
fn call_turn(id: &str, deltas: usize, is_error: bool) -> Vec<String> {
    let mut lines = vec![
        "start assistant".to_owned(),
        "update toolcall_start 0".into(),
    ];
    lines.extend(std::iter::repeat_n(
        "update toolcall_delta 0".to_owned(),
        deltas,
    ));
    lines.extend([
        "update toolcall_end 0".into(),
        "end assistant".into(),
        format!("tool_start {id}"),
        format!("tool_end {id}{}", if is_error { " error" } else { "" }),
        "start toolResult".into(),
        "end toolResult".into(),
        format!("turn_end toolUse [{id}]"),
    ]);
    lines
}

/// The whole run: the prompt, the rejected call, the accepted call, the answer (a response
/// whose events are `answer`).
fn expected_trace(ids: [&str; 2], deltas: usize, answer: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = ["agent_start", "turn_start", "start user", "end user"]
        .map(String::from)
        .into();
    lines.extend(call_turn(ids[0], deltas, true));
    lines.push("turn_start".into());
    lines.extend(call_turn(ids[1], deltas, false));
    lines.push("turn_start".into());
    lines.extend(answer.iter().map(|line| (*line).to_owned()));
    lines.extend(["turn_end stop []".into(), "agent_end".into()]);
    lines
}

/// The transcript the run must leave, whatever the wire: `thinking` (if any) precedes each
/// response's content.
fn expected_transcript(ids: [&str; 2], thinking: Option<[&str; 3]>) -> Vec<Value> {
    let with_thinking = |turn: usize, content: Value| -> Value {
        let mut blocks = Vec::new();
        if let Some(thinking) = thinking {
            blocks.push(json!({"type": "thinking", "thinking": thinking[turn]}));
        }
        blocks.push(content);
        Value::Array(blocks)
    };
    vec![
        json!({"role": "user", "text": QUESTION}),
        json!({"role": "assistant", "stopReason": "toolUse", "content": with_thinking(0,
            json!({"type": "toolCall", "id": ids[0], "name": "add", "arguments": {"a": 1, "b": "x"}}))}),
        json!({"role": "toolResult", "toolCallId": ids[0], "isError": true, "text": INVALID_B}),
        json!({"role": "assistant", "stopReason": "toolUse", "content": with_thinking(1,
            json!({"type": "toolCall", "id": ids[1], "name": "add", "arguments": {"a": 1, "b": 2}}))}),
        json!({"role": "toolResult", "toolCallId": ids[1], "isError": false, "text": "3"}),
        json!({"role": "assistant", "stopReason": "stop", "content": with_thinking(2,
            json!({"type": "text", "text": ANSWER}))}),
    ]
}

/// The parts of each message a test can pin down (no timestamps, usage or durations).
fn transcript(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| match message {
            Message::User(user) => {
                let text = serde_json::to_value(&user.content).expect("user content");
                json!({"role": "user", "text": text[0]["text"]})
            }
            Message::Assistant(assistant) => {
                let content: Vec<Value> = assistant
                    .content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Text(text) => json!({"type": "text", "text": text.text}),
                        ContentBlock::Thinking(ThinkingContent { thinking, .. }) => {
                            json!({"type": "thinking", "thinking": thinking})
                        }
                        ContentBlock::ToolCall(ToolCall {
                            id,
                            name,
                            arguments,
                            ..
                        }) => json!({"type": "toolCall", "id": id, "name": name,
                                     "arguments": arguments}),
                        other => json!({"unexpected": format!("{other:?}")}),
                    })
                    .collect();
                json!({"role": "assistant", "stopReason": assistant.stop_reason.as_str(),
                       "content": content})
            }
            Message::ToolResult(result) => json!({"role": "toolResult",
                "toolCallId": result.tool_call_id, "isError": result.is_error,
                "text": result.text()}),
            other => json!({"unexpected": other.role()}),
        })
        .collect()
}

/// The OpenAI `messages` of a request, after the system prompt.
fn openai_messages(request: &Recorded) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .map(|messages| messages[1..].to_vec())
        .unwrap_or_default()
}

fn openai_call(id: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "add", "arguments": arguments}})
}

#[tokio::test]
async fn openai_self_correction_through_the_agent() {
    let server = Server::start(vec![
        Reply::Sse(openai_tool_call("call_1", "add", WRONG_ARGS)),
        Reply::Sse(openai_tool_call("call_2", "add", RIGHT_ARGS)),
        Reply::Sse(openai_text(ANSWER)),
    ])
    .await;
    let agent = agent(presets::openai_completions("gpt-4o").no_api_key(), &server);
    let trace = record_agent(&agent);

    let added = agent.prompt(QUESTION).await.expect("idle agent");

    let ids = ["call_1", "call_2"];
    assert_eq!(transcript(&added), expected_transcript(ids, None));
    assert_eq!(agent.messages(), added.messages);
    assert_eq!(agent.error_message(), None);
    assert_eq!(
        recorded(&trace),
        expected_trace(
            ids,
            2,
            &[
                "start assistant",
                "update text_start 0",
                "update text_delta 0",
                "update text_end 0",
                "end assistant"
            ]
        )
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path_and_query, "/chat/completions");
        assert_eq!(request.header("authorization"), None, "no key was given");
        assert_eq!(
            request.body["tools"],
            json!([{"type": "function", "function": {
                "name": "add", "description": "Add two numbers.",
                "parameters": {"type": "object",
                               "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                               "required": ["a", "b"], "additionalProperties": false}}}])
        );
    }
    let question = json!({"role": "user", "content": [{"type": "text", "text": QUESTION}]});
    let first_round = [
        question.clone(),
        json!({"role": "assistant", "content": null,
               "tool_calls": [openai_call("call_1", WRONG_ARGS)]}),
        json!({"role": "tool", "content": INVALID_B, "tool_call_id": "call_1"}),
    ];
    assert_eq!(openai_messages(&requests[0]), [question]);
    assert_eq!(openai_messages(&requests[1]), first_round);
    let mut second_round = first_round.to_vec();
    second_round.extend([
        json!({"role": "assistant", "content": null,
               "tool_calls": [openai_call("call_2", RIGHT_ARGS)]}),
        json!({"role": "tool", "content": "3", "tool_call_id": "call_2"}),
    ]);
    assert_eq!(openai_messages(&requests[2]), second_round);
}

/// A DeepSeek response: reasoning first, then `then` (a call or text), as deepseek-reasoner
/// streams it.
fn deepseek_turn(reasoning: &str, then: Value, finish_reason: &str) -> String {
    openai_sse(&[
        openai_chunk(
            json!({"role": "assistant", "content": null, "reasoning_content": ""}),
            None,
        ),
        openai_chunk(
            json!({"content": null, "reasoning_content": reasoning}),
            None,
        ),
        openai_chunk(then, Some(finish_reason)),
    ])
}

fn deepseek_call(reasoning: &str, id: &str, arguments: &str) -> String {
    let call = json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                      "function": {"name": "add", "arguments": arguments}}]});
    deepseek_turn(reasoning, call, "tool_calls")
}

#[tokio::test]
async fn deepseek_replays_its_reasoning_in_the_follow_up_requests() {
    let thinking = [
        "The user wants 1 + 2.",
        "b must be a number.",
        "The sum is 3.",
    ];
    let server = Server::start(vec![
        Reply::Sse(deepseek_call(thinking[0], "call_a", WRONG_ARGS)),
        Reply::Sse(deepseek_call(thinking[1], "call_b", RIGHT_ARGS)),
        Reply::Sse(deepseek_turn(
            thinking[2],
            json!({"content": ANSWER}),
            "stop",
        )),
    ])
    .await;
    let agent = agent(presets::deepseek_reasoner().api_key("sk-dummy"), &server);
    let trace = record_agent(&agent);

    let added = agent.prompt(QUESTION).await.expect("idle agent");

    let ids = ["call_a", "call_b"];
    assert_eq!(transcript(&added), expected_transcript(ids, Some(thinking)));
    // One chunk carries the whole call: one delta; the thinking block ends after the stream.
    let events = recorded(&trace);
    assert_eq!(
        events[4..12],
        [
            "start assistant",
            "update thinking_start 0",
            "update thinking_delta 0",
            "update toolcall_start 1",
            "update toolcall_delta 1",
            "update thinking_end 0",
            "update toolcall_end 1",
            "end assistant",
        ]
    );
    assert_eq!(events.last().map(String::as_str), Some("agent_end"));

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|request| request.header("authorization") == Some("Bearer sk-dummy"))
    );
    let question = json!({"role": "user", "content": [{"type": "text", "text": QUESTION}]});
    let first_round = [
        question,
        json!({"role": "assistant", "content": null, "reasoning_content": thinking[0],
               "tool_calls": [openai_call("call_a", WRONG_ARGS)]}),
        json!({"role": "tool", "content": INVALID_B, "tool_call_id": "call_a"}),
    ];
    assert_eq!(openai_messages(&requests[1]), first_round);
    let mut second_round = first_round.to_vec();
    second_round.extend([
        json!({"role": "assistant", "content": null, "reasoning_content": thinking[1],
               "tool_calls": [openai_call("call_b", RIGHT_ARGS)]}),
        json!({"role": "tool", "content": "3", "tool_call_id": "call_b"}),
    ]);
    assert_eq!(openai_messages(&requests[2]), second_round);
}

#[tokio::test]
async fn anthropic_self_correction_through_the_agent() {
    let server = Server::start(vec![
        Reply::Sse(anthropic_tool_call("toolu_1", "add", WRONG_ARGS)),
        Reply::Sse(anthropic_tool_call("toolu_2", "add", RIGHT_ARGS)),
        Reply::Sse(anthropic_text(ANSWER)),
    ])
    .await;
    let agent = agent(
        presets::anthropic("claude-sonnet-4-5").api_key("sk-ant-dummy"),
        &server,
    );
    let trace = record_agent(&agent);

    let added = agent.prompt(QUESTION).await.expect("idle agent");

    let ids = ["toolu_1", "toolu_2"];
    assert_eq!(transcript(&added), expected_transcript(ids, None));
    assert_eq!(
        recorded(&trace),
        expected_trace(
            ids,
            1,
            &[
                "start assistant",
                "update text_start 0",
                "update text_delta 0",
                "update text_end 0",
                "end assistant"
            ]
        )
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path_and_query, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some("sk-ant-dummy"));
        assert_eq!(
            request.body["tools"],
            json!([{"name": "add", "description": "Add two numbers.",
                    "eager_input_streaming": true,
                    "input_schema": {"type": "object",
                                     "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                                     "required": ["a", "b"], "additionalProperties": false},
                    "cache_control": {"type": "ephemeral"}}])
        );
    }
    let question = |cached: bool| {
        let mut text = json!({"type": "text", "text": QUESTION});
        if cached {
            text["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"role": "user", "content": [text]})
    };
    let tool_use = |id: &str, input: Value| {
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "add", "input": input}]})
    };
    // Prompt caching (on by default) marks the last block of the last user message.
    let tool_result = |id: &str, content: &str, is_error: bool, cached: bool| {
        let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": content,
                               "is_error": is_error});
        if cached {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"role": "user", "content": [block]})
    };
    assert_eq!(requests[0].body["messages"], json!([question(true)]));
    assert_eq!(
        requests[1].body["messages"],
        json!([
            question(false),
            tool_use("toolu_1", json!({"a": 1, "b": "x"})),
            tool_result("toolu_1", INVALID_B, true, true),
        ])
    );
    assert_eq!(
        requests[2].body["messages"],
        json!([
            question(false),
            tool_use("toolu_1", json!({"a": 1, "b": "x"})),
            tool_result("toolu_1", INVALID_B, true, false),
            tool_use("toolu_2", json!({"a": 1, "b": 2})),
            tool_result("toolu_2", "3", false, true),
        ])
    );
}

#[tokio::test]
async fn a_call_in_a_stop_response_still_runs() {
    // Stop reason `stop` with a call: the call still runs (SPEC §5.1 step 4), so a server
    // that mislabels its finish reason does not break the loop.
    let stop_with_call = openai_sse(&[openai_chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
               "type": "function", "function": {"name": "add", "arguments": RIGHT_ARGS}}]}),
        Some("stop"),
    )]);
    let server = Server::start(vec![
        Reply::Sse(stop_with_call),
        Reply::Sse(openai_text(ANSWER)),
    ])
    .await;
    let agent = agent(presets::openai_completions("gpt-4o").no_api_key(), &server);
    let added = agent.prompt(QUESTION).await.expect("idle agent");
    let Some(Message::ToolResult(result)) = added.get(2) else {
        panic!("no tool result: {added:?}");
    };
    assert_eq!((result.is_error, result.text()), (false, "3".to_owned()));
    let Some(Message::Assistant(last)) = added.last() else {
        panic!("no final answer: {added:?}");
    };
    assert_eq!(
        (last.stop_reason, last.text()),
        (StopReason::Stop, ANSWER.into())
    );
}
