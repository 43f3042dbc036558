//! Hostile servers on 127.0.0.1: each misbehaves in one way (never answers, keeps a stream
//! alive with comments forever, sends one endless event, an invalid byte, a JSON error
//! with status 200, a body encoded without being asked, a `retry-after` date, a tool call
//! without a function, 20 MB of arguments, 10,000 calls in one response). Every run must end
//! in bounded time with the exact stop reason and error text. Each server task is aborted when
//! its test ends.

use crate::provider_support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::StreamExt;
use pi_runtime::provider::Api;
use pi_runtime::provider::http::{HttpModel, HttpOptions, RetryPolicy};
use pi_runtime::{AssistantMessageEvent, ContentBlock, LanguageModel, StopReason, StreamOptions};
use provider_support::{
    Reply, Server, context, final_message, model, openai_chunk, options, trace,
};
use tokio::task::JoinHandle;

const TEXT_CHUNK: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
const STOP_CHUNK: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A server task that ends with its test.
struct Loopback {
    base_url: String,
    task: JoinHandle<()>,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve every request with `reply()`.
async fn serve<F>(reply: F) -> Loopback
where
    F: Fn() -> Response + Clone + Send + Sync + 'static,
{
    let app = axum::Router::new().fallback(move || {
        let reply = reply.clone();
        async move { reply() }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let address = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve");
    });
    Loopback {
        base_url: format!("http://{address}"),
        task,
    }
}

/// A `200 text/event-stream` response with this body.
fn event_stream(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .expect("response")
}

fn openai_at(base_url: &str, options: HttpOptions) -> HttpModel {
    let model = serde_json::from_value(serde_json::json!({
        "id": "gpt-test", "provider": "openai", "api": "openai-completions", "baseUrl": base_url,
    }))
    .expect("model");
    HttpModel::new(model, options)
}

/// Run one request, failing the test if it takes longer than `limit`; the events and the
/// time it took.
async fn run_within(
    model: &dyn LanguageModel,
    limit: Duration,
) -> (Vec<AssistantMessageEvent>, Duration) {
    let start = Instant::now();
    let events = tokio::time::timeout(
        limit,
        model.stream(context(), StreamOptions::default()).collect(),
    )
    .await
    .expect("the response ends in time");
    (events, start.elapsed())
}

/// The outcome of one OpenAI request, with the test's options, to a server that always
/// answers `reply()`.
async fn outcome_against<F>(reply: F) -> (StopReason, Option<String>)
where
    F: Fn() -> Response + Clone + Send + Sync + 'static,
{
    let server = serve(reply).await;
    let model = openai_at(&server.base_url, options());
    let (events, _) = run_within(&model, Duration::from_secs(10)).await;
    let (reason, error) = outcome(&events);
    (reason, error.map(str::to_owned))
}

fn outcome(events: &[AssistantMessageEvent]) -> (StopReason, Option<&str>) {
    let message = final_message(events);
    (message.stop_reason, message.error_message.as_deref())
}

#[test]
fn the_default_limits_end_a_silent_server_within_a_few_minutes() {
    let options = HttpOptions::default();
    assert_eq!(options.connect_timeout, Duration::from_secs(10));
    assert_eq!(options.read_timeout, Duration::from_secs(60));
    assert_eq!(options.retry.max_retries, 2);
    assert_eq!(options.response_timeout, Duration::from_secs(600));
    assert_eq!(options.max_event_bytes, 16 << 20);
    // Three silent attempts and the two backoffs between them.
    let attempts = options.retry.max_retries + 1;
    let worst = options.read_timeout * attempts
        + options.retry.initial_delay
        + options.retry.initial_delay * 2;
    assert!(worst < Duration::from_secs(185), "{worst:?}");
}

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_fails_after_every_attempt() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    let server = Loopback {
        base_url: format!("http://{address}"),
        task,
    };
    let three_attempts = options()
        .with_read_timeout(Duration::from_millis(300))
        .with_retry(RetryPolicy::new(
            2,
            Duration::from_millis(10),
            Duration::from_secs(1),
        ));
    let model = openai_at(&server.base_url, three_attempts);
    let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
    assert_eq!(trace(&events), ["error"]);
    let expected = format!(
        "No response from {}/chat/completions within 0.3s (3 attempts)",
        server.base_url
    );
    assert_eq!(
        outcome(&events),
        (StopReason::Error, Some(expected.as_str()))
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
    // Timers never fire early; the upper bound only tells the configured timeouts from the
    // defaults (a minute per read), which a loaded machine cannot blur.
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(20),
        "{elapsed:?}"
    );

