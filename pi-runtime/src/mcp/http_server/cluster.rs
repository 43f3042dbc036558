//! Several instances of one server behind a plain round-robin load balancer.
//!
//! A client of the older protocol revisions keeps a session: its `initialize` lands on one
//! instance, and every later request (calls, `notifications/cancelled`, the `GET` stream,
//! `DELETE`) must reach that instance, where the session and its running calls live. A
//! balancer without stickiness sends them anywhere. So each instance names itself in the
//! session ids it hands out (`<instance>.<id>`), and an instance that receives a request for
//! another's session forwards it there, streaming both ways: progress notifications come
//! back on the forwarded answer, and a cancellation reaches the call it cancels. Only the
//! configured peers are ever forwarded to, and a forwarded request is never forwarded again.
//!
//! When the instance holding a session is gone, its sessions are too: a request for one gets
//! `404 Session not found` (which tells a client to initialize again), and a call whose
//! forwarded answer breaks off gets a JSON-RPC error in its place, so no client waits for an
//! answer that cannot come. A client connected to the stopped instance itself (through the
//! balancer) sees its answer stream break, and resumes it elsewhere with the `Last-Event-ID`
//! of the last event it saw: the instance names the request each event answers in the event
//! ids it sends (`<rmcp's id>~<request id>`), so the instance the resumption reaches can
//! answer with the JSON-RPC error for exactly that request.
//!
//! Requests of the `2026-07-28` revision carry no session: whichever instance receives one
//! answers it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use rmcp::model::RequestId;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use serde_json::json;

use super::posted::Posted;
use super::sessions::{session_id, session_not_found};
use crate::mcp::McpError;

/// Marks a request forwarded by a peer, with the peer's name.
const FORWARDED_BY: &str = "x-pi-mcp-forwarded-by";
/// Between the instance's name and rmcp's own id in a session id.
const SEPARATOR: char = '.';
/// How long connecting to a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// This instance's name and where its peers serve the same endpoint
/// ([`HttpServing::with_cluster`](super::HttpServing::with_cluster)).
///
/// ```
/// use pi_runtime::mcp::Cluster;
///
/// # fn main() -> Result<(), pi_runtime::mcp::McpError> {
/// let cluster = Cluster::new("a")?
///     .with_peer("b", "http://10.0.0.2:8000/mcp")?
///     .with_peer("c", "http://10.0.0.3:8000/mcp")?;
/// assert_eq!(cluster.instance(), "a");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Cluster {
    instance: String,
    peers: HashMap<String, String>,
    client: reqwest::Client,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("instance", &self.instance)
            .field("peers", &self.peers)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// This instance, named `instance`: letters, digits, `-` and `_`, unique in the cluster.
    ///
    /// # Errors
    /// [`McpError::Cluster`]: the name is empty or has other characters.
    pub fn new(instance: impl Into<String>) -> Result<Self, McpError> {
        let instance = checked_name(instance.into())?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| McpError::Cluster(format!("no HTTP client for the peers: {e}")))?;
        Ok(Cluster {
            instance,
            peers: HashMap::new(),
            client,
        })
    }

    /// The peer named `instance` serves the endpoint at `url` (as this instance reaches it;
    /// usually an internal address, not the balancer's).
    ///
    /// # Errors
    /// [`McpError::Cluster`]: the name is not valid, is this instance's, or `url` is not an
    /// `http` or `https` URL.
    pub fn with_peer(
        mut self,
        instance: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Self, McpError> {
        let instance = checked_name(instance.into())?;
        if instance == self.instance {
            return Err(McpError::Cluster(format!(
                "{instance} is this instance, not a peer"
            )));
        }
        let url = url.into();
        match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
            _ => {
                return Err(McpError::Cluster(format!(
                    "the peer {instance}'s URL {url:?} is not an http(s) URL"
                )));
            }
        }
        self.peers.insert(instance, url);
        Ok(self)
    }

    /// This instance's name.
    pub fn instance(&self) -> &str {
        &self.instance
    }
}

