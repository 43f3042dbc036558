//! Streams recorded from a real llama.cpp server (`tests/fixtures/llama-cpp/`, SOURCES.md
//! there), served over loopback HTTP to the real Chat Completions client: the call, the
//! text, the stop reason as the server wrote it, the model the server names, its usage and
//! its `timings`, and the error it sends inside a 200 stream.

use crate::provider_support;

use pi_runtime::message::Timings;
use pi_runtime::provider::Api;
use pi_runtime::provider::http::HttpModel;
use pi_runtime::{AssistantMessage, ContentBlock, LanguageModel, StopReason, StreamOptions};
use provider_support::{Reply, Server, collect, context, final_message, model, options, trace};
use serde_json::json;

/// What llama-server calls the model: the path of its GGUF on the recording machine.
const SERVED_MODEL: &str = "/root/.cache/pi-llama/smollm2-0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf";

fn capture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/llama-cpp/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The message the client makes of a capture, and the event kinds it streamed.
async fn replay(name: &str) -> (AssistantMessage, Vec<String>) {
    let server = Server::start(vec![Reply::Sse(capture(name))]).await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "llama.cpp", "smollm2", &server),
        options(),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    (final_message(&events).clone(), trace(&events))
}

#[tokio::test]
async fn a_required_call_streams_prose_then_one_call() {
    let (message, _) = replay("smollm2-required-tool-call.sse").await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let [ContentBlock::Text(text), ContentBlock::ToolCall(call)] = message.content.as_slice()
    else {
        panic!("text then a call: {:?}", message.content);
    };
    assert_eq!(
        text.text,
        "The weather in Paris is Paris.\n\nHere's a JSON of one tool call:\n"
    );
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("weather", &json!({"city": "Paris"}))
    );
    assert!(!call.id.is_empty(), "{call:?}");
    assert_eq!(message.raw_stop_reason.as_deref(), Some("tool_calls"));
    assert_eq!(message.response_model.as_deref(), Some(SERVED_MODEL));
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read
        ),
        (1, 44, 235)
    );
    let timings = message.timings.expect("llama.cpp's timings");
    assert_eq!(
        (
            timings.cache_tokens,
            timings.prompt_tokens,
            timings.predicted_tokens
        ),
        (Some(235), Some(1), Some(44))
    );
    assert_eq!(timings.predicted_ms, Some(647.407));
    assert_eq!(timings.predicted_per_second, Some(66.418_806_098_791_02));
}

#[tokio::test]
async fn the_answer_after_the_result_is_text_with_the_servers_stop_reason() {
    let (message, trace) = replay("smollm2-final-text.sse").await;
    assert_eq!(trace.first().map(String::as_str), Some("start"));
    assert_eq!(trace.last().map(String::as_str), Some("done"));
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "The weather in Paris is sunny.");
    assert_eq!(message.raw_stop_reason.as_deref(), Some("stop"));
    assert_eq!(message.response_model.as_deref(), Some(SERVED_MODEL));
    assert_eq!(
        message
            .timings
            .map(|t| (t.cache_tokens, t.prompt_tokens, t.predicted_tokens)),
        Some((Some(202), Some(57), Some(8)))
    );
}

#[tokio::test]
async fn an_error_inside_the_200_stream_ends_the_message_with_it() {
    let (message, trace) = replay("smollm2-auto-error.sse").await;
    assert_eq!(trace.last().map(String::as_str), Some("error"));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("The model produced output that does not match the expected peg-native format")
    );
    // What came before the error stays.
    assert_eq!(
        message.text(),
        "12 + 30 = 32\n\nHere's the JSON of the tool call:\n"
    );
    assert_eq!(message.raw_stop_reason, None);
}

#[tokio::test]
async fn the_fields_serialize_as_pi_names_them() {
    let (message, _) = replay("smollm2-final-text.sse").await;
    let value = serde_json::to_value(&message).expect("serializes");
    assert_eq!(value["rawStopReason"], "stop");
    assert_eq!(value["responseModel"], SERVED_MODEL);
    assert_eq!(value["timings"]["predictedTokens"], 8);
    assert_eq!(value["timings"]["cacheTokens"], 202);
    let back: AssistantMessage = serde_json::from_value(value).expect("reads back");
    assert_eq!(back, message);
}

#[tokio::test]
async fn a_server_naming_the_requested_model_sets_no_response_model() {
    let body = "data: {\"id\":\"c1\",\"model\":\"smollm2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![Reply::Sse(body.into())]).await;
    let client = HttpModel::new(
        model(Api::OpenAiCompletions, "llama.cpp", "smollm2", &server),
        options(),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    let message = final_message(&events);
    assert_eq!(message.response_model, None);
    assert_eq!(message.timings, None::<Timings>);
    assert_eq!(message.raw_stop_reason.as_deref(), Some("stop"));
}
