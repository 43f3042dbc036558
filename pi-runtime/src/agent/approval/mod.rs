//! Approvals: calls a person must approve before they execute, a run that pauses for them,
//! and a resume (in this process or another, hours later) that takes one decision per call.
//!
//! ```
//! use pi_runtime::agent::approval::{ApprovalDecision, PendingCall, StateKey};
//! use pi_runtime::agent::{Agent, RunEnd, RunState};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::tool::ApprovalPolicy;
//! use pi_runtime::{FnTool, ToolResult};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = |model: FauxModel| {
//!     let delete = FnTool::new("delete", "Delete a file.", json!({"type": "object"}), |_, _| async {
//!         Ok(ToolResult::text("deleted"))
//!     })
//!     .with_approval(ApprovalPolicy::Always);
//!     Agent::builder().model(model).tools(delete).build()
//! };
//! let key = StateKey::new(b"the application's signing key")?;
//!
//! // The run stops before executing the batch, and its state goes to storage.
//! let asks = FauxModel::new().respond(FauxResponse::tool_call("c1", "delete", json!({"path": "a.txt"})));
//! let run = agent(asks)?.prompt("Delete a.txt").await?;
//! let RunEnd::AwaitingApproval { pending } = &run.end else { unreachable!() };
//! assert_eq!(pending[0].tool, "delete");
//! let saved = run.paused_state().map(|state| state.to_signed_json(&key)).unwrap_or_default();
//!
//! // Later, anywhere: a fresh agent, the saved state and a decision per pending call.
//! let state = RunState::from_signed_json(&saved, &key)?;
//! let fresh = agent(FauxModel::new().respond(FauxResponse::text("Done.")))?;
//! let resumed = fresh.resume_with(state, [ApprovalDecision::approve("c1")]).await?;
//! assert_eq!(resumed.end, RunEnd::Completed);
//!
//! // The pause is used up: the same state does not resume twice.
//! let again = agent(FauxModel::new())?;
//! let state = RunState::from_signed_json(&saved, &key)?;
//! let error = again.resume_with(state, [ApprovalDecision::approve("c1")]).await.unwrap_err();
//! assert!(error.to_string().starts_with("this pause ("));
//! # Ok(()) }
//! ```
//!
//! # Policies
//!
//! - A tool's own: [`ToolSettings::approval`](crate::tool::ToolSettings::approval), which
//!   `#[tool(approval = "always")]` or `#[tool(approval = my_policy)]` (a
//!   `fn(&Params) -> Approval` of the tool's validated arguments) writes, and
//!   [`FnTool::with_approval`](crate::FnTool::with_approval) for run-time tools.
//! - The agent's, for any tool ([`AgentBuilder::approval`](super::AgentBuilder::approval)):
//!   a function of an [`ApprovalRequest`]; [`destructive_tools`] asks for every tool hinted
//!   destructive, such as an MCP server's.
//!
//! A call needs approval when either policy says so (the tool's reason first). A policy sees
//! a call only after `prepare_arguments`, validation and `before_tool_call`: an invalid or
//! blocked call gets its error result as before and is never put to a person. A policy that
//! panics asks for approval.
//!
//! # The pause
//!
//! A batch holding a call that needs approval stops after its preflight and before executing
//! anything: the run ends with [`RunEnd::AwaitingApproval`](super::RunEnd::AwaitingApproval)
//! listing the [`PendingCall`]s, an [`ApprovalRequested`](super::AgentEvent::ApprovalRequested)
//! event fires (no `agent_end`: the run is not over), and the run's span records a
//! `run paused for approval` event. [`RunOutcome::paused_state`](super::RunOutcome::paused_state)
//! is the [`RunState`](super::RunState) to keep; sign it with
//! [`to_signed_json`](super::RunState::to_signed_json) and a [`StateKey`].
//! Until the run is resumed (or the conversation [`reset`](super::Agent::reset)), the
//! conversation refuses `prompt` and `continue_run` with
//! [`AgentError::AwaitingApproval`](super::AgentError::AwaitingApproval): its transcript ends
//! with calls that have no results, which no wire API accepts.
//!
//! The batch's other calls wait with it: those that ended in preflight (invalid, blocked) keep
//! their results, and those that need no approval run together with the approved ones on
//! resume. Every result message then follows in source order, as in pi, and a resumed batch
//! emits exactly the events the same batch emits when nothing needs approval, from the
//! executions on.
//!
//! A sequential batch (a sequential agent, or a sequential tool in the batch) that may need
//! approval (the agent has a policy, or a tool of the batch has one) prepares every call
//! before it executes any: the pause must come before the first execution. Its calls then run
//! one at a time in source order. A sequential batch without any policy runs as before,
//! preparing each call just before executing it.
//!
//! Calls that cannot wait for a person fail closed: a call needing approval from
//! [`Agent::run_tool_call`](super::Agent::run_tool_call), an MCP client of an
//! [`McpServer`](crate::mcp::McpServer), or a tool's own
//! [`ToolContext::call_tool`](crate::ToolContext::call_tool) gets an error result and never
//! executes.
//!
//! # Resuming
//!
//! [`Agent::resume_with`](super::Agent::resume_with) takes exactly one [`ApprovalDecision`] per
//! pending call: approve, deny with a reason (the call's error result carries it, so every
//! call has a result and the next request is valid on every wire API), or edit the arguments.
//! Edited arguments go through the whole preflight again, as the model's do:
//! `prepare_arguments`, validation, `before_tool_call` and the policies. An edit is the
//! person's approval of the arguments they wrote; if `before_tool_call` changes them into
//! arguments a policy wants approved, the person never saw those, and the edit is refused. A
//! missing, duplicate or unknown decision, an edit that does not validate or that the hook
//! blocks, arguments that no longer match their hash, or a tool the agent no longer has is an
//! [`ApprovalError`], and nothing runs. The run's time limit stops counting while it is
//! paused.
//!
//! # Inside sub-agents
//!
//! A call that needs approval inside a sub-agent (an agent called as a tool, see
//! [`subagent`](super::subagent)), at any depth, pauses the whole run: the sub-agent pauses,
//! the call that runs it waits, the rest of its batch finishes, and the run pauses with
//! every held call listed with its [`path`](PendingCall::path) (`c1/d1`: call `d1` of the
//! sub-agent that call `c1` runs). One signed state holds the tree. A decision names a held
//! call by its path; the resume checks that every path has exactly one, claims the pause,
//! and the waiting call resumes its sub-agent, which applies the decisions as its own (an
//! edit is checked there, by the sub-agent's tools). Nothing that finished before the pause
//! runs again. A sub-agent that cannot wait (one a script or `run_tool_call` runs, or under
//! a durable run's journal) fails closed, and its held call never runs.
//!
//! # A pause is single-use
//!
//! Each pause gets a random id ([`RunState::pause_id`](super::RunState::pause_id)) inside
//! its signed state. Once the decisions are checked, `resume_with` claims that id in the
//! agent's [`PauseLedger`], atomically, before anything runs: of any number of resumes of
//! one saved state, one after another or at the same moment, exactly one runs the approved
//! calls, and every other fails with [`ClaimError::AlreadyResumed`] (`this pause (<id>) was
//! already resumed at <time>`) and runs nothing. A refused resume (a missing decision, say)
//! claims nothing, so the person can decide again.
//!
//! What to share across processes: the [`StateKey`]'s secret, and the ledger.
//!
//! - Without [`AgentBuilder::pause_ledger`](super::AgentBuilder::pause_ledger), every agent
//!   of the process shares one [`MemoryLedger`]: a pause resumes once within the process,
//!   not across processes. It keeps each resumed pause's id (under a hundred bytes) for the
//!   life of the process.
//! - [`FileLedger::new(dir)`](FileLedger::new) records each claim as a file in `dir`,
//!   created exclusively (`O_EXCL`): every process that may resume a state must use the same
//!   directory, on a file system whose exclusive creation is atomic (a local one).
//! - Your own [`PauseLedger`] over a database: an insert that fails on a duplicate key.
//! - A durable run (`pi_runtime::durable`, feature `restate`) needs none: its journal
//!   takes each pause's decisions once.
//!
//! # The state file
//!
//! [`to_signed_json`](super::RunState::to_signed_json) writes a versioned JSON envelope
//! signed with HMAC-SHA-256 under a [`StateKey`] (a secret of at least [`MIN_KEY_BYTES`]).
//! [`from_signed_json`](super::RunState::from_signed_json) and
//! [`from_signed_reader`](super::RunState::from_signed_reader) refuse a file larger than the
//! key's limit ([`DEFAULT_MAX_STATE_BYTES`] unless
//! [`max_state_bytes`](StateKey::max_state_bytes) says otherwise) before parsing it, and check
//! the signature over the state's raw bytes before building it. They are the only way into
//! a [`RunState`](super::RunState) from outside the process: it has no serde implementation,
//! so a state its key did not sign never resumes.

