//! What registers as tools: a [`ToolSet`] yields [`Registration`]s, each a tool with the
//! settings its registry entry gets, which a set may override
//! ([`ToolSetExt::with_exposure`]); [`ContextTools`] are the sets whose context type the
//! compiler knows.

use std::fmt;
use std::sync::Arc;

use super::{Exposure, ToolDefinition, ToolSettings};

/// A tool as a registry takes it: the tool, and the settings of its registry entry, the
/// tool's own ([`ToolDefinition::settings`]) unless the registration overrides them. The
/// registry reads an entry's settings, never the tool's, so an override holds for everything
/// the agent does with the tool, and the tool itself stays as it is.
///
/// ```
/// use std::sync::Arc;
///
/// use pi_runtime::tool::{Exposure, FnTool, Registration, ToolDefinition, ToolResult};
/// use serde_json::json;
///
/// let ping = FnTool::new("ping", "Ping.", json!({"type": "object"}), |_, _| async {
///     Ok(ToolResult::text("pong"))
/// });
/// let registration = Registration::new(Arc::new(ping)).with_exposure(Exposure::Deferred);
/// assert_eq!(registration.settings().exposure, Exposure::Deferred);
/// assert_eq!(registration.tool().settings().exposure, Exposure::Direct);
/// ```
#[derive(Clone)]
pub struct Registration {
    tool: Arc<dyn ToolDefinition>,
    settings: ToolSettings,
}

impl Registration {
    /// `tool` with its own settings.
    pub fn new(tool: Arc<dyn ToolDefinition>) -> Self {
        let settings = tool.settings().clone();
        Registration { tool, settings }
    }

    /// Register the tool with `exposure`, whatever the tool says itself.
    #[must_use]
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.settings.exposure = exposure;
        self
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<dyn ToolDefinition> {
        &self.tool
    }

    /// The settings its registry entry gets.
    pub fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    /// The tool, without its registration.
    pub fn into_tool(self) -> Arc<dyn ToolDefinition> {
        self.tool
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("tool", &self.tool.definition().name)
            .field("settings", &self.settings)
            .finish()
    }
}

impl From<Arc<dyn ToolDefinition>> for Registration {
    fn from(tool: Arc<dyn ToolDefinition>) -> Self {
        Registration::new(tool)
    }
}

impl<T: ToolDefinition> From<Arc<T>> for Registration {
    fn from(tool: Arc<T>) -> Self {
        Registration::new(tool)
    }
}

/// Anything that registers as one or more tools: a tool, an `Arc` of one, a tuple of tools
/// of different types, a `Vec<Arc<dyn ToolDefinition>>`, or registrations.
pub trait ToolSet {
    /// The tools with the settings they register with, in order.
    fn into_registrations(self) -> Vec<Registration>;
}

impl<T: ToolDefinition> ToolSet for T {
    fn into_registrations(self) -> Vec<Registration> {
        vec![Registration::new(Arc::new(self))]
    }
}

impl ToolSet for Vec<Arc<dyn ToolDefinition>> {
    fn into_registrations(self) -> Vec<Registration> {
        self.into_iter().map(Registration::new).collect()
    }
}

impl ToolSet for Registration {
    fn into_registrations(self) -> Vec<Registration> {
        vec![self]
    }
}

impl ToolSet for Vec<Registration> {
    fn into_registrations(self) -> Vec<Registration> {
        self
    }
}

/// A tuple of tool sets is a tool set, and a tuple of [`ContextTools`] is one too.
macro_rules! tuple_tool_set {
    ($($name:ident)+) => {
        impl<$($name: ToolSet),+> ToolSet for ($($name,)+) {
            #[allow(non_snake_case, reason = "the type parameters double as bindings")]
            fn into_registrations(self) -> Vec<Registration> {
                let ($($name,)+) = self;
                let mut tools = Vec::new();
                $(tools.extend($name.into_registrations());)+
                tools
            }
        }

        impl<T, $($name: ContextTools<T>),+> ContextTools<T> for ($($name,)+) {}
    };
}

tuple_tool_set!(A);
tuple_tool_set!(A B);
tuple_tool_set!(A B C);
tuple_tool_set!(A B C D);
tuple_tool_set!(A B C D E);
tuple_tool_set!(A B C D E F);
tuple_tool_set!(A B C D E F G);
tuple_tool_set!(A B C D E F G H);
tuple_tool_set!(A B C D E F G H I);
tuple_tool_set!(A B C D E F G H I J);
tuple_tool_set!(A B C D E F G H I J K);
tuple_tool_set!(A B C D E F G H I J K L);

/// A [`ToolSet`] whose every tool registers with one exposure, whatever the tools say
/// themselves: `tools.with_exposure(Exposure::Deferred)` keeps a whole MCP server's tools out
/// of the prompt until `tool_search` loads them. The exposure is the registrations'
/// ([`Registration::with_exposure`]); the tools stay as they are.
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
/// assert_eq!(registry.exposure("ping"), Some(Exposure::Deferred));
/// ```
#[derive(Debug)]
pub struct Exposed<S> {
    tools: S,
    exposure: Exposure,
}

/// Adds [`with_exposure`](ToolSetExt::with_exposure) to every [`ToolSet`].
pub trait ToolSetExt: ToolSet + Sized {
    /// These tools, each registered with `exposure`.
    fn with_exposure(self, exposure: Exposure) -> Exposed<Self> {
        Exposed {
            tools: self,
            exposure,
        }
    }
}

impl<S: ToolSet> ToolSetExt for S {}

impl<S: ToolSet> ToolSet for Exposed<S> {
    fn into_registrations(self) -> Vec<Registration> {
        let exposure = self.exposure;
        self.tools
            .into_registrations()
            .into_iter()
            .map(|registration| registration.with_exposure(exposure))
            .collect()
    }
}

/// Tools whose context type the compiler knows, checked against the runs' context type `T`:
/// what [`AgentBuilder::context_tools`](crate::agent::AgentBuilder::context_tools) takes. A
/// `#[tool]` type whose `Ctx<..>` parameter reads `T`, or that reads no context (the
/// built-in tools among them), an `Arc` of one, or a tuple of such. `#[tool]` implements it
/// with the tool's own context type as the bound, so a tool whose `Ctx<U>` reads another
/// type does not compile, and the error names both.
///
/// The bound comes from a parameter spelled `Ctx<U>`, whose `U` the macro can name. Other
/// extractors ([`FromToolContext`](super::FromToolContext): yours, an alias of `Ctx<U>`)
/// declare their context type at run time, so a tool with one implements this trait for
/// every `T`, and `build()` checks it ([`ToolSettings::context_type`]).
///
/// Not for other tools: an [`FnTool`](super::FnTool), an MCP server's tools or a
/// `Vec<Arc<dyn ToolDefinition>>` register with
/// [`AgentBuilder::tools`](crate::agent::AgentBuilder::tools), and `build()` checks their
/// context types ([`ToolSettings::context_type`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `#[tool]` type, so its context type is not known at compile time",
    label = "not a `#[tool]` type, an `Arc` of one or a tuple of them",
    note = "register it with `.tools(..)`: `build()` then checks its context type against `{T}`"
)]
pub trait ContextTools<T>: ToolSet {}

impl<T, X: ContextTools<T> + ToolDefinition> ContextTools<T> for Arc<X> {}
