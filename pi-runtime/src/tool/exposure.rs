//! `Exposure`: where a registered tool shows up: declared to the model, callable from code
//! mode scripts, found by `tool_search`.

use std::borrow::Cow;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AgentTool, ApprovalPolicy, ExecutionMode, Tool, ToolContext, ToolDefinition, ToolError,
    ToolHints, ToolResult, ToolSet,
};

/// Where a registered tool shows up. pi 1.6 names five exposures:
///
/// | exposure | declared to the model | callable from scripts | found by `tool_search` |
/// |---|---|---|---|
/// | [`Direct`](Exposure::Direct) | while active | while active | no |
/// | [`ModelOnly`](Exposure::ModelOnly) | while active | never | no |
/// | [`Codemode`](Exposure::Codemode) | only once activated | always | while not active |
/// | [`Deferred`](Exposure::Deferred) | only once activated | always | while not active |
/// | [`Hidden`](Exposure::Hidden) | never | never | no |
///
/// `Direct` and `ModelOnly` tools are active once registered; the others wait until they
/// are activated, for example by a `tool_search` match.
///
/// ```
/// use pi_runtime::tool::Exposure;
///
/// assert_eq!(Exposure::default(), Exposure::Direct);
/// assert!(Exposure::Deferred.is_searchable());
/// assert!(!Exposure::Deferred.is_active_when_registered());
/// assert_eq!(serde_json::to_string(&Exposure::ModelOnly).unwrap(), "\"model-only\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Exposure {
    /// Declared while active (active once registered), callable from scripts while active.
    #[default]
    Direct,
    /// Declared while active (active once registered), never callable from scripts.
    ModelOnly,
    /// Declared only once activated, always callable from scripts, searchable until active.
    Codemode,
    /// Declared only once activated, callable from scripts, searchable until active.
    Deferred,
    /// Registered, never declared and never callable from scripts.
    Hidden,
}

impl Exposure {
    /// Whether a tool with this exposure is active as soon as it is registered.
    pub fn is_active_when_registered(self) -> bool {
        matches!(self, Exposure::Direct | Exposure::ModelOnly)
    }

    /// Whether `tool_search` looks at a tool with this exposure (while it is not active).
    pub fn is_searchable(self) -> bool {
        matches!(self, Exposure::Codemode | Exposure::Deferred)
    }

    /// Whether activating the tool declares it to the model.
    pub fn can_be_declared(self) -> bool {
        !matches!(self, Exposure::Hidden)
    }

    /// The name pi gives this exposure: `direct`, `model-only`, `codemode`, `deferred`,
    /// `hidden`.
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Direct => "direct",
            Exposure::ModelOnly => "model-only",
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Hidden => "hidden",
        }
    }
}

/// A [`ToolSet`] whose every tool has one exposure, whatever the tools say themselves:
/// `tools.with_exposure(Exposure::Deferred)` keeps a whole MCP server's tools out of the
/// prompt until `tool_search` loads them.
///
/// ```
/// use pi_runtime::tool::{Exposure, FnTool, ToolRegistry, ToolResult, ToolSetExt};
/// use serde_json::json;
///
/// let ping = FnTool::new("ping", "Ping.", json!({"type": "object"}), |_, _| async {
///     Ok(ToolResult::text("pong"))
/// });
/// let registry = ToolRegistry::new(ping.with_exposure(Exposure::Deferred)).unwrap();
/// assert_eq!(registry.active().count(), 0); // registered, not declared until activated
/// ```
#[derive(Debug)]
pub struct Exposed<S> {
    tools: S,
    exposure: Exposure,
}

/// Adds [`with_exposure`](ToolSetExt::with_exposure) to every [`ToolSet`].
pub trait ToolSetExt: ToolSet + Sized {
    /// These tools, each with `exposure`.
    fn with_exposure(self, exposure: Exposure) -> Exposed<Self> {
        Exposed {
            tools: self,
            exposure,
        }
    }
}

impl<S: ToolSet> ToolSetExt for S {}

impl<S: ToolSet> ToolSet for Exposed<S> {
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
        let exposure = self.exposure;
        self.tools
            .into_tools()
            .into_iter()
            .map(|tool| -> Arc<dyn ToolDefinition> { Arc::new(WithExposure { tool, exposure }) })
            .collect()
    }
}

/// A tool with its exposure replaced; everything else is the tool's own.
struct WithExposure {
    tool: Arc<dyn ToolDefinition>,
    exposure: Exposure,
}

impl AgentTool for WithExposure {
    fn definition(&self) -> &Tool {
        self.tool.definition()
    }
    fn label(&self) -> &str {
        self.tool.label()
    }
    fn prepare_arguments<'a>(&self, raw: &'a Value) -> Result<Cow<'a, Value>, ToolError> {
        self.tool.prepare_arguments(raw)
    }
    fn execution_mode(&self) -> ExecutionMode {
        self.tool.execution_mode()
    }
    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        self.tool.execute(call_id, params, ctx)
    }
}

impl ToolDefinition for WithExposure {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        self.tool.prompt_snippet()
    }
    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        self.tool.prompt_guidelines()
    }
    fn render_call(&self, args: &Value) -> Option<String> {
        self.tool.render_call(args)
    }
    fn render_result(&self, result: &ToolResult) -> Option<String> {
        self.tool.render_result(result)
    }
    fn output_schema(&self) -> Option<Value> {
        self.tool.output_schema()
    }
    fn exposure(&self) -> Exposure {
        self.exposure
    }
    fn approval(&self) -> ApprovalPolicy {
        self.tool.approval()
    }
    fn hints(&self) -> ToolHints {
        self.tool.hints()
    }
    fn request_loadout(&self, tools: &super::ToolRegistry) -> Option<Arc<super::RequestLoadout>> {
        self.tool.request_loadout(tools)
    }
    fn policy(&self) -> super::ToolPolicy {
        self.tool.policy()
    }
    fn context_type(&self) -> Option<super::ContextType> {
        self.tool.context_type()
    }
}
