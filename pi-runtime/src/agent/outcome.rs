//! How a run ended: what [`Agent::prompt`](super::Agent::prompt) and
//! [`Agent::continue_run`](super::Agent::continue_run) return.

use std::ops::Deref;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::approval::PendingCall;
use super::machine::RunState;
use crate::message::{AssistantMessage, Message};

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
    /// [`approval`](super::approval)): keep [`RunOutcome::paused_state`] and resume it with
    /// [`Agent::resume_with`](super::Agent::resume_with).
    AwaitingApproval {
        /// The calls waiting for a decision, in source order.
        pending: Vec<PendingCall>,
    },
}

impl RunEnd {
    /// The run ended the way a run is meant to: completed, or terminated by a tool.
    pub fn is_success(&self) -> bool {
        matches!(self, RunEnd::Completed | RunEnd::Terminated)
    }
}

/// What a run added to the transcript (the prompt first), how many model requests it made,
/// and why it ended. It reads as the slice of its messages:
///
/// ```
/// use pi_runtime::agent::{Agent, RunEnd};
/// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = FauxModel::new().respond(FauxResponse::error("overloaded"));
/// let agent = Agent::builder().model(model).build()?;
/// let run = agent.prompt("Hello").await?;
/// assert_eq!(run.end, RunEnd::ModelError { message: "overloaded".into() });
/// assert_eq!(run.len(), 2, "the prompt and the failed response");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The messages the run added, the prompt first.
    pub messages: Vec<Message>,
    /// How many model requests the run made.
    pub turns: usize,
    /// Why the run ended.
    pub end: RunEnd,
    /// The state of a run that paused for approval.
    pub(crate) paused: Option<Box<RunState>>,
}

/// Two outcomes are equal when their messages, turns and ends are: a paused state holds
/// nothing else a caller compares.
impl PartialEq for RunOutcome {
    fn eq(&self, other: &Self) -> bool {
        (&self.messages, self.turns, &self.end) == (&other.messages, other.turns, &other.end)
    }
}

impl RunOutcome {
    /// The state of a run that ended with [`RunEnd::AwaitingApproval`], to save (see
    /// [`RunState::to_signed_json`]) and resume with
    /// [`Agent::resume_with`](super::Agent::resume_with).
    pub fn paused_state(&self) -> Option<&RunState> {
        self.paused.as_deref()
    }

    /// The paused state, taken out of the outcome.
    pub fn into_paused_state(self) -> Option<RunState> {
        self.paused.map(|state| *state)
    }

    /// The text of the run's last assistant message (its text blocks joined), if the run
    /// added one.
    pub fn final_text(&self) -> Option<String> {
        (self.messages.iter().rev())
            .find_map(Message::as_assistant)
            .map(AssistantMessage::text)
    }

    /// The messages, without the rest.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }
}

impl Deref for RunOutcome {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl IntoIterator for RunOutcome {
    type Item = Message;
    type IntoIter = std::vec::IntoIter<Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.into_iter()
    }
}

impl<'a> IntoIterator for &'a RunOutcome {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl From<RunOutcome> for Vec<Message> {
    fn from(outcome: RunOutcome) -> Self {
        outcome.messages
    }
}
