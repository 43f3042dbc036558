//! The built-in `edit` tool (SPEC §9.5): every message, all-or-nothing, BOM and line
//! endings, fuzzy matching, details, and the argument shim.

use std::path::Path;

use pi_runtime::tools::{Edit, Replacement, WorkingDir, edit, prepare_edit_arguments};
use pi_runtime::{AgentTool, State, ToolContext, ToolDefinition, ToolError, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn r(old: &str, new: &str) -> Replacement {
    Replacement {
        old_text: old.into(),
        new_text: new.into(),
    }
}

async fn run(cwd: &Path, path: &str, edits: Vec<Replacement>) -> Result<ToolResult, ToolError> {
    let ctx = ToolContext::detached("c1");
    edit(State(cwd.into()), path.into(), edits, ctx).await
}

/// A file with `content`, an edit, and the file afterwards.
async fn edited(
    content: &[u8],
    edits: Vec<Replacement>,
) -> (Result<ToolResult, ToolError>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), content).unwrap();
    let result = run(dir.path(), "f.txt", edits).await;
    (result, std::fs::read(dir.path().join("f.txt")).unwrap())
}

async fn error(content: &str, edits: Vec<Replacement>) -> String {
    let (result, after) = edited(content.as_bytes(), edits).await;
    assert_eq!(after, content.as_bytes(), "nothing is written on an error");
    result.unwrap_err().into_message()
}

#[tokio::test]
async fn success_text_and_details() {
    let (result, after) =
        edited(b"one\ntwo\nthree\n", vec![r("two", "TWO"), r("three", "3")]).await;
    let result = result.unwrap();
    assert_eq!(
        result.text_content(),
        "Successfully replaced 2 block(s) in f.txt."
    );
    assert_eq!(after, b"one\nTWO\n3\n");
    let details = result.details.unwrap();
    assert_eq!(details["firstChangedLine"], 2);
    assert_eq!(details["diff"], " 1 one\n-2 two\n-3 three\n+2 TWO\n+3 3");
    assert_eq!(
        details["patch"],
        "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+TWO\n+3\n"
    );
}

#[tokio::test]
async fn empty_edits() {
    let dir = tempfile::tempdir().unwrap();
    let error = run(dir.path(), "f.txt", vec![]).await.unwrap_err();
    assert_eq!(
        error.message(),
        "Edit tool input is invalid. edits must contain at least one replacement."
    );
}

#[tokio::test]
async fn missing_file_reports_the_error_code() {
    let dir = tempfile::tempdir().unwrap();
    let error = run(dir.path(), "nope.txt", vec![r("a", "b")])
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Could not edit file: nope.txt. Error code: ENOENT."
    );
    let error = run(dir.path(), ".", vec![r("a", "b")]).await.unwrap_err();
    assert_eq!(
        error.message(),
        "Could not edit file: .. Error code: EISDIR."
    );
}

#[tokio::test]
async fn empty_old_text() {
    assert_eq!(
        error("abc", vec![r("", "x")]).await,
        "oldText must not be empty in f.txt."
    );
    assert_eq!(
        error("abc", vec![r("a", "x"), r("", "y")]).await,
        "edits[1].oldText must not be empty in f.txt."
    );
}

#[tokio::test]
async fn not_found() {
    assert_eq!(
        error("abc", vec![r("zzz", "x")]).await,
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(
        error("abc", vec![r("a", "x"), r("zzz", "y")]).await,
        "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
    );
}

#[tokio::test]
async fn ambiguous() {
    assert_eq!(
        error("ab ab ab", vec![r("ab", "x")]).await,
        "Found 3 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        error("ab ab c", vec![r("c", "x"), r("ab", "y")]).await,
        "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
    );
}

#[tokio::test]
async fn overlap() {
    assert_eq!(
        error("abcdef", vec![r("cde", "x"), r("abc", "y")]).await,
        "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint regions."
    );
}

#[tokio::test]
async fn no_change() {
    assert_eq!(
        error("abc", vec![r("b", "b")]).await,
        "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
    );
    assert_eq!(
        error("abc", vec![r("a", "a"), r("c", "c")]).await,
        "No changes made to f.txt. The replacements produced identical content."
    );
}

#[tokio::test]
async fn bom_and_crlf_are_kept() {
    let (result, after) = edited(
        b"\xEF\xBB\xBFfirst\r\nsecond\r\nthird\r\n",
        vec![r("second\n", "2a\n2b\n")],
    )
    .await;
    result.unwrap();
    assert_eq!(after, b"\xEF\xBB\xBFfirst\r\n2a\r\n2b\r\nthird\r\n");
}

#[tokio::test]
async fn fuzzy_match_keeps_untouched_lines_byte_for_byte() {
    let content = "say \u{201C}hi\u{201D}  \nkeep \u{2014} this  \n";
    let (result, after) = edited(content.as_bytes(), vec![r("say \"hi\"", "say \"bye\"")]).await;
    result.unwrap();
    assert_eq!(
        String::from_utf8(after).unwrap(),
        "say \"bye\"\nkeep \u{2014} this  \n"
    );
}

#[tokio::test]
async fn edits_match_the_original_not_each_other() {
    let (result, after) = edited(b"a b", vec![r("a", "b"), r("b", "c")]).await;
    result.unwrap();
    assert_eq!(after, b"b c");
}

#[tokio::test]
async fn abort_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "abc").unwrap();
    let signal = CancellationToken::new();
    signal.cancel();
    let ctx = ToolContext::new("c1", signal);
    let cwd = State(dir.path().into());
    assert_eq!(
        edit(cwd, "f.txt".into(), vec![r("b", "B")], ctx)
            .await
            .unwrap_err()
            .message(),
        "Operation aborted"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "abc"
    );
}

