//! The tool registry: tools registered in one call, looked up by name, with an active
//! subset in activation order (the order the system prompt lists tools in). Each entry
//! keeps the settings its tool registered with; their [`Exposure`] decides whether the tool
//! is active from registration on.

use std::sync::Arc;

use super::{Exposure, RegisteredTools, Registration, ToolDefinition, ToolSet, ToolSettings};
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

/// One registered tool and what the registry knows about it.
#[derive(Clone)]
struct Entry {
    /// The tool with the settings it registered with: the ones every reader goes by.
    registration: Registration,
    /// Offered to the model (and callable) while the tool is active.
    active: bool,
}

impl Entry {
    fn tool(&self) -> &Arc<dyn ToolDefinition> {
        self.registration.tool()
    }

    fn exposure(&self) -> Exposure {
        self.registration.settings().exposure
    }
}

/// Registered tools: lookup by name in constant time, and the active subset in activation
/// order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
    /// Looked up on every call: foldhash, not std's SipHash (the keys are the application's).
    by_name: foldhash::HashMap<String, usize>,
    /// Indexes of the active entries, in activation order.
    active: Vec<usize>,
    /// Which registrations this is: a new number whenever a tool is registered, replaced or
    /// removed (not when one is activated), so whatever is built from the registered tools
    /// (the `tool_search` index, code mode's loadout) is rebuilt only then.
    revision: u64,
}

