//! MCP with code nobody here wrote, and our own client against our own server over stdio.
//!
//! - The official Python SDK (PyPI `mcp`, pinned in `.ci/run`) is the client of
//!   `examples/mcp_server.rs`, over stdio and over streamable HTTP on loopback.
//! - The agent, on the faux model, uses `@modelcontextprotocol/server-everything` (npm,
//!   pinned in `.ci/run`) through our client: a plain call, a call with progress, an error
//!   result, and a server killed mid-call.
//! - Our client starts `examples/mcp_server.rs` over stdio and kills it when dropped.
//! - The Python SDK approves and denies the calls of our served tool that needs approval, on
//!   both revisions; an agent authorizes with a Python SDK server that is its own OAuth
//!   authorization server, and refreshes its token when it expires.
//!
//! The tests that need a peer are `#[ignore]`d, so a plain `cargo test --workspace` does not
//! count them as passed. `.ci/run` installs the SDK into a virtual environment and the
//! server into `target/`, points `PI_MCP_PYTHON` and `PI_MCP_EVERYTHING` at them, and runs
//! them with `cargo test -p pi-tests --test mcp_interop -- --include-ignored`. Asked to run
//! without its peer, a test prints why and skips; under CI (`CI` set) it fails instead.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pi_runtime::agent::{Agent, AgentEvent, validate_tool_call};
use pi_runtime::mcp::{HttpServing, McpClient, McpServer};
use pi_runtime::message::SystemMessage;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::TempFileSaver;
use pi_runtime::{Message, Tool, ToolCall, tool};
use serde_json::{Value, json};

mod support;
use support::{Killed, Nginx, example_binary, free_port, installed, installed_dir};

/// The built `mcp_server` example.
fn server_binary() -> PathBuf {
    example_binary("mcp_server")
}

fn project_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("hello.txt"), "hello from a file\n").expect("a file");
    dir
}

/// Run the Python client; its report and its standard error.
fn python_client(python: &Path, args: &[&str]) -> (Value, String) {
    python_script(python, "python_client.py", args)
}

/// Run a Python script of `tests/mcp/`; its JSON report and its standard error.
fn python_script(python: &Path, name: &str, args: &[&str]) -> (Value, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp").join(name);
    let output = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("python starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "the Python client failed: {}\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    let report = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("the Python client printed no report ({error}): {stdout}\nstderr: {stderr}")
    });
    (report, stderr)
}

/// What every Python run must show, whatever the transport.
fn check_python_report(report: &Value) {
    let tools = report["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read", "write", "edit", "bash", "countdown"]);
    let read = &tools[0];
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    let countdown = &tools[4];
    assert_eq!(
        countdown["inputSchema"]["properties"]["seconds"]["type"],
        "number"
    );
    assert_eq!(countdown["inputSchema"]["required"], json!(["seconds"]));

    assert_eq!(report["read"]["isError"], false, "{report}");
    let read_text = report["read"]["texts"][0].as_str().unwrap_or_default();
    assert!(read_text.contains("hello from a file"), "{read_text}");

    assert_eq!(report["valid"]["isError"], false, "{report}");
    assert_eq!(report["valid"]["texts"], json!(["counted down from 0.3 s"]));
    let messages: Vec<&str> = report["valid"]["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    assert_eq!(messages, ["0.2 s left", "0.1 s left", "0.0 s left"]);

    // Invalid arguments: our pipeline's exact text, as the agent loop would show the model.
    let schema = countdown["inputSchema"].clone();
    let call = ToolCall::new("c1", "countdown", json!({"seconds": "soon"}));
    let expected = validate_tool_call(&Tool::new("countdown", "", schema), &call)
        .expect_err("invalid")
        .into_message();
    assert!(expected.starts_with("Validation failed for tool \"countdown\""));
    assert_eq!(report["invalid"]["isError"], true);
    assert_eq!(report["invalid"]["texts"], json!([expected]));

    assert!(
        report["cancelled"]["progress"]
            .as_array()
            .expect("progress")
            .len()
            >= 2
    );
    assert_eq!(report["afterCancel"]["isError"], false, "{report}");
    assert_eq!(report["unknown"]["raised"], true, "{report}");
}

