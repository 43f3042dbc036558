//! The tools of one turn. The driver builds the set once before each request; the request's
//! tool list, the system prompt's tool section and dispatch all read this one value, so a
//! tool the model was not offered cannot run, and a tool it was offered is never "not
//! found".

use std::sync::Arc;

use crate::tool::{Exposure, Registration, Tool, ToolRegistry};

/// A pinned view of the registry: the tools offered in one turn, in order.
#[derive(Debug, Clone)]
pub(crate) struct TurnTools {
    registry: Arc<ToolRegistry>,
    /// Registry indexes of the offered tools, in the order the model sees them.
    offered: Vec<usize>,
    /// `callable[i]`: registry entry `i` is offered (a constant-time lookup per call).
    callable: Vec<bool>,
    /// An offered tool reads the run's transcript.
    reads_transcript: bool,
}

impl TurnTools {
    /// The registry's active tools, in activation order.
    pub(crate) fn active(registry: Arc<ToolRegistry>) -> Self {
        let offered = registry.active_indexes().to_vec();
        TurnTools::from_indexes(registry, offered)
    }

    /// The registered tools among `tools`, in their order: what a `prepare_request` hook left
    /// in (or added to) the request. A listed tool that is not registered has nothing to run,
    /// so a call to it is "not found".
    pub(crate) fn named(registry: Arc<ToolRegistry>, tools: &[Tool]) -> Self {
        let mut offered = Vec::with_capacity(tools.len());
        for tool in tools {
            if let Some(index) = registry.index_of(&tool.name)
                && !offered.contains(&index)
            {
                offered.push(index);
            }
        }
        TurnTools::from_indexes(registry, offered)
    }

    fn from_indexes(registry: Arc<ToolRegistry>, offered: Vec<usize>) -> Self {
        let mut callable = vec![false; registry.len()];
        for &index in &offered {
            callable[index] = true;
        }
        let reads_transcript =
            (offered.iter()).any(|&index| registry.at(index).settings().reads_transcript);
        TurnTools {
            registry,
            offered,
            callable,
            reads_transcript,
        }
    }

    /// Whether an offered tool reads the run's transcript, so a batch must keep it.
    pub(crate) fn reads_transcript(&self) -> bool {
        self.reads_transcript
    }

    /// Every registered tool, offered or not.
    pub(crate) fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The offered tool with this exact name, with the settings it registered with.
    pub(crate) fn get(&self, name: &str) -> Option<&Registration> {
        let index = self.registry.index_of(name)?;
        self.callable[index].then(|| self.registry.at(index))
    }

    /// A tool a tool's own call may run: an offered tool, or a registered `codemode` or
    /// `deferred` one (pi's nested tools: scripts call them without their being declared).
    pub(crate) fn get_nested(&self, name: &str) -> Option<&Registration> {
        self.get(name).or_else(|| {
            let index = self.registry.index_of(name)?;
            let registration = self.registry.at(index);
            let nested = matches!(
                registration.settings().exposure,
                Exposure::Codemode | Exposure::Deferred
            );
            nested.then_some(registration)
        })
    }

    /// The offered tools with their settings, in order.
    pub(crate) fn offered(&self) -> impl Iterator<Item = &Registration> {
        self.offered.iter().map(|&index| self.registry.at(index))
    }

    /// What the request declares: each offered tool's definition, as the offered tools'
    /// loadouts change them
    /// ([`ToolDefinition::request_loadout`](crate::tool::ToolDefinition::request_loadout):
    /// new descriptions, left-out declarations).
    pub(crate) fn definitions(&self) -> Vec<Tool> {
        let mut loadouts = Vec::new();
        let mut definitions: Vec<Tool> = self
            .offered()
            .map(|registration| {
                let tool = registration.tool();
                let mut definition = tool.definition().clone();
                if let Some(loadout) = tool.request_loadout(&*self.registry) {
                    if let Some(description) = &loadout.description {
                        definition.description.clone_from(description);
                    }
                    loadouts.push(loadout);
                }
                definition
            })
            .collect();
        for loadout in &loadouts {
            for definition in &mut definitions {
                if let Some(description) = loadout.descriptions.get(&definition.name) {
                    definition.description.clone_from(description);
                }
            }
            definitions.retain(|definition| !loadout.hidden.contains(&definition.name));
        }
        definitions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{FnTool, ToolDefinition, ToolResult};
    use serde_json::json;

    fn registry(names: &[&str]) -> Arc<ToolRegistry> {
        let tools: Vec<Arc<dyn ToolDefinition>> = names
            .iter()
            .map(|name| {
                Arc::new(FnTool::new(
                    *name,
                    "A tool.",
                    json!({"type": "object"}),
                    |_, _| async { Ok(ToolResult::text("ok")) },
                )) as Arc<dyn ToolDefinition>
            })
            .collect();
        Arc::new(ToolRegistry::new(tools).unwrap())
    }

    #[test]
    fn a_request_narrowed_by_a_hook_narrows_dispatch() {
        let mut tools = ToolRegistry::clone(&registry(&["a", "b", "c"]));
        tools.set_active(&["a", "b"]).unwrap();
        let tools = Arc::new(tools);
        let turn = TurnTools::active(Arc::clone(&tools));
        assert!(turn.get("a").is_some() && turn.get("c").is_none());

        let listed = [
            Tool::new("c", "", json!({})),
            Tool::new("unregistered", "", json!({})),
            Tool::new("c", "", json!({})),
        ];
        let turn = TurnTools::named(tools, &listed);
        let names: Vec<_> = turn.definitions().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["c"]);
        assert!(turn.get("a").is_none() && turn.get("unregistered").is_none());
        assert!(turn.get("c").is_some());
    }
}
