//! One POST until an event stream answers it: the attempt loop with backoff and
//! `retry-after`, the time limits of each wait, and the checks that what came back is an
//! event stream (not a JSON error sent with status 200, not a body encoded in a way nobody
//! asked for).

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use super::pool::Connections;
use super::{HttpOptions, RetryPolicy};
use crate::error_chain::chain;
use crate::excerpt::excerpt;
use crate::provider::Model;
use crate::provider::wire::{ErrorBody, WireApi};

/// The most of an error body (or of a JSON body sent instead of a stream) that is read.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// One POST of a JSON body that answers with server-sent events.
pub(super) struct HttpRequest {
    pub(super) url: String,
    pub(super) headers: Vec<(String, String)>,
    /// The serialized JSON, sent again as it is by every attempt.
    pub(super) body: Vec<u8>,
    /// How an error status is reported.
    pub(super) wording: Wording,
}

/// How one model's wire API words a response with an error status
/// ([`WireApi::status_error`]).
pub(super) struct Wording {
    wire: &'static dyn WireApi,
    model: Model,
}

impl Wording {
    pub(super) fn new(wire: &'static dyn WireApi, model: Model) -> Self {
        Wording { wire, model }
    }

    fn status_error(&self, status: StatusCode, body: &ErrorBody) -> String {
        self.wire.status_error(&self.model, status, body)
    }
}

/// The time limits of one response: the longest silence, and the deadline of the whole.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    read_timeout: Duration,
    response_timeout: Duration,
    /// `None`: too far away to matter.
    deadline: Option<Instant>,
}

/// Which limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expired {
    Silence,
    Deadline,
}

impl Clock {
    /// The limits of a response that starts now.
    pub(super) fn start(options: &HttpOptions) -> Self {
        Clock {
            read_timeout: options.read_timeout,
            response_timeout: options.response_timeout,
            deadline: Instant::now().checked_add(options.response_timeout),
        }
    }

    /// The same limits for a response that starts now.
    pub(super) fn restart(&mut self) {
        self.deadline = Instant::now().checked_add(self.response_timeout);
    }

    /// `future`, unless the read timeout or the deadline passes first. Nothing the server
    /// sends moves the deadline.
    pub(super) async fn limit<F: Future>(&self, future: F) -> Result<F::Output, Expired> {
        let silence = Instant::now().checked_add(self.read_timeout);
        let (at, expired) = match (silence, self.deadline) {
            (Some(silence), Some(deadline)) if silence < deadline => (silence, Expired::Silence),
            (_, Some(deadline)) => (deadline, Expired::Deadline),
            (Some(silence), None) => (silence, Expired::Silence),
            (None, None) => return Ok(future.await),
        };
        tokio::time::timeout_at(at, future)
            .await
            .map_err(|_| expired)
    }

    /// Whether a wait of `delay` still ends before the deadline.
    fn leaves(&self, delay: Duration) -> bool {
        self.deadline
            .is_none_or(|deadline| Instant::now() + delay < deadline)
    }

    pub(super) fn read_timeout(&self) -> Duration {
        self.read_timeout
    }

    pub(super) fn deadline_message(&self) -> String {
        format!(
            "No complete response within {} (HttpOptions::response_timeout)",
            seconds(self.response_timeout)
        )
    }
}

/// The connections of one model, and its retry policy.
#[derive(Debug, Clone)]
pub(super) struct Transport {
    connections: Connections,
    retry: RetryPolicy,
}

impl Transport {
    pub(super) fn new(connections: Connections, options: &HttpOptions) -> Self {
        Transport {
            connections,
            retry: options.retry.clone(),
        }
    }

    /// POST `request`, retrying per the policy, until a response whose body is an event
    /// stream. The error says how many attempts were made when there was more than one.
    pub(super) async fn open(
        &self,
        request: &HttpRequest,
        clock: &Clock,
    ) -> Result<reqwest::Response, String> {
        let headers = header_map(&request.headers)?;
        let mut attempts = 1;
        loop {
            let failure = match self.attempt(request, headers.clone(), clock).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if !failure.retryable || attempts > self.retry.max_retries {
                return Err(with_attempts(failure.message, attempts));
            }
            let delay = match failure.server_delay {
                Some(delay) if delay > self.retry.max_delay => {
                    let message = format!(
                        "{} (the server asked to retry after {}, more than the allowed {})",
                        failure.message,
                        seconds(delay),
                        seconds(self.retry.max_delay)
                    );
                    return Err(with_attempts(message, attempts));
                }
                Some(delay) => delay,
                None => self.retry.backoff(attempts - 1),
            };
            if !clock.leaves(delay) {
                return Err(with_attempts(failure.message, attempts));
            }
            tokio::time::sleep(delay).await;
            attempts += 1;
        }
    }

