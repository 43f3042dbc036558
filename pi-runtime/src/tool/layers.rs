//! The execution layer (`AgentTool`) and the application layer (`ToolDefinition`), named
//! after pi's.

use std::borrow::Cow;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolResult, ToolSettings};

/// What one tool changes in the declarations of a request, given every registered tool
/// (see [`ToolDefinition::request_loadout`]): code mode's tool lists the tools its scripts can
/// call in its own description, and notes on other declared tools how scripts call them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestLoadout {
    /// The tool's own description in this request, instead of its definition's.
    pub description: Option<String>,
    /// New descriptions of other declared tools, by name.
    pub descriptions: indexmap::IndexMap<String, String>,
    /// Declared tools whose declarations the request leaves out (they stay callable).
    pub hidden: Vec<String>,
}

/// Whether a tool may run alongside others of its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ExecutionMode {
    /// Runs concurrently with the rest of the batch (the default).
    #[default]
    Parallel,
    /// Makes the whole batch run one call at a time, in source order.
    Sequential,
}

/// A tool the agent loop can run: a definition plus execution.
///
/// Object safe and `Send + Sync`: the loop stores tools as `Arc<dyn AgentTool>`. Most users
/// never implement it by hand; `#[tool]` does (see the crate docs), and [`FnTool`](super::FnTool)
/// builds one at run time from a schema and a closure.
pub trait AgentTool: Send + Sync + 'static {
    /// Name, description, parameter schema and constrained sampling.
    fn definition(&self) -> &Tool;

    /// A name for UIs; the tool name unless overridden.
    fn label(&self) -> &str {
        &self.definition().name
    }

    /// A shape shim (rename keys, wrap values; not a validator): raw model arguments in,
    /// arguments to validate out.
    /// Returning `Cow::Borrowed` (the default) means "unchanged" and costs no copy. The
    /// transcript always keeps the raw arguments.
    ///
    /// # Errors
    /// A failure becomes the call's error text.
    fn prepare_arguments<'a>(&self, raw: &'a Value) -> Result<Cow<'a, Value>, ToolError> {
        Ok(Cow::Borrowed(raw))
    }

    /// Parallel by default.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }

    /// Run the tool with validated, coerced arguments.
    ///
    /// A failure is reported by returning `Err` or a result with `is_error: true`.
    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>>;
}

/// The application layer: what the system prompt and UIs need on top of [`AgentTool`].
///
/// Every method has a default, so `impl ToolDefinition for MyTool {}` is enough for a tool
/// that has no snippet (it is then callable but not listed in the prompt).
pub trait ToolDefinition: AgentTool {
    /// One line for the system prompt's `Available tools:` list.
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        None
    }

    /// Bullets for the system prompt's `Guidelines:` section.
    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        Vec::new()
    }

    /// A one-line rendering of a call for UIs; `None` means "use the default".
    fn render_call(&self, _args: &Value) -> Option<String> {
        None
    }

    /// A rendering of a result for UIs; `None` means "use the default".
    fn render_result(&self, _result: &ToolResult) -> Option<String> {
        None
    }

    /// The JSON Schema of the tool's structured output, when it has one: `#[tool]` gives it to
    /// a fn returning `Json<T>` (or `Result<Json<T>, E>`) whose `T` is an object type with a
    /// `JsonSchema`. An MCP server lists it as the tool's `outputSchema`.
    fn output_schema(&self) -> Option<Value> {
        None
    }

    /// How the agent treats the tool, apart from what it does: exposure, approval, hints,
    /// execution policy, the run context it reads (the defaults unless overridden: a direct
    /// tool that never asks and has no limits). `#[tool(...)]` returns what its attribute
    /// says; see [`ToolSettings`]. A registered tool's settings are its registry entry's
    /// ([`ToolRegistry::settings`](super::ToolRegistry::settings)), which a registration may
    /// override.
    fn settings(&self) -> &ToolSettings {
        static DEFAULT: ToolSettings = ToolSettings::new();
        &DEFAULT
    }

    /// What the tool changes in a request's declarations while it is declared, given every
    /// registered tool (`tools`). `None`, the default, changes nothing. The agent asks before
    /// each request, so an implementation keeps what it computed until `tools` changes
    /// ([`RegisteredTools::revision`]).
    fn request_loadout(&self, _tools: &dyn RegisteredTools) -> Option<Arc<RequestLoadout>> {
        None
    }
}

/// Every registered tool, as [`ToolDefinition::request_loadout`] reads them. The registry,
/// [`ToolRegistry`](super::ToolRegistry), implements it. A trait because the registry holds
/// tools: the layer that defines a tool cannot depend on it.
pub trait RegisteredTools {
    /// Every registered tool with its registry entry's settings, in registration order.
    fn registered(
        &self,
    ) -> Box<dyn Iterator<Item = (&Arc<dyn ToolDefinition>, &ToolSettings)> + '_>;

    /// The active tools (declared to the model), in activation order.
    fn active(&self) -> Box<dyn Iterator<Item = &Arc<dyn ToolDefinition>> + '_>;

    /// Whether the registered tool with this name is active.
    fn is_active(&self, name: &str) -> bool;

    /// A number that changes whenever a tool is registered, replaced or removed (not when one
    /// is activated or deactivated): what is built from the registered tools is rebuilt only
    /// then.
    fn revision(&self) -> u64;
}

impl<T: AgentTool + ?Sized> AgentTool for Arc<T> {
    fn definition(&self) -> &Tool {
        (**self).definition()
    }
    fn label(&self) -> &str {
        (**self).label()
    }
    fn prepare_arguments<'a>(&self, raw: &'a Value) -> Result<Cow<'a, Value>, ToolError> {
        (**self).prepare_arguments(raw)
    }
    fn execution_mode(&self) -> ExecutionMode {
        (**self).execution_mode()
    }
    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        (**self).execute(call_id, params, ctx)
    }
}

impl<T: ToolDefinition + ?Sized> ToolDefinition for Arc<T> {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        (**self).prompt_snippet()
    }
    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        (**self).prompt_guidelines()
    }
    fn render_call(&self, args: &Value) -> Option<String> {
        (**self).render_call(args)
    }
    fn render_result(&self, result: &ToolResult) -> Option<String> {
        (**self).render_result(result)
    }
    fn output_schema(&self) -> Option<Value> {
        (**self).output_schema()
    }
    fn settings(&self) -> &ToolSettings {
        (**self).settings()
    }
    fn request_loadout(&self, tools: &dyn RegisteredTools) -> Option<Arc<RequestLoadout>> {
        (**self).request_loadout(tools)
    }
}
