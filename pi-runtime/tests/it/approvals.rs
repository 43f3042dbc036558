//! Approvals (issue 26): a batch holding a call that needs approval pauses before executing
//! anything; the signed run state resumes in a fresh agent with one decision per pending
//! call; every way a resume can be wrong is refused before anything runs.

use std::sync::{Arc, Mutex};

use pi_runtime::agent::approval::{
    ApprovalDecision, ApprovalError, PendingCall, StateFileError, StateKey, destructive_tools,
};
use pi_runtime::agent::{Agent, AgentError, AgentEvent, RUN_STATE_VERSION, RunEnd, RunState};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{Approval, ApprovalPolicy, ToolHints};
use pi_runtime::{ExecutionMode, FnTool, Message, ToolCall, ToolResult, tool};
use serde_json::{Value, json};

/// The key the tests sign their states with.
pub(crate) fn key() -> StateKey {
    StateKey::new(b"the approval tests' key").expect("a key of 16 bytes or more")
}

pub(crate) type Ran = Arc<Mutex<Vec<String>>>;

/// A tool that records `<name> <text>` for each execution.
pub(crate) fn recording(name: &'static str, ran: &Ran) -> FnTool {
    let ran = Arc::clone(ran);
    FnTool::new(
        name,
        "Records its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        move |args: Value, _| {
            let line = format!("{name} {}", args["text"].as_str().unwrap_or_default());
            ran.lock().unwrap().push(line.clone());
            async move { Ok(ToolResult::text(line)) }
        },
    )
}

/// `read` runs freely; `write` always needs approval (unless `gated` is false).
fn agent(model: FauxModel, ran: &Ran, gated: bool, mode: ExecutionMode) -> Agent {
    let write = recording("write", ran);
    let write = if gated {
        write.with_approval(ApprovalPolicy::Always)
    } else {
        write
    };
    Agent::builder()
        .model(model)
        .tools((recording("read", ran), write))
        .tool_execution(mode)
        .build()
        .unwrap()
}

/// One response calling `calls` (id, tool, arguments) in this order.
fn batch(calls: Vec<(&str, &str, Value)>) -> FauxResponse {
    let mut calls = calls.into_iter();
    let (id, tool, args) = calls.next().expect("a batch has a call");
    calls.fold(
        FauxResponse::tool_call(id, tool, args),
        |response, (id, tool, args)| response.and_tool_call(id, tool, args),
    )
}

fn call(id: &str, tool: &str, args: Value) -> FauxResponse {
    FauxResponse::tool_call(id, tool, args)
}

/// The model of the mixed batch: a free call, a gated one, and an invalid gated one.
fn mixed_batch() -> FauxModel {
    FauxModel::new()
        .respond(batch(vec![
            ("c1", "read", json!({"text": "a"})),
            ("c2", "write", json!({"text": "b"})),
            ("c3", "write", json!({"wrong": 1})),
        ]))
        .respond(FauxResponse::text("done"))
}

/// Each event as a short line: its kind and the call or message it is about; `None` for the
/// streaming updates of a message.
pub(crate) fn trace_line(event: &AgentEvent) -> Option<String> {
    Some(match event {
        AgentEvent::MessageUpdate { .. } => return None,
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            format!("tool_execution_start {tool_call_id}")
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
            format!("tool_execution_update {tool_call_id}")
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            ..
        } => format!("tool_execution_end {tool_call_id} error={is_error}"),
        AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
            let about = match message {
                Message::ToolResult(result) => result.tool_call_id.clone(),
                other => other.role().to_owned(),
            };
            format!("{} {about}", event.kind())
        }
        AgentEvent::ApprovalRequested { pending } => {
            let ids: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
            format!("approval_requested {}", ids.join(","))
        }
        other => other.kind().to_owned(),
    })
}

/// Every event of `agent` as a [`trace_line`].
fn trace(agent: &Agent) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lines);
    agent.on_event(move |event: &AgentEvent| seen.lock().unwrap().extend(trace_line(event)));
    lines
}

