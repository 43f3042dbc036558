//! Clients that abuse our MCP server over streamable HTTP: thousands of sessions never
//! closed, a connection dropped in the middle of a call. Loopback sockets, raw HTTP from
//! reqwest, under a time bound and a peak-memory bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::mcp::{McpHttpServer, McpServer, SessionLimits};
use pi_runtime::{State, ToolContext, tool};
use serde_json::{Value, json};

use crate::memory_support::{measured, peak_rss};

const MB: u64 = 1 << 20;

/// Waits until cancelled, then says so.
#[tool]
async fn wait(State(cancelled): State<Arc<AtomicBool>>, ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    cancelled.store(true, Ordering::SeqCst);
    "cancelled".to_owned()
}

async fn serve(server: McpServer) -> McpHttpServer {
    server
        .serve_http("127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("a loopback port")
}

/// POST `message` to `url` in `session` (if any); the response.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("an answer")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// Open a session (initialize, then `notifications/initialized`); its id, or the status of
/// the refusal.
async fn open_session(client: &reqwest::Client, url: &str) -> Result<String, reqwest::StatusCode> {
    let response = post(client, url, None, initialize()).await;
    let status = response.status();
    let Some(session) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
    else {
        return Err(status);
    };
    drop(response.bytes().await);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    drop(post(client, url, Some(&session), initialized).await);
    Ok(session)
}

#[tokio::test]
async fn sessions_never_closed_are_capped() {
    let _alone = measured().await;
    let http = serve(McpServer::new((Wait::new(Arc::default()),)).expect("tools register")).await;
    let client = reqwest::Client::new();
    let (peak, started) = (peak_rss(), Instant::now());
    let mut opened = 0;
    let mut refused = None;
    for _ in 0..2_000 {
        match open_session(&client, &http.url()).await {
            Ok(_) => opened += 1,
            Err(status) => refused = refused.or(Some(status)),
        }
    }
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "2,000 sessions: {opened} opened in {took:?} (refused with {refused:?}), peak +{} MB",
        grown / MB
    );
    http.shutdown().await;
    assert!(opened <= 64, "{opened} sessions from one client");
    assert_eq!(refused, Some(reqwest::StatusCode::TOO_MANY_REQUESTS));
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(grown < 32 * MB, "peak memory grew by {} MB", grown / MB);
}

#[tokio::test]
async fn sessions_deleted_or_expired_free_their_place_and_memory() {
    let _alone = measured().await;
    let limits = SessionLimits::default()
        .with_max_sessions(20)
        .with_max_sessions_per_client(100)
        .with_idle_timeout(Duration::from_secs(1));
    let server = McpServer::new((Wait::new(Arc::default()),))
        .expect("tools register")
        .with_session_limits(limits);
    let http = serve(server).await;
    let client = reqwest::Client::new();
    let url = http.url();
    let (peak, started) = (peak_rss(), Instant::now());
    for round in 0..5 {
        let mut sessions = Vec::new();
        for _ in 0..20 {
            sessions.push(open_session(&client, &url).await.expect("a place"));
        }
        let refused = post(&client, &url, None, initialize()).await;
        assert_eq!(refused.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            refused.headers().get("retry-after").map(|v| v.as_bytes()),
            Some(&b"5"[..])
        );
        let error: Value = refused.json().await.expect("a JSON-RPC error");
        assert_eq!(
            error["error"]["message"],
            "The server has 20 sessions open, the most it keeps; try again later"
        );
        // Deleting one frees its place at once; the others expire.
        let deleted = client
            .delete(&url)
            .header("mcp-session-id", &sessions[0])
            .send()
            .await
            .expect("an answer");
        assert!(deleted.status().is_success(), "{}", deleted.status());
        let again = open_session(&client, &url).await.expect("the freed place");
        assert!(!sessions.contains(&again), "round {round}");
        tokio::time::sleep(Duration::from_millis(2_500)).await;
    }
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "5 rounds of 20 sessions: {took:?}, peak +{} KB",
        grown >> 10
    );
    http.shutdown().await;
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert!(grown < 16 * MB, "peak memory grew by {} MB", grown / MB);
}

#[tokio::test]
async fn a_client_that_drops_its_connection_cancels_its_call() {
    let _alone = measured().await;
    let cancelled = Arc::new(AtomicBool::new(false));
    let http =
        serve(McpServer::new((Wait::new(Arc::clone(&cancelled)),)).expect("tools register")).await;
    let peak = peak_rss();
    let client = reqwest::Client::new();
    let session = open_session(&client, &http.url()).await.expect("a session");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "wait", "arguments": {}}});
    let response = post(&client, &http.url(), Some(&session), call).await;
    assert!(response.status().is_success(), "{}", response.status());
    // Give the call time to start, then hang up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let hung_up = Instant::now();
    drop(response);
    drop(client);
    while !cancelled.load(Ordering::SeqCst) && hung_up.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waited = hung_up.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "dropped connection: call cancelled {}, after {waited:?}; peak +{} KB",
        cancelled.load(Ordering::SeqCst),
        grown >> 10
    );
    http.shutdown().await;
    assert!(cancelled.load(Ordering::SeqCst), "the call still runs");
    assert!(
        waited < Duration::from_secs(5),
        "cancelled after {waited:?}"
    );
    assert!(grown < 16 * MB, "peak memory grew by {grown} bytes");
}