    async fn attempt(
        &self,
        request: &HttpRequest,
        headers: HeaderMap,
        clock: &Clock,
    ) -> Result<reqwest::Response, Failure> {
        let mut sent = self
            .send(self.connections.pooled(), request, headers.clone(), clock)
            .await?;
        if let Err(error) = &sent
            && self.connections.is_stale(error)
        {
            // The server had closed this pooled connection before the request came: it
            // never saw it. Send it again now, on a connection of its own (pool.rs).
            let fresh = self.connections.fresh().map_err(Failure::fatal)?;
            sent = self.send(fresh, request, headers, clock).await?;
        }
        let response = match sent {
            // A request reqwest cannot even build (a bad URL) fails the same way again.
            Err(error) if error.is_builder() => {
                return Err(Failure::fatal(format!(
                    "Invalid request to {}: {}",
                    request.url,
                    chain(&error)
                )));
            }
            Err(error) => {
                return Err(Failure::retryable(format!(
                    "Could not reach {}: {}",
                    request.url,
                    chain(&error)
                )));
            }
            Ok(response) => response,
        };
        self.connections.answered(&response);
        answered(response, clock, &request.wording).await
    }

    /// One send of `request` on `client`, until the response head, within the clock's
    /// limits (a limit that passes is the attempt's failure).
    async fn send(
        &self,
        client: &reqwest::Client,
        request: &HttpRequest,
        headers: HeaderMap,
        clock: &Clock,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, Failure> {
        let send = client
            .post(&request.url)
            .headers(headers)
            .body(request.body.clone())
            .send();
        match clock.limit(send).await {
            Err(Expired::Deadline) => Err(Failure::fatal(clock.deadline_message())),
            Err(Expired::Silence) => Err(Failure::retryable(format!(
                "No response from {} within {}",
                request.url,
                seconds(clock.read_timeout())
            ))),
            Ok(sent) => Ok(sent),
        }
    }
}

/// What a response says once it has come: an error status becomes the wire API's error
/// message, and a success must carry an event stream. Shared by real responses and
/// recorded ones ([`HttpModel::replay_response`](super::HttpModel::replay_response)).
pub(super) async fn answered(
    response: reqwest::Response,
    clock: &Clock,
    wording: &Wording,
) -> Result<reqwest::Response, Failure> {
    if !response.status().is_success() {
        return Err(status_failure(response, clock, wording).await);
    }
    event_stream(response, clock).await
}

/// Why an attempt failed, and whether another may succeed.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) message: String,
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

    fn fatal(message: String) -> Self {
        Failure {
            message,
            retryable: false,
            server_delay: None,
        }
    }
}

/// `message (3 attempts)`, or `message (...; 3 attempts)` when it ends with a remark.
fn with_attempts(message: String, attempts: u32) -> String {
    if attempts < 2 {
        return message;
    }
    match message.strip_suffix(')') {
        Some(open) => format!("{open}; {attempts} attempts)"),
        None => format!("{message} ({attempts} attempts)"),
    }
}

