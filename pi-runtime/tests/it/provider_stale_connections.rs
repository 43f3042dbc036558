//! A server that closes idle keep-alive connections (llama.cpp after 5 s, gateways after
//! their own time) must never cost a request: one written on a pooled connection the server
//! had already given up is sent again at once on a new connection, without a retry of the
//! policy and without its backoff. A failure on a fresh connection is still the server's
//! answer.
//!
//! The server below makes the race of the real world certain: a connection idle for longer
//! than its keep-alive is over for it, and the next request that arrives on it is dropped
//! unread, as a socket the server had closed would drop it. (A server that closes the socket
//! at the time itself is noticed by the client when it is idle: the race is the request
//! crossing the close on the wire, which this stands for.)

use crate::provider_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::provider::Api;
use pi_runtime::provider::http::{HttpModel, HttpOptions, RetryPolicy};
use pi_runtime::{LanguageModel, StopReason, StreamOptions};
use provider_support::{collect, context, final_message, options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The server's keep-alive: a connection idle for longer is closed for it.
const KEEP_ALIVE: Duration = Duration::from_millis(50);
/// The pause between two requests: past the keep-alive.
const SPACING: Duration = Duration::from_millis(80);

const ANSWER: &str = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// What the server did.
#[derive(Debug, Default)]
struct Counts {
    connections: AtomicUsize,
    answered: AtomicUsize,
    /// Requests that came on a connection the server had closed: dropped unread.
    dropped: AtomicUsize,
}

/// How the server treats a connection.
#[derive(Debug, Clone, Copy)]
enum Keep {
    /// Serve requests until one comes after more than `KEEP_ALIVE` of silence.
    Idle,
    /// Drop every request unanswered, even the first.
    Nothing,
}

struct StaleServer {
    base_url: String,
    counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StaleServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StaleServer {
    async fn start(keep: Keep) -> StaleServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let counts = Arc::new(Counts::default());
        let shared = Arc::clone(&counts);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                connections.spawn(serve(stream, keep, Arc::clone(&shared)));
            }
        });
        StaleServer {
            base_url: format!("http://{address}"),
            counts,
            task,
        }
    }

    fn count(&self, which: fn(&Counts) -> &AtomicUsize) -> usize {
        which(&self.counts).load(Ordering::SeqCst)
    }
}

/// One connection: requests of `content-length` bodies, answered with an event stream of
/// known length, kept alive.
async fn serve(mut stream: TcpStream, keep: Keep, counts: Arc<Counts>) {
    let mut idle_since: Option<Instant> = None;
    let mut buffer = Vec::new();
    loop {
        let Some(length) = read_request(&mut stream, &mut buffer).await else {
            return;
        };
        let expired = idle_since.is_some_and(|since| since.elapsed() > KEEP_ALIVE);
        if expired || matches!(keep, Keep::Nothing) {
            counts.dropped.fetch_add(1, Ordering::SeqCst);
            // Reset, as the kernel answers a request on a socket its server closed.
            let _ = stream.set_zero_linger();
            return;
        }
        buffer.drain(..length);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            ANSWER.len()
        );
        if stream
            .write_all(format!("{head}{ANSWER}").as_bytes())
            .await
            .is_err()
        {
            return;
        }
        counts.answered.fetch_add(1, Ordering::SeqCst);
        idle_since = Some(Instant::now());
    }
}

/// Read one whole request into `buffer`; its length, or `None` when the client closed.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    let mut piece = [0u8; 8192];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let body: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + body {
                return Some(end + 4 + body);
            }
        }
        match stream.read(&mut piece).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => buffer.extend_from_slice(&piece[..read]),
        }
    }
}

fn model(server: &StaleServer, options: HttpOptions) -> HttpModel {
    let model = serde_json::from_value(serde_json::json!({
        "id": "gpt-test", "provider": "openai", "api": Api::OpenAiCompletions.as_str(),
        "baseUrl": server.base_url,
    }))
    .expect("model");
    HttpModel::new(model, options)
}

