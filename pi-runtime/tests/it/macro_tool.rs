//! `#[tool]` behaviour: the generated definition, prompt metadata, execution, return types,
//! errors, `ToolContext`, `State<S>`, and registration through `ToolSet`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use futures::channel::mpsc;
use pi_runtime::{
    AgentTool, ConstrainedSampling, ContentBlock, ExecutionMode, Json, Strictness, ToolContext,
    ToolDefinition, ToolError, ToolRegistry, ToolResult, tool, tool_args,
};
use serde_json::{Value, json};

/// Execute a bash command in the working directory.
#[tool(
    snippet = "Execute bash commands (ls, grep, find, etc.)",
    mode = "sequential"
)]
async fn bash(
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    if command.is_empty() {
        return Err(ToolError::new("command must not be empty"));
    }
    Ok(format!(
        "{}: {command} (timeout {timeout:?})",
        ctx.call_id()
    ))
}

async fn run(tool: &dyn AgentTool, args: Value) -> Result<ToolResult, ToolError> {
    tool.execute("call-1".to_owned(), args, ToolContext::detached("call-1"))
        .await
}

fn text(result: &ToolResult) -> String {
    result.text_content()
}

#[test]
fn definition_comes_from_the_fn() {
    let definition = Bash.definition();
    assert_eq!(definition.name, "bash");
    assert_eq!(
        definition.description,
        "Execute a bash command in the working directory."
    );
    assert_eq!(definition.constrained_sampling, None);
    assert_eq!(Bash.label(), "bash");
    assert_eq!(Bash.execution_mode(), ExecutionMode::Sequential);
    assert_eq!(
        Bash.prompt_snippet().as_deref(),
        Some("Execute bash commands (ls, grep, find, etc.)")
    );
    assert!(Bash.prompt_guidelines().is_empty());
    assert_eq!(Bash::NAME, "bash");
}

#[test]
fn the_definition_is_built_once() {
    assert!(std::ptr::eq(Bash.definition(), Bash.definition()));
}

#[tokio::test]
async fn execute_passes_arguments_in_order() {
    let result = run(&Bash, json!({"command": "ls", "timeout": 2.5}))
        .await
        .unwrap();
    assert_eq!(text(&result), "call-1: ls (timeout Some(2.5))");
    assert!(!result.is_error);

    let result = run(&Bash, json!({"command": "pwd"})).await.unwrap();
    assert_eq!(text(&result), "call-1: pwd (timeout None)");
}

#[tokio::test]
async fn the_fn_stays_callable() {
    let output = bash("ls".to_owned(), None, ToolContext::detached("direct")).await;
    assert_eq!(output.unwrap(), "direct: ls (timeout None)");
}

#[tokio::test]
async fn an_err_is_the_text_the_model_sees() {
    let error = run(&Bash, json!({"command": ""})).await.unwrap_err();
    assert_eq!(error.message(), "command must not be empty");
}

#[tokio::test]
async fn arguments_that_do_not_deserialize_are_a_validation_error() {
    let error = run(&Bash, json!({"command": 42})).await.unwrap_err();
    let message = error.message();
    assert!(
        message.starts_with("Validation failed for tool \"bash\":\n  - "),
        "{message}"
    );
    assert!(
        message.ends_with("\n\nReceived arguments:\n{\n  \"command\": 42\n}"),
        "{message}"
    );
}

/// Read a file.
#[tool(
    name = "read-file",
    label = "Read",
    description = "Read the contents of a file.",
    snippet = "Read file contents",
    guidelines = ["Use read to examine files instead of cat or sed.", "Read before you edit."],
    mode = "parallel",
    strict = "prefer"
)]
async fn read(
    /// Path to the file to read (relative or absolute)
    #[tool(alias = ["filePath", "file"])]
    path: String,
) -> String {
    format!("contents of {path}")
}

#[test]
fn every_key_reaches_the_definition() {
    let definition = Read.definition();
    assert_eq!(definition.name, "read-file");
    assert_eq!(definition.description, "Read the contents of a file.");
    assert_eq!(
        definition.constrained_sampling,
        Some(ConstrainedSampling::JsonSchema {
            strict: Strictness::Prefer
        })
    );
    assert_eq!(Read.label(), "Read");
    assert_eq!(Read.execution_mode(), ExecutionMode::Parallel);
    assert_eq!(Read.prompt_snippet().as_deref(), Some("Read file contents"));
    assert_eq!(
        Read.prompt_guidelines(),
        [
            "Use read to examine files instead of cat or sed.",
            "Read before you edit."
        ]
    );
}

