//! Seed 2's self-correction loop over real HTTP: the model submits an invalid result, sees
//! the error as a tool result, and submits again. The loopback server speaks OpenAI SSE in
//! one test and Anthropic SSE in the other, and checks that each request replays the
//! history the previous turns produced.
//!
//! The turns are driven here by a small loop (stream, answer each call, send again): the
//! `Agent` had not landed on this branch. Once it has, the same scripted server should be
//! driven by `Agent` with a `submit_result` tool (seed 2), asserting the same requests.

mod provider_support;

use pi_runtime::message::{Message, ToolResultMessage};
use pi_runtime::provider::Api;
use pi_runtime::provider::anthropic::client::AnthropicMessages;
use pi_runtime::provider::openai::client::OpenAiCompletions;
use pi_runtime::{
    AssistantMessage, ContentBlock, Context, LanguageModel, StopReason, StreamOptions, Tool,
};
use provider_support::{Reply, Server, collect, final_message, model, options};
use serde_json::{Value, json};

const INVALID_SCORE: &str = "Validation failed for tool \"submit_result\":\n  - score: expected number, got string\n\nReceived arguments:\n{\"score\":\"high\"}";

/// The submit tool of seed 2: accepts a number `score` once.
fn context() -> Context {
    Context {
        system_prompt: "Rate the snippet, then submit the result.".into(),
        messages: vec![
            pi_runtime::UserMessage {
                content: pi_runtime::message::UserContent::Text("fn main() {}".into()),
                timestamp: 1,
            }
            .into(),
        ],
        tools: vec![Tool::new(
            "submit_result",
            "Submit the final rating",
            json!({"type": "object", "properties": {"score": {"type": "number"}},
                   "required": ["score"]}),
        )],
    }
}

/// The stand-in for the agent's argument check: a numeric score is accepted, anything else
/// is the validation error the model would see.
fn answer(call: &pi_runtime::ToolCall) -> ToolResultMessage {
    let accepted = call.arguments["score"].is_number();
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(if accepted {
            "accepted"
        } else {
            INVALID_SCORE
        })],
        details: None,
        usage: None,
        is_error: !accepted,
        duration_ms: None,
        timestamp: 2,
    }
}

/// Stream, answer the calls, repeat until the model stops calling; the assistant messages.
async fn drive_turns(client: &dyn LanguageModel) -> Vec<AssistantMessage> {
    let mut context = context();
    let mut turns = Vec::new();
    for _ in 0..5 {
        let events = collect(client.stream(context.clone(), StreamOptions::default())).await;
        let message = final_message(&events).clone();
        let results: Vec<ToolResultMessage> = message.tool_calls().map(answer).collect();
        context.messages.push(Message::Assistant(message.clone()));
        context
            .messages
            .extend(results.into_iter().map(Message::ToolResult));
        let done = message.stop_reason != StopReason::ToolUse;
        turns.push(message);
        if done {
            break;
        }
    }
    turns
}

fn openai_turn(id: &str, arguments: &str) -> String {
    let arguments = serde_json::to_string(arguments).expect("JSON string");
    format!(
        "data: {{\"id\":\"r\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"{id}\",\"type\":\"function\",\"function\":{{\"name\":\"submit_result\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"r\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":{arguments}}}}}]}},\"finish_reason\":\"tool_calls\"}}]}}\n\n\
         data: [DONE]\n\n"
    )
}

#[tokio::test]
async fn openai_self_correction_loop() {
    let server = Server::start(vec![
        Reply::Sse(openai_turn("call_1", r#"{"score":"high"}"#)),
        Reply::Sse(openai_turn("call_2", r#"{"score":9}"#)),
        Reply::Sse(
            "data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Submitted.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
                .into(),
        ),
    ])
    .await;
    let client = OpenAiCompletions::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        options(),
    );
    let turns = drive_turns(&client).await;
    let calls: Vec<Value> = turns
        .iter()
        .flat_map(AssistantMessage::tool_calls)
        .map(|call| call.arguments.clone())
        .collect();
    assert_eq!(calls, [json!({"score": "high"}), json!({"score": 9})]);
    assert_eq!(
        turns.last().map(AssistantMessage::text).as_deref(),
        Some("Submitted.")
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The second request replays the invalid call and the error the model must see.
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
    assert_eq!(
        requests[2].body["messages"][5],
        json!({"role": "tool", "content": "accepted", "tool_call_id": "call_2"})
    );
}

fn anthropic_turn(blocks: &str, stop: &str) -> String {
    format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":1}}}}}}\n\n\
         {blocks}\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{stop}\"}},\"usage\":{{\"output_tokens\":12}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    )
}

fn anthropic_call(id: &str, arguments: &str) -> String {
    let arguments = serde_json::to_string(arguments).expect("JSON string");
    let blocks = format!(
        "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"tool_use\",\"id\":\"{id}\",\"name\":\"submit_result\",\"input\":{{}}}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{arguments}}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n"
    );
    anthropic_turn(&blocks, "tool_use")
}

#[tokio::test]
async fn anthropic_self_correction_loop() {
    let text = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
                event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Submitted.\"}}\n\n\
                event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
    let server = Server::start(vec![
        Reply::Sse(anthropic_call("toolu_1", r#"{"score":"high"}"#)),
        Reply::Sse(anthropic_call("toolu_2", r#"{"score":9}"#)),
        Reply::Sse(anthropic_turn(text, "end_turn")),
    ])
    .await;
    let client = AnthropicMessages::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let turns = drive_turns(&client).await;
    let calls: Vec<Value> = turns
        .iter()
        .flat_map(AssistantMessage::tool_calls)
        .map(|call| call.arguments.clone())
        .collect();
    assert_eq!(calls, [json!({"score": "high"}), json!({"score": 9})]);
    assert_eq!(
        turns.last().map(AssistantMessage::text).as_deref(),
        Some("Submitted.")
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
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
    assert_eq!(
        requests[2].body["messages"][4]["content"][0]["content"],
        "accepted"
    );
}
