//! Our MCP client against our MCP server over streamable HTTP on loopback: listing, the same
//! texts through MCP as directly, errors, panics, progress, cancellation, sequential tools
//! and a server that goes away.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pi_runtime::agent::Agent;
use pi_runtime::mcp::{HttpServing, McpClient, McpHttpServer, McpServer};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{TempFileSaver, ToolHints};
use pi_runtime::{
    AgentTool, FnTool, Json, Message, State, ToolContext, ToolError, ToolResult, ToolSet, tool,
    tool_args,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> String {
    (a + b).to_string()
}

/// The sum of two numbers.
#[tool_args(serialize)]
struct Total {
    /// a + b
    total: f64,
}

/// Add two numbers, as JSON.
#[tool]
async fn sum(a: f64, b: f64) -> Json<Total> {
    Json(Total { total: a + b })
}

/// Always fails with the given reason.
#[tool]
async fn fail(reason: String) -> Result<String, ToolError> {
    Err(ToolError::new(reason))
}

/// Panics.
#[tool]
async fn boom() -> String {
    panic!("kaboom")
}

/// Reports progress, then waits for cancellation (or ten seconds).
#[tool]
async fn slow(State(cancelled): State<Arc<AtomicBool>>, ctx: ToolContext) -> String {
    ctx.update(ToolResult::text("step 1"));
    ctx.update(ToolResult::text("step 2"));
    tokio::select! {
        () = ctx.signal().cancelled() => {
            cancelled.store(true, Ordering::SeqCst);
            "cancelled".to_owned()
        }
        () = tokio::time::sleep(Duration::from_secs(10)) => "done".to_owned(),
    }
}

/// Ticks `ticks` times, `ms` apart, reporting progress at each tick when `progress`.
#[tool]
async fn ticker(ms: u64, ticks: u32, progress: bool, ctx: ToolContext) -> String {
    for tick in 1..=ticks {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        if progress {
            ctx.update(ToolResult::text(format!("tick {tick}")));
        }
    }
    format!("{ticks} ticks")
}

/// Prints `lines` numbered lines.
#[tool]
async fn long_output(lines: u32) -> String {
    (1..=lines).map(|n| format!("line {n:05}\n")).collect()
}

#[derive(Default)]
struct Concurrency {
    running: AtomicUsize,
    most: AtomicUsize,
}

/// Runs alone.
#[tool(mode = "sequential")]
async fn exclusive(State(seen): State<Arc<Concurrency>>) -> String {
    let now = seen.running.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    seen.running.fetch_sub(1, Ordering::SeqCst);
    "ok".to_owned()
}

struct Fixture {
    http: McpHttpServer,
    client: McpClient,
    cancelled: Arc<AtomicBool>,
    concurrency: Arc<Concurrency>,
    outputs: tempfile::TempDir,
}

/// The client's timeout in every test but the one about it: no call here comes near it,
/// however loaded the machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

async fn fixture() -> Fixture {
    fixture_with_timeout(CALL_TIMEOUT).await
}

async fn fixture_with_timeout(timeout: Duration) -> Fixture {
    let cancelled = Arc::new(AtomicBool::new(false));
    let concurrency = Arc::new(Concurrency::default());
    let server = McpServer::new((
        Add,
        Sum,
        Fail,
        Boom,
        Slow::new(Arc::clone(&cancelled)),
        Exclusive::new(Arc::clone(&concurrency)),
        Ticker,
        LongOutput,
    ))
    .expect("tools register")
    .with_hints("add", ToolHints::new().read_only(true))
    // Three pages of three, three and two: the client follows the cursors.
    .with_page_size(3);
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = McpClient::builder("local")
        .timeout(timeout)
        .output_saver(TempFileSaver::in_dir(dir.path()))
        .http(http.url())
        .await
        .expect("the client connects");
    Fixture {
        http,
        client,
        cancelled,
        concurrency,
        outputs: dir,
    }
}

fn tool_of(client: &McpClient, name: &str) -> Arc<dyn pi_runtime::ToolDefinition> {
    client
        .tools()
        .into_iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The text of every tool result of a faux run that calls `name` once with `args`.
async fn run_once(tools: impl ToolSet, name: &str, args: Value) -> (bool, String) {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", name, args))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .build()
        .expect("the agent builds");
    let messages = agent.prompt("go").await.expect("the run ends");
    messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .expect("one tool result")
}

#[tokio::test]
async fn tools_list_gives_names_schemas_output_schema_and_hints() {
    let f = fixture().await;
    let server = McpServer::new((Add, Sum)).expect("tools register");
    let listed = server.listed_tools();
    assert_eq!(listed[0]["name"], "add");
    assert_eq!(listed[0]["description"], "Add two numbers.");
    assert_eq!(listed[0]["inputSchema"], *Add.definition().parameters);
    assert!(listed[0].get("outputSchema").is_none());
    assert_eq!(
        listed[1]["outputSchema"],
        json!({
            "type": "object",
            "properties": {"total": {"type": "number", "description": "a + b"}},
            "required": ["total"]
        })
    );

    let definitions = f.client.definitions();
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp__local__add",
            "mcp__local__sum",
            "mcp__local__fail",
            "mcp__local__boom",
            "mcp__local__slow",
            "mcp__local__exclusive",
            "mcp__local__ticker",
            "mcp__local__long_output"
        ]
    );
    assert_eq!(definitions[0].label, "local/add");
    assert_eq!(definitions[0].parameters, *Add.definition().parameters);
    assert_eq!(
        definitions[0].annotations,
        Some(ToolHints::new().read_only(true))
    );
    assert_eq!(
        definitions[1].output_schema["properties"]["structuredContent"]["properties"]["total"],
        json!({"type": "number", "description": "a + b"})
    );
    f.http.shutdown().await;
}

