//! The built-in `write` tool (SPEC §9.4).

use pi_runtime::tools::{WriteArgs, WriteTool, write};
use pi_runtime::{AgentTool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn creates_parents_and_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let signal = CancellationToken::new();
    let args = WriteArgs {
        path: "a/b/c.txt".into(),
        content: "first\n".into(),
    };
    assert_eq!(
        write(dir.path(), &args, &signal).await.unwrap(),
        "Successfully wrote to a/b/c.txt"
    );
    let again = WriteArgs {
        path: "a/b/c.txt".into(),
        content: "ünïcode\n".into(),
    };
    write(dir.path(), &again, &signal).await.unwrap();
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
    let args = WriteArgs {
        path: "x.txt".into(),
        content: "x".into(),
    };
    assert_eq!(
        write(dir.path(), &args, &signal)
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
    let tool = WriteTool::new(dir.path());
    assert_eq!(
        serde_json::to_string(&tool.definition().parameters).unwrap(),
        r#"{"type":"object","required":["path","content"],"properties":{"path":{"type":"string","description":"Path to the file to write (relative or absolute)"},"content":{"type":"string","description":"Content to write to the file"}}}"#
    );
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
