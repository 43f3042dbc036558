//! Execution policies over MCP: an `McpServer` given an agent's policies
//! (`with_tool_policies(agent.tool_policies())`) runs each call as the agent runs it (the
//! tool's timeout and output cap, the agent's default timeout and output saver, the named
//! concurrency limits shared with the agent's own calls), and a server without them still
//! holds a named limit across its calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::agent::Agent;
use pi_runtime::mcp::{HttpServing, McpClient, McpHttpServer, McpServer};
use pi_runtime::provider::faux::FauxModel;
use pi_runtime::tool::{TempFileSaver, ToolPolicy};
use pi_runtime::{FnTool, State, ToolCall, ToolContext, ToolError, ToolResult, ToolSet, tool};
use serde_json::json;

use crate::blocking_support::{Blocking, ON_TIME};

/// Waits until told to stop.
#[tool(timeout = "50ms")]
async fn nap(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "woke up".to_owned()
}

/// Dumps 500 numbered lines.
#[tool(max_output = "1KiB")]
async fn dump() -> String {
    (0..500).map(|i| format!("line {i:04}\n")).collect()
}

/// Waits until told to stop; no policy of its own.
fn idle() -> FnTool {
    FnTool::new(
        "idle",
        "Waits.",
        json!({"type": "object"}),
        |_, ctx| async move {
            ctx.signal().cancelled().await;
            Ok::<_, ToolError>(ToolResult::text("stopped"))
        },
    )
}

#[derive(Default)]
struct Gauge {
    running: AtomicUsize,
    most: AtomicUsize,
}

/// Holds the database for 50 ms.
#[tool(concurrency = "db:1", timeout = "10s")]
async fn query(State(gauge): State<Arc<Gauge>>) -> String {
    let now = gauge.running.fetch_add(1, Ordering::SeqCst) + 1;
    gauge.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    gauge.running.fetch_sub(1, Ordering::SeqCst);
    "done".to_owned()
}

async fn serve(server: McpServer) -> (McpHttpServer, McpClient) {
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let client = McpClient::builder("db")
        .timeout(Duration::from_secs(30))
        .http(http.url())
        .await
        .expect("the client connects");
    (http, client)
}

/// `(is_error, text)` of one call of `tool` through `client`.
async fn through_mcp(client: &McpClient, tool: &str) -> (bool, String) {
    let name = format!("mcp__db__{tool}");
    let tool = (client.tools().into_iter())
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    match tool
        .execute("c1".into(), json!({}), ToolContext::detached("c1"))
        .await
    {
        Ok(result) => (result.is_error, result.text_content()),
        Err(error) => (true, error.into_message()),
    }
}

/// `(is_error, text)` of one call of `tool` by `agent`.
async fn in_the_agent(agent: &Agent, tool: &str) -> (bool, String) {
    let result = agent
        .run_tool_call(ToolCall::new("c1", tool, json!({})))
        .await;
    (result.is_error, result.text_content())
}

/// The `[Full output: PATH ...]` path of a cut text.
fn saved_path(text: &str) -> &str {
    let start = text.rfind("[Full output: ").expect("a saved output") + "[Full output: ".len();
    let end = text[start..].find(" (read it").expect("the hint") + start;
    &text[start..end]
}

fn tools(gauge: &Arc<Gauge>) -> impl ToolSet + use<> {
    (Nap, Dump, idle(), Query::new(Arc::clone(gauge)))
}

