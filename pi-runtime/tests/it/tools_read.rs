//! The built-in `read` tool (SPEC §9.3): every message and the verified examples.

use std::path::Path;

use pi_runtime::tools::{Read, WorkingDir, read};
use pi_runtime::{
    AgentTool, ContentBlock, State, ToolContext, ToolDefinition, ToolError, ToolResult,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn run(
    cwd: &Path,
    path: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<ToolResult, ToolError> {
    let ctx = ToolContext::detached("c1");
    read(State(cwd.into()), path.into(), offset, limit, ctx).await
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn line_limit_footer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), numbered(2500)).unwrap();
    let text = run(dir.path(), "big.txt", None, None)
        .await
        .unwrap()
        .text_content();
    assert!(text.starts_with("line 1\nline 2\n"));
    assert!(
        text.ends_with("line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")
    );
    let rest = run(dir.path(), "big.txt", Some(2001.0), None)
        .await
        .unwrap()
        .text_content();
    assert_eq!(
        rest,
        (2001..=2500)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test]
async fn user_limit_footer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let result = run(dir.path(), "a.txt", None, Some(1.0)).await.unwrap();
    assert_eq!(
        result.text_content(),
        "alpha\n\n[3 more lines in file. Use offset=2 to continue.]"
    );
    assert_eq!(result.details, None);
    let middle = run(dir.path(), "a.txt", Some(2.0), Some(1.0))
        .await
        .unwrap();
    assert_eq!(
        middle.text_content(),
        "beta\n\n[2 more lines in file. Use offset=3 to continue.]"
    );
    let whole = run(dir.path(), "a.txt", Some(0.0), None).await.unwrap();
    assert_eq!(whole.text_content(), "alpha\nbeta\ngamma\n");
}

#[tokio::test]
async fn byte_limit_footer() {
    let dir = tempfile::tempdir().unwrap();
    let line = "x".repeat(1000);
    std::fs::write(
        dir.path().join("wide.txt"),
        vec![line.as_str(); 100].join("\n"),
    )
    .unwrap();
    let result = run(dir.path(), "wide.txt", None, None).await.unwrap();
    let text = result.text_content();
    assert!(
        text.ends_with(
            "\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]"
        )
    );
    assert_eq!(text.matches(&line).count(), 51);
    let details = result.details.unwrap();
    assert_eq!(details["truncation"]["truncatedBy"], "bytes");
    assert_eq!(details["truncation"]["outputLines"], 51);
}

#[tokio::test]
async fn first_line_over_the_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("long1.txt"),
        format!("{}\nb\nc\nd", "y".repeat(60_000)),
    )
    .unwrap();
    let text = run(dir.path(), "long1.txt", None, None)
        .await
        .unwrap()
        .text_content();
    assert_eq!(
        text,
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' long1.txt | head -c 51200]"
    );
    let second = run(dir.path(), "long1.txt", Some(2.0), None)
        .await
        .unwrap()
        .text_content();
    assert_eq!(second, "b\nc\nd");
}

#[tokio::test]
async fn offset_beyond_the_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long1.txt"), "a\nb\nc\nd").unwrap();
    let error = run(dir.path(), "long1.txt", Some(100.0), None)
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Offset 100 is beyond end of file (4 lines total)"
    );
}

#[tokio::test]
async fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let error = run(dir.path(), "nope.txt", None, None).await.unwrap_err();
    let absolute = dir.path().join("nope.txt");
    assert_eq!(
        error.message(),
        format!(
            "ENOENT: no such file or directory, access '{}'",
            absolute.display()
        )
    );
}

#[tokio::test]
async fn abort() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let signal = CancellationToken::new();
    signal.cancel();
    let ctx = ToolContext::new("c1", signal);
    let cwd = State(dir.path().into());
    let error = read(cwd, "a.txt".into(), None, None, ctx)
        .await
        .unwrap_err();
    assert_eq!(error.message(), "Operation aborted");
}

#[tokio::test]
async fn images_are_detected_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    std::fs::write(dir.path().join("picture.dat"), &png).unwrap();
    let result = run(dir.path(), "@picture.dat", None, None).await.unwrap();
    assert_eq!(
        result.content,
        [
            ContentBlock::text("Read image file [image/png]"),
            ContentBlock::image("iVBORw0KGgoAAAANSUhEUg==", "image/png"),
        ]
    );
}

#[tokio::test]
async fn as_an_agent_tool() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let tool = Read::new(dir.path().into());
    let result = tool
        .execute(
            "c1".into(),
            json!({"path": "a.txt"}),
            ToolContext::detached("c1"),
        )
        .await
        .unwrap();
    assert_eq!(result.text_content(), "hello\n");
    assert_eq!(result.structured_content, Some(json!("hello\n")));
}

/// The schema, description and prompt lines are pi's (SPEC §9.3, §8.3); the schema is
/// compared as a value because schemars writes `properties` before `required`.
#[test]
fn definition_is_pis() {
    let tool = Read::new(WorkingDir::from("/"));
    let definition = tool.definition();
    assert_eq!(definition.name, "read");
    let spec: Value = serde_json::from_str(
        r#"{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"Path to the file to read (relative or absolute)"},"offset":{"type":"number","description":"Line number to start reading from (1-indexed)"},"limit":{"type":"number","description":"Maximum number of lines to read"}}}"#,
    )
    .unwrap();
    assert_eq!(*definition.parameters, spec);
    assert_eq!(
        definition.description,
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete."
    );
    assert_eq!(
        serde_json::to_value(&definition.constrained_sampling).unwrap(),
        json!({"type": "json_schema", "strict": "prefer"})
    );
    assert_eq!(tool.prompt_snippet().unwrap(), "Read file contents");
    assert_eq!(
        tool.prompt_guidelines(),
        ["Use read to examine files instead of cat or sed."]
    );
}
