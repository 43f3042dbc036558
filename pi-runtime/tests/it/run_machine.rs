//! The run machine driven through its public API with a loop of the test's own (issue 36):
//! a run with a parallel batch, and one that pauses for approval, leaves the process as a
//! signed file, and goes on. Each gives exactly the events and transcript an `Agent` gives
//! for the same model answers.

use std::sync::{Arc, Mutex};

use pi_runtime::agent::approval::{ApprovalDecision, StateKey};
use pi_runtime::agent::machine::{
    BatchPlan, CallFailure, CallOutcome, Effect, Preflighted, ReadyCall,
};
use pi_runtime::agent::{Agent, AgentEvent, RunEnd, RunState, TurnControl, validate_tool_call};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::ApprovalPolicy;
use pi_runtime::{
    AssistantMessage, ContentBlock, FnTool, Message, StopReason, Tool, ToolCall, ToolDefinition,
    ToolResult,
};
use serde_json::{Value, json};

use crate::approvals::{timeless, trace_line};

fn schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

/// The model's answers: `read` and `write` in one batch, then a text.
fn answers() -> Vec<AssistantMessage> {
    let mut calls = AssistantMessage::empty("faux", "faux", "faux-1");
    for (id, tool, text) in [("c1", "read", "a"), ("c2", "write", "b")] {
        let call = ToolCall::new(id, tool, json!({"text": text}));
        calls.content.push(ContentBlock::ToolCall(call));
    }
    calls.stop_reason = StopReason::ToolUse;
    let mut done = AssistantMessage::empty("faux", "faux", "faux-1");
    done.content.push(ContentBlock::text("done"));
    done.stop_reason = StopReason::Stop;
    vec![calls, done]
}

/// The same answers for an `Agent`.
fn faux() -> FauxModel {
    FauxModel::new()
        .respond(
            FauxResponse::tool_call("c1", "read", json!({"text": "a"})).and_tool_call(
                "c2",
                "write",
                json!({"text": "b"}),
            ),
        )
        .respond(FauxResponse::text("done"))
}

/// A driver of the test's own: the answers above as the model, `read` and `write` (which
/// needs approval when `gated`) as tools that echo their text, every event kept as a line.
struct OwnDriver {
    answers: std::vec::IntoIter<AssistantMessage>,
    gated: bool,
    lines: Vec<String>,
    ran: Vec<String>,
}

impl OwnDriver {
    fn new(gated: bool) -> Self {
        OwnDriver {
            answers: answers().into_iter(),
            gated,
            lines: Vec::new(),
            ran: Vec::new(),
        }
    }

    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("read", "Reads.", schema()),
            Tool::new("write", "Writes.", schema()),
        ]
    }

    fn note(&mut self, event: &AgentEvent) {
        self.lines.extend(trace_line(event));
    }

    /// Drive `state` until it ends (its messages) or pauses (`None`).
    fn drive(&mut self, state: &mut RunState) -> Option<Vec<Message>> {
        loop {
            match state.next() {
                Effect::Emit => {
                    let event = state.take_event().expect("an event waits");
                    self.note(&event);
                }
                Effect::Declare => state.declare(&Self::tools()),
                Effect::PollSteering | Effect::PollFollowUps => state.queued(Vec::new()),
                Effect::Request => {
                    let response = Arc::new(self.answers.next().expect("the model has answers"));
                    // The response's own events are the driver's.
                    self.note(&AgentEvent::MessageStart {
                        message: Arc::clone(&response).into(),
                    });
                    self.note(&AgentEvent::MessageEnd {
                        message: Arc::clone(&response).into(),
                    });
                    state.responded(response);
                }
                Effect::PlanBatch(_) => state.plan_batch(BatchPlan::new().approvals(self.gated)),
                Effect::Preflight(call) => {
                    let tool_call = call.call();
                    let tool = (Self::tools().into_iter())
                        .find(|tool| tool.name == tool_call.name)
                        .expect("the model calls known tools");
                    let preflighted = match validate_tool_call(&tool, tool_call) {
                        Err(error) => Preflighted::Ended(CallOutcome::failed(
                            CallFailure::Validation,
                            error.to_string(),
                        )),
                        Ok(args) if self.gated && tool.name == "write" => {
                            Preflighted::NeedsApproval {
                                args,
                                reason: "it writes".into(),
                            }
                        }
                        Ok(args) => Preflighted::Ready { args },
                    };
                    state.preflighted(call.index(), preflighted);
                }
                Effect::Execute(calls) => self.execute(state, calls),
                Effect::FinishTurn => state.turn_finished(TurnControl::Proceed),
                Effect::Pause => return None,
                Effect::Done(messages) => return Some(messages),
                effect => panic!("unexpected {effect:?}"),
            }
        }
    }

    /// Every call at once: each reports its end in reverse source order, as calls running
    /// beside each other may.
    fn execute(&mut self, state: &mut RunState, calls: Vec<ReadyCall>) {
        for call in calls.iter().rev() {
            let text = format!("{} {}", call.call().call().name, call.args()["text"]);
            self.ran.push(text.clone());
            state.executed(call.index(), CallOutcome::new(ToolResult::text(text)));
            while let Some(event) = state.take_event() {
                self.note(&event);
            }
        }
    }
}

