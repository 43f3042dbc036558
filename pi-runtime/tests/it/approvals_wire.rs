//! Denials on every wire API (issue 26): over loopback HTTP, a real `HttpModel` answers with
//! two calls in one response, one of them needing approval; the run pauses, resumes in a
//! fresh agent with that call denied, and the next request carries a result for every call,
//! the denied one as an error result in that API's shape.

use pi_runtime::agent::approval::ApprovalDecision;
use pi_runtime::agent::{Agent, RunEnd, RunState};
use pi_runtime::provider::http::RetryPolicy;
use pi_runtime::provider::presets::{self, Preset};
use pi_runtime::tool::ApprovalPolicy;
use serde_json::{Value, json};

use crate::approvals::{Ran, key, recording};
use crate::provider_support::{
    Reply, Server, anthropic_sse, anthropic_text, google_text, openai_chunk, openai_sse,
    openai_text, responses_sse, responses_text,
};

const DENIED: &str = "Tool call denied: not on a Friday";

/// `read` runs freely; `write` always needs approval.
fn agent(preset: Preset, server: &Server, ran: &Ran) -> Agent {
    let model = preset
        .base_url(&server.base_url)
        .retry(RetryPolicy::none())
        .build();
    let write = recording("write", ran).with_approval(ApprovalPolicy::Always);
    Agent::builder()
        .shared_model(model)
        .tools((recording("read", ran), write))
        .build()
        .expect("agent")
}

/// Prompt, pause on the call to `write`, resume a fresh agent from the signed state with
/// that call denied, and return the body of the request made after the denial (the
/// second). `preset` builds the same model each time.
async fn deny_write(preset: impl Fn() -> Preset, replies: Vec<Reply>) -> Value {
    let server = Server::start(replies).await;
    let ran = Ran::default();
    let run = agent(preset(), &server, &ran)
        .prompt("go")
        .await
        .expect("idle");
    let RunEnd::AwaitingApproval { pending } = &run.end else {
        panic!("{:?}", run.end);
    };
    let ids: Vec<(&str, &str)> = (pending.iter())
        .map(|call| (call.tool.as_str(), call.reason.as_str()))
        .collect();
    assert_eq!(ids, [("write", "`write` always needs approval")]);
    let denied = pending[0].id.clone();
    let saved = run.paused_state().expect("paused").to_signed_json(&key());
    assert_eq!(server.requests().len(), 1);

    let fresh = agent(preset(), &server, &ran);
    let state = RunState::from_signed_json(&saved, &key()).expect("signed");
    let resumed = fresh
        .resume_with(state, [ApprovalDecision::deny(denied, "not on a Friday")])
        .await
        .expect("decisions fit");
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(*ran.lock().unwrap(), ["read a"], "only the free call ran");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    requests[1].body.clone()
}

#[tokio::test]
async fn openai_completions_gets_a_result_for_every_call_after_a_denial() {
    let calls = openai_sse(&[openai_chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function",
                 "function": {"name": "read", "arguments": r#"{"text":"a"}"#}},
                {"index": 1, "id": "call_2", "type": "function",
                 "function": {"name": "write", "arguments": r#"{"text":"b"}"#}}]}),
        Some("tool_calls"),
    )]);
    let body = deny_write(
        || presets::openai_completions("gpt-4o").no_api_key(),
        vec![Reply::Sse(calls), Reply::Sse(openai_text("done"))],
    )
    .await;
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "tool", "content": "read a", "tool_call_id": "call_1"}),
            json!({"role": "tool", "content": DENIED, "tool_call_id": "call_2"}),
        ]
    );
}

#[tokio::test]
async fn openai_responses_gets_a_result_for_every_call_after_a_denial() {
    let item = |output_index: usize, call_id: &str, item_id: &str, name: &str, args: &str| {
        let item = json!({"id": item_id, "type": "function_call", "status": "completed",
                          "arguments": args, "call_id": call_id, "name": name});
        (
            item.clone(),
            json!({"type": "response.output_item.done", "output_index": output_index,
                   "item": item}),
        )
    };
    let (read, read_done) = item(0, "call_1", "fc_1", "read", r#"{"text":"a"}"#);
    let (write, write_done) = item(1, "call_2", "fc_2", "write", r#"{"text":"b"}"#);
    let calls = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        read_done,
        write_done,
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
               "output": [read, write]}}),
    ]);
    let body = deny_write(
        || presets::openai("gpt-4.1").no_api_key(),
        vec![Reply::Sse(calls), Reply::Sse(responses_text("done"))],
    )
    .await;
    let input = body["input"].as_array().expect("input");
    assert_eq!(
        input[input.len() - 2..],
        [
            json!({"type": "function_call_output", "call_id": "call_1", "output": "read a"}),
            json!({"type": "function_call_output", "call_id": "call_2", "output": DENIED}),
        ]
    );
}

#[tokio::test]
async fn anthropic_gets_a_result_for_every_call_after_a_denial() {
    let tool_use = |index: usize, id: &str, name: &str, args: &str| {
        [
            json!({"type": "content_block_start", "index": index, "content_block":
                   {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            json!({"type": "content_block_delta", "index": index, "delta":
                   {"type": "input_json_delta", "partial_json": args}}),
            json!({"type": "content_block_stop", "index": index}),
        ]
    };
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1}}})];
    events.extend(tool_use(0, "toolu_1", "read", r#"{"text":"a"}"#));
    events.extend(tool_use(1, "toolu_2", "write", r#"{"text":"b"}"#));
    events.extend([
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
               "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ]);
    let body = deny_write(
        || presets::anthropic("claude-sonnet-4-5").api_key("sk-ant-dummy"),
        vec![
            Reply::Sse(anthropic_sse(&events)),
            Reply::Sse(anthropic_text("done")),
        ],
    )
    .await;
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last(),
        Some(&json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "read a",
             "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": DENIED,
             "is_error": true, "cache_control": {"type": "ephemeral"}},
        ]}))
    );
}

#[tokio::test]
async fn gemini_gets_a_result_for_every_call_after_a_denial() {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "read", "args": {"text": "a"}}},
        {"functionCall": {"name": "write", "args": {"text": "b"}}},
    ]}, "finishReason": "STOP"}]});
    let body = deny_write(
        || presets::google("gemini-2.5-flash").api_key("g-dummy"),
        vec![
            Reply::Sse(format!("data: {chunk}\r\n\r\n")),
            Reply::Sse(google_text("done")),
        ],
    )
    .await;
    let contents = body["contents"].as_array().expect("contents");
    assert_eq!(
        contents.last(),
        Some(&json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": "read a"}}},
            {"functionResponse": {"name": "write", "response": {"error": DENIED}}},
        ]}))
    );
}
