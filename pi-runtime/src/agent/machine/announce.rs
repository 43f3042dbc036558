//! The outbox's notes: each names an event the run decided on, built from the state when
//! it is delivered, so an event is moved once.

/// An event waiting in the outbox.
#[derive(Debug, Clone)]
pub(super) enum Announce {
    AgentStart,
    TurnStart,
    /// `message_start` of the transcript's message at this index.
    MessageStart(usize),
    /// `message_end` of the transcript's message at this index.
    MessageEnd(usize),
    TurnEnd,
    AgentEnd,
    ApprovalRequested,
    /// `tool_execution_start` of the batch's call at this index.
    ToolStart(usize),
    /// `tool_execution_update` of the batch's call at this index, with the next partial
    /// result of `updates`.
    ToolUpdate(usize),
    /// `tool_execution_end` of the batch's call at this index.
    ToolEnd(usize),
    /// The next event of `nested`: a running call's sub-agent reported it.
    Nested,
}
