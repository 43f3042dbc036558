//! Execution policy declared on a tool (`#[tool(timeout, retries, concurrency, max_output)]`,
//! `FnTool::with_policy`) and defaulted on the agent, enforced by the dispatcher: a timeout
//! with a tool that ignores its signal, a retry budget run out, a concurrency cap measured,
//! an output over the cap saved in full.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::agent::approval::ApprovalDecision;
use pi_runtime::agent::{Agent, BuildError, RunEnd, RunState};

use crate::approvals::key;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};

use crate::blocking_support::{Blocking, ON_TIME};
use pi_runtime::tool::{ApprovalPolicy, TempFileSaver, ToolPolicy};
use pi_runtime::{
    FnTool, Message, ToolCall, ToolContext, ToolDefinition, ToolError, ToolResult, tool,
};
use serde_json::json;

/// `(toolCallId, isError, text)` of every tool result.
fn results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

fn error(id: &str, text: &str) -> (String, bool, String) {
    (id.to_owned(), true, text.to_owned())
}

static STUBBORN_SAW_SIGNAL: AtomicBool = AtomicBool::new(false);

/// Never finishes, whatever its signal says.
#[tool(timeout = "50ms")]
async fn stubborn(ctx: ToolContext) -> String {
    loop {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if ctx.is_cancelled() {
            STUBBORN_SAW_SIGNAL.store(true, Ordering::SeqCst);
        }
    }
}

/// Stops as soon as it is told to.
#[tool(timeout = "50ms")]
async fn polite(ctx: ToolContext) -> String {
    ctx.signal().cancelled().await;
    "stopped early".to_owned()
}

#[test]
fn the_macro_declares_the_policy() {
    assert_eq!(
        Stubborn.settings().policy,
        ToolPolicy::new().with_timeout(Duration::from_millis(50))
    );
    assert_eq!(
        Query.settings().policy,
        ToolPolicy::new().with_concurrency("db", 3)
    );
    assert_eq!(Lookup.settings().policy, ToolPolicy::new().with_retries(2));
    assert_eq!(
        Dump.settings().policy,
        ToolPolicy::new().with_max_output(1024)
    );
}

#[tokio::test]
async fn a_tool_that_ignores_its_signal_times_out_after_the_grace_period() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "stubborn", json!({})));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(Stubborn)
        .build()
        .unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        results(&run),
        [error(
            "c1",
            "Tool \"stubborn\" timed out after 50ms, and it did not finish within 1s of being told to stop; it may still be running, so its work may yet be done"
        )]
    );
    assert!(
        STUBBORN_SAW_SIGNAL.load(Ordering::SeqCst),
        "the call's signal was cancelled"
    );
    // 50 ms, then the one-second grace period; the run goes on with the error result.
    assert!(
        elapsed >= Duration::from_millis(1_050) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn a_tool_that_stops_when_told_reads_as_timed_out_with_what_it_returned() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "polite", json!({})));
    let agent = Agent::builder().model(model).tools(Polite).build().unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&run),
        [error(
            "c1",
            "Tool \"polite\" timed out after 50ms and was told to stop; it ended afterwards, so its work may be done. It returned:\nstopped early"
        )]
    );
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn the_agent_default_timeout_applies_to_a_tool_without_one() {
    let idle = FnTool::new("idle", "Waits.", json!({"type": "object"}), |_, _| async {
        std::future::pending::<()>().await;
        Ok::<_, ToolError>(ToolResult::text("never"))
    });
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "idle", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools(idle)
        .tool_policy(ToolPolicy::new().with_timeout(Duration::from_millis(20)))
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&run),
        [error(
            "c1",
            "Tool \"idle\" timed out after 20ms, and it did not finish within 1s of being told to stop; it may still be running, so its work may yet be done"
        )]
    );
}

/// Look up a record.
#[tool(retries = 2)]
async fn lookup(id: u32) -> Result<String, ToolError> {
    match id {
        0 => Err(ToolError::retry("No record 0: ids start at 1")),
        1 => Err(ToolError::new("The database is down")),
        id => Ok(format!("record {id}")),
    }
}

