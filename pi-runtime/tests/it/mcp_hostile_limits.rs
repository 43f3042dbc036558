//! MCP servers that send too much: 50,000 tools, a 100 MB description, endless pages after a
//! storm of `list_changed`, a 200 MB SSE event. Each runs a real Python server (stdio, or
//! HTTP on loopback) under a time bound and a peak-memory bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_runtime::mcp::{DEFAULT_MAX_TOOLS, McpClient};
use pi_runtime::{ToolContext, ToolDefinition, ToolResult};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::memory_support::{ALONE, alone, measured, peak_rss, rss};

const MB: u64 = 1 << 20;

/// A stdio MCP server in Python; its first argument picks how it misbehaves:
/// - `many`: one page of 50,000 tools;
/// - `huge`: one tool whose description is 100 MB;
/// - `fat`: 100 pages, each of a tool with a 1 MB description and a small one;
/// - `endless`: one tool, until `tools/call` of `storm` sends 10,000 `list_changed`; from
///   then on every listing pages forever, 10 tools a page.
///
/// Any other call answers `{"listings": …, "pages": …}`: the listings (requests without a
/// cursor) and pages it has served.
const PYTHON_SERVER: &str = r#"
import json, sys
mode = sys.argv[1]
listings = pages = 0
stormed = False

def tool(name, description="Does one thing."):
    return {"name": name, "description": description, "inputSchema": {
        "type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"]}}

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"],
                  "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "py", "version": "0"}}
    elif method == "tools/list":
        cursor = params.get("cursor")
        pages += 1
        listings += cursor is None
        if mode == "many":
            result = {"tools": [tool("tool_%d" % i) for i in range(50000)]}
        elif mode == "huge":
            head = json.dumps({"jsonrpc": "2.0", "id": message["id"],
                               "result": {"tools": [tool("big", "")]}})
            start, end = head.split('"description": ""')
            sys.stdout.write(start + '"description": "')
            for _ in range(100):
                sys.stdout.write("x" * (1 << 20))
            sys.stdout.write('"' + end + "\n")
            sys.stdout.flush()
            continue
        elif mode == "fat":
            page = int(cursor or 0)
            result = {"tools": [tool("fat_%d" % page, "x" * (1 << 20)), tool("slim_%d" % page)]}
            if page + 1 < 100:
                result["nextCursor"] = str(page + 1)
        elif stormed:
            page = int(cursor or 0)
            result = {"tools": [tool("tool_%d" % (page * 10 + i)) for i in range(10)],
                      "nextCursor": str(page + 1)}
        else:
            result = {"tools": [tool("storm")]}
    elif method == "tools/call":
        if params["name"] == "storm" and not stormed:
            stormed = True
            for _ in range(10000):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            text = "stormed"
        else:
            text = json.dumps({"listings": listings, "pages": pages})
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"#;

fn python(mode: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("python3");
    command.arg("-c").arg(PYTHON_SERVER).arg(mode);
    command
}

/// Run `tool` with `arguments`, within `limit`.
async fn run(tool: &dyn ToolDefinition, arguments: Value, limit: Duration) -> ToolResult {
    tokio::time::timeout(
        limit,
        tool.execute("c1".into(), arguments, ToolContext::detached("c1")),
    )
    .await
    .expect("the call ends in time")
    .expect("a result")
}

/// Connect to the server of 50,000 tools and close; the tools taken, their warning, and
/// the peak and lasting growth of this process.
async fn connect_to_fifty_thousand_tools() -> (usize, Option<String>, Duration, u64, u64) {
    let (peak, before, started) = (peak_rss(), rss(), Instant::now());
    let client = McpClient::builder("many")
        .timeout(Duration::from_secs(60))
        .stdio(python("many"))
        .await
        .expect("the client connects");
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    let (tools, warning) = (client.tool_names().len(), client.list_warning());
    client.close().await;
    assert_eq!(
        client.tool_names(),
        Vec::<String>::new(),
        "closing drops the tools"
    );
    let held = rss().saturating_sub(before);
    (tools, warning, took, grown, held)
}

#[tokio::test]
async fn fifty_thousand_tools_are_capped_and_closing_releases_them() {
    let _alone = measured().await;
    alone("mcp_hostile_limits::fifty_thousand_tools_alone").await;
}

