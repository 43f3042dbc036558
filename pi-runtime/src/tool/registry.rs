//! The tool registry: tools registered in one call, looked up by name, with an active
//! subset (SPEC §3.2 lookup, §8.1 activation order).

use std::collections::HashMap;
use std::sync::Arc;

use super::ToolDefinition;
use crate::args::SchemaError;

/// A registration failure, reported when the agent is built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("duplicate tool name \"{0}\": every tool needs its own name")]
    DuplicateName(String),
    /// A tool's parameter schema is unusable.
    #[error("tool \"{tool}\" has an invalid parameter schema: {error}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong with its schema.
        error: SchemaError,
    },
    /// `set_active` named a tool that is not registered.
    #[error("unknown tool \"{0}\"")]
    UnknownTool(String),
}

/// Anything that registers as one or more tools: a tool, an `Arc` of one, a tuple of tools
/// of different types, or a `Vec<Arc<dyn ToolDefinition>>`.
pub trait ToolSet {
    /// The tools, in order.
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>>;
}

impl<T: ToolDefinition> ToolSet for T {
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
        vec![Arc::new(self)]
    }
}

impl ToolSet for Vec<Arc<dyn ToolDefinition>> {
    fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
        self
    }
}

macro_rules! tuple_tool_set {
    ($($name:ident)+) => {
        impl<$($name: ToolSet),+> ToolSet for ($($name,)+) {
            #[allow(non_snake_case, reason = "the type parameters double as bindings")]
            fn into_tools(self) -> Vec<Arc<dyn ToolDefinition>> {
                let ($($name,)+) = self;
                let mut tools = Vec::new();
                $(tools.extend($name.into_tools());)+
                tools
            }
        }
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

/// Registered tools: lookup by name and the active subset, in activation order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn ToolDefinition>>,
    by_name: HashMap<String, usize>,
    active: Vec<usize>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names().collect::<Vec<_>>())
            .field(
                "active",
                &self
                    .active()
                    .map(|t| t.definition().name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ToolRegistry {
    /// Register tools; all of them start active, in the given order. Every schema is
    /// compiled here, so a bad schema is a start-up error, not a tool result.
    ///
    /// # Errors
    /// A duplicate name or a schema that does not compile.
    pub fn new(tools: impl ToolSet) -> Result<Self, RegistryError> {
        let mut registry = ToolRegistry::default();
        for tool in tools.into_tools() {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Register one more tool (active).
    ///
    /// # Errors
    /// A duplicate name or a schema that does not compile.
    pub fn register(&mut self, tool: Arc<dyn ToolDefinition>) -> Result<(), RegistryError> {
        let definition = tool.definition();
        if self.by_name.contains_key(&definition.name) {
            return Err(RegistryError::DuplicateName(definition.name.clone()));
        }
        if let Err(error) = definition.compiled_schema() {
            return Err(RegistryError::InvalidSchema {
                tool: definition.name.clone(),
                error: error.clone(),
            });
        }
        let index = self.tools.len();
        self.by_name.insert(definition.name.clone(), index);
        self.tools.push(tool);
        self.active.push(index);
        Ok(())
    }

    /// The active tool with this exact name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolDefinition>> {
        let index = *self.by_name.get(name)?;
        self.active.contains(&index).then(|| &self.tools[index])
    }

    /// Make exactly these tools active, in this order.
    ///
    /// # Errors
    /// A name that is not registered.
    pub fn set_active<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), RegistryError> {
        let mut active = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            let index = *self
                .by_name
                .get(name)
                .ok_or_else(|| RegistryError::UnknownTool(name.to_owned()))?;
            if !active.contains(&index) {
                active.push(index);
            }
        }
        self.active = active;
        Ok(())
    }

    /// The active tools, in activation order.
    pub fn active(&self) -> impl Iterator<Item = &Arc<dyn ToolDefinition>> {
        self.active.iter().map(|&i| &self.tools[i])
    }

    /// Every registered name, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.definition().name.as_str())
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// No tool registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