#[test]
fn argument_shim() {
    let edit = json!({"oldText": "a", "newText": "b"});
    // `edits` as a JSON string holding an array or one object.
    assert_eq!(
        *prepare_edit_arguments(
            &json!({"path": "p", "edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]"})
        ),
        json!({"path": "p", "edits": [edit]})
    );
    assert_eq!(
        *prepare_edit_arguments(
            &json!({"path": "p", "edits": "{\"oldText\":\"a\",\"newText\":\"b\"}"})
        ),
        json!({"path": "p", "edits": [edit]})
    );
    // Unparseable text stays for validation to report.
    let broken = json!({"path": "p", "edits": "[{"});
    assert_eq!(*prepare_edit_arguments(&broken), broken);
    // One object becomes a one-item array.
    assert_eq!(
        *prepare_edit_arguments(&json!({"path": "p", "edits": edit})),
        json!({"path": "p", "edits": [edit]})
    );
    // Legacy top-level fields are appended after the existing edits.
    assert_eq!(
        *prepare_edit_arguments(
            &json!({"path": "p", "edits": [{"oldText": "x", "newText": "y"}], "oldText": "a", "newText": "b"})
        ),
        json!({"path": "p", "edits": [{"oldText": "x", "newText": "y"}, edit]})
    );
    // Non-objects pass through.
    assert_eq!(*prepare_edit_arguments(&json!("text")), json!("text"));
}

#[tokio::test]
async fn as_an_agent_tool() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "old\n").unwrap();
    let tool = Edit::new(dir.path().into());
    let raw = json!({"path": "f.txt", "oldText": "old", "newText": "new"});
    let prepared = tool.prepare_arguments(&raw).unwrap().into_owned();
    let result = tool
        .execute("c1".into(), prepared, ToolContext::detached("c1"))
        .await
        .unwrap();
    assert_eq!(
        result.text_content(),
        "Successfully replaced 1 block(s) in f.txt."
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "new\n"
    );
}

/// The schema, description and prompt lines are pi's (SPEC §9.5, §8.3 with the seed's
/// snippet); the schema is compared as a value because schemars writes `properties` before
/// `required`.
#[test]
fn definition_is_pis() {
    let tool = Edit::new(WorkingDir::from("/"));
    let definition = tool.definition();
    assert_eq!(definition.name, "edit");
    let spec: Value = serde_json::from_str(
        r#"{"type":"object","required":["path","edits"],"properties":{"path":{"type":"string","description":"Path to the file to edit (relative or absolute)"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],"properties":{"oldText":{"type":"string","description":"Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},"newText":{"type":"string","description":"Replacement text for this targeted edit."}}},"description":"One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}}}"#,
    )
    .unwrap();
    assert_eq!(*definition.parameters, spec);
    assert_eq!(
        definition.description,
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."
    );
    assert_eq!(
        serde_json::to_value(&definition.constrained_sampling).unwrap(),
        json!({"type": "json_schema", "strict": "prefer"})
    );
    assert_eq!(
        tool.prompt_snippet().unwrap(),
        "Edit files via targeted text replacements"
    );
    assert_eq!(
        tool.prompt_guidelines(),
        [
            "Use edit for targeted changes. Batch changes to one file in a single call.",
            "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
        ]
    );
}

/// The legacy shape goes through the tool's `prepare_arguments`, and a call that only
/// needs renaming is untouched (borrowed).
#[test]
fn prepare_arguments_is_the_shim() {
    let tool = Edit::new(WorkingDir::from("/"));
    let legacy = json!({"path": "p", "oldText": "a", "newText": "b"});
    assert_eq!(
        tool.prepare_arguments(&legacy).unwrap().into_owned(),
        json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]})
    );
    let current = json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]});
    assert!(matches!(
        tool.prepare_arguments(&current).unwrap(),
        std::borrow::Cow::Borrowed(_)
    ));
}