fn call_lookup(id: &str, args: serde_json::Value) -> FauxResponse {
    FauxResponse::tool_call(id, "lookup", args)
}

const NOT_A_NUMBER: &str = "Validation failed for tool \"lookup\":\n  - id: expected integer, got string\n\nReceived arguments:\n{\n  \"id\": \"abc\"\n}";

#[tokio::test]
async fn validation_errors_past_the_retry_budget_end_the_run() {
    let model = FauxModel::new()
        .respond(call_lookup("c1", json!({"id": "abc"})))
        .respond(call_lookup("c2", json!({"id": "abc"})))
        .respond(call_lookup("c3", json!({"id": "abc"})))
        .respond(FauxResponse::text("never asked"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(Lookup)
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        run.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        }
    );
    assert_eq!(
        results(&run),
        [
            error("c1", NOT_A_NUMBER),
            error("c2", NOT_A_NUMBER),
            error("c3", NOT_A_NUMBER)
        ]
    );
    assert_eq!(
        model.request_count(),
        3,
        "no request after the third failure"
    );
    assert!(matches!(run.last(), Some(Message::ToolResult(_))));
}

#[tokio::test]
async fn explicit_retries_count_and_final_errors_do_not() {
    // Two retries, then a final error twice: still within the budget of two.
    let model = FauxModel::new()
        .respond(call_lookup("c1", json!({"id": 0})))
        .respond(call_lookup("c2", json!({"id": 0})))
        .respond(call_lookup("c3", json!({"id": 1})))
        .respond(call_lookup("c4", json!({"id": 1})))
        .respond(call_lookup("c5", json!({"id": 7})));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(Lookup)
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(
        results(&run),
        [
            error("c1", "No record 0: ids start at 1"),
            error("c2", "No record 0: ids start at 1"),
            error("c3", "The database is down"),
            error("c4", "The database is down"),
            ("c5".to_owned(), false, "record 7".to_owned()),
        ]
    );
    // One more retry is past the budget.
    model.push(call_lookup("c6", json!({"id": 0})));
    model.push(call_lookup("c7", json!({"id": 0})));
    model.push(call_lookup("c8", json!({"id": 0})));
    let run = agent.prompt("again").await.unwrap();
    assert_eq!(
        run.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        },
        "each run has its own budget: the third failure of this run ends it: {:?}",
        results(&run)
    );
    assert_eq!(results(&run).len(), 3);
}

/// Calls `lookup` through its context `n` times with an id that is not a number.
fn prober(n: usize) -> FnTool {
    FnTool::new(
        "probe",
        "Probes.",
        json!({"type": "object"}),
        move |_, ctx| async move {
            for _ in 0..n {
                let call = ToolCall::new("nested", "lookup", json!({"id": "abc"}));
                let result = ctx.call_tool(call).await;
                assert_eq!(result.text_content(), NOT_A_NUMBER);
            }
            Ok::<_, ToolError>(ToolResult::text("probed"))
        },
    )
}

#[tokio::test]
async fn nested_failures_count_toward_the_budget_with_the_models_own() {
    // One failed call of the model's, then two nested ones: three failures, budget two.
    let model = FauxModel::new()
        .respond(call_lookup("c1", json!({"id": "abc"})))
        .respond(FauxResponse::tool_call("c2", "probe", json!({})))
        .respond(FauxResponse::text("never asked"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools((Lookup, prober(2)))
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        run.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        }
    );
    assert_eq!(
        results(&run),
        [
            error("c1", NOT_A_NUMBER),
            ("c2".to_owned(), false, "probed".to_owned())
        ]
    );
    assert_eq!(
        model.request_count(),
        2,
        "no request after the probe's turn"
    );

    // Two nested failures alone are within the budget.
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "probe", json!({})))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools((Lookup, prober(2)))
        .build()
        .unwrap();
    assert_eq!(agent.prompt("go").await.unwrap().end, RunEnd::Completed);
}

