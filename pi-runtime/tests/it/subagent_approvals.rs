//! Approvals inside sub-agents: a call that needs approval anywhere in the tree pauses the
//! whole run; one signed state holds the tree; decisions name calls by path; an approved
//! call runs exactly once (also when resumed in a fresh "process": new agents, the saved
//! JSON and the key), a pause resumes once, and nothing else in the tree runs twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_runtime::agent::approval::{ApprovalDecision, StateKey};
use pi_runtime::agent::{Agent, AgentDefinition, AgentError, AgentEvent, RunEnd, RunState};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::ApprovalPolicy;
use pi_runtime::{FnTool, Message, ToolError, ToolResult};
use serde_json::json;

fn key() -> StateKey {
    StateKey::new(b"a signing key of the application, long enough").unwrap()
}

/// `delete_file`, which needs approval (unless `ask` is false) and counts its runs.
fn delete_file(runs: &Arc<AtomicUsize>, ask: bool) -> FnTool {
    let runs = Arc::clone(runs);
    let tool = FnTool::new(
        "delete_file",
        "Delete a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        move |args, _| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(ToolResult::text(format!("deleted {}", args["path"])))
            }
        },
    );
    if ask {
        tool.with_approval(ApprovalPolicy::Always)
    } else {
        tool
    }
}

/// A counter tool that needs no approval.
fn count(runs: &Arc<AtomicUsize>) -> FnTool {
    let runs = Arc::clone(runs);
    FnTool::new("count", "Count.", json!({"type": "object"}), move |_, _| {
        let runs = Arc::clone(&runs);
        async move {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, ToolError>(ToolResult::text(format!("count {n}")))
        }
    })
}

/// The cleaner: deletes `a.txt`, then reports.
fn cleaner(model: FauxModel, deletes: &Arc<AtomicUsize>, ask: bool) -> AgentDefinition {
    Agent::builder()
        .model(model)
        .tools(delete_file(deletes, ask))
        .build_definition()
        .unwrap()
}

fn cleaner_model() -> FauxModel {
    FauxModel::new()
        .respond(FauxResponse::tool_call(
            "d1",
            "delete_file",
            json!({"path": "a.txt"}),
        ))
        .respond(FauxResponse::text("a.txt is gone"))
}

/// The lead: calls the cleaner (`c1`) and `count` (`n1`) in one batch, then answers.
fn lead(model: FauxModel, cleaner: AgentDefinition, counts: &Arc<AtomicUsize>) -> Agent {
    Agent::builder()
        .model(model)
        .tools((cleaner.as_tool("cleaner", "Cleans up."), count(counts)))
        .build()
        .unwrap()
}

fn lead_model() -> FauxModel {
    FauxModel::new()
        .respond(
            FauxResponse::tool_call("c1", "cleaner", json!({"task": "delete a.txt"}))
                .and_tool_call("n1", "count", json!({})),
        )
        .respond(FauxResponse::text("all clean"))
}

/// The roles and texts of `messages`, what two runs' transcripts are compared by.
fn shown(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| (m.role().to_owned(), m.text_content()))
        .collect()
}

