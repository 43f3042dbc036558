//! The submit-result pattern of seed 2 (SPEC §10): a tool that accepts one structured
//! result, `terminate`, the turn limit and the time limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_runtime::agent::{Agent, TurnControl};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{ExecutionMode, FnTool, Message, ToolError, ToolResult};
use serde_json::{Value, json};

/// The seed's submit tool: business check (the quote must occur in the source), then the
/// host takes the value; accepted at most once.
fn submit_tool(accepted: Arc<Mutex<Option<Value>>>) -> FnTool {
    const SOURCE: &str = "The quick brown fox jumps over the lazy dog.";
    FnTool::new(
        "submit_analysis",
        "Submit the analysis.",
        json!({"type": "object",
               "properties": {"quote": {"type": "string"}},
               "required": ["quote"]}),
        move |args: Value, _ctx| {
            let accepted = Arc::clone(&accepted);
            async move {
                if accepted.lock().unwrap().is_some() {
                    return Err(ToolError::new("already accepted"));
                }
                let quote = args["quote"].as_str().unwrap_or_default();
                if !SOURCE.contains(quote) {
                    return Err(ToolError::new(format!(
                        "quote {quote:?} does not occur in the source"
                    )));
                }
                *accepted.lock().unwrap() = Some(args);
                Ok(ToolResult::text("accepted")
                    .with_details(json!({"accepted": true}))
                    .with_terminate(true))
            }
        },
    )
}

/// The seed's task runner: prompt once, then judge by the accepted value only.
async fn run_task(agent: &Agent, accepted: &Mutex<Option<Value>>) -> Result<Value, String> {
    agent
        .prompt("Analyse the text.")
        .await
        .map_err(|e| e.to_string())?;
    let last_assistant = agent.messages().into_iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a),
        _ => None,
    });
    if let Some(last) = last_assistant.filter(|a| a.stop_reason.is_failure()) {
        return Err(last
            .error_message
            .clone()
            .unwrap_or_else(|| last.stop_reason.as_str().to_owned()));
    }
    accepted
        .lock()
        .unwrap()
        .clone()
        .ok_or_else(|| "no validated submission received".to_owned())
}

fn agent_with(model: FauxModel, accepted: &Arc<Mutex<Option<Value>>>) -> Agent {
    Agent::builder()
        .model(model)
        .system_prompt("Call submit_analysis; never answer in prose.")
        .tools(submit_tool(Arc::clone(accepted)))
        .tool_execution(ExecutionMode::Sequential)
        .build()
        .unwrap()
}

fn turn_limit(
    limit: usize,
) -> impl Fn(pi_runtime::agent::FinishedTurn) -> std::future::Ready<TurnControl> {
    let turns = AtomicUsize::new(0);
    move |_| {
        let done = turns.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if done >= limit {
            TurnControl::End
        } else {
            TurnControl::Proceed
        })
    }
}

#[tokio::test]
async fn an_accepted_submission_terminates_without_another_request() {
    let model = FauxModel::new().respond(FauxResponse::tool_call(
        "c1",
        "submit_analysis",
        json!({"quote": "brown fox"}),
    ));
    let accepted = Arc::default();
    let agent = agent_with(model.clone(), &accepted);
    assert_eq!(
        run_task(&agent, &accepted).await,
        Ok(json!({"quote": "brown fox"}))
    );
    assert_eq!(model.request_count(), 1);
    let roles: Vec<_> = agent.messages().iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
}

#[tokio::test]
async fn a_second_submission_is_rejected_and_the_batch_does_not_terminate() {
    let model =
        FauxModel::new().respond(
            FauxResponse::tool_call("c1", "submit_analysis", json!({"quote": "quick"}))
                .and_tool_call("c2", "submit_analysis", json!({"quote": "lazy dog"})),
        );
    let accepted = Arc::default();
    let agent = agent_with(model.clone(), &accepted);
    assert_eq!(
        run_task(&agent, &accepted).await,
        Ok(json!({"quote": "quick"}))
    );
    let results: Vec<_> = agent
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (false, "accepted".to_owned()),
            (true, "already accepted".to_owned())
        ]
    );
    // Not every result asked to terminate, so the model was asked again.
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn a_prose_answer_is_no_submission() {
    let model = FauxModel::new().respond(FauxResponse::text(r#"{"quote": "brown fox"}"#));
    let accepted = Arc::default();
    let agent = agent_with(model.clone(), &accepted);
    assert_eq!(
        run_task(&agent, &accepted).await,
        Err("no validated submission received".to_owned())
    );
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn the_turn_limit_ends_a_model_that_keeps_submitting_invalid_data() {
    let invalid = FauxResponse::tool_call("c", "submit_analysis", json!({"quote": "purple cat"}));
    let model = FauxModel::new().with_fallback(invalid);
    let accepted = Arc::new(Mutex::new(None));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(submit_tool(Arc::clone(&accepted)))
        .tool_execution(ExecutionMode::Sequential)
        .finish_turn(turn_limit(4))
        .build()
        .unwrap();
    assert_eq!(
        run_task(&agent, &accepted).await,
        Err("no validated submission received".to_owned())
    );
    assert_eq!(model.request_count(), 4);
}

// On the paused clock, which moves only when every task waits: a whole response (its
// chunks 5 ms apart) fits in the limit however loaded the machine. Seen on the real clock
// with two busy loops beside the tests: the limit ended the first response.
#[tokio::test(start_paused = true)]
async fn the_time_limit_ends_a_model_that_keeps_submitting_invalid_data() {
    let invalid = FauxResponse::tool_call("c", "submit_analysis", json!({"quote": "purple cat"}));
    let model = FauxModel::new()
        .with_fallback(invalid)
        .with_chunk_delay(Duration::from_millis(5));
    let accepted = Arc::new(Mutex::new(None));
    let agent = Agent::builder()
        .model(model.clone())
        .tools(submit_tool(Arc::clone(&accepted)))
        .time_limit(Duration::from_millis(100))
        .build()
        .unwrap();
    assert_eq!(
        run_task(&agent, &accepted).await,
        Err("Request was aborted".to_owned())
    );
    assert!(
        model.request_count() >= 2,
        "the model was asked again before the limit"
    );
    assert!(!agent.is_streaming());
}
