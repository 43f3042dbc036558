//! HTTP transport: reqwest, SSE, retry with backoff, timeouts, failures as messages.
//!
//! A request becomes a stream of events (SPEC §2.4) that always ends with `done` or `error`:
//! an HTTP error status, a dropped connection, a read timeout, a malformed event or a
//! cancelled run is an `error` event whose message says what happened, never a panic or a
//! hang.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::StopReason;
use crate::provider::Model;
use crate::provider::output::{Output, StreamParser, output_for};
use crate::stream::AssistantEventStream;

/// The longest error body quoted in an error message.
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// When and how often a request is sent again after a retryable failure (HTTP 408, 409, 429,
/// 5xx, or no connection). Retries happen only before the first byte of a response body:
/// a stream that already started is never replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub max_retries: u32,
    /// The first backoff; each later one doubles, up to `max_delay`.
    pub initial_delay: Duration,
    /// The longest wait. A server asking (`retry-after`) for more fails at once instead.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The backoff before retry number `retry` (0-based): exponential with up to 25% jitter,
    /// so clients that failed together do not come back together.
    fn backoff(&self, retry: u32) -> Duration {
        let exponential = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        let jitter = (RandomState::new().hash_one(retry) % 1000) as f64 / 4000.0;
        exponential.mul_f64(1.0 - jitter)
    }
}

impl Default for RetryPolicy {
    /// Two retries, 0.5 s then 1 s, at most 8 s per wait (the OpenAI and Anthropic SDKs'
    /// policy).
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
        }
    }
}

/// How a client talks to its server.
#[derive(Clone, PartialEq)]
pub struct HttpOptions {
    /// The API key (`None`: send no credentials, e.g. for a local server).
    pub api_key: Option<String>,
    /// The environment variable the key should have come from. When it is set and
    /// `api_key` is `None`, requests fail at once with a message naming it, instead of
    /// reaching the server unauthenticated.
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Retries before the first byte.
    pub retry: RetryPolicy,
    /// The longest wait for a TCP/TLS connection.
    pub connect_timeout: Duration,
    /// The longest silence: waiting for the response head, or between two pieces of the
    /// body. Reasoning models can think for a while before their first token.
    pub read_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            api_key: None,
            api_key_env: None,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
        }
    }
}

impl fmt::Debug for HttpOptions {
    // The key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &self.headers)
            .field("retry", &self.retry)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

/// What every client holds: the model, how to reach its server, and the client built from
/// that.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) model: Model,
    pub(crate) options: HttpOptions,
    transport: Transport,
}

impl Endpoint {
    pub(crate) fn new(model: Model, options: HttpOptions) -> Self {
        let transport = Transport::new(&options);
        Endpoint {
            model,
            options,
            transport,
        }
    }

    /// The key, or why a request cannot be sent without one.
    pub(crate) fn api_key(&self) -> Result<Option<&str>, String> {
        match (&self.options.api_key, &self.options.api_key_env) {
            (Some(key), _) => Ok(Some(key)),
            (None, Some(var)) => Err(format!(
                "No API key for provider {}: set {var} or pass the key explicitly",
                self.model.provider
            )),
            (None, None) => Ok(None),
        }
    }

    /// `base_url` joined with `path`, whether or not the base ends with `/`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.model.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// The API's headers followed by the user's own (which win).
    pub(crate) fn headers(&self, api: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut headers = api;
        headers.push(("accept".to_owned(), "text/event-stream".to_owned()));
        headers.extend(self.options.headers.iter().cloned());
        headers
    }

    /// Send the request built for this call and parse the answer.
    pub(crate) fn stream<P: StreamParser>(
        &self,
        request: Result<HttpRequest, String>,
        parser: P,
        signal: CancellationToken,
    ) -> AssistantEventStream {
        stream_request(
            self.transport.clone(),
            request,
            parser,
            output_for(&self.model),
            signal,
        )
    }

    /// Parse a recorded body as if the server had just sent it.
    pub(crate) fn replay<P: StreamParser>(&self, body: String, parser: P) -> AssistantEventStream {
        replay_body(body, parser, output_for(&self.model))
    }
}

/// One POST of a JSON body that answers with server-sent events.
#[derive(Debug)]
pub(crate) struct HttpRequest {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

/// A reqwest client configured from [`HttpOptions`]. Building it can fail (TLS setup); the
/// failure is reported by the first request, as a message.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: Result<reqwest::Client, String>,
    retry: RetryPolicy,
    read_timeout: Duration,
}

