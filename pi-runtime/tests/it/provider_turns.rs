//! Seed 2's submit-result pattern over real HTTP (SPEC §10): an `Agent` with a
//! `submit_result` tool that accepts one valid score and ends the run, a turn limit of four,
//! and the loopback server speaking OpenAI SSE in some tests and Anthropic SSE in others.
//! Each request must replay the history the previous turns produced, including the
//! validation error the model corrects itself from.

use crate::provider_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_runtime::agent::{Agent, TurnControl};
use pi_runtime::provider::Api;
use pi_runtime::provider::http::HttpModel;
use pi_runtime::{AssistantMessage, LanguageModel, Message, State, StopReason, ToolResult, tool};
use provider_support::{
    Reply, Server, anthropic_tool_call, model, openai_chunk, openai_sse, openai_text,
    openai_tool_call, options,
};
use serde_json::{Value, json};

const INVALID_SCORE: &str = "Validation failed for tool \"submit_result\":\n  - score: expected number, got string\n\nReceived arguments:\n{\n  \"score\": \"high\"\n}";
const TURN_LIMIT: usize = 4;

/// The score the tool accepted, if any.
type Accepted = Arc<Mutex<Option<f64>>>;

/// Submit the final rating of the snippet.
#[tool(strict = "prefer", mode = "sequential")]
async fn submit_result(State(accepted): State<Accepted>, score: f64) -> Result<ToolResult, String> {
    let mut accepted = accepted.lock().map_err(|_| "the result store is broken")?;
    if accepted.is_some() {
        return Err("already accepted".to_owned());
    }
    *accepted = Some(score);
    Ok(ToolResult::text("accepted").with_terminate(true))
}

/// Seed 2's run: sequential submissions, ended by the accepted result or at the fourth turn.
fn agent(model: impl LanguageModel + 'static) -> (Agent, Accepted) {
    let accepted = Accepted::default();
    let turns = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(model)
        .system_prompt("Rate the snippet, then submit the result. Never answer in prose.")
        .tools(SubmitResult::new(Arc::clone(&accepted)))
        .finish_turn(move |_| {
            let done = turns.fetch_add(1, Ordering::Relaxed) + 1;
            std::future::ready(if done >= TURN_LIMIT {
                TurnControl::End
            } else {
                TurnControl::Proceed
            })
        })
        .build()
        .expect("agent");
    (agent, accepted)
}

fn accepted_score(accepted: &Accepted) -> Option<f64> {
    *accepted.lock().expect("lock")
}

/// `(toolCallId, isError, text)` of every tool result.
fn results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => {
                Some((result.tool_call_id.clone(), result.is_error, result.text()))
            }
            _ => None,
        })
        .collect()
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
async fn openai_invalid_then_valid_submission() {
    let server = Server::start(vec![
        Reply::Sse(openai_tool_call(
            "call_1",
            "submit_result",
            r#"{"score":"high"}"#,
        )),
        Reply::Sse(openai_tool_call(
            "call_2",
            "submit_result",
            r#"{"score":9}"#,
        )),
    ])
    .await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        options(),
    );
    let (agent, accepted) = agent(client);

    let added = agent.prompt("fn main() {}").await.expect("idle agent");

    assert_eq!(accepted_score(&accepted), Some(9.0));
    assert_eq!(
        results(&added),
        [
            ("call_1".to_owned(), true, INVALID_SCORE.to_owned()),
            ("call_2".to_owned(), false, "accepted".to_owned()),
        ]
    );
    // The accepting result terminates the batch: no request after it, and the last
    // assistant message is the call itself.
    let last = last_assistant(&added);
    assert_eq!(last.stop_reason, StopReason::ToolUse);
    assert_eq!(
        last.tool_calls().map(|call| &call.id).collect::<Vec<_>>(),
        ["call_2"]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["messages"]
            .as_array()
            .map(|m| m[2..].to_vec()),
        Some(vec![
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "submit_result", "arguments": "{\"score\":\"high\"}"}}]}),
            json!({"role": "tool", "content": INVALID_SCORE, "tool_call_id": "call_1"}),
        ])
    );
}

