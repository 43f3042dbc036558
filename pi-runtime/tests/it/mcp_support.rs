//! Raw streamable HTTP for the tests of our MCP server: JSON-RPC messages POSTed as a client
//! of the 2025-06-18 revision sends them (with a bearer token or without), sessions opened
//! and closed by hand, and answers read whether they come as JSON or as server-sent events.
//! The tests that need a full client use `McpClient` instead.

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

/// The revision every request here speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// A raw client of one MCP endpoint. Its requests share connections (clones too); dropping
/// every clone closes the idle ones.
#[derive(Clone)]
pub(crate) struct RawClient {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
}

impl RawClient {
    /// A client of the endpoint at `url`, without a token.
    pub(crate) fn new(url: impl Into<String>) -> Self {
        RawClient {
            http: reqwest::Client::new(),
            url: url.into(),
            token: None,
        }
    }

    /// This client, sending `token` as its bearer token.
    #[cfg_attr(
        not(feature = "jwt"),
        expect(
            dead_code,
            reason = "only the authentication tests (feature jwt) send tokens"
        )
    )]
    pub(crate) fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// POST `message`, in `session` if one is given; the answer, whatever its status.
    pub(crate) async fn post(&self, session: Option<&str>, message: Value) -> Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .json(&message);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.expect("an answer")
    }

    /// Open a session as a client does: `initialize`, then `notifications/initialized`
    /// (which the server must accept). The session's id, or the status of the refusal.
    pub(crate) async fn open_session(&self) -> Result<String, StatusCode> {
        let response = self.post(None, initialize()).await;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let Some(session) = session.filter(|_| status == StatusCode::OK) else {
            return Err(status);
        };
        drop(response.bytes().await);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let accepted = self.post(Some(&session), initialized).await.status();
        assert_eq!(accepted, StatusCode::ACCEPTED, "initialized in {session}");
        Ok(session)
    }

    /// DELETE `session`, as a client closing it does.
    pub(crate) async fn close_session(&self, session: &str) -> Response {
        let mut request = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", session);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("an answer")
    }
}

/// The `initialize` request (id 0) of a client named `raw`.
pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// A `tools/call` request of `name` with `arguments`.
pub(crate) fn call(id: u32, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// The JSON-RPC message of an answer, whether sent as JSON or as one SSE event.
pub(crate) async fn message(response: Response) -> Value {
    let text = response.text().await.expect("a body");
    let data = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .find(|data| !data.trim().is_empty())
        .unwrap_or(&text);
    serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The JSON-RPC messages of an SSE answer, read until one answers `id` (each chunk within
/// ten seconds).
pub(crate) async fn messages_until_answer(response: &mut Response, id: u32) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut buffer = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("the answer goes on")
            .expect("a readable answer");
        let Some(chunk) = chunk else { return messages };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for data in event.lines().filter_map(|line| line.strip_prefix("data:")) {
                if let Ok(message) = serde_json::from_str::<Value>(data.trim()) {
                    let answers = message["id"] == id && message.get("method").is_none();
                    messages.push(message);
                    if answers {
                        return messages;
                    }
                }
            }
        }
    }
}
