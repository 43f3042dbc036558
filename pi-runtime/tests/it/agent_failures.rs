//! Failures stay inside the run: panicking tools and hooks, failing hooks, aborts,
//! truncated and failed responses (SPEC §3.4, §3.5, §5.7–§5.9).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pi_runtime::agent::{Agent, ToolCallDecision, ToolResultPatch};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, Message, StopReason, ToolError, ToolResult};
use serde_json::json;

fn echo() -> FnTool {
    FnTool::new(
        "echo",
        "Echo.",
        json!({"type": "object"}),
        |args, _| async move { Ok::<_, ToolError>(ToolResult::text(args.to_string())) },
    )
}

/// `(toolCallId, isError, text)` of every result in the transcript.
fn results(agent: &Agent) -> Vec<(String, bool, String)> {
    agent
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

fn last_assistant(agent: &Agent) -> std::sync::Arc<pi_runtime::AssistantMessage> {
    agent
        .messages()
        .into_iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant(a) => Some(a),
            _ => None,
        })
        .expect("an assistant message")
}

fn error(id: &str, text: &str) -> (String, bool, String) {
    (id.to_owned(), true, text.to_owned())
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_run_goes_on() {
    let boom = FnTool::new("boom", "Panics.", json!({"type": "object"}), |_, _| async {
        if true {
            panic!("index out of bounds: the len is 0 but the index is 3");
        }
        Ok::<_, ToolError>(ToolResult::text("unreachable"))
    });
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "boom", json!({})).and_tool_call(
            "c2",
            "echo",
            json!({"x": 1}),
        ),
    );
    let agent = Agent::builder()
        .model(model.clone())
        .tools((boom, echo()))
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&agent),
        [
            error("c1", "index out of bounds: the len is 0 but the index is 3"),
            ("c2".to_owned(), false, r#"{"x":1}"#.to_owned()),
        ]
    );
    assert_eq!(model.request_count(), 2);
    assert_eq!(last_assistant(&agent).text(), "(done)");
}

#[tokio::test]
async fn failing_and_panicking_hooks_become_error_results() {
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "echo", json!({"who": "before-fails"}))
            .and_tool_call("c2", "echo", json!({"who": "after-fails"}))
            .and_tool_call("c3", "echo", json!({"who": "after-panics"}))
            .and_tool_call("c4", "echo", json!({"who": "fine"})),
    );
    let agent = Agent::builder()
        .model(model)
        .tools(echo())
        .before_tool_call(|call| async move {
            match call.args["who"].as_str() {
                Some("before-fails") => Err(ToolError::new("permission service unavailable")),
                _ => Ok(ToolCallDecision::Allow),
            }
        })
        .after_tool_call(|call| async move {
            match call.args["who"].as_str() {
                Some("after-fails") => Err(ToolError::new("audit log is full")),
                Some("after-panics") => panic!("audit hook crashed"),
                _ => Ok(ToolResultPatch::default()),
            }
        })
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&agent),
        [
            error("c1", "permission service unavailable"),
            error("c2", "audit log is full"),
            error("c3", "audit hook crashed"),
            ("c4".to_owned(), false, r#"{"who":"fine"}"#.to_owned()),
        ]
    );
}

#[tokio::test]
async fn before_hooks_can_block_replace_arguments_and_terminate() {
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "echo", json!({"cmd": "rm -rf /"})).and_tool_call(
            "c2",
            "echo",
            json!({"cmd": "ls"}),
        ),
    );
    let agent = Agent::builder()
        .model(model.clone())
        .tools(echo())
        .before_tool_call(|call| async move {
            Ok(match call.args["cmd"].as_str() {
                Some("ls") => ToolCallDecision::Replace(json!({"cmd": "ls -la"})),
                _ => ToolCallDecision::block("Deleting files is not allowed"),
            })
        })
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(
        results(&agent),
        [
            error("c1", "Deleting files is not allowed"),
            ("c2".to_owned(), false, r#"{"cmd":"ls -la"}"#.to_owned()),
        ]
    );
    // The transcript keeps the model's own arguments.
    let call = last_assistant_with_calls(&agent);
    assert_eq!(call[1].arguments, json!({"cmd": "ls"}));

    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "echo", json!({})));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(echo())
        .before_tool_call(|_| async {
            Ok(ToolCallDecision::Block {
                reason: None,
                terminate: true,
            })
        })
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(results(&agent), [error("c1", "Tool execution was blocked")]);
    assert_eq!(model.request_count(), 1, "a terminating block ends the run");
}

fn last_assistant_with_calls(agent: &Agent) -> Vec<pi_runtime::ToolCall> {
    agent
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.tool_calls().cloned().collect::<Vec<_>>()),
            _ => None,
        })
        .find(|calls| !calls.is_empty())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_abort_while_a_tool_runs_reaches_the_tool_and_ends_the_run() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&saw_cancel);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let waiter = FnTool::new(
        "wait",
        "Waits for the run to end.",
        json!({"type": "object"}),
        move |_, ctx| {
            let seen = Arc::clone(&seen);
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            async move {
                tokio::select! {
                    () = ctx.signal().cancelled() => {
                        seen.store(true, Ordering::SeqCst);
                        Err(ToolError::new("stopped: the run was aborted"))
                    }
                    () = tokio::time::sleep(Duration::from_secs(10)) => Ok(ToolResult::text("slept")),
                }
            }
        },
    );
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "wait", json!({})));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(waiter)
        .build()
        .unwrap();
    let aborter = agent.clone();
    tokio::spawn(async move {
        if started_rx.await.is_ok() {
            aborter.abort();
        }
    });
    agent.prompt("go").await.unwrap();
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the tool saw the cancellation"
    );
    assert_eq!(
        results(&agent),
        [error("c1", "stopped: the run was aborted")]
    );
    let last = last_assistant(&agent);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Request was aborted"));
    assert!(last.content.is_empty());
    assert_eq!(model.request_count(), 1, "no request after the abort");
    assert_eq!(
        agent.error_message().as_deref(),
        Some("Request was aborted")
    );
}

