//! The built-in `write` tool (SPEC §9.4).

use pi_runtime::tools::{WorkingDir, Write, write};
use pi_runtime::{AgentTool, State, ToolContext, ToolDefinition};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn in_dir(dir: &tempfile::TempDir) -> State<WorkingDir> {
    State(dir.path().into())
}

fn with_signal(signal: &CancellationToken) -> ToolContext {
    ToolContext::new("c1", signal.clone())
}

#[tokio::test]
async fn creates_parents_and_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let signal = CancellationToken::new();
    let first = write(
        in_dir(&dir),
        "a/b/c.txt".into(),
        "first\n".into(),
        with_signal(&signal),
    );
    assert_eq!(first.await.unwrap(), "Successfully wrote to a/b/c.txt");
    let again = "ünïcode\n".to_owned();
    write(
        in_dir(&dir),
        "a/b/c.txt".into(),
        again,
        with_signal(&signal),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "ünïcode\n"
    );
}

#[tokio::test]
async fn abort_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let signal = CancellationToken::new();
    signal.cancel();
    assert_eq!(
        write(
            in_dir(&dir),
            "x.txt".into(),
            "x".into(),
            with_signal(&signal)
        )
        .await
        .unwrap_err()
        .message(),
        "Operation aborted"
    );
    assert!(!dir.path().join("x.txt").exists());
}

#[tokio::test]
async fn as_an_agent_tool() {
    let dir = tempfile::tempdir().unwrap();
    let tool = Write::new(dir.path().into());
    let result = tool
        .execute(
            "c1".into(),
            json!({"path": "n.txt", "content": "hi"}),
            ToolContext::detached("c1"),
        )
        .await
        .unwrap();
    assert_eq!(result.text_content(), "Successfully wrote to n.txt");
    assert_eq!(result.details, None);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n.txt")).unwrap(),
        "hi"
    );
}

/// The schema, description and prompt lines are pi's (SPEC §9.4, §8.3); the schema is
/// compared as a value because schemars writes `properties` before `required`.
#[test]
fn definition_is_pis() {
    let tool = Write::new(WorkingDir::from("/"));
    let definition = tool.definition();
    assert_eq!(definition.name, "write");
    let spec: Value = serde_json::from_str(
        r#"{"type":"object","required":["path","content"],"properties":{"path":{"type":"string","description":"Path to the file to write (relative or absolute)"},"content":{"type":"string","description":"Content to write to the file"}}}"#,
    )
    .unwrap();
    assert_eq!(*definition.parameters, spec);
    assert_eq!(
        definition.description,
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories."
    );
    assert_eq!(
        serde_json::to_value(&definition.constrained_sampling).unwrap(),
        json!({"type": "json_schema", "strict": "prefer"})
    );
    assert_eq!(tool.prompt_snippet().unwrap(), "Create or overwrite files");
    assert_eq!(
        tool.prompt_guidelines(),
        ["Use write only for new files or complete rewrites."]
    );
}
