//! The ordering guarantees of SPEC §5.5, asserted on whole event traces.
//!
//! No test here depends on how long a sleep really takes, which a loaded machine
//! stretches: orders come from gates the tools wait on, sleeps on one thread run on tokio's
//! paused clock, and the one real-time overlap check has a bound that only running the two
//! calls one after the other could break.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{CancellationToken, ExecutionMode, FnTool, ToolError, ToolResult};
use serde_json::{Value, json};

/// A tool that reports one update, then sleeps `ms`, then echoes its arguments.
fn sleeper(name: &str, ms: u64) -> FnTool {
    FnTool::new(
        name,
        "Sleeps, then echoes.",
        json!({"type": "object", "properties": {"msg": {"type": "string"}}}),
        move |args: Value, ctx| async move {
            ctx.update(ToolResult::text("working"));
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, ToolError>(ToolResult::text(args.to_string()))
        },
    )
}

/// A tool that waits for `start`, reports one update, waits for `finish`, then echoes its
/// arguments. A gate is a token that cancelling opens, for good.
fn gated(name: &str, start: &CancellationToken, finish: &CancellationToken) -> FnTool {
    let (start, finish) = (start.clone(), finish.clone());
    FnTool::new(
        name,
        "Waits for its gates, then echoes.",
        json!({"type": "object", "properties": {"msg": {"type": "string"}}}),
        move |args: Value, ctx| {
            let (start, finish) = (start.clone(), finish.clone());
            async move {
                start.cancelled().await;
                ctx.update(ToolResult::text("working"));
                finish.cancelled().await;
                Ok::<_, ToolError>(ToolResult::text(args.to_string()))
            }
        },
    )
}

/// A gate already open.
fn open_gate() -> CancellationToken {
    let gate = CancellationToken::new();
    gate.cancel();
    gate
}

/// Open `gate` once `agent` emits an event that `opens` accepts.
fn open_on(
    agent: &Agent,
    gate: &CancellationToken,
    opens: impl Fn(&AgentEvent) -> bool + Send + Sync + 'static,
) {
    let gate = gate.clone();
    agent.on_event(move |event| {
        if opens(event) {
            gate.cancel();
        }
    });
}

/// Record every event except `message_update` as a short line.
fn record(agent: &Agent) -> Arc<Mutex<Vec<String>>> {
    let trace = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&trace);
    agent.on_event(move |event| {
        let line = match event {
            AgentEvent::MessageUpdate { .. } => None,
            AgentEvent::MessageStart { message } => Some(format!("start {}", message.role())),
            AgentEvent::MessageEnd { message } => Some(format!("end {}", message.role())),
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                Some(format!("tool_start {tool_call_id}"))
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
                Some(format!("update {tool_call_id}"))
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                Some(format!("tool_end {tool_call_id}"))
            }
            AgentEvent::TurnEnd { tool_results, .. } => {
                let ids: Vec<_> = tool_results
                    .iter()
                    .map(|r| r.tool_call_id.as_str())
                    .collect();
                Some(format!("turn_end [{}]", ids.join(",")))
            }
            other => Some(other.kind().to_owned()),
        };
        if let Some(line) = line {
            sink.lock().unwrap().push(line);
        }
    });
    trace
}

fn three_calls() -> FauxResponse {
    FauxResponse::tool_call("c1", "slow", json!({"msg": "a"}))
        .and_tool_call("c2", "fast", json!({"msg": "b"}))
        .and_tool_call("c3", "missing", json!({}))
}

// The calls are tasks of their own on a multi-thread runtime and futures of the loop's task
// on a current-thread one: both give the same trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_batch_follows_the_verified_trace() {
    parallel_batch_trace().await;
}

#[tokio::test]
async fn parallel_batch_follows_the_verified_trace_on_one_thread() {
    parallel_batch_trace().await;
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_overlap_on_one_thread() {
    let elapsed = two_calls_take((sleeper("a", 150), sleeper("b", 150))).await;
    // The paused clock moves only when every task waits: one call after the other would
    // take it 300 ms on.
    assert!(
        elapsed < Duration::from_millis(300),
        "two 150 ms tools took {elapsed:?}: they did not overlap"
    );
}

/// How long a run takes whose one response calls `a` and `b`, on tokio's clock (the real
/// one unless the test paused it).
async fn two_calls_take(tools: impl pi_runtime::ToolSet) -> Duration {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "a", json!({})).and_tool_call("c2", "b", json!({})));
    let agent = Agent::builder().model(model).tools(tools).build().unwrap();
    let started = tokio::time::Instant::now();
    agent.prompt("go").await.unwrap();
    started.elapsed()
}