    // With a deadline shorter than the attempts, the deadline ends the retries: the second
    // attempt cannot time out before 2 s, so however slowly the first one connects (up to
    // 0.8 s), the deadline ends the second.
    let short_deadline = options()
        .with_read_timeout(Duration::from_secs(1))
        .with_response_timeout(Duration::from_millis(1800))
        .with_retry(RetryPolicy::new(
            10,
            Duration::from_millis(10),
            Duration::from_secs(1),
        ));
    let model = openai_at(&server.base_url, short_deadline);
    let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("No complete response within 1.8s (HttpOptions::response_timeout; 2 attempts)")
        )
    );
    assert!(
        elapsed >= Duration::from_millis(1750) && elapsed < Duration::from_secs(20),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn keep_alive_comments_do_not_extend_the_response_deadline() {
    let server = serve(|| {
        let comments = futures::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((
                Ok::<_, Infallible>(Bytes::from_static(b": keep-alive\n\n")),
                (),
            ))
        });
        event_stream(Body::from_stream(comments))
    })
    .await;
    // A read timeout no keep-alive gap comes near: only the deadline can end these runs.
    let custom = options()
        .with_read_timeout(Duration::from_secs(30))
        .with_response_timeout(Duration::from_secs(1));
    for api in [
        Api::OpenAiCompletions,
        Api::OpenAiResponses,
        Api::AnthropicMessages,
    ] {
        let mut model = openai_at(&server.base_url, custom.clone()).model().clone();
        model.api = api;
        let model = HttpModel::new(model, custom.clone());
        let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
        assert_eq!(trace(&events), ["start", "error"], "{api:?}");
        assert_eq!(
            outcome(&events),
            (
                StopReason::Error,
                Some("No complete response within 1s (HttpOptions::response_timeout)")
            ),
            "{api:?}"
        );
        // The upper bound tells the 1 s deadline from the 30 s read timeout, with room for
        // a loaded machine.
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(20),
            "{api:?}: {elapsed:?}"
        );
    }
}

/// An endless `data:` line: `head`, then `x` forever, in 64 KiB pieces.
fn endless_event(head: &'static [u8]) -> Response {
    let piece = Bytes::from(vec![b'x'; 64 << 10]);
    let body = futures::stream::iter([Ok::<_, Infallible>(Bytes::from_static(head))])
        .chain(futures::stream::repeat_with(move || Ok(piece.clone())));
    event_stream(Body::from_stream(body))
}

#[tokio::test]
async fn an_endless_event_fails_at_the_default_limit() {
    // Allocates tens of megabytes on purpose: not while another test measures its peak.
    let _alone = crate::memory_support::measured().await;
    let server =
        serve(|| endless_event(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""))
            .await;
    let model = openai_at(&server.base_url, options());
    let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
    assert_eq!(trace(&events), ["start", "error"]);
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("A server-sent event exceeds the limit of 16 MiB (HttpOptions::max_event_bytes)")
        )
    );
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
}