/// The transcript without its clocks.
pub(crate) fn timeless(messages: &[Message]) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("timestamp");
                map.remove("durationMs");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(messages).unwrap();
    strip(&mut value);
    value
}

/// The texts and error flags of the tool results in `messages`.
fn results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => {
                Some((result.tool_call_id.clone(), result.text(), result.is_error))
            }
            _ => None,
        })
        .collect()
}

/// Pause the mixed batch and return the signed state, the trace and the outcome's end.
async fn paused(ran: &Ran) -> (String, Vec<String>, RunEnd) {
    let first = agent(mixed_batch(), ran, true, ExecutionMode::Parallel);
    let events = trace(&first);
    let run = first.prompt("go").await.unwrap();
    assert!(!first.is_streaming(), "a paused run frees its agent");
    let saved = run.paused_state().unwrap().to_signed_json(&key());
    let events = events.lock().unwrap().clone();
    (saved, events, run.end)
}

/// The rest of the script, for the resuming agent.
fn after_pause() -> FauxModel {
    FauxModel::new().respond(FauxResponse::text("done"))
}

#[tokio::test]
async fn a_batch_with_a_call_needing_approval_pauses_before_executing_anything() {
    let ran = Ran::default();
    let (saved, events, end) = paused(&ran).await;
    assert_eq!(
        end,
        RunEnd::AwaitingApproval {
            pending: vec![pending_call("c2", "write", json!({"text": "b"}))]
        }
    );
    assert_eq!(*ran.lock().unwrap(), Vec::<String>::new(), "nothing ran");
    assert_eq!(
        events,
        [
            "agent_start",
            "turn_start",
            "message_start user",
            "message_end user",
            "message_start assistant",
            "message_end assistant",
            "tool_execution_start c1",
            "tool_execution_start c2",
            "tool_execution_start c3",
            // Invalid calls get their error as before and are never put to a person.
            "tool_execution_end c3 error=true",
            "approval_requested c2",
        ]
    );
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    assert!(state.is_paused());
    let pending: Vec<&PendingCall> = state.pending_approvals().collect();
    assert_eq!(
        pending,
        [&pending_call("c2", "write", json!({"text": "b"}))]
    );
}

fn pending_call(id: &str, tool: &str, args: Value) -> PendingCall {
    serde_json::from_value(json!({
        "id": id,
        "tool": tool,
        "args": args,
        "reason": format!("`{tool}` always needs approval"),
    }))
    .unwrap()
}

#[tokio::test]
async fn a_resumed_run_has_the_events_and_transcript_of_an_uninterrupted_one() {
    let whole_ran = Ran::default();
    let whole = agent(mixed_batch(), &whole_ran, false, ExecutionMode::Parallel);
    let whole_events = trace(&whole);
    whole.prompt("go").await.unwrap();

    let ran = Ran::default();
    let (saved, mut events, _) = paused(&ran).await;
    let fresh = agent(after_pause(), &ran, true, ExecutionMode::Parallel);
    let resumed_events = trace(&fresh);
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let run = fresh
        .resume_with(state, [ApprovalDecision::approve("c2")])
        .await
        .unwrap();
    assert_eq!(run.end, RunEnd::Completed);

    assert_eq!(events.pop().as_deref(), Some("approval_requested c2"));
    events.extend(resumed_events.lock().unwrap().iter().cloned());
    assert_eq!(events, *whole_events.lock().unwrap());
    assert_eq!(timeless(&fresh.messages()), timeless(&whole.messages()));
    assert_eq!(*ran.lock().unwrap(), ["read a", "write b"]);
    assert_eq!(*ran.lock().unwrap(), *whole_ran.lock().unwrap());
}

