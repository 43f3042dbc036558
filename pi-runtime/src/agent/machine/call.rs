//! The values a driver and the run state hand each other about tool calls: which call an
//! effect means, what its preflight came to, how it ended, and how a batch runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::failure::CallFailure;
use crate::message::{AssistantMessage, ToolCall, ToolResultMessage, now_ms};
use crate::tool::ToolResult;

/// One tool call of the response whose batch runs: its place in the batch and the call.
#[derive(Debug, Clone)]
pub struct CallRef {
    response: Arc<AssistantMessage>,
    index: usize,
    /// Where the call sits in the response's content.
    block: usize,
}

impl CallRef {
    pub(super) fn new(response: Arc<AssistantMessage>, index: usize, block: usize) -> Self {
        debug_assert!(response.content[block].as_tool_call().is_some());
        CallRef {
            response,
            index,
            block,
        }
    }

    /// The call's place in its batch (the response's tool calls, from 0, in source order).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The call, as the model wrote it.
    pub fn call(&self) -> &ToolCall {
        self.response.content[self.block]
            .as_tool_call()
            .unwrap_or_else(|| unreachable!("a CallRef points at a tool call"))
    }

    /// The response the call belongs to.
    pub fn response(&self) -> &Arc<AssistantMessage> {
        &self.response
    }
}

/// What a call's preflight (lookup, `prepare_arguments`, validation, `before_tool_call`,
/// the approval policies) came to: the answer to [`Effect::Preflight`](super::Effect::Preflight).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Preflighted {
    /// The call ended without executing (unknown tool, invalid arguments, blocked, stopped).
    Ended(CallOutcome),
    /// It may execute with these arguments.
    Ready { args: Value },
    /// It may execute with these arguments once a person approves it, for this reason.
    NeedsApproval { args: Value, reason: String },
}

/// How a call ended: the result the model sees (`result.is_error` is the call's error
/// flag), why it failed, and how long `execute` took, when it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    pub(crate) result: ToolResult,
    pub(crate) failure: Option<CallFailure>,
    pub(crate) duration_ms: Option<u64>,
}

impl CallOutcome {
    /// A call that ran and produced `result` (an error result without a failure kind is the
    /// tool's own answer).
    pub fn new(result: ToolResult) -> Self {
        CallOutcome {
            result,
            failure: None,
            duration_ms: None,
        }
    }

    /// A call that failed this way, with the text the model reads.
    pub fn failed(failure: CallFailure, message: impl Into<String>) -> Self {
        CallOutcome {
            result: ToolResult::error(message),
            failure: Some(failure),
            duration_ms: None,
        }
    }

    /// How long the call's `execute` took.
    #[must_use]
    pub fn with_duration_ms(mut self, duration_ms: u64) -> Self {
        self.duration_ms = Some(duration_ms);
        self
    }

    /// The result the model sees.
    pub fn result(&self) -> &ToolResult {
        &self.result
    }

    /// Why the call failed, if it did.
    pub fn failure(&self) -> Option<CallFailure> {
        self.failure
    }

    /// The transcript message of this outcome.
    pub(crate) fn into_message(self, call: &ToolCall) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: self.result.content,
            details: self.result.details,
            usage: self.result.usage,
            is_error: self.result.is_error,
            duration_ms: self.duration_ms,
            timestamp: now_ms(),
        }
    }
}

/// How a response's batch runs: the answer to [`Effect::PlanBatch`](super::Effect::PlanBatch).
///
/// A sequential batch without approvals prepares and executes each call before the next
/// starts (its result message included). Otherwise every call is prepared first, in source
/// order; a call that needs approval then pauses the run, and else the ready calls execute
/// (one at a time when sequential, all at once when not) and the result messages follow in
/// source order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchPlan {
    pub(crate) sequential: bool,
    pub(crate) approvals: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) retry_budgets: BTreeMap<String, u32>,
}

impl BatchPlan {
    /// A parallel batch in which no call may need approval, with no retry budgets.
    pub fn new() -> Self {
        BatchPlan::default()
    }

    /// One call at a time.
    #[must_use]
    pub fn sequential(mut self, sequential: bool) -> Self {
        self.sequential = sequential;
        self
    }

    /// Some call may need approval: prepare every call before any executes.
    #[must_use]
    pub fn approvals(mut self, approvals: bool) -> Self {
        self.approvals = approvals;
        self
    }

    /// `tool` may fail (in a way the model can correct) `retries` times in the run; one
    /// more ends the run after this turn with
    /// [`RunEnd::RetriesExhausted`](crate::agent::RunEnd::RetriesExhausted).
    #[must_use]
    pub fn retry_budget(mut self, tool: impl Into<String>, retries: u32) -> Self {
        self.retry_budgets.insert(tool.into(), retries);
        self
    }

    /// Prepare each call right before it executes.
    pub(super) fn interleaved(&self) -> bool {
        self.sequential && !self.approvals
    }
}

/// What a result message does not carry: whether the call asked to end the run, and how it
/// failed. Records go with the result messages they describe, in the same order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallRecord {
    pub(crate) terminate: bool,
    pub(crate) failure: Option<CallFailure>,
}
