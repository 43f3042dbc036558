//! `FnTool`: a tool built at run time from a name, a description, a JSON Schema and a
//! closure, for tools whose schema is only known at run time (MCP servers, plugins, the
//! conformance runner).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{
    AgentTool, ApprovalPolicy, ExecutionMode, Exposure, Tool, ToolContext, ToolDefinition,
    ToolError, ToolHints, ToolPolicy, ToolResult, ToolSettings,
};

type ExecuteFn =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync;
type PrepareFn = dyn Fn(&Value) -> Result<Option<Value>, ToolError> + Send + Sync;

/// A tool whose definition and behaviour are values.
///
/// ```
/// use pi_runtime::{FnTool, ToolResult};
/// use serde_json::json;
///
/// let add = FnTool::new(
///     "add",
///     "Add two numbers.",
///     json!({"type": "object",
///            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
///            "required": ["a", "b"]}),
///     |args, _ctx| async move {
///         let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
///         Ok(ToolResult::text(sum.to_string()))
///     },
/// );
/// assert_eq!(pi_runtime::AgentTool::definition(&add).name, "add");
/// ```
#[derive(Clone)]
pub struct FnTool {
    definition: Tool,
    label: Option<String>,
    mode: ExecutionMode,
    snippet: Option<String>,
    guidelines: Vec<String>,
    prepare: Option<Arc<PrepareFn>>,
    execute: Arc<ExecuteFn>,
    output_schema: Option<Value>,
    settings: ToolSettings,
}

impl FnTool {
    /// A tool that runs `execute` with the validated arguments.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        execute: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        FnTool::from_definition(Tool::new(name, description, parameters), execute)
    }

    /// A tool with a complete [`Tool`] definition (for constrained sampling).
    pub fn from_definition<F, Fut>(definition: Tool, execute: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        FnTool {
            definition,
            label: None,
            mode: ExecutionMode::Parallel,
            snippet: None,
            guidelines: Vec::new(),
            prepare: None,
            execute: Arc::new(move |args, ctx| Box::pin(execute(args, ctx))),
            output_schema: None,
            settings: ToolSettings::new(),
        }
    }

    /// A label for UIs.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Run the batch sequentially whenever this tool is in it.
    #[must_use]
    pub fn with_mode(mut self, mode: ExecutionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The prompt snippet.
    #[must_use]
    pub fn with_snippet(mut self, snippet: impl Into<String>) -> Self {
        self.snippet = Some(snippet.into());
        self
    }

    /// The prompt guidelines.
    #[must_use]
    pub fn with_guidelines<I, S>(mut self, guidelines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.guidelines = guidelines.into_iter().map(Into::into).collect();
        self
    }

    /// The JSON Schema of the tool's `structured_content` (see
    /// [`ToolDefinition::output_schema`]): code mode scripts get that value from a call.
    ///
    /// ```
    /// use pi_runtime::{FnTool, ToolDefinition, ToolResult};
    /// use serde_json::json;
    ///
    /// let stat = FnTool::new("stat", "File size", json!({"type": "object"}), |_, _| async {
    ///     Ok(ToolResult::text("3").with_structured_content(json!({"size": 3})))
    /// })
    /// .with_output_schema(json!({"type": "object", "properties": {"size": {"type": "number"}}}));
    /// assert!(stat.output_schema().is_some());
    /// ```
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Where the tool shows up (see [`Exposure`]); [`Direct`](Exposure::Direct) unless set.
    #[must_use]
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.settings.exposure = exposure;
        self
    }

    /// Whether a call needs a person's approval first (see [`ApprovalPolicy`]).
    #[must_use]
    pub fn with_approval(mut self, approval: ApprovalPolicy) -> Self {
        self.settings.approval = approval;
        self
    }

    /// What the tool says about its behaviour (see [`ToolHints`]).
    #[must_use]
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.settings.hints = hints;
        self
    }

    /// How the dispatcher runs the tool's calls (see [`ToolPolicy`]).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use pi_runtime::tool::ToolPolicy;
    /// use pi_runtime::{FnTool, ToolDefinition, ToolResult};
    /// use serde_json::json;
    ///
    /// let query = FnTool::new("query", "Run a query.", json!({"type": "object"}), |_, _| async {
    ///     Ok(ToolResult::text("3 rows"))
    /// })
    /// .with_policy(ToolPolicy::new().with_timeout(Duration::from_secs(30)).with_concurrency("db", 4));
    /// assert_eq!(query.settings().policy.timeout, Some(Duration::from_secs(30)));
    /// ```
    #[must_use]
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.settings.policy = policy;
        self
    }

    /// A shape shim, run before validation: return `Ok(None)` to keep the raw arguments,
    /// `Ok(Some(v))` to replace them (the transcript keeps the raw ones).
    #[must_use]
    pub fn with_prepare<F>(mut self, prepare: F) -> Self
    where
        F: Fn(&Value) -> Result<Option<Value>, ToolError> + Send + Sync + 'static,
    {
        self.prepare = Some(Arc::new(prepare));
        self
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("definition", &self.definition)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl AgentTool for FnTool {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.definition.name)
    }

    fn prepare_arguments<'a>(&self, raw: &'a Value) -> Result<Cow<'a, Value>, ToolError> {
        match &self.prepare {
            None => Ok(Cow::Borrowed(raw)),
            Some(prepare) => Ok(prepare(raw)?.map_or(Cow::Borrowed(raw), Cow::Owned)),
        }
    }

    fn execution_mode(&self) -> ExecutionMode {
        self.mode
    }

    fn execute(
        &self,
        _call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        (self.execute)(params, ctx)
    }
}

impl ToolDefinition for FnTool {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        self.snippet.as_deref().map(Cow::Borrowed)
    }

    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        self.guidelines
            .iter()
            .map(|g| Cow::Borrowed(g.as_str()))
            .collect()
    }

    fn output_schema(&self) -> Option<Value> {
        self.output_schema.clone()
    }

    fn settings(&self) -> &ToolSettings {
        &self.settings
    }
}