/// Resume the paused mixed batch with these decisions in a fresh agent; nothing may run.
async fn refused(decisions: Vec<ApprovalDecision>) -> AgentError {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let model = after_pause();
    let requests = model.clone();
    let fresh = agent(model, &ran, true, ExecutionMode::Parallel);
    let events = trace(&fresh);
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let error = fresh.resume_with(state, decisions).await.unwrap_err();
    assert_eq!(*ran.lock().unwrap(), Vec::<String>::new());
    assert_eq!(*events.lock().unwrap(), Vec::<String>::new());
    assert_eq!(requests.request_count(), 0);
    assert_eq!(fresh.messages(), []);
    error
}

#[tokio::test]
async fn a_missing_decision_runs_nothing() {
    let error = refused(vec![]).await;
    let expected = ApprovalError::MissingDecision { id: "c2".into() };
    assert_eq!(error, AgentError::Approval(expected));
    assert_eq!(
        error.to_string(),
        "call c2 waits for a decision (approve, deny or edit)"
    );
}

#[tokio::test]
async fn a_duplicate_decision_runs_nothing() {
    let error = refused(vec![
        ApprovalDecision::approve("c2"),
        ApprovalDecision::deny("c2", "no"),
    ])
    .await;
    let expected = ApprovalError::DuplicateDecision { id: "c2".into() };
    assert_eq!(error, AgentError::Approval(expected));
}

#[tokio::test]
async fn a_decision_for_an_unknown_call_runs_nothing() {
    for id in ["c9", "c1"] {
        let error = refused(vec![
            ApprovalDecision::approve("c2"),
            ApprovalDecision::approve(id),
        ])
        .await;
        let expected = ApprovalError::UnknownCall { id: id.into() };
        assert_eq!(error, AgentError::Approval(expected), "{id} is not pending");
    }
}

#[tokio::test]
async fn an_edit_that_does_not_validate_runs_nothing() {
    let error = refused(vec![ApprovalDecision::edit("c2", json!({"text": 5}))]).await;
    let AgentError::Approval(ApprovalError::InvalidEdit { id, message }) = error else {
        panic!("{error:?}");
    };
    assert_eq!(id, "c2");
    assert!(
        message.starts_with("Validation failed for tool \"write\""),
        "{message}"
    );
}

#[tokio::test]
async fn arguments_changed_in_a_signed_state_file_are_refused() {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let mut file: Value = serde_json::from_str(&saved).unwrap();
    file["state"]["phase"]["calls"][1]["pending"]["args"]["text"] = json!("rm -rf /");
    let error = RunState::from_signed_json(&file.to_string(), &key()).unwrap_err();
    assert_eq!(error, StateFileError::BadSignature);
    assert_eq!(
        error.to_string(),
        "the run state's signature does not match: it was signed with another key, or changed after it was signed"
    );
}

/// Whether `T` reads from JSON with serde: an inherent constant where the bound holds wins
/// over the trait's (autoref specialization), so this answers at compile time.
struct Readable<T>(std::marker::PhantomData<T>);

trait NotReadable {
    const READABLE: bool = false;
}

impl<T> NotReadable for Readable<T> {}

impl<T: serde::de::DeserializeOwned> Readable<T> {
    const READABLE: bool = true;
}

/// Issue 35: a `RunState` read with serde skipped the signature, and its argument hashes
/// (unkeyed) could be recomputed by whoever edited it.
#[test]
fn a_run_state_cannot_be_read_without_its_signature() {
    // `PendingCall` reads with serde: the check tells the two apart.
    let readable = [
        Readable::<RunState>::READABLE,
        Readable::<PendingCall>::READABLE,
    ];
    assert_eq!(readable, [false, true]);
}

#[tokio::test]
async fn a_state_signed_with_another_key_is_refused() {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let another = StateKey::new(b"another key of the tests").unwrap();
    let error = RunState::from_signed_json(&saved, &another).unwrap_err();
    assert_eq!(error, StateFileError::BadSignature);
}