/// The same run by an `Agent`: its event lines and messages.
async fn agent_run(gated: bool) -> (Vec<String>, Vec<Message>, RunEnd) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let echo = |name: &'static str| {
        let ran = Arc::clone(&ran);
        FnTool::new(name, "Echo.", schema(), move |args: Value, _| {
            let text = format!("{name} {}", args["text"]);
            ran.lock().unwrap().push(text.clone());
            async move { Ok(ToolResult::text(text)) }
        })
    };
    let write = echo("write");
    let write = if gated {
        write.with_approval(ApprovalPolicy::Always)
    } else {
        write
    };
    let agent = Agent::builder()
        .model(faux())
        .tools((echo("read"), write))
        .build()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lines);
    agent.on_event(move |event: &AgentEvent| seen.lock().unwrap().extend(trace_line(event)));
    let mut run = agent.prompt("go").await.unwrap();
    if let Some(state) = run.paused_state() {
        let state = state.clone();
        run = agent
            .resume_with(state, [ApprovalDecision::approve("c2")])
            .await
            .unwrap();
    }
    let lines = lines.lock().unwrap().clone();
    (lines, agent.messages(), run.end)
}

const PARALLEL_BATCH: &[&str] = &[
    "agent_start",
    "turn_start",
    "message_start user",
    "message_end user",
    "message_start assistant",
    "message_end assistant",
    "tool_execution_start c1",
    "tool_execution_start c2",
    "tool_execution_end c2 error=false",
    "tool_execution_end c1 error=false",
    "message_start c1",
    "message_end c1",
    "message_start c2",
    "message_end c2",
    "turn_end",
    "turn_start",
    "message_start assistant",
    "message_end assistant",
    "turn_end",
    "agent_end",
];

/// `lines` without the `tool_execution_end` lines: calls that end at once end in any order.
fn without_tool_ends(lines: &[String]) -> Vec<String> {
    (lines.iter())
        .filter(|line| !line.starts_with("tool_execution_end"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_run_driven_by_its_own_loop_gives_the_agents_events_and_transcript() {
    let mut driver = OwnDriver::new(false);
    let mut state = RunState::start(Vec::new(), "go");
    let messages = driver.drive(&mut state).expect("the run ends");
    assert_eq!(driver.lines, PARALLEL_BATCH);
    assert_eq!(driver.ran, ["write \"b\"", "read \"a\""]);
    assert_eq!(state.end(), Some(&RunEnd::Completed));
    assert_eq!(state.turns(), 2);

    let (agent_lines, agent_messages, end) = agent_run(false).await;
    // The agent's tools end in completion order too; both ended at once, so compare the
    // calls' own lines and the transcript.
    assert_eq!(
        without_tool_ends(&agent_lines),
        without_tool_ends(&driver.lines)
    );
    assert_eq!(end, RunEnd::Completed);
    assert_eq!(timeless(&agent_messages), timeless(&messages));
}

#[tokio::test]
async fn a_run_driven_by_its_own_loop_pauses_for_approval_and_goes_on_from_its_signed_file() {
    let key = StateKey::new(b"the run machine test's key").unwrap();
    let mut driver = OwnDriver::new(true);
    let mut state = RunState::start(Vec::new(), "go");
    assert_eq!(driver.drive(&mut state), None, "the run pauses");
    assert!(state.is_paused());
    let pending: Vec<&str> = state.pending_approvals().map(|p| p.id.as_str()).collect();
    assert_eq!(pending, ["c2"]);
    assert!(driver.ran.is_empty(), "nothing ran before the decision");

    // The paused state leaves as a signed file and comes back.
    let file = state.to_signed_json(&key);
    let mut state = RunState::from_signed_json(&file, &key).unwrap();
    // The tools the decisions are checked against (the driver executes its own).
    let tools = |name: &str| -> Option<Arc<dyn ToolDefinition>> {
        let tool = FnTool::new(name, "Unused.", schema(), |_, _| async {
            Ok(ToolResult::text("unused"))
        });
        Some(Arc::new(tool))
    };
    let wrong = state.decide([ApprovalDecision::approve("c9")], &tools);
    assert_eq!(
        wrong.unwrap_err().to_string(),
        "no pending call has the id c9"
    );
    assert!(state.is_paused(), "a refused decision changes nothing");
    state
        .decide([ApprovalDecision::approve("c2")], &tools)
        .unwrap();
    let messages = driver.drive(&mut state).expect("the run ends");
    // Both calls ran once, after the decision (the free one had waited with the batch).
    assert_eq!(driver.ran, ["write \"b\"", "read \"a\""]);
    assert_eq!(state.end(), Some(&RunEnd::Completed));

    let (agent_lines, agent_messages, end) = agent_run(true).await;
    assert_eq!(end, RunEnd::Completed);
    assert_eq!(timeless(&agent_messages), timeless(&messages));
    assert_eq!(
        without_tool_ends(&agent_lines),
        without_tool_ends(&driver.lines)
    );
    assert_eq!(
        driver.lines[..9],
        [
            "agent_start",
            "turn_start",
            "message_start user",
            "message_end user",
            "message_start assistant",
            "message_end assistant",
            "tool_execution_start c1",
            "tool_execution_start c2",
            "approval_requested c2",
        ]
    );
}

#[test]
fn a_call_that_fails_its_preflight_ends_before_the_batch_executes() {
    let mut state = RunState::start(Vec::new(), "go");
    let mut driver = OwnDriver::new(false);
    let mut answers = answers();
    if let ContentBlock::ToolCall(call) = &mut answers[0].content[0] {
        call.arguments = json!({"wrong": 1});
    }
    driver.answers = answers.into_iter();
    driver.drive(&mut state).expect("the run ends");
    let tool_lines: Vec<&str> = (driver.lines.iter())
        .map(String::as_str)
        .filter(|line| line.starts_with("tool_execution"))
        .collect();
    assert_eq!(
        tool_lines,
        [
            "tool_execution_start c1",
            "tool_execution_end c1 error=true",
            "tool_execution_start c2",
            "tool_execution_end c2 error=false",
        ]
    );
    assert_eq!(driver.ran, ["write \"b\""]);
}
