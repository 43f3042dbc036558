//! The agent loop (SPEC §5), the [`Agent`] and its builder, agent events and hooks.
//!
//! A run streams a model response, runs its batch of tool calls (sequentially or in
//! parallel), appends the results and asks the model again, until a response has no calls,
//! every result of a batch asks to terminate, a hook ends the run, or the run is aborted.
//! Everything that goes wrong inside a run (an unknown tool, invalid arguments, a failing
//! or panicking tool or hook) becomes a result the model sees; the run itself never fails.

mod batch;
mod builder;
mod call;
mod config;
mod error;
mod events;
mod handle;
mod hooks;
mod run;
mod sink;
mod state;

pub use builder::AgentBuilder;
pub use error::{AgentError, BuildError};
pub use events::AgentEvent;
pub use handle::{Agent, Prompt};
pub use hooks::{
    AfterToolCall, BeforeToolCall, FinishedTurn, RequestPlan, ToolCallDecision, ToolResultPatch,
    TurnControl,
};
pub use sink::{EventStream, SubscriptionId};
pub use state::{AgentState, QueueMode};