#[tokio::test]
async fn an_event_over_a_configured_limit_fails_at_once() {
    let server = serve(|| endless_event(b"event: content_block_delta\ndata: ")).await;
    let mut model = openai_at(&server.base_url, options()).model().clone();
    model.api = Api::AnthropicMessages;
    let custom = options().with_max_event_bytes(1 << 20);
    let (events, elapsed) =
        run_within(&HttpModel::new(model, custom), Duration::from_secs(10)).await;
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("A server-sent event exceeds the limit of 1 MiB (HttpOptions::max_event_bytes)")
        )
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn an_invalid_byte_fails_at_once_though_the_body_never_ends() {
    let server = serve(|| {
        let head = format!("{TEXT_CHUNK}data: {{\"choices\":[{{\"delta\":{{\"content\":\"");
        let mut bad = head.into_bytes();
        bad.extend_from_slice(b"\xff\"}}]}\n\n");
        let valid = futures::stream::repeat_with(|| {
            Ok::<_, Infallible>(Bytes::from_static(TEXT_CHUNK.as_bytes()))
        });
        let body = futures::stream::iter([Ok(Bytes::from(bad))]).chain(valid);
        event_stream(Body::from_stream(body))
    })
    .await;
    let model = openai_at(&server.base_url, options());
    let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
    let offset = TEXT_CHUNK.len() + "data: {\"choices\":[{\"delta\":{\"content\":\"".len();
    let expected = format!("The response stream is not valid UTF-8: byte 0xff at offset {offset}");
    assert_eq!(
        outcome(&events),
        (StopReason::Error, Some(expected.as_str()))
    );
    assert_eq!(final_message(&events).content, [ContentBlock::text("Hel")]);
    // The body never ends: only stopping at the bad byte ends the run. Milliseconds here;
    // the bound leaves room for a loaded machine.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

#[tokio::test]
async fn a_json_error_sent_with_status_200_is_the_servers_error() {
    let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let server = serve(move || {
        Response::builder()
            .header("content-type", "application/json; charset=utf-8")
            .body(Body::from(body))
            .expect("response")
    })
    .await;
    let custom = options().with_retry(provider_support::quick_retries(2));
    let (events, _) = run_within(
        &openai_at(&server.base_url, custom),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(trace(&events), ["error"]);
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some(
                "The server answered HTTP 200 OK with an error instead of an event stream: \
                 You exceeded your current quota, please check your plan and billing details."
            )
        )
    );
}

#[tokio::test]
async fn an_html_page_sent_with_status_200_is_quoted() {
    let reply = || {
        Response::builder()
            .header("content-type", "text/html")
            .body(Body::from("<html>Sign in to continue</html>"))
            .expect("response")
    };
    assert_eq!(
        outcome_against(reply).await,
        (
            StopReason::Error,
            Some(
                "The server answered HTTP 200 OK with text/html instead of an event stream: \
                 <html>Sign in to continue</html>"
                    .to_owned()
            )
        )
    );
}