#[tokio::test]
async fn run_tool_call_counts_toward_the_running_run_only() {
    let go = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let (wait_go, say_started) = (Arc::clone(&go), Arc::clone(&started));
    let gate = FnTool::new("gate", "Waits.", json!({"type": "object"}), move |_, _| {
        let (go, started) = (Arc::clone(&wait_go), Arc::clone(&say_started));
        async move {
            started.notify_one();
            go.notified().await;
            Ok::<_, ToolError>(ToolResult::text("open"))
        }
    });
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "gate", json!({})))
        .respond(FauxResponse::text("never asked"));
    let agent = Agent::builder()
        .model(model.clone())
        .tools((Lookup, gate))
        .build()
        .unwrap();
    // Between runs, failed calls count toward nothing.
    for _ in 0..3 {
        let result = agent
            .run_tool_call(ToolCall::new("x", "lookup", json!({"id": "abc"})))
            .await;
        assert_eq!(result.text_content(), NOT_A_NUMBER);
    }
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started.notified().await;
    // While the run waits for `gate`, three failed calls of `lookup` count toward its budget.
    for _ in 0..3 {
        let result = agent
            .run_tool_call(ToolCall::new("x", "lookup", json!({"id": "abc"})))
            .await;
        assert_eq!(result.text_content(), NOT_A_NUMBER);
    }
    go.notify_one();
    let run = running.await.unwrap().unwrap();
    assert_eq!(
        run.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        }
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn nested_failures_are_kept_across_a_pause_for_approval() {
    let agent = |model: &FauxModel| {
        let approve = FnTool::new(
            "deploy",
            "Deploys.",
            json!({"type": "object"}),
            |_, _| async { Ok::<_, ToolError>(ToolResult::text("deployed")) },
        )
        .with_approval(ApprovalPolicy::Always);
        Agent::builder()
            .model(model.clone())
            .tools((Lookup, prober(2), approve))
            .build()
            .unwrap()
    };
    // Two nested failures, then a pause; after it, one more failure goes past the budget.
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "probe", json!({})))
        .respond(FauxResponse::tool_call("c2", "deploy", json!({})))
        .respond(call_lookup("c3", json!({"id": "abc"})))
        .respond(FauxResponse::text("never asked"));
    let run = agent(&model).prompt("go").await.unwrap();
    assert!(
        matches!(run.end, RunEnd::AwaitingApproval { .. }),
        "{:?}",
        run.end
    );
    let saved = run.paused_state().unwrap().to_signed_json(&key());
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let resumed = agent(&model)
        .resume_with(state, [ApprovalDecision::approve("c2")])
        .await
        .unwrap();
    assert_eq!(
        resumed.end,
        RunEnd::RetriesExhausted {
            tool: "lookup".to_owned(),
            retries: 2
        },
        "{:?}",
        results(&resumed)
    );
    assert_eq!(model.request_count(), 3);
}

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

async fn hold_a_connection() -> String {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(30)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    "ok".to_owned()
}

/// Query the database.
#[tool(concurrency = "db:3")]
async fn query() -> String {
    hold_a_connection().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_limit_caps_every_tool_naming_it() {
    // Another tool naming the same limit shares its three permits.
    let migrate = FnTool::new(
        "migrate",
        "Migrate.",
        json!({"type": "object"}),
        |_, _| async { Ok::<_, ToolError>(ToolResult::text(hold_a_connection().await)) },
    )
    .with_policy(ToolPolicy::new().with_concurrency("db", 3));
    let mut response = FauxResponse::new(Vec::new());
    for i in 0..12 {
        let name = if i % 2 == 0 { "query" } else { "migrate" };
        response = response.and_tool_call(format!("c{i}"), name, json!({}));
    }
    let model = FauxModel::new().respond(response);
    let agent = Agent::builder()
        .model(model)
        .tools((Query, migrate))
        .build()
        .unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        results(&run)
            .iter()
            .all(|(_, is_error, text)| !is_error && text == "ok")
    );
    assert_eq!(
        MOST.load(Ordering::SeqCst),
        3,
        "at most three calls held the limit at once"
    );
    // Twelve calls of 30 ms, three at a time: four rounds.
    assert!(elapsed >= Duration::from_millis(120), "{elapsed:?}");
}

