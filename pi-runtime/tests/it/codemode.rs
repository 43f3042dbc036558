//! Code mode end to end: an agent on the faux model calls the `codemode` tool, whose script
//! calls the agent's tools through its pipeline; hostile scripts end in bounded time and
//! memory with pi's texts, and the agent keeps going.
//!
//! Each hostile script runs in a fresh copy of this test binary ([`child_runs_one_script`],
//! `#[ignore]`d, does nothing unless [`CHILD_ENV`] is set), so that its peak resident memory
//! (the child's `VmHWM`) is its own and not that of the tests running beside it.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::agent::{AgentEvent, RunEnd};
use pi_runtime::codemode::{
    CodemodeMode, CodemodeSettings, CodemodeTool, Sandbox, base_description,
};
use pi_runtime::message::join_text;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{Exposure, ToolPolicy};
use pi_runtime::{Agent, FnTool, Message, ToolDefinition, ToolError, ToolResult};
use serde_json::{Value, json};

/// The `codemode` result of one script, and what the agent answered next.
struct Run {
    text: String,
    is_error: bool,
    details: Value,
    elapsed: Duration,
    /// The agent's text on the turn after the script's.
    next_turn: String,
}

fn lookup_tools() -> Vec<Arc<dyn ToolDefinition>> {
    let user = FnTool::new(
        "get-user",
        "A user by id",
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        |args, _ctx| async move {
            let id = args["id"].as_i64().unwrap_or_default();
            Ok(ToolResult::text(format!("user {id}"))
                .with_structured_content(json!({"id": id, "name": format!("Ada {id}")})))
        },
    )
    .with_output_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
    .with_exposure(Exposure::Codemode);
    let orders = FnTool::new(
        "orders",
        "A user's orders",
        json!({"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]}),
        |args, _ctx| async move {
            let user = args["user"].as_str().unwrap_or_default().to_owned();
            Ok(ToolResult::text(format!("2 orders for {user}")))
        },
    );
    let ping = FnTool::new(
        "ping",
        "Answers pong",
        json!({"type": "object", "properties": {}}),
        |_args, _ctx| async move { Ok(ToolResult::text("pong")) },
    );
    let broken = FnTool::new(
        "broken",
        "Always fails",
        json!({"type": "object", "properties": {}}),
        |_args, _ctx| async move { Err::<ToolResult, _>(ToolError::new("the tool broke")) },
    );
    vec![
        Arc::new(user),
        Arc::new(orders),
        Arc::new(ping),
        Arc::new(broken),
    ]
}

async fn run(code: &str) -> Run {
    run_with(code, Vec::new()).await
}

/// [`run`] with `extra` tools beside the lookup tools.
async fn run_with(code: &str, extra: Vec<Arc<dyn ToolDefinition>>) -> Run {
    let mut tools = lookup_tools();
    tools.extend(extra);
    tools.push(Arc::new(CodemodeTool::new()));
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({"code": code}),
        ))
        .respond(FauxResponse::text("done"))
        .respond(FauxResponse::text("still here"));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .build()
        .expect("the agent builds");
    let started = Instant::now();
    let messages = agent.prompt("go").await.expect("the run completes");
    let elapsed = started.elapsed();
    let result = messages
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(Arc::clone(result)),
            _ => None,
        })
        .expect("the codemode call has a result");
    // The agent keeps going after the script, whatever it did: this turn ends with its
    // answer, and the next turn works.
    assert!(matches!(messages.last(), Some(Message::Assistant(_))));
    let next = agent
        .prompt("again")
        .await
        .expect("the next turn completes");
    let next_turn = match next.last() {
        Some(Message::Assistant(message)) => join_text(&message.content),
        other => panic!("the next turn ends with {other:?}"),
    };
    Run {
        text: join_text(&result.content),
        is_error: result.is_error,
        details: result.details.clone().unwrap_or(Value::Null),
        elapsed,
        next_turn,
    }
}

#[tokio::test]
async fn a_script_calls_two_tools_and_returns_one_joined_answer() {
    let run = run("const user = await tools.get_user({ id: 7 });\n\
         const orders = await tools.orders({ user: user.name });\n\
         return user.name + \": \" + orders;")
    .await;
    assert!(!run.is_error, "{}", run.text);
    assert!(
        run.text.starts_with("Script completed\nWall time "),
        "{}",
        run.text
    );
    assert!(
        run.text.ends_with("Output:\n\nAda 7: 2 orders for Ada 7"),
        "{}",
        run.text
    );
    assert_eq!(
        run.details["calls"],
        json!([
            {"id": "call_1/1", "name": "get-user", "args": "{\"id\":7}", "status": "ok"},
            {"id": "call_1/2", "name": "orders", "args": "{\"user\":\"Ada 7\"}", "status": "ok"},
        ])
    );
}

/// While a script runs, its call records reach the agent's events as pi's `onUpdate` does:
/// an empty list at the start, then the calls as they start and end.
#[tokio::test]
async fn the_script_s_calls_show_in_progress_events() {
    let slow = FnTool::new(
        "slow",
        "Answers after half a second",
        json!({"type": "object", "properties": {}}),
        |_args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok(ToolResult::text("late"))
        },
    );
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({"code": "return await tools.slow({});"}),
        ))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools((slow, CodemodeTool::new()))
        .build()
        .expect("the agent builds");
    let updates = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&updates);
    agent.subscribe(move |event| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = &*event {
            assert!(partial_result.content.is_empty());
            let calls = partial_result.details.as_ref().map(|d| d["calls"].clone());
            seen.lock().expect("not poisoned").push(calls);
        }
        std::future::ready(())
    });
    agent.prompt("go").await.expect("the run completes");
    let running = json!({"id": "call_1/?", "name": "slow", "args": "{}", "status": "running"});
    let ok = json!({"id": "call_1/1", "name": "slow", "args": "{}", "status": "ok"});
    assert_eq!(
        *updates.lock().expect("not poisoned"),
        [Some(json!([])), Some(json!([running])), Some(json!([ok]))]
    );
}