mod ledger;
mod signed;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use ledger::{ClaimError, FileLedger, MemoryLedger, PauseLedger};
pub(crate) use ledger::{new_pause_id, process_ledger};
pub use signed::{DEFAULT_MAX_STATE_BYTES, MIN_KEY_BYTES, StateFileError, StateKey};

use crate::message::ToolCall;
pub(crate) use crate::tool::Approval;
use crate::tool::{Registration, ToolDefinition, ToolSettings};

/// What the agent's approval policy sees: a call that passed validation and
/// `before_tool_call`, with the arguments the tool would receive.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ApprovalRequest<'a> {
    /// The tool that would run.
    pub tool: &'a dyn ToolDefinition,
    /// The settings the tool registered with (its hints among them).
    pub settings: &'a ToolSettings,
    /// The call as the model sent it (raw arguments).
    pub tool_call: &'a ToolCall,
    /// The validated arguments (after `before_tool_call`).
    pub args: &'a Value,
}

impl std::fmt::Debug for ApprovalRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("tool", &self.tool.definition().name)
            .field("tool_call", &self.tool_call)
            .field("args", &self.args)
            .finish()
    }
}

pub(crate) type AgentPolicy = Arc<dyn Fn(&ApprovalRequest<'_>) -> Approval + Send + Sync>;

/// An agent policy: every tool hinted destructive ([`ToolHints::destructive`](crate::tool::ToolHints))
/// needs approval, for example every MCP tool whose server marks it `destructiveHint: true`.
///
/// ```
/// use pi_runtime::agent::Agent;
/// use pi_runtime::agent::approval::destructive_tools;
/// use pi_runtime::provider::faux::FauxModel;
///
/// let agent = Agent::builder().model(FauxModel::new()).approval(destructive_tools).build();
/// assert!(agent.is_ok());
/// ```
pub fn destructive_tools(request: &ApprovalRequest<'_>) -> Approval {
    if request.settings.hints.destructive == Some(true) {
        Approval::needed(format!(
            "`{}` is marked destructive",
            request.tool_call.name
        ))
    } else {
        Approval::NotNeeded
    }
}

/// Whether the call of `tool` needs approval: the tool's own policy first, then the agent's.
/// A policy that panics asks, with the panic as its reason.
pub(crate) fn check(
    tool: &Registration,
    call: &ToolCall,
    args: &Value,
    agent: Option<&AgentPolicy>,
) -> Approval {
    let asked = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let settings = tool.settings();
        let own = settings.approval.check(&call.name, args);
        match (own.is_needed(), agent) {
            (false, Some(agent)) => agent(&ApprovalRequest {
                tool: tool.tool().as_ref(),
                settings,
                tool_call: call,
                args,
            }),
            _ => own,
        }
    }));
    asked.unwrap_or_else(|panic| {
        let message = crate::agent::panics::panic_message(&*panic);
        Approval::needed(format!("the approval policy panicked: {message}"))
    })
}