impl RetryPolicy {
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

/// An error status: the wire API's text for it and (the start of) the body, and whether to
/// retry.
async fn status_failure(response: reqwest::Response, clock: &Clock, wording: &Wording) -> Failure {
    let status = response.status();
    let headers = response.headers().clone();
    let body = match content_encoding(&headers) {
        Some(encoding) => ErrorBody::Encoded(encoding.to_owned()),
        None => match read_prefix(response, clock).await {
            Ok(body) => ErrorBody::from(body),
            Err(Expired::Silence | Expired::Deadline) => ErrorBody::Missing,
        },
    };
    let retryable = match header(&headers, "x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => is_retryable(status),
    };
    Failure {
        message: wording.status_error(status, &body),
        retryable,
        server_delay: retry_after(&headers),
    }
}

/// A successful status whose body can be read as an event stream, or why not.
async fn event_stream(
    response: reqwest::Response,
    clock: &Clock,
) -> Result<reqwest::Response, Failure> {
    let status = response.status();
    if let Some(encoding) = content_encoding(response.headers()) {
        return Err(Failure::fatal(format!(
            "The response body is {encoding}-encoded, which was not asked for \
             (the request sent accept-encoding: identity), so it cannot be read"
        )));
    }
    let media_type = header(response.headers(), "content-type")
        .and_then(|value| value.split(';').next())
        .map(|essence| essence.trim().to_ascii_lowercase())
        .unwrap_or_default();
    // Anything else is read as events: some compatible servers label their stream
    // loosely (`text/plain`, or nothing), and only these two are surely not one.
    let is_json = media_type == "application/json" || media_type.ends_with("+json");
    if !is_json && media_type != "text/html" {
        return Ok(response);
    }
    let message = match read_prefix(response, clock).await {
        Err(_) => format!(
            "The server answered HTTP {status} with {media_type} instead of an event stream"
        ),
        Ok(body) if is_json => match server_error(&body.text) {
            Some(error) => format!(
                "The server answered HTTP {status} with an error instead of an event stream: {error}"
            ),
            None => format!(
                "The server answered HTTP {status} with JSON instead of an event stream: {}",
                body.quoted()
            ),
        },
        Ok(body) => format!(
            "The server answered HTTP {status} with {media_type} instead of an event stream: {}",
            body.quoted()
        ),
    };
    Err(Failure::fatal(message))
}

/// The message of a JSON error body: `{"error": {"message": ...}}` (also inside an array,
/// as Gemini sends it, or as a bare string).
fn server_error(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value
        .get("error")
        .or_else(|| value.get(0).and_then(|first| first.get("error")))?;
    Some(match error.get("message").and_then(Value::as_str) {
        Some(message) => excerpt(message).to_string(),
        None => match error.as_str() {
            Some(text) => excerpt(text).to_string(),
            None => excerpt(&error.to_string()).to_string(),
        },
    })
}

/// The start of a body that is not a stream.
#[derive(Debug)]
struct Prefix {
    text: String,
    /// The body went on past [`ERROR_BODY_BYTES`].
    cut: bool,
}

impl Prefix {
    /// The body as an error message quotes it, trimmed and bounded.
    fn quoted(self) -> String {
        ErrorBody::from(self).quoted()
    }
}

impl From<Prefix> for ErrorBody {
    fn from(Prefix { text, cut }: Prefix) -> Self {
        ErrorBody::Text { text, cut }
    }
}

/// Up to [`ERROR_BODY_BYTES`] of a body, within the clock's limits. A body that breaks
/// off is quoted as far as it came.
async fn read_prefix(mut response: reqwest::Response, clock: &Clock) -> Result<Prefix, Expired> {
    let mut bytes = Vec::new();
    let cut = loop {
        match clock.limit(response.chunk()).await? {
            Ok(Some(piece)) => {
                bytes.extend_from_slice(&piece);
                if bytes.len() > ERROR_BODY_BYTES {
                    bytes.truncate(ERROR_BODY_BYTES);
                    break true;
                }
            }
            Ok(None) | Err(_) => break false,
        }
    };
    Ok(Prefix {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        cut,
    })
}

/// A `content-encoding` other than `identity`: this client sends `accept-encoding:
/// identity` and decodes nothing.
fn content_encoding(headers: &HeaderMap) -> Option<&str> {
    header(headers, "content-encoding")
        .map(str::trim)
        .filter(|encoding| !encoding.is_empty() && !encoding.eq_ignore_ascii_case("identity"))
}

fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// `retry-after-ms`, then `retry-after` in seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header(headers, "retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
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

pub(super) fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_join_the_last_remark() {
        assert_eq!(with_attempts("HTTP 503".into(), 1), "HTTP 503");
        assert_eq!(with_attempts("HTTP 503".into(), 3), "HTTP 503 (3 attempts)");
        assert_eq!(
            with_attempts("late (HttpOptions::response_timeout)".into(), 2),
            "late (HttpOptions::response_timeout; 2 attempts)"
        );
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_or_a_date() {
        let headers = |pairs: &[(&'static str, String)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        let ms = headers(&[
            ("retry-after-ms", "250".into()),
            ("retry-after", "9".into()),
        ]);
        assert_eq!(retry_after(&ms), Some(Duration::from_millis(250)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5".into())])),
            Some(Duration::from_millis(1500))
        );
        let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let wait = retry_after(&headers(&[("retry-after", soon)])).expect("a date");
        assert!(
            wait > Duration::from_secs(28) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        let past = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH);
        assert_eq!(
            retry_after(&headers(&[("retry-after", past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "soon".into())])),
            None
        );
    }

    #[test]
    fn json_error_bodies_give_their_message() {
        let openai = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        assert_eq!(
            server_error(openai).as_deref(),
            Some("You exceeded your current quota")
        );
        let gemini = r#"[{"error":{"code":429,"message":"Resource exhausted"}}]"#;
        assert_eq!(server_error(gemini).as_deref(), Some("Resource exhausted"));
        assert_eq!(
            server_error(r#"{"error":"quota"}"#).as_deref(),
            Some("quota")
        );
        assert_eq!(server_error(r#"{"choices":[]}"#), None);
    }
}
