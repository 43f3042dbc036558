//! How a run ended: what [`Agent::prompt`](super::Agent::prompt) and
//! [`Agent::continue_run`](super::Agent::continue_run) return.

use std::ops::Deref;

use super::end::RunEnd;
use super::machine::RunState;
use crate::message::{AssistantMessage, Message, Usage};

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
    /// The name of the agent that answered ([`AgentBuilder::name`](super::AgentBuilder::name)):
    /// the one the run started with, or the one a [handoff](super::handoff) handed the
    /// conversation to. `None` for an agent without a name.
    pub agent: Option<String>,
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

    /// What the run cost: the usage of its model responses, and each tool result's own
    /// usage (a sub-agent's whole run, a tool that called a model).
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for message in &self.messages {
            match message {
                Message::Assistant(assistant) => total += assistant.usage,
                Message::ToolResult(result) => total += result.usage.unwrap_or_default(),
                _ => {}
            }
        }
        total
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
