//! A sub-agent whose answer is a typed value: each call runs an [`Extractor`] (see
//! [`extract`](crate::agent::extract)), and the accepted value is the call's result.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::task::{Task, inherited};
use crate::agent::BuildError;
use crate::agent::extract::Extractor;
use crate::tool::{
    AgentTool, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSettings,
};

/// Makes a fresh extractor for each call.
type Make<T> = Arc<dyn Fn() -> Result<Extractor<T>, BuildError> + Send + Sync>;

/// A tool whose calls each run an extraction of `T` as a sub-agent: the accepted value is
/// the result, as JSON text and as the result's structured content. It inherits what a
/// [`SubAgent`](super::SubAgent) inherits, and its events reach the parent's listeners
/// the same way. Each call makes its own [`Extractor`] with `make`, so calls run side by
/// side.
///
/// ```
/// use pi_runtime::agent::Agent;
/// use pi_runtime::agent::subagent::Extraction;
/// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
/// use pi_runtime::tool_args;
/// use serde_json::json;
///
/// /// A city and its country.
/// #[tool_args]
/// #[derive(serde::Serialize)]
/// struct Place {
///     city: String,
///     country: String,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let locate = Extraction::new("locate", "Find where a landmark is.", || {
///     let model = FauxModel::new()
///         .respond(FauxResponse::tool_call("s1", "submit_result", json!({"city": "Paris", "country": "France"})));
///     Agent::builder().model(model).extract::<Place>().build()
/// });
/// let lead = Agent::builder()
///     .model(
///         FauxModel::new()
///             .respond(FauxResponse::tool_call("c1", "locate", json!({"task": "The Eiffel Tower"})))
///             .respond(FauxResponse::text("It is in Paris.")),
///     )
///     .tools(locate)
///     .build()?;
/// let run = lead.prompt("Where is the Eiffel Tower?").await?;
/// let result = run[2].as_tool_result().unwrap();
/// assert_eq!(result.text(), r#"{"city":"Paris","country":"France"}"#);
/// # Ok(()) }
/// ```
pub struct Extraction<T> {
    make: Make<T>,
    task: Task,
}

impl<T> Clone for Extraction<T> {
    fn clone(&self) -> Self {
        Extraction {
            make: Arc::clone(&self.make),
            task: self.task.clone(),
        }
    }
}

impl<T> fmt::Debug for Extraction<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extraction")
            .field("declaration", &self.task.declaration)
            .finish_non_exhaustive()
    }
}

impl<T: Serialize + Send + Sync + 'static> Extraction<T> {
    /// A tool named `name`, described by `description`, whose calls each run an extractor
    /// `make` builds on the task the model gives (`{"task": "..."}`).
    pub fn new<F>(name: impl Into<String>, description: impl Into<String>, make: F) -> Self
    where
        F: Fn() -> Result<Extractor<T>, BuildError> + Send + Sync + 'static,
    {
        Extraction {
            make: Arc::new(make),
            task: Task::text(name.into(), description.into()),
        }
    }

    /// Take a typed input instead of the task as text (see
    /// [`SubAgent::input`](super::SubAgent::input)).
    #[must_use]
    pub fn input<I, F>(mut self, task: F) -> Self
    where
        I: DeserializeOwned + JsonSchema,
        F: Fn(I) -> String + Send + Sync + 'static,
    {
        self.task.typed(task);
        self
    }

    async fn run(
        &self,
        call_id: &str,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let name = self.task.name();
        let task = self.task.prompt(params)?;
        let extractor = (self.make)().map_err(|error| {
            ToolError::new(format!("The {name} agent cannot be built: {error}"))
        })?;
        self.task.forward_events(extractor.agent(), call_id, ctx);
        let extracted = match extractor.extract_under(task, inherited(ctx)).await {
            Ok(extracted) => extracted,
            Err(error) => {
                return Ok(ToolResult::error(format!(
                    "The {name} agent gave no result: {error}"
                )));
            }
        };
        let value = serde_json::to_value(&extracted.value).map_err(|error| {
            ToolError::new(format!(
                "The {name} agent's result cannot be written: {error}"
            ))
        })?;
        Ok(ToolResult::text(value.to_string())
            .with_structured_content(value)
            .with_usage(extracted.usage))
    }
}

impl<T: Serialize + Send + Sync + 'static> AgentTool for Extraction<T> {
    fn definition(&self) -> &Tool {
        &self.task.declaration
    }

    fn execute(
        &self,
        call_id: String,
        params: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(async move { self.run(&call_id, params, &ctx).await })
    }
}

impl<T: Serialize + Send + Sync + 'static> ToolDefinition for Extraction<T> {
    fn settings(&self) -> &ToolSettings {
        // Its events reach the run that calls it; its runs are no journal's steps.
        static LINKED: ToolSettings = ToolSettings::new().linked_to_run();
        &LINKED
    }
}