fn checked_name(name: String) -> Result<String, McpError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(name)
    } else {
        Err(McpError::Cluster(format!(
            "{name:?} is not an instance name: use letters, digits, '-' and '_'"
        )))
    }
}

/// The layer, after the body check: a request for another instance's session goes there;
/// the rest is answered here, with this instance's name on the session ids it hands out.
pub(super) async fn route(
    State(cluster): State<Arc<Cluster>>,
    mut request: Request,
    next: Next,
) -> Response {
    let session = session_id(&request).map(str::to_owned);
    if let Some(session) = session {
        let Some((owner, id)) = session.split_once(SEPARATOR) else {
            return session_not_found();
        };
        if owner != cluster.instance {
            let forwarded = request.headers().contains_key(FORWARDED_BY);
            return match cluster.peers.get(owner) {
                Some(url) if !forwarded => forward(&cluster, url, request).await,
                _ => session_not_found(),
            };
        }
        match HeaderValue::from_str(id) {
            Ok(id) => request.headers_mut().insert(HEADER_SESSION_ID, id),
            Err(_) => return session_not_found(),
        };
    }
    // The request whose answer the events carry: a POST's own, or a resumed stream's.
    let mut answering = request
        .extensions()
        .get::<Posted>()
        .and_then(|posted| posted.id.clone());
    if let Some((rmcp_id, tagged)) = last_event_id(&request).and_then(|id| untag(&id)) {
        answering = Some(tagged);
        match HeaderValue::from_str(&rmcp_id) {
            Ok(id) => request.headers_mut().insert(LAST_EVENT_ID, id),
            Err(_) => return session_not_found(),
        };
    }
    let mut response = next.run(request).await;
    // A new session (the answer to `initialize`) is named for this instance.
    let named = response
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .and_then(|id| HeaderValue::from_str(&format!("{}{SEPARATOR}{id}", cluster.instance)).ok());
    if let Some(named) = named {
        response.headers_mut().insert(HEADER_SESSION_ID, named);
    }
    match answering {
        Some(id) if is_event_stream(response.headers()) => {
            let tag = tag(&id);
            response.map(|body| {
                let mut tagger = EventIdTagger::new(tag);
                Body::from_stream(
                    body.into_data_stream()
                        .map(move |chunk| chunk.map(|bytes| tagger.tag(&bytes))),
                )
            })
        }
        _ => response,
    }
}

/// `Last-Event-ID`, the header a client resumes a stream with.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

fn last_event_id(request: &Request) -> Option<String> {
    request
        .headers()
        .get(LAST_EVENT_ID)?
        .to_str()
        .ok()
        .map(str::to_owned)
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// Between rmcp's event id and the request's in an event id.
const TAG: &str = "~";

/// A request id as an event-id suffix: `n<number>` or `s<hex of the string>`.
fn tag(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => format!("{TAG}n{n}"),
        RequestId::String(s) => {
            let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
            format!("{TAG}s{hex}")
        }
    }
}

/// rmcp's event id and the request's, from an event id [`tag`] made.
fn untag(event_id: &str) -> Option<(String, RequestId)> {
    let (rmcp_id, tagged) = event_id.rsplit_once(TAG)?;
    let id = match tagged.split_at_checked(1)? {
        ("n", number) => RequestId::Number(number.parse().ok()?),
        ("s", hex) => {
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
                .collect::<Option<Vec<u8>>>()?;
            RequestId::String(String::from_utf8(bytes).ok()?.into())
        }
        _ => return None,
    };
    Some((rmcp_id.to_owned(), id))
}

/// Appends a tag to every `id:` line of an event stream, however the stream is cut into
/// chunks.
struct EventIdTagger {
    tag: String,
    /// At the start of a line.
    line_start: bool,
    /// The start of a line not yet known to be, or not yet complete as, an `id:` line.
    held: Vec<u8>,
}