#[tokio::test]
async fn a_length_stop_runs_no_call_and_asks_again() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let tool = FnTool::new("write", "Write.", json!({"type": "object"}), move |_, _| {
        flag.store(true, Ordering::SeqCst);
        async { Ok::<_, ToolError>(ToolResult::text("written")) }
    });
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "write", json!({"path": "a"}))
            .and_tool_call("c2", "nope", json!({}))
            .with_stop_reason(StopReason::Length),
    );
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tool)
        .build()
        .unwrap();
    agent.prompt("go").await.unwrap();
    let truncated = |name: &str| {
        format!(
            "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
        )
    };
    assert_eq!(
        results(&agent),
        [
            error("c1", &truncated("write")),
            error("c2", &truncated("nope"))
        ]
    );
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn an_error_response_ends_the_run_without_running_its_calls() {
    let model = FauxModel::new().respond(
        FauxResponse::tool_call("c1", "echo", json!({}))
            .with_error(StopReason::Error, "connection reset"),
    );
    let agent = Agent::builder()
        .model(model.clone())
        .tools(echo())
        .build()
        .unwrap();
    let messages = agent.prompt("go").await.unwrap();
    let roles: Vec<_> = messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(agent.error_message().as_deref(), Some("connection reset"));
    assert_eq!(model.request_count(), 1);
}

/// A tool that never returns and never looks at its signal.
fn stuck() -> FnTool {
    FnTool::new("stuck", "Hangs.", json!({"type": "object"}), |_, _| async {
        std::future::pending::<()>().await;
        Ok::<_, ToolError>(ToolResult::text("never"))
    })
}

// On the paused clock, which moves only when every task waits: the run's own timers decide
// what happens, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn a_time_limit_ends_the_run_even_when_a_tool_ignores_its_signal() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "stuck", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools(stuck())
        .time_limit(Duration::from_millis(200))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let messages = tokio::time::timeout(Duration::from_secs(10), agent.prompt("go"))
        .await
        .expect("the run ends")
        .unwrap();
    // The time limit, then the second the tool is given to stop.
    assert_eq!(started.elapsed(), Duration::from_millis(1200));
    assert_eq!(
        results(&agent),
        [(
            "c1".to_owned(),
            true,
            "Tool \"stuck\" was stopped: the run reached its time limit, and it did not finish within 1s of being told to stop".to_owned()
        )]
    );
    let last = last_assistant(&agent);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(messages.len(), 4);
}

// On the paused clock the abort's sleep ends only once the run waits on the stuck tool.
#[tokio::test(start_paused = true)]
async fn an_abort_ends_the_run_even_when_a_tool_ignores_its_signal() {
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "stuck", json!({})));
    let agent = Agent::builder()
        .model(model)
        .tools(stuck())
        .build()
        .unwrap();
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        aborter.abort();
    });
    tokio::time::timeout(Duration::from_secs(10), agent.prompt("go"))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(
        results(&agent)[0].2,
        "Tool \"stuck\" was stopped: the run was aborted, and it did not finish within 1s of being told to stop"
    );
}

#[tokio::test]
async fn dropping_the_prompt_future_cancels_the_run() {
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel::<()>();
    let seen_tx = Arc::new(std::sync::Mutex::new(Some(seen_tx)));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let waiter = FnTool::new(
        "wait",
        "Waits.",
        json!({"type": "object"}),
        move |_, ctx| {
            let seen = seen_tx.lock().unwrap().take();
            let started = started_tx.lock().unwrap().take();
            async move {
                // A task of the tool's own, which outlives the tool's future.
                let signal = ctx.signal().clone();
                tokio::spawn(async move {
                    signal.cancelled().await;
                    if let Some(seen) = seen {
                        let _ = seen.send(());
                    }
                });
                if let Some(started) = started {
                    let _ = started.send(());
                }
                std::future::pending::<()>().await;
                Ok::<_, ToolError>(ToolResult::text("never"))
            }
        },
    );
    let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "wait", json!({})));
    let agent = Agent::builder().model(model).tools(waiter).build().unwrap();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started_rx.await.unwrap();
    run.abort();
    tokio::time::timeout(Duration::from_secs(2), seen_rx)
        .await
        .expect("the tool's task saw the cancellation")
        .unwrap();
    agent.wait_for_idle().await;
    assert!(!agent.is_streaming());
}

/// The child half of the test below: runs only in the process that test starts.
#[tokio::test]
async fn child_runs_a_panicking_tool() {
    if std::env::var_os("PI_PANIC_CHILD").is_none() {
        return;
    }
    let boom = FnTool::new("boom", "Panics.", json!({"type": "object"}), |_, _| async {
        panic!("the tool broke");
    });
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call("c1", "boom", json!({})))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder().model(model).tools(boom).build().unwrap();
    let run = agent.prompt("go").await.unwrap();
    println!("result: {}", run[2].text_content());
}

/// A panic that becomes a result is not printed by the panic hook too; other panics are.
#[test]
fn a_caught_tool_panic_is_not_printed_to_stderr() {
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "agent_failures::child_runs_a_panicking_tool",
            "--nocapture",
        ])
        .env("PI_PANIC_CHILD", "1")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr),
    );
    assert!(child.status.success(), "{out}{err}");
    assert!(out.contains("result: the tool broke"), "{out}");
    assert!(!err.contains("panicked at"), "{err}");
}
