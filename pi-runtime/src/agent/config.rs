//! What an agent is configured with, and the part of it shared with a running loop.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use super::AgentEvent;
use super::approval::PauseLedger;
use super::dispatch::Policies;
use super::error::AgentError;
use super::guardrail::Guardrails;
use super::hooks::Hooks;
use super::sink::{Bus, lock};
use super::state::{Conversation, QueueMode};
use super::turn_tools::TurnTools;
use crate::message::Message;
use crate::prompt::{self, ToolSectionStyle};
use crate::stream::{LanguageModel, ThinkingLevel, ToolChoice};
use crate::tool::{
    ExecutionMode, RegistryError, RunContext, ToolDefinition, ToolRegistry, ToolSwitch,
};

/// What an agent is shown of the transcript, given all of it.
#[derive(Clone)]
pub(crate) struct HistoryFilter(Arc<Shown>);

/// The filter's function.
type Shown = dyn Fn(&[Message]) -> Vec<Message> + Send + Sync;

impl HistoryFilter {
    pub(crate) fn new(filter: impl Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static) -> Self {
        HistoryFilter(Arc::new(filter))
    }

    /// What the agent is shown of `transcript`.
    pub(crate) fn shown(&self, transcript: &[Message]) -> Vec<Message> {
        (self.0)(transcript)
    }
}

impl fmt::Debug for HistoryFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HistoryFilter")
    }
}

/// An agent's configuration. Runs read a snapshot per turn, so changes made while a run is
/// in progress apply from its next model request.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) model: Arc<dyn LanguageModel>,
    pub(crate) system_prompt: String,
    pub(crate) tool_section: ToolSectionStyle,
    pub(crate) prompt_guidelines: Vec<String>,
    /// The registered tools and the active ones, as a turn offers them unless a hook
    /// changes its request: built when the tools change, shared by every turn.
    pub(crate) tools: Arc<TurnTools>,
    pub(crate) execution: ExecutionMode,
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) thinking_level: ThinkingLevel,
    pub(crate) max_tokens: Option<u32>,
    /// What each request's plan starts with for the provider's tool-call knobs.
    pub(crate) tool_choice: Option<ToolChoice>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) time_limit: Option<Duration>,
    /// The most model requests one run may make.
    pub(crate) max_turns: Option<usize>,
    /// Record content on the `tracing` spans.
    pub(crate) capture_content: bool,
    /// The tools' execution policies: the agent's defaults, the named concurrency limits
    /// (shared by every conversation of the definition), where cut output is saved.
    pub(crate) policies: Arc<Policies>,
    /// Where resumes claim their pause, so that each pause resumes once.
    pub(crate) ledger: Arc<dyn PauseLedger>,
    /// The checks of the run's input and answers.
    pub(crate) guardrails: Arc<Guardrails>,
    /// The agent's name, which a run's outcome gives for the agent that answered.
    pub(crate) name: Option<String>,
    /// What each request shows of the transcript, when a handoff says.
    pub(crate) history: Option<HistoryFilter>,
}

impl Config {
    /// Use `registry` from the next turn on.
    pub(crate) fn set_tools(&mut self, registry: ToolRegistry) {
        self.tools = Arc::new(TurnTools::active(Arc::new(registry)));
    }

    /// The system prompt a request carries: the user's prompt, a blank line, and the tool
    /// section built from the turn's tools, unless that is switched off.
    pub(crate) fn system_prompt(&self, tools: &TurnTools) -> String {
        if self.tool_section == ToolSectionStyle::None {
            return self.system_prompt.clone();
        }
        let offered: Vec<Arc<dyn ToolDefinition>> = tools
            .offered()
            .map(|offered| Arc::clone(offered.tool()))
            .collect();
        let section = prompt::tool_section_in(self.tool_section, &offered, &self.prompt_guidelines);
        match (self.system_prompt.is_empty(), section.is_empty()) {
            (_, true) => self.system_prompt.clone(),
            (true, false) => section,
            (false, false) => format!("{}\n\n{section}", self.system_prompt),
        }
    }
}

/// How a new conversation starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Opening {
    pub(crate) messages: Vec<Message>,
    pub(crate) steering_mode: QueueMode,
    pub(crate) follow_up_mode: QueueMode,
}

