//! MCP peers that misbehave: a stdio server whose child leaves its process group, a tool that
//! reports progress forever, malformed JSON-RPC, servers that cannot be reached or answer
//! garbage. Each case runs real processes or loopback sockets, under a time bound.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::mcp::{HttpServing, McpClient, McpServer};
use pi_runtime::{AgentTool, State, ToolContext, ToolResult, tool};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::memory_support::{measured, peak_rss};

/// The most a test here may grow the peak memory of the process: a client, a server and a
/// few messages, however long the call runs. Started cold, in a process of their own, they
/// take 18 to 28 MB (the HTTP client's TLS roots among them).
const SMALL_PEAK: u64 = 64 << 20;

/// How long a killed process may take to disappear, however loaded the machine.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// A stdio MCP server in Python that answers `initialize` and an empty `tools/list`.
const PYTHON_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "0"}}
    elif message["method"] == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"#;

/// Connect to the Python server, started by a shell that first starts `setsid sleep 300` and
/// writes its pid to a file; returns the client and that pid.
async fn server_with_setsid_child(dir: &Path) -> (McpClient, i32) {
    let pid_file = dir.join("child.pid");
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(r#"setsid sleep 300 & echo $! > "$1"; exec python3 -c "$2""#)
        .arg("sh")
        .arg(&pid_file)
        .arg(PYTHON_SERVER);
    let client = McpClient::builder("py")
        .timeout(Duration::from_secs(30))
        .stdio(command)
        .await
        .expect("the server initializes");
    let pid = std::fs::read_to_string(&pid_file)
        .expect("the pid file")
        .trim()
        .parse()
        .expect("a pid");
    let server = i32::try_from(client.process_id().expect("a running server")).expect("a pid");
    let (_, group) = stat(pid).expect("the child runs");
    assert_ne!(group, server, "the child left the server's process group");
    (client, pid)
}

/// The state and process group of `pid`, unless it is gone (a zombie counts as gone).
fn stat(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.to_string();
    let group = fields.get(2)?.parse().ok()?;
    (state != "Z" && state != "X").then_some((state, group))
}

/// How long `pid` took to disappear, or a panic after [`GONE_WITHIN`].
async fn gone(pid: i32) -> Duration {
    let start = Instant::now();
    while stat(pid).is_some() {
        assert!(
            start.elapsed() < GONE_WITHIN,
            "the setsid child {pid} outlived its server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    start.elapsed()
}

#[tokio::test]
async fn close_kills_a_setsid_child_of_a_stdio_server() {
    let _alone = measured().await;
    let peak = peak_rss();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (client, child) = server_with_setsid_child(dir.path()).await;
    let start = Instant::now();
    client.close().await;
    let waited = gone(child).await;
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "close: {:?}, then gone after {waited:?}; peak +{} KB",
        start.elapsed(),
        grown >> 10
    );
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

#[tokio::test]
async fn dropping_the_client_kills_a_setsid_child_of_a_stdio_server() {
    let _alone = measured().await;
    let peak = peak_rss();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (client, child) = server_with_setsid_child(dir.path()).await;
    drop(client);
    let waited = gone(child).await;
    let grown = peak_rss().saturating_sub(peak);
    eprintln!("drop: gone after {waited:?}; peak +{} KB", grown >> 10);
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

/// Reports progress every 50 ms until cancelled.
#[tool]
async fn endless(State(cancelled): State<Arc<AtomicBool>>, ctx: ToolContext) -> String {
    let mut tick = 0u64;
    loop {
        tokio::select! {
            () = ctx.signal().cancelled() => {
                cancelled.store(true, Ordering::SeqCst);
                return "cancelled".to_owned();
            }
            () = tokio::time::sleep(Duration::from_millis(50)) => {
                tick += 1;
                ctx.update(ToolResult::text(format!("tick {tick}")));
            }
        }
    }
}

#[tokio::test]
async fn progress_cannot_keep_a_call_past_its_total_time_limit() {
    let _alone = measured().await;
    let peak = peak_rss();
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = McpServer::new((Endless::new(Arc::clone(&cancelled)),)).expect("tools register");
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let client = McpClient::builder("local")
        .timeout(Duration::from_secs(30))
        .max_call_time(Duration::from_secs(1))
        .http(http.url())
        .await
        .expect("the client connects");
    let tool = client.tools().pop().expect("one tool");
    let start = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        tool.execute("c1".into(), json!({}), ToolContext::detached("c1")),
    )
    .await
    .expect("the limit ends the call")
    .expect("a result");
    let took = start.elapsed();
    assert_eq!(
        (result.is_error, result.text_content()),
        (
            true,
            "MCP tool local/endless exceeded its total time limit of 1.0 s".to_owned()
        )
    );
    // `notifications/cancelled` reached the tool; up to 10 s on a loaded machine.
    for _ in 0..500 {
        if cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(cancelled.load(Ordering::SeqCst), "the server was told");
    http.shutdown().await;
    let grown = peak_rss().saturating_sub(peak);
    eprintln!("the call ended after {took:?}; peak +{} KB", grown >> 10);
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

/// A stdio MCP server in Python whose one tool, `endless`, reports progress every
/// `sys.argv[1]` seconds until the call is cancelled; then it appends the request's id to
/// the file `sys.argv[2]`.
const PROGRESS_SERVER: &str = r#"
import json, sys, threading, time
interval, log = float(sys.argv[1]), sys.argv[2]
lock, cancelled = threading.Lock(), set()
def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()
def progress(request, token):
    tick = 0
    while request not in cancelled:
        tick += 1
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": tick, "message": "tick %d" % tick}})
        time.sleep(interval)
    with open(log, "a") as out:
        out.write("%s\n" % request)
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "notifications/cancelled":
        cancelled.add(message["params"]["requestId"])
        continue
    if "id" not in message or method is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "endless", "description": "Reports progress forever.",
                             "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        token = message["params"]["_meta"]["progressToken"]
        threading.Thread(target=progress, args=(message["id"], token), daemon=True).start()
        continue
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"#;

/// The timeout of the clients below: each progress notification (every 100 ms) restarts it,
/// so only the total limit ends their calls.
const IDLE_TIMEOUT: Duration = Duration::from_secs(1);

/// The call of `client`'s one tool, its result text and how long it took; fails the test
/// past 30 s (the defect held calls for the default total limit, 10 minutes).
async fn endless_call(client: &McpClient) -> (String, Duration) {
    let tool = client.tools().pop().expect("one tool");
    let start = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        tool.execute("c1".into(), json!({}), ToolContext::detached("c1")),
    )
    .await
    .expect("the total limit ends the call")
    .expect("a result");
    assert!(result.is_error);
    (result.text_content(), start.elapsed())
}

/// Seen before the fix: a server reporting progress every 0.5 s held a call of a client with
/// a 5 s timeout past 180 s (the total limit was 10 minutes, whatever the timeout).
#[tokio::test]
async fn progress_over_stdio_extends_a_call_to_ten_times_its_timeout_at_most() {
    let _alone = measured().await;
    let peak = peak_rss();
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("cancelled");
    let mut command = tokio::process::Command::new("python3");
    command.arg("-c").arg(PROGRESS_SERVER).arg("0.1").arg(&log);
    let client = McpClient::builder("py")
        .timeout(IDLE_TIMEOUT)
        .stdio(command)
        .await
        .expect("the server initializes");
    let (text, took) = endless_call(&client).await;
    assert_eq!(
        text,
        "MCP tool py/endless exceeded its total time limit of 10.0 s"
    );
    // Progress extended the call past its timeout, up to ten times it.
    assert!(
        took >= 10 * IDLE_TIMEOUT && took < Duration::from_secs(20),
        "{took:?}"
    );
    // `notifications/cancelled` reached the server; up to 10 s on a loaded machine.
    for _ in 0..500 {
        if std::fs::read_to_string(&log).is_ok_and(|ids| !ids.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&log)
            .expect("the server was told")
            .lines()
            .count(),
        1
    );
    client.close().await;
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "stdio: the call ended after {took:?}; peak +{} KB",
        grown >> 10
    );
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

#[tokio::test]
async fn progress_over_http_extends_a_call_to_ten_times_its_timeout_at_most() {
    let _alone = measured().await;
    let peak = peak_rss();
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = McpServer::new((Endless::new(Arc::clone(&cancelled)),)).expect("tools register");
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let client = McpClient::builder("local")
        .timeout(IDLE_TIMEOUT)
        .http(http.url())
        .await
        .expect("the client connects");
    let (text, took) = endless_call(&client).await;
    assert_eq!(
        text,
        "MCP tool local/endless exceeded its total time limit of 10.0 s"
    );
    assert!(
        took >= 10 * IDLE_TIMEOUT && took < Duration::from_secs(20),
        "{took:?}"
    );
    for _ in 0..500 {
        if cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(cancelled.load(Ordering::SeqCst), "the server was told");
    client.close().await;
    http.shutdown().await;
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "http: the call ended after {took:?}; peak +{} KB",
        grown >> 10
    );
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors_not_415() {
    let server = McpServer::new((Endless::new(Arc::default()),)).expect("tools register");
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let post = |body: &'static str| {
        reqwest::Client::new()
            .post(http.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .timeout(Duration::from_secs(10))
            .body(body)
            .send()
    };
    for (body, id, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, ", Value::Null, -32700),
        ("not json at all", Value::Null, -32700),
        (
            r#"{"jsonrpc": "2.0", "id": 3, "method": 7}"#,
            json!(3),
            -32600,
        ),
    ] {
        let response = post(body).await.expect("an answer");
        assert_eq!(
            response.status(),
            reqwest::StatusCode::BAD_REQUEST,
            "{body}"
        );
        let answer: Value = response.json().await.expect("a JSON-RPC error");
        assert_eq!(
            (&answer["jsonrpc"], &answer["id"], &answer["error"]["code"]),
            (&json!("2.0"), &id, &json!(code)),
            "{answer}"
        );
    }
    http.shutdown().await;
}

/// The error text of connecting to `url`.
async fn connect_error(url: &str) -> String {
    let error = McpClient::builder("remote")
        .timeout(Duration::from_secs(20))
        .http(url)
        .await
        .expect_err("nothing to connect to");
    error.to_string()
}

#[tokio::test]
async fn connect_errors_say_what_failed_without_rust_type_names() {
    // A port nobody listens on: bound, then freed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    drop(listener);
    let refused = connect_error(&format!("http://127.0.0.1:{port}/mcp")).await;

    // A server that answers every connection with bytes that are not HTTP.
    let garbage = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = garbage.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = garbage.accept().await {
            let _ = socket.write_all(b"garbage\r\n\r\n").await;
        }
    });
    let not_http = connect_error(&format!("http://{addr}/mcp")).await;

    for text in [&refused, &not_http] {
        assert!(!text.contains("::"), "a Rust path in: {text}");
        assert!(
            text.starts_with("MCP connection failed: MCP server remote at http://127.0.0.1:"),
            "{text}"
        );
    }
    assert!(refused.contains("Connection refused"), "{refused}");
    eprintln!("{refused}\n{not_http}");
}