/// Run by [`fifty_thousand_tools_are_capped_and_closing_releases_them`] in a process of its
/// own.
#[tokio::test]
#[ignore = "run in a process of its own"]
async fn fifty_thousand_tools_alone() {
    if std::env::var_os(ALONE).is_none() {
        return;
    }
    let (tools, warning, took, grown, held) = connect_to_fifty_thousand_tools().await;
    eprintln!(
        "50,000 tools: {tools} taken in {took:?}, peak +{} MB, +{} MB resident after close",
        grown / MB,
        held / MB
    );
    // What stays resident after the first close is the allocator's: rmcp's parse of the one
    // 9 MB page, freed but not given back. A second client reuses it; a client that kept
    // its tools would add to it.
    let again = connect_to_fifty_thousand_tools().await;
    let kept = again.4.saturating_sub(held);
    eprintln!(
        "the second connection: +{} MB resident after close",
        kept / MB
    );
    assert_eq!(tools, DEFAULT_MAX_TOOLS);
    assert_eq!(
        warning.as_deref(),
        Some("MCP server many lists more than 1000 tools; only the first 1000 are taken")
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // rmcp's parse of the page is most of it; it is bounded by the message size limit.
    assert!(grown < 300 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(
        kept < 16 * MB,
        "{} MB more held after a second close",
        kept / MB
    );
}

#[tokio::test]
async fn tools_over_the_size_limit_are_left_out_and_named() {
    let _alone = measured().await;
    let (peak, before, started) = (peak_rss(), rss(), Instant::now());
    let client = McpClient::builder("fat")
        .timeout(Duration::from_secs(60))
        .stdio(python("fat"))
        .await
        .expect("the client connects");
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    let held = rss().saturating_sub(before);
    let (tools, rejected) = (client.tool_names(), client.rejected_tools());
    client.close().await;
    eprintln!(
        "100 tools of 1 MB: {} taken, {} left out in {took:?}, peak +{} MB, +{} MB resident",
        tools.len(),
        rejected.len(),
        grown / MB,
        held / MB
    );
    assert_eq!(tools.len(), 100);
    assert_eq!(rejected.len(), 100);
    assert_eq!(
        rejected[0],
        (
            "mcp__fat__fat_0".to_owned(),
            "its definition takes 1048728 bytes, more than the 64 KiB one tool may take".to_owned()
        )
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(grown < 64 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(held < 32 * MB, "{} MB resident", held / MB);
}

#[tokio::test]
async fn a_tool_list_over_the_message_limit_fails_at_once_and_says_why() {
    let _alone = measured().await;
    let (peak, started) = (peak_rss(), Instant::now());
    let error = McpClient::builder("huge")
        .stdio(python("huge"))
        .await
        .expect_err("the list is over the limit");
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!(
        "100 MB description: failed after {took:?}, peak +{} MB: {error}",
        grown / MB
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(grown < 64 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(
        error.to_string().contains("larger than"),
        "the cause is named: {error}"
    );
}

/// The server's `{"listings": …, "pages": …}` count, through `counter`.
async fn counts(counter: &dyn ToolDefinition) -> (u64, u64) {
    let result = run(counter, json!({}), Duration::from_secs(60)).await;
    let counts: Value = serde_json::from_str(&result.text_content()).expect("counts");
    let count = |key: &str| counts[key].as_u64().expect("a count");
    (count("listings"), count("pages"))
}

#[tokio::test]
async fn a_list_changed_storm_with_endless_pages_lists_a_bounded_few_times() {
    let _alone = measured().await;
    let client = McpClient::builder("endless")
        .timeout(Duration::from_secs(60))
        .max_pages(50)
        .stdio(python("endless"))
        .await
        .expect("the client connects");
    let storm = client.tools().pop().expect("the storm tool");
    let (peak, started) = (peak_rss(), Instant::now());
    let stormed = run(storm.as_ref(), json!({}), Duration::from_secs(60)).await;
    assert_eq!(stormed.text_content(), "stormed");
    // Wait until the server has stopped serving pages, or 10 s.
    let counter = Arc::clone(&storm);
    let mut last = counts(counter.as_ref()).await;
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = counts(counter.as_ref()).await;
        if now == last {
            break;
        }
        last = now;
    }
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    let (listings, pages) = last;
    let tools = client.tool_names().len();
    eprintln!(
        "10,000 list_changed: {listings} listings, {pages} pages in {took:?}, peak +{} MB, {tools} tools",
        grown / MB,
    );
    let warning = client.list_warning();
    client.close().await;
    assert_eq!(tools, 500);
    assert_eq!(
        warning.as_deref(),
        Some(
            "MCP server endless lists its tools on more than 50 pages; only those of the first \
             50 are taken"
        )
    );
    // The first listing, one at the first notification, one for all that came in while it
    // ran (3 here), and maybe a few more on a loaded machine, where the notifications take
    // as long to read as a listing: never one each. Each refresh reads 50 pages at most.
    assert!(listings <= 8, "{listings} listings");
    assert!(pages <= 1 + (listings - 1) * 50, "{pages} pages");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(grown < 64 * MB, "peak memory grew by {} MB", grown / MB);
}

/// A streamable HTTP MCP server in Python with one tool, `echo`, whose answer to
/// `{"size": n}` is `n` bytes of text in one SSE event (in a JSON body with `"json": true`),
/// sent a megabyte at a time. It serves the port given (0 picks one), prints it, and knows
/// only the sessions it opened itself.
const PYTHON_HTTP_SERVER: &str = r#"
import json, sys, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sessions = set()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, params = message.get("method"), message.get("params") or {}
        if method != "initialize" and self.headers.get("Mcp-Session-Id") not in sessions:
            return self.reply(404)
        if "id" not in message:
            return self.reply(202)
        answer = lambda result: {"jsonrpc": "2.0", "id": message["id"], "result": result}
        if method == "initialize":
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "py", "version": "0"}}
            session = uuid.uuid4().hex
            sessions.add(session)
            return self.reply(200, answer(result), [("Mcp-Session-Id", session)])
        if method == "tools/list":
            return self.reply(200, answer({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}))
        if method != "tools/call":
            return self.reply(200, answer({}))
        size = params["arguments"]["size"]
        head, tail = json.dumps(answer({"content": [{"type": "text", "text": ""}]})).split('""')
        if params["arguments"].get("json"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(head) + len(tail) + 2 + size))
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write((head + '"').encode())
                for _ in range(size >> 20):
                    self.wfile.write(b"x" * (1 << 20))
                self.wfile.write(('"' + tail).encode())
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(("event: message\ndata: " + head + '"').encode())
            for _ in range(size >> 20):
                self.wfile.write(b"x" * (1 << 20))
            self.wfile.write(b"x" * (size & ((1 << 20) - 1)))
            self.wfile.write(('"' + tail + "\n\n").encode())
        except (BrokenPipeError, ConnectionResetError):
            pass

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// [`PYTHON_HTTP_SERVER`] on `port` (0 picks one), and the port.
async fn python_http_server(port: u16) -> (tokio::process::Child, u16) {
    let mut server = tokio::process::Command::new("python3")
        .arg("-c")
        .arg(PYTHON_HTTP_SERVER)
        .arg(port.to_string())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 starts");
    let mut line = String::new();
    tokio::io::BufReader::new(server.stdout.take().expect("its stdout"))
        .read_line(&mut line)
        .await
        .expect("the port");
    (server, line.trim().parse().expect("a port"))
}

/// How long one call of the HTTP test may take, however loaded the machine.
const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_message_over_the_limit_over_http_is_named_and_the_next_call_goes_through_even_after_a_restart()
 {
    let _alone = measured().await;
    let (mut server, port) = python_http_server(0).await;
    let client = McpClient::builder("remote")
        .timeout(Duration::from_secs(30))
        .http(format!("http://127.0.0.1:{port}/mcp"))
        .await
        .expect("the client connects");
    let echo = client.tools().pop().expect("echo");

    let (peak, started) = (peak_rss(), Instant::now());
    let event = run(echo.as_ref(), json!({"size": 200 << 20}), LIMIT).await;
    let event_took = started.elapsed();
    let after_event = run(echo.as_ref(), json!({"size": 5}), LIMIT).await;
    let started = Instant::now();
    let body = run(
        echo.as_ref(),
        json!({"size": 200 << 20, "json": true}),
        LIMIT,
    )
    .await;
    let body_took = started.elapsed();
    let after_body = run(echo.as_ref(), json!({"size": 3}), LIMIT).await;
    let grown = peak_rss().saturating_sub(peak);
    // The server restarts, its sessions forgotten: the next call opens a new one.
    let _ = server.kill().await;
    let down = run(echo.as_ref(), json!({"size": 1}), LIMIT).await;
    let (mut server, _) = python_http_server(port).await;
    let after_restart = run(echo.as_ref(), json!({"size": 4}), LIMIT).await;
    eprintln!(
        "200 MB SSE event: {:?} after {event_took:?}; 200 MB JSON body: {:?} after \
         {body_took:?}; peak +{} MB; connected: {}",
        event.text_content(),
        body.text_content(),
        grown / MB,
        client.is_connected()
    );
    eprintln!("server down: {:?}", down.text_content());
    let connected = client.is_connected();
    client.close().await;
    let _ = server.kill().await;
    let failed = |result: &ToolResult| (result.is_error, result.text_content());
    let too_large = |what: &str| {
        format!(
            "MCP tool remote/echo failed: the server sent {what} larger than 16 MiB, the most \
             the connection takes in one message"
        )
    };
    assert_eq!(failed(&event), (true, too_large("an SSE event")));
    assert_eq!(failed(&after_event), (false, "xxxxx".to_owned()));
    assert_eq!(failed(&body), (true, too_large("a message")));
    assert_eq!(failed(&after_body), (false, "xxx".to_owned()));
    assert!(down.is_error, "{}", down.text_content());
    assert_eq!(failed(&after_restart), (false, "xxxx".to_owned()));
    assert!(connected);
    assert!(event_took < Duration::from_secs(20), "took {event_took:?}");
    assert!(body_took < Duration::from_secs(20), "took {body_took:?}");
    assert!(grown < 100 * MB, "peak memory grew by {} MB", grown / MB);
}
