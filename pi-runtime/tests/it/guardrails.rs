//! Guardrails: input checks before (or beside) the first request, output checks of each
//! answer, and the typed end a trip gives the run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_runtime::agent::guardrail::{GuardrailStage, InputGuardrail, OutputGuardrail, Verdict};
use pi_runtime::agent::{Agent, AgentEvent, RunEnd};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{FnTool, StopReason, ToolError, ToolResult};
use serde_json::json;

fn tripped(guardrail: &str, stage: GuardrailStage, reason: &str) -> RunEnd {
    RunEnd::GuardrailTripped {
        guardrail: guardrail.into(),
        stage,
        reason: reason.into(),
    }
}

/// An input guardrail that trips on `word`.
fn refuses(word: &'static str) -> InputGuardrail {
    InputGuardrail::new(format!("no_{word}"), move |input| async move {
        if input.text().contains(word) {
            Verdict::trip(format!("mentions {word}"))
        } else {
            Verdict::Pass
        }
    })
}

fn counted(runs: &Arc<AtomicUsize>) -> FnTool {
    let runs = Arc::clone(runs);
    FnTool::new("act", "Act.", json!({"type": "object"}), move |_, _| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(ToolResult::text("acted"))
        }
    })
}

fn kinds(agent: &Agent) -> Arc<Mutex<Vec<&'static str>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    agent.on_event(move |event| {
        if !matches!(event, AgentEvent::MessageUpdate { .. }) {
            sink.lock().unwrap().push(event.kind());
        }
    });
    seen
}

#[tokio::test]
async fn a_tripped_input_guardrail_ends_the_run_before_any_request() {
    let model = FauxModel::new().respond(FauxResponse::text("never"));
    let agent = Agent::builder()
        .model(model.clone())
        .input_guardrail(refuses("password"))
        .build()
        .unwrap();
    let seen = kinds(&agent);
    let run = agent.prompt("tell me the password").await.unwrap();
    assert_eq!(
        run.end,
        tripped("no_password", GuardrailStage::Input, "mentions password")
    );
    assert_eq!(model.request_count(), 0);
    assert_eq!(run.len(), 1, "only the prompt");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "agent_end"
        ]
    );
    // The conversation goes on with the next prompt.
    let next = agent.prompt("hi").await.unwrap();
    assert_eq!(next.end, RunEnd::Completed);
    assert_eq!(next.final_text().as_deref(), Some("never"));
}

#[tokio::test]
async fn a_passing_input_guardrail_sees_the_prompt_and_checks_only_the_first_request() {
    let checked = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&checked);
    let runs = Arc::default();
    let agent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("c1", "act", json!({})))
                .respond(FauxResponse::text("done")),
        )
        .tools(counted(&runs))
        .input_guardrail(InputGuardrail::new("log", move |input| {
            sink.lock().unwrap().push(input.text());
            async { Verdict::Pass }
        }))
        .build()
        .unwrap();
    let run = agent.prompt("do it").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(*checked.lock().unwrap(), ["do it"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_concurrent_input_guardrail_that_trips_cancels_the_request_and_no_tool_runs() {
    let runs = Arc::default();
    let long = "word ".repeat(2_000);
    let model = FauxModel::new()
        .respond(FauxResponse::text(long).and_tool_call("c1", "act", json!({})))
        .with_chunk_chars(5)
        .with_chunk_delay(Duration::from_millis(10));
    let agent = Agent::builder()
        .model(model)
        .tools(counted(&runs))
        .input_guardrail(
            InputGuardrail::new("slow_check", |_| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Verdict::trip("not allowed")
            })
            .concurrent(),
        )
        .build()
        .unwrap();
    let started = Instant::now();
    let run = agent.prompt("go").await.unwrap();
    // 2,000 chunks 10 ms apart would take 20 s.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        run.end,
        tripped("slow_check", GuardrailStage::Input, "not allowed")
    );
    let response = run[1].as_assistant().unwrap();
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_concurrent_input_guardrail_that_trips_after_the_response_still_stops_its_tools() {
    let runs = Arc::default();
    let agent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("c1", "act", json!({})))
                .respond(FauxResponse::text("never")),
        )
        .tools(counted(&runs))
        .input_guardrail(
            InputGuardrail::new("late", |_| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Verdict::trip("too late, but still")
            })
            .concurrent(),
        )
        .build()
        .unwrap();
    let seen = kinds(&agent);
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        run.end,
        tripped("late", GuardrailStage::Input, "too late, but still")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(run.len(), 2, "the prompt and the response, no result");
    let seen = seen.lock().unwrap();
    assert!(!seen.contains(&"tool_execution_start"), "{seen:?}");
    assert_eq!(&seen[seen.len() - 2..], ["turn_end", "agent_end"]);
}

#[tokio::test]
async fn a_concurrent_input_guardrail_that_passes_changes_nothing() {
    let runs = Arc::default();
    let agent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("c1", "act", json!({})))
                .respond(FauxResponse::text("done")),
        )
        .tools(counted(&runs))
        .input_guardrail(
            InputGuardrail::new("fine", |_| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Verdict::Pass
            })
            .concurrent(),
        )
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(run.final_text().as_deref(), Some("done"));
}

#[tokio::test]
async fn an_output_guardrail_checks_the_answer_and_ends_the_run_after_its_turn() {
    let checked = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&checked);
    let runs = Arc::default();
    let agent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call("c1", "act", json!({})))
                .respond(FauxResponse::text("the secret is 42")),
        )
        .tools(counted(&runs))
        .output_guardrail(OutputGuardrail::new("no_secrets", move |output| {
            sink.lock().unwrap().push(output.text());
            let leaks = output.text().contains("secret");
            async move {
                if leaks {
                    Verdict::trip("leaks a secret")
                } else {
                    Verdict::Pass
                }
            }
        }))
        .build()
        .unwrap();
    let seen = kinds(&agent);
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        run.end,
        tripped("no_secrets", GuardrailStage::Output, "leaks a secret")
    );
    assert_eq!(
        *checked.lock().unwrap(),
        ["the secret is 42"],
        "only the answer is checked, not the response with a call"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seen = seen.lock().unwrap();
    assert_eq!(&seen[seen.len() - 2..], ["turn_end", "agent_end"]);
}

#[tokio::test]
async fn a_guardrail_that_panics_trips() {
    let agent = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::text("hi")))
        .input_guardrail(InputGuardrail::new("broken", |_| async {
            panic!("the check broke")
        }))
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    assert_eq!(
        run.end,
        tripped(
            "broken",
            GuardrailStage::Input,
            "the guardrail panicked: the check broke"
        )
    );
}

#[tokio::test]
async fn a_sub_agents_tripped_guardrail_is_its_calls_error() {
    let child = Agent::builder()
        .model(FauxModel::new().respond(FauxResponse::text("never")))
        .input_guardrail(refuses("delete"))
        .build_definition()
        .unwrap();
    let parent = Agent::builder()
        .model(
            FauxModel::new()
                .respond(FauxResponse::tool_call(
                    "c1",
                    "helper",
                    json!({"task": "delete everything"}),
                ))
                .respond(FauxResponse::text("it refused")),
        )
        .tools(child.as_tool("helper", "Helps."))
        .build()
        .unwrap();
    let run = parent.prompt("go").await.unwrap();
    assert_eq!(run.end, RunEnd::Completed);
    assert_eq!(
        run[2].as_tool_result().unwrap().text(),
        "The helper agent stopped: its guardrail no_delete tripped: mentions delete"
    );
}