#[tokio::test]
async fn a_state_of_a_future_version_is_refused() {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let mut file: Value = serde_json::from_str(&saved).unwrap();
    let next = u64::from(RUN_STATE_VERSION) + 1;
    file["version"] = json!(next);
    file["state"] = json!({"anything": "a later format holds"});
    let error = RunState::from_signed_json(&file.to_string(), &key()).unwrap_err();
    assert_eq!(error, StateFileError::UnsupportedVersion { found: next });
    assert_eq!(
        error.to_string(),
        format!(
            "run state version {next} is not supported (this build reads version {RUN_STATE_VERSION})"
        )
    );
}

#[tokio::test]
async fn a_tool_removed_before_the_resume_runs_nothing() {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let model = after_pause();
    let requests = model.clone();
    let fresh = Agent::builder()
        .model(model)
        .tools(recording("read", &ran))
        .build()
        .unwrap();
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let error = fresh
        .resume_with(state, [ApprovalDecision::approve("c2")])
        .await
        .unwrap_err();
    let expected = ApprovalError::ToolMissing {
        id: "c2".into(),
        tool: "write".into(),
    };
    assert_eq!(error, AgentError::Approval(expected));
    assert_eq!(
        error.to_string(),
        "call c2 needs the tool `write`, which this agent does not have"
    );
    assert_eq!(*ran.lock().unwrap(), Vec::<String>::new());
    assert_eq!(requests.request_count(), 0);
}

#[tokio::test]
async fn resume_without_decisions_refuses_a_paused_state() {
    let ran = Ran::default();
    let (saved, _, _) = paused(&ran).await;
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let fresh = agent(after_pause(), &ran, true, ExecutionMode::Parallel);
    let error = fresh.resume(state).await.unwrap_err();
    let expected = ApprovalError::MissingDecision { id: "c2".into() };
    assert_eq!(error, AgentError::Approval(expected));
}

/// c1, c3 and c4 need approval; c2 does not. c1 is approved, c3 denied, c4 edited.
async fn several_in_one_batch(mode: ExecutionMode) -> (Vec<String>, Vec<String>, Agent) {
    let ran = Ran::default();
    let model = FauxModel::new().respond(batch(vec![
        ("c1", "write", json!({"text": "a"})),
        ("c2", "read", json!({"text": "b"})),
        ("c3", "write", json!({"text": "c"})),
        ("c4", "write", json!({"text": "d"})),
    ]));
    let first = agent(model, &ran, true, mode);
    let run = first.prompt("go").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = &run.end else {
        panic!("{:?}", run.end)
    };
    let ids: Vec<&str> = pending.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c3", "c4"]);
    let saved = run.paused_state().unwrap().to_signed_json(&key());

    let fresh = agent(after_pause(), &ran, true, mode);
    let events = trace(&fresh);
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let decisions = [
        ApprovalDecision::edit("c4", json!({"text": "D"})),
        ApprovalDecision::deny("c3", "not that one"),
        ApprovalDecision::approve("c1"),
    ];
    let resumed = fresh.resume_with(state, decisions).await.unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(
        results(&fresh.messages()),
        [
            ("c1".into(), "write a".into(), false),
            ("c2".into(), "read b".into(), false),
            ("c3".into(), "Tool call denied: not that one".into(), true),
            ("c4".into(), "write D".into(), false),
        ]
    );
    let ran = ran.lock().unwrap().clone();
    let events = events.lock().unwrap().clone();
    (ran, events, fresh)
}

/// What a resumed four-call batch emits after its ends: results in source order, the turn's
/// end, and the next turn.
const AFTER_ENDS: [&str; 14] = [
    "message_start c1",
    "message_end c1",
    "message_start c2",
    "message_end c2",
    "message_start c3",
    "message_end c3",
    "message_start c4",
    "message_end c4",
    "turn_end",
    "turn_start",
    "message_start assistant",
    "message_end assistant",
    "turn_end",
    "agent_end",
];