#[test]
fn two_tools_naming_one_limit_with_other_permits_do_not_build() {
    let other = FnTool::new("other", "Other.", json!({"type": "object"}), |_, _| async {
        Ok::<_, ToolError>(ToolResult::text("ok"))
    })
    .with_policy(ToolPolicy::new().with_concurrency("db", 5));
    let error = Agent::builder()
        .model(FauxModel::new())
        .tools((Query, other))
        .build()
        .unwrap_err();
    assert!(matches!(error, BuildError::Concurrency(_)));
    assert_eq!(
        error.to_string(),
        "tool \"other\" declares concurrency \"db:5\", but the limit \"db\" already has 3 permits: give every tool naming a limit the same permits"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_cap_limits_calls_running_at_once() {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (r, m) = (Arc::clone(&running), Arc::clone(&most));
    let work = FnTool::new("work", "Work.", json!({"type": "object"}), move |_, _| {
        let (running, most) = (Arc::clone(&r), Arc::clone(&m));
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, ToolError>(ToolResult::text("done"))
        }
    });
    let mut response = FauxResponse::new(Vec::new());
    for i in 0..8 {
        response = response.and_tool_call(format!("c{i}"), "work", json!({}));
    }
    let agent = Agent::builder()
        .model(FauxModel::new().respond(response))
        .tools(work)
        .max_parallel_tool_calls(2)
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(results(&run).len(), 8);
    assert_eq!(most.load(Ordering::SeqCst), 2);
}

/// Dump the log.
#[tool(max_output = "1KiB")]
async fn dump() -> String {
    (0..500).map(|i| format!("line {i:04}\n")).collect()
}

#[tokio::test]
async fn output_over_the_cap_is_cut_and_saved_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "dump", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools(Dump)
        .output_saver(TempFileSaver::in_dir(dir.path()))
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    let Some(Message::ToolResult(result)) = run.get(2) else {
        panic!("a tool result: {run:?}");
    };
    let full: String = (0..500).map(|i| format!("line {i:04}\n")).collect();
    let path = result
        .details
        .as_ref()
        .and_then(|d| d["fullOutputPath"].as_str())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        full,
        "saved in full"
    );
    assert!(std::path::Path::new(path).starts_with(dir.path()));
    assert_eq!(
        result.text(),
        format!(
            "Warning: truncated output (original token count: 1250)\nTotal output lines: 500\n\n{}…3976 chars truncated…{}\n\n[Full output: {path} (read it with offset/limit)]",
            &full[..512],
            &full[4488..],
        )
    );
    assert!(!result.is_error);
}

const BLOCKED_TIMED_OUT: &str = "Tool \"blocker\" timed out after 200ms, and it did not finish within 1s of being told to stop; it may still be running, so its work may yet be done";

/// Runs the agent's prompt, checks every result is the timeout's, and returns the time taken.
async fn timed_out_calls(agent: &Agent, ids: &[&str]) -> Duration {
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();
    let expected: Vec<_> = ids.iter().map(|id| error(id, BLOCKED_TIMED_OUT)).collect();
    assert_eq!(results(&run), expected);
    assert_eq!(run.end, RunEnd::Completed);
    elapsed
}

fn calls_of(tool: &str, ids: &[&str]) -> FauxResponse {
    let mut response = FauxResponse::new(Vec::new());
    for id in ids {
        response = response.and_tool_call(*id, tool, json!({}));
    }
    response
}

/// Seen before the fix: a one-call batch runs on the run's own task, so the tool's blocking
/// held the timer with it, and the call "succeeded" after the tool's full block.
#[tokio::test]
async fn a_tool_that_blocks_its_thread_times_out_on_time_alone_in_its_batch() {
    let blocking = Blocking::default();
    let model = FauxModel::new().respond(calls_of("blocker", &["c1"]));
    let agent = Agent::builder()
        .model(model)
        .tools(blocking.tool("blocker"))
        .build()
        .unwrap();
    let elapsed = timed_out_calls(&agent, &["c1"]).await;
    // The call was abandoned while its thread still blocks.
    assert_eq!(blocking.blocking(), 1);
    blocking.release().await;
    assert!(
        elapsed >= Duration::from_millis(1_200) && elapsed < ON_TIME,
        "{elapsed:?}"
    );
}

