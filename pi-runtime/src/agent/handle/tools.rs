//! The conversation's tools: changes from the next request on, the hooks and policies
//! other dispatchers share, and calls from outside the loop.

use std::sync::Arc;

use crate::agent::dispatch::{Dispatcher, ToolPolicies};
use crate::agent::hooks::Hooks;
use crate::message::ToolCall;
use crate::tool::{RegistryError, ToolDefinition, ToolRegistry, ToolResult, ToolSet, ToolSwitch};

use super::Agent;

impl Agent {
    /// The registered tools, with the active ones, as the next request will see them.
    pub fn tools(&self) -> Arc<ToolRegistry> {
        self.shared.registry()
    }

    /// Make exactly these registered tools active, in this order (from the next request on).
    ///
    /// # Errors
    /// A name that is not registered.
    pub fn set_active_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.set_active(names))
    }

    /// Activate these registered tools, after the active ones, from the next request on; the
    /// request declares them to the model (a system message in the transcript records it).
    ///
    /// # Errors
    /// A name that is not registered; then nothing changes.
    pub fn activate_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.activate(names))
    }

    /// Deactivate these tools from the next request on: still registered, no longer declared.
    ///
    /// # Errors
    /// A name that is not registered; then nothing changes.
    pub fn deactivate_tools<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.shared.change(&mut |tools| tools.deactivate(names))
    }

    /// Register more tools from the next request on (a running turn keeps the tools it
    /// started with). Direct and model-only tools are active at once; deferred ones wait
    /// for activation (see [`Exposure`](crate::tool::Exposure)).
    ///
    /// # Errors
    /// A name already registered, or a schema that does not compile; then nothing changes.
    pub fn register_tools(&self, tools: impl ToolSet) -> Result<(), RegistryError> {
        let mut tools = Some(tools.into_registrations());
        self.shared
            .change(&mut |registry| registry.register_all(tools.take().unwrap_or_default()))
    }

    /// Put `tool` in the place of the registered tool of the same name (or register it),
    /// from the next request on; an active tool stays active and the request declares its
    /// new definition.
    ///
    /// # Errors
    /// A schema that does not compile; then nothing changes.
    pub fn replace_tool(&self, tool: impl ToolDefinition) -> Result<(), RegistryError> {
        let tool: Arc<dyn ToolDefinition> = Arc::new(tool);
        self.shared
            .change(&mut |registry| registry.replace(Arc::clone(&tool)))
    }

    /// Unregister the tool named `name` from the next request on; `false` if there is none.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.shared
            .change(&mut |registry| match registry.remove(name) {
                Some(_) => Ok(()),
                None => Err(RegistryError::UnknownTool(name.to_owned())),
            })
            .is_ok()
    }

    /// The conversation's tool set, for a source of tools that follows its own changes (an
    /// MCP server's list); it does not keep the conversation alive.
    #[cfg(feature = "mcp")]
    pub(crate) fn tool_switch(&self) -> std::sync::Weak<dyn ToolSwitch> {
        Arc::downgrade(&self.shared) as std::sync::Weak<dyn ToolSwitch>
    }

    /// The agent's hooks, to give to another dispatcher of its tools, such as an
    /// [`McpServer`](crate::mcp::McpServer) (`with_hooks`).
    pub fn hooks(&self) -> Hooks {
        Hooks::clone(&self.shared.config().hooks)
    }

    /// The agent's tool execution policies, to give to another dispatcher of its tools, such
    /// as an [`McpServer`](crate::mcp::McpServer) (`with_tool_policies`): the defaults, the
    /// named concurrency limits (shared with this agent) and the output saver.
    pub fn tool_policies(&self) -> ToolPolicies {
        ToolPolicies {
            inner: Arc::clone(&self.shared.config().policies),
        }
    }

    /// Run one call outside the loop with the agent's tools and hooks, like pi's
    /// `runToolCall`: the same prepare → execute → finalize path, under the running run's
    /// signal and time limit, and with the tools its current turn offers, if there is one; no events, no messages, never failing. Tools
    /// that call other tools use it so that hooks (permissions) apply. While a run goes on, a
    /// failure counts toward the tool's retry budget for that run.
    pub async fn run_tool_call(&self, call: ToolCall) -> ToolResult {
        let config = self.shared.config();
        // During a run, the call finds the tools the run's current turn offers.
        let (limits, messages, tools) = {
            let state = self.shared.conversation();
            let limits = state.slot.current().cloned().unwrap_or_default();
            let tools =
                (state.slot.turn_tools().cloned()).unwrap_or_else(|| Arc::clone(&config.tools));
            (limits, state.view.messages.clone(), tools)
        };
        let dispatcher = Dispatcher::new(
            tools,
            Arc::clone(&config.hooks),
            Arc::clone(&config.policies),
            config.execution,
            Arc::new(limits),
            config.capture_content,
        );
        let messages = dispatcher.hook_transcript(&messages);
        dispatcher
            .call(&call, messages, |_| std::future::ready(()))
            .await
    }
}