/// A call waiting for a person's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PendingCall {
    /// The call's id, which its decision names.
    pub id: String,
    /// The tool the model called.
    pub tool: String,
    /// The validated arguments the tool would receive.
    pub args: Value,
    /// Why approval is needed (the policy's reason).
    pub reason: String,
    /// For a call of a sub-agent, the ids of the calls from the paused run down to it (see
    /// [`path`](Self::path)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
}

impl PendingCall {
    pub(crate) fn new(call: &ToolCall, args: Value, reason: String) -> Self {
        PendingCall {
            id: call.id.clone(),
            tool: call.name.clone(),
            args,
            reason,
            path: None,
        }
    }

    /// Where the call sits in the tree of runs, which its decision names: its id for a call
    /// of the paused run itself; for a call of a sub-agent (see
    /// [`subagent`](crate::agent::subagent)), the ids of the calls from the paused run down
    /// to it, joined with `/` (`c1/w1` for the call `w1` of the sub-agent that call `c1`
    /// runs).
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(&self.id)
    }

    /// This call as the run above sees it: under its call `call_id`, which runs the
    /// sub-agent that holds it.
    pub(crate) fn nested_under(mut self, call_id: &str) -> Self {
        self.path = Some(format!("{call_id}/{}", self.path()));
        self
    }
}

