//! What an agent is configured with, and the part of it shared with a running loop.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use super::hooks::Hooks;
use super::sink::Bus;
use crate::prompt;
use crate::stream::{LanguageModel, ThinkingLevel};
use crate::tool::{ExecutionMode, ToolDefinition, ToolRegistry};

/// An agent's configuration. Runs read a snapshot per turn, so changes made while a run is
/// in progress apply from its next model request.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) model: Arc<dyn LanguageModel>,
    pub(crate) system_prompt: String,
    pub(crate) tool_section: bool,
    pub(crate) prompt_guidelines: Vec<String>,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) execution: ExecutionMode,
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) thinking_level: ThinkingLevel,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) time_limit: Option<Duration>,
    /// Record content on the `tracing` spans.
    pub(crate) capture_content: bool,
}

impl Config {
    /// The system prompt a request carries: the user's prompt, a blank line, and the tool
    /// section built from the active tools (SPEC §8), unless that is switched off.
    pub(crate) fn system_prompt(&self) -> String {
        if !self.tool_section {
            return self.system_prompt.clone();
        }
        let active: Vec<Arc<dyn ToolDefinition>> = self.tools.active().cloned().collect();
        let section = prompt::tool_section(&active, &self.prompt_guidelines);
        match (self.system_prompt.is_empty(), section.is_empty()) {
            (_, true) => self.system_prompt.clone(),
            (true, false) => section,
            (false, false) => format!("{}\n\n{section}", self.system_prompt),
        }
    }
}

/// What an [`Agent`](super::Agent) handle and its running loop share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) bus: Bus,
    config: RwLock<Arc<Config>>,
}

impl Shared {
    pub(crate) fn new(config: Config) -> Self {
        Shared {
            bus: Bus::default(),
            config: RwLock::new(Arc::new(config)),
        }
    }

    pub(crate) fn config(&self) -> Arc<Config> {
        Arc::clone(&self.config.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn update_config(&self, change: impl FnOnce(&mut Config)) {
        let mut config = self.config.write().unwrap_or_else(PoisonError::into_inner);
        change(Arc::make_mut(&mut config));
    }
}
