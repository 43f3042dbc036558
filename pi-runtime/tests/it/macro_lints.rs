//! `#[tool]` expansions are lint-clean in a user's crate: this file denies the pedantic
//! clippy group and rustc's hygiene lints over every kind of expansion, and
//! `cargo clippy --all-targets -- -D warnings` checks it.
#![deny(
    clippy::pedantic,
    unused_qualifications,
    unused_results,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    trivial_casts,
    unused_lifetimes
)]

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_runtime::tool::{ContextType, FromToolContext, RunContext};
use pi_runtime::{
    AgentTool, Args, Ctx, Json, State, ToolContext, ToolError, ToolResult, tool, tool_args,
};
use serde_json::Value;

/// Every key and parameter kind at once.
#[tool(
    name = "everything",
    label = "Everything",
    snippet = "Do everything",
    guidelines = ["Use it sparingly."],
    mode = "sequential",
    strict = "require",
    prepare = shim
)]
async fn everything(
    ctx: ToolContext,
    /// A path.
    #[tool(alias = "filePath")]
    path: String,
    /// A count.
    #[serde(default)]
    count: Option<u32>,
    State(calls): State<Arc<AtomicUsize>>,
) -> Result<String, ToolError> {
    let _previous = calls.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{} {path} {count:?}", ctx.call_id()))
}

#[allow(
    clippy::unnecessary_wraps,
    reason = "the shape `#[tool(prepare = ...)]` asks for"
)]
fn shim(raw: &Value) -> Result<Cow<'_, Value>, ToolError> {
    Ok(Cow::Borrowed(raw))
}

/// A report.
#[tool_args(serialize)]
struct Report {
    /// Lines.
    lines: Vec<String>,
}

/// Whole-struct arguments and a JSON output.
#[tool(closed = false)]
async fn echo(Args(report): Args<Report>) -> Json<Report> {
    Json(report)
}

/// An extractor of the test's own.
struct CallId(String);

impl FromToolContext for CallId {
    type Rejection = ToolError;

    fn from_tool_context(ctx: &ToolContext, _tool: &str) -> Result<Self, ToolError> {
        Ok(CallId(ctx.call_id().to_owned()))
    }

    fn context_type() -> Option<ContextType> {
        None
    }
}

/// An alias of `Ctx<T>`.
type Count = Ctx<Arc<AtomicUsize>>;

/// Extractors of every kind: the user's, an alias, the built-ins.
#[tool]
async fn extractors(
    #[tool(extract)] CallId(id): CallId,
    #[tool(extract)] Ctx(count): Count,
    Ctx(again): Ctx<Arc<AtomicUsize>>,
    ctx: ToolContext,
) -> String {
    let _previous = count.fetch_add(1, Ordering::SeqCst);
    format!("{id} {} {}", again.load(Ordering::SeqCst), ctx.call_id())
}

/// No arguments at all.
#[tool]
async fn nothing() -> ToolResult {
    ToolResult::default()
}

#[tokio::test]
async fn lint_clean_tools_work() {
    let tool = Everything::new(Arc::new(AtomicUsize::new(0)));
    let result = tool
        .execute(
            "c".to_owned(),
            serde_json::json!({"path": "p"}),
            ToolContext::detached("c"),
        )
        .await
        .unwrap();
    assert_eq!(result.text_content(), "c p None");
    let echoed = Echo
        .execute(
            "c".to_owned(),
            serde_json::json!({"lines": ["a"]}),
            ToolContext::detached("c"),
        )
        .await
        .unwrap();
    assert_eq!(echoed.text_content(), r#"{"lines":["a"]}"#);
    let counted = Extractors
        .execute(
            "c".to_owned(),
            serde_json::json!({}),
            ToolContext::detached("c")
                .with_run_context(RunContext::new(Arc::new(AtomicUsize::new(0)))),
        )
        .await
        .unwrap();
    assert_eq!(counted.text_content(), "c 1 c");
    assert_eq!(
        Nothing
            .execute(
                "c".to_owned(),
                serde_json::json!({}),
                ToolContext::detached("c")
            )
            .await
            .unwrap(),
        ToolResult::default()
    );
}