impl EventIdTagger {
    fn new(tag: String) -> Self {
        EventIdTagger {
            tag,
            line_start: true,
            held: Vec::new(),
        }
    }

    fn tag(&mut self, mut bytes: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(bytes.len() + self.tag.len());
        while !bytes.is_empty() {
            if !self.line_start {
                // Copy through the end of this line.
                match memchr::memchr(b'\n', bytes) {
                    Some(at) => {
                        out.extend_from_slice(&bytes[..=at]);
                        bytes = &bytes[at + 1..];
                        self.line_start = true;
                    }
                    None => {
                        out.extend_from_slice(bytes);
                        bytes = &[];
                    }
                }
                continue;
            }
            // At a line start (or holding one): is it an `id:` line?
            let end = memchr::memchr(b'\n', bytes);
            let piece = &bytes[..end.unwrap_or(bytes.len())];
            self.held.extend_from_slice(piece);
            let known = self.held.len() >= 3 || end.is_some();
            if known && !self.held.starts_with(b"id:") {
                out.append(&mut self.held);
                self.line_start = false;
                bytes = &bytes[piece.len()..];
                continue;
            }
            match end {
                Some(at) => {
                    out.append(&mut self.held);
                    out.extend_from_slice(self.tag.as_bytes());
                    out.push(b'\n');
                    bytes = &bytes[at + 1..];
                }
                None => bytes = &[],
            }
        }
        Bytes::from(out)
    }
}

/// Send `request` to the peer at `url` and stream its answer back.
async fn forward(cluster: &Cluster, url: &str, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let request_id = parts.extensions.get::<Posted>().and_then(|p| p.id.clone());
    let resumed = parts
        .headers
        .get(LAST_EVENT_ID)
        .and_then(|value| value.to_str().ok())
        .and_then(untag)
        .map(|(_, id)| id);
    let mut target = url.to_owned();
    if let Some(query) = parts.uri.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut headers = end_to_end(&parts.headers);
    if let Ok(me) = HeaderValue::from_str(&cluster.instance) {
        headers.insert(HeaderName::from_static(FORWARDED_BY), me);
    }
    let sent = cluster
        .client
        .request(parts.method, &target)
        .headers(headers)
        .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(error) => {
            // The instance is gone, and its sessions with it. A stream being resumed gets the
            // error for the request it was answering.
            tracing::warn!(peer = %url, %error, "the instance holding a session cannot be reached");
            return match resumed {
                Some(id) => {
                    let mut response = Response::new(Body::from(stopped_error(&id)));
                    response.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/event-stream"),
                    );
                    response
                }
                None => session_not_found(),
            };
        }
    };
    let status = answer.status();
    let headers = end_to_end(answer.headers());
    let streaming = is_event_stream(&headers);
    // An event stream answering a request that ends, or breaks off, before the answer ends
    // with an error for the request where its answer would have been.
    let mut watch = match request_id {
        Some(id) if streaming => Some(AnswerWatch::new(id)),
        None if streaming => resumed.map(AnswerWatch::new),
        _ => None,
    };
    let body = answer
        .bytes_stream()
        .map(Some)
        .chain(futures::stream::once(async { None }))
        .scan(false, move |ended, item| {
            let out = match item {
                _ if *ended => None,
                Some(Ok(bytes)) => {
                    if let Some(watch) = &mut watch {
                        watch.feed(&bytes);
                    }
                    Some(Ok::<Bytes, std::io::Error>(bytes))
                }
                Some(Err(_)) | None => {
                    *ended = true;
                    watch.take().and_then(AnswerWatch::missing_answer).map(Ok)
                }
            };
            futures::future::ready(Some(out))
        })
        .filter_map(futures::future::ready);
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Reads a forwarded event stream for the answer to one request.
struct AnswerWatch {
    id: RequestId,
    line: Vec<u8>,
    answered: bool,
}

/// The longest `data:` line looked into. Notifications are far smaller; a longer line is
/// taken for the answer.
const MAX_WATCHED_LINE: usize = 1 << 20;