/// An agent's definition: its model, tools, hooks and settings, shared by any number of
/// conversations. Cheap to clone, `Send + Sync`; a server keeps one and starts a
/// conversation per request with [`conversation`](Self::conversation).
///
/// ```
/// use pi_runtime::agent::Agent;
/// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = FauxModel::new()
///     .respond(FauxResponse::text("Hello, Ada."))
///     .respond(FauxResponse::text("Hello, Bob."));
/// let definition = Agent::builder().model(model).build_definition()?;
/// let (ada, bob) = (definition.conversation(), definition.conversation());
/// ada.prompt("I am Ada.").await?;
/// bob.prompt("I am Bob.").await?;
/// assert_eq!(ada.messages()[1].as_assistant().map(|m| m.text()).as_deref(), Some("Hello, Ada."));
/// assert_eq!(bob.messages().len(), 2, "Bob's conversation has only his own messages");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AgentDefinition {
    pub(crate) config: Arc<Config>,
    pub(crate) opening: Arc<Opening>,
}

impl AgentDefinition {
    /// This definition, showing each request `filter(transcript)`.
    pub(crate) fn with_history(&self, filter: HistoryFilter) -> AgentDefinition {
        let mut config = Config::clone(&self.config);
        config.history = Some(filter);
        AgentDefinition {
            config: Arc::new(config),
            opening: Arc::clone(&self.opening),
        }
    }
}

/// What one conversation's handle and its running loop share: the conversation's state, the
/// event bus, and its configuration (the definition's, until the conversation changes it for
/// itself).
#[derive(Debug)]
pub(crate) struct Shared {
    conversation: Mutex<Conversation>,
    pub(crate) bus: Bus,
    config: RwLock<Arc<Config>>,
    /// The context of this conversation's runs that are not given their own.
    pub(crate) context: RwLock<Option<RunContext>>,
}

impl Shared {
    pub(crate) fn new(definition: &AgentDefinition) -> Self {
        let shared = Shared {
            conversation: Mutex::default(),
            bus: Bus::default(),
            config: RwLock::new(Arc::clone(&definition.config)),
            context: RwLock::new(None),
        };
        {
            let opening = &definition.opening;
            let mut state = shared.conversation();
            state.set_transcript(opening.messages.clone());
            state.steering_mode = opening.steering_mode;
            state.follow_up_mode = opening.follow_up_mode;
        }
        shared
    }

    /// The conversation's state, locked.
    pub(crate) fn conversation(&self) -> MutexGuard<'_, Conversation> {
        lock(&self.conversation)
    }

    /// The conversation's state takes in `event`, then the bus delivers it. The future only
    /// awaits async subscribers (see [`Bus::emit`]).
    pub(crate) fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send + 'static {
        self.conversation().reduce(&event);
        self.bus.emit(event)
    }

    pub(crate) fn config(&self) -> Arc<Config> {
        Arc::clone(&self.config.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn context(&self) -> Option<RunContext> {
        self.context
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Hand the conversation to `definition`'s configuration (a handoff): its next request
    /// uses it.
    pub(crate) fn hand_to(&self, definition: &AgentDefinition) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) =
            Arc::clone(&definition.config);
    }

    pub(crate) fn update_config(&self, change: impl FnOnce(&mut Config)) {
        let mut config = self.config.write().unwrap_or_else(PoisonError::into_inner);
        change(Arc::make_mut(&mut config));
    }
}

/// The conversation's tool set, changed under the configuration's lock so that two changes
/// at once (a tool activating, the application registering) both land.
impl ToolSwitch for Shared {
    fn registry(&self) -> Arc<ToolRegistry> {
        Arc::clone(self.config().tools.registry())
    }

    fn change(
        &self,
        change: &mut dyn FnMut(&mut ToolRegistry) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        let mut config = self.config.write().unwrap_or_else(PoisonError::into_inner);
        // A copy: a running turn may still hold the current registry.
        let mut registry = ToolRegistry::clone(config.tools.registry());
        change(&mut registry)?;
        Arc::make_mut(&mut config).set_tools(registry);
        Ok(())
    }
}

/// Check that `context` is what every registered tool reads: a tool with a `Ctx<T>` needs a
/// context of type `T`.
///
/// # Errors
/// The first tool whose context is missing or of another type.
pub(crate) fn check_context(
    tools: &ToolRegistry,
    context: Option<&RunContext>,
) -> Result<(), AgentError> {
    for (tool, settings) in tools.registered() {
        let Some(needs) = settings.context_type else {
            continue;
        };
        let tool = tool.definition().name.clone();
        match context.map(RunContext::context_type) {
            None => {
                return Err(AgentError::MissingContext {
                    tool,
                    needs: needs.name(),
                });
            }
            Some(supplied) if supplied != needs => {
                return Err(AgentError::ContextType {
                    tool,
                    needs: needs.name(),
                    supplied: supplied.name(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}