#[tokio::test]
async fn a_sub_agents_call_pauses_the_whole_run_and_runs_once_after_a_resume_elsewhere() {
    // The uninterrupted run: the same tree without the approval.
    let (deletes, counts) = (Arc::default(), Arc::default());
    let plain = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, false),
        &counts,
    );
    let uninterrupted = plain.prompt("clean up").await.unwrap();
    assert_eq!(uninterrupted.end, RunEnd::Completed);

    let (deletes, counts) = (Arc::default(), Arc::default());
    let first = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, true),
        &counts,
    );
    let requested = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requested);
    first.on_event(move |event| match event {
        AgentEvent::ApprovalRequested { pending } => seen
            .lock()
            .unwrap()
            .push(format!("top:{}", pending[0].path())),
        AgentEvent::Nested { path, event, .. } => {
            if let AgentEvent::ApprovalRequested { pending } = &**event {
                seen.lock()
                    .unwrap()
                    .push(format!("{path}:{}", pending[0].path()));
            }
        }
        AgentEvent::AgentEnd { .. } => seen.lock().unwrap().push("top:agent_end".into()),
        _ => {}
    });
    let paused = first.prompt("clean up").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = &paused.end else {
        panic!("{:?}", paused.end)
    };
    let paths: Vec<_> = pending
        .iter()
        .map(|p| (p.path(), p.id.as_str(), p.tool.as_str()))
        .collect();
    assert_eq!(paths, [("c1/d1", "d1", "delete_file")]);
    assert_eq!(deletes.load(Ordering::SeqCst), 0, "nothing held ran");
    assert_eq!(
        counts.load(Ordering::SeqCst),
        1,
        "the rest of the batch ran"
    );
    assert_eq!(
        *requested.lock().unwrap(),
        ["c1:d1", "top:c1/d1"],
        "the child's request, then the run's; no agent_end"
    );
    let saved = paused.paused_state().unwrap().to_signed_json(&key());

    // Another process: fresh agents, the saved JSON and the key.
    let (deletes, counts) = (Arc::default(), Arc::default());
    let resumed_model = FauxModel::new().respond(FauxResponse::text("all clean"));
    let child_model = FauxModel::new().respond(FauxResponse::text("a.txt is gone"));
    let second = lead(resumed_model, cleaner(child_model, &deletes, true), &counts);
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let resumed = second
        .resume_with(state, [ApprovalDecision::approve("c1/d1")])
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(
        deletes.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
    assert_eq!(
        counts.load(Ordering::SeqCst),
        0,
        "the batch's other call did not run again"
    );
    assert_eq!(shown(&resumed.messages), shown(&uninterrupted.messages));

    // The same state again: refused, and nothing runs.
    let third = lead(
        FauxModel::new(),
        cleaner(FauxModel::new(), &deletes, true),
        &counts,
    );
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let error = third
        .resume_with(state, [ApprovalDecision::approve("c1/d1")])
        .await
        .unwrap_err();
    assert!(error.to_string().starts_with("this pause ("), "{error}");
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_denied_call_of_a_sub_agent_never_runs_and_the_sub_agent_reads_why() {
    let (deletes, counts) = (Arc::default(), Arc::default());
    let first = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, true),
        &counts,
    );
    let paused = first.prompt("clean up").await.unwrap();
    let state = paused.into_paused_state().unwrap();
    let child_model = FauxModel::new().respond(FauxResponse::text("kept a.txt"));
    let second = lead(
        FauxModel::new().respond(FauxResponse::text("nothing deleted")),
        cleaner(child_model.clone(), &deletes, true),
        &counts,
    );
    let resumed = second
        .resume_with(state, [ApprovalDecision::deny("c1/d1", "keep it")])
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    let child_saw = child_model.requests()[0]
        .messages
        .last()
        .unwrap()
        .text_content();
    assert!(child_saw.contains("keep it"), "{child_saw}");
    let result = resumed
        .messages
        .iter()
        .find_map(|m| m.as_tool_result().filter(|r| r.tool_call_id == "c1"))
        .unwrap();
    assert_eq!(result.text(), "kept a.txt");
}

#[tokio::test]
async fn decisions_must_name_every_pending_path_and_a_refused_resume_claims_nothing() {
    let (deletes, counts) = (Arc::default(), Arc::default());
    let first = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, true),
        &counts,
    );
    let paused = first.prompt("clean up").await.unwrap();
    let saved = paused.paused_state().unwrap().to_signed_json(&key());
    let fresh = || {
        lead(
            FauxModel::new().respond(FauxResponse::text("all clean")),
            cleaner(
                FauxModel::new().respond(FauxResponse::text("gone")),
                &deletes,
                true,
            ),
            &counts,
        )
    };
    let state = || RunState::from_signed_json(&saved, &key()).unwrap();

    let missing = fresh().resume_with(state(), []).await.unwrap_err();
    assert!(
        matches!(&missing, AgentError::Approval(_)) && missing.to_string().contains("c1/d1"),
        "{missing}"
    );
    let unknown = fresh()
        .resume_with(state(), [ApprovalDecision::approve("d1")])
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("d1"), "{unknown}");
    let twice = fresh()
        .resume_with(
            state(),
            [
                ApprovalDecision::approve("c1/d1"),
                ApprovalDecision::approve("c1/d1"),
            ],
        )
        .await
        .unwrap_err();
    assert!(twice.to_string().contains("c1/d1"), "{twice}");
    assert_eq!(deletes.load(Ordering::SeqCst), 0);

    let resumed = fresh()
        .resume_with(state(), [ApprovalDecision::approve("c1/d1")])
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
}

/// The middle agent: runs the cleaner as `g1`, then reports.
fn middle(model: FauxModel, cleaner: AgentDefinition) -> AgentDefinition {
    Agent::builder()
        .model(model)
        .tools(cleaner.as_tool("cleaner", "Cleans up."))
        .build_definition()
        .unwrap()
}