impl AnswerWatch {
    fn new(id: RequestId) -> Self {
        AnswerWatch {
            id,
            line: Vec::new(),
            answered: false,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !self.answered && !bytes.is_empty() {
            let (part, rest, ends) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &bytes[bytes.len()..], false),
            };
            if self.line.len() + part.len() <= MAX_WATCHED_LINE {
                self.line.extend_from_slice(part);
            } else if self.line.starts_with(b"data:") || part.starts_with(b"data:") {
                self.answered = true;
            }
            if ends {
                self.check_line();
                self.line.clear();
            }
            bytes = rest;
        }
    }

    fn check_line(&mut self) {
        let Some(data) = self.line.strip_prefix(b"data:") else {
            return;
        };
        let Ok(message) = serde_json::from_slice::<serde_json::Value>(data) else {
            return;
        };
        let is_response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        if is_response && serde_json::to_value(&self.id).is_ok_and(|id| message["id"] == id) {
            self.answered = true;
        }
    }

    /// The error event to send when the stream ended without the answer.
    fn missing_answer(self) -> Option<Bytes> {
        if self.answered {
            return None;
        }
        tracing::warn!("a forwarded answer ended before the answer");
        Some(stopped_error(&self.id))
    }
}

/// The event that answers `id` when the instance running it stopped.
fn stopped_error(id: &RequestId) -> Bytes {
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
        "message": "The server instance running this request stopped before it answered"}});
    Bytes::from(format!("event: message\ndata: {error}\n\n"))
}

/// `headers` without the hop-by-hop ones (RFC 9110 §7.6.1) and those the next hop sets
/// itself.
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let mut kept = headers.clone();
    for name in [
        header::CONNECTION,
        header::HOST,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
        HeaderName::from_static("keep-alive"),
    ] {
        kept.remove(name);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_carry_the_request_however_the_stream_is_cut() {
        let stream = "data: \nid: 0/0\nretry: 3000\n\ndata: {\"id\":7}\nid: 7/1\n\n";
        let expected = "data: \nid: 0/0~n7\nretry: 3000\n\ndata: {\"id\":7}\nid: 7/1~n7\n\n";
        for cut in 1..stream.len() {
            let mut tagger = EventIdTagger::new(tag(&RequestId::Number(7)));
            let (head, tail) = stream.split_at(cut);
            let mut out = tagger.tag(head.as_bytes()).to_vec();
            out.extend_from_slice(&tagger.tag(tail.as_bytes()));
            assert_eq!(String::from_utf8_lossy(&out), expected, "cut at {cut}");
        }
        let string = RequestId::String("req~1".into());
        assert_eq!(
            untag(&format!("3/2{}", tag(&string))),
            Some(("3/2".to_owned(), string))
        );
        assert_eq!(
            untag("0/0~n-4"),
            Some(("0/0".to_owned(), RequestId::Number(-4)))
        );
        assert_eq!(untag("0/0"), None);
        assert_eq!(untag("0/0~sz"), None);
    }

    #[test]
    fn names_and_peers_are_checked() {
        assert!(Cluster::new("a-1_b").is_ok());
        assert_eq!(
            Cluster::new("a.b").expect_err("refused").to_string(),
            "MCP cluster misconfigured: \"a.b\" is not an instance name: use letters, digits, \
             '-' and '_'"
        );
        let cluster = Cluster::new("a").expect("a name");
        assert_eq!(
            cluster
                .clone()
                .with_peer("a", "http://x/mcp")
                .expect_err("refused")
                .to_string(),
            "MCP cluster misconfigured: a is this instance, not a peer"
        );
        assert_eq!(
            cluster
                .with_peer("b", "file:///etc/passwd")
                .expect_err("refused")
                .to_string(),
            "MCP cluster misconfigured: the peer b's URL \"file:///etc/passwd\" is not an \
             http(s) URL"
        );
    }
}