#[test]
#[ignore = "needs the Python MCP SDK: set PI_MCP_PYTHON (.ci/run installs it)"]
fn the_python_sdk_uses_our_server_over_stdio() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let binary = server_binary();
    let dir = project_dir();
    let dir_arg = dir.path().to_str().expect("a UTF-8 path");
    let bin_arg = binary.to_str().expect("a UTF-8 path");
    let (report, stderr) = python_client(&python, &["stdio", bin_arg, dir_arg]);
    check_python_report(&report);
    // The server's standard error reaches the SDK's: the tool saw the cancellation.
    assert!(
        stderr.contains("countdown: cancelled after"),
        "stderr: {stderr}"
    );
}

#[test]
#[ignore = "needs the Python MCP SDK: set PI_MCP_PYTHON (.ci/run installs it)"]
fn the_python_sdk_uses_our_server_over_http() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let dir = project_dir();
    let server = HttpServer::start(&dir, &[]);
    let (report, _) = python_client(&python, &["http", &server.url]);
    check_python_report(&report);
    let stderr = server.stop();
    assert!(
        stderr.contains("countdown: cancelled after"),
        "stderr: {stderr}"
    );
}

#[test]
#[ignore = "needs the Python MCP SDK: set PI_MCP_PYTHON (.ci/run installs it)"]
fn the_python_sdk_uses_our_server_with_a_bearer_token() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let dir = project_dir();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "# the Python client's\nc0ffee-0123456789abcdef\n").expect("written");
    let token_file = tokens.to_str().expect("a UTF-8 path");
    let server = HttpServer::start(&dir, &["--token-file", token_file]);

    let (report, _) = python_client(&python, &["http", &server.url, "c0ffee-0123456789abcdef"]);
    check_python_report(&report);

    // Without the token, or with another, the SDK is refused at `initialize` (it reports
    // the 401 as an internal error).
    for args in [
        vec!["http", &server.url],
        vec!["http", &server.url, "c0ffee-0123456789abcdeX"],
    ] {
        let (report, _) = python_client(&python, &args);
        assert_eq!(
            report,
            json!({"refused": {"type": "MCPError", "code": -32603,
                               "message": "Server returned an error response"}}),
            "{args:?}"
        );
    }
    let stderr = server.stop();
    assert!(
        stderr.contains("countdown: cancelled after"),
        "stderr: {stderr}"
    );
}

/// `examples/mcp_server` serving streamable HTTP on a loopback port, killed when dropped.
struct HttpServer {
    process: Killed,
    url: String,
}

impl HttpServer {
    fn start(dir: &tempfile::TempDir, args: &[&str]) -> HttpServer {
        let mut process = Killed(
            Command::new(server_binary())
                .args(["--http", "127.0.0.1:0", "--dir"])
                .arg(dir.path())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the server starts"),
        );
        let stdout = process.0.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server says where it listens");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        HttpServer { process, url }
    }

    /// Kill the server; what it wrote on standard error.
    fn stop(mut self) -> String {
        let mut stderr_pipe = self.process.0.stderr.take().expect("stderr");
        drop(self.process);
        let mut stderr = String::new();
        let _ = stderr_pipe.read_to_string(&mut stderr);
        stderr
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Whether a process is still there (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Wait for `pid` to be gone: up to 30 s, for a loaded machine; the wait ends as soon as it is.
fn wait_gone(pid: u32) {
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "process {pid} is still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The tool results of a finished run, by call id: (isError, text).
fn results(messages: &[Message]) -> BTreeMap<String, (bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.clone(), (r.is_error, r.text()))),
            _ => None,
        })
        .collect()
}

fn everything(node_script: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(node_script)
        .arg("stdio")
        // gzip-file-as-resource may fetch URLs: allow none beyond loopback.
        .env("GZIP_ALLOWED_DOMAINS", "localhost");
    command
}