/// `count` requests `SPACING` apart: how many failed (with the first error), and the time
/// they took, the pauses not counted.
async fn spaced_requests(model: &HttpModel, count: usize) -> (usize, Option<String>, Duration) {
    let mut failed = 0;
    let mut first_error = None;
    let mut busy = Duration::ZERO;
    for _ in 0..count {
        tokio::time::sleep(SPACING).await;
        let started = Instant::now();
        let events = collect(model.stream(context(), StreamOptions::default())).await;
        busy += started.elapsed();
        let message = final_message(&events);
        if message.stop_reason != StopReason::Stop || message.text() != "ok" {
            failed += 1;
            first_error.get_or_insert_with(|| format!("{:?}", message.error_message));
        }
    }
    (failed, first_error, busy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_on_connections_the_server_closed_all_succeed_without_retries() {
    let server = StaleServer::start(Keep::Idle).await;
    let model = model(&server, options().with_retry(RetryPolicy::none()));
    let (failed, first_error, _) = spaced_requests(&model, 100).await;
    assert_eq!((failed, first_error), (0, None));
    assert_eq!(server.count(|c| &c.answered), 100);
    // Every other request met the connection the one before had left in the pool, closed
    // by now, and went again on a connection of its own; the ones between opened a new
    // pooled connection.
    assert_eq!(server.count(|c| &c.dropped), 50);
    assert_eq!(server.count(|c| &c.connections), 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_connection_costs_no_backoff_of_the_retry_policy() {
    let server = StaleServer::start(Keep::Idle).await;
    // The default policy: its first backoff (0.375 to 0.5 s) would be paid 50 times.
    let model = model(&server, options().with_retry(RetryPolicy::default()));
    let (failed, first_error, busy) = spaced_requests(&model, 100).await;
    assert_eq!((failed, first_error), (0, None));
    assert_eq!(server.count(|c| &c.dropped), 50);
    // 100 loopback requests take well under a second; one backoff alone is 0.375 s.
    assert!(
        busy < Duration::from_secs(5),
        "100 requests took {busy:?} of their own"
    );
}

#[tokio::test]
async fn a_fresh_connection_closed_unanswered_is_not_sent_again() {
    let server = StaleServer::start(Keep::Nothing).await;
    let model = model(&server, options().with_retry(RetryPolicy::none()));
    let events = collect(model.stream(context(), StreamOptions::default())).await;
    let message = final_message(&events);
    assert_eq!(message.stop_reason, StopReason::Error);
    let error = message.error_message.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(&format!(
            "Could not reach {}/chat/completions: ",
            server.base_url
        )),
        "{error}"
    );
    // The server's own answer to a new connection: the policy (no retries) decides.
    assert_eq!(server.count(|c| &c.dropped), 1);
    assert_eq!(server.count(|c| &c.connections), 1);
}

#[tokio::test]
async fn connections_idle_past_the_pool_idle_timeout_are_not_reused() {
    let server = StaleServer::start(Keep::Idle).await;
    let options = options()
        .with_retry(RetryPolicy::none())
        .with_pool_idle_timeout(Duration::from_millis(20));
    let model = model(&server, options);
    let (failed, first_error, _) = spaced_requests(&model, 10).await;
    assert_eq!((failed, first_error), (0, None));
    // Each request on a connection of its own; none met a closed one.
    assert_eq!(server.count(|c| &c.dropped), 0);
    assert_eq!(server.count(|c| &c.connections), 10);
}

#[test]
fn the_default_pool_idle_timeout_is_under_common_keep_alives() {
    // llama.cpp (cpp-httplib), Node.js, uvicorn and Apache close idle connections after 5 s.
    assert_eq!(
        HttpOptions::default().pool_idle_timeout,
        Duration::from_secs(4)
    );
}
