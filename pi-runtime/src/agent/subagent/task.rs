//! What every sub-agent tool shares: its declaration, how a call's arguments become the
//! sub-agent's task, and what the sub-agent takes from the call that runs it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::__private::parameters_schema;
use crate::agent::dispatch::RunLink;
use crate::agent::handle::runs::Inherited;
use crate::agent::{Agent, Prompt};
use crate::args::deserialize_arguments;
use crate::tool::{Tool, ToolContext, ToolError};

/// Turns a call's arguments into the sub-agent's task.
type Render = Arc<dyn Fn(Value) -> Result<Prompt, ToolError> + Send + Sync>;

/// A sub-agent tool's declaration and how its calls' arguments become tasks.
#[derive(Clone)]
pub(super) struct Task {
    pub(super) declaration: Tool,
    pub(super) snippet: Option<String>,
    render: Render,
}

impl Task {
    /// The task as text, `{"task": "..."}`.
    pub(super) fn text(name: String, description: String) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task, with everything needed to do it: the agent does not see this conversation."
                }
            },
            "required": ["task"],
            "additionalProperties": false
        });
        let render: Render = Arc::new(|args: Value| match args.get("task") {
            Some(Value::String(task)) => Ok(Prompt::from(task.as_str())),
            _ => Err(ToolError::invalid_arguments("`task` must be a string")),
        });
        Task {
            declaration: Tool::new(name, description, parameters),
            snippet: None,
            render,
        }
    }

    /// The task as a `T`, which `task` turns into the prompt.
    pub(super) fn typed<T, F>(&mut self, task: F)
    where
        T: DeserializeOwned + JsonSchema,
        F: Fn(T) -> String + Send + Sync + 'static,
    {
        self.declaration.parameters = Arc::new(parameters_schema::<T>(true));
        let name = self.declaration.name.clone();
        self.render = Arc::new(move |args: Value| {
            let input = deserialize_arguments::<T>(&name, args)
                .map_err(|error| ToolError::invalid_arguments(error.message()))?;
            Ok(Prompt::from(task(input)))
        });
    }

    /// The task of a call with these arguments.
    pub(super) fn prompt(&self, args: Value) -> Result<Prompt, ToolError> {
        (self.render)(args)
    }

    pub(super) fn name(&self) -> &str {
        &self.declaration.name
    }

    /// Send `child`'s events to the run of the call `call_id`, if it has one.
    pub(super) fn forward_events(&self, child: &Agent, call_id: &str, ctx: &ToolContext) {
        if let Some(link) = RunLink::of(ctx).cloned() {
            let (call_id, agent) = (call_id.to_owned(), self.name().to_owned());
            child.on_event(move |event| link.forward(&call_id, &agent, event.clone()));
        }
    }
}

/// What a sub-agent's run takes from the call `ctx` runs: its signal (as a child), the time
/// left, its run context.
pub(super) fn inherited(ctx: &ToolContext) -> Inherited {
    Inherited {
        signal: ctx.signal().child_token(),
        deadline: ctx.deadline(),
        context: ctx.run_context().cloned(),
    }
}