#[test]
#[ignore = "needs @modelcontextprotocol/server-everything: set PI_MCP_EVERYTHING (.ci/run installs it)"]
fn the_agent_uses_server_everything_through_our_client() {
    let Some(script) = installed(
        "PI_MCP_EVERYTHING",
        "@modelcontextprotocol/server-everything",
    ) else {
        return;
    };
    let outputs = tempfile::tempdir().expect("a temp dir");
    runtime().block_on(async {
        let client = McpClient::builder("everything")
            .timeout(Duration::from_secs(30))
            .output_saver(TempFileSaver::in_dir(outputs.path()))
            .stdio(everything(&script))
            .await
            .expect("server-everything connects");
        let pid = client.process_id().expect("a child");
        let names = client.tool_names();
        assert!(names.contains(&"mcp__everything__echo".to_owned()), "{names:?}");
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "echo",
                "mcp__everything__echo",
                json!({"message": "hi from pi"}),
            ))
            .respond(FauxResponse::tool_call(
                "long",
                "mcp__everything__trigger_long_running_operation",
                json!({"duration": 1, "steps": 4}),
            ))
            .respond(FauxResponse::tool_call(
                "error",
                "mcp__everything__gzip_file_as_resource",
                json!({"name": "x.gz", "data": "ftp://localhost/x"}),
            ))
            .respond(FauxResponse::tool_call(
                "invalid",
                "mcp__everything__get_sum",
                json!({"a": 1, "b": "two"}),
            ))
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools(client.clone())
            .build()
            .expect("the agent builds");
        let updates = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&updates);
        agent.on_event(move |event| {
            if let AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } = &event
            {
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((tool_call_id.clone(), partial_result.text_content()));
            }
        });
        let messages = tokio::time::timeout(Duration::from_secs(60), agent.prompt("go"))
            .await
            .expect("the run ends")
            .expect("the run succeeds");
        let results = results(&messages);
        assert_eq!(results["echo"], (false, "Echo: hi from pi".to_owned()));
        assert!(!results["long"].0, "{:?}", results["long"]);
        let updates = updates.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let long_updates = updates.iter().filter(|(id, _)| id == "long").count();
        assert!(long_updates >= 3, "progress updates: {updates:?}");
        assert!(results["error"].0, "{:?}", results["error"]);
        assert!(
            results["error"].1.contains("Unsupported URL protocol"),
            "{:?}",
            results["error"]
        );
        // Our pipeline validated the arguments before anything was sent.
        assert!(results["invalid"].0);
        assert!(
            results["invalid"]
                .1
                .starts_with("Validation failed for tool \"mcp__everything__get_sum\":\n  - b: expected number, got string"),
            "{:?}",
            results["invalid"]
        );
        drop(agent);
        drop(client);
        wait_gone(pid);
    });
}

#[test]
#[ignore = "needs @modelcontextprotocol/server-everything: set PI_MCP_EVERYTHING (.ci/run installs it)"]
fn a_server_killed_mid_call_fails_its_tools_and_the_run_goes_on() {
    let Some(script) = installed(
        "PI_MCP_EVERYTHING",
        "@modelcontextprotocol/server-everything",
    ) else {
        return;
    };
    runtime().block_on(async {
        let client = McpClient::builder("everything")
            .timeout(Duration::from_secs(30))
            .stdio(everything(&script))
            .await
            .expect("server-everything connects");
        let pid = client.process_id().expect("a child");
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "long",
                "mcp__everything__trigger_long_running_operation",
                json!({"duration": 30, "steps": 30}),
            ))
            .respond(FauxResponse::tool_call(
                "after",
                "mcp__everything__echo",
                json!({"message": "still there?"}),
            ))
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools(&client)
            .build()
            .expect("the agent builds");
        agent.on_event(move |event| {
            if let AgentEvent::ToolExecutionUpdate { .. } = &event {
                // The first progress notification: the call is running; kill the server.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        });
        let started = Instant::now();
        let messages = tokio::time::timeout(Duration::from_secs(20), agent.prompt("go"))
            .await
            .expect("the run does not hang")
            .expect("the run succeeds");
        assert!(started.elapsed() < Duration::from_secs(20));
        let results = results(&messages);
        let (long_error, long_text) = &results["long"];
        assert!(*long_error, "{long_text}");
        assert!(
            long_text.starts_with("MCP tool everything/trigger-long-running-operation failed"),
            "{long_text}"
        );
        let (after_error, after_text) = &results["after"];
        assert!(*after_error, "{after_text}");
        assert!(
            after_text.starts_with("MCP server everything is not connected"),
            "{after_text}"
        );
        // What the server wrote to its standard error is for the program, not the model.
        let stderr = client.stderr_tail();
        assert!(
            !stderr.is_empty(),
            "server-everything logs its start to stderr"
        );
        for text in [long_text, after_text] {
            assert!(
                !text.contains(&stderr) && !text.contains("standard error"),
                "{text}"
            );
        }
        assert!(!client.is_connected());
        drop(agent);
        drop(client);
        wait_gone(pid);
    });
}

#[test]
fn our_client_uses_our_server_over_stdio_and_kills_it_when_dropped() {
    let binary = server_binary();
    let dir = project_dir();
    runtime().block_on(async {
        let mut command = tokio::process::Command::new(&binary);
        command.arg("--dir").arg(dir.path());
        let client = McpClient::builder("pi")
            .timeout(Duration::from_secs(30))
            .stdio(command)
            .await
            .expect("our server connects");
        let pid = client.process_id().expect("a child");
        assert_eq!(
            client.tool_names(),
            [
                "mcp__pi__read",
                "mcp__pi__write",
                "mcp__pi__edit",
                "mcp__pi__bash",
                "mcp__pi__countdown"
            ]
        );
        let schema = client.definitions()[4].parameters.clone();
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "read",
                "mcp__pi__read",
                json!({"path": "hello.txt"}),
            ))
            .respond(FauxResponse::tool_call(
                "invalid",
                "mcp__pi__countdown",
                json!({"seconds": "soon"}),
            ))
            .respond(FauxResponse::tool_call(
                "valid",
                "mcp__pi__countdown",
                json!({"seconds": "0.2"}),
            ))
            .respond(FauxResponse::text("done"));
        let agent = Agent::builder()
            .model(model)
            .tools(client.clone())
            .build()
            .expect("the agent builds");
        let messages = tokio::time::timeout(Duration::from_secs(30), agent.prompt("go"))
            .await
            .expect("the run ends")
            .expect("the run succeeds");
        let results = results(&messages);
        assert!(!results["read"].0);
        assert!(
            results["read"].1.contains("hello from a file"),
            "{:?}",
            results["read"]
        );
        let call = ToolCall::new("c", "mcp__pi__countdown", json!({"seconds": "soon"}));
        let expected = validate_tool_call(&Tool::new("mcp__pi__countdown", "", schema), &call)
            .expect_err("invalid")
            .into_message();
        assert_eq!(results["invalid"], (true, expected));
        // "0.2" was coerced to a number before it was sent.
        assert_eq!(
            results["valid"],
            (false, "counted down from 0.2 s".to_owned())
        );
        drop(agent);
        drop(client);
        wait_gone(pid);
    });
}

