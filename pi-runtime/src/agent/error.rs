//! The errors an [`Agent`](super::Agent) reports to its caller, in pi's words with the Rust
//! method names (`follow_up()`, not `followUp()`).
//! What goes wrong inside a run is never one of these: it becomes a message the model sees.

use super::approval::ApprovalError;
use crate::tool::{ConcurrencyConflict, RegistryError};

/// A request the agent cannot take in its current state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `prompt` while a run is in progress.
    #[error(
        "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait for completion."
    )]
    BusyPrompting,
    /// `continue_run` while a run is in progress.
    #[error("Agent is already processing. Wait for completion before continuing.")]
    BusyContinuing,
    /// `reset` while a run is in progress.
    #[error("Agent is already processing. Wait for completion before resetting.")]
    BusyResetting,
    /// `continue_run` with an empty transcript.
    #[error("No messages to continue from")]
    NoMessages,
    /// `continue_run` after an assistant message with nothing queued.
    #[error("Cannot continue from message role: {0}")]
    CannotContinueFrom(&'static str),
    /// `prompt` or `continue_run` while the conversation's last run is paused for approval.
    #[error(
        "The run is paused for approval. Call resume_with() with the paused state and a decision for each pending call, or reset() to discard the run."
    )]
    AwaitingApproval,
    /// A run state this build cannot drive.
    #[error("{0}")]
    UnsupportedState(String),
    /// A paused run's decisions do not fit it; nothing ran.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// A tool reads a context (`Ctx<T>`) and the run supplies none; nothing ran.
    #[error(
        "tool \"{tool}\" reads a context of type `{needs}`, and this run supplies none: pass one with prompt_with() or set_context()"
    )]
    MissingContext {
        /// The tool's name.
        tool: String,
        /// The type its `Ctx<T>` reads.
        needs: &'static str,
    },
    /// A tool reads a context of another type than the run supplies; nothing ran.
    #[error(
        "tool \"{tool}\" reads a context of type `{needs}`, and this run supplies a `{supplied}`"
    )]
    ContextType {
        /// The tool's name.
        tool: String,
        /// The type its `Ctx<T>` reads.
        needs: &'static str,
        /// The type the run supplies.
        supplied: &'static str,
    },
    /// A durable run's journal could not record or replay a step (the durable-execution
    /// engine cancelled the run, for one); the run stopped there.
    #[error("the run's journal failed: {0}")]
    Journal(String),
}

/// A builder that cannot make an agent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No model was given.
    #[error("an agent needs a model: call `.model(..)` on the builder")]
    MissingModel,
    /// Two tools share a name, or a schema does not compile.
    #[error(transparent)]
    Tools(#[from] RegistryError),
    /// Two tools name one concurrency limit with different permits.
    #[error(transparent)]
    Concurrency(#[from] ConcurrencyConflict),
    /// A tool reads a context of another type than the agent's
    /// [`context_type`](super::AgentBuilder::context_type).
    #[error(
        "tool \"{tool}\" reads a context of type `{needs}`, and the agent's context type is `{supplied}`"
    )]
    ContextType {
        /// The tool's name.
        tool: String,
        /// The type its `Ctx<T>` reads.
        needs: &'static str,
        /// The agent's context type.
        supplied: &'static str,
    },
}