/// `lookup` with a retry budget of two, and the code mode tool; the run of a model that
/// sends `code` once, then would answer.
async fn run_with_budget(code: &str) -> (pi_runtime::agent::RunOutcome, FauxModel) {
    let lookup = FnTool::new(
        "lookup",
        "A record by id",
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        |args, _ctx| async move { Ok(ToolResult::text(format!("record {}", args["id"]))) },
    )
    .with_policy(ToolPolicy::new().with_retries(2));
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({"code": code}),
        ))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools((lookup, CodemodeTool::new()))
        .build()
        .expect("the agent builds");
    let run = agent.prompt("go").await.expect("the run ends");
    (run, model)
}

/// Calls `lookup` with each id, catching its errors, then with 7.
fn lookups(ids: &str) -> String {
    format!(
        "for (const id of [{ids}]) {{ try {{ await tools.lookup({{ id }}); }} catch (e) {{}} }}\n\
         return await tools.lookup({{ id: 7 }});"
    )
}

#[tokio::test]
async fn a_script_s_failed_calls_past_the_tool_s_retry_budget_end_the_run() {
    let (run, model) = run_with_budget(&lookups("\"a\", \"b\", \"c\"")).await;
    assert_eq!(
        run.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        }
    );
    // The script itself went on and succeeded; the run ends after its turn.
    let Some(Message::ToolResult(result)) = run.last() else {
        panic!("the run ends with the script's result: {:?}", run.last());
    };
    assert!(!result.is_error);
    assert!(
        result.text().ends_with("Output:\n\nrecord 7"),
        "{}",
        result.text()
    );
    let statuses: Vec<&Value> = (result.details.as_ref())
        .and_then(|details| details["calls"].as_array())
        .map(|calls| calls.iter().map(|call| &call["status"]).collect())
        .unwrap_or_default();
    assert_eq!(statuses, ["error", "error", "error", "ok"]);
    assert_eq!(
        model.request_count(),
        1,
        "no request after the script's turn"
    );

    // Two failures are within the budget.
    let (run, model) = run_with_budget(&lookups("\"a\", \"b\"")).await;
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn scripts_reach_no_modules_timers_or_host() {
    let run = run(
        "const kinds = [typeof require, typeof setTimeout, typeof setInterval, typeof fetch,\n\
                        typeof process, typeof std, typeof os].join();\n\
         let imported;\n\
         try { await import(\"os\"); imported = \"imported\"; } catch (error) { imported = \"refused\"; }\n\
         return kinds + \" \" + imported;",
    )
    .await;
    assert!(
        run.text.ends_with(
            "Output:\n\nundefined,undefined,undefined,undefined,undefined,undefined,undefined refused"
        ),
        "{}",
        run.text
    );
    let run = run_static_import().await;
    assert!(run.is_error);
    assert!(
        run.text.contains("Script error:\nSyntaxError"),
        "{}",
        run.text
    );
}

async fn run_static_import() -> Run {
    run("import fs from \"fs\";\nreturn 1;").await
}

#[tokio::test]
async fn built_ins_and_tools_are_frozen() {
    let run = run(
        "Array.prototype.push = null; JSON.stringify = null; globalThis.text = null;\n\
         tools.x = 1; Object.prototype.polluted = 1;\n\
         class MyError extends Error { constructor() { super(\"m\"); this.name = \"MyError\"; } }\n\
         return [typeof Array.prototype.push, typeof JSON.stringify, typeof text, \"x\" in tools,\n\
                 ({}).polluted, new MyError().name].join();",
    )
    .await;
    assert!(
        run.text
            .ends_with("Output:\n\nfunction,function,function,false,,MyError"),
        "{}",
        run.text
    );
}

/// Set, in a child process, to the JSON of the script to run: `{"code": ..., "out": path}`.
const CHILD_ENV: &str = "PI_CODEMODE_HOSTILE_CHILD";
const MIB: u64 = 1024 * 1024;

/// What a hostile script did in a process of its own.
#[derive(Debug)]
struct Hostile {
    /// `Script failed` or `Script completed`.
    status: String,
    /// What follows the header (`Output:\n` and the blocks' separator), without the engine's
    /// stack frames (`    at ...` lines, engine-specific as in the conformance comparison).
    output: String,
    is_error: bool,
    calls: usize,
    elapsed: Duration,
    /// How much the child's peak resident memory grew during the agent's run.
    peak_growth: u64,
    next_turn: String,
    /// The child's threads after its warm-up run, and once the case ended (waiting up to
    /// [`THREAD_SETTLE`] for them to go).
    threads_before: u64,
    threads_after: u64,
    /// How long after the run's end (its result, or its future dropped) the threads took to
    /// go back to `threads_before`.
    settled: Duration,
    /// The child's CPU time (user and system) over [`QUIET_WINDOW`] after the case.
    quiet_cpu: Duration,
}

/// How long a case's threads get to end after its result: the script's thread is stopped
/// when its result is made, and its end is awaited there for a moment.
const THREAD_SETTLE: Duration = Duration::from_secs(3);
/// The window after a case over which the child's CPU time is measured: a thread left
/// running burns most of it (each case's thread had a core to itself before the fix).
const QUIET_WINDOW: Duration = Duration::from_secs(1);
/// What a quiet child may burn in [`QUIET_WINDOW`]: the test harness and the runtime idle.
const QUIET_CPU: Duration = Duration::from_millis(100);