#[tokio::test]
async fn a_gzip_body_that_was_not_asked_for_is_named() {
    let reply = || {
        Response::builder()
            .header("content-type", "text/event-stream")
            .header("content-encoding", "gzip")
            .body(Body::from(&b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"[..]))
            .expect("response")
    };
    assert_eq!(
        outcome_against(reply).await,
        (
            StopReason::Error,
            Some(
                "The response body is gzip-encoded, which was not asked for \
                 (the request sent accept-encoding: identity), so it cannot be read"
                    .to_owned()
            )
        )
    );
}

#[tokio::test]
async fn requests_ask_for_an_unencoded_event_stream() {
    let server = Server::start(vec![Reply::Sse(format!("{TEXT_CHUNK}{STOP_CHUNK}"))]).await;
    let model = HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        options(),
    );
    let (events, _) = run_within(&model, Duration::from_secs(10)).await;
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    let request = server.only_request();
    assert_eq!(request.header("accept-encoding"), Some("identity"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn a_retry_after_date_is_honoured() {
    // HTTP dates have whole seconds: two seconds ahead is more than one second from now,
    // however long the server takes to start and answer.
    let asked = Instant::now();
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    let date: &'static str = Box::leak(date.into_boxed_str());
    let server = Server::start(vec![
        Reply::Status(503, "busy".into(), vec![("retry-after", date)]),
        Reply::Sse(format!("{TEXT_CHUNK}{STOP_CHUNK}")),
    ])
    .await;
    let custom = options().with_retry(RetryPolicy::new(
        1,
        Duration::from_millis(5),
        Duration::from_secs(5),
    ));
    let model = HttpModel::new(
        model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
        custom,
    );
    let (events, _) = run_within(&model, Duration::from_secs(60)).await;
    let elapsed = asked.elapsed();
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    assert_eq!(server.requests().len(), 2);
    // The date is two seconds away at most; the rest of the upper bound is room for a
    // loaded machine.
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(10),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn a_tool_call_without_a_function_is_a_malformed_stream() {
    let entry = |function: &str| {
        format!(
            "{TEXT_CHUNK}data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":\
             [{{\"index\":0,\"id\":\"c1\",\"type\":\"function\"{function}}}]}}}}]}}\n\n{STOP_CHUNK}"
        )
    };
    let cases = [
        (
            entry(",\"function\":null"),
            "invalid type: null, expected struct FunctionDelta at line 1 column 100",
        ),
        (entry(""), "missing field `function` at line 1 column 85"),
    ];
    for (body, error) in cases {
        let data = body
            .lines()
            .nth(2)
            .and_then(|line| line.strip_prefix("data: "))
            .expect("the tool-call chunk")
            .to_owned();
        let server = Server::start(vec![Reply::Sse(body)]).await;
        let model = HttpModel::new(
            model(Api::OpenAiCompletions, "openai", "gpt-test", &server),
            options(),
        );
        let (events, _) = run_within(&model, Duration::from_secs(10)).await;
        assert_eq!(
            trace(&events),
            ["start", "text_start 0", "text_delta 0", "error"]
        );
        let expected = format!("Malformed SSE data: {error}; data={data}");
        assert_eq!(
            outcome(&events),
            (StopReason::Error, Some(expected.as_str()))
        );
    }
}

#[tokio::test]
async fn a_malformed_50_mb_event_is_quoted_in_part() {
    // Allocates tens of megabytes on purpose: not while another test measures its peak.
    let _alone = crate::memory_support::measured().await;
    let openai = openai_at("http://127.0.0.1:9", options()).model().clone();
    let replay = |api: Api, body: String| {
        let mut model = openai.clone();
        model.api = api;
        let custom = options().with_max_event_bytes(64 << 20);
        HttpModel::new(model, custom)
            .replay(body)
            .collect::<Vec<_>>()
    };
    let payload = "x".repeat(50 << 20);
    let body = format!("data: {{\"choices\": [{payload}\n\n");
    let events = replay(Api::OpenAiCompletions, body).await;
    let error = final_message(&events)
        .error_message
        .clone()
        .expect("an error");
    let shown = "data={\"choices\": [xxx";
    assert!(error.starts_with("Malformed SSE data: expected value at line 1 column 14; "));
    assert!(error.contains(shown), "{}", &error[..200]);
    let left_out = 50 * (1 << 20) + "{\"choices\": [".len() - 4000;
    assert!(
        error.ends_with(&format!("x... ({left_out} more bytes not shown)")),
        "{}",
        &error[error.len() - 100..]
    );
    assert!(error.len() < 4200, "{}", error.len());

    // An Anthropic `error` event is quoted the same way.
    let body = format!("event: error\ndata: {{\"type\":\"error\",\"error\":\"{payload}\"}}\n\n");
    let events = replay(Api::AnthropicMessages, body).await;
    let error = final_message(&events)
        .error_message
        .clone()
        .expect("an error");
    assert!(error.starts_with("{\"type\":\"error\",\"error\":\"xxx"));
    assert!(error.ends_with(" more bytes not shown)"));
    assert!(error.len() < 4200, "{}", error.len());
}

/// An OpenAI stream of `calls` calls of `measure`, each with `arguments` sent in pieces of
/// `piece` bytes (ASCII), then `finish_reason: tool_calls`.
fn tool_call_stream(calls: usize, arguments: &str, piece: usize) -> String {
    // Written frame by frame into one string, not collected first: the fixture must not raise
    // the peak the tests measure from.
    let mut body = String::with_capacity(arguments.len() * calls * 2);
    let mut chunk = |delta: serde_json::Value, finish: Option<&str>| {
        body.push_str(&format!("data: {}\n\n", openai_chunk(delta, finish)));
    };
    for index in 0..calls {
        chunk(
            serde_json::json!({"tool_calls": [{"index": index, "id": format!("call_{index}"),
                "type": "function", "function": {"name": "measure", "arguments": ""}}]}),
            None,
        );
        for part in arguments.as_bytes().chunks(piece) {
            let part = std::str::from_utf8(part).expect("ASCII arguments");
            chunk(
                serde_json::json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                None,
            );
        }
    }
    chunk(serde_json::json!({}), Some("tool_calls"));
    body.push_str("data: [DONE]\n\n");
    body
}

/// A server whose first response is `first`, and every later one a short text. Not
/// `provider_support::Server`: that one parses and keeps each request, and the second request
/// here carries the 20 MB of arguments back, which would count in the peak measured.
async fn serve_then_text(first: String) -> Loopback {
    let first = Bytes::from(first);
    let served = Arc::new(AtomicUsize::new(0));
    serve(move || {
        let body = if served.fetch_add(1, Ordering::SeqCst) == 0 {
            first.clone()
        } else {
            Bytes::from_static(b"data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
        };
        event_stream(Body::from(body))
    })
    .await
}

/// An agent on `server` with the tool `measure`, which answers the length of its `content`
/// (0 without one).
fn measuring_agent(server: &Loopback) -> pi_runtime::Agent {
    let measure = pi_runtime::FnTool::new(
        "measure",
        "The length of a text.",
        serde_json::json!({"type": "object", "properties": {"content": {"type": "string"}}}),
        |args: serde_json::Value, _ctx| async move {
            let length = args["content"].as_str().map_or(0, str::len);
            Ok::<_, pi_runtime::ToolError>(pi_runtime::ToolResult::text(length.to_string()))
        },
    );
    pi_runtime::Agent::builder()
        .model(openai_at(&server.base_url, options()))
        .tools(measure)
        .build()
        .expect("agent")
}

/// The results of a finished run: stop reason of the last response and each result's text.
fn run_results(messages: &[pi_runtime::Message]) -> (Option<StopReason>, Vec<String>) {
    let last = messages
        .iter()
        .rev()
        .find_map(pi_runtime::Message::as_assistant)
        .map(|message| message.stop_reason);
    let results = messages
        .iter()
        .filter_map(pi_runtime::Message::as_tool_result)
        .map(pi_runtime::ToolResultMessage::text)
        .collect();
    (last, results)
}

/// Seen before the fix: 20 MB of arguments in 1 KB deltas took 194 s through the agent
/// (the stream alone 0.85 s), because each event copied the message so far.
#[tokio::test]
async fn twenty_mb_of_arguments_in_1_kb_deltas_run_through_the_agent_in_linear_time() {
    let _alone = crate::memory_support::measured().await;
    let content = "x".repeat(20_000_000);
    let arguments = format!("{{\"content\":\"{content}\"}}");
    drop(content);
    let server = serve_then_text(tool_call_stream(1, &arguments, 1024)).await;
    drop(arguments);
    let agent = measuring_agent(&server);
    let (peak, started) = (crate::memory_support::peak_rss(), Instant::now());
    let messages = tokio::time::timeout(Duration::from_secs(120), agent.prompt("go"))
        .await
        .expect("the run ends in time")
        .expect("the run succeeds");
    let elapsed = started.elapsed();
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    assert_eq!(
        run_results(&messages),
        (Some(StopReason::Stop), vec!["20000000".to_owned()])
    );
    // Measured here: 0.24 s and 99 MB in a release build, 2.4 s unoptimized.
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    assert!(
        grown < 400 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
}

/// Seen before the fix: 10,000 calls in one response took 160 s (the stream alone 0.38 s).
#[tokio::test]
async fn ten_thousand_calls_in_one_response_run_in_linear_time() {
    let _alone = crate::memory_support::measured().await;
    let server = serve_then_text(tool_call_stream(10_000, "{}", 1024)).await;
    let agent = measuring_agent(&server);
    let (peak, started) = (crate::memory_support::peak_rss(), Instant::now());
    let messages = tokio::time::timeout(Duration::from_secs(120), agent.prompt("go"))
        .await
        .expect("the run ends in time")
        .expect("the run succeeds");
    let elapsed = started.elapsed();
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    let (stop, results) = run_results(&messages);
    assert_eq!(stop, Some(StopReason::Stop));
    assert_eq!(results.len(), 10_000);
    assert!(
        results.iter().all(|text| text == "0"),
        "{:?}",
        &results[..3]
    );
    // Measured here: 0.17 s and 41 MB in a release build, 0.8 s unoptimized.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert!(
        grown < 200 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
}

/// One Responses event with its `sequence_number`.
fn numbered(sequence: u64, mut event: serde_json::Value) -> Bytes {
    event["sequence_number"] = sequence.into();
    let name = event["type"].as_str().unwrap_or_default().to_owned();
    Bytes::from(format!("event: {name}\ndata: {event}\n\n"))
}

/// Seen before the fix: replayed deltas were appended again (`ABCABZ`), so a server replaying
/// its stream without end grew the message without end.
#[tokio::test]
async fn replayed_responses_events_are_dropped_by_their_sequence_number() {
    let _alone = crate::memory_support::measured().await;
    const REPLAYS: usize = 100_000;
    let server = serve(|| {
        let delta = |sequence: u64, text: &str| {
            numbered(
                sequence,
                serde_json::json!({"type": "response.output_text.delta", "output_index": 0,
                                   "content_index": 0, "delta": text}),
            )
        };
        let long = |letter: &str| letter.repeat(100);
        let head = [
            numbered(
                0,
                serde_json::json!({"type": "response.created", "response": {"id": "r1"}}),
            ),
            numbered(
                1,
                serde_json::json!({"type": "response.output_item.added", "output_index": 0,
                                   "item": {"type": "message", "id": "m1", "content": []}}),
            ),
            delta(2, &long("A")),
            delta(3, &long("B")),
            delta(4, &long("C")),
        ];
        let (a, b) = (delta(2, &long("A")), delta(3, &long("B")));
        let replays = futures::stream::iter(0..REPLAYS)
            .flat_map(move |_| futures::stream::iter([a.clone(), b.clone()]));
        let tail = [
            delta(5, "Z"),
            numbered(
                6,
                serde_json::json!({"type": "response.completed",
                                   "response": {"id": "r1", "status": "completed"}}),
            ),
        ];
        let body = futures::stream::iter(head)
            .chain(replays)
            .chain(futures::stream::iter(tail))
            .map(Ok::<_, Infallible>);
        event_stream(Body::from_stream(body))
    })
    .await;
    let mut model = openai_at(&server.base_url, options()).model().clone();
    model.api = Api::OpenAiResponses;
    let model = HttpModel::new(model, options());
    let peak = crate::memory_support::peak_rss();
    let (events, elapsed) = run_within(&model, Duration::from_secs(60)).await;
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    assert_eq!(outcome(&events), (StopReason::Stop, None));
    let text = format!("{}{}{}Z", "A".repeat(100), "B".repeat(100), "C".repeat(100));
    assert_eq!(final_message(&events).content, [ContentBlock::text(text)]);
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    assert!(
        grown < 64 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
}

/// A Chat Completions stream of `Hel` deltas that never ends.
fn endless_text() -> Response {
    let piece = Bytes::from(TEXT_CHUNK.repeat(256));
    let body = futures::stream::repeat_with(move || Ok::<_, Infallible>(piece.clone()));
    event_stream(Body::from_stream(body))
}

/// Seen before the fix: a server streaming content forever reached 9.0 GB in 20 s, under a
/// 20 s response deadline.
#[tokio::test]
async fn an_endless_stream_ends_at_the_default_response_limit() {
    let _alone = crate::memory_support::measured().await;
    let server = serve(endless_text).await;
    let model = openai_at(
        &server.base_url,
        options().with_response_timeout(Duration::from_secs(120)),
    );
    let peak = crate::memory_support::peak_rss();
    let (events, elapsed) = run_within(&model, Duration::from_secs(100)).await;
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    assert_eq!(
        outcome(&events),
        (
            StopReason::Error,
            Some("The response exceeds the limit of 64 MiB (HttpOptions::max_response_bytes)")
        )
    );
    let [ContentBlock::Text(text)] = final_message(&events).content.as_slice() else {
        panic!("one text block");
    };
    let chunks = (64 << 20) / TEXT_CHUNK.len();
    assert_eq!(text.text, "Hel".repeat(chunks));
    // Measured here, unoptimized: 8.4 s and 164 MB.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    assert!(
        grown < 512 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
}

#[tokio::test]
async fn a_response_over_a_configured_limit_keeps_what_came_before() {
    let server = serve(endless_text).await;
    let limit = 10 * TEXT_CHUNK.len() as u64 + 5;
    let model = openai_at(&server.base_url, options().with_max_response_bytes(limit));
    let (events, elapsed) = run_within(&model, Duration::from_secs(10)).await;
    let expected = format!(
        "The response exceeds the limit of {limit} bytes (HttpOptions::max_response_bytes)"
    );
    assert_eq!(
        outcome(&events),
        (StopReason::Error, Some(expected.as_str()))
    );
    assert_eq!(
        final_message(&events).content,
        [ContentBlock::text("Hel".repeat(10))]
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}
