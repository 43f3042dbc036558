//! One response's batch of tool calls inside the run state: where each call stands, and
//! the order its events and result messages come in, which pi guarantees:
//!
//! - a sequential batch without approvals prepares, executes, ends and answers each call
//!   before the next one starts;
//! - otherwise every call starts and is prepared in source order, a call that ends in its
//!   preflight ends there, a call that needs approval holds the whole batch, the ready calls
//!   execute (executed calls end in completion order), and the result messages follow in
//!   source order;
//! - a batch resumed after its pause ends its denied calls first, in source order;
//! - a response cut off by the output limit runs none of its calls.
//!
//! The batch only decides: the driver prepares and executes the calls it asks for
//! ([`Effect::Preflight`], [`Effect::Execute`]) and hands the answers back.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunState;
use crate::agent::approval::{ApprovalDecision, ApprovalError, PendingCall};
use crate::agent::failure::{self, CallFailure};
use crate::agent::machine::Effect;
use crate::agent::machine::announce::Announce;
use crate::agent::machine::call::{BatchPlan, CallOutcome, CallRecord, CallRef, Preflighted};
use crate::agent::machine::held::HeldCall;
use crate::message::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};

/// A call that passed its preflight and may execute, with the arguments it executes with
/// (prepared, validated, and as `before_tool_call` or an approval left them).
#[derive(Debug, Clone)]
pub struct ReadyCall {
    pub(crate) call: CallRef,
    pub(crate) args: Value,
    /// For a call whose sub-agent paused for approval, its state and the decisions about
    /// its pending calls: the call goes on from there instead of starting over.
    pub(crate) resume: Option<Box<NestedResume>>,
}

impl ReadyCall {
    /// The call's place in its batch.
    pub fn index(&self) -> usize {
        self.call.index()
    }

    /// The call.
    pub fn call(&self) -> &CallRef {
        &self.call
    }

    /// The arguments to execute it with.
    pub fn args(&self) -> &Value {
        &self.args
    }
}

/// A sub-agent's run, paused for approval inside a call of the batch: the call waits with
/// the batch (see [`subagent`](crate::agent::subagent)).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NestedPause {
    /// The sub-agent's pending calls, their paths starting at the call that runs it.
    pub(crate) pending: Vec<PendingCall>,
    /// The sub-agent's paused state, signed with the run state that holds it.
    #[serde(with = "super::boxed")]
    pub(crate) state: Box<RunState>,
}

/// A sub-agent's paused run and the decisions about its pending calls, their paths
/// starting inside the sub-agent: what its call resumes with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NestedResume {
    #[serde(with = "super::boxed")]
    pub(crate) state: Box<RunState>,
    pub(crate) decisions: Vec<ApprovalDecision>,
}

/// Where one call of the batch stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum Slot {
    /// Not started.
    Waiting,
    /// Started; its preflight is asked for.
    Preflighting,
    /// Prepared: it executes with these arguments.
    Ready { args: serde_json::Value },
    /// Prepared, waiting for a person's decision.
    Pending { pending: PendingCall },
    /// A person denied it; its end comes first when the batch goes on.
    Denied { reason: String },
    /// Handed to the driver to execute.
    Running,
    /// Ended: its `tool_execution_end` is delivered or queued.
    Ended { outcome: CallOutcome },
    /// Its sub-agent paused for approval: the call waits, and the batch pauses once nothing
    /// else can go on.
    Suspended { pause: NestedPause },
    /// Its sub-agent's pending calls are decided: it runs again from its pause.
    Resuming { resume: NestedResume },
    /// Its result message is in the transcript.
    Answered,
}

/// A response's batch in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Batch {
    response: Arc<AssistantMessage>,
    /// Where each call sits in the response's content.
    blocks: Vec<usize>,
    /// How the batch runs, once the driver said.
    plan: Option<BatchPlan>,
    slots: Vec<Slot>,
    /// The batch goes on after a pause: its calls started and were prepared before it.
    resumed: bool,
    /// The result messages added so far, and what each does not say.
    results: Vec<Arc<ToolResultMessage>>,
    records: Vec<CallRecord>,
    /// Where the batch stands, so that each step looks at one call, not all of them: every
    /// call before `preflight_cursor` is past its preflight, every call before
    /// `execute_cursor` was considered for execution.
    #[serde(default)]
    preflight_cursor: usize,
    #[serde(default)]
    execute_cursor: usize,
    /// Calls waiting for a decision, and calls running.
    #[serde(default)]
    pending: usize,
    #[serde(default)]
    running: usize,
    /// The denied calls of a resumed batch have ended.
    #[serde(default)]
    denied_ended: bool,
}