#[test]
fn the_coding_agent_adds_the_tools_of_mcp_and_mcp_url_servers() {
    let dir = project_dir();
    let server = server_binary();
    let mut http = Killed(
        Command::new(&server)
            .args(["--http", "127.0.0.1:0", "--dir"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts"),
    );
    let mut line = String::new();
    BufReader::new(http.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the server says where it listens");
    let url = line.trim().trim_start_matches("listening on ").to_owned();
    let stdio = format!("{} --dir {}", server.display(), dir.path().display());
    let mut agent = Command::new(example_binary("coding_agent"));
    agent
        .args(["--mcp", &stdio, "--mcp-url", &url])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in [
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
    ] {
        agent.env_remove(key);
    }
    let mut agent = agent.spawn().expect("the agent starts");
    if let Some(mut stdin) = agent.stdin.take() {
        use std::io::Write as _;
        stdin.write_all(b"exit\n").expect("stdin");
    }
    let output = agent.wait_with_output().expect("the agent exits");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dir_name = dir
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned();
    assert!(
        stdout.contains(&format!("MCP server {dir_name}: 5 tools")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("({url}): 5 tools")), "{stdout}");
    drop(http);
}

#[test]
#[ignore = "needs the Python MCP SDK: set PI_MCP_PYTHON (.ci/run installs it)"]
fn the_client_lists_again_when_the_server_says_its_tools_changed() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/changing_server.py");
    runtime().block_on(async {
        let mut command = tokio::process::Command::new(&python);
        command.arg(&script);
        let client = McpClient::builder("changing")
            .timeout(Duration::from_secs(30))
            .stdio(command)
            .await
            .expect("the Python server connects");
        let pid = client.process_id().expect("a child");
        assert_eq!(client.tool_names(), ["mcp__changing__add_second"]);
        let add = client.tools().remove(0);
        let result = add
            .execute(
                "c1".into(),
                json!({}),
                pi_runtime::ToolContext::detached("c1"),
            )
            .await
            .expect("a result");
        assert_eq!(result.text_content(), "added");
        // Up to 30 s, for a loaded machine; the wait ends as soon as the list is new.
        let start = Instant::now();
        while client.tool_names().len() < 2 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the list was not refreshed: {:?}",
                client.tool_names()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            client.tool_names(),
            ["mcp__changing__add_second", "mcp__changing__second"]
        );
        let second = client.tools().remove(1);
        let result = second
            .execute(
                "c2".into(),
                json!({"text": "hi"}),
                pi_runtime::ToolContext::detached("c2"),
            )
            .await
            .expect("a result");
        assert_eq!(result.text_content(), "second: hi");
        drop((add, second));
        drop(client);
        wait_gone(pid);
    });
}

#[test]
#[ignore = "needs the Python MCP SDK: set PI_MCP_PYTHON (.ci/run installs it)"]
fn a_built_agent_follows_the_servers_tool_list() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/changing_server.py");
    runtime().block_on(async {
        let mut command = tokio::process::Command::new(&python);
        command.arg(&script);
        let client = McpClient::builder("changing")
            .timeout(Duration::from_secs(30))
            .stdio(command)
            .await
            .expect("the Python server connects");
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "c1",
                "mcp__changing__add_second",
                json!({}),
            ))
            .respond(FauxResponse::text("added it"))
            .respond(FauxResponse::tool_call(
                "c2",
                "mcp__changing__second",
                json!({"text": "hi"}),
            ))
            .respond(FauxResponse::text("done"));
        let requests = model.clone();
        let agent = Agent::builder().model(model).build().expect("an agent");
        client
            .attach(&agent, None)
            .await
            .expect("the tools register");

        let first = agent.prompt("add a tool").await.expect("a run");
        assert_eq!(results(&first)["c1"], (false, "added".to_owned()));
        // The server announces the change before it answers `add_second`, so the new
        // listing lands either before the first run's next turn or while the agent waits
        // for the next prompt: the change is declared at whichever comes first.
        let start = Instant::now();
        while agent.tools().get("mcp__changing__second").is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the agent did not get the new tool: {:?}",
                agent.tools()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let second = agent.prompt("use it").await.expect("a run");
        let changes: Vec<&SystemMessage> = first
            .iter()
            .chain(&second)
            .filter_map(Message::as_system)
            .collect();
        let [change] = changes[..] else {
            panic!("one declared change, not {changes:?}");
        };
        let added: Vec<&str> = change.added().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(added, ["mcp__changing__second"]);
        assert!(change.tools_removed.is_none());
        let declared_at =
            |messages: &[Message]| messages.iter().position(|m| m.as_system().is_some());
        match (declared_at(&first), declared_at(&second)) {
            // Before the turn after the call that made the change...
            (Some(at), None) => assert!(
                first[..at]
                    .iter()
                    .any(|m| matches!(m, Message::ToolResult(_)))
            ),
            // ...or before the next prompt.
            (None, Some(at)) => assert_eq!(at, 0),
            other => panic!("the change declared at {other:?}"),
        }
        assert_eq!(results(&second)["c2"], (false, "second: hi".to_owned()));
        let declared: Vec<String> = requests.requests()[2]
            .current_tools()
            .into_iter()
            .map(|tool| tool.name)
            .collect();
        assert_eq!(
            declared,
            ["mcp__changing__add_second", "mcp__changing__second"]
        );
        let pid = client.process_id().expect("a child");
        drop((agent, client));
        wait_gone(pid);
    });
}