#[tokio::test]
async fn openai_two_valid_submissions_in_one_batch() {
    let call = |index: usize, id: &str, score: u32| {
        json!({"index": index, "id": id, "type": "function",
               "function": {"name": "submit_result", "arguments": format!("{{\"score\":{score}}}")}})
    };
    let both = openai_sse(&[openai_chunk(
        json!({"role": "assistant", "tool_calls": [call(0, "call_1", 7), call(1, "call_2", 8)]}),
        Some("tool_calls"),
    )]);
    let server = Server::start(vec![Reply::Sse(both), Reply::Sse(openai_text("Done."))]).await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        options(),
    );
    let (agent, accepted) = agent(client);

    let added = agent.prompt("fn main() {}").await.expect("idle agent");

    // Sequential: the first is accepted, the second refused; not every result terminates,
    // so the model is asked again.
    assert_eq!(accepted_score(&accepted), Some(7.0));
    assert_eq!(
        results(&added),
        [
            ("call_1".to_owned(), false, "accepted".to_owned()),
            ("call_2".to_owned(), true, "already accepted".to_owned()),
        ]
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(last_assistant(&added).text(), "Done.");
}

#[tokio::test]
async fn openai_prose_is_never_a_result() {
    let server = Server::start(vec![Reply::Sse(openai_text(r#"{"score": 9}"#))]).await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        options(),
    );
    let (agent, accepted) = agent(client);

    let added = agent.prompt("fn main() {}").await.expect("idle agent");

    assert_eq!(accepted_score(&accepted), None);
    assert_eq!(last_assistant(&added).stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn anthropic_invalid_then_valid_submission() {
    let server = Server::start(vec![
        Reply::Sse(anthropic_tool_call(
            "toolu_1",
            "submit_result",
            r#"{"score":"high"}"#,
        )),
        Reply::Sse(anthropic_tool_call(
            "toolu_2",
            "submit_result",
            r#"{"score":9}"#,
        )),
    ])
    .await;
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let (agent, accepted) = agent(client);

    let added = agent.prompt("fn main() {}").await.expect("idle agent");

    assert_eq!(accepted_score(&accepted), Some(9.0));
    assert_eq!(
        results(&added),
        [
            ("toolu_1".to_owned(), true, INVALID_SCORE.to_owned()),
            ("toolu_2".to_owned(), false, "accepted".to_owned()),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].body["messages"];
    assert_eq!(
        second[1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_1", "name": "submit_result",
               "input": {"score": "high"}})
    );
    let result = &second[2]["content"][0];
    assert_eq!(
        (&result["type"], &result["tool_use_id"], &result["is_error"]),
        (&json!("tool_result"), &json!("toolu_1"), &json!(true))
    );
    assert_eq!(result["content"], INVALID_SCORE);
}

#[tokio::test]
async fn anthropic_always_invalid_stops_at_the_turn_limit() {
    let invalid = |turn: usize| {
        Reply::Sse(anthropic_tool_call(
            &format!("toolu_{turn}"),
            "submit_result",
            r#"{"score":"high"}"#,
        ))
    };
    // One reply more than the limit allows: the run must not ask for it.
    let server = Server::start((1..=TURN_LIMIT + 1).map(invalid).collect()).await;
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let (agent, accepted) = agent(client);

    let added = agent.prompt("fn main() {}").await.expect("idle agent");

    assert_eq!(accepted_score(&accepted), None);
    let expected: Vec<(String, bool, String)> = (1..=TURN_LIMIT)
        .map(|turn| (format!("toolu_{turn}"), true, INVALID_SCORE.to_owned()))
        .collect();
    assert_eq!(results(&added), expected);
    let requests = server.requests();
    assert_eq!(requests.len(), TURN_LIMIT);
    // The last request replays all three earlier rounds: prompt + 3 × (call, result).
    let replayed: Vec<Value> = requests[TURN_LIMIT - 1].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(replayed.len(), 1 + 2 * (TURN_LIMIT - 1));
}
