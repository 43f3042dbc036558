//! The run machine: a run as data that says what it needs next.
//!
//! A [`RunState`] holds everything a run has decided so far: the transcript, where the
//! loop stands, the batch of tool calls in progress and the order of every event.
//! [`RunState::next`] returns the next [`Effect`]: the I/O the run needs (deliver an
//! event, ask the model, prepare or execute tool calls, ask the turn hook). It never does
//! I/O itself: a driver performs the effect and hands the answer back through the method
//! the effect names, then asks again, until [`Effect::Done`] (or [`Effect::Pause`], when a
//! call waits for a person's approval).
//!
//! [`Agent`](crate::agent::Agent) drives its runs with a driver in memory, and a durable run
//! (the `restate` feature) with a driver that makes each model response and each tool
//! execution a step of its workflow's journal; both drive this same state. Drive it
//! yourself to run the loop over your own I/O:
//!
//! ```
//! use std::sync::Arc;
//!
//! use pi_runtime::agent::machine::{BatchPlan, CallOutcome, Effect, Preflighted};
//! use pi_runtime::agent::{RunEnd, RunState, TurnControl};
//! use pi_runtime::{AssistantMessage, ContentBlock, Message, StopReason, ToolCall, ToolResult};
//! use serde_json::json;
//!
//! // A "model" that asks for the time once, then answers.
//! fn respond(transcript: &[Message]) -> AssistantMessage {
//!     let mut message = AssistantMessage::empty("my-api", "me", "clock-model");
//!     if transcript.iter().any(|m| m.as_tool_result().is_some()) {
//!         message.content.push(ContentBlock::text("It is noon."));
//!     } else {
//!         message.content.push(ContentBlock::ToolCall(ToolCall::new("c1", "clock", json!({}))));
//!         message.stop_reason = StopReason::ToolUse;
//!     }
//!     message
//! }
//!
//! let mut state = RunState::start(Vec::new(), "What time is it?");
//! let mut events = Vec::new();
//! let messages = loop {
//!     match state.next() {
//!         Effect::Emit => events.extend(state.take_event()),
//!         Effect::Declare => state.declare(&[]),
//!         Effect::PollSteering | Effect::PollFollowUps => state.queued(Vec::new()),
//!         Effect::Request => state.responded(Arc::new(respond(state.transcript()))),
//!         Effect::PlanBatch(_) => state.plan_batch(BatchPlan::new()),
//!         Effect::Preflight(call) => state.preflighted(call.index(), Preflighted::Ready { args: json!({}) }),
//!         Effect::Execute(calls) => {
//!             for call in calls {
//!                 state.executed(call.index(), CallOutcome::new(ToolResult::text("12:00")));
//!             }
//!         }
//!         Effect::FinishTurn => state.turn_finished(TurnControl::Proceed),
//!         Effect::Done(messages) => break messages,
//!         effect => unreachable!("{effect:?}"),
//!     }
//! };
//! assert_eq!(state.end(), Some(&RunEnd::Completed));
//! assert_eq!(messages.len(), 4); // the prompt, the call, its result, the answer
//! // The responses' own events (`message_start`, `message_end`) are the driver's to deliver.
//! let kinds: Vec<&str> = events.iter().map(|event| event.kind()).collect();
//! assert_eq!(kinds, [
//!     "agent_start", "turn_start", "message_start", "message_end", // the prompt
//!     "tool_execution_start", "tool_execution_end", "message_start", "message_end", // the call
//!     "turn_end", "turn_start", "turn_end", "agent_end",
//! ]);
//! ```

mod announce;
mod call;
pub(crate) mod held;
pub(crate) mod state;

pub use call::{BatchPlan, CallOutcome, CallRef, Preflighted};
pub use state::batch::ReadyCall;
pub(crate) use state::batch::{NestedResume, ToolNote};
pub(crate) use state::{RunState, StateLimits, deadline_after, instant_at};

use std::sync::Arc;

pub use crate::agent::failure::CallFailure;
use crate::message::{AssistantMessage, Message};

/// What a run needs next: the answer to [`RunState::next`]. Each effect names the method
/// that answers it; one that waits for an answer comes again until the answer arrives.
#[derive(Debug)]
#[non_exhaustive]
pub enum Effect {
    /// Deliver the event [`RunState::take_event`] gives, then ask again.
    Emit,
    /// Answer with [`RunState::declare`] and the tools the next request can execute.
    Declare,
    /// Answer with [`RunState::queued`] and the steering queue's messages (those to add
    /// before the next request).
    PollSteering,
    /// Answer with [`RunState::queued`] and the follow-up queue's messages (those that keep
    /// a finished run going).
    PollFollowUps,
    /// Ask the model about [`RunState::transcript`] and answer with
    /// [`RunState::responded`]; the response's own events (`message_start`, its updates,
    /// `message_end`) are the driver's to deliver.
    Request,
    /// This response calls tools: answer with [`RunState::plan_batch`], how its batch runs.
    PlanBatch(Arc<AssistantMessage>),
    /// Prepare this call (lookup, `prepare_arguments`, validation, `before_tool_call`, the
    /// approval policies) and answer with [`RunState::preflighted`]. Its
    /// `tool_execution_start` was delivered.
    Preflight(CallRef),
    /// Execute these prepared calls (at once, when there are several) and answer, as they
    /// go, with [`RunState::updated`] for each progress update and [`RunState::executed`]
    /// when a call ends, delivering the events each answer queues.
    Execute(Vec<ReadyCall>),
    /// Calls handed out by [`Effect::Execute`] are still running
    /// ([`RunState::running_calls`]): answer with their updates and ends.
    Wait,
    /// A call needs a person's approval: the run paused, and serializes only as a signed
    /// file ([`RunState::to_signed_json`]). [`RunState::decide`] (or
    /// [`Agent::resume_with`](crate::agent::Agent::resume_with)) goes on.
    Pause,
    /// Ask the `finish_turn` hook about [`RunState::finishing_turn`] and answer with
    /// [`RunState::turn_finished`].
    FinishTurn,
    /// The run ended; these are the messages it added.
    Done(Vec<Message>),
}
