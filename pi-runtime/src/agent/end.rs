//! How a run ended.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::approval::PendingCall;

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum RunEnd {
    /// The model answered without calling a tool, and nothing was queued: the normal end.
    Completed,
    /// Every result of the last batch asked the run to stop (`terminate`).
    Terminated,
    /// A `finish_turn` hook ended the run.
    EndedByHook,
    /// The run made as many model requests as the agent's
    /// [`max_turns`](super::AgentBuilder::max_turns) allows and would have made another.
    TurnLimit {
        /// The limit.
        max_turns: usize,
    },
    /// The agent's [`time_limit`](super::AgentBuilder::time_limit) aborted the run.
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// The run was aborted ([`Agent::abort`](super::Agent::abort)).
    Aborted,
    /// A model request failed; the run's last message is the failed response.
    ModelError {
        /// The provider's error text.
        message: String,
    },
    /// A tool's calls failed more often than its retry budget allows
    /// ([`ToolPolicy::retries`](crate::tool::ToolPolicy::retries)): the run ended after the
    /// turn of the failure that went past it, whose result is the last tool result.
    RetriesExhausted {
        /// The tool's name.
        tool: String,
        /// Its budget: the failed calls one run allows.
        retries: u32,
    },
    /// The run paused before a batch with calls that need approval (see
    /// [`approval`](super::approval)): keep [`RunOutcome::paused_state`](crate::agent::RunOutcome::paused_state) and resume it with
    /// [`Agent::resume_with`](super::Agent::resume_with).
    AwaitingApproval {
        /// The calls waiting for a decision, in source order.
        pending: Vec<PendingCall>,
    },
    /// A guardrail tripped (see [`guardrail`](super::guardrail)): an input guardrail before
    /// (or beside) the first model request, whose tool calls then never ran; or an output
    /// guardrail, after the answer it checked.
    GuardrailTripped {
        /// The guardrail's name.
        guardrail: String,
        /// Whether it checked the input or an answer.
        stage: GuardrailStage,
        /// Why it tripped.
        reason: String,
    },
}

impl RunEnd {
    /// The run ended the way a run is meant to: completed, or terminated by a tool.
    pub fn is_success(&self) -> bool {
        matches!(self, RunEnd::Completed | RunEnd::Terminated)
    }
}

/// Which check tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum GuardrailStage {
    /// An [`InputGuardrail`](super::guardrail::InputGuardrail): the run's input.
    Input,
    /// An [`OutputGuardrail`](super::guardrail::OutputGuardrail): an answer.
    Output,
}