/// A tool named `name` that answers `ok`, with these hints.
fn hinted(name: &str, hints: ToolHints) -> FnTool {
    FnTool::new(name, "A tool.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(ToolResult::text("ok"))
    })
    .with_hints(hints)
}

/// `(name, annotations)` of every listed tool.
fn annotations(server: &McpServer) -> Vec<(String, Option<Value>)> {
    (server.listed_tools().iter())
        .map(|tool| {
            (
                tool["name"].as_str().unwrap_or_default().to_owned(),
                tool.get("annotations").cloned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn listed_hints_are_the_tools_own_unless_the_server_gives_others() {
    let server = McpServer::new((
        hinted(
            "drop_table",
            ToolHints::new().destructive(true).open_world(false),
        )
        .with_label("Drop a table"),
        hinted("lookup", ToolHints::new().read_only(true)),
        hinted("plain", ToolHints::new()),
    ))
    .expect("tools register");
    let own = |name: &str, annotations: Option<Value>| (name.to_owned(), annotations);
    assert_eq!(
        annotations(&server),
        [
            own(
                "drop_table",
                Some(
                    json!({"title": "Drop a table", "destructiveHint": true, "openWorldHint": false})
                )
            ),
            own("lookup", Some(json!({"readOnlyHint": true}))),
            own("plain", None),
        ]
    );
    assert_eq!(server.listed_tools()[0]["title"], "Drop a table");

    // The server's hints for a tool replace the tool's own; the title stays.
    let server = server
        .with_hints("drop_table", ToolHints::new().idempotent(true))
        .with_hints("plain", ToolHints::new().read_only(true))
        .with_hints("lookup", ToolHints::new());
    assert_eq!(
        annotations(&server),
        [
            own(
                "drop_table",
                Some(json!({"title": "Drop a table", "idempotentHint": true}))
            ),
            own("lookup", None),
            own("plain", Some(json!({"readOnlyHint": true}))),
        ]
    );

    // A client reads them back as the tools' hints.
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let client = McpClient::builder("hinted")
        .http(http.url())
        .await
        .expect("the client connects");
    let hints: Vec<ToolHints> = client
        .tools()
        .iter()
        .map(|tool| tool.settings().hints)
        .collect();
    assert_eq!(
        hints,
        [
            ToolHints::new().idempotent(true),
            ToolHints::new(),
            ToolHints::new().read_only(true),
        ]
    );
    client.close().await;
    http.shutdown().await;
}

#[tokio::test]
async fn a_tool_through_mcp_gives_the_model_the_same_text_as_directly() {
    let f = fixture().await;
    let cases = [
        json!({"a": 1, "b": 2}),
        json!({"a": "1.5", "b": 2}),
        json!({"a": 1, "b": "x"}),
        json!({"a": 1}),
        json!({"a": 1, "b": 2, "c": 3}),
    ];
    for args in cases {
        let direct = run_once(Add, "add", args.clone()).await;
        let through = run_once(f.client.clone(), "mcp__local__add", args.clone()).await;
        let expected = (
            direct.0,
            direct.1.replace("tool \"add\"", "tool \"mcp__local__add\""),
        );
        assert_eq!(through, expected, "arguments {args}");
    }
    // The server validates too, with the tool's own name, when a client sends arguments
    // unchecked.
    let add = tool_of(&f.client, "mcp__local__add");
    let unchecked = add
        .execute(
            "c1".into(),
            json!({"a": 1, "b": "x"}),
            ToolContext::detached("c1"),
        )
        .await
        .expect("a result");
    let direct = run_once(Add, "add", json!({"a": 1, "b": "x"})).await;
    assert!(unchecked.is_error);
    assert_eq!(unchecked.text_content(), direct.1);
    f.http.shutdown().await;
}

#[tokio::test]
async fn errors_panics_and_json_results_read_the_same_through_mcp() {
    let f = fixture().await;
    for (tool, name, args) in [
        (
            Arc::new(Fail) as Arc<dyn pi_runtime::ToolDefinition>,
            "fail",
            json!({"reason": "no disk"}),
        ),
        (Arc::new(Boom), "boom", json!({})),
        (Arc::new(Sum), "sum", json!({"a": 1, "b": 2})),
    ] {
        let direct = run_once(vec![tool], name, args.clone()).await;
        let through = run_once(f.client.clone(), &format!("mcp__local__{name}"), args).await;
        assert_eq!(through, direct, "tool {name}");
    }
    f.http.shutdown().await;
}

#[tokio::test]
async fn progress_becomes_updates_and_cancellation_reaches_the_tool() {
    let f = fixture().await;
    let slow = tool_of(&f.client, "mcp__local__slow");
    let (tx, mut rx) = futures::channel::mpsc::unbounded();
    let signal = CancellationToken::new();
    let ctx = ToolContext::new("c1", signal.clone()).on_update(move |update| {
        let _ = tx.unbounded_send(update);
    });
    let call = tokio::spawn(async move { slow.execute("c1".into(), json!({}), ctx).await });
    let mut updates = Vec::new();
    while updates.len() < 2 {
        let update =
            tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut rx))
                .await
                .expect("progress arrives")
                .expect("an update");
        updates.push(update.text_content());
    }
    assert_eq!(updates, ["step 1", "step 2"]);
    signal.cancel();
    let result = call.await.expect("the call task").expect("a result");
    assert!(result.is_error);
    assert_eq!(result.text_content(), "Operation aborted");
    // Up to 30 s for a loaded machine; the loop ends as soon as the tool has seen it.
    for _ in 0..1500 {
        if f.cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        f.cancelled.load(Ordering::SeqCst),
        "the tool saw the cancellation"
    );
    f.http.shutdown().await;
}

#[tokio::test]
async fn sequential_tools_run_one_at_a_time_across_requests() {
    let f = fixture().await;
    let exclusive = tool_of(&f.client, "mcp__local__exclusive");
    let calls = (0..4).map(|i| {
        let tool = Arc::clone(&exclusive);
        async move {
            tool.execute(format!("c{i}"), json!({}), ToolContext::detached("c"))
                .await
                .expect("a result")
        }
    });
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|r| r.text_content() == "ok"));
    assert_eq!(f.concurrency.most.load(Ordering::SeqCst), 1);
    f.http.shutdown().await;
}