#[test]
fn unchanged_arguments_are_borrowed() {
    let raw = json!({"path": "a.txt"});
    let prepared = Read.prepare_arguments(&raw).unwrap();
    assert!(matches!(prepared, std::borrow::Cow::Borrowed(value) if std::ptr::eq(value, &raw)));

    let not_an_object = json!("a.txt");
    let prepared = Read.prepare_arguments(&not_an_object).unwrap();
    assert!(matches!(prepared, std::borrow::Cow::Borrowed(_)));

    // No alias and no `prepare`: the trait's default shim.
    let raw = json!({"command": "ls"});
    assert!(matches!(
        Bash.prepare_arguments(&raw).unwrap(),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn an_alias_is_renamed_and_the_raw_arguments_kept() {
    let raw = json!({"filePath": "a.txt"});
    let prepared = Read.prepare_arguments(&raw).unwrap();
    assert_eq!(*prepared, json!({"path": "a.txt"}));
    assert_eq!(raw, json!({"filePath": "a.txt"}));

    let raw = json!({"file": "b.txt"});
    assert_eq!(
        *Read.prepare_arguments(&raw).unwrap(),
        json!({"path": "b.txt"})
    );
}

#[test]
fn the_current_name_wins_over_an_alias() {
    let raw = json!({"filePath": "old.txt", "path": "new.txt"});
    assert_eq!(
        *Read.prepare_arguments(&raw).unwrap(),
        json!({"path": "new.txt"})
    );
}

#[test]
fn a_renamed_key_keeps_its_position() {
    let raw = json!({"filePath": "a.txt", "extra": 1});
    let prepared = Read.prepare_arguments(&raw).unwrap();
    assert_eq!(prepared.to_string(), r#"{"path":"a.txt","extra":1}"#);
}

/// Edit a file.
#[tool(prepare = wrap_single_edit)]
async fn edit(
    /// The file.
    #[tool(alias = "filePath")]
    path: String,
    /// The replacements.
    edits: Vec<Replacement>,
) -> String {
    format!("{} edit(s) in {path}", edits.len())
}

/// One replacement.
#[tool_args]
struct Replacement {
    /// Text to find.
    #[serde(rename = "oldText")]
    old_text: String,
    /// Its replacement.
    #[serde(rename = "newText")]
    new_text: String,
}

/// A single edit object becomes a one-item list.
fn wrap_single_edit(raw: &Value) -> Result<std::borrow::Cow<'_, Value>, ToolError> {
    match raw.get("edits") {
        Some(edit @ Value::Object(_)) => {
            let mut prepared = raw.clone();
            prepared["edits"] = Value::Array(vec![edit.clone()]);
            Ok(std::borrow::Cow::Owned(prepared))
        }
        Some(Value::Null) => Err(ToolError::new("edits must not be null")),
        _ => Ok(std::borrow::Cow::Borrowed(raw)),
    }
}

#[tokio::test]
async fn a_custom_shim_runs_after_the_aliases() {
    let raw = json!({"filePath": "a.txt", "edits": {"oldText": "a", "newText": "b"}});
    let prepared = Edit.prepare_arguments(&raw).unwrap();
    assert_eq!(
        *prepared,
        json!({"path": "a.txt", "edits": [{"oldText": "a", "newText": "b"}]})
    );
    let result = run(&Edit, prepared.into_owned()).await.unwrap();
    assert_eq!(text(&result), "1 edit(s) in a.txt");
    assert_eq!(
        replacement_texts(&json!({"oldText": "x", "newText": "y"})),
        ("x".to_owned(), "y".to_owned())
    );

    let unchanged = json!({"path": "a.txt", "edits": []});
    assert!(matches!(
        Edit.prepare_arguments(&unchanged).unwrap(),
        std::borrow::Cow::Borrowed(_)
    ));

    let error = Edit
        .prepare_arguments(&json!({"path": "a.txt", "edits": null}))
        .unwrap_err();
    assert_eq!(error.message(), "edits must not be null");
}

fn replacement_texts(value: &Value) -> (String, String) {
    let replacement: Replacement = serde_json::from_value(value.clone()).unwrap();
    (replacement.old_text, replacement.new_text)
}

/// Report progress, then finish.
#[tool]
async fn progress(ctx: ToolContext, steps: u32) -> ToolResult {
    for step in 1..=steps {
        ctx.update(ToolResult::text(format!("step {step}")));
    }
    ToolResult::text(format!("{} done", ctx.call_id())).with_details(json!({"steps": steps}))
}

#[tokio::test]
async fn tool_context_may_come_first() {
    let (tx, mut rx) = mpsc::unbounded();
    let ctx = ToolContext::new("call-7", tokio_util::sync::CancellationToken::new()).on_update(
        move |update| {
            let _ = tx.unbounded_send(update);
        },
    );
    let result = Progress
        .execute("call-7".to_owned(), json!({"steps": 2}), ctx)
        .await
        .unwrap();
    assert_eq!(text(&result), "call-7 done");
    assert_eq!(result.details, Some(json!({"steps": 2})));
    assert_eq!(text(&rx.next().await.unwrap()), "step 1");
    assert_eq!(text(&rx.next().await.unwrap()), "step 2");
}

/// Count the calls so far.
#[tool]
async fn count(pi_runtime::State(calls): pi_runtime::State<Arc<AtomicUsize>>) -> String {
    (calls.fetch_add(1, Ordering::SeqCst) + 1).to_string()
}

#[tokio::test]
async fn state_is_held_by_the_tool_value() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = Count::new(Arc::clone(&calls));
    assert_eq!(text(&run(&tool, json!({})).await.unwrap()), "1");
    assert_eq!(text(&run(&tool, json!({})).await.unwrap()), "2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(format!("{tool:?}"), "Count { .. }");
}

/// A summary.
#[tool_args(serialize)]
#[derive(Debug, PartialEq)]
struct Summary {
    words: usize,
    first: Option<String>,
}

/// Summarise a text.
#[tool]
async fn summarise(text: String) -> Json<Summary> {
    Json(Summary {
        words: text.split_whitespace().count(),
        first: text.split_whitespace().next().map(str::to_owned),
    })
}

/// Do nothing.
#[tool]
async fn noop() {}

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Count the words of a text.
#[tool]
async fn word_count(text: String) -> Result<usize, String> {
    if text.is_empty() {
        return Err("the text is empty".to_owned());
    }
    Ok(text.split_whitespace().count())
}

/// Whether a text is empty.
#[tool]
async fn is_blank(text: String) -> bool {
    text.trim().is_empty()
}

/// The text as JSON.
#[tool]
async fn as_json(text: String) -> Value {
    json!({"text": text, "chars": text.chars().count()})
}

#[tokio::test]
async fn plain_values_are_tool_outputs_the_model_sees_as_json() {
    let sum = run(&Add, json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(text(&sum), "3");
    assert_eq!(sum.details, Some(json!(3)));
    assert_eq!(
        text(&run(&Add, json!({"a": 0.5, "b": 2})).await.unwrap()),
        "2.5"
    );
    assert_eq!(
        text(&run(&Add, json!({"a": 1e308, "b": 1e308})).await.unwrap()),
        "Infinity"
    );

    assert_eq!(
        text(&run(&WordCount, json!({"text": "a b c"})).await.unwrap()),
        "3"
    );
    let empty = run(&WordCount, json!({"text": ""})).await.unwrap_err();
    assert_eq!(empty.to_string(), "the text is empty");

    assert_eq!(
        text(&run(&IsBlank, json!({"text": " "})).await.unwrap()),
        "true"
    );
    let shown = run(&AsJson, json!({"text": "hé"})).await.unwrap();
    assert_eq!(text(&shown), r#"{"text":"hé","chars":2}"#);
    assert_eq!(shown.details, Some(json!({"text": "hé", "chars": 2})));
}

/// Say hello.
#[tool]
async fn hello(name: String) -> &'static str {
    if name.is_empty() {
        "hello"
    } else {
        "hello you"
    }
}

/// Fail with an I/O error.
#[tool]
async fn fail(path: String) -> Result<ToolResult, std::io::Error> {
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("no such file: {path}"),
    ))
}

/// Return blocks.
#[tool]
async fn blocks() -> Vec<ContentBlock> {
    vec![ContentBlock::text("a"), ContentBlock::text("b")]
}

#[tokio::test]
async fn every_return_type_becomes_a_result() {
    let result = run(&Summarise, json!({"text": "hello big world"}))
        .await
        .unwrap();
    assert_eq!(text(&result), r#"{"words":3,"first":"hello"}"#);
    assert_eq!(result.details, Some(json!({"words": 3, "first": "hello"})));

    let result = run(&Noop, json!({})).await.unwrap();
    assert_eq!(result, ToolResult::default());

    let result = run(&Hello, json!({"name": ""})).await.unwrap();
    assert_eq!(text(&result), "hello");

    let error = run(&Fail, json!({"path": "x"})).await.unwrap_err();
    assert_eq!(error.message(), "no such file: x");

    let result = run(&Blocks, json!({})).await.unwrap();
    assert_eq!(
        result.content,
        [ContentBlock::text("a"), ContentBlock::text("b")]
    );
}

/// First line.
///
///   Indented second paragraph.
#[doc = concat!("Built ", "by concat!.")]
#[tool]
async fn documented() {}

#[test]
fn the_doc_comment_rule() {
    assert_eq!(
        Documented.definition().description,
        "First line.\n\n  Indented second paragraph.\nBuilt by concat!."
    );
}

/// Ignored: `description` wins.
#[tool(description = "The explicit description.")]
async fn described() {}

#[test]
fn an_explicit_description_wins() {
    assert_eq!(
        Described.definition().description,
        "The explicit description."
    );
}

#[tokio::test]
async fn tools_register_as_a_tuple() {
    let registry =
        ToolRegistry::new((Bash, Read, Count::new(Arc::new(AtomicUsize::new(0))))).unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["bash", "read-file", "count"]
    );
    let read = registry.get("read-file").unwrap();
    let result = run(read.as_ref(), json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(text(&result), "contents of a.txt");
}
