//! `AgentBuilder`: one place to give an agent its model, prompt, tools, execution mode,
//! hooks and limits.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::approval::{self, Approval, ApprovalRequest, PauseLedger};
use super::config::{AgentDefinition, Config, Opening};
use super::dispatch::Policies;
use super::error::BuildError;
use super::guardrail::{Guardrails, InputGuardrail, OutputGuardrail};
use super::handle::Agent;
use super::hooks::{
    AfterToolCall, BeforeToolCall, FinishedTurn, Hooks, RequestPlan, ToolCallDecision,
    ToolResultPatch, TurnControl,
};
use super::state::QueueMode;
use super::telemetry;
use super::turn_tools::TurnTools;
use crate::message::Message;
use crate::prompt::ToolSectionStyle;
use crate::stream::{LanguageModel, ThinkingLevel, ToolChoice};
use crate::tool::{
    ConcurrencyLimits, ContextTools, ContextType, ExecutionMode, OutputSaver, Registration,
    ToolError, ToolPolicy, ToolRegistry, ToolSet,
};

/// Builds an [`Agent`]; start with [`Agent::builder`].
pub struct AgentBuilder {
    model: Option<Arc<dyn LanguageModel>>,
    system_prompt: String,
    tool_section: ToolSectionStyle,
    prompt_guidelines: Vec<String>,
    tools: Vec<Registration>,
    execution: ExecutionMode,
    // `pub(super)`: an extraction (`extract/`) wraps the hooks already set in its own and
    // takes over the time limit, so the user's hooks keep working next to its limits.
    pub(super) hooks: Hooks,
    thinking_level: ThinkingLevel,
    max_tokens: Option<u32>,
    tool_choice: Option<ToolChoice>,
    parallel_tool_calls: Option<bool>,
    max_tool_calls: Option<u32>,
    pub(super) time_limit: Option<Duration>,
    max_turns: Option<usize>,
    capture_content: Option<bool>,
    messages: Vec<Message>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    policies: Policies,
    context_type: Option<ContextType>,
    ledger: Option<Arc<dyn PauseLedger>>,
    guardrails: Guardrails,
    name: Option<String>,
}