/// One person's decision about one pending call.
///
/// ```
/// use pi_runtime::agent::approval::{ApprovalDecision, Decision};
/// use serde_json::json;
///
/// let decision = ApprovalDecision::edit("c1", json!({"path": "/tmp/a.txt"}));
/// assert_eq!(decision.call_id(), "c1");
/// assert_eq!(decision.decision(), &Decision::Edit { args: json!({"path": "/tmp/a.txt"}) });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    call_id: String,
    decision: Decision,
}

/// What a person decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Decision {
    /// Run the call with its arguments.
    Approve,
    /// Do not run it; the model sees an error result carrying the reason.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Run it with these arguments instead; they are prepared and validated again.
    Edit {
        /// The new arguments.
        args: Value,
    },
}

impl ApprovalDecision {
    /// Approve the call `call_id` (for a call of a sub-agent, its [`path`](PendingCall::path)).
    pub fn approve(call_id: impl Into<String>) -> Self {
        Self::new(call_id, Decision::Approve)
    }

    /// Deny the call `call_id`; the model reads `reason`.
    pub fn deny(call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self::new(call_id, Decision::Deny { reason })
    }

    /// Run the call `call_id` with `args` instead.
    pub fn edit(call_id: impl Into<String>, args: Value) -> Self {
        Self::new(call_id, Decision::Edit { args })
    }

    /// A decision about the call `call_id`.
    pub fn new(call_id: impl Into<String>, decision: Decision) -> Self {
        ApprovalDecision {
            call_id: call_id.into(),
            decision,
        }
    }

    /// The call decided about.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    pub(crate) fn into_parts(self) -> (String, Decision) {
        (self.call_id, self.decision)
    }

    /// For a decision about a call further down (`c1/w1`), the id of the call of this run it
    /// sits under (`c1`) and the decision as the sub-agent that call runs takes it (`w1`).
    pub(crate) fn split_path(&self) -> Option<(&str, ApprovalDecision)> {
        let (head, rest) = self.call_id.split_once('/')?;
        Some((head, ApprovalDecision::new(rest, self.decision.clone())))
    }
}

/// Why a paused run cannot resume with these decisions. Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// A pending call has no decision.
    #[error("call {id} waits for a decision (approve, deny or edit)")]
    MissingDecision {
        /// The call.
        id: String,
    },
    /// Two decisions name the same call.
    #[error("call {id} has more than one decision")]
    DuplicateDecision {
        /// The call.
        id: String,
    },
    /// A decision names a call that is not pending.
    #[error("no pending call has the id {id}")]
    UnknownCall {
        /// The id the decision names.
        id: String,
    },
    /// A pending call's arguments no longer match the hash taken at the pause: the state was
    /// changed.
    #[error("the arguments of call {id} changed after the pause")]
    ArgumentsChanged {
        /// The call.
        id: String,
    },
    /// A call of the paused batch names a tool the resuming agent does not have.
    #[error("call {id} needs the tool `{tool}`, which this agent does not have")]
    ToolMissing {
        /// The call.
        id: String,
        /// The tool.
        tool: String,
    },
    /// Edited arguments do not validate.
    #[error("the edited arguments of call {id} are invalid: {message}")]
    InvalidEdit {
        /// The call.
        id: String,
        /// The validation error.
        message: String,
    },
    /// `before_tool_call` blocks the edited arguments (or fails on them), as it would the
    /// model's.
    #[error("the edited arguments of call {id} are blocked: {reason}")]
    EditBlocked {
        /// The call.
        id: String,
        /// The hook's reason (or its error).
        reason: String,
    },
    /// `before_tool_call` changed the edited arguments, and the policy asks for approval of
    /// the changed ones, which the person did not see.
    #[error(
        "the edited arguments of call {id}, as before_tool_call changed them, need approval: {reason}"
    )]
    EditNeedsApproval {
        /// The call.
        id: String,
        /// The policy's reason.
        reason: String,
    },
    /// The pause was resumed before, or its resume cannot be recorded: a pause is
    /// single-use (see [`PauseLedger`]).
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// The state's paused batch does not match its response.
    #[error("the run state's paused batch does not match its response")]
    Malformed,
}
