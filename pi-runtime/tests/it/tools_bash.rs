//! The built-in `bash` tool (SPEC §9.6): results, exit codes, timeouts, truncation, progress
//! updates, and that cancelling kills the whole process group.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::mpsc;
use pi_runtime::tools::{Bash, WorkingDir, bash};
use pi_runtime::{AgentTool, State, ToolContext, ToolDefinition, ToolError, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn run(cwd: &Path, command: &str, timeout: Option<f64>) -> Result<ToolResult, ToolError> {
    let ctx = ToolContext::detached("c1");
    bash(State(cwd.into()), command.into(), timeout, ctx).await
}

fn tmp() -> std::path::PathBuf {
    std::env::temp_dir()
}

/// Wait until a progress update shows `text`: the tool has read it, however slowly a
/// loaded machine ran the command. Panics if the updates end first.
pub(crate) async fn output_shows(mut updates: mpsc::UnboundedReceiver<ToolResult>, text: &str) {
    while let Some(update) = updates.next().await {
        if update.text_content().contains(text) {
            return;
        }
    }
    panic!("the call ended before its output showed {text:?}");
}

#[tokio::test]
async fn merged_output_and_exit_code() {
    let result = run(&tmp(), "echo out; echo err 1>&2; exit 3", None)
        .await
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "out\nerr\n\n\nCommand exited with code 3"
    );
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["exit_code"], 3);
    assert_eq!(structured["output"], "out\nerr\n");
    assert_eq!(structured["truncated"], false);
}

#[tokio::test]
async fn no_output() {
    let failed = run(&tmp(), "exit 2", None).await.unwrap();
    assert_eq!(
        failed.text_content(),
        "(no output)\n\nCommand exited with code 2"
    );
    let ok = run(&tmp(), "true", None).await.unwrap();
    assert!(!ok.is_error);
    assert_eq!(ok.text_content(), "(no output)");
    assert_eq!(ok.details, None);
}

#[tokio::test]
async fn a_signal_reports_128_plus_its_number() {
    let result = run(&tmp(), "kill -9 $$", None).await.unwrap();
    assert_eq!(
        result.text_content(),
        "(no output)\n\nCommand exited with code 137"
    );
}

#[tokio::test]
async fn timeout_keeps_the_output_and_kills_the_command() {
    let started = Instant::now();
    // Two seconds: time enough for a loaded machine to start the shell and run `echo`.
    let error = run(&tmp(), "echo before; sleep 60", Some(2.0))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "before\n\n\nCommand timed out after 2 seconds"
    );
    // Killed, not waited for: far from the minute the command asks for.
    assert!(started.elapsed() < Duration::from_secs(20));
    let silent = run(&tmp(), "sleep 60", Some(0.2)).await.unwrap_err();
    assert_eq!(silent.message(), "Command timed out after 0.2 seconds");
}

#[tokio::test]
async fn invalid_timeouts() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let error = run(&tmp(), "true", Some(bad)).await.unwrap_err();
        assert_eq!(
            error.message(),
            "Invalid timeout: must be a finite number of seconds"
        );
    }
    let error = run(&tmp(), "true", Some(2_147_484.0)).await.unwrap_err();
    assert_eq!(
        error.message(),
        "Invalid timeout: maximum is 2147483.647 seconds"
    );
}

#[tokio::test]
async fn missing_working_directory() {
    let error = run(Path::new("/no/such/dir"), "true", None)
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Working directory does not exist: /no/such/dir\nCannot execute bash commands."
    );
}

#[tokio::test]
async fn tail_truncation_by_lines_keeps_the_full_log() {
    let result = run(&tmp(), "seq 1 4000", None).await.unwrap();
    let text = result.text_content();
    let expected: String = (2001..=4000).map(|i| format!("{i}\n")).collect();
    let (shown, footer) = text.split_once("\n\n[").unwrap();
    assert_eq!(format!("{shown}\n"), expected);
    let path = result.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        footer,
        format!("Showing lines 2001-4000 of 4000. Full output: {path}]")
    );
    let full: String = (1..=4000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), full);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn tail_truncation_by_bytes() {
    // 1000 lines of 99 characters: 512 of them (plus the 511 newlines between) fit in 50 KB.
    let result = run(
        &tmp(),
        "for i in $(seq 1 1000); do printf '%099d\\n' $i; done",
        None,
    )
    .await
    .unwrap();
    let text = result.text_content();
    let path = result.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with(&format!("{:099}\n", 489)));
    assert!(text.ends_with(&format!(
        "{:099}\n\n[Showing lines 489-1000 of 1000 (50.0KB limit). Full output: {path}]",
        1000
    )));
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn one_overlong_line_shows_its_end() {
    let result = run(&tmp(), "head -c 60000 /dev/zero | tr '\\0' z; echo", None)
        .await
        .unwrap();
    let text = result.text_content();
    let path = result.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        text,
        format!(
            "{}\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]",
            "z".repeat(51_200)
        )
    );
    std::fs::remove_file(path).unwrap();
}