/// `examples/mcp_server` instances `a`, `b`, `c` on loopback, each told where the others
/// are, all taking `token`; and nginx in front of them, round robin without stickiness.
struct Balanced {
    instances: Vec<(String, Option<Killed>, Arc<Mutex<String>>)>,
    _nginx: Nginx,
    url: String,
    _dir: tempfile::TempDir,
}

const TOKEN: &str = "c0ffee-0123456789abcdef";

impl Balanced {
    fn start(nginx: &Path) -> Balanced {
        let dir = project_dir();
        let tokens = dir.path().join("tokens.txt");
        std::fs::write(&tokens, format!("{TOKEN}\n")).expect("written");
        let names = ["a", "b", "c"];
        let ports: Vec<u16> = names.iter().map(|_| free_port()).collect();
        let mut instances = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut command = Command::new(server_binary());
            command
                .args(["--http", &format!("127.0.0.1:{}", ports[i]), "--dir"])
                .arg(dir.path())
                .arg("--token-file")
                .arg(&tokens)
                .args(["--instance", name]);
            for (j, peer) in names.iter().enumerate() {
                if i != j {
                    command
                        .arg("--peer")
                        .arg(format!("{peer}=http://127.0.0.1:{}/mcp", ports[j]));
                }
            }
            let mut child = command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("an instance starts");
            let mut line = String::new();
            BufReader::new(child.stdout.take().expect("stdout"))
                .read_line(&mut line)
                .expect("the instance says where it listens");
            assert!(line.starts_with("listening on "), "{line}");
            // Its standard error, read as it comes (a full pipe would block it).
            let stderr = Arc::new(Mutex::new(String::new()));
            let mut pipe = child.stderr.take().expect("stderr");
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(&mut pipe).lines().map_while(Result::ok) {
                    let mut sink = sink.lock().unwrap_or_else(PoisonError::into_inner);
                    sink.push_str(&line);
                    sink.push('\n');
                }
            });
            instances.push(((*name).to_owned(), Some(Killed(child)), stderr));
        }
        let port = free_port();
        let upstreams: String = ports
            .iter()
            .map(|port| format!("server 127.0.0.1:{port};\n"))
            .collect();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "pid {dir}/nginx.pid;\nerror_log {dir}/error.log;\nevents {{}}\n\
                 http {{\n access_log off;\n client_body_temp_path {dir};\n\
                 upstream mcp {{\n{upstreams}}}\n\
                 server {{\n listen 127.0.0.1:{port};\n location / {{\n\
                 proxy_pass http://mcp;\n proxy_http_version 1.1;\n\
                 proxy_set_header Connection \"\";\n proxy_set_header Host $host:$server_port;\n\
                 proxy_buffering off;\n proxy_request_buffering off;\n\
                 proxy_read_timeout 300s;\n }}\n }}\n}}\n",
                dir = dir.path().display()
            ),
        )
        .expect("written");
        let nginx = Nginx(
            Command::new(nginx)
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .arg("-c")
                .arg(&conf)
                .args(["-g", "daemon off;"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("nginx starts"),
        );
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "nginx did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Balanced {
            instances,
            _nginx: nginx,
            url: format!("http://127.0.0.1:{port}/mcp"),
            _dir: dir,
        }
    }

    /// SIGKILL the instance `name`.
    fn kill(&mut self, name: &str) {
        for (instance, child, _) in &mut self.instances {
            if instance == name {
                drop(child.take());
            }
        }
    }

    fn stderr(&self) -> String {
        self.instances
            .iter()
            .map(|(_, _, stderr)| {
                stderr
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .collect()
    }
}

/// The TypeScript SDK client (`tests/mcp/ts_client.mjs`) with `args`.
fn ts_client(sdk: &Path, url: &str, args: &[&str]) -> Child {
    Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/ts_client.mjs"))
        .arg(sdk)
        .args([url, TOKEN])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts")
}

fn last_json_line(child: Child) -> Value {
    let output = child.wait_with_output().expect("the client ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

#[test]
#[ignore = "needs nginx and the MCP SDKs: set PI_NGINX, PI_MCP_TS_SDK, PI_MCP_PYTHON (.ci/run)"]
fn both_sdks_use_three_instances_behind_nginx() {
    let (Some(nginx), Some(sdk), Some(python)) = (
        installed("PI_NGINX", "nginx"),
        installed_dir("PI_MCP_TS_SDK", "the TypeScript MCP SDK"),
        installed("PI_MCP_PYTHON", "the Python MCP SDK"),
    ) else {
        return;
    };
    let balanced = Balanced::start(&nginx);
    let report = last_json_line(ts_client(&sdk, &balanced.url, &["calls", "4", "10"]));
    let clients = report["clients"].as_array().expect("clients");
    assert_eq!(clients.len(), 4);
    let mut holders = std::collections::BTreeSet::new();
    for client in clients {
        assert_eq!(client["ok"], 10, "{client}");
        assert_eq!(client["failed"], json!([]), "{client}");
        assert_eq!(
            client["tools"],
            json!(["read", "write", "edit", "bash", "countdown"])
        );
        let cancelled = &client["cancelled"];
        assert_eq!(
            cancelled["progress"].as_array().map(Vec::len),
            Some(2),
            "{client}"
        );
        assert!(
            cancelled["outcome"]
                .as_str()
                .is_some_and(|o| o.starts_with("rejected: ")),
            "{client}"
        );
        assert_eq!(
            client["afterCancel"],
            json!({"isError": false, "texts": ["counted down from 0.1 s"]})
        );
        holders.insert(client["sessionInstance"].as_str().unwrap_or("?").to_owned());
    }
    // Round robin spread the sessions, so calls were forwarded between instances.
    assert!(holders.len() >= 2, "{holders:?}");

    // The Python SDK speaks the 2026-07-28 revision, which has no sessions: any instance
    // answers any request.
    let (report, _) = python_client(&python, &["http", &balanced.url, TOKEN]);
    check_python_report(&report);
    assert_eq!(report["protocolVersion"], "2026-07-28");
    // Every cancellation reached the instance running the call.
    std::thread::sleep(Duration::from_millis(500));
    let stderr = balanced.stderr();
    let cancelled = stderr.matches("countdown: cancelled after").count();
    assert!(cancelled >= 5, "{cancelled} cancellations seen: {stderr}");
}

#[test]
#[ignore = "needs nginx and the MCP SDKs: set PI_NGINX, PI_MCP_TS_SDK (.ci/run)"]
fn killing_an_instance_behind_nginx_fails_only_its_calls() {
    let (Some(nginx), Some(sdk)) = (
        installed("PI_NGINX", "nginx"),
        installed_dir("PI_MCP_TS_SDK", "the TypeScript MCP SDK"),
    ) else {
        return;
    };
    let mut balanced = Balanced::start(&nginx);
    let mut client = ts_client(&sdk, &balanced.url, &["kill", "6"]);
    let mut stdout = BufReader::new(client.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the client reports");
    assert_eq!(line, "started\n");
    balanced.kill("b");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the report");
    let status = client.wait().expect("the client ends");
    assert!(status.success());
    let report: Value = serde_json::from_str(rest.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {rest}"));
    eprintln!("calls when b was killed: {report}");
    for call in report["calls"].as_array().expect("calls") {
        let outcome = call["outcome"].as_str().unwrap_or_default();
        let seconds = call["seconds"].as_f64().unwrap_or(f64::MAX);
        if call["instance"] == "b" {
            assert_eq!(
                outcome,
                "rejected: McpError: MCP error -32603: The server instance running this request \
                 stopped before it answered",
                "{call}"
            );
        } else {
            assert_eq!(outcome, "ok", "{call}");
        }
        // Each settles at once: the countdown takes 3 s, the client's timeout is 20 s.
        assert!(seconds < 10.0, "{call}");
    }
    // The cluster goes on without b.
    let report = last_json_line(ts_client(&sdk, &balanced.url, &["calls", "2", "4"]));
    for client in report["clients"].as_array().expect("clients") {
        assert_eq!(client["ok"], 4, "{client}");
    }
}

/// How often `transfer` ran.
static TRANSFERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Move money: every call needs a person's approval.
#[tool(approval = "always")]
async fn transfer(n: i64) -> String {
    TRANSFERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("moved {n}")
}

#[test]
#[ignore = "needs the Python MCP SDK (PI_MCP_PYTHON)"]
fn a_served_tool_that_needs_approval_asks_the_python_client_and_runs_once_per_approval() {
    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let runtime = runtime();
    let http = runtime
        .block_on(async {
            let server = McpServer::new((Transfer,)).expect("the tool registers");
            let addr = "127.0.0.1:0".parse().expect("an address");
            server.serve_http(addr, HttpServing::default()).await
        })
        .expect("the server starts");
    let (report, stderr) = python_script(&python, "approval_client.py", &[&http.url(), "transfer"]);
    let ran = json!({"isError": false, "texts": ["moved 7"]});
    let declined = json!({"isError": true, "texts": ["Tool call denied: the user declined"]});
    let asked = json!({"inputRequired": ["approval"], "state": true});
    let error = |step: &str| {
        report[step]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    // 2025-11-25: asked over the connection, once per call.
    assert_eq!(report["legacyProtocol"], "2025-11-25", "{report}");
    assert_eq!(report["legacyApproved"], ran);
    assert_eq!(report["legacyDeclined"], declined);
    let question = "The tool \"transfer\" needs approval (`transfer` always needs approval). \
                    Allow this call?\nArguments: {\"n\":7}";
    assert_eq!(report["legacyAsked"], json!([question, question]));

    // 2026-07-28: asked in the result; an answer counts only with the question's state.
    assert_eq!(report["asked"], asked);
    assert_eq!(
        report["preAnswered"], asked,
        "an answer before the question runs nothing"
    );
    assert!(
        error("tampered").contains("requestState is not one this server sealed"),
        "{report}"
    );
    assert_eq!(report["denied"], declined);
    assert_eq!(report["approved"], ran);
    assert!(error("replayed").contains("already resumed"), "{report}");
    let raced = report["raced"].as_array().expect("two answers");
    let ran_once = raced.iter().filter(|got| **got == ran).count();
    let refused = raced
        .iter()
        .filter(|got| {
            got["error"]
                .as_str()
                .is_some_and(|e| e.contains("already resumed"))
        })
        .count();
    assert_eq!((ran_once, refused), (1, 1), "{report}\n{stderr}");

    // Once per approval: the legacy one, the approved state, and one of the two racing.
    assert_eq!(TRANSFERS.load(std::sync::atomic::Ordering::SeqCst), 3);
    runtime.block_on(http.shutdown());
}

/// What a person signing in would end on: the `Location` the authorization endpoint (which
/// approves at once) redirects to.
async fn follow_to_redirect(url: String) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let response = http.get(&url).send().await.map_err(|e| e.to_string())?;
    let location = response
        .headers()
        .get("location")
        .ok_or("no Location header")?;
    location
        .to_str()
        .map(str::to_owned)
        .map_err(|e| e.to_string())
}

#[test]
#[ignore = "needs the Python MCP SDK (PI_MCP_PYTHON)"]
fn an_agent_authorizes_with_the_python_sdks_oauth_server_and_refreshes_its_token() {
    use pi_runtime::mcp::oauth::OAuth;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let Some(python) = installed("PI_MCP_PYTHON", "the Python MCP SDK") else {
        return;
    };
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/oauth_server.py");
    // Access tokens live two seconds.
    let server = Command::new(&python)
        .arg(script)
        .args([port.to_string(), "2".to_owned()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let _server = Killed(server);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let runtime = runtime();
    runtime.block_on(async {
        let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-authorization-server");
        let started = Instant::now();
        while reqwest::get(&metadata).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the server did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let sign_ins = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&sign_ins);
        let oauth = OAuth::new("http://127.0.0.1:8765/callback", move |authorization_url| {
            counted.fetch_add(1, Ordering::SeqCst);
            follow_to_redirect(authorization_url)
        });
        let client = McpClient::builder("secure")
            .oauth(oauth)
            .http(&url)
            .await
            .expect("the client authorizes and connects");
        assert_eq!(
            client.tool_names(),
            ["mcp__secure__whoami", "mcp__secure__auth_log"]
        );

        let ask = |id: &str| {
            FauxModel::new()
                .respond(FauxResponse::tool_call(
                    id,
                    "mcp__secure__whoami",
                    json!({}),
                ))
                .respond(FauxResponse::text("done"))
        };
        let results = |messages: &[Message]| -> Vec<String> {
            messages
                .iter()
                .filter_map(|m| match m {
                    Message::ToolResult(r) => Some(r.text()),
                    _ => None,
                })
                .collect()
        };
        let agent = Agent::builder()
            .model(ask("c1"))
            .tools(client.clone())
            .build()
            .expect("an agent");
        let first = agent.prompt("who am I?").await.expect("a run");
        assert_eq!(results(&first), ["a registered client"]);

        // The access token expires; the next call refreshes it instead of signing in again.
        tokio::time::sleep(Duration::from_millis(3000)).await;
        let agent = Agent::builder()
            .model(ask("c2"))
            .tools(client.clone())
            .build()
            .expect("an agent");
        let second = agent.prompt("and now?").await.expect("a run");
        assert_eq!(results(&second), ["a registered client"]);

        let log = client
            .tools()
            .into_iter()
            .find(|t| t.definition().name == "mcp__secure__auth_log")
            .expect("auth_log");
        let log = log
            .execute(
                "l1".into(),
                json!({}),
                pi_runtime::ToolContext::detached("l1"),
            )
            .await
            .expect("auth_log answers")
            .text_content();
        let log: Value = serde_json::from_str(&log).expect("the server's JSON log");
        assert_eq!(
            (
                log["authorizations"].as_u64(),
                log["code_exchanges"].as_u64()
            ),
            (Some(1), Some(1)),
            "{log}"
        );
        assert!(log["refreshes"].as_u64() >= Some(1), "{log}");
        assert_eq!(
            sign_ins.load(Ordering::SeqCst),
            1,
            "one sign-in for the whole session"
        );
        client.close().await;
    });
}
