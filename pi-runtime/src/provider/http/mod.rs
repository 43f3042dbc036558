//! The HTTP model: one [`HttpModel`] for every wire API, over reqwest and server-sent events,
//! with retries, time limits and failures as messages.
//!
//! A request becomes a stream of [`AssistantMessageEvent`](crate::AssistantMessageEvent)s
//! that always ends with `done` or `error`: an HTTP error status, a dropped connection, a
//! timeout, a malformed event or a cancelled run is an `error` event whose message says what
//! happened, never a panic or a hang.
//!
//! What differs between APIs is small and lives in each API's folder, behind one
//! crate-private trait (`WireApi`): the URL path, the credential header, the API's own
//! headers, the JSON body, the parser of its events, and the words of an error status
//! (`HTTP 400 Bad Request: <body>`, or pi's own wording where it has one: `openai-responses`
//! says `OpenAI API error (400): ...`). Everything else (sending,
//! retrying, the limits below, SSE decoding, ending the message with its stop reason) is
//! here, once.
//!
//! # Limits
//!
//! The defaults of [`HttpOptions`], and what they bound:
//!
//! | option | default | bounds |
//! |---|---|---|
//! | `connect_timeout` | 10 s | one TCP/TLS connection |
//! | `pool_idle_timeout` | 4 s | how long an idle connection is kept for the next request |
//! | `read_timeout` | 60 s | one silence: waiting for the response head, or between two pieces of the body |
//! | `retry` | 2 retries (3 attempts), 0.5 s then 1 s apart | attempts before the first byte of the body |
//! | `response_timeout` | 10 min | the whole response, every attempt and backoff included; keep-alive comments do not extend it |
//! | `max_event_bytes` | 16 MiB | one server-sent event |
//! | `max_response_bytes` | 64 MiB | one response body; what came before the limit is kept |
//!
//! So a server that accepts the connection and never answers fails after about 3 × 60 s,
//! with `No response from <url> within 60s (3 attempts)`; a server that sends only
//! keep-alive comments fails at the response deadline.
//!
//! # Pooled connections
//!
//! Connections are kept open between the requests of a model and reused. A server may
//! close one while it is idle, at the moment a request is written on it: the request then
//! never reached the server, and it is sent again at once on a new connection. That resend
//! has no backoff and is not one of the `retry` attempts. To make it rare, a connection idle
//! for longer than `pool_idle_timeout` is not reused (4 s: less than the 5 s after which
//! llama.cpp, Node.js, uvicorn and Apache close an idle connection).

mod pool;
mod run;
mod transport;

use std::fmt;
use std::time::Duration;

use crate::provider::Model;
use crate::provider::request::wire_api;
use crate::provider::wire::{WireApi, output_for};
use crate::sse::{self, SseDecoder};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use pool::Connections;
use run::Run;
use transport::{Clock, HttpRequest, Transport, Wording};

/// The default of [`HttpOptions::max_response_bytes`]: a long answer with reasoning is a few
/// megabytes of events.
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// The default of [`HttpOptions::pool_idle_timeout`]: under the 5 s keep-alive of llama.cpp
/// (cpp-httplib), Node.js, uvicorn and Apache, as undici's own default is.
const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// When and how often a request is sent again after a retryable failure (HTTP 408, 409, 429,
/// 5xx, no connection, or no response head within the read timeout). Retries happen only
/// before the first byte of a response body: a stream that already started is never
/// replayed. No retry starts after the response deadline would pass.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub max_retries: u32,
    /// The first backoff; each later one doubles, up to `max_delay`.
    pub initial_delay: Duration,
    /// The longest wait. A server asking (`retry-after`) for more fails at once instead.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// Retry up to `max_retries` times, waiting `initial_delay` first and doubling each
    /// wait up to `max_delay`.
    pub fn new(max_retries: u32, initial_delay: Duration, max_delay: Duration) -> Self {
        RetryPolicy {
            max_retries,
            initial_delay,
            max_delay,
        }
    }

    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
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

