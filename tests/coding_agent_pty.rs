//! The `coding_agent` example in a pseudo-terminal, against a loopback server that speaks
//! OpenAI's streaming Chat Completions: the run pauses for approval of a `bash` call, the user
//! approves, edits or denies it and the run resumes; the user sees its output and the
//! streamed answer, and Ctrl-C aborts a long `bash` call without leaving a
//! process behind.
//!
//! `CARGO_BIN_EXE_<name>` exists only for binaries, not examples, so the test builds the
//! example once with `cargo build --example coding_agent` (in the test's own profile and
//! target directory) and runs it from `target/<profile>/examples/`. Every wait is bounded by
//! the pty session's timeout, and dropping a session kills the program.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use rexpect::process::WaitStatus;
use rexpect::session::PtySession;
use serde_json::{Value, json};

/// The longest any single expectation may wait.
const TIMEOUT_MS: u64 = 30_000;
/// What Cargo sets for the package of a running test.
const PACKAGE_VARIABLES: [&str; 6] = [
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
];

#[test]
fn a_confirmed_bash_call_runs_and_the_answer_streams() {
    let server = Server::start(vec![
        bash_call("call_1", "echo pty-tool-output-$((6*7))"),
        text("The command printed forty-two."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut agent = spawn(&server, dir.path());
    agent.exp_string("> ").unwrap();
    agent.send_line("say hello through bash").unwrap();
    agent
        .exp_string("Allow the agent to run `echo pty-tool-output-$((6*7))`? [y/N/edit] ")
        .unwrap();
    agent.send_line("y").unwrap();
    // The arithmetic shows the command ran: the literal `42` is nowhere in the call.
    agent.exp_string("pty-tool-output-42").unwrap();
    agent.exp_string("[bash] done").unwrap();
    agent.exp_string("The command printed forty-two.").unwrap();
    agent.exp_string("> ").unwrap();
    agent.send_line("exit").unwrap();
    agent.exp_eof().unwrap();
    assert_exited_cleanly(&agent);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_result_sent(&requests[1]), "pty-tool-output-42\n");
}

#[test]
fn a_declined_call_is_blocked_with_a_reason() {
    let server = Server::start(vec![
        bash_call("call_1", "touch should-not-exist"),
        text("Understood, I will not touch anything."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut agent = spawn(&server, dir.path());
    agent.exp_string("> ").unwrap();
    agent.send_line("create a file").unwrap();
    agent
        .exp_string("Allow the agent to run `touch should-not-exist`? [y/N/edit] ")
        .unwrap();
    agent.send_line("n").unwrap();
    agent
        .exp_string("Tool call denied: The user declined this tool call.")
        .unwrap();
    agent.exp_string("[bash] failed").unwrap();
    agent
        .exp_string("Understood, I will not touch anything.")
        .unwrap();
    agent.exp_string("> ").unwrap();
    agent.send_control('d').unwrap();
    agent.exp_eof().unwrap();
    assert_exited_cleanly(&agent);

    assert!(!dir.path().join("should-not-exist").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_result_sent(&requests[1]),
        "Tool call denied: The user declined this tool call."
    );
}

#[test]
fn an_edited_call_runs_the_edited_command() {
    let server = Server::start(vec![
        bash_call("call_1", "echo as-the-model-wrote-it"),
        text("The edited command ran."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut agent = spawn(&server, dir.path());
    agent.exp_string("> ").unwrap();
    agent.send_line("print something").unwrap();
    agent
        .exp_string("Allow the agent to run `echo as-the-model-wrote-it`? [y/N/edit] ")
        .unwrap();
    agent.send_line("edit").unwrap();
    agent.exp_string("New command: ").unwrap();
    agent.send_line("echo edited-$((6*7))").unwrap();
    agent.exp_string("edited-42").unwrap();
    agent.exp_string("[bash] done").unwrap();
    agent.exp_string("The edited command ran.").unwrap();
    agent.exp_string("> ").unwrap();
    agent.send_line("exit").unwrap();
    agent.exp_eof().unwrap();
    assert_exited_cleanly(&agent);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_result_sent(&requests[1]), "edited-42\n");
}

#[test]
fn ctrl_c_aborts_a_long_bash_call_and_kills_its_processes() {
    let server = Server::start(vec![bash_call(
        "call_1",
        "echo $$ > pids; sleep 30 & echo $! >> pids; echo sleeping; wait",
    )]);
    let dir = tempfile::tempdir().unwrap();
    let mut agent = spawn(&server, dir.path());
    agent.exp_string("> ").unwrap();
    agent.send_line("take a nap").unwrap();
    agent.exp_string("[y/N/edit] ").unwrap();
    agent.send_line("y").unwrap();
    // Progress: the output shows while the command still runs.
    agent.exp_string("sleeping").unwrap();
    let pids = read_pids(&dir.path().join("pids"));
    assert!(pids.iter().all(|&pid| !gone(pid)), "the command is running");

    agent.send_control('c').unwrap();
    agent.exp_string("Command aborted").unwrap();
    agent.exp_string("[bash] failed").unwrap();
    agent.exp_string("(run aborted)").unwrap();
    agent.exp_string("> ").unwrap();
    // Up to 30 s, for a loaded machine; the wait ends as soon as both are gone.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pids.iter().all(|&pid| gone(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(gone(pid), "process {pid} survived Ctrl-C");
    }

    // Back at the prompt, still usable; the aborted run asked the model nothing more.
    agent.send_line("exit").unwrap();
    agent.exp_eof().unwrap();
    assert_exited_cleanly(&agent);
    assert_eq!(server.requests().len(), 1);
}

/// The example's binary, built once per test process.
fn coding_agent() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // target/<profile>/deps/<this test>
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args([
            "build",
            "--quiet",
            "--example",
            "coding_agent",
            "-p",
            "pi-examples",
        ]);
        if profile_dir
            .file_name()
            .is_some_and(|name| name == "release")
        {
            cargo.arg("--release");
        }
        // Cargo gives a running test the variables of its package; build scripts that watch
        // one (ring's watches `CARGO_MANIFEST_DIR`) would rebuild on every run if they leaked.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if PACKAGE_VARIABLES
                .iter()
                .any(|prefix| name.starts_with(prefix))
            {
                cargo.env_remove(name.as_ref());
            }
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "building the example failed");
        profile_dir.join("examples").join("coding_agent")
    })
}

/// The example in a pty, in `cwd`, talking to `server`, with no provider key in sight.
fn spawn(server: &Server, cwd: &Path) -> PtySession {
    let mut command = Command::new(coding_agent());
    command
        .args(["--base-url", &server.base_url])
        .args(["--model", "loopback", "--api-key", "test-key"])
        .current_dir(cwd)
        .env("TERM", "dumb");
    for var in [
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
    ] {
        command.env_remove(var);
    }
    rexpect::session::spawn_command(command, Some(TIMEOUT_MS)).unwrap()
}

fn assert_exited_cleanly(agent: &PtySession) {
    let status = agent.process().wait().unwrap();
    assert!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "exit status {status:?}"
    );
}

/// The text of the `tool` message in a Chat Completions request.
fn tool_result_sent(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    match &tool["content"] {
        Value::String(text) => text.clone(),
        parts => parts.as_array().unwrap()[0]["text"]
            .as_str()
            .unwrap()
            .to_owned(),
    }
}

/// The shell's and the sleeper's PIDs, once the command wrote both.
fn read_pids(path: &Path) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.parse().ok()).collect();
        if pids.len() == 2 || Instant::now() > deadline {
            assert_eq!(pids.len(), 2, "the command wrote {text:?}");
            return pids;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Gone, or a zombie waiting for a parent that is not this test.
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A model response that calls `bash` with `command`.
fn bash_call(id: &str, command: &str) -> String {
    let arguments = json!({ "command": command }).to_string();
    let call = json!({"tool_calls": [{
        "index": 0, "id": id, "type": "function",
        "function": {"name": "bash", "arguments": arguments},
    }]});
    sse([chunk(&call, None), chunk(&json!({}), Some("tool_calls"))])
}

/// A model response that says `text`, in two deltas.
fn text(text: &str) -> String {
    let (first, second) = text.split_at(text.len() / 2);
    sse([
        chunk(&json!({"role": "assistant", "content": first}), None),
        chunk(&json!({ "content": second }), None),
        chunk(&json!({}), Some("stop")),
    ])
}

fn chunk(delta: &Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-loopback", "object": "chat.completion.chunk", "created": 0,
        "model": "loopback",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

fn sse<const N: usize>(chunks: [Value; N]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// A loopback HTTP server answering each request with the next scripted SSE body and
/// recording the request bodies. It stops when dropped.
struct Server {
    base_url: String,
    script: Arc<Script>,
    _runtime: tokio::runtime::Runtime,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<Value>>,
}

impl Server {
    fn start(replies: Vec<String>) -> Server {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        runtime.spawn(async move { axum::serve(listener, app).await });
        Server {
            base_url,
            script,
            _runtime: runtime,
        }
    }

    fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
    }
}

async fn answer(State(script): State<Arc<Script>>, body: Bytes) -> Response {
    let request = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script.requests.lock().unwrap().push(request);
    let reply = script.replies.lock().unwrap().pop_front();
    match reply {
        Some(sse) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from(sse)),
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("no scripted reply left")),
    }
    .unwrap()
}
