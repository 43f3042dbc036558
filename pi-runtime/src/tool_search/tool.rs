//! The `tool_search` tool an agent registers: one call searches the conversation's
//! searchable tools and activates the matches for the next request.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;

use super::RegisteredTool;
use super::{LABEL, PROMPT_SNIPPET, ToolSearch, definition};
use crate::tool::{
    AgentTool, Exposure, Tool, ToolContext, ToolDefinition, ToolError, ToolRegistry, ToolResult,
    ToolSettings,
};

/// pi 1.6's `tool_search` as an agent tool. Register it next to deferred tools: the model
/// reads its description, searches, and the matches are declared from its next request on.
/// The index is built once per change of the registered tools (activation does not count).
///
/// ```
/// use pi_runtime::agent::Agent;
/// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
/// use pi_runtime::tool::{Exposure, FnTool, ToolSetExt};
/// use pi_runtime::tool_search::ToolSearchTool;
/// use pi_runtime::ToolResult;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let forecast = FnTool::new(
///     "get_forecast",
///     "Weather forecast for a city",
///     json!({"type": "object", "properties": {"city": {"type": "string"}}}),
///     |_, _| async { Ok(ToolResult::text("sunny")) },
/// );
/// let model = FauxModel::new()
///     .respond(FauxResponse::tool_call("c1", "tool_search", json!({"query": "weather"})))
///     .respond(FauxResponse::tool_call("c2", "get_forecast", json!({"city": "Oslo"})))
///     .respond(FauxResponse::text("Sunny in Oslo."));
/// let agent = Agent::builder()
///     .model(model)
///     .tools((ToolSearchTool::new(), forecast.with_exposure(Exposure::Deferred)))
///     .build()?;
/// let outcome = agent.prompt("Weather in Oslo?").await?;
/// assert_eq!(outcome[2].text_content(), "Loaded 1 tool. They are available from your next call:\n- get_forecast: Weather forecast for a city");
/// assert_eq!(outcome.last().unwrap().text_content(), "Sunny in Oslo.");
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct ToolSearchTool {
    /// The index of the last registrations searched, with their revision.
    index: Mutex<Option<(u64, Arc<ToolSearch>)>>,
}

impl ToolSearchTool {
    /// The tool, model-only (declared while active, never called from scripts).
    pub fn new() -> Self {
        ToolSearchTool::default()
    }

    /// The search over `registry`'s searchable tools, built when its registrations changed.
    fn search(&self, registry: &ToolRegistry) -> Arc<ToolSearch> {
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        match &*index {
            Some((revision, search)) if *revision == registry.revision() => Arc::clone(search),
            _ => {
                let search = Arc::new(ToolSearch::new(registry.registered().map(
                    |(tool, settings)| {
                        let definition = tool.definition();
                        RegisteredTool::new(
                            &definition.name,
                            &definition.description,
                            &definition.parameters,
                            settings.exposure,
                        )
                    },
                )));
                *index = Some((registry.revision(), Arc::clone(&search)));
                search
            }
        }
    }
}

static DEFINITION: std::sync::LazyLock<Tool> = std::sync::LazyLock::new(definition);

impl AgentTool for ToolSearchTool {
    fn definition(&self) -> &Tool {
        &DEFINITION
    }

    fn label(&self) -> &str {
        LABEL
    }

    fn execute(
        &self,
        _call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move {
            let tools = ctx.tools().ok_or_else(|| {
                ToolError::new("tool_search runs in an agent's conversation: there are no tools to search here")
            })?;
            let registry = tools.registry();
            let active: Vec<&str> = registry
                .active()
                .map(|tool| tool.definition().name.as_str())
                .collect();
            let output = self
                .search(&registry)
                .call(&params, &active)
                .map_err(|error| ToolError::new(error.to_string()))?;
            let loaded: Vec<&str> = output.loaded().collect();
            tools
                .activate(&loaded)
                .map_err(|error| ToolError::new(error.to_string()))?;
            Ok(output.into_tool_result())
        })
    }
}

impl ToolDefinition for ToolSearchTool {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(PROMPT_SNIPPET))
    }

    fn settings(&self) -> &ToolSettings {
        static SETTINGS: ToolSettings = ToolSettings::new().with_exposure(Exposure::ModelOnly);
        &SETTINGS
    }
}