/// The slow call (c1) ends after the fast one (c2), and c2 updates after c1: gates, opened
/// by the events themselves, make that order whatever the scheduler does.
async fn parallel_batch_trace() {
    let model = FauxModel::new().respond(three_calls());
    let (c1_updated, c2_ended) = (CancellationToken::new(), CancellationToken::new());
    let agent = Agent::builder()
        .model(model)
        .tools((
            gated("slow", &open_gate(), &c2_ended),
            gated("fast", &c1_updated, &open_gate()),
        ))
        .build()
        .unwrap();
    open_on(
        &agent,
        &c1_updated,
        |event| matches!(event, AgentEvent::ToolExecutionUpdate { tool_call_id, .. } if tool_call_id == "c1"),
    );
    open_on(
        &agent,
        &c2_ended,
        |event| matches!(event, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "c2"),
    );
    let trace = record(&agent);
    agent.prompt("go").await.unwrap();
    let trace = trace.lock().unwrap().clone();
    assert_eq!(
        trace,
        [
            "agent_start",
            "turn_start",
            "start user",
            "end user",
            "start assistant",
            // The assistant's message_end is processed before any preflight.
            "end assistant",
            // Starts in source order; the immediate outcome ends during the preflight.
            "tool_start c1",
            "tool_start c2",
            "tool_start c3",
            "tool_end c3",
            // Executed calls end in completion order, each after its updates.
            "update c1",
            "update c2",
            "tool_end c2",
            "tool_end c1",
            // Results in source order.
            "start toolResult",
            "end toolResult",
            "start toolResult",
            "end toolResult",
            "start toolResult",
            "end toolResult",
            "turn_end [c1,c2,c3]",
            "turn_start",
            "start assistant",
            "end assistant",
            "turn_end []",
            "agent_end",
        ]
    );
    let results: Vec<_> = agent
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            pi_runtime::Message::ToolResult(r) => {
                Some((r.tool_call_id.clone(), r.is_error, r.text()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1".to_owned(), false, r#"{"msg":"a"}"#.to_owned()),
            ("c2".to_owned(), false, r#"{"msg":"b"}"#.to_owned()),
            ("c3".to_owned(), true, "Tool missing not found".to_owned()),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn sequential_mode_keeps_everything_in_source_order() {
    let model = FauxModel::new().respond(three_calls());
    let agent = Agent::builder()
        .model(model)
        .tools((sleeper("slow", 30), sleeper("fast", 1)))
        .tool_execution(ExecutionMode::Sequential)
        .build()
        .unwrap();
    let trace = record(&agent);
    agent.prompt("go").await.unwrap();
    let trace = trace.lock().unwrap();
    let tool_part: Vec<_> = trace
        .iter()
        .skip_while(|line| *line != "end assistant")
        .skip(1)
        .take_while(|line| !line.starts_with("turn_end"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tool_part,
        [
            "tool_start c1",
            "update c1",
            "tool_end c1",
            "start toolResult",
            "end toolResult",
            "tool_start c2",
            "update c2",
            "tool_end c2",
            "start toolResult",
            "end toolResult",
            "tool_start c3",
            "tool_end c3",
            "start toolResult",
            "end toolResult",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn one_sequential_tool_makes_the_whole_batch_sequential() {
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "slow", json!({}))
            .and_tool_call("c2", "fast", json!({}))
            .and_tool_call("c3", "careful", json!({})),
    );
    let careful = sleeper("careful", 1).with_mode(ExecutionMode::Sequential);
    let agent = Agent::builder()
        .model(model)
        .tools((sleeper("slow", 30), sleeper("fast", 1), careful))
        .build()
        .unwrap();
    let trace = record(&agent);
    agent.prompt("go").await.unwrap();
    let ends: Vec<_> = trace
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("tool_end"))
        .cloned()
        .collect();
    assert_eq!(ends, ["tool_end c1", "tool_end c2", "tool_end c3"]);
}

/// The one test here on the real clock: on two threads, two calls that block their thread
/// really overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_tools_really_run_in_parallel() {
    const BLOCK: Duration = Duration::from_secs(1);
    let blocking = |name: &str| {
        FnTool::new(
            name,
            "Blocks its thread.",
            json!({"type": "object"}),
            |_, _| async {
                std::thread::sleep(BLOCK);
                Ok::<_, ToolError>(ToolResult::text("done"))
            },
        )
    };
    let elapsed = two_calls_take((blocking("a"), blocking("b"))).await;
    // A thread sleeps at least as long as asked, so one call after the other takes 2 s or
    // more however loaded the machine; overlapping calls leave a whole second for everything
    // else the run does, which takes milliseconds even on a busy machine.
    assert!(
        elapsed < 2 * BLOCK,
        "two 1 s calls took {elapsed:?}: they did not overlap"
    );
}

#[tokio::test]
async fn instant_parallel_calls_end_in_source_order() {
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "a", json!({}))
            .and_tool_call("c2", "b", json!({}))
            .and_tool_call("c3", "a", json!({})),
    );
    let instant = |name: &str| {
        FnTool::new(
            name,
            "Returns at once.",
            json!({"type": "object"}),
            |_, _| async { Ok::<_, ToolError>(ToolResult::text("ok")) },
        )
    };
    let agent = Agent::builder()
        .model(model)
        .tools((instant("a"), instant("b")))
        .build()
        .unwrap();
    let trace = record(&agent);
    agent.prompt("go").await.unwrap();
    let ends: Vec<_> = trace
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.starts_with("tool_end"))
        .cloned()
        .collect();
    assert_eq!(ends, ["tool_end c1", "tool_end c2", "tool_end c3"]);
}

#[tokio::test]
async fn updates_after_the_tool_finished_are_ignored() {
    let (tool_ended, late_sent) = (CancellationToken::new(), CancellationToken::new());
    let (ended, sent) = (tool_ended.clone(), late_sent.clone());
    let late = FnTool::new(
        "late",
        "Updates too late.",
        json!({"type": "object"}),
        move |_, ctx| {
            let (ended, sent) = (ended.clone(), sent.clone());
            async move {
                ctx.update(ToolResult::text("in time"));
                let handle = ctx.clone();
                tokio::spawn(async move {
                    ended.cancelled().await;
                    handle.update(ToolResult::text("too late"));
                    sent.cancel();
                });
                Ok::<_, ToolError>(ToolResult::text("done"))
            }
        },
    );
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "late", json!({})));
    let agent = Agent::builder().model(model).tools(late).build().unwrap();
    open_on(&agent, &tool_ended, |event| {
        matches!(event, AgentEvent::ToolExecutionEnd { .. })
    });
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    agent.on_event(move |event| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = event {
            sink.lock().unwrap().push(partial_result.text_content());
        }
    });
    agent.prompt("go").await.unwrap();
    late_sent.cancelled().await;
    assert_eq!(*updates.lock().unwrap(), ["in time"]);
}