/// Three calls blocking at once, more than the runtime has worker threads: each still times
/// out on time, and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_block_their_threads_time_out_on_time_in_a_parallel_batch() {
    let blocking = Blocking::default();
    let ids = ["c1", "c2", "c3"];
    let model = FauxModel::new().respond(calls_of("blocker", &ids));
    let agent = Agent::builder()
        .model(model)
        .tools(blocking.tool("blocker"))
        .build()
        .unwrap();
    let elapsed = timed_out_calls(&agent, &ids).await;
    assert_eq!(blocking.blocking(), 3);
    blocking.release().await;
    // Side by side: one timeout and one grace period for the three.
    assert!(
        elapsed >= Duration::from_millis(1_200) && elapsed < ON_TIME,
        "{elapsed:?}"
    );
}

/// In a sequential batch each call times out on time after the one before it.
#[tokio::test]
async fn tools_that_block_their_threads_time_out_on_time_one_after_another() {
    let blocking = Blocking::default();
    let ids = ["c1", "c2"];
    let model = FauxModel::new().respond(calls_of("blocker", &ids));
    let agent = Agent::builder()
        .model(model)
        .tools(
            blocking
                .tool("blocker")
                .with_mode(pi_runtime::ExecutionMode::Sequential),
        )
        .build()
        .unwrap();
    let elapsed = timed_out_calls(&agent, &ids).await;
    assert_eq!(blocking.blocking(), 2);
    blocking.release().await;
    assert!(
        elapsed >= Duration::from_millis(2_400) && elapsed < ON_TIME + Duration::from_secs(2),
        "{elapsed:?}"
    );
}

/// A tool's own call of a blocking tool (as code mode makes them) times out on time too.
#[tokio::test]
async fn a_nested_call_of_a_tool_that_blocks_its_thread_times_out_on_time() {
    let blocking = Blocking::default();
    let caller = FnTool::new(
        "caller",
        "Calls blocker.",
        json!({"type": "object"}),
        |_, ctx| async move {
            let result = ctx
                .call_tool(ToolCall::new("n1", "blocker", json!({})))
                .await;
            Ok::<_, ToolError>(ToolResult::text(format!(
                "nested: {}",
                result.text_content()
            )))
        },
    );
    let model = FauxModel::new().respond(calls_of("caller", &["c1"]));
    let agent = Agent::builder()
        .model(model)
        .tools((blocking.tool("blocker"), caller))
        .build()
        .unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    let elapsed = started.elapsed();
    blocking.release().await;
    assert_eq!(
        results(&run),
        [(
            "c1".to_owned(),
            false,
            format!("nested: {BLOCKED_TIMED_OUT}")
        )]
    );
    assert!(elapsed < ON_TIME, "{elapsed:?}");
}

/// Seen before the fix: a tool that ended within the grace period, its work done, read as a
/// bare "timed out", so a model retrying it did the work twice.
#[tokio::test]
async fn a_tool_that_ends_in_the_grace_period_delivers_its_late_result() {
    let done = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&done);
    let late = FnTool::new(
        "late",
        "Works late.",
        json!({"type": "object"}),
        move |_, _| {
            let done = Arc::clone(&counter);
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(ToolResult::text("wrote 3 rows"))
            }
        },
    )
    .with_policy(ToolPolicy::new().with_timeout(Duration::from_millis(100)));
    let model = FauxModel::new().respond(calls_of("late", &["c1"]));
    let agent = Agent::builder().model(model).tools(late).build().unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&run),
        [error(
            "c1",
            "Tool \"late\" timed out after 100ms and was told to stop; it ended afterwards, so its work may be done. It returned:\nwrote 3 rows"
        )]
    );
    assert_eq!(done.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() < Duration::from_secs(3));
}