impl Transport {
    pub(crate) fn new(options: &HttpOptions) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|error| format!("Could not build the HTTP client: {}", chain(&error)));
        Transport {
            client,
            retry: options.retry.clone(),
            read_timeout: options.read_timeout,
        }
    }

    /// POST the request, retrying per the policy, and return the body's SSE events.
    async fn open(&self, request: &HttpRequest) -> Result<SseStream, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let headers = header_map(&request.headers)?;
        let mut retry = 0;
        loop {
            let send = client
                .post(&request.url)
                .headers(headers.clone())
                .json(&request.body)
                .send();
            let failure = match tokio::time::timeout(self.read_timeout, send).await {
                Err(_) => Failure::retryable(format!(
                    "No response from {} within {}",
                    request.url,
                    seconds(self.read_timeout)
                )),
                // A request reqwest cannot even build (a bad URL) fails the same way again.
                Ok(Err(error)) if error.is_builder() => {
                    return Err(format!(
                        "Invalid request to {}: {}",
                        request.url,
                        chain(&error)
                    ));
                }
                Ok(Err(error)) => Failure::retryable(format!(
                    "Could not reach {}: {}",
                    request.url,
                    chain(&error)
                )),
                Ok(Ok(response)) if response.status().is_success() => {
                    return Ok(sse_events(response.bytes_stream(), Some(self.read_timeout)));
                }
                Ok(Ok(response)) => self.status_failure(response).await,
            };
            if !failure.retryable || retry >= self.retry.max_retries {
                return Err(failure.message);
            }
            let delay = match failure.server_delay {
                Some(delay) if delay > self.retry.max_delay => {
                    return Err(format!(
                        "{} (the server asked to retry after {}, more than the allowed {})",
                        failure.message,
                        seconds(delay),
                        seconds(self.retry.max_delay)
                    ));
                }
                Some(delay) => delay,
                None => self.retry.backoff(retry),
            };
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// An error status: its text with the body, and whether to retry.
    async fn status_failure(&self, response: reqwest::Response) -> Failure {
        let status = response.status();
        let headers = response.headers().clone();
        let body = match tokio::time::timeout(self.read_timeout, response.text()).await {
            Ok(Ok(body)) => body,
            Ok(Err(error)) => format!("(the error body could not be read: {})", chain(&error)),
            Err(_) => "(the error body did not arrive)".to_owned(),
        };
        let retryable = match header(&headers, "x-should-retry") {
            Some("true") => true,
            Some("false") => false,
            _ => is_retryable(status),
        };
        Failure {
            message: status_message(status, &body),
            retryable,
            server_delay: retry_after(&headers),
        }
    }
}

struct Failure {
    message: String,
    retryable: bool,
    server_delay: Option<Duration>,
}

impl Failure {
    fn retryable(message: String) -> Self {
        Failure {
            message,
            retryable: true,
            server_delay: None,
        }
    }
}

fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// `HTTP 429 Too Many Requests: <body>`, the body trimmed and capped.
fn status_message(status: StatusCode, body: &str) -> String {
    let body = body.trim();
    let mut message = format!("HTTP {status}");
    if !body.is_empty() {
        message.push_str(": ");
        match body.char_indices().nth(MAX_ERROR_BODY_CHARS) {
            Some((cut, _)) => {
                message.push_str(&body[..cut]);
                message.push_str("... (truncated)");
            }
            None => message.push_str(body),
        }
    }
    message
}

/// `retry-after-ms`, then `retry-after` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    header(headers, "retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("Invalid HTTP header name {name:?}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("Invalid value for HTTP header {name}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// An error with its causes: reqwest's own text (`error sending request`) hides the reason.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

/// One SSE event: its name (`message` when the server gave none) and data.
pub(crate) struct Sse {
    name: String,
    data: String,
}

type SseStream = BoxStream<'static, Result<Sse, String>>;