#[tokio::test]
async fn a_server_with_the_agents_policies_runs_calls_as_the_agent_does() {
    let outputs = tempfile::tempdir().expect("a temp dir");
    let gauge = Arc::new(Gauge::default());
    let agent = Agent::builder()
        .model(FauxModel::new())
        .tools(tools(&gauge))
        .tool_policy(ToolPolicy::new().with_timeout(Duration::from_millis(20)))
        .output_saver(TempFileSaver::in_dir(outputs.path()))
        .build()
        .expect("the agent builds");
    let server = McpServer::new(tools(&gauge))
        .expect("tools register")
        .with_tool_policies(agent.tool_policies());
    let (http, client) = serve(server).await;

    // The tool's own timeout, and the agent's default for the tool without one.
    for (tool, text) in [
        (
            "nap",
            "Tool \"nap\" timed out after 50ms and was told to stop; it ended afterwards, so its work may be done. It returned:\nwoke up",
        ),
        (
            "idle",
            "Tool \"idle\" timed out after 20ms and was told to stop; it ended afterwards, so its work may be done. It returned:\nstopped",
        ),
    ] {
        let expected = (true, text.to_owned());
        assert_eq!(in_the_agent(&agent, tool).await, expected, "{tool}");
        assert_eq!(through_mcp(&client, tool).await, expected, "{tool}");
    }

    // The tool's output cap, the full text saved where the agent saves it.
    let full: String = (0..500).map(|i| format!("line {i:04}\n")).collect();
    let cut = |path: &str| {
        format!(
            "Warning: truncated output (original token count: 1250)\nTotal output lines: 500\n\n\
             {}…3976 chars truncated…{}\n\n[Full output: {path} (read it with offset/limit)]",
            &full[..512],
            &full[4488..],
        )
    };
    for (is_error, text) in [
        in_the_agent(&agent, "dump").await,
        through_mcp(&client, "dump").await,
    ] {
        let path = saved_path(&text);
        assert_eq!((is_error, text.as_str()), (false, cut(path).as_str()));
        assert!(
            std::path::Path::new(path).starts_with(outputs.path()),
            "{path}"
        );
        assert_eq!(std::fs::read_to_string(path).expect("the saved text"), full);
    }

    // `db:1` is one permit for the agent's calls and the served ones together.
    let started = Instant::now();
    let (served, own) = futures::join!(
        futures::future::join_all((0..2).map(|_| through_mcp(&client, "query"))),
        futures::future::join_all((0..2).map(|_| in_the_agent(&agent, "query"))),
    );
    let elapsed = started.elapsed();
    assert!(
        served
            .iter()
            .chain(&own)
            .all(|r| *r == (false, "done".to_owned())),
        "{served:?} {own:?}"
    );
    assert_eq!(gauge.most.load(Ordering::SeqCst), 1);
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    client.close().await;
    http.shutdown().await;
}

#[tokio::test]
async fn without_an_agent_a_tool_keeps_its_own_policy() {
    let gauge = Arc::new(Gauge::default());
    let (http, client) = serve(McpServer::new(tools(&gauge)).expect("tools register")).await;
    assert_eq!(
        through_mcp(&client, "nap").await,
        (
            true,
            "Tool \"nap\" timed out after 50ms and was told to stop; it ended afterwards, so its work may be done. It returned:\nwoke up".to_owned()
        )
    );
    // No default timeout: the call runs until it is cancelled.
    let idle = tokio::time::timeout(Duration::from_millis(300), through_mcp(&client, "idle")).await;
    assert!(idle.is_err(), "{idle:?}");
    // The named limit holds across the server's calls.
    let calls = futures::future::join_all((0..3).map(|_| through_mcp(&client, "query"))).await;
    assert!(
        calls.iter().all(|r| *r == (false, "done".to_owned())),
        "{calls:?}"
    );
    assert_eq!(gauge.most.load(Ordering::SeqCst), 1);
    client.close().await;
    http.shutdown().await;
}

/// Seen before the fix: a served call of a tool that blocks its thread held the server's
/// runtime (and the timer of its time limit) for the whole block.
#[tokio::test]
async fn a_served_call_of_a_tool_that_blocks_its_thread_times_out_on_time() {
    let blocking = Blocking::default();
    let server = McpServer::new((blocking.tool("blocker"),)).expect("tools register");
    let (http, client) = serve(server).await;
    let started = Instant::now();
    let result = through_mcp(&client, "blocker").await;
    let elapsed = started.elapsed();
    assert_eq!(
        result,
        (
            true,
            "Tool \"blocker\" timed out after 200ms, and it did not finish within 1s of being told to stop; it may still be running, so its work may yet be done".to_owned()
        )
    );
    assert_eq!(blocking.blocking(), 1, "the call's thread still blocks");
    blocking.release().await;
    client.close().await;
    http.shutdown().await;
    assert!(elapsed < ON_TIME, "{elapsed:?}");
}