/// A process is gone once it is reaped or a zombie (it can no longer run).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let command = "sleep 30 & echo $! > pids; (sleep 30; echo late) & echo $! >> pids; echo $$ >> pids; echo started; wait";
    let signal = CancellationToken::new();
    let (tx, rx) = mpsc::unbounded();
    let ctx = ToolContext::new("c1", signal.clone()).on_update(move |update| {
        let _ = tx.unbounded_send(update);
    });
    let pids_file = dir.path().join("pids");
    // The shell echoes `started` once every pid is written: cancel once the tool has read it.
    let canceller = async {
        output_shows(rx, "started\n").await;
        signal.cancel();
    };
    let (result, ()) = tokio::join!(
        bash(State(dir.path().into()), command.into(), None, ctx),
        canceller
    );
    assert_eq!(
        result.unwrap_err().message(),
        "started\n\n\nCommand aborted"
    );
    let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
        .unwrap()
        .lines()
        .map(|line| line.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    // Processes a loaded machine takes long to reap; the loop ends as soon as they are.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pids.iter().all(|&pid| gone(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pid in pids {
        assert!(gone(pid), "process {pid} survived the cancellation");
    }
}

#[tokio::test]
async fn an_aborted_signal_never_starts_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let signal = CancellationToken::new();
    signal.cancel();
    let ctx = ToolContext::new("c1", signal);
    let cwd = State(dir.path().into());
    assert_eq!(
        bash(cwd, "touch ran".into(), None, ctx)
            .await
            .unwrap_err()
            .message(),
        "Command aborted"
    );
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_updates_are_throttled() {
    let (tx, mut rx) = mpsc::unbounded();
    let ctx = ToolContext::new("c1", CancellationToken::new()).on_update(move |update| {
        let _ = tx.unbounded_send(update);
    });
    let command = "for i in $(seq 1 30); do echo $i; sleep 0.02; done";
    let started = Instant::now();
    // The context (and with it the update channel) is dropped when the call ends.
    let result = bash(State(tmp().into()), command.into(), None, ctx)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let mut updates = Vec::new();
    while let Some(update) = rx.next().await {
        updates.push(update);
    }
    assert_eq!(
        updates[0],
        ToolResult::default(),
        "an empty update comes first"
    );
    let later = &updates[1..];
    assert!(!later.is_empty());
    // At most one update per 100 ms, plus the final flush.
    let bound = usize::try_from(elapsed.as_millis() / 100).unwrap() + 2;
    assert!(
        later.len() <= bound,
        "{} updates in {elapsed:?}",
        later.len()
    );
    let expected: String = (1..=30).map(|i| format!("{i}\n")).collect();
    assert_eq!(later.last().unwrap().text_content(), expected);
    assert_eq!(result.text_content(), expected);
}

#[tokio::test]
async fn as_an_agent_tool() {
    let tool = Bash::new(tmp().into());
    let result = tool
        .execute(
            "c1".into(),
            json!({"command": "printf hi"}),
            ToolContext::detached("c1"),
        )
        .await
        .unwrap();
    assert_eq!(result.text_content(), "hi");
}

/// The schema, description and prompt lines are pi's (SPEC §9.6, §8.3); the schema is
/// compared as a value because schemars writes `properties` before `required`.
#[test]
fn definition_is_pis() {
    let tool = Bash::new(WorkingDir::from("/").into());
    let definition = tool.definition();
    assert_eq!(definition.name, "bash");
    let spec: Value = serde_json::from_str(
        r#"{"type":"object","required":["command"],"properties":{"command":{"type":"string","description":"Shell command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}}"#,
    )
    .unwrap();
    assert_eq!(*definition.parameters, spec);
    assert_eq!(
        definition.description,
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
    );
    assert_eq!(
        serde_json::to_value(&definition.constrained_sampling).unwrap(),
        json!({"type": "json_schema", "strict": "prefer"})
    );
    assert_eq!(
        tool.prompt_snippet().unwrap(),
        "Execute bash commands (ls, grep, find, etc.)"
    );
    assert!(tool.prompt_guidelines().is_empty());
    assert_eq!(tool.execution_mode(), pi_runtime::ExecutionMode::Parallel);
}