#[tokio::test]
async fn a_server_that_goes_away_fails_its_tools_without_hanging() {
    let f = fixture().await;
    let add = tool_of(&f.client, "mcp__local__add");
    f.http.shutdown().await;
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        add.execute(
            "c1".into(),
            json!({"a": 1, "b": 2}),
            ToolContext::detached("c1"),
        ),
    )
    .await
    .expect("no hang")
    .expect("a result");
    assert!(result.is_error, "{}", result.text_content());
    assert!(
        result
            .text_content()
            .starts_with("MCP tool local/add failed"),
        "{}",
        result.text_content()
    );
    assert_eq!(
        result.details,
        Some(json!({"server": "local", "tool": "add"}))
    );
}

#[tokio::test]
async fn the_timeout_restarts_on_every_progress_notification() {
    let f = fixture_with_timeout(Duration::from_secs(3)).await;
    let ticker = tool_of(&f.client, "mcp__local__ticker");
    // 14 ticks of 250 ms: 3.5 s in all, but never 3 s without a notification, even one a
    // loaded machine delivers 2.5 s late.
    let (tx, _rx) = futures::channel::mpsc::unbounded();
    let ctx = ToolContext::new("c1", CancellationToken::new()).on_update(move |update| {
        let _ = tx.unbounded_send(update);
    });
    let result = ticker
        .execute(
            "c1".into(),
            json!({"ms": 250, "ticks": 14, "progress": true}),
            ctx,
        )
        .await
        .expect("a result");
    assert_eq!(
        (result.is_error, result.text_content()),
        (false, "14 ticks".to_owned())
    );
    // The same work without progress runs into the timeout.
    let result = ticker
        .execute(
            "c2".into(),
            json!({"ms": 250, "ticks": 14, "progress": false}),
            ToolContext::detached("c2"),
        )
        .await
        .expect("a result");
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "MCP tool local/ticker timed out: no answer or progress for 3.0 s"
    );
    f.http.shutdown().await;
}

