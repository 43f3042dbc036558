//! What an extraction returns: the accepted value with its run, or why there is none.

use std::time::Duration;

use crate::agent::AgentError;
use crate::message::{Message, Usage};

/// An accepted result and the run that produced it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Extracted<T> {
    /// The value the submit tool accepted: it passed `T`'s schema, deserialized into `T`
    /// and passed the business check.
    pub value: T,
    /// The messages the extraction added to the transcript, the prompt first (and, with a
    /// reminder, each reminder and what followed it).
    pub messages: Vec<Message>,
    /// The model's usage over all of the extraction's responses.
    pub usage: Usage,
    /// How many turns (model responses) the extraction took.
    pub turns: usize,
}

/// Why an extraction has no result.
///
/// A run that ends in an error or an abort is one of these even if a submission was
/// accepted before it ended: only a run that ended normally hands out its value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The model stopped without a submission that was accepted: it answered in text, and
    /// no reminder was configured to ask again.
    #[error(
        "no result was accepted: the model stopped after {} without a `{tool}` call that \
         passed validation",
        count_turns(*.turns)
    )]
    NoSubmission {
        /// The submit tool.
        tool: String,
        /// The turns the run took.
        turns: usize,
    },
    /// The turn limit ended the run before a submission was accepted.
    #[error(
        "no result was accepted within the turn limit of {}: the model made no `{tool}` call \
         that passed validation",
        count_turns(*.max_turns)
    )]
    TurnLimit {
        /// The submit tool.
        tool: String,
        /// The limit.
        max_turns: usize,
    },
    /// The time limit aborted the run.
    #[error("the run was aborted at the time limit of {limit:?}")]
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// The run was aborted ([`Extractor::abort`](super::Extractor::abort) or
    /// [`Agent::abort`](crate::agent::Agent::abort)).
    #[error("the run was aborted: {reason}")]
    Aborted {
        /// The aborted response's error message, or `Operation aborted` when the run ended
        /// normally after the signal fired.
        reason: String,
    },
    /// A model request failed.
    #[error("the model request failed: {message}")]
    Model {
        /// The failed response's error message.
        message: String,
    },
    /// The agent could not start the run (another run is in progress).
    #[error(transparent)]
    Agent(#[from] AgentError),
}

fn count_turns(turns: usize) -> String {
    if turns == 1 {
        "1 turn".to_owned()
    } else {
        format!("{turns} turns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_happened() {
        let no = ExtractError::NoSubmission {
            tool: "submit".into(),
            turns: 1,
        };
        assert_eq!(
            no.to_string(),
            "no result was accepted: the model stopped after 1 turn without a `submit` call \
             that passed validation"
        );
        let limit = ExtractError::TurnLimit {
            tool: "submit".into(),
            max_turns: 4,
        };
        assert_eq!(
            limit.to_string(),
            "no result was accepted within the turn limit of 4 turns: the model made no \
             `submit` call that passed validation"
        );
        assert_eq!(
            ExtractError::TimeLimit {
                limit: Duration::from_secs(30)
            }
            .to_string(),
            "the run was aborted at the time limit of 30s"
        );
    }
}