#[tokio::test]
async fn a_grandchilds_approval_resumed_elsewhere_runs_once_with_the_same_transcript() {
    let middle_model = || {
        FauxModel::new()
            .respond(FauxResponse::tool_call(
                "g1",
                "cleaner",
                json!({"task": "delete"}),
            ))
            .respond(FauxResponse::text("the cleaner is done"))
    };
    let top = |model: FauxModel, middle: AgentDefinition| {
        Agent::builder()
            .model(model)
            .tools(middle.as_tool("manager", "Manages."))
            .build()
            .unwrap()
    };
    let top_model = || {
        FauxModel::new()
            .respond(FauxResponse::tool_call(
                "m1",
                "manager",
                json!({"task": "clean"}),
            ))
            .respond(FauxResponse::text("managed"))
    };

    let deletes = Arc::new(AtomicUsize::new(0));
    let plain = top(
        top_model(),
        middle(middle_model(), cleaner(cleaner_model(), &deletes, false)),
    );
    let uninterrupted = plain.prompt("go").await.unwrap();
    assert_eq!(deletes.load(Ordering::SeqCst), 1);

    let deletes = Arc::new(AtomicUsize::new(0));
    let first = top(
        top_model(),
        middle(middle_model(), cleaner(cleaner_model(), &deletes, true)),
    );
    let paused = first.prompt("go").await.unwrap();
    let RunEnd::AwaitingApproval { pending } = &paused.end else {
        panic!("{:?}", paused.end)
    };
    assert_eq!(pending[0].path(), "m1/g1/d1");
    let saved = paused.paused_state().unwrap().to_signed_json(&key());
    assert_eq!(deletes.load(Ordering::SeqCst), 0);

    let second = top(
        FauxModel::new().respond(FauxResponse::text("managed")),
        middle(
            FauxModel::new().respond(FauxResponse::text("the cleaner is done")),
            cleaner(
                FauxModel::new().respond(FauxResponse::text("a.txt is gone")),
                &deletes,
                true,
            ),
        ),
    );
    let state = RunState::from_signed_json(&saved, &key()).unwrap();
    let resumed = second
        .resume_with(state, [ApprovalDecision::approve("m1/g1/d1")])
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    assert_eq!(shown(&resumed.messages), shown(&uninterrupted.messages));
}

#[tokio::test]
async fn a_sub_agent_that_cannot_pause_fails_closed() {
    // Outside a run (`run_tool_call`) nothing can wait for a person.
    let deletes = Arc::new(AtomicUsize::new(0));
    let tool = cleaner(cleaner_model(), &deletes, true).as_tool("cleaner", "Cleans up.");
    let agent = Agent::builder()
        .model(FauxModel::new())
        .tools(tool)
        .build()
        .unwrap();
    let call = pi_runtime::ToolCall::new("x1", "cleaner", json!({"task": "delete"}));
    let result = agent.run_tool_call(call).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "The cleaner agent paused: 1 of its calls need approval, which this call cannot wait for"
    );
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_nested_pause_resumed_twice_at_once_runs_its_call_once() {
    let (deletes, counts) = (Arc::default(), Arc::default());
    let first = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, true),
        &counts,
    );
    let paused = first.prompt("clean up").await.unwrap();
    let saved = paused.paused_state().unwrap().to_signed_json(&key());
    let resume = || {
        let agent = lead(
            FauxModel::new().respond(FauxResponse::text("all clean")),
            cleaner(
                FauxModel::new().respond(FauxResponse::text("gone")),
                &deletes,
                true,
            ),
            &counts,
        );
        let state = RunState::from_signed_json(&saved, &key()).unwrap();
        async move {
            agent
                .resume_with(state, [ApprovalDecision::approve("c1/d1")])
                .await
        }
    };
    let (a, b) = tokio::join!(resume(), resume());
    let oks = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(oks, 1, "{a:?} {b:?}");
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_edit_of_a_sub_agents_call_is_checked_and_run_by_the_sub_agent() {
    let (deletes, counts) = (Arc::default(), Arc::default());
    let first = lead(
        lead_model(),
        cleaner(cleaner_model(), &deletes, true),
        &counts,
    );
    let state = first
        .prompt("clean up")
        .await
        .unwrap()
        .into_paused_state()
        .unwrap();
    let child_model = FauxModel::new().respond(FauxResponse::text("b.txt is gone"));
    let second = lead(
        FauxModel::new().respond(FauxResponse::text("all clean")),
        cleaner(child_model.clone(), &deletes, true),
        &counts,
    );
    let resumed = second
        .resume_with(
            state,
            [ApprovalDecision::edit("c1/d1", json!({"path": "b.txt"}))],
        )
        .await
        .unwrap();
    assert_eq!(resumed.end, RunEnd::Completed);
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    let child_saw = child_model.requests()[0]
        .messages
        .last()
        .unwrap()
        .text_content();
    assert_eq!(child_saw, "deleted \"b.txt\"");
}