/// What the batch needs next.
pub(super) enum Step {
    /// Ask the driver.
    Effect(Effect),
    /// Events are queued: deliver them, then step again.
    Emit,
    /// A call needs approval: the batch holds, as these calls.
    Hold(Vec<HeldCall>),
    /// Calls' sub-agents paused for approval, and nothing else can go on: the run pauses
    /// inside the batch.
    Suspend,
    /// Every call is answered.
    Finished(Finished),
}

/// A finished batch: its result messages in source order (already in the transcript), what
/// each does not say, and whether every call asked to end the run.
pub(super) struct Finished {
    pub(super) response: Arc<AssistantMessage>,
    pub(super) results: Vec<Arc<ToolResultMessage>>,
    pub(super) records: Vec<CallRecord>,
    pub(super) terminate: bool,
    /// The retry budgets of the batch's tools.
    pub(super) plan: BatchPlan,
}

/// What the driver should know about the next event to deliver: a tool call's span starts
/// with its `tool_execution_start` and records its outcome with its `tool_execution_end`.
pub(crate) enum ToolNote<'a> {
    Start(usize, &'a ToolCall),
    End(usize, &'a ToolCall, &'a CallOutcome),
}

impl Batch {
    /// The batch of `response`, none of its calls started.
    pub(super) fn new(response: Arc<AssistantMessage>) -> Self {
        let blocks: Vec<usize> = (response.content.iter().enumerate())
            .filter(|(_, block)| block.as_tool_call().is_some())
            .map(|(at, _)| at)
            .collect();
        let slots = vec![Slot::Waiting; blocks.len()];
        Batch {
            results: Vec::with_capacity(blocks.len()),
            records: Vec::with_capacity(blocks.len()),
            response,
            blocks,
            plan: None,
            slots,
            resumed: false,
            preflight_cursor: 0,
            execute_cursor: 0,
            pending: 0,
            running: 0,
            denied_ended: false,
        }
    }

    /// The batch of `response` going on after its pause, its calls as decided.
    pub(super) fn resumed(response: Arc<AssistantMessage>, calls: Vec<HeldCall>) -> Self {
        let mut batch = Batch::new(response);
        batch.resumed = true;
        for (slot, held) in batch.slots.iter_mut().zip(calls) {
            *slot = match held {
                HeldCall::Settled { result, failure } => Slot::Ended {
                    outcome: CallOutcome {
                        result,
                        failure,
                        duration_ms: None,
                    },
                },
                HeldCall::Ready { args } => Slot::Ready { args },
                HeldCall::Denied { reason } => Slot::Denied { reason },
                // Deciding leaves no call pending; one that still is was not approved.
                HeldCall::Pending { pending, .. } => Slot::Denied {
                    reason: pending.reason,
                },
            };
        }
        batch
    }

    pub(super) fn response(&self) -> &Arc<AssistantMessage> {
        &self.response
    }

    fn call_ref(&self, index: usize) -> CallRef {
        CallRef::new(Arc::clone(&self.response), index, self.blocks[index])
    }

    pub(super) fn call(&self, index: usize) -> &ToolCall {
        self.response.content[self.blocks[index]]
            .as_tool_call()
            .unwrap_or_else(|| unreachable!("blocks point at tool calls"))
    }

    /// The outcome of a call that ended (for its `tool_execution_end`).
    pub(super) fn outcome(&self, index: usize) -> Option<&CallOutcome> {
        match self.slots.get(index) {
            Some(Slot::Ended { outcome }) => Some(outcome),
            _ => None,
        }
    }