/// The threads of this process.
fn thread_count() -> u64 {
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| tasks.count() as u64)
}

/// This process's CPU time: user and system, from `/proc/self/stat` (in clock ticks, 100 a
/// second on Linux).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of stat(5); `fields` starts at field 3.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// The child's resident memory figures, in bytes: `VmHWM` or `VmRSS`.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("the field in /proc/self/status")
        * 1024
}

/// Run `code` as the `codemode` call of an agent in a fresh copy of this binary.
fn hostile(code: &str) -> Hostile {
    hostile_run(code, Ending::Result)
}

/// How the agent's run of a hostile script ends, besides the script's own end.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The run goes on to its result (the script's end or its time limit).
    Result,
    /// The agent is aborted this long after the run started.
    Abort(Duration),
    /// The run (the future of its `prompt`) is dropped this long after it started.
    Drop(Duration),
}

/// Run `code` in a fresh copy of this binary, ending the agent's run as `ending` says.
fn hostile_run(code: &str, ending: Ending) -> Hostile {
    let mut request = json!({"code": code});
    match ending {
        Ending::Result => {}
        Ending::Abort(after) => request["abort_after_ms"] = json!(after.as_millis() as u64),
        Ending::Drop(after) => request["drop_after_ms"] = json!(after.as_millis() as u64),
    }
    let answer = run_child("child_runs_one_script", request);
    let text = answer["text"].as_str().unwrap_or_default();
    let (header, output) = text.split_once("Output:\n").unwrap_or(("Dropped\n", ""));
    let output = output.strip_prefix('\n').unwrap_or(output);
    let output: Vec<&str> = output
        .split('\n')
        .filter(|line| !line.starts_with("    at "))
        .collect();
    let status = header.lines().next().unwrap_or_default().to_owned();
    assert!(
        status == "Dropped"
            || header.starts_with(&format!("{status}\nWall time "))
                && header.ends_with(" seconds\n"),
        "{header}"
    );
    Hostile {
        status,
        output: output.join("\n"),
        is_error: answer["is_error"] == json!(true),
        calls: answer["calls"].as_u64().unwrap_or_default() as usize,
        elapsed: Duration::from_millis(answer["elapsed_ms"].as_u64().unwrap_or(u64::MAX)),
        peak_growth: answer["peak_growth"].as_u64().unwrap_or(u64::MAX),
        next_turn: answer["next_turn"].as_str().unwrap_or_default().to_owned(),
        threads_before: answer["threads_before"].as_u64().unwrap_or(0),
        threads_after: answer["threads_after"].as_u64().unwrap_or(u64::MAX),
        settled: Duration::from_millis(answer["settled_ms"].as_u64().unwrap_or(u64::MAX)),
        quiet_cpu: Duration::from_millis(answer["quiet_cpu_ms"].as_u64().unwrap_or(u64::MAX)),
    }
}

/// Run the `#[ignore]`d child test `name` in a fresh copy of this binary, with `request` in
/// [`CHILD_ENV`] and the path of its answer added as `out`; the answer.
fn run_child(name: &str, mut request: Value) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let out = std::env::temp_dir().join(format!(
        "pi-codemode-hostile-{}-{}.json",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    request["out"] = json!(out.to_string_lossy());
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", &format!("codemode::{name}")])
        .args(["--ignored", "--nocapture", "--test-threads=1", "-q"])
        .env(CHILD_ENV, request.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("the child runs");
    assert!(
        output.status.success(),
        "child failed ({}): {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let written = std::fs::read_to_string(&out).expect("the child's answer");
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&written).expect("the child's answer is JSON")
}

/// Drop the agent's run of `code` `after` its start, as a caller's timeout or a server whose
/// client hung up does: `(elapsed, dropped)`.
async fn dropped_run(code: &str, after: Duration) -> (Duration, bool) {
    let mut tools = lookup_tools();
    tools.push(Arc::new(CodemodeTool::new()));
    let model = FauxModel::new().respond(FauxResponse::tool_call(
        "call_1",
        "codemode",
        json!({"code": code}),
    ));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .build()
        .expect("the agent builds");
    let started = Instant::now();
    let dropped = tokio::time::timeout(after, agent.prompt("go"))
        .await
        .is_err();
    (started.elapsed(), dropped)
}

/// Abort the agent `after` the start of its run of `code`, as a user's stop button does:
/// `(elapsed, the codemode result's text, the agent's answer on the next turn)`.
async fn aborted_run(code: &str, after: Duration) -> (Duration, String, String) {
    let mut tools = lookup_tools();
    tools.push(Arc::new(CodemodeTool::new()));
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "call_1",
            "codemode",
            json!({"code": code}),
        ))
        .respond(FauxResponse::text("still here"));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .build()
        .expect("the agent builds");
    let aborter = agent.clone();
    let abort = tokio::spawn(async move {
        tokio::time::sleep(after).await;
        aborter.abort();
    });
    let started = Instant::now();
    let messages = agent.prompt("go").await.expect("the run ends");
    let elapsed = started.elapsed();
    abort.await.expect("the abort task ends");
    assert_eq!(messages.end, RunEnd::Aborted);
    let result = messages
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(join_text(&result.content)),
            _ => None,
        })
        .unwrap_or_default();
    let next = agent
        .prompt("again")
        .await
        .expect("the next turn completes");
    let next_turn = match next.last() {
        Some(Message::Assistant(message)) => join_text(&message.content),
        other => panic!("the next turn ends with {other:?}"),
    };
    (elapsed, result, next_turn)
}