impl Default for AgentBuilder {
    fn default() -> Self {
        AgentBuilder {
            model: None,
            system_prompt: String::new(),
            tool_section: ToolSectionStyle::Plain,
            prompt_guidelines: Vec::new(),
            tools: Vec::new(),
            execution: ExecutionMode::Parallel,
            hooks: Hooks::default(),
            thinking_level: ThinkingLevel::Off,
            max_tokens: None,
            tool_choice: None,
            parallel_tool_calls: None,
            max_tool_calls: None,
            time_limit: None,
            max_turns: None,
            capture_content: None,
            messages: Vec::new(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            policies: Policies::default(),
            context_type: None,
            ledger: None,
            guardrails: Guardrails::default(),
            name: None,
        }
    }
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("model", &self.model)
            .field("system_prompt", &self.system_prompt)
            .field("tools", &self.tools.len())
            .field("execution", &self.execution)
            .field("hooks", &self.hooks)
            .field("time_limit", &self.time_limit)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The model to ask (required).
    #[must_use]
    pub fn model(self, model: impl LanguageModel + 'static) -> Self {
        self.shared_model(Arc::new(model))
    }

    /// A model shared with other agents.
    #[must_use]
    pub fn shared_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// The system prompt. Each request sends it followed by a blank line and the tool
    /// section built from the turn's tools, in the [`tool_section`](Self::tool_section)
    /// style (when that section is not empty).
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Send the system prompt as given, without the tool section (the same as
    /// `tool_section(ToolSectionStyle::None)`).
    #[must_use]
    pub fn without_tool_section(self) -> Self {
        self.tool_section(ToolSectionStyle::None)
    }

    /// Which tool section follows the system prompt (default:
    /// [`ToolSectionStyle::Plain`]; a coding agent wants pi's,
    /// [`ToolSectionStyle::CodingAgent`]).
    #[must_use]
    pub fn tool_section(mut self, style: ToolSectionStyle) -> Self {
        self.tool_section = style;
        self
    }

    /// Prompt-level guidelines for the tool section's `Guidelines:` list.
    #[must_use]
    pub fn prompt_guidelines<I, S>(mut self, guidelines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.prompt_guidelines = guidelines.into_iter().map(Into::into).collect();
        self
    }

    /// Register tools: one tool, a tuple of tools, or a `Vec<Arc<dyn ToolDefinition>>`.
    /// May be called more than once; names must be unique.
    #[must_use]
    pub fn tools(mut self, tools: impl ToolSet) -> Self {
        self.tools.extend(tools.into_registrations());
        self
    }

    /// Parallel (the default) or sequential batches. A batch that calls a tool whose own mode
    /// is sequential runs sequentially either way.
    #[must_use]
    pub fn tool_execution(mut self, mode: ExecutionMode) -> Self {
        self.execution = mode;
        self
    }

    /// Decide about each call whose arguments passed validation: allow it, replace its
    /// arguments, or block it. An `Err` or a panic becomes the call's error.
    #[must_use]
    pub fn before_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(BeforeToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolCallDecision, ToolError>> + Send + 'static,
    {
        self.hooks = self.hooks.before_tool_call(hook);
        self
    }

    /// Patch each executed call's result. An `Err` or a panic replaces the
    /// result with an error result.
    #[must_use]
    pub fn after_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(AfterToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResultPatch, ToolError>> + Send + 'static,
    {
        self.hooks = self.hooks.after_tool_call(hook);
        self
    }

    /// Called after every turn, before its `turn_end`: end the run (a turn limit), force one
    /// more request, or let the loop decide. A panic ends the run.
    #[must_use]
    pub fn finish_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(FinishedTurn) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = TurnControl> + Send + 'static,
    {
        self.hooks = self.hooks.finish_turn(hook);
        self
    }

    /// Change the context, the model or the thinking level right before each request.
    #[must_use]
    pub fn prepare_request<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(RequestPlan) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RequestPlan> + Send + 'static,
    {
        self.hooks = self.hooks.prepare_request(hook);
        self
    }

    /// Decide which calls need a person's approval, for every tool (a tool's own policy is
    /// asked first): a batch holding such a call pauses the run before executing anything,
    /// and [`Agent::resume_with`](super::Agent::resume_with) goes on with the decisions. See
    /// [`approval`](super::approval).
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::tool::Approval;
    /// use pi_runtime::provider::faux::FauxModel;
    ///
    /// let agent = Agent::builder()
    ///     .model(FauxModel::new())
    ///     .approval(|request| match request.tool_call.name.as_str() {
    ///         "bash" => Approval::needed("runs a command"),
    ///         _ => Approval::NotNeeded,
    ///     })
    ///     .build();
    /// assert!(agent.is_ok());
    /// ```
    #[must_use]
    pub fn approval<F>(mut self, policy: F) -> Self
    where
        F: Fn(&ApprovalRequest<'_>) -> Approval + Send + Sync + 'static,
    {
        self.hooks = self.hooks.approval(policy);
        self
    }

    /// Name the agent: a run's outcome names the agent that answered
    /// ([`RunOutcome::agent`](super::RunOutcome::agent)), which a
    /// [handoff](super::handoff) changes.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Check the messages each run starts with, before its first model request (or beside
    /// it, for a [`concurrent`](InputGuardrail::concurrent) one); a trip ends the run with
    /// [`RunEnd::GuardrailTripped`](super::RunEnd::GuardrailTripped). See
    /// [`guardrail`](super::guardrail).
    #[must_use]
    pub fn input_guardrail(mut self, guardrail: InputGuardrail) -> Self {
        self.guardrails.input.push(guardrail);
        self
    }

    /// Check each answer (a response without tool calls); a trip ends the run after that
    /// turn with [`RunEnd::GuardrailTripped`](super::RunEnd::GuardrailTripped). See
    /// [`guardrail`](super::guardrail).
    #[must_use]
    pub fn output_guardrail(mut self, guardrail: OutputGuardrail) -> Self {
        self.guardrails.output.push(guardrail);
        self
    }

    /// Where [`Agent::resume_with`](super::Agent::resume_with) claims each pause, so that a
    /// paused run resumes once (see [`PauseLedger`]). Every process that may resume one saved
    /// state must share the ledger: a [`FileLedger`](super::approval::FileLedger) on one
    /// directory, or a ledger of your own on a database. Without one, the agent uses one
    /// [`MemoryLedger`](super::approval::MemoryLedger) per process, shared by every agent of
    /// the process: a pause resumes once within it, not across processes.
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::agent::approval::FileLedger;
    /// use pi_runtime::provider::faux::FauxModel;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let agent = Agent::builder()
    ///     .model(FauxModel::new())
    ///     .pause_ledger(FileLedger::new(dir.path().join("resumed"))?)
    ///     .build()?;
    /// # drop(agent); Ok(()) }
    /// ```
    #[must_use]
    pub fn pause_ledger(mut self, ledger: impl PauseLedger + 'static) -> Self {
        self.ledger = Some(Arc::new(ledger));
        self
    }

    /// The execution policy of every tool that does not set a field itself (see
    /// [`ToolPolicy`]): a default timeout, retry budget, concurrency limit or output cap.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::FauxModel;
    /// use pi_runtime::tool::ToolPolicy;
    ///
    /// let agent = Agent::builder()
    ///     .model(FauxModel::new())
    ///     .tool_policy(ToolPolicy::new().with_timeout(Duration::from_secs(60)).with_retries(3))
    ///     .build();
    /// assert!(agent.is_ok());
    /// ```
    #[must_use]
    pub fn tool_policy(mut self, defaults: ToolPolicy) -> Self {
        self.policies.defaults = defaults;
        self
    }

    /// Use these named concurrency limits (default: the definition's own), to share them
    /// with other agents.
    #[must_use]
    pub fn concurrency_limits(mut self, limits: ConcurrencyLimits) -> Self {
        self.policies.limits = limits;
        self
    }

    /// Where the full text of a result cut by a `max_output` policy is saved (default: new
    /// files in the system's temporary directory).
    #[must_use]
    pub fn output_saver(mut self, saver: impl OutputSaver + 'static) -> Self {
        self.policies.saver = Arc::new(saver);
        self
    }

    /// At most this many calls of one batch execute at once (at least one; default: all of
    /// them). The rest wait, in source order, for one to finish.
    #[must_use]
    pub fn max_parallel_tool_calls(mut self, max: usize) -> Self {
        self.policies.batch_concurrency = Some(max.max(1));
        self
    }

    /// Declare the type of the context the agent's runs supply (see [`Ctx`](crate::Ctx)):
    /// `build()` then fails when a tool reads another, instead of the first `prompt()`.
    #[must_use]
    pub fn context_type<T: Send + Sync + 'static>(mut self) -> Self {
        self.context_type = Some(ContextType::of::<T>());
        self
    }

    /// Register tools and declare `T`, the type of the context the agent's runs supply (as
    /// [`context_type`](Self::context_type) does), with the check at compile time: a
    /// `#[tool]` in `tools` whose `Ctx<U>` parameter reads another type than `T` does not
    /// compile. `tools` is a `#[tool]` type (reading `Ctx<T>` or no context), an `Arc` of
    /// one, or a tuple of them ([`ContextTools`]). Tools whose context type is known only at
    /// run time (an [`FnTool`](crate::FnTool), an MCP server's) register with
    /// [`tools`](Self::tools), and `build()` checks them.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::FauxModel;
    /// use pi_runtime::{Ctx, tool};
    ///
    /// struct Tenant;
    ///
    /// /// The tenant's name.
    /// #[tool]
    /// async fn tenant_name(Ctx(_tenant): Ctx<Arc<Tenant>>) -> String {
    ///     "acme".to_owned()
    /// }
    ///
    /// /// The time.
    /// #[tool]
    /// async fn now() -> String {
    ///     "noon".to_owned()
    /// }
    ///
    /// let agent = Agent::builder()
    ///     .model(FauxModel::new())
    ///     .context_tools::<Arc<Tenant>>((TenantName, Now))
    ///     .build();
    /// assert!(agent.is_ok());
    /// ```
    ///
    /// A tool reading another context type is an error at the call:
    ///
    /// ```compile_fail,E0277
    /// # use std::sync::Arc;
    /// # use pi_runtime::agent::Agent;
    /// # use pi_runtime::provider::faux::FauxModel;
    /// # use pi_runtime::{Ctx, tool};
    /// struct Tenant;
    /// struct User;
    ///
    /// /// Who is asking.
    /// #[tool]
    /// async fn whoami(Ctx(_user): Ctx<Arc<User>>) -> String {
    ///     "someone".to_owned()
    /// }
    ///
    /// // error[E0277]: this tool reads `Ctx<Arc<User>>`, and the agent's runs supply a `Arc<Tenant>`
    /// let _ = Agent::builder().model(FauxModel::new()).context_tools::<Arc<Tenant>>(Whoami);
    /// ```
    #[must_use]
    pub fn context_tools<T: Send + Sync + 'static>(self, tools: impl ContextTools<T>) -> Self {
        self.context_type::<T>().tools(tools)
    }

    /// Abort a run that takes longer than this: the tools see the cancellation, and the run
    /// ends with an `aborted` response. A tool that ignores its signal is waited for one more
    /// second at most; its result is then an error that says it was stopped.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Make at most this many model requests per run (at least one). A run that would make
    /// another ends with [`RunEnd::TurnLimit`](super::RunEnd::TurnLimit), after its last
    /// turn's `turn_end`. Each `prompt()` and `continue_run()` counts afresh.
    #[must_use]
    pub fn max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = Some(max_turns.max(1));
        self
    }

    /// Record tool arguments, tool results and model output on the `tracing` spans
    /// (default: only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). They
    /// may hold secrets or personal data; the spans' other attributes never do.
    #[must_use]
    pub fn capture_message_content(mut self, capture: bool) -> Self {
        self.capture_content = Some(capture);
        self
    }

    /// The reasoning level requested from models that reason (default: off).
    #[must_use]
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = level;
        self
    }

    /// The output token limit of each request.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The tool choice every request sends (default: none, the provider's default). A
    /// `prepare_request` hook can change it for one request through
    /// [`RequestPlan::tool_choice`](super::RequestPlan::tool_choice); the table on
    /// [`ToolChoice`] shows what each wire API sends.
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::FauxModel;
    /// use pi_runtime::ToolChoice;
    ///
    /// let agent = Agent::builder()
    ///     .model(FauxModel::new())
    ///     .tool_choice(ToolChoice::Required)
    ///     .parallel_tool_calls(false)
    ///     .max_tool_calls(4)
    ///     .build();
    /// assert!(agent.is_ok());
    /// ```
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Allow (`true`) or forbid (`false`) the model several tool calls in one response, on
    /// every request (default: the provider's default, which allows them). This is the
    /// model's side; [`max_parallel_tool_calls`](Self::max_parallel_tool_calls) caps how
    /// many of one response's calls execute at once. See
    /// [`StreamOptions::parallel_tool_calls`](crate::StreamOptions::parallel_tool_calls) for
    /// what each wire API sends.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Let each response make at most this many tool calls (OpenAI Responses'
    /// `max_tool_calls`; the other wire APIs have no such field and send nothing).
    #[must_use]
    pub fn max_tool_calls(mut self, max: u32) -> Self {
        self.max_tool_calls = Some(max);
        self
    }

    /// Start from this transcript.
    #[must_use]
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    /// How many steering messages each drain point delivers.
    #[must_use]
    pub fn steering_mode(mut self, mode: QueueMode) -> Self {
        self.steering_mode = mode;
        self
    }

    /// How many follow-up messages each drain point delivers.
    #[must_use]
    pub fn follow_up_mode(mut self, mode: QueueMode) -> Self {
        self.follow_up_mode = mode;
        self
    }

    /// Use these hooks (replacing any set before).
    #[must_use]
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Build the agent: one conversation of a new definition.
    ///
    /// # Errors
    /// No model, two tools with one name, or a tool schema that does not compile.
    pub fn build(self) -> Result<Agent, BuildError> {
        Ok(self.build_definition()?.conversation())
    }

    /// Build a definition that starts any number of independent conversations (a server's
    /// agent: one definition, a conversation per request).
    ///
    /// # Errors
    /// No model, two tools with one name, a tool schema that does not compile, or two tools
    /// naming one concurrency limit with different permits.
    pub fn build_definition(self) -> Result<AgentDefinition, BuildError> {
        let model = self.model.ok_or(BuildError::MissingModel)?;
        let tools = ToolRegistry::new(self.tools)?;
        for (tool, settings) in tools.registered() {
            if let (Some(needs), Some(supplied)) = (settings.context_type, self.context_type)
                && needs != supplied
            {
                return Err(BuildError::ContextType {
                    tool: tool.definition().name.clone(),
                    needs: needs.name(),
                    supplied: supplied.name(),
                });
            }
            if let Some(limit) = &self.policies.of(settings).concurrency {
                self.policies
                    .limits
                    .declare(&tool.definition().name, limit)?;
            }
        }
        let config = Arc::new(Config {
            model,
            system_prompt: self.system_prompt,
            tool_section: self.tool_section,
            prompt_guidelines: self.prompt_guidelines,
            tools: Arc::new(TurnTools::active(Arc::new(tools))),
            execution: self.execution,
            hooks: Arc::new(self.hooks),
            thinking_level: self.thinking_level,
            max_tokens: self.max_tokens,
            tool_choice: self.tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            max_tool_calls: self.max_tool_calls,
            time_limit: self.time_limit,
            max_turns: self.max_turns,
            capture_content: self
                .capture_content
                .unwrap_or_else(telemetry::capture_content_from_env),
            policies: Arc::new(self.policies),
            ledger: self.ledger.unwrap_or_else(approval::process_ledger),
            guardrails: self.guardrails.shared(),
            name: self.name,
            history: None,
        });
        let opening = Arc::new(Opening {
            messages: self.messages,
            steering_mode: self.steering_mode,
            follow_up_mode: self.follow_up_mode,
        });
        Ok(AgentDefinition { config, opening })
    }
}