    pub(super) fn note(&self, announce: &Announce) -> Option<ToolNote<'_>> {
        match *announce {
            Announce::ToolStart(index) => Some(ToolNote::Start(index, self.call(index))),
            Announce::ToolEnd(index) => {
                Some(ToolNote::End(index, self.call(index), self.outcome(index)?))
            }
            _ => None,
        }
    }

    /// The plan the driver gave.
    pub(super) fn planned(&mut self, plan: BatchPlan) {
        self.plan = Some(plan);
    }

    /// What the batch needs next; called only once the outbox is empty.
    pub(super) fn step(
        &mut self,
        messages: &mut Vec<Message>,
        outbox: &mut VecDeque<Announce>,
    ) -> Step {
        let Some(plan) = &self.plan else {
            return Step::Effect(Effect::PlanBatch(Arc::clone(&self.response)));
        };
        if self.response.stop_reason == StopReason::Length {
            return self.truncated_step(messages, outbox);
        }
        if plan.interleaved() && !self.resumed {
            self.interleaved_step(messages, outbox)
        } else {
            self.phased_step(messages, outbox)
        }
    }

    /// A `length` response: each call starts and ends with the truncation error, then
    /// gets its result message, one after the other.
    fn truncated_step(
        &mut self,
        messages: &mut Vec<Message>,
        outbox: &mut VecDeque<Announce>,
    ) -> Step {
        let Some(index) = self.first_unanswered() else {
            return Step::Finished(self.finish());
        };
        if matches!(self.slots[index], Slot::Ended { .. }) {
            self.answer(index, messages, outbox);
        } else {
            let text = failure::truncated(&self.call(index).name);
            outbox.push_back(Announce::ToolStart(index));
            self.end(
                index,
                CallOutcome::failed(CallFailure::Validation, text),
                outbox,
            );
        }
        Step::Emit
    }

    /// One call after the other: start, preflight, execute, end, result.
    fn interleaved_step(
        &mut self,
        messages: &mut Vec<Message>,
        outbox: &mut VecDeque<Announce>,
    ) -> Step {
        let Some(index) = self.first_unanswered() else {
            return Step::Finished(self.finish());
        };
        match &mut self.slots[index] {
            Slot::Waiting => self.start(index, outbox),
            Slot::Preflighting => Step::Effect(Effect::Preflight(self.call_ref(index))),
            Slot::Ready { .. } | Slot::Resuming { .. } => {
                Step::Effect(Effect::Execute(vec![self.run(index)]))
            }
            Slot::Running => Step::Effect(Effect::Wait),
            Slot::Suspended { .. } => Step::Suspend,
            Slot::Ended { .. } => {
                self.answer(index, messages, outbox);
                Step::Emit
            }
            // An interleaved batch has no approvals: `preflighted` refuses what needs one.
            Slot::Pending { .. } | Slot::Denied { .. } | Slot::Answered => {
                unreachable!("not in an interleaved batch")
            }
        }
    }

    /// Every call prepared first, then the pause or the executions, then the results.
    fn phased_step(
        &mut self,
        messages: &mut Vec<Message>,
        outbox: &mut VecDeque<Announce>,
    ) -> Step {
        // Preflight, in source order.
        while let Some(slot) = self.slots.get(self.preflight_cursor) {
            match slot {
                Slot::Waiting => return self.start(self.preflight_cursor, outbox),
                Slot::Preflighting => {
                    return Step::Effect(Effect::Preflight(self.call_ref(self.preflight_cursor)));
                }
                _ => self.preflight_cursor += 1,
            }
        }
        if self.pending > 0 {
            return Step::Hold(self.held());
        }
        // Denied calls end first, in source order.
        if !self.denied_ended {
            self.denied_ended = true;
            let mut denied = false;
            for index in 0..self.slots.len() {
                if let Slot::Denied { reason } = &self.slots[index] {
                    let text = failure::denied(reason);
                    self.end(
                        index,
                        CallOutcome::failed(CallFailure::Denied, text),
                        outbox,
                    );
                    denied = true;
                }
            }
            if denied {
                return Step::Emit;
            }
        }
        let sequential = self.plan.as_ref().is_some_and(|plan| plan.sequential);
        if sequential && self.running > 0 {
            return Step::Effect(Effect::Wait);
        }
        let mut calls = Vec::new();
        while self.execute_cursor < self.slots.len() {
            let index = self.execute_cursor;
            self.execute_cursor += 1;
            if matches!(
                self.slots[index],
                Slot::Ready { .. } | Slot::Resuming { .. }
            ) {
                calls.push(self.run(index));
                if sequential {
                    break;
                }
            }
        }
        if !calls.is_empty() {
            return Step::Effect(Effect::Execute(calls));
        }
        if self.running > 0 {
            return Step::Effect(Effect::Wait);
        }
        if self
            .slots
            .iter()
            .any(|slot| matches!(slot, Slot::Suspended { .. }))
        {
            return Step::Suspend;
        }
        // Every call ended: the result messages, in source order.
        for index in 0..self.slots.len() {
            if matches!(self.slots[index], Slot::Ended { .. }) {
                self.answer(index, messages, outbox);
            }
        }
        Step::Finished(self.finish())
    }

    /// Announce the call's start; its preflight is asked for next.
    fn start(&mut self, index: usize, outbox: &mut VecDeque<Announce>) -> Step {
        outbox.push_back(Announce::ToolStart(index));
        self.slots[index] = Slot::Preflighting;
        Step::Emit
    }

    /// Hand a ready call (or one resuming its sub-agent) to the driver.
    fn run(&mut self, index: usize) -> ReadyCall {
        let (args, resume) = match std::mem::replace(&mut self.slots[index], Slot::Running) {
            Slot::Ready { args } => (args, None),
            // The call goes on from its sub-agent's pause; its tool takes the arguments the
            // model sent, and the sub-agent ignores them.
            Slot::Resuming { resume } => {
                (self.call(index).arguments.clone(), Some(Box::new(resume)))
            }
            _ => unreachable!("only ready calls run"),
        };
        self.running += 1;
        ReadyCall {
            call: self.call_ref(index),
            args,
            resume,
        }
    }

    fn end(&mut self, index: usize, outcome: CallOutcome, outbox: &mut VecDeque<Announce>) {
        self.slots[index] = Slot::Ended { outcome };
        outbox.push_back(Announce::ToolEnd(index));
    }

    /// Add the result message of an ended call (its end delivered: the outbox was empty).
    fn answer(
        &mut self,
        index: usize,
        messages: &mut Vec<Message>,
        outbox: &mut VecDeque<Announce>,
    ) {
        let Slot::Ended { outcome } = std::mem::replace(&mut self.slots[index], Slot::Answered)
        else {
            unreachable!("only ended calls are answered")
        };
        self.records.push(CallRecord {
            terminate: outcome.result.terminate,
            failure: outcome.failure,
        });
        let message = Arc::new(outcome.into_message(self.call(index)));
        let at = messages.len();
        messages.push(Arc::clone(&message).into());
        self.results.push(message);
        outbox.push_back(Announce::MessageStart(at));
        outbox.push_back(Announce::MessageEnd(at));
    }

    /// The first call without a result message, in the batches that answer in source
    /// order as they go.
    fn first_unanswered(&self) -> Option<usize> {
        let index = self.results.len();
        (index < self.slots.len()).then_some(index)
    }

    fn finish(&mut self) -> Finished {
        let terminate =
            !self.records.is_empty() && self.records.iter().all(|record| record.terminate);
        Finished {
            response: Arc::clone(&self.response),
            results: std::mem::take(&mut self.results),
            records: std::mem::take(&mut self.records),
            terminate,
            plan: self.plan.take().unwrap_or_default(),
        }
    }

    /// The batch as the run state keeps it across the pause.
    fn held(&self) -> Vec<HeldCall> {
        (self.slots.iter())
            .map(|slot| match slot {
                Slot::Ended { outcome } => HeldCall::Settled {
                    result: outcome.result.clone(),
                    failure: outcome.failure,
                },
                Slot::Ready { args } => HeldCall::Ready { args: args.clone() },
                Slot::Pending { pending } => HeldCall::pending(pending.clone()),
                Slot::Denied { reason } => HeldCall::Denied {
                    reason: reason.clone(),
                },
                Slot::Waiting
                | Slot::Preflighting
                | Slot::Running
                | Slot::Answered
                | Slot::Suspended { .. }
                | Slot::Resuming { .. } => {
                    unreachable!("a batch holds only after every preflight, before executing")
                }
            })
            .collect()
    }

    /// The preflight of call `index` came to `preflighted`.
    pub(super) fn preflighted(
        &mut self,
        index: usize,
        preflighted: Preflighted,
        outbox: &mut VecDeque<Announce>,
    ) {
        if !matches!(self.slots.get(index), Some(Slot::Preflighting)) {
            debug_assert!(false, "no preflight of call {index} was asked for");
            return;
        }
        match preflighted {
            Preflighted::Ended(outcome) => self.end(index, outcome, outbox),
            Preflighted::Ready { args } => self.slots[index] = Slot::Ready { args },
            Preflighted::NeedsApproval { args, reason } => {
                let approvals = self.plan.as_ref().is_some_and(|plan| plan.approvals);
                if approvals {
                    let pending = PendingCall::new(self.call(index), args, reason);
                    self.slots[index] = Slot::Pending { pending };
                    self.pending += 1;
                } else {
                    // The plan said no call needs approval: fail closed all the same.
                    let text = failure::approval_unavailable(&self.call(index).name, &reason);
                    self.end(
                        index,
                        CallOutcome::failed(CallFailure::Denied, text),
                        outbox,
                    );
                }
            }
        }
    }

    /// A running call sent a progress update.
    pub(super) fn updated(&self, index: usize) -> bool {
        matches!(self.slots.get(index), Some(Slot::Running))
    }

    /// A running call ended.
    pub(super) fn executed(
        &mut self,
        index: usize,
        outcome: CallOutcome,
        outbox: &mut VecDeque<Announce>,
    ) {
        if !matches!(self.slots.get(index), Some(Slot::Running)) {
            debug_assert!(false, "call {index} is not running");
            return;
        }
        self.running -= 1;
        self.end(index, outcome, outbox);
    }

    /// The running call `index` returned after its sub-agent paused with `pause`: it has
    /// not ended, it waits with the batch (what its tool returned is not the call's).
    pub(super) fn suspended(&mut self, index: usize, pause: NestedPause) {
        if !matches!(self.slots.get(index), Some(Slot::Running)) {
            debug_assert!(false, "call {index} is not running");
            return;
        }
        self.running -= 1;
        self.slots[index] = Slot::Suspended { pause };
    }

    /// The pending calls of the suspended calls' sub-agents, in source order.
    pub(super) fn nested_pending(&self) -> impl Iterator<Item = &PendingCall> {
        self.slots.iter().flat_map(|slot| match slot {
            Slot::Suspended { pause } => pause.pending.as_slice(),
            _ => &[],
        })
    }

    /// Check the decisions about the suspended calls' pending calls (one per pending call,
    /// each naming its path) and sort them by call: for each suspended call, its index and
    /// the decisions as its sub-agent takes them.
    ///
    /// # Errors
    /// A decision names no pending call, or names one twice, or a pending call has none.
    pub(super) fn decide_nested(
        &self,
        decisions: Vec<ApprovalDecision>,
    ) -> Result<Vec<(usize, Vec<ApprovalDecision>)>, ApprovalError> {
        let mut seen: HashSet<&str> = HashSet::with_capacity(decisions.len());
        let mut by_call: Vec<(usize, Vec<ApprovalDecision>)> = Vec::new();
        for decision in &decisions {
            let path = decision.call_id();
            if !self.nested_pending().any(|pending| pending.path() == path) {
                return Err(ApprovalError::UnknownCall {
                    id: path.to_owned(),
                });
            }
            if !seen.insert(path) {
                return Err(ApprovalError::DuplicateDecision {
                    id: path.to_owned(),
                });
            }
        }
        if let Some(missing) = self.nested_pending().find(|p| !seen.contains(p.path())) {
            return Err(ApprovalError::MissingDecision {
                id: missing.path().to_owned(),
            });
        }
        for (index, slot) in self.slots.iter().enumerate() {
            if matches!(slot, Slot::Suspended { .. }) {
                let id = &self.call(index).id;
                let below = (decisions.iter())
                    .filter_map(ApprovalDecision::split_path)
                    .filter(|(head, _)| head == id)
                    .map(|(_, decision)| decision)
                    .collect();
                by_call.push((index, below));
            }
        }
        Ok(by_call)
    }

    /// Go on after the pause with the decisions [`decide_nested`](Self::decide_nested)
    /// sorted: each suspended call resumes its sub-agent with them.
    pub(super) fn resume_nested(&mut self, decided: Vec<(usize, Vec<ApprovalDecision>)>) {
        for (index, decisions) in decided {
            let slot = std::mem::replace(&mut self.slots[index], Slot::Running);
            let Slot::Suspended { pause } = slot else {
                self.slots[index] = slot;
                debug_assert!(false, "call {index} is not suspended");
                continue;
            };
            self.slots[index] = Slot::Resuming {
                resume: NestedResume {
                    state: pause.state,
                    decisions,
                },
            };
        }
        // The resuming calls sit before the cursor: look at every call again.
        self.execute_cursor = 0;
    }

    /// The calls handed out to execute that have not ended.
    pub(super) fn running(&self) -> impl Iterator<Item = CallRef> + '_ {
        (self.slots.iter().enumerate())
            .filter(|(_, slot)| matches!(slot, Slot::Running))
            .map(|(index, _)| self.call_ref(index))
    }
}