/// A number no registry had before.
fn next_revision() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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
    /// Register tools; those whose [`Exposure`] is direct or model-only start active, in the
    /// given order. Every schema is compiled here, so a bad schema is a start-up error, not a
    /// tool result.
    ///
    /// # Errors
    /// A duplicate name or a schema that does not compile.
    pub fn new(tools: impl ToolSet) -> Result<Self, RegistryError> {
        let mut registry = ToolRegistry::default();
        registry.register_all(tools)?;
        Ok(registry)
    }

    /// Register more tools, all or none: on an error the registry is unchanged. Direct and
    /// model-only tools are active at once, appended to the active ones.
    ///
    /// # Errors
    /// A duplicate name or a schema that does not compile.
    pub fn register_all(&mut self, tools: impl ToolSet) -> Result<(), RegistryError> {
        let registrations = tools.into_registrations();
        let mut names = std::collections::HashSet::with_capacity(registrations.len());
        for registration in &registrations {
            let definition = registration.tool().definition();
            if self.by_name.contains_key(&definition.name) || !names.insert(&definition.name) {
                return Err(RegistryError::DuplicateName(definition.name.clone()));
            }
            if let Err(error) = definition.compiled_schema() {
                return Err(RegistryError::InvalidSchema {
                    tool: definition.name.clone(),
                    error: error.clone(),
                });
            }
        }
        for registration in registrations {
            let index = self.entries.len();
            let active = registration.settings().exposure.is_active_when_registered();
            let name = registration.tool().definition().name.clone();
            self.by_name.insert(name, index);
            self.entries.push(Entry {
                registration,
                active,
            });
            if active {
                self.active.push(index);
            }
        }
        self.revision = next_revision();
        Ok(())
    }

    /// Put `tool` (with the settings it registers with) in the place of the registered tool
    /// of the same name, or register it when there is none. A replaced tool stays active if
    /// it was and its new exposure can be declared; the next request declares the new
    /// definition.
    ///
    /// # Errors
    /// A schema that does not compile.
    pub fn replace(&mut self, tool: impl Into<Registration>) -> Result<(), RegistryError> {
        let registration = tool.into();
        let definition = registration.tool().definition();
        let Some(index) = self.index_of(&definition.name) else {
            return self.register(registration);
        };
        if let Err(error) = definition.compiled_schema() {
            return Err(RegistryError::InvalidSchema {
                tool: definition.name.clone(),
                error: error.clone(),
            });
        }
        self.revision = next_revision();
        let entry = &mut self.entries[index];
        entry.registration = registration;
        if entry.active && !entry.exposure().can_be_declared() {
            entry.active = false;
            self.active.retain(|&i| i != index);
        }
        Ok(())
    }

    /// Make these tools active too, appended in this order after the active ones (a tool
    /// that is active keeps its place). A hidden tool stays inactive.
    ///
    /// # Errors
    /// A name that is not registered; nothing changes then.
    pub fn activate<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), RegistryError> {
        let indexes = self.indexes_of(names)?;
        for index in indexes {
            let entry = &mut self.entries[index];
            if !entry.active && entry.exposure().can_be_declared() {
                entry.active = true;
                self.active.push(index);
            }
        }
        Ok(())
    }

    /// Make these tools inactive: no longer declared to the model, still registered.
    ///
    /// # Errors
    /// A name that is not registered; nothing changes then.
    pub fn deactivate<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), RegistryError> {
        let indexes = self.indexes_of(names)?;
        for &index in &indexes {
            self.entries[index].active = false;
        }
        self.active.retain(|index| !indexes.contains(index));
        Ok(())
    }

    fn indexes_of<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<usize>, RegistryError> {
        names
            .iter()
            .map(|name| {
                let name = name.as_ref();
                self.index_of(name)
                    .ok_or_else(|| RegistryError::UnknownTool(name.to_owned()))
            })
            .collect()
    }

    /// The exposure the registered tool with this name registered with.
    pub fn exposure(&self, name: &str) -> Option<Exposure> {
        self.settings(name).map(|settings| settings.exposure)
    }

    /// The settings the registered tool with this name registered with: its own
    /// ([`ToolDefinition::settings`]) with what its registration overrides
    /// ([`Registration`]). What the agent goes by.
    pub fn settings(&self, name: &str) -> Option<&ToolSettings> {
        self.index_of(name)
            .map(|index| self.entries[index].registration.settings())
    }

    /// Whether the registered tool with this name is active.
    pub fn is_active(&self, name: &str) -> bool {
        self.index_of(name)
            .is_some_and(|index| self.entries[index].active)
    }

    /// The tools `tool_search` looks at: registered, [searchable](Exposure::is_searchable)
    /// and not active, in registration order.
    pub fn searchable(&self) -> impl Iterator<Item = &Arc<dyn ToolDefinition>> {
        self.entries
            .iter()
            .filter(|entry| entry.exposure().is_searchable() && !entry.active)
            .map(Entry::tool)
    }

    /// A number that changes whenever a tool is registered, replaced or removed, and only
    /// then (not when one is activated or deactivated).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Every registered tool with the settings it registered with, in registration order.
    pub fn registered(&self) -> impl Iterator<Item = (&Arc<dyn ToolDefinition>, &ToolSettings)> {
        self.entries.iter().map(|entry| {
            let registration = &entry.registration;
            (registration.tool(), registration.settings())
        })
    }

    /// Register one more tool (active if its exposure says so).
    ///
    /// # Errors
    /// A duplicate name or a schema that does not compile.
    pub fn register(&mut self, tool: impl Into<Registration>) -> Result<(), RegistryError> {
        self.register_all(tool.into())
    }

    /// Unregister the tool with this name; `None` if there is none.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn ToolDefinition>> {
        let index = self.by_name.remove(name)?;
        self.revision = next_revision();
        let removed = self.entries.remove(index);
        self.active.retain(|&i| i != index);
        // Every later entry moved down by one.
        for i in self.by_name.values_mut().chain(self.active.iter_mut()) {
            if *i > index {
                *i -= 1;
            }
        }
        Some(removed.registration.into_tool())
    }

    /// The active tool with this exact name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolDefinition>> {
        let entry = &self.entries[*self.by_name.get(name)?];
        entry.active.then(|| entry.tool())
    }

    /// The registered tool with this exact name, active or not.
    pub fn get_registered(&self, name: &str) -> Option<&Arc<dyn ToolDefinition>> {
        self.index_of(name).map(|index| self.entries[index].tool())
    }

    /// Where the tool with this name is registered.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The tool registered at `index` (see [`index_of`](Self::index_of)), with its settings.
    pub(crate) fn at(&self, index: usize) -> &Registration {
        &self.entries[index].registration
    }

    /// Indexes of the active tools, in activation order.
    pub(crate) fn active_indexes(&self) -> &[usize] {
        &self.active
    }

    /// Make exactly these tools active, in this order (hidden tools stay inactive).
    ///
    /// # Errors
    /// A name that is not registered.
    pub fn set_active<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), RegistryError> {
        let mut active = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            let index = self
                .index_of(name)
                .ok_or_else(|| RegistryError::UnknownTool(name.to_owned()))?;
            if !active.contains(&index) {
                active.push(index);
            }
        }
        for entry in &mut self.entries {
            entry.active = false;
        }
        active.retain(|&index| self.entries[index].exposure().can_be_declared());
        for &index in &active {
            self.entries[index].active = true;
        }
        self.active = active;
        Ok(())
    }

    /// The active tools, in activation order.
    pub fn active(&self) -> impl Iterator<Item = &Arc<dyn ToolDefinition>> {
        self.active.iter().map(|&i| self.entries[i].tool())
    }

    /// Every registered name, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .map(|entry| entry.tool().definition().name.as_str())
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No tool registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl RegisteredTools for ToolRegistry {
    fn registered(
        &self,
    ) -> Box<dyn Iterator<Item = (&Arc<dyn ToolDefinition>, &ToolSettings)> + '_> {
        Box::new(ToolRegistry::registered(self))
    }

    fn active(&self) -> Box<dyn Iterator<Item = &Arc<dyn ToolDefinition>> + '_> {
        Box::new(ToolRegistry::active(self))
    }

    fn is_active(&self, name: &str) -> bool {
        ToolRegistry::is_active(self, name)
    }

    fn revision(&self) -> u64 {
        ToolRegistry::revision(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{FnTool, ToolResult, ToolSetExt};
    use serde_json::json;

    fn tool(name: &str) -> Arc<dyn ToolDefinition> {
        Arc::new(FnTool::new(
            name,
            "A tool.",
            json!({"type": "object"}),
            |_, _| async { Ok(ToolResult::text("ok")) },
        ))
    }

    fn active(registry: &ToolRegistry) -> Vec<String> {
        registry
            .active()
            .map(|t| t.definition().name.clone())
            .collect()
    }

    #[test]
    fn registration_is_all_or_nothing() {
        let mut registry = ToolRegistry::new(vec![tool("a")]).unwrap();
        let error = registry
            .register_all(vec![tool("b"), tool("a")])
            .unwrap_err();
        assert_eq!(error, RegistryError::DuplicateName("a".into()));
        let error = registry
            .register_all(vec![tool("c"), tool("c")])
            .unwrap_err();
        assert_eq!(error, RegistryError::DuplicateName("c".into()));
        assert_eq!(registry.names().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn a_registration_overrides_the_settings_of_its_entry_only() {
        let mut registry = ToolRegistry::new(tool("a").with_exposure(Exposure::Deferred)).unwrap();
        assert_eq!(registry.exposure("a"), Some(Exposure::Deferred));
        assert!(
            active(&registry).is_empty(),
            "deferred: registered, not active"
        );
        let own = registry.get_registered("a").unwrap().settings().exposure;
        assert_eq!(own, Exposure::Direct, "the tool itself is unchanged");
        registry.replace(tool("a")).unwrap();
        assert_eq!(registry.exposure("a"), Some(Exposure::Direct));
    }

    #[test]
    fn removal_keeps_lookups_and_activation_order() {
        let mut registry = ToolRegistry::new(vec![tool("a"), tool("b"), tool("c")]).unwrap();
        registry.set_active(&["c", "a"]).unwrap();
        assert!(registry.remove("a").is_some());
        assert!(registry.remove("a").is_none());
        assert_eq!(active(&registry), ["c"]);
        assert!(registry.get("b").is_none(), "inactive");
        assert!(registry.get_registered("b").is_some());
        assert_eq!(registry.get("c").unwrap().definition().name, "c");
        registry.register(tool("a")).unwrap();
        assert_eq!(active(&registry), ["c", "a"]);
        assert_eq!(registry.names().collect::<Vec<_>>(), ["b", "c", "a"]);
    }
}
