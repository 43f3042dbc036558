//! A run that fails at the transport, end to end: a real `Agent` and a preset client against
//! the loopback server. An HTTP error ends the run with stop reason `error` and the body in
//! the agent's error message (SPEC §5.8); an abort, or the run's time limit, while the
//! server stalls ends it with `aborted` (§5.9), keeping what had streamed.

use crate::provider_support;

use std::time::Duration;

use futures::StreamExt;
use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::provider::http::RetryPolicy;
use pi_runtime::provider::presets::{self, Preset};
use pi_runtime::{AssistantMessage, ContentBlock, Message, StopReason, tool};
use provider_support::{
    Reply, Server, openai_chunk, openai_text, openai_tool_call, quick_retries, record_agent,
    recorded,
};
use serde_json::json;

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> String {
    (a + b).to_string()
}

const OVERLOADED: &str =
    r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
const HTTP_500: &str = r#"HTTP 500 Internal Server Error: {"error":{"message":"The server is overloaded","type":"server_error"}}"#;

/// A hang in the code under test fails the test instead of stalling the suite; the bound is
/// far above what any run here needs, even on a loaded machine.
const HANG: Duration = Duration::from_secs(60);

fn openai(server: &Server, retry: RetryPolicy) -> Preset {
    presets::openai_completions("gpt-4o")
        .no_api_key()
        .base_url(&server.base_url)
        .retry(retry)
}

fn agent(preset: Preset) -> Agent {
    Agent::builder()
        .shared_model(preset.build())
        .tools(Add)
        .build()
        .expect("agent")
}

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

#[tokio::test]
async fn an_http_error_ends_the_run_with_its_body() {
    let server = Server::start(vec![Reply::Status(500, OVERLOADED.into(), vec![])]).await;
    let agent = agent(openai(&server, RetryPolicy::none()));
    let trace = record_agent(&agent);

    let added = agent.prompt("What is 1 + 2?").await.expect("idle agent");

    let failed = last_assistant(&added);
    assert_eq!(failed.stop_reason, StopReason::Error);
    assert_eq!(failed.error_message.as_deref(), Some(HTTP_500));
    assert_eq!(agent.error_message().as_deref(), Some(HTTP_500));
    assert_eq!(
        recorded(&trace),
        [
            "agent_start",
            "turn_start",
            "start user",
            "end user",
            "start assistant",
            "end assistant",
            "turn_end error []",
            "agent_end",
        ]
    );
    assert_eq!(server.requests().len(), 1);
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn a_retried_server_error_is_invisible_to_the_run() {
    let server = Server::start(vec![
        Reply::Status(500, OVERLOADED.into(), vec![]),
        Reply::Sse(openai_text("3")),
    ])
    .await;
    let agent = agent(openai(&server, quick_retries(2)));

    let added = agent.prompt("What is 1 + 2?").await.expect("idle agent");

    let answer = last_assistant(&added);
    assert_eq!(
        (answer.stop_reason, answer.text()),
        (StopReason::Stop, "3".to_owned())
    );
    assert_eq!(agent.error_message(), None);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_failed_turn_is_left_out_of_the_next_request() {
    let server = Server::start(vec![
        Reply::Sse(openai_tool_call("call_1", "add", r#"{"a":1,"b":2}"#)),
        Reply::Status(500, OVERLOADED.into(), vec![]),
        Reply::Sse(openai_text("1 + 2 = 3")),
    ])
    .await;
    let agent = agent(openai(&server, RetryPolicy::none()));

    let first = agent.prompt("What is 1 + 2?").await.expect("idle agent");
    let roles: Vec<&str> = first.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(last_assistant(&first).stop_reason, StopReason::Error);
    assert_eq!(agent.error_message().as_deref(), Some(HTTP_500));

    // The failed response stays in the transcript but is never sent back.
    let second = agent.prompt("Try again.").await.expect("idle agent");
    assert_eq!(last_assistant(&second).text(), "1 + 2 = 3");
    assert_eq!(agent.error_message(), None, "a new run clears the error");
    assert_eq!(agent.messages().len(), 6);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = requests[2].body["messages"].as_array().cloned();
    let sent = sent.expect("messages");
    // No system message: the agent has no prompt, and its tool has no snippet to list.
    assert_eq!(
        sent[..],
        [
            json!({"role": "user", "content": [{"type": "text", "text": "What is 1 + 2?"}]}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                   "type": "function",
                   "function": {"name": "add", "arguments": r#"{"a":1,"b":2}"#}}]}),
            json!({"role": "tool", "content": "3", "tool_call_id": "call_1"}),
            json!({"role": "user", "content": [{"type": "text", "text": "Try again."}]}),
        ]
    );
}

/// The first text piece of a response that then goes silent.
fn stalling_text() -> Reply {
    let chunk = openai_chunk(json!({"role": "assistant", "content": "Let me"}), None);
    Reply::StallAfter(format!("data: {chunk}\n\n"))
}

/// The run ended with an aborted response; the agent is idle again.
fn assert_aborted<'a>(added: &'a [Message], agent: &Agent) -> &'a AssistantMessage {
    let aborted = last_assistant(added);
    assert_eq!(aborted.stop_reason, StopReason::Aborted);
    assert_eq!(
        aborted.error_message.as_deref(),
        Some("Request was aborted")
    );
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
    assert!(!agent.is_streaming());
    aborted
}

#[tokio::test]
async fn abort_while_the_server_stalls() {
    let server = Server::start(vec![stalling_text()]).await;
    let agent = agent(openai(&server, RetryPolicy::none()));
    let trace = record_agent(&agent);
    let mut events = agent.events();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("What is 1 + 2?").await }
    });

    // Abort once the first piece has arrived: the server will send nothing more.
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

    // The text that arrived before the abort is kept.
    let aborted = assert_aborted(&added, &agent);
    assert_eq!(aborted.content, [ContentBlock::text("Let me")]);
    assert_eq!(
        recorded(&trace),
        [
            "agent_start",
            "turn_start",
            "start user",
            "end user",
            "start assistant",
            "update text_start 0",
            "update text_delta 0",
            "end assistant",
            "turn_end aborted []",
            "agent_end",
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_time_limit_aborts_a_stalled_response() {
    let server = Server::start(vec![stalling_text()]).await;
    // A read timeout longer than the test's bound: only the time limit can end this run.
    let preset = openai(&server, RetryPolicy::none()).read_timeout(HANG * 2);
    let agent = Agent::builder()
        .shared_model(preset.build())
        .tools(Add)
        .time_limit(Duration::from_millis(300))
        .build()
        .expect("agent");

    let added = tokio::time::timeout(HANG, agent.prompt("What is 1 + 2?"))
        .await
        .expect("the time limit ends the run")
        .expect("idle agent");

    // Whether the request, or its first piece, beat the limit depends on the machine's
    // load: not asserted.
    assert_aborted(&added, &agent);
}