/// A child process of the hostile script tests: the request it was started with (its
/// `code` and the path `out` of its answer among the rest), and a runtime to run it on.
struct Child {
    request: Value,
    code: String,
    out: String,
    runtime: tokio::runtime::Runtime,
}

impl Child {
    /// `None` unless this process is such a child ([`CHILD_ENV`] is set).
    fn started() -> Option<Child> {
        let request = std::env::var(CHILD_ENV).ok()?;
        let request: Value = serde_json::from_str(&request).expect("the request");
        let code = request["code"].as_str().expect("the code").to_owned();
        let out = request["out"].as_str().expect("the output path").to_owned();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Some(Child {
            request,
            code,
            out,
            runtime,
        })
    }
}

#[test]
#[ignore = "a child process of the hostile script tests"]
fn child_runs_one_script() {
    let Some(Child {
        request,
        code,
        out,
        runtime,
    }) = Child::started()
    else {
        return;
    };
    // Warm up the agent's machinery, so that the growth measured is the script's.
    runtime.block_on(run("return 1;"));
    // Reset the peak to the present resident size (Linux 4.0 and later), so that the peak
    // read after the run is the run's own.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:");
    // The warm-up script's thread may still be on its way out.
    std::thread::sleep(Duration::from_millis(300));
    let threads_before = thread_count();
    let abort_after = request["abort_after_ms"]
        .as_u64()
        .map(Duration::from_millis);
    let drop_after = request["drop_after_ms"].as_u64().map(Duration::from_millis);
    let mut answer = match (abort_after, drop_after) {
        (_, Some(after)) => {
            let (elapsed, dropped) = runtime.block_on(dropped_run(&code, after));
            assert!(dropped, "the run ended before it was dropped");
            json!({"text": "", "elapsed_ms": elapsed.as_millis() as u64, "next_turn": "still here"})
        }
        (Some(after), None) => {
            let (elapsed, text, next_turn) = runtime.block_on(aborted_run(&code, after));
            json!({"text": text, "elapsed_ms": elapsed.as_millis() as u64, "next_turn": next_turn})
        }
        (None, None) => {
            let run = runtime.block_on(run(&code));
            json!({
                "text": run.text,
                "is_error": run.is_error,
                "calls": run.details["calls"].as_array().map_or(0, Vec::len),
                "elapsed_ms": run.elapsed.as_millis() as u64,
                "next_turn": run.next_turn,
            })
        }
    };
    answer["peak_growth"] = json!(status_bytes("VmHWM:").saturating_sub(before));
    let settle = Instant::now();
    while thread_count() > threads_before && settle.elapsed() < THREAD_SETTLE {
        std::thread::sleep(Duration::from_millis(20));
    }
    answer["threads_before"] = json!(threads_before);
    answer["threads_after"] = json!(thread_count());
    answer["settled_ms"] = json!(settle.elapsed().as_millis() as u64);
    let cpu = cpu_time();
    std::thread::sleep(QUIET_WINDOW);
    answer["quiet_cpu_ms"] = json!((cpu_time() - cpu).as_millis() as u64);
    std::fs::write(out, answer.to_string()).expect("the answer is written");
}

/// Set, in the child of [`stopping_scripts_at_any_moment_leaves_the_process_sound`]: run
/// `code` once per time limit of `limits_ms`, and answer how each run ended.
#[test]
#[ignore = "a child process of the hostile script tests"]
fn child_stops_one_script_many_times() {
    let Some(Child {
        request,
        code,
        out,
        runtime,
    }) = Child::started()
    else {
        return;
    };
    let limits = request["limits_ms"].as_array().expect("the time limits");
    let endings: Vec<String> = limits
        .iter()
        .map(|limit| {
            let sandbox = Sandbox::new().with_timeout_ms(limit.as_u64().unwrap_or_default());
            match runtime.block_on(sandbox.execute(&code)).value {
                Ok(_) => "completed".to_owned(),
                Err(error) => error.message,
            }
        })
        .collect();
    std::fs::write(out, json!({"endings": endings}).to_string()).expect("the answer is written");
}

#[test]
fn stopping_scripts_at_any_moment_leaves_the_process_sound() {
    // Stopped in the prelude, in the script's loop, or inside a built-in that then fails at
    // its next large allocation: the engine's out-of-memory paths must leave it sound. When
    // the allocator refused small requests too, one stopped script in a few dozen brought
    // the process down (`JS_FreeRuntime`'s assertion that no object is left, or a segfault).
    let scripts = [
        "const a = [];\nfor (;;) { a.push({ x: \"y\".repeat(100) }); if (a.length > 50000) a.length = 0; }",
        "const o = {};\nfor (let i = 0; ; i++) { o[\"k\" + i] = [i]; if (i % 1000 === 0) JSON.stringify(Object.keys(o)); }",
        "for (;;) { try { new Map(Array.from({ length: 10000 }, (_, i) => [i, String(i)])); } catch (e) { text(String(e)); } }",
        "const s = \"ab\".repeat(100000);\nfor (;;) s.split(\"b\").join(\"c\").indexOf(\"x\".repeat(300));",
    ];
    let limits: Vec<u64> = (0..40).map(|step| step * 5).collect();
    for code in scripts {
        let answer = run_child(
            "child_stops_one_script_many_times",
            json!({"code": code, "limits_ms": limits}),
        );
        let endings = answer["endings"].as_array().expect("the endings");
        assert_eq!(endings.len(), limits.len());
        for (limit, ending) in limits.iter().zip(endings) {
            assert_eq!(
                ending,
                &json!(format!("Execution timed out after {limit} ms")),
                "{code}"
            );
        }
    }
}

