//! Every way a provider call can fail ends as an assistant message with `stopReason`
//! `error` or `aborted` and an `errorMessage` saying what happened: never a panic, never a
//! hang. Each test runs the real client against a loopback server.

use crate::provider_support;

use std::time::Duration;

use futures::StreamExt as _;
use pi_runtime::provider::Api;
use pi_runtime::provider::http::{HttpModel, HttpOptions};
use pi_runtime::provider::presets;
use pi_runtime::{
    AssistantMessageEvent, CancellationToken, ContentBlock, LanguageModel, StopReason,
    StreamOptions,
};
use provider_support::{
    Reply, Server, collect, context, final_message, model, options, quick_retries, trace,
};

const TEXT_CHUNK: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
const STOP_CHUNK: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn openai(server: &Server, options: HttpOptions) -> HttpModel {
    HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", server),
        options,
    )
}

async fn run(client: &dyn LanguageModel) -> Vec<AssistantMessageEvent> {
    collect(client.stream(context(), StreamOptions::default())).await
}

/// The final message's stop reason and error text.
fn outcome(events: &[AssistantMessageEvent]) -> (StopReason, Option<&str>) {
    let message = final_message(events);
    (message.stop_reason, message.error_message.as_deref())
}

#[tokio::test]
async fn client_error_status_carries_the_body_and_is_not_retried() {
    let body = r#"{"error":{"message":"Invalid schema for function 'weather'","type":"invalid_request_error"}}"#;
    let server = Server::start(vec![Reply::Status(400, body.into(), vec![])]).await;
    let options = options().with_retry(quick_retries(3));
    let events = run(&openai(&server, options)).await;
    // The request failed before any response: no `start`.
    assert_eq!(trace(&events), ["error"]);
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(format!("HTTP 400 Bad Request: {body}").as_str())
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limit_is_retried_before_the_first_byte() {
    let server = Server::start(vec![
        Reply::Status(429, "slow down".into(), vec![("retry-after-ms", "10")]),
        Reply::Status(503, "overloaded".into(), vec![]),
        Reply::Sse(format!("{TEXT_CHUNK}{STOP_CHUNK}")),
    ])
    .await;
    let options = options().with_retry(quick_retries(2));
    let events = run(&openai(&server, options)).await;
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    assert_eq!(final_message(&events).text(), "Hello");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests.iter().all(|r| r.body == requests[0].body),
        "every attempt sends the same body"
    );
}

#[tokio::test]
async fn retries_run_out() {
    let replies = vec![Reply::Status(503, "overloaded".into(), vec![]); 3];
    let server = Server::start(replies).await;
    let options = options().with_retry(quick_retries(2));
    let events = run(&openai(&server, options)).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("HTTP 503 Service Unavailable: overloaded (3 attempts)")
        )
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_server_asking_for_a_long_wait_fails_at_once() {
    let server = Server::start(vec![Reply::Status(
        429,
        "quota".into(),
        vec![("retry-after", "120")],
    )])
    .await;
    let options = options().with_retry(quick_retries(2));
    let events = run(&openai(&server, options)).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(
                "HTTP 429 Too Many Requests: quota (the server asked to retry after 120s, more than the allowed 1s)"
            )
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_sse_data_keeps_the_partial_content() {
    let body = format!("{TEXT_CHUNK}data: {{\"choices\": [oops\n\n{STOP_CHUNK}");
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let events = run(&openai(&server, options())).await;
    assert_eq!(
        trace(&events),
        ["start", "text_start 0", "text_delta 0", "error"]
    );
    let message = final_message(&events);
    assert_eq!(message.content, [ContentBlock::text("Hel")]);
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(
                "Malformed SSE data: expected value at line 1 column 14; data={\"choices\": [oops"
            )
        )
    );
}

#[tokio::test]
async fn connection_dropped_mid_stream() {
    let server = Server::start(vec![Reply::DropAfter(TEXT_CHUNK.into())]).await;
    let events = run(&openai(&server, options())).await;
    let (reason, message) = outcome(&events);
    assert_eq!(reason, StopReason::Error);
    let message = message.expect("error message");
    assert!(
        message.starts_with("Connection dropped mid-stream: "),
        "{message}"
    );
    assert_eq!(final_message(&events).content, [ContentBlock::text("Hel")]);
    assert_eq!(
        trace(&events),
        ["start", "text_start 0", "text_delta 0", "error"]
    );
}

#[tokio::test]
async fn openai_stream_without_finish_reason() {
    let body = format!("{TEXT_CHUNK}data: [DONE]\n\n");
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let events = run(&openai(&server, options())).await;
    // The blocks are closed before the failure, as pi does.
    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0",
            "text_end 0",
            "error"
        ]
    );
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("Stream ended without finish_reason")
        )
    );
}

#[tokio::test]
async fn openai_without_finish_reason_support_infers_the_reason() {
    let call = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"weather\",\"arguments\":\"{}\"}}]}}]}\n\n";
    let server = Server::start(vec![Reply::Sse(call.into())]).await;
    let mut model = model(Api::OpenAiCompletions, "local", "m", &server);
    model.compat.supports_finish_reason = Some(false);
    let events = run(&HttpModel::new(model, options())).await;
    assert_eq!(outcome(&events), (StopReason::ToolUse, None));
}

#[tokio::test]
async fn anthropic_stream_cut_before_message_stop() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
                event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
                event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
    let server = Server::start(vec![Reply::Sse(body.into())]).await;
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let events = run(&client).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("Anthropic stream ended before message_stop")
        )
    );
    assert_eq!(final_message(&events).content, [ContentBlock::text("Hi")]);
}

