//! Parallel `edit` calls on one file through the `Agent` (SPEC §5.4, §9.1, §9.5): one
//! assistant message edits the same file several times, under different spellings of its
//! path; the mutation queue applies them one after another, so no edit is lost, and the
//! results come back in source order whatever order the edits finished in.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tools::Edit as EditTool;
use pi_runtime::{Message, ToolResultMessage};
use serde_json::{Value, json};

/// `(id, path, oldText, newText)`: one `edit` call replacing one line.
type Edit<'a> = (&'a str, String, &'a str, &'a str);

/// One assistant message with every edit as a parallel call, then a plain answer.
fn model(edits: &[Edit<'_>]) -> FauxModel {
    let call = |(id, path, old, new): &Edit<'_>| -> (String, Value) {
        let args = json!({"path": path, "edits": [{"oldText": old, "newText": new}]});
        ((*id).to_owned(), args)
    };
    let mut calls = edits.iter().map(call);
    let (id, args) = calls.next().expect("at least one edit");
    let batch = calls.fold(
        FauxResponse::tool_call(id, "edit", args),
        |batch, (id, args)| batch.and_tool_call(id, "edit", args),
    );
    FauxModel::new()
        .respond(batch)
        .respond(FauxResponse::text("Edited."))
}

fn agent(model: FauxModel, cwd: &Path) -> Agent {
    Agent::builder()
        .model(model)
        .tools(EditTool::new(cwd.into()))
        .build()
        .expect("agent")
}

fn results(messages: &[Message]) -> Vec<&ToolResultMessage> {
    messages
        .iter()
        .filter_map(Message::as_tool_result)
        .collect()
}

/// The call ids of the `tool_execution_start` and of the `tool_execution_end` events.
#[derive(Debug, Clone, Default)]
struct ToolEvents {
    starts: Vec<String>,
    ends: Vec<String>,
}

fn record_tool_events(agent: &Agent) -> Arc<Mutex<ToolEvents>> {
    let events = Arc::new(Mutex::new(ToolEvents::default()));
    let sink = Arc::clone(&events);
    agent.on_event(move |event| {
        let mut events = sink.lock().expect("lock");
        match event {
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                events.starts.push(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                events.ends.push(tool_call_id.clone());
            }
            _ => {}
        }
    });
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_edits_of_one_file_all_apply_and_report_in_source_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "one\ntwo\nthree\nfour\nfive\n").expect("write");
    std::os::unix::fs::symlink(&file, dir.path().join("link.txt")).expect("symlink");
    let absolute = file.to_string_lossy().into_owned();
    // Every spelling of the path names one file, so all five share one queue.
    let edits = [
        ("c1", "notes.txt".to_owned(), "five", "FIVE"),
        ("c2", "./notes.txt".to_owned(), "one", "ONE"),
        ("c3", absolute.clone(), "three", "THREE"),
        ("c4", "link.txt".to_owned(), "four", "FOUR"),
        ("c5", "@notes.txt".to_owned(), "two", "TWO"),
    ];
    let agent = agent(model(&edits), dir.path());
    let events = record_tool_events(&agent);

    let added = agent
        .prompt("Capitalise every line.")
        .await
        .expect("idle agent");

    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "ONE\nTWO\nTHREE\nFOUR\nFIVE\n"
    );
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.txt"))
            .expect("link")
            .file_type()
            .is_symlink(),
        "editing through the link keeps the link"
    );

    let results = results(&added);
    let summary: Vec<(&str, bool, String, &Value)> = results
        .iter()
        .map(|result| {
            let details = result.details.as_ref().expect("details");
            (
                result.tool_call_id.as_str(),
                result.is_error,
                result.text(),
                &details["firstChangedLine"],
            )
        })
        .collect();
    let success = |path: &str| format!("Successfully replaced 1 block(s) in {path}.");
    assert_eq!(
        summary,
        [
            ("c1", false, success("notes.txt"), &json!(5)),
            ("c2", false, success("./notes.txt"), &json!(1)),
            ("c3", false, success(&absolute), &json!(3)),
            ("c4", false, success("link.txt"), &json!(4)),
            ("c5", false, success("@notes.txt"), &json!(2)),
        ]
    );

    let ToolEvents { starts, mut ends } = events.lock().expect("lock").clone();
    assert_eq!(starts, ["c1", "c2", "c3", "c4", "c5"]);
    // End events follow completion order, which the queue and the scheduler decide.
    ends.sort();
    assert_eq!(ends, ["c1", "c2", "c3", "c4", "c5"]);
    let Some(Message::Assistant(answer)) = added.last() else {
        panic!("no final answer: {added:?}");
    };
    assert_eq!(answer.text(), "Edited.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_parallel_edits_lose_no_update() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("list.txt");
    let lines: Vec<String> = (0..24).map(|i| format!("item {i:02}")).collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    let done: Vec<String> = lines.iter().map(|line| format!("{line} done")).collect();
    let ids: Vec<String> = (0..lines.len()).map(|i| format!("e{i}")).collect();
    // Last line first, so no edit can succeed by merely running in file order.
    let edits: Vec<Edit<'_>> = (0..lines.len())
        .rev()
        .map(|i| {
            (
                ids[i].as_str(),
                "list.txt".to_owned(),
                lines[i].as_str(),
                done[i].as_str(),
            )
        })
        .collect();
    let agent = agent(model(&edits), dir.path());

    let added = agent.prompt("Tick every item.").await.expect("idle agent");

    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        done.join("\n") + "\n"
    );
    let reported: Vec<(&str, bool)> = results(&added)
        .iter()
        .map(|result| (result.tool_call_id.as_str(), result.is_error))
        .collect();
    let expected: Vec<(&str, bool)> = edits.iter().map(|(id, ..)| (*id, false)).collect();
    assert_eq!(reported, expected);
}
