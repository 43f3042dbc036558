//! `ToolSettings`: what a tool declares about how the agent treats it (exposure, approval,
//! behaviour hints, execution policy, the run context it reads), as one value rather than a
//! trait method each, so a wrapper or a registry entry passes all of them on at once.

use super::{ApprovalPolicy, ContextType, Exposure, ToolHints, ToolPolicy};

/// How the agent treats a tool, apart from what it does: what
/// [`ToolDefinition::settings`](super::ToolDefinition::settings) returns. `#[tool(...)]` builds
/// it from its attribute (`exposure`, `approval`, `timeout`, ...) and from its extractor
/// parameters; [`FnTool`](super::FnTool) from its `with_*` methods. A registration may
/// override parts of it ([`ToolSetExt::with_exposure`](super::ToolSetExt::with_exposure)); a
/// registered tool's settings are then its registry entry's
/// ([`ToolRegistry::settings`](super::ToolRegistry::settings)).
///
/// ```
/// use std::time::Duration;
///
/// use pi_runtime::tool::{ApprovalPolicy, Exposure, ToolHints, ToolPolicy, ToolSettings};
///
/// let settings = ToolSettings::new()
///     .with_exposure(Exposure::Deferred)
///     .with_approval(ApprovalPolicy::Always)
///     .with_hints(ToolHints::new().destructive(true))
///     .with_policy(ToolPolicy::new().with_timeout(Duration::from_secs(30)));
/// assert_eq!(settings.exposure, Exposure::Deferred);
/// assert!(settings.approval.may_ask());
/// assert_eq!(settings.policy.timeout, Some(Duration::from_secs(30)));
/// assert_eq!(settings.context_type, None);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolSettings {
    /// Where the tool shows up: declared to the model from registration
    /// ([`Direct`](Exposure::Direct), the default), or only once activated, for example by a
    /// `tool_search` match ([`Deferred`](Exposure::Deferred)); see [`Exposure`].
    pub exposure: Exposure,
    /// Whether a call needs a person's approval before it executes
    /// ([`ApprovalPolicy::Never`], the default). The agent's own policy
    /// ([`AgentBuilder::approval`](crate::agent::AgentBuilder::approval)) is asked too; see
    /// [`agent::approval`](crate::agent::approval).
    pub approval: ApprovalPolicy,
    /// What the tool says about its behaviour (none by default; an MCP server's tool carries
    /// the hints of its listing). An agent's approval policy may read them, for example
    /// [`agent::approval::destructive_tools`](crate::agent::approval::destructive_tools).
    pub hints: ToolHints,
    /// How the dispatcher runs the tool's calls: time limit, retry budget, named concurrency
    /// limit, output cap (none by default). Unset fields take the agent's defaults; see
    /// [`ToolPolicy`].
    pub policy: ToolPolicy,
    /// The type of the run context the tool reads (`None`, the default, reads none).
    /// `#[tool]` sets it from its extractor parameters, the first
    /// [`FromToolContext::context_type`](super::FromToolContext::context_type) among them (a
    /// `Ctx<T>`'s `T`). A run whose context is missing or of another type does not start;
    /// see [`Ctx`](super::Ctx).
    pub context_type: Option<ContextType>,
    /// The tool reads the transcript of the run that calls it (a sub-agent that starts
    /// from a copy of its parent's history): each batch it is offered in keeps a snapshot
    /// for it.
    pub reads_transcript: bool,
    /// The tool reports to the run that calls it (a sub-agent's events and pause, a
    /// handoff): its calls get a link to their run.
    pub(crate) links_to_run: bool,
    /// The tool keeps a journal of its own in a durable run (a sub-agent, whose steps are
    /// steps of the run's journal): its execution is not one step.
    #[cfg_attr(not(feature = "restate"), allow(dead_code))]
    pub(crate) journals_itself: bool,
}

impl ToolSettings {
    /// The defaults: direct, never asks for approval, no hints, no limits, reads no context.
    #[must_use]
    pub const fn new() -> Self {
        ToolSettings {
            exposure: Exposure::Direct,
            approval: ApprovalPolicy::Never,
            hints: ToolHints::new(),
            policy: ToolPolicy::new(),
            context_type: None,
            reads_transcript: false,
            links_to_run: false,
            journals_itself: false,
        }
    }

    /// Where the tool shows up (see [`Exposure`]).
    #[must_use]
    pub const fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }

    /// Whether a call needs a person's approval first (see [`ApprovalPolicy`]).
    #[must_use]
    pub const fn with_approval(mut self, approval: ApprovalPolicy) -> Self {
        self.approval = approval;
        self
    }

    /// What the tool says about its behaviour (see [`ToolHints`]).
    #[must_use]
    pub const fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// How the dispatcher runs the tool's calls (see [`ToolPolicy`]).
    #[must_use]
    pub fn with_policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The type of the run context the tool reads.
    /// These settings, for a tool whose calls report to their run (see `links_to_run`).
    #[must_use]
    pub(crate) const fn linked_to_run(mut self) -> Self {
        self.links_to_run = true;
        self
    }

    #[must_use]
    pub const fn with_context_type(mut self, context_type: ContextType) -> Self {
        self.context_type = Some(context_type);
        self
    }
}
