//! rmcp's streamable HTTP client trait implemented over the workspace's reqwest 0.12.
//!
//! rmcp ships an implementation for reqwest 0.13; using it would put a second reqwest (and a
//! second hyper-rustls stack) in every build with the `mcp` feature. This one is the same
//! contract over the client the providers already use: POST a JSON-RPC message and get back
//! `202 Accepted`, one JSON message, or an SSE stream; GET a stream; DELETE a session.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE,
};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::errors;
use crate::error_chain::chain;
use crate::excerpt::excerpt_within;
use crate::sse::{self, SseDecoder};

/// The streamable HTTP backend of [`McpClient`](super::McpClient): a reqwest 0.12 client.
#[derive(Debug, Clone)]
pub(crate) struct HttpBackend {
    client: reqwest::Client,
    failures: Arc<StreamFailures>,
    server_stream: Arc<ServerStream>,
}

impl HttpBackend {
    /// A backend that records in `failures` why a response stream broke, and in
    /// `server_stream` when the server's own stream is open.
    pub(crate) fn new(
        client: reqwest::Client,
        failures: Arc<StreamFailures>,
        server_stream: Arc<ServerStream>,
    ) -> Self {
        HttpBackend {
            client,
            failures,
            server_stream,
        }
    }
}

/// The stream a session's server sends its own messages on (the `GET` of streamable
/// HTTP), which rmcp opens in the background once the session starts. A server may send a
/// request there right after the first call (a question, while a tool runs); a message sent
/// before the stream is open has nowhere to go, so the connection waits for it first.
#[derive(Debug)]
pub(crate) struct ServerStream {
    /// The server gave the connection a session, so there is such a stream to wait for.
    session: std::sync::atomic::AtomicBool,
    /// The first `GET` was answered (opened, or refused): there is nothing more to wait for.
    settled: tokio::sync::watch::Sender<bool>,
}