#[tokio::test]
async fn several_approvals_in_one_parallel_batch() {
    let (ran, events, _) = several_in_one_batch(ExecutionMode::Parallel).await;
    assert_eq!(ran, ["write a", "read b", "write D"]);
    let mut expected = vec![
        // The denied call ends first; the others run together, in source order here.
        "tool_execution_end c3 error=true",
        "tool_execution_end c1 error=false",
        "tool_execution_end c2 error=false",
        "tool_execution_end c4 error=false",
    ];
    expected.extend(AFTER_ENDS);
    assert_eq!(events, expected);
}

#[tokio::test]
async fn several_approvals_in_one_sequential_batch() {
    let (ran, events, _) = several_in_one_batch(ExecutionMode::Sequential).await;
    assert_eq!(ran, ["write a", "read b", "write D"]);
    let mut expected = vec![
        "tool_execution_end c3 error=true",
        "tool_execution_end c1 error=false",
        "tool_execution_end c2 error=false",
        "tool_execution_end c4 error=false",
    ];
    expected.extend(AFTER_ENDS);
    assert_eq!(events, expected);
}

#[tokio::test]
async fn a_sequential_batch_with_a_policy_prepares_every_call_before_pausing() {
    let ran = Ran::default();
    let model = FauxModel::new().respond(batch(vec![
        ("c1", "read", json!({"text": "a"})),
        ("c2", "write", json!({"text": "b"})),
    ]));
    let first = agent(model, &ran, true, ExecutionMode::Sequential);
    let events = trace(&first);
    let run = first.prompt("go").await.unwrap();
    assert!(matches!(run.end, RunEnd::AwaitingApproval { .. }));
    assert_eq!(*ran.lock().unwrap(), Vec::<String>::new(), "c1 waits too");
    let events = events.lock().unwrap();
    assert_eq!(
        events[6..],
        [
            "tool_execution_start c1",
            "tool_execution_start c2",
            "approval_requested c2"
        ]
    );
}

#[tokio::test]
async fn a_call_outside_the_loop_that_needs_approval_fails_closed() {
    let ran = Ran::default();
    let agent = agent(FauxModel::new(), &ran, true, ExecutionMode::Parallel);
    let result = agent
        .run_tool_call(ToolCall::new("c1", "write", json!({"text": "x"})))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "Tool \"write\" needs approval (`write` always needs approval), and this call cannot wait for one: it was not executed"
    );
    assert_eq!(*ran.lock().unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn the_agent_policy_asks_for_tools_hinted_destructive() {
    let ran = Ran::default();
    let drop_table = recording("drop", &ran).with_hints(ToolHints::new().destructive(true));
    let model = FauxModel::new().respond(batch(vec![
        ("c1", "read", json!({"text": "a"})),
        ("c2", "drop", json!({"text": "users"})),
    ]));
    let agent = Agent::builder()
        .model(model)
        .tools((recording("read", &ran), drop_table))
        .approval(destructive_tools)
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = run.end else {
        panic!("{:?}", run.end)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].id.as_str(), pending[0].reason.as_str()),
        ("c2", "`drop` is marked destructive")
    );
}

#[tokio::test]
async fn the_policy_sees_the_arguments_before_tool_call_gave() {
    let ran = Ran::default();
    let model = call("c1", "read", json!({"text": "a"}));
    let agent = Agent::builder()
        .model(FauxModel::new().respond(model))
        .tools(recording("read", &ran))
        .before_tool_call(|_| async {
            Ok(pi_runtime::agent::ToolCallDecision::Replace(
                json!({"text": "secret"}),
            ))
        })
        .approval(|request| {
            if request.args["text"] == "secret" {
                Approval::needed("reads a secret")
            } else {
                Approval::NotNeeded
            }
        })
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = run.end else {
        panic!("{:?}", run.end)
    };
    assert_eq!(pending[0].args, json!({"text": "secret"}));
    assert_eq!(pending[0].reason, "reads a secret");
}

#[tool(approval = outside_tmp)]
/// Delete a file.
async fn delete(path: String) -> String {
    format!("deleted {path}")
}