/// Assert the common ending of a hostile run: pi's text, its time and memory bounds, and a
/// next turn that works.
fn assert_bounded(run: &Hostile, max_time: Duration, max_growth: u64) {
    eprintln!(
        "hostile script: {:?}, threads gone {:?} later, peak +{} KiB, threads {} -> {}, quiet CPU {:?}",
        run.elapsed,
        run.settled,
        run.peak_growth / 1024,
        run.threads_before,
        run.threads_after,
        run.quiet_cpu
    );
    assert!(
        run.threads_after <= run.threads_before,
        "a thread outlived the case: {} -> {}",
        run.threads_before,
        run.threads_after
    );
    assert!(
        run.quiet_cpu < QUIET_CPU,
        "the child burned {:?} of CPU in {QUIET_WINDOW:?} after the case",
        run.quiet_cpu
    );
    assert!(run.elapsed < max_time, "{:?} >= {max_time:?}", run.elapsed);
    assert!(
        run.peak_growth < max_growth,
        "peak grew {} MiB, bound {} MiB",
        run.peak_growth / MIB,
        max_growth / MIB
    );
    assert_eq!(run.next_turn, "still here");
}

fn no_calls_failure(error: &str) -> String {
    format!("Script error:\n{error}\n\nNo tool calls were made.")
}

