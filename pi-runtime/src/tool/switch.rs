//! `ConversationTools`: the tool set of the conversation a tool runs in, which the tool may
//! change: pi's activation, as `tool_search` does when it loads its matches. A running tool
//! gets it from its context ([`ToolContext::tools`]).

use std::fmt;
use std::sync::Arc;

use super::{RegistryError, ToolContext, ToolRegistry};

/// Reads and changes one conversation's registry; every change is one atomic step.
pub(crate) trait ToolSwitch: Send + Sync {
    /// The registry as it is now.
    fn registry(&self) -> Arc<ToolRegistry>;

    /// Apply `change` to a copy of the registry and make the copy current, or change
    /// nothing when `change` fails.
    fn change(
        &self,
        change: &mut dyn FnMut(&mut ToolRegistry) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError>;
}

/// The tools of the conversation a tool is running in (see
/// [`ToolContext::tools`](super::ToolContext::tools)). A change applies from the
/// conversation's next request on: the running turn keeps the tools it started with, and the
/// next request declares the difference to the model.
#[derive(Clone)]
pub struct ConversationTools {
    switch: Arc<dyn ToolSwitch>,
}

impl fmt::Debug for ConversationTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConversationTools")
            .field(&self.switch.registry())
            .finish()
    }
}

impl ConversationTools {
    pub(crate) fn new(switch: Arc<dyn ToolSwitch>) -> Self {
        ConversationTools { switch }
    }

    /// Every registered tool, with the active ones, as they are now.
    pub fn registry(&self) -> Arc<ToolRegistry> {
        self.switch.registry()
    }

    /// Activate these tools (see [`ToolRegistry::activate`]).
    ///
    /// # Errors
    /// A name that is not registered; nothing changes then.
    pub fn activate<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.switch.change(&mut |registry| registry.activate(names))
    }

    /// Deactivate these tools (see [`ToolRegistry::deactivate`]).
    ///
    /// # Errors
    /// A name that is not registered; nothing changes then.
    pub fn deactivate<S: AsRef<str>>(&self, names: &[S]) -> Result<(), RegistryError> {
        self.switch
            .change(&mut |registry| registry.deactivate(names))
    }
}

/// Here rather than with the rest of `ToolContext`: the context is what every tool's
/// `execute` takes, so its module cannot name the registry of tools (see `ToolCaller::tools`).
impl ToolContext {
    /// The tools of the conversation this call runs in, to activate or deactivate tools
    /// from the next request on (as `tool_search` loads its matches). `None` outside an
    /// agent's run: a context made with [`new`](Self::new), a call made by an MCP client or
    /// through [`Agent::run_tool_call`](crate::Agent::run_tool_call).
    pub fn tools(&self) -> Option<ConversationTools> {
        let tools = self.caller()?.tools()?;
        tools.downcast_ref::<ConversationTools>().cloned()
    }
}