fn outside_tmp(params: &DeleteParams) -> Approval {
    if params.path.starts_with("/tmp/") {
        Approval::NotNeeded
    } else {
        Approval::needed(format!("deletes {} outside /tmp", params.path))
    }
}

#[tool(approval = "always")]
/// Format the disk.
async fn format_disk() -> String {
    "formatted".into()
}

#[tokio::test]
async fn tool_policies_from_the_macro() {
    let model = FauxModel::new()
        .respond(batch(vec![
            ("c1", "delete", json!({"path": "/tmp/a"})),
            ("c2", "delete", json!({"path": "/etc/passwd"})),
            ("c3", "format_disk", json!({})),
        ]))
        .respond(FauxResponse::text("ok"));
    let agent = Agent::builder()
        .model(model)
        .tools((Delete, FormatDisk))
        .build()
        .unwrap();
    let run = agent.prompt("go").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = run.end.clone() else {
        panic!("{:?}", run.end)
    };
    let reasons: Vec<(&str, &str)> = (pending.iter())
        .map(|call| (call.id.as_str(), call.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("c2", "deletes /etc/passwd outside /tmp"),
            ("c3", "`format_disk` always needs approval")
        ]
    );
    let state = run.into_paused_state().unwrap();
    let decisions = [
        ApprovalDecision::deny("c2", "never"),
        ApprovalDecision::approve("c3"),
    ];
    agent.resume_with(state, decisions).await.unwrap();
    assert_eq!(
        results(&agent.messages()),
        [
            ("c1".into(), "deleted /tmp/a".into(), false),
            ("c2".into(), "Tool call denied: never".into(), true),
            ("c3".into(), "formatted".into(), false),
        ]
    );
}

#[tokio::test]
async fn a_paused_conversation_refuses_new_runs_until_resumed_or_reset() {
    let ran = Ran::default();
    let model = FauxModel::new()
        .respond(call("c1", "write", json!({"text": "a"})))
        .respond(FauxResponse::text("done"))
        .respond(call("c2", "write", json!({"text": "b"})))
        .respond(FauxResponse::text("fresh"));
    let requests = model.clone();
    let agent = agent(model, &ran, true, ExecutionMode::Parallel);
    let state = agent
        .prompt("go")
        .await
        .unwrap()
        .into_paused_state()
        .unwrap();
    let paused = agent.messages();

    // Its transcript ends with a call that has no result: a new run would be invalid.
    let error = agent.prompt("again").await.unwrap_err();
    assert_eq!(error, AgentError::AwaitingApproval);
    assert_eq!(
        error.to_string(),
        "The run is paused for approval. Call resume_with() with the paused state and a decision for each pending call, or reset() to discard the run."
    );
    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::AwaitingApproval
    );
    // A refused resume leaves it paused.
    let refused = agent.resume_with(state.clone(), []).await.unwrap_err();
    assert_eq!(
        refused,
        AgentError::Approval(ApprovalError::MissingDecision { id: "c1".into() })
    );
    assert_eq!(
        agent.prompt("again").await.unwrap_err(),
        AgentError::AwaitingApproval
    );
    assert_eq!(agent.messages(), paused, "refusals change nothing");
    assert_eq!(
        (requests.request_count(), ran.lock().unwrap().len()),
        (1, 0)
    );

    // Resumed, it takes prompts again.
    let resumed = agent
        .resume_with(state, [ApprovalDecision::approve("c1")])
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    let again = agent.prompt("again").await.unwrap();
    assert!(matches!(again.end, RunEnd::AwaitingApproval { .. }));

    // Reset discards the paused run.
    agent.reset().unwrap();
    let fresh = agent.prompt("fresh").await.unwrap();
    assert_eq!(fresh.end, RunEnd::Completed);
    assert_eq!(
        results(&agent.messages()),
        Vec::<(String, String, bool)>::new()
    );
    assert_eq!(*ran.lock().unwrap(), ["write a"]);
}