#[test]
fn an_endless_loop_is_stopped_by_the_time_limit() {
    let run = hostile("// @options: {\"timeout_ms\": 300}\nwhile (true) {}");
    assert_eq!(run.status, "Script failed");
    assert!(run.is_error);
    assert_eq!(
        run.output,
        no_calls_failure("Script timed out: Execution timed out after 300 ms")
    );
    assert!(
        run.elapsed >= Duration::from_millis(300),
        "{:?}",
        run.elapsed
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn a_script_that_catches_its_own_timeout_still_ends() {
    let run = hostile(
        "// @options: {\"timeout_ms\": 300}\n\
         for (;;) { try { while (true) {} } catch (e) { text(\"caught\"); } }",
    );
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        no_calls_failure("Script timed out: Execution timed out after 300 ms")
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn a_recursion_bomb_fails_with_a_range_error() {
    let run = hostile("function f() { return f() + 1; }\nreturn f();");
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        no_calls_failure("RangeError: Maximum call stack size exceeded")
    );
    assert_bounded(&run, Duration::from_secs(10), 64 * MIB);
}

#[test]
fn an_allocation_bomb_fails_at_the_heap_limit() {
    let run = hostile(
        "const chunks = [];\nwhile (true) chunks.push(\"x\".repeat(1 << 20) + chunks.length);",
    );
    assert_eq!(run.status, "Script failed");
    assert_eq!(run.output, no_calls_failure("InternalError: out of memory"));
    // The VM's heap stops at 256 MiB.
    assert_bounded(&run, Duration::from_secs(30), 320 * MIB);
}

#[test]
fn a_gigabyte_string_is_refused() {
    let run = hostile("const s = \"x\".repeat(1 << 30);\nreturn s.length;");
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        no_calls_failure("RangeError: invalid string length")
    );
    assert_bounded(&run, Duration::from_secs(10), 16 * MIB);
    // Doubling a string towards a gigabyte stops short of it.
    let run = hostile(
        "let s = \"x\".repeat(1 << 20);\n\
         try { while (true) s = s + s; } catch (e) { return e.name + \": \" + e.message + \" \" + s.length; }",
    );
    assert_eq!(run.status, "Script completed");
    assert_eq!(run.output, "InternalError: string too long 536870912");
    assert_bounded(&run, Duration::from_secs(30), 320 * MIB);
}

#[test]
fn a_hundred_thousand_tool_calls_complete() {
    let run = hostile(
        "let n = 0;\nfor (let i = 0; i < 100000; i++) { await tools.ping({}); n++; }\nreturn n;",
    );
    assert_eq!(run.status, "Script completed");
    assert!(!run.is_error);
    assert_eq!(run.output, "100000");
    assert_eq!(run.calls, 100_000);
    assert_bounded(&run, Duration::from_secs(120), 256 * MIB);
}

#[test]
fn a_promise_nothing_settles_fails_at_once() {
    let run = hostile("await new Promise(() => {});");
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        no_calls_failure(
            "Error: The script is waiting on a promise that can never settle: no tool call is pending, and timers do not exist here."
        )
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn a_throwing_tool_rejects_its_call() {
    let run = hostile("const r = await tools.broken({});\nreturn r;");
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        "Script error:\nError: the tool broke\n\n\
         Tool calls made before the failure (they are not undone): broken (error)"
    );
    assert_eq!(run.calls, 1);
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn eval_and_function_run_inside_the_sandbox_only() {
    let run = hostile(
        "const r = [];\n\
         try { r.push(eval(\"1 + 1\")); } catch (e) { r.push(e.name + \": \" + e.message); }\n\
         try { r.push(new Function(\"return 2\")()); } catch (e) { r.push(e.name + \": \" + e.message); }\n\
         r.push([eval(\"typeof tools\"), Function(\"return typeof this\")(), typeof globalThis.eval,\n\
                 Function(\"return typeof require + typeof process\")()].join());\n\
         return r.join(\"\\n\");",
    );
    assert_eq!(run.status, "Script completed");
    assert_eq!(
        run.output,
        "2\n2\nobject,object,function,undefinedundefined"
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn writes_to_frozen_built_ins_and_tools_fail_in_strict_code() {
    let run = hostile("\"use strict\";\nArray.prototype.push = null;");
    assert_eq!(
        run.output,
        no_calls_failure("TypeError: 'push' is read-only")
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
    let run = hostile("\"use strict\";\ntools.x = 1;");
    assert_eq!(
        run.output,
        no_calls_failure("TypeError: object is not extensible")
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn joining_four_billion_holes_is_refused_at_once_and_leaves_no_thread() {
    // QuickJS's join visits every index in C without polling the interrupt handler: this ran
    // for minutes on a core after its result said "timed out".
    let run =
        hostile("// @options: {\"timeout_ms\": 1000}\nreturn new Array(2 ** 32 - 1).join('');");
    assert_eq!(run.status, "Script failed");
    assert_eq!(
        run.output,
        no_calls_failure(
            "RangeError: Array.prototype.join: length 4294967295 is more than the 16777216 elements the sandbox's heap can hold"
        )
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

/// Native work that ran for hours on a core after its script had ended: QuickJS polls its
/// interrupt handler once per 10,000 engine steps, and a built-in runs to its end in C
/// without a poll. Each script here is a loop of calls that take tens of milliseconds or
/// more, or one call that takes hours. `(what, code)`.
const LONG_NATIVE_WORK: &[(&str, &str)] = &[
    (
        "join",
        "const a = new Array(2 ** 22).fill(\"x\");\nfor (;;) a.join(\"\");",
    ),
    // Joining holes allocates nothing to refuse, so the call the stop finds runs to its end:
    // one of 2 ** 20 holes takes about 60 ms in a release build, 0.3 s in a debug one; one of
    // 2 ** 24, the most the sandbox lets a call visit, 1 s and 3 s.
    (
        "join of holes",
        "const a = new Array(2 ** 20);\nfor (;;) a.join(\"\");",
    ),
    ("repeat", "for (;;) \"x\".repeat(2 ** 27);"),
    (
        "sort",
        "const a = Array.from({ length: 200000 }, (_, i) => i);\nfor (;;) a.reverse().sort();",
    ),
    (
        "sort with a comparator",
        "const a = Array.from({ length: 200000 }, (_, i) => i);\n\
         for (;;) a.reverse().sort((x, y) => x - y);",
    ),
    (
        "JSON",
        "const o = Array.from({ length: 50000 }, (_, i) => ({ i, s: \"x\".repeat(100) }));\n\
         for (;;) JSON.parse(JSON.stringify(o));",
    ),
    (
        "JSON.stringify of a huge value",
        "const o = new Array(2 ** 21).fill({ key: \"value\" });\nfor (;;) JSON.stringify(o);",
    ),
    (
        "JSON.parse of a huge text",
        "const s = \"[\" + \"{\\\"key\\\":\\\"value\\\"},\".repeat(2 ** 20) + \"0]\";\n\
         for (;;) JSON.parse(s);",
    ),
    (
        "regex backtracking",
        "return /(a+)+$/.test(\"a\".repeat(40) + \"b\");",
    ),
    (
        "indexOf in a loop",
        "const h = \"a\".repeat(2 ** 22);\nfor (;;) h.indexOf(\"b\");",
    ),
    (
        "indexOf",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\nreturn h.indexOf(n);",
    ),
    (
        "includes",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\nreturn h.includes(n);",
    ),
    (
        "lastIndexOf",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\nreturn h.lastIndexOf(n);",
    ),
    (
        "split",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\nreturn h.split(n);",
    ),
    (
        "replace",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\nreturn h.replace(n, \"\");",
    ),
    (
        "replaceAll",
        "const h = \"a\".repeat(2 ** 24), n = \"a\".repeat(2 ** 16) + \"b\";\n\
         return h.replaceAll(n, \"\");",
    ),
];

/// When the long native work's run is stopped: its time limit, the abort, or the drop.
const STOP_AFTER: Duration = Duration::from_millis(1000);
/// How long after [`STOP_AFTER`] its script may take to end, and its thread with it.
const STOP_BOUND: Duration = Duration::from_secs(2);

/// Run each of [`LONG_NATIVE_WORK`], stopped as `ending` says after [`STOP_AFTER`], and
/// check that its script and its thread end within [`STOP_BOUND`] and leave the child idle.
fn long_native_work_ends(ending: Ending, expected: &str) {
    for (what, code) in LONG_NATIVE_WORK {
        // Without a time limit of its own, the script has pi's 60 seconds.
        let code = match ending {
            Ending::Result => format!(
                "// @options: {{\"timeout_ms\": {}}}\n{code}",
                STOP_AFTER.as_millis()
            ),
            Ending::Abort(_) | Ending::Drop(_) => (*code).to_owned(),
        };
        let run = hostile_run(&code, ending);
        eprintln!(
            "{what} ({ending:?}): ended after {:?}, threads gone {:?} later, {} -> {} threads, quiet CPU {:?}",
            run.elapsed, run.settled, run.threads_before, run.threads_after, run.quiet_cpu
        );
        assert_eq!(run.output, expected, "{what}");
        let bound = STOP_AFTER + STOP_BOUND;
        assert!(
            run.elapsed + run.settled < bound,
            "{what}: the script's thread ended {:?} after its start, bound {bound:?}",
            run.elapsed + run.settled
        );
        assert_bounded(&run, bound, 320 * MIB);
    }
}

#[test]
fn long_native_work_ends_at_the_time_limit_and_leaves_no_thread() {
    long_native_work_ends(
        Ending::Result,
        &no_calls_failure("Script timed out: Execution timed out after 1000 ms"),
    );
}

#[test]
fn long_native_work_ends_when_aborted_and_leaves_no_thread() {
    long_native_work_ends(
        Ending::Abort(STOP_AFTER),
        &no_calls_failure("Script aborted: Execution aborted"),
    );
}

#[test]
fn long_native_work_ends_when_its_run_is_dropped_and_leaves_no_thread() {
    long_native_work_ends(Ending::Drop(STOP_AFTER), "");
}

#[test]
fn a_dropped_run_stops_its_endless_script() {
    // A caller's `tokio::time::timeout` around `prompt()`, or a server whose client hung up.
    let run = hostile_run("while (true) {}", Ending::Drop(Duration::from_millis(300)));
    assert_eq!(run.status, "Dropped");
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[tokio::test(start_paused = true)]
async fn an_endless_script_without_options_times_out_after_sixty_seconds() {
    // Tokio's clock is paused: it jumps to the script's deadline while the runtime waits on
    // the script, so the default limit is seen in a moment.
    let started = Instant::now();
    let run = run("while (true) {}").await;
    assert!(run.is_error);
    assert!(
        run.text.ends_with(&format!(
            "Output:\n\n{}",
            no_calls_failure("Script timed out: Execution timed out after 60000 ms")
        )),
        "{}",
        run.text
    );
    assert_eq!(run.next_turn, "still here");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// What [`count_words`] returns.
#[pi_runtime::tool_args(serialize)]
struct WordCount {
    words: usize,
}

/// Count the words of a text.
#[pi_runtime::tool]
async fn count_words(text: String) -> pi_runtime::Json<WordCount> {
    pi_runtime::Json(WordCount {
        words: text.split_whitespace().count(),
    })
}

#[tokio::test]
async fn a_json_tool_s_result_reaches_scripts_as_an_object() {
    let run = run_with(
        "const counted = await tools.count_words({ text: \"one two three\" });\n\
         return [typeof counted, counted.words].join();",
        vec![Arc::new(CountWords)],
    )
    .await;
    assert!(!run.is_error, "{}", run.text);
    assert!(run.text.ends_with("Output:\n\nobject,3"), "{}", run.text);
}

#[test]
fn lone_surrogates_print_and_return_as_replacement_characters() {
    let run = hostile("console.log(\"a\\ud800b\");\nreturn [\"\\udc00c\", { k: \"\\ud800\" }];");
    assert_eq!(run.status, "Script completed");
    assert_eq!(
        run.output,
        "[\"\u{FFFD}c\",{\"k\":\"\u{FFFD}\"}]\n<console_output>\na\u{FFFD}b\n</console_output>"
    );
    assert_bounded(&run, Duration::from_secs(5), 16 * MIB);
}

#[test]
fn a_microtask_chain_that_fills_the_heap_fails_with_out_of_memory() {
    let run = hostile(
        "const chunks = [];\n\
         const grow = () => { chunks.push(\"x\".repeat(1 << 20) + chunks.length); Promise.resolve().then(grow); };\n\
         grow();\nawait new Promise(() => {});",
    );
    assert_eq!(run.status, "Script failed");
    assert_eq!(run.output, no_calls_failure("InternalError: out of memory"));
    assert_bounded(&run, Duration::from_secs(30), 320 * MIB);
}

/// What Node answers for `codemode_string_builtins.js`, whose built-ins the sandbox wraps.
const STRING_BUILTINS_IN_NODE: &str = r#"{"r":[5,5,11,1,-1,0,6,7,2,5,0,11,4,3,10,true,false,true,true,["ab","ab"],["ab"],["ab","ab","😀é$x"],["ab"],[],["a","b","c","a","b","c","\ud83d","\ude00","é","$","x"],["a","b","c"],["abcabc😀é$x"],[],[],[""],["a","b",""],["","","😀é$x"],"ab[c|$|ab|abc😀é$x|$0|$1|$<n>|$]abc😀é$x","ab$abc😀é$x","abcabc😀é$x","_abcabc😀é$x","ab3:c/2/abcabc😀é$xabc😀é$x","abTabc😀é$x","ab<cabc😀é$x>ab<c😀é$x>😀é$x",".a.b.c.a.b.c.\ud83d.\ude00.é.$.x.","a12a15😀é$x","abcabcabcabcé$x","bb","abCabC😀é$x","acbabc😀é$x",["ab","c","ab","c","😀é$x"],"split abcabc😀é$x 3","replace abcabc😀é$x v","all"],"errors":["TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","TypeError","RangeError","RangeError","RangeError","RangeError","TypeError"],"long":[true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true,true],"order":["this","search","position#","this","limit#","separator","this","search","replacement","this","search","position#","this","search","position#","this","count#","this","length#","filler","this","length#"],"shapes":["indexOf/1","lastIndexOf/1","includes/1","split/2","replace/2","replaceAll/2","repeat/1","padStart/1","padEnd/1"]}"#;

#[tokio::test]
async fn wrapped_string_built_ins_answer_as_node_does() {
    let result = Sandbox::new()
        .execute(include_str!("codemode_string_builtins.js"))
        .await;
    assert_eq!(
        result.value,
        Ok(Some(Value::String(STRING_BUILTINS_IN_NODE.to_owned())))
    );
}

#[tokio::test]
async fn wrapped_string_built_ins_throw_the_built_ins_errors() {
    // QuickJS's own messages, as the built-ins throw them unwrapped (`+x` says "bigint
    // argument with unary +" where they say "cannot convert BigInt to number"), and at once
    // where a count is out of range.
    let script = r#"const t = "abcabc";
const errors = [];
for (const f of [
    () => t.replaceAll(/c/, "C"),
    () => t.includes(/c/),
    () => String.prototype.indexOf.call(null, "a"),
    () => String.prototype.split.call(undefined, ","),
    () => t.indexOf(Symbol()),
    () => t.split("c", Symbol()),
    () => t.replace("c", () => Symbol()),
    () => t.replaceAll({ [Symbol.match]: true, flags: undefined }, "x"),
    () => t.split({ [Symbol.split]: 5 }),
    () => t.indexOf({ toString() { throw new RangeError("mine"); } }),
    () => t.split("-", 1n),
    () => t.lastIndexOf("b", 1n),
    () => "x".repeat(2n),
    () => "x".padEnd(3n),
    () => "x".repeat(Infinity),
    () => "x".repeat(-1),
    () => "ab".repeat(2 ** 30),
    () => "x".padEnd(2 ** 31),
    () => String.prototype.padStart.call(null, 2),
]) {
    try {
        f();
        errors.push("no error");
    } catch (e) {
        errors.push(`${e.name}: ${e.message}`);
    }
}
return errors;"#;
    let result = Sandbox::new().execute(script).await;
    assert_eq!(
        result.value,
        Ok(Some(json!([
            "TypeError: regexp must have the 'g' flag",
            "TypeError: regexp not supported",
            "TypeError: null or undefined are forbidden",
            "TypeError: cannot convert to object",
            "TypeError: cannot convert symbol to string",
            "TypeError: cannot convert symbol to number",
            "TypeError: cannot convert symbol to string",
            "TypeError: cannot convert to object",
            "TypeError: not a function",
            "RangeError: mine",
            "TypeError: cannot convert BigInt to number",
            "TypeError: cannot convert BigInt to number",
            "TypeError: cannot convert BigInt to number",
            "TypeError: cannot convert BigInt to number",
            "RangeError: invalid repeat count",
            "RangeError: invalid repeat count",
            "RangeError: invalid string length",
            "RangeError: invalid string length",
            "TypeError: null or undefined are forbidden",
        ])))
    );
}

#[tokio::test]
async fn windowed_string_searches_answer_as_the_built_ins_do() {
    // Some 800 searches of texts of 10,000 to 1,000,000 characters: more than the default
    // interrupt budget and time limit in a debug build.
    let result = Sandbox::new()
        .with_interrupt_budget(u64::MAX)
        .with_timeout_ms(600_000)
        .execute(include_str!("codemode_windowed_searches.js"))
        .await;
    let answer = result
        .value
        .expect("the script completes")
        .expect("its answer");
    assert_eq!(answer["failures"], json!([]));
    assert_eq!(answer["checks"], json!(842));
    // The needles' matches that split and replaceAll find, so that every path of a window
    // had matches to find (or none, where the case is a needle's absence).
    assert_eq!(
        answer["matches"],
        json!({
            "random17": 9, "random129": 3, "absent129": 0, "periodic": 269, "letter": 271,
            "edges-1": 4, "edges0": 4, "edges1": 4, "planted": 2, "nearMiss": 1,
            "longPrefix": 1, "afterRun": 1, "beforeRun": 1, "huge": 1, "hugeAbsent": 0,
            "wide": 2, "wideCut": 1,
        })
    );
}

/// The tools each request of an agent with these settings declares: `(name, description)`.
async fn declared(settings: &CodemodeSettings) -> Vec<(String, String)> {
    let mut tools = lookup_tools();
    tools.push(Arc::new(CodemodeTool::with_settings(settings)));
    let model = FauxModel::new().respond(FauxResponse::text("hi"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .build()
        .expect("the agent builds");
    agent.prompt("go").await.expect("the run completes");
    let requests = model.requests();
    (requests[0].tools.iter())
        .map(|tool| (tool.name.clone(), tool.description.clone()))
        .collect()
}

/// What the codemode description lists of [`lookup_tools`] in mode `on`: `get-user`, the
/// only tool that is not `direct`.
const LISTED_GET_USER: &str = "\n\nNested tools:\n\n### `get_user` (`get-user`)\nA user by id\n\n\
    codemode tool declaration:\n```ts\ndeclare const tools: { get_user(args: {\n  // @integer\n  \
    id: number;\n}): Promise<{ name?: string; }>; };\n```";

/// What it lists in mode `only` after `get-user`: every other callable tool.
const LISTED_DIRECT: &str = "\n\n### `orders`\nA user's orders\n\ncodemode tool declaration:\n\
    ```ts\ndeclare const tools: { orders(args: { user: string; }): Promise<string>; };\n```\n\n\
    ### `ping`\nAnswers pong\n\ncodemode tool declaration:\n```ts\n\
    declare const tools: { ping(args: { [key: string]: unknown; }): Promise<string>; };\n```\n\n\
    ### `broken`\nAlways fails\n\ncodemode tool declaration:\n```ts\n\
    declare const tools: { broken(args: { [key: string]: unknown; }): Promise<string>; };\n```";

#[tokio::test]
async fn requests_declare_the_codemode_tool_with_its_loadout() {
    let settings = CodemodeSettings::default();
    let declared = declared(&settings).await;
    let note = |name: &str, description: &str| {
        (
            name.to_owned(),
            format!("{description}\n\nCodemode: `tools.{name}(args)` resolves to a string."),
        )
    };
    assert_eq!(
        declared,
        vec![
            note("orders", "A user's orders"),
            note("ping", "Answers pong"),
            note("broken", "Always fails"),
            (
                "codemode".to_owned(),
                format!("{}{LISTED_GET_USER}", base_description(&settings))
            ),
        ]
    );
}

#[tokio::test]
async fn in_mode_only_requests_declare_the_codemode_tool_alone() {
    let settings = CodemodeSettings {
        mode: CodemodeMode::Only,
        ..CodemodeSettings::default()
    };
    let declared = declared(&settings).await;
    let description = format!(
        "{}{LISTED_GET_USER}{LISTED_DIRECT}",
        base_description(&settings)
    );
    assert_eq!(declared, vec![("codemode".to_owned(), description)]);
}