impl Default for ServerStream {
    fn default() -> Self {
        ServerStream {
            session: std::sync::atomic::AtomicBool::new(false),
            settled: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl ServerStream {
    /// Wait, at most `limit`, until the server's stream is open or refused; at once when the
    /// server gave no session (nothing opens such a stream then).
    pub(crate) async fn ready(&self, limit: std::time::Duration) {
        if !self.session.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let mut settled = self.settled.subscribe();
        // Past the limit the connection goes on: the stream is a help, not a requirement.
        let _ = tokio::time::timeout(limit, settled.wait_for(|settled| *settled)).await;
    }
}

/// How many broken streams are remembered: a reason whose call has gone already is not
/// asked for, and must not be kept for ever.
const KEPT_FAILURES: usize = 16;

/// Why response streams broke, by the request each was to answer, until its call asks.
///
/// rmcp answers the request of a broken stream with "transport closed" and keeps the cause
/// to its log; the call reads the cause from here instead.
#[derive(Debug, Default)]
pub(crate) struct StreamFailures(Mutex<VecDeque<(RequestId, String)>>);

impl StreamFailures {
    fn record(&self, id: RequestId, reason: String) {
        let mut failures = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if failures.len() == KEPT_FAILURES {
            failures.pop_front();
        }
        failures.push_back((id, reason));
    }

    /// Why the stream answering `id` broke, if it did.
    pub(crate) fn take(&self, id: &RequestId) -> Option<String> {
        let mut failures = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let at = failures.iter().position(|(failed, _)| failed == id)?;
        failures.remove(at).map(|(_, reason)| reason)
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

fn client_error(error: reqwest::Error) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Client(error)
}

fn with_headers(
    mut request: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(session_id) = session_id {
        request = request.header(HEADER_SESSION_ID, session_id);
    }
    if let Some(token) = auth {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom {
        request = request.header(name, value);
    }
    request
}

fn is_media_type(value: Option<&HeaderValue>, expected: &str) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// 401 / 403 with a challenge, and 429 / 5xx, as rmcp's own client reports them.
fn status_error(response: &reqwest::Response) -> Option<StreamableHttpError<reqwest::Error>> {
    let status = response.status();
    let challenge = || {
        response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    if status == StatusCode::UNAUTHORIZED
        && let Some(header) = challenge()
    {
        return Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            header,
        )));
    }
    if status == StatusCode::FORBIDDEN
        && let Some(header) = challenge()
    {
        return Some(StreamableHttpError::InsufficientScope(
            InsufficientScopeError::new(header, None),
        ));
    }
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        return Some(StreamableHttpError::HttpStatus(HttpStatusError::new(
            status.as_u16(),
            retry_after,
        )));
    }
    None
}

/// Read a whole body, failing once it passes `max` bytes.
async fn read_body(response: reqwest::Response, max: usize) -> HttpResult<Vec<u8>> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(client_error)?;
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl StreamableHttpClient for HttpBackend {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let had_session = session_id.is_some();
        let request = self
            .client
            .post(uri.as_ref())
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .json(&message);
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await.map_err(client_error)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let is_json = is_media_type(content_type.as_ref(), JSON_MIME_TYPE);
        let is_sse = is_media_type(content_type.as_ref(), EVENT_STREAM_MIME_TYPE);
        let expects_reply = matches!(message, ClientJsonRpcMessage::Request(_));
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if session.is_some() {
            self.server_stream
                .session
                .store(true, std::sync::atomic::Ordering::Release);
        }
        if !status.is_success() {
            let error = status_error(&response);
            // A JSON-RPC error in the body says more than the status line.
            if is_json && (error.is_none() || status.is_server_error()) {
                let body = read_body(response, limits.max_json_response_size).await?;
                if let Ok(parsed @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(parsed, session));
                }
                return Err(error.unwrap_or_else(|| {
                    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                        "HTTP {status}: {}",
                        preview(&body, limits.max_error_response_size)
                    )))
                }));
            }
            if let Some(error) = error {
                return Err(error);
            }
            let body = read_body(response, limits.max_json_response_size)
                .await
                .unwrap_or_default();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "HTTP {status}: {}",
                    preview(&body, limits.max_error_response_size)
                ),
            )));
        }
        if is_sse {
            let answering = match &message {
                ClientJsonRpcMessage::Request(request) => {
                    Some((Arc::clone(&self.failures), request.id.clone()))
                }
                _ => None,
            };
            let stream = bounded_sse(
                response.bytes_stream(),
                limits.max_sse_event_size,
                answering,
            );
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        if is_json {
            let body = read_body(response, limits.max_json_response_size).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session)),
                Err(_) if !expects_reply => Ok(StreamableHttpPostResponse::Accepted),
                Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "could not parse the JSON response: {error}: {}",
                        preview(&body, 256)
                    ),
                ))),
            };
        }
        if !expects_reply {
            // Some servers answer a notification with an empty 200.
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let request = with_headers(
            self.client.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let response = request.send().await.map_err(client_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status().map_err(client_error)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut request = self.client.get(uri.as_ref()).header(
            ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await;
        // Answered, one way or the other: whoever waits for the stream may go on.
        self.server_stream.settled.send_replace(true);
        let response = response.map_err(client_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(error) = status_error(&response) {
            return Err(error);
        }
        let response = response.error_for_status().map_err(client_error)?;
        let content_type = response.headers().get(CONTENT_TYPE);
        if !is_media_type(content_type, EVENT_STREAM_MIME_TYPE)
            && !is_media_type(content_type, JSON_MIME_TYPE)
        {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        Ok(bounded_sse(
            response.bytes_stream(),
            max_sse_event_size,
            None,
        ))
    }
}

/// The start of a body, as an error message quotes it: at most `max` bytes of its text.
fn preview(body: &[u8], max: usize) -> String {
    excerpt_within(&String::from_utf8_lossy(body), max).to_string()
}

/// An SSE event over the size limit.
#[derive(Debug, thiserror::Error)]
#[error("{}", errors::event_too_large(*.0))]
struct EventTooLarge(usize);

/// The events of a body, for rmcp, decoded by the crate's one SSE decoder with at most `max`
/// bytes per event. A failure (the body's, an event too large, a byte that is not UTF-8) is
/// the stream's last item, and is recorded for the request the stream answers, if any.
fn bounded_sse<S>(
    bytes: S,
    max: usize,
    answering: Option<(Arc<StreamFailures>, RequestId)>,
) -> BoxStream<'static, Result<Sse, SseError>>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + Unpin + 'static,
{
    let state = Some((bytes, SseDecoder::new(max), answering));
    futures::stream::unfold(state, |state| async move {
        let (mut bytes, mut decoder, answering) = state?;
        let failure = loop {
            match decoder.next_event() {
                Ok(Some(event)) => {
                    let sse = Sse {
                        event: (event.name != "message").then(|| event.name.to_owned()),
                        data: event.data.map(str::to_owned),
                        id: event.id.map(str::to_owned),
                        retry: event.retry,
                    };
                    return Some((Ok(sse), Some((bytes, decoder, answering))));
                }
                Ok(None) => {}
                Err(error) => break body_error(error),
            }
            match bytes.next().await {
                Some(Ok(piece)) => decoder.push_bytes(&piece),
                Some(Err(error)) => break SseError::Body(Box::new(error)),
                None => match decoder.finish() {
                    Ok(()) => return None,
                    Err(error) => break body_error(error),
                },
            }
        };
        let reason = match &failure {
            SseError::Body(cause) => chain(cause.as_ref()),
            other => chain(other),
        };
        match answering {
            Some((failures, id)) => failures.record(id, reason),
            None => tracing::debug!("an MCP server's event stream broke: {reason}"),
        }
        Some((Err(failure), None))
    })
    .boxed()
}

/// A decoding failure as rmcp's SSE errors carry it.
fn body_error(error: sse::SseError) -> SseError {
    match error {
        sse::SseError::TooLarge(max) => SseError::Body(Box::new(EventTooLarge(max))),
        other => SseError::Body(Box::new(other)),
    }
}
