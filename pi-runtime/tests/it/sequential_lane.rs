//! One rule for "a sequential tool runs alone" (issue 36, item 3): a sequential tool called
//! from a script never overlaps the calls of a parallel batch running beside the code-mode
//! call, and two scripts that both call it (or one script twice at once) neither overlap nor
//! wait for each other forever.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_runtime::agent::Agent;
use pi_runtime::codemode::CodemodeTool;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{ExecutionMode, FnTool, Message, ToolCall, ToolDefinition, ToolResult};
use serde_json::json;

/// When each call of a tool ran: (tool, start, end).
type Spans = Arc<Mutex<Vec<(&'static str, Instant, Instant)>>>;

/// A tool that runs for `time` and records when.
fn timed(name: &'static str, time: Duration, mode: ExecutionMode, spans: &Spans) -> FnTool {
    let spans = Arc::clone(spans);
    FnTool::new(
        name,
        "Takes a while.",
        json!({"type": "object"}),
        move |_, _| {
            let spans = Arc::clone(&spans);
            async move {
                let start = Instant::now();
                tokio::time::sleep(time).await;
                spans.lock().unwrap().push((name, start, Instant::now()));
                Ok(ToolResult::text(name))
            }
        },
    )
    .with_mode(mode)
}

/// A parallel tool that calls `alone` through its own context.
fn relay() -> FnTool {
    FnTool::new(
        "relay",
        "Calls the sequential tool.",
        json!({"type": "object"}),
        |_, ctx| async move {
            let result = ctx.call_tool(ToolCall::new("r1", "alone", json!({}))).await;
            Ok(result)
        },
    )
}

/// Run one batch of `calls` (id, tool, arguments) at once, with `slow` (parallel), `alone`
/// (sequential) and `relay` beside code mode; every call's result must be a success.
async fn batch(calls: &[(&str, &str, serde_json::Value)], spans: &Spans) {
    let tools: Vec<Arc<dyn ToolDefinition>> = vec![
        Arc::new(timed(
            "slow",
            Duration::from_millis(300),
            ExecutionMode::Parallel,
            spans,
        )),
        Arc::new(timed(
            "alone",
            Duration::from_millis(100),
            ExecutionMode::Sequential,
            spans,
        )),
        Arc::new(relay()),
        Arc::new(CodemodeTool::new()),
    ];
    let (id, tool, args) = &calls[0];
    let response = (calls[1..].iter()).fold(
        FauxResponse::tool_call(*id, *tool, args.clone()),
        |response, (id, tool, args)| response.and_tool_call(*id, *tool, args.clone()),
    );
    let model = FauxModel::new()
        .respond(response)
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder().model(model).tools(tools).build().unwrap();
    let run = tokio::time::timeout(Duration::from_secs(20), agent.prompt("go"))
        .await
        .expect("the batch ends: no call waits for another forever")
        .unwrap();
    for message in run.iter() {
        if let Message::ToolResult(result) = message {
            assert!(
                !result.is_error,
                "{}: {}",
                result.tool_call_id,
                result.text()
            );
        }
    }
}

/// Whether two time spans overlap.
fn overlap(a: (Instant, Instant), b: (Instant, Instant)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// No call of `alone` overlaps any other recorded call.
fn assert_alone(spans: &Spans) {
    let spans = spans.lock().unwrap();
    let alone: Vec<_> = spans.iter().filter(|(name, ..)| *name == "alone").collect();
    assert!(!alone.is_empty(), "the sequential tool ran");
    for (index, (name, start, end)) in spans.iter().enumerate() {
        for (other, (other_name, other_start, other_end)) in spans.iter().enumerate() {
            let either_alone = *name == "alone" || *other_name == "alone";
            if index != other && either_alone {
                assert!(
                    !overlap((*start, *end), (*other_start, *other_end)),
                    "{name} and {other_name} overlapped"
                );
            }
        }
    }
}

/// Run `calls` as one batch, check that no call of `alone` overlapped another, and count
/// the calls recorded.
async fn calls_beside_alone(calls: &[(&str, &str, serde_json::Value)]) -> usize {
    let spans = Spans::default();
    batch(calls, &spans).await;
    assert_alone(&spans);
    spans.lock().unwrap().len()
}

const SCRIPT: &str = "await tools.alone({}); return 'ok';";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sequential_tool_called_from_a_script_never_overlaps_the_batch_beside_it() {
    let recorded = calls_beside_alone(&[
        ("c1", "slow", json!({})),
        ("c2", "codemode", json!({"code": SCRIPT})),
        ("c3", "slow", json!({})),
    ])
    .await;
    assert_eq!(recorded, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_scripts_calling_a_sequential_tool_take_turns() {
    let recorded = calls_beside_alone(&[
        ("c1", "codemode", json!({"code": SCRIPT})),
        ("c2", "codemode", json!({"code": SCRIPT})),
        ("c3", "slow", json!({})),
    ])
    .await;
    assert_eq!(recorded, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_script_calling_a_sequential_tool_twice_at_once_takes_turns() {
    let script = "await Promise.all([tools.alone({}), tools.alone({})]); return 'ok';";
    let recorded = calls_beside_alone(&[
        ("c1", "slow", json!({})),
        ("c2", "codemode", json!({"code": script})),
    ])
    .await;
    assert_eq!(recorded, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sequential_tool_two_calls_deep_waits_for_the_batch_not_for_its_caller() {
    // The script calls `relay` (parallel), which calls `alone` through its own context: the
    // share `alone` must wait for is the code-mode call's, two levels up.
    let script = "await tools.relay({}); return 'ok';";
    let recorded = calls_beside_alone(&[
        ("c1", "slow", json!({})),
        ("c2", "codemode", json!({"code": script})),
    ])
    .await;
    assert_eq!(recorded, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_script_run_alone_calls_its_tools_under_its_own_hold() {
    // A sequential code-mode call holds the whole lane: its nested calls, sequential or
    // not, run under it instead of waiting for it.
    let spans = Spans::default();
    let script = "await tools.alone({}); await tools.slow({}); return 'ok';";
    let tools: Vec<Arc<dyn ToolDefinition>> = vec![
        Arc::new(timed(
            "slow",
            Duration::from_millis(50),
            ExecutionMode::Parallel,
            &spans,
        )),
        Arc::new(timed(
            "alone",
            Duration::from_millis(50),
            ExecutionMode::Sequential,
            &spans,
        )),
        Arc::new(CodemodeTool::new()),
    ];
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "codemode",
            json!({"code": script}),
        ))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .tool_execution(ExecutionMode::Sequential)
        .build()
        .unwrap();
    let run = tokio::time::timeout(Duration::from_secs(20), agent.prompt("go"))
        .await
        .expect("nested calls do not wait for their own parent")
        .unwrap();
    let result = run.iter().find_map(Message::as_tool_result).unwrap();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(spans.lock().unwrap().len(), 2);
}