#[tokio::test]
async fn anthropic_error_event_mid_stream() {
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let body = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"usage\":{{}}}}}}\n\nevent: error\ndata: {error}\n\n"
    );
    let server = Server::start(vec![Reply::Sse(body)]).await;
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let events = run(&client).await;
    assert_eq!(trace(&events), ["start", "error"]);
    assert_eq!(outcome(&events), (StopReason::Error, Some(error)));
}

#[tokio::test]
async fn anthropic_refusal_uses_the_explanation() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\n\
                event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_details\":{\"explanation\":\"Not allowed.\"}}}\n\n\
                event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let server = Server::start(vec![Reply::Sse(body.into())]).await;
    let client = HttpModel::new(
        model(Api::AnthropicMessages, "anthropic", "claude-test", &server),
        options(),
    );
    let events = run(&client).await;
    assert_eq!(outcome(&events), (StopReason::Error, Some("Not allowed.")));
}

#[tokio::test]
async fn google_stream_without_finish_reason() {
    let body = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n";
    let server = Server::start(vec![Reply::Sse(body.into())]).await;
    let client = HttpModel::new(
        model(
            Api::GoogleGenerativeAi,
            "google",
            "gemini-2.5-flash",
            &server,
        ),
        options(),
    );
    let events = run(&client).await;
    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0",
            "text_end 0",
            "error"
        ]
    );
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("Google stream ended without a finish reason")
        )
    );
}

#[tokio::test]
async fn read_timeout_when_the_server_goes_silent() {
    let server = Server::start(vec![Reply::StallAfter(TEXT_CHUNK.into())]).await;
    // Long enough for the first chunk to arrive before it on a loaded machine.
    let options = options().with_read_timeout(Duration::from_secs(2));
    let events = tokio::time::timeout(Duration::from_secs(30), run(&openai(&server, options)))
        .await
        .expect("the read timeout ends the stream");
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("Read timed out: no data from the server for 2s")
        )
    );
    assert_eq!(final_message(&events).content, [ContentBlock::text("Hel")]);
}

#[tokio::test]
async fn cancellation_mid_stream_is_aborted() {
    let server = Server::start(vec![Reply::StallAfter(TEXT_CHUNK.into())]).await;
    let client = openai(&server, options());
    let signal = CancellationToken::new();
    let mut stream = client.stream(
        context(),
        StreamOptions::default().with_signal(signal.clone()),
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        // Cancel once the first piece has arrived: the server sends nothing more.
        if event.kind() == "text_delta" {
            signal.cancel();
        }
        events.push(event);
    }
    assert_eq!(
        trace(&events),
        ["start", "text_start 0", "text_delta 0", "error"]
    );
    assert_eq!(
        outcome(&events),
        (StopReason::Aborted, Some("Request was aborted"))
    );
    assert_eq!(final_message(&events).content, [ContentBlock::text("Hel")]);
}

#[tokio::test]
async fn cancelled_before_the_request_sends_nothing() {
    let server = Server::start(vec![]).await;
    let signal = CancellationToken::new();
    signal.cancel();
    let stream =
        openai(&server, options()).stream(context(), StreamOptions::default().with_signal(signal));
    let events = collect(stream).await;
    assert_eq!(trace(&events), ["error"]);
    assert_eq!(
        outcome(&events),
        (StopReason::Aborted, Some("Request was aborted"))
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn unreachable_server() {
    // A port that was just free: nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    let model = serde_json::from_value(serde_json::json!({
        "id": "m", "provider": "local", "api": "openai-completions",
        "baseUrl": format!("http://{address}/v1"),
    }))
    .expect("model");
    let events = run(&HttpModel::new(model, options())).await;
    let (reason, message) = outcome(&events);
    assert_eq!(reason, StopReason::Error);
    let message = message.expect("error message");
    let prefix = format!("Could not reach http://{address}/v1/chat/completions: ");
    assert!(message.starts_with(&prefix), "{message}");
    assert_eq!(trace(&events), ["error"]);
}

#[tokio::test]
async fn missing_api_key_is_reported_without_a_request() {
    let server = Server::start(vec![]).await;
    // The preset read ANTHROPIC_API_KEY; make sure the test does not depend on it.
    let mut preset = presets::anthropic("claude-test").base_url(&server.base_url);
    preset.options.api_key = None;
    let events = run(&*preset.build()).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(
                "No API key for provider anthropic: set ANTHROPIC_API_KEY or pass the key explicitly"
            )
        )
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn presets_send_their_credentials_to_an_overridden_base_url() {
    let server = Server::start(vec![Reply::Sse(format!("{TEXT_CHUNK}{STOP_CHUNK}"))]).await;
    let client = presets::deepseek_reasoner()
        .api_key("sk-explicit")
        .base_url(&server.base_url)
        .build();
    let events = run(&*client).await;
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    let request = server.only_request();
    assert_eq!(request.path_and_query, "/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-explicit"));
    assert_eq!(request.body["model"], "deepseek-reasoner");
    assert_eq!(
        (client.api(), client.provider()),
        ("openai-completions", "deepseek")
    );
}

#[tokio::test]
async fn an_invalid_base_url_fails_without_retrying() {
    let model = serde_json::from_value(serde_json::json!({
        "id": "m", "provider": "local", "api": "openai-completions", "baseUrl": "not a url",
    }))
    .expect("model");
    let options = options().with_retry(quick_retries(2));
    let events = tokio::time::timeout(Duration::from_secs(5), run(&HttpModel::new(model, options)))
        .await
        .expect("no retry loop");
    let (reason, message) = outcome(&events);
    assert_eq!(reason, StopReason::Error);
    let message = message.expect("error message");
    assert!(
        message.starts_with("Invalid request to not a url/chat/completions: "),
        "{message}"
    );
}