/// How a model talks to its server. The defaults are in the [module docs](self#limits);
/// change them with the `with_*` methods:
///
/// ```
/// use std::time::Duration;
/// use pi_runtime::provider::http::{HttpOptions, RetryPolicy};
///
/// let options = HttpOptions::default()
///     .with_api_key("sk-test")
///     .with_retry(RetryPolicy::none())
///     .with_read_timeout(Duration::from_secs(120));
/// assert_eq!(options.api_key.as_deref(), Some("sk-test"));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The API key (`None`: send no credentials, e.g. for a local server).
    pub api_key: Option<String>,
    /// The environment variable the key should have come from. When it is set and
    /// `api_key` is `None`, requests fail at once with a message naming it, instead of
    /// reaching the server unauthenticated.
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request (they win over the API's own).
    pub headers: Vec<(String, String)>,
    /// Retries before the first byte.
    pub retry: RetryPolicy,
    /// The longest wait for a TCP/TLS connection (10 s).
    pub connect_timeout: Duration,
    /// How long an idle connection is kept for reuse (4 s). Shorter than the time after
    /// which the server closes idle connections, or a request may meet a closed one (it is
    /// then sent again at once on a new connection, see the [module docs](self#pooled-connections)).
    pub pool_idle_timeout: Duration,
    /// The longest silence (60 s): waiting for the response head, or between two pieces of
    /// the body. A model that thinks silently for longer before its first token needs more.
    pub read_timeout: Duration,
    /// The longest a whole response may take (10 min), from the first attempt to the end of
    /// the body: nothing the server sends extends it.
    pub response_timeout: Duration,
    /// The largest server-sent event accepted (16 MiB); a larger one ends the response with
    /// an error instead of filling memory.
    pub max_event_bytes: usize,
    /// The largest response body read (64 MiB): past it, the message keeps what the events
    /// before the limit brought and ends with an error, so an endless stream cannot fill
    /// memory before `response_timeout`.
    pub max_response_bytes: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            api_key: None,
            api_key_env: None,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
            read_timeout: Duration::from_secs(60),
            response_timeout: Duration::from_secs(600),
            max_event_bytes: sse::DEFAULT_MAX_EVENT_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl HttpOptions {
    /// Send this API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Name the environment variable the key comes from (see [`api_key_env`](Self::api_key_env)).
    #[must_use]
    pub fn with_api_key_env(mut self, variable: impl Into<String>) -> Self {
        self.api_key_env = Some(variable.into());
        self
    }

    /// Send this header with every request too.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Retry this way.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Wait this long for a connection.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Keep idle connections this long for reuse.
    #[must_use]
    pub fn with_pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// Accept this much silence from the server.
    #[must_use]
    pub fn with_read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Give a whole response at most this long.
    #[must_use]
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Accept server-sent events up to this size.
    #[must_use]
    pub fn with_max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Read response bodies up to this size.
    #[must_use]
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = bytes;
        self
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
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// A model behind an HTTP API: the OpenAI Responses API, OpenAI Chat Completions (and every
/// compatible server: DeepSeek, vLLM, llama.cpp, Ollama), Anthropic Messages or the Gemini
/// API, as `model.api` says, at `model.base_url`.
///
/// ```
/// use pi_runtime::LanguageModel;
/// use pi_runtime::provider::Model;
/// use pi_runtime::provider::http::{HttpModel, HttpOptions};
///
/// let model: Model = serde_json::from_value(serde_json::json!({
///     "id": "qwen3", "provider": "local", "api": "openai-completions",
///     "baseUrl": "http://127.0.0.1:8000/v1"
/// }))?;
/// let model = HttpModel::new(model, HttpOptions::default());
/// assert_eq!((model.api(), model.id()), ("openai-completions", "qwen3"));
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// [`presets`](crate::provider::presets) build one with the provider's server and key
/// filled in.
#[derive(Debug, Clone)]
pub struct HttpModel {
    model: Model,
    options: HttpOptions,
    /// Building them can fail (TLS setup); the failure is reported by each request.
    connections: Result<Connections, String>,
}

impl HttpModel {
    /// `model`, reached as `options` say.
    pub fn new(model: Model, options: HttpOptions) -> Self {
        let connections = Connections::new(&options);
        HttpModel {
            model,
            options,
            connections,
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The transport options.
    pub fn options(&self) -> &HttpOptions {
        &self.options
    }

    /// Parse a recorded response body (the SSE text the server sent) exactly as if it had
    /// just arrived over HTTP: the same decoder, parser and event limit, no network, no
    /// time limits. The body is read in place.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use pi_runtime::provider::Model;
    /// use pi_runtime::provider::http::{HttpModel, HttpOptions};
    /// use pi_runtime::{AssistantMessageEvent, StopReason};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model: Model = serde_json::from_value(serde_json::json!({
    ///     "id": "gpt-4o", "provider": "openai", "api": "openai-completions",
    ///     "baseUrl": "http://127.0.0.1:9"
    /// })).unwrap();
    /// let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n\
    ///             data: [DONE]\n\n";
    /// let events: Vec<_> = HttpModel::new(model, HttpOptions::default()).replay(body).collect().await;
    /// let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else { panic!() };
    /// assert_eq!((message.text(), message.stop_reason), ("Hi".to_owned(), StopReason::Stop));
    /// # });
    /// ```
    pub fn replay(&self, body: impl Into<String>) -> AssistantEventStream {
        let mut decoder = SseDecoder::new(self.options.max_event_bytes);
        decoder.push_text(body.into());
        let parser = match wire_api(self.model.api) {
            Ok(wire) => wire.parser(&self.model),
            Err(error) => return self.failed(error.to_string()),
        };
        Run::replay(
            output_for(&self.model),
            parser,
            decoder,
            Clock::start(&self.options),
        )
        .events()
    }

    /// Parse a recorded HTTP response (its status, its `content-type` and its body) exactly
    /// as if it had just arrived over HTTP, no network: the same checks as a live response,
    /// so an error status ends with the API's error message (and no `start`), a success
    /// that carries JSON or HTML instead of an event stream is reported, and any other body
    /// goes through the same decoder, parser and limits as [`replay`](Self::replay).
    ///
    /// ```
    /// use futures::StreamExt;
    /// use pi_runtime::provider::Model;
    /// use pi_runtime::provider::http::{HttpModel, HttpOptions};
    /// use pi_runtime::{AssistantMessageEvent, StopReason};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model: Model = serde_json::from_value(serde_json::json!({
    ///     "id": "gpt-5", "provider": "openai", "api": "openai-responses",
    ///     "baseUrl": "http://127.0.0.1:9"
    /// })).unwrap();
    /// let body = r#"{"error":{"message":"Invalid model","code":"model_not_found"}}"#;
    /// let events: Vec<_> = HttpModel::new(model, HttpOptions::default())
    ///     .replay_response(404, "application/json", body)
    ///     .collect()
    ///     .await;
    /// let Some(AssistantMessageEvent::Error { error, .. }) = events.last() else { panic!() };
    /// assert_eq!(error.stop_reason, StopReason::Error);
    /// assert_eq!(
    ///     error.error_message.as_deref(),
    ///     Some(r#"OpenAI API error (404): {"message":"Invalid model","code":"model_not_found"}"#)
    /// );
    /// # });
    /// ```
    pub fn replay_response(
        &self,
        status: u16,
        content_type: &str,
        body: impl Into<String>,
    ) -> AssistantEventStream {
        let wire = match wire_api(self.model.api) {
            Ok(wire) => wire,
            Err(error) => return self.failed(error.to_string()),
        };
        let response = ::http::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(body.into());
        let response = match response {
            Ok(response) => reqwest::Response::from(response),
            Err(error) => return self.failed(format!("Invalid recorded response: {error}")),
        };
        Run::answered(
            output_for(&self.model),
            wire.parser(&self.model),
            SseDecoder::new(self.options.max_event_bytes),
            self.options.max_response_bytes,
            Clock::start(&self.options),
            response,
            Wording::new(wire, self.model.clone()),
        )
        .events()
    }

    /// A response that fails before anything is sent (a wire API this build leaves out):
    /// an `error` at once.
    fn failed(&self, message: String) -> AssistantEventStream {
        let mut out = output_for(&self.model);
        out.fail(crate::message::StopReason::Error, message);
        let events: Vec<_> = std::iter::from_fn(|| out.pop_event()).collect();
        futures::StreamExt::boxed(futures::stream::iter(events))
    }

    /// The request of one call: everything but the network.
    fn request(
        &self,
        wire: &'static dyn WireApi,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<(Transport, HttpRequest), String> {
        let connections = self.connections.clone()?;
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
            // Nothing here decodes gzip or brotli: a body so encoded is reported, not read.
            ("accept-encoding".to_owned(), "identity".to_owned()),
        ];
        headers.extend(wire.headers(&self.model, context, options));
        if let Some(key) = self.api_key()? {
            let (name, value) = wire.auth(key);
            headers.push((name.to_owned(), value));
        }
        headers.extend(self.options.headers.iter().cloned());
        let body = wire.body(&self.model, context, options)?;
        let body = serde_json::to_vec(&body)
            .map_err(|error| format!("Could not serialize the request: {error}"))?;
        let request = HttpRequest {
            url: self.url(&wire.path(&self.model)),
            headers,
            body,
            wording: Wording::new(wire, self.model.clone()),
        };
        Ok((Transport::new(connections, &self.options), request))
    }

    /// The key, or why a request cannot be sent without one.
    fn api_key(&self) -> Result<Option<&str>, String> {
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
    fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.model.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }
}

impl LanguageModel for HttpModel {
    fn api(&self) -> &str {
        self.model.api.as_str()
    }

    fn provider(&self) -> &str {
        &self.model.provider
    }

    fn id(&self) -> &str {
        &self.model.id
    }

    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream {
        let wire = match wire_api(self.model.api) {
            Ok(wire) => wire,
            Err(error) => return self.failed(error.to_string()),
        };
        let request = self.request(wire, &context, &options);
        Run::send(
            output_for(&self.model),
            wire.parser(&self.model),
            SseDecoder::new(self.options.max_event_bytes),
            self.options.max_response_bytes,
            Clock::start(&self.options),
            request,
            options.signal,
        )
        .events()
    }
}