/// Decode a body into SSE events; `idle` bounds the silence between two pieces.
fn sse_events<S, B, E>(body: S, idle: Option<Duration>) -> SseStream
where
    S: futures::Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let pieces = stream::unfold(Some(Box::pin(body)), move |body| async move {
        let mut body = body?;
        let next = match idle {
            Some(idle) => match tokio::time::timeout(idle, body.next()).await {
                Ok(next) => next,
                Err(_) => {
                    let message = format!(
                        "Read timed out: no data from the server for {}",
                        seconds(idle)
                    );
                    return Some((Err(message), None));
                }
            },
            None => body.next().await,
        };
        match next? {
            Ok(bytes) => Some((Ok(bytes), Some(body))),
            Err(error) => {
                let message = format!("Connection dropped mid-stream: {}", chain(&error));
                Some((Err(message), None))
            }
        }
    });
    pieces
        .eventsource()
        .map(|event| match event {
            Ok(event) => Ok(Sse {
                name: event.event,
                data: event.data,
            }),
            Err(EventStreamError::Transport(message)) => Err(message),
            Err(EventStreamError::Utf8(error)) => {
                Err(format!("The response stream is not valid UTF-8: {error}"))
            }
            Err(EventStreamError::Parser(error)) => Err(format!("Malformed SSE line: {error}")),
        })
        .boxed()
}

/// Send `request` and parse its answer into events.
fn stream_request<P: StreamParser>(
    transport: Transport,
    request: Result<HttpRequest, String>,
    parser: P,
    output: Output,
    signal: CancellationToken,
) -> AssistantEventStream {
    let phase = match request {
        Ok(request) => Phase::Send(Box::new((transport, request))),
        Err(message) => Phase::Invalid(message),
    };
    drive(Run {
        output,
        parser,
        phase,
        signal,
    })
}

/// Parse a recorded body as if a server had just sent it (no timeouts, no cancellation).
fn replay_body<P: StreamParser>(body: String, parser: P, output: Output) -> AssistantEventStream {
    // Line by line: the SSE decoder copies its unread buffer after every line, so one big
    // piece would make the replay quadratic in the body's size.
    let lines: Vec<Result<String, std::io::Error>> = body
        .split_inclusive('\n')
        .map(|line| Ok(line.to_owned()))
        .collect();
    let body = stream::iter(lines);
    let mut output = output;
    output.start();
    drive(Run {
        output,
        parser,
        phase: Phase::Read(sse_events(body, None)),
        signal: CancellationToken::new(),
    })
}

enum Phase {
    Invalid(String),
    Send(Box<(Transport, HttpRequest)>),
    Read(SseStream),
    Over,
}

struct Run<P> {
    output: Output,
    parser: P,
    phase: Phase,
    signal: CancellationToken,
}

const ABORTED: &str = "Request was aborted";

impl<P: StreamParser> Run<P> {
    /// Advance until at least one event is queued or the response settled.
    async fn step(&mut self) {
        if self.signal.is_cancelled() {
            self.output.fail(StopReason::Aborted, ABORTED);
            return;
        }
        match std::mem::replace(&mut self.phase, Phase::Over) {
            Phase::Invalid(message) => self.output.fail(StopReason::Error, message),
            Phase::Send(send) => {
                let (transport, request) = *send;
                let opened = tokio::select! {
                    biased;
                    () = self.signal.cancelled() => Err(None),
                    opened = transport.open(&request) => opened.map_err(Some),
                };
                match opened {
                    Ok(events) => {
                        self.output.start();
                        self.phase = Phase::Read(events);
                    }
                    Err(Some(message)) => self.output.fail(StopReason::Error, message),
                    Err(None) => self.output.fail(StopReason::Aborted, ABORTED),
                }
            }
            Phase::Read(mut events) => {
                let next = tokio::select! {
                    biased;
                    () = self.signal.cancelled() => None,
                    next = events.next() => Some(next),
                };
                match next {
                    None => self.output.fail(StopReason::Aborted, ABORTED),
                    Some(Some(Ok(event))) => {
                        match self
                            .parser
                            .event(&mut self.output, &event.name, &event.data)
                        {
                            Ok(()) => self.phase = Phase::Read(events),
                            Err(message) => self.output.fail(StopReason::Error, message),
                        }
                    }
                    Some(Some(Err(message))) => self.output.fail(StopReason::Error, message),
                    Some(None) => match self.parser.end(&mut self.output) {
                        Ok(reason) => self.output.done(reason),
                        Err(message) => self.output.fail(StopReason::Error, message),
                    },
                }
            }
            Phase::Over => {}
        }
    }
}

fn drive<P: StreamParser>(run: Run<P>) -> AssistantEventStream {
    // Boxed, so each event moves a pointer rather than the whole parser state.
    stream::unfold(Box::new(run), |mut run| async move {
        loop {
            if let Some(event) = run.output.pop_event() {
                return Some((event, run));
            }
            if run.output.is_settled() {
                return None;
            }
            run.step().await;
        }
    })
    .boxed()
}