#[tokio::test]
async fn output_over_20_kb_keeps_head_and_tail_and_saves_the_whole_text() {
    let f = fixture().await;
    let long = tool_of(&f.client, "mcp__local__long_output");
    let result = long
        .execute(
            "c1".into(),
            json!({"lines": 3000}),
            ToolContext::detached("c1"),
        )
        .await
        .expect("a result");
    let text = result.text_content();
    assert!(
        text.starts_with("Warning: truncated output (original token count: 8250)\nTotal output lines: 3000\n\nline 00001\n"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("chars truncated…"));
    let path = result
        .details
        .as_ref()
        .and_then(|d| d["fullOutputPath"].as_str())
        .expect("a saved file");
    assert!(
        path.starts_with(f.outputs.path().to_str().expect("a UTF-8 path")),
        "{path}"
    );
    assert!(text.ends_with(&format!(
        "line 03000\n\n\n[Full output: {path} (read it with offset/limit)]"
    )));
    let saved = std::fs::read_to_string(path).expect("the saved output");
    assert_eq!(saved.len(), 33_000);
    f.http.shutdown().await;
}

#[tokio::test]
async fn the_server_runs_the_agents_tool_hooks() {
    // The agent's permission rule: no adding 13, and every result is signed.
    let agent = Agent::builder()
        .model(FauxModel::new())
        .tools(Add)
        .before_tool_call(|call| async move {
            Ok(if call.args["b"].as_f64() == Some(13.0) {
                pi_runtime::agent::ToolCallDecision::block("13 is unlucky")
            } else {
                pi_runtime::agent::ToolCallDecision::Allow
            })
        })
        .after_tool_call(|call| async move {
            assert!(
                call.assistant_message.is_none(),
                "no response behind an MCP call"
            );
            let text = format!("{} (checked)", call.result.text_content());
            Ok(pi_runtime::agent::ToolResultPatch::new()
                .content(vec![pi_runtime::ContentBlock::text(text)]))
        })
        .build()
        .expect("the agent builds");
    let server = McpServer::new(Add)
        .expect("tools register")
        .with_hooks(agent.hooks());
    let http = server
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let client = McpClient::builder("hooked")
        .http(http.url())
        .await
        .expect("the client connects");
    let add = tool_of(&client, "mcp__hooked__add");
    let allowed = add
        .execute(
            "c1".into(),
            json!({"a": 1, "b": 2}),
            ToolContext::detached("c1"),
        )
        .await
        .expect("a result");
    assert_eq!(
        (allowed.is_error, allowed.text_content()),
        (false, "3 (checked)".to_owned())
    );
    let blocked = add
        .execute(
            "c2".into(),
            json!({"a": 1, "b": 13}),
            ToolContext::detached("c2"),
        )
        .await;
    let text = match blocked {
        Ok(result) => (result.is_error, result.text_content()),
        Err(error) => (true, error.into_message()),
    };
    assert_eq!(text, (true, "13 is unlucky".to_owned()));
    client.close().await;
    http.shutdown().await;
}
