//! One batch of tool calls: sequential, parallel in three phases (preflight in source order,
//! then execution concurrently, then the result messages), held after its preflight for
//! approval and resumed from there, or refused because the response was cut off. Emits the tool events and the result messages in the orders pi guarantees:
//! starts and result messages in source order; in parallel mode a call that ends before
//! `execute` ends during the preflight, and executed calls end in completion order.

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tracing::{Instrument, Span};

use super::call::{self, CallScope, Held, Outcome, Preflight, Ready};
use super::held::{self, HeldCall};
use super::policy::acquire;
use crate::agent::AgentEvent;
use crate::agent::approval::PendingCall;
use crate::agent::failure::{self, CallFailure};
use crate::agent::journal::{Journal, JournalError, Work};
use crate::agent::sink::Bus;
use crate::agent::telemetry;
use crate::message::{AssistantMessage, StopReason, ToolCall, ToolResultMessage};
use crate::tool::ToolResult;

/// What a result message does not carry: whether the call asked to end the run, and how it
/// failed. Records go with the result messages they describe, in the same order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallRecord {
    pub(crate) terminate: bool,
    pub(crate) failure: Option<CallFailure>,
}

/// The results of a batch, in source order, what each result message does not say, and
/// whether the run should stop after it.
#[derive(Debug)]
pub(crate) struct BatchOutcome {
    pub(crate) results: Vec<Arc<ToolResultMessage>>,
    pub(crate) records: Vec<CallRecord>,
    pub(crate) terminate: bool,
}

/// What a batch came to: its results, or a pause because calls need approval.
#[derive(Debug)]
pub(crate) enum BatchRun {
    Finished(BatchOutcome),
    /// Nothing executed; one entry per call, in source order.
    Held(Vec<HeldCall>),
}

/// Run every call of `scope.assistant`: one after the other when `sequential`. When
/// `approvals` (a policy may ask about a call), every call is prepared before any executes,
/// and a call that needs approval holds the whole batch.
pub(super) async fn run(
    scope: Arc<CallScope>,
    sequential: bool,
    approvals: bool,
    bus: &Bus,
    journal: Option<&dyn Journal>,
) -> BatchRun {
    let Some(assistant) = scope.assistant.clone() else {
        return BatchRun::Finished(outcome(Vec::new()));
    };
    let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
    let finished = if assistant.stop_reason == StopReason::Length {
        truncated(&calls, &scope, bus).await
    } else if sequential && !approvals {
        sequential_calls(&calls, &scope, bus, journal).await
    } else {
        let prepared = preflight(&calls, &scope, bus).await;
        if prepared
            .slots
            .iter()
            .any(|slot| matches!(slot, Slot::Held(_)))
        {
            return BatchRun::Held(prepared.hold(&calls));
        }
        complete(
            prepared, &calls, &assistant, &scope, sequential, bus, journal,
        )
        .await
    };
    BatchRun::Finished(outcome(finished))
}

/// Go on with a batch held for approval, once [`decide`](super::held::decide) resolved its
/// calls: denied calls end first, in source order, then the ready ones execute as the
/// batch would have, and every result message follows in source order.
pub(super) async fn resume(
    scope: Arc<CallScope>,
    held: Vec<HeldCall>,
    sequential: bool,
    bus: &Bus,
    journal: Option<&dyn Journal>,
) -> BatchOutcome {
    let Some(assistant) = scope.assistant.clone() else {
        return outcome(Vec::new());
    };
    let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
    let mut prepared = Prepared {
        slots: Vec::with_capacity(calls.len()),
        spans: Vec::with_capacity(calls.len()),
    };
    for (call, held) in calls.iter().zip(held) {
        // The span of the preflight ended with the paused run; this one covers the rest.
        let span = telemetry::tool_span(call, scope.capture_content);
        let slot = match held {
            HeldCall::Settled { result, failure } => Slot::Done(held::settled(result, failure)),
            HeldCall::Ready { args } => match scope.tools.get(&call.name) {
                Some(registration) => Slot::Ready(Ready {
                    registration: registration.clone(),
                    args,
                }),
                None => {
                    let text = failure::not_found(&call.name);
                    let outcome = Outcome::failed(CallFailure::NotFound, text);
                    emit_end(call, &outcome, &span, &scope, bus).await;
                    Slot::Done(outcome)
                }
            },
            // `decide` leaves no call pending; one that still is was not approved.
            HeldCall::Denied { reason }
            | HeldCall::Pending {
                pending: PendingCall { reason, .. },
                ..
            } => {
                let outcome = Outcome::failed(CallFailure::Denied, failure::denied(&reason));
                emit_end(call, &outcome, &span, &scope, bus).await;
                Slot::Done(outcome)
            }
        };
        prepared.slots.push(slot);
        prepared.spans.push(span);
    }
    let completed = complete(
        prepared, &calls, &assistant, &scope, sequential, bus, journal,
    );
    outcome(completed.await)
}

fn outcome(outcomes: Vec<Finished>) -> BatchOutcome {
    let terminate = !outcomes.is_empty() && outcomes.iter().all(|(_, record)| record.terminate);
    let records = outcomes.iter().map(|(_, record)| *record).collect();
    // Collected in place, into the allocation of `outcomes`.
    let results = outcomes.into_iter().map(|(message, _)| message).collect();
    BatchOutcome {
        results,
        records,
        terminate,
    }
}

type Finished = (Arc<ToolResultMessage>, CallRecord);

/// A `length` response: no call runs; each gets the truncation error.
async fn truncated(calls: &[&ToolCall], scope: &CallScope, bus: &Bus) -> Vec<Finished> {
    let mut finished = Vec::with_capacity(calls.len());
    for call in calls {
        let span = emit_start(call, scope, bus).await;
        let outcome = Outcome::failed(CallFailure::Validation, failure::truncated(&call.name));
        emit_end(call, &outcome, &span, scope, bus).await;
        finished.push(emit_result(call, outcome, bus).await);
    }
    finished
}

/// Prepare each call just before executing it (pi's sequential mode).
async fn sequential_calls(
    calls: &[&ToolCall],
    scope: &Arc<CallScope>,
    bus: &Bus,
    journal: Option<&dyn Journal>,
) -> Vec<Finished> {
    let mut finished = Vec::with_capacity(calls.len());
    for call in calls {
        let span = emit_start(call, scope, bus).await;
        let prepared = call::prepare(call, scope).instrument(span.clone()).await;
        let outcome = match prepared {
            Preflight::Immediate(outcome) => outcome,
            // Only a batch without approval policies gets here; fail closed all the same.
            Preflight::Held(held) => held.refused(call),
            Preflight::Ready(ready) => {
                execute_here(ready, call, scope, bus, journal)
                    .instrument(span.clone())
                    .await
            }
        };
        emit_end(call, &outcome, &span, scope, bus).await;
        finished.push(emit_result(call, outcome, bus).await);
    }
    finished
}

/// One call after preflight.
enum Slot {
    /// Ended (its `tool_execution_end` was emitted).
    Done(Outcome),
    Ready(Ready),
    Held(Held),
}

/// A batch after preflight: a slot and a span per call, in source order.
struct Prepared {
    slots: Vec<Slot>,
    spans: Vec<Span>,
}

impl Prepared {
    /// The batch as the run state keeps it across the pause.
    fn hold(self, calls: &[&ToolCall]) -> Vec<HeldCall> {
        (self.slots.into_iter().zip(calls))
            .map(|(slot, call)| match slot {
                Slot::Done(outcome) => HeldCall::Settled {
                    result: outcome.result,
                    failure: outcome.failure,
                },
                Slot::Ready(ready) => HeldCall::Ready { args: ready.args },
                Slot::Held(Held { ready, reason }) => {
                    HeldCall::pending(PendingCall::new(call, ready.args, reason))
                }
            })
            .collect()
    }
}

/// Phase 1: preflight in source order; immediate outcomes end right away.
async fn preflight(calls: &[&ToolCall], scope: &Arc<CallScope>, bus: &Bus) -> Prepared {
    let mut prepared = Prepared {
        slots: Vec::with_capacity(calls.len()),
        spans: Vec::with_capacity(calls.len()),
    };
    for call in calls {
        let span = emit_start(call, scope, bus).await;
        let slot = match call::prepare(call, scope).instrument(span.clone()).await {
            Preflight::Immediate(outcome) => {
                emit_end(call, &outcome, &span, scope, bus).await;
                Slot::Done(outcome)
            }
            Preflight::Ready(job) => Slot::Ready(job),
            Preflight::Held(held) => Slot::Held(held),
        };
        prepared.slots.push(slot);
        prepared.spans.push(span);
    }
    prepared
}

/// Phases 2 and 3: execute the ready calls (one at a time in source order when
/// `sequential`, else concurrently, each ending when it finishes), then the result messages
/// in source order.
async fn complete(
    prepared: Prepared,
    calls: &[&ToolCall],
    assistant: &Arc<AssistantMessage>,
    scope: &Arc<CallScope>,
    sequential: bool,
    bus: &Bus,
    journal: Option<&dyn Journal>,
) -> Vec<Finished> {
    let Prepared { slots, spans } = prepared;
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(calls.len());
    let mut ready = Vec::new();
    for (index, slot) in slots.into_iter().enumerate() {
        outcomes.push(match slot {
            Slot::Done(outcome) => Some(outcome),
            Slot::Ready(job) => {
                ready.push((index, job));
                None
            }
            // Held calls never reach this phase; fail closed all the same.
            Slot::Held(held) => {
                let outcome = held.refused(calls[index]);
                emit_end(calls[index], &outcome, &spans[index], scope, bus).await;
                Some(outcome)
            }
        });
    }

    if sequential || ready.len() == 1 {
        // Nothing to overlap with (or nothing may overlap): running here saves a task spawn
        // and gives the same events.
        for (index, job) in ready {
            let span = &spans[index];
            let outcome = execute_here(job, calls[index], scope, bus, journal)
                .instrument(span.clone())
                .await;
            emit_end(calls[index], &outcome, span, scope, bus).await;
            outcomes[index] = Some(outcome);
        }
    } else if let Some(journal) = journal {
        let jobs = JournaledJobs {
            journal,
            calls,
            assistant,
            spans: &spans,
        };
        jobs.run(ready, scope, bus, &mut outcomes).await;
    } else if !ready.is_empty() {
        run_jobs(ready, calls, assistant, &spans, scope, bus, &mut outcomes).await;
    }

    let mut finished = Vec::with_capacity(calls.len());
    for (call, outcome) in calls.iter().zip(outcomes) {
        let outcome = outcome
            .unwrap_or_else(|| Outcome::failed(CallFailure::Panic, "the tool task ended early"));
        finished.push(emit_result(call, outcome, bus).await);
    }
    finished
}

/// How long a call may take to get going (its first poll) before the next call of the
/// batch starts anyway.
const START_GRACE: Duration = Duration::from_millis(10);

/// What a spawned job reports back to the loop, which alone emits events.
enum JobReport {
    Update(usize, ToolResult),
    Done(usize, Outcome),
}

/// Run every prepared call concurrently and emit their updates and ends as they arrive:
/// end events follow completion order. On a multi-thread runtime each call is a task of its
/// own, so CPU-bound tools really run in parallel; elsewhere the calls are futures of the
/// loop's own task, which gives the same concurrency without a task per call.
///
/// The calls start in source order, as in pi: each job runs its first poll only after the
/// previous job's first poll returned (or after [`START_GRACE`], so a call that computes
/// for a long time before its first `.await` does not hold the others back). Calls that
/// finish without waiting therefore finish in source order, and "the first call to start"
/// is always the first in the batch, however the runtime schedules the tasks.
async fn run_jobs(
    ready: Vec<(usize, Ready)>,
    calls: &[&ToolCall],
    assistant: &Arc<AssistantMessage>,
    spans: &[Span],
    scope: &Arc<CallScope>,
    bus: &Bus,
    outcomes: &mut [Option<Outcome>],
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut jobs = Jobs::for_this_runtime();
    // The agent's cap on calls of one batch running at once; tokio's semaphore is fair, so
    // waiting calls start in source order.
    let batch_permits = (scope.policies.batch_concurrency).map(|max| Arc::new(Semaphore::new(max)));
    let mut previous_started: Option<oneshot::Receiver<()>> = None;
    // A job finds its call in the shared assistant message rather than in a copy.
    let blocks: Vec<usize> = (assistant.content.iter().enumerate())
        .filter(|(_, block)| block.as_tool_call().is_some())
        .map(|(at, _)| at)
        .collect();
    for (index, job) in ready {
        let block = blocks[index];
        let scope = Arc::clone(scope);
        let assistant = Arc::clone(assistant);
        let tx = tx.clone();
        let (started, next_may_start) = oneshot::channel();
        let may_start = previous_started.replace(next_may_start);
        let span = spans[index].clone();
        let batch_permits = batch_permits.clone();
        let job = async move {
            // Always there; a job that reports nothing ends as "the tool task ended early".
            let Some(call) = assistant.content[block].as_tool_call() else {
                return;
            };
            // Held until the call ends; a call stopped while it waits ends as stopped by
            // `execute`, which sees the signal.
            let _batch_permit = match batch_permits {
                Some(permits) => acquire(permits, scope.signal()).await.ok(),
                None => None,
            };
            if let Some(mut may_start) = may_start
                && may_start.try_recv() == Err(oneshot::error::TryRecvError::Empty)
            {
                tokio::select! {
                    _ = may_start => {}
                    () = tokio::time::sleep(START_GRACE) => {}
                }
            }
            let updates = tx.clone();
            let mut running = pin!(async {
                call::execute(job, call, &scope, |update| {
                    // The loop is gone only if the run was dropped; nothing to report then.
                    let _ = updates.send(JobReport::Update(index, update));
                    std::future::ready(())
                })
                .await
            });
            let outcome = match futures::poll!(running.as_mut()) {
                Poll::Ready(outcome) => {
                    // Report before letting the next call start, so instant calls end in order.
                    let _ = tx.send(JobReport::Done(index, outcome));
                    let _ = started.send(());
                    return;
                }
                Poll::Pending => {
                    let _ = started.send(());
                    running.await
                }
            };
            let _ = tx.send(JobReport::Done(index, outcome));
        };
        jobs.push(job.instrument(span));
    }
    drop(tx);
    loop {
        let report = tokio::select! {
            biased;
            report = rx.recv() => report,
            () = jobs.progress() => continue,
        };
        let Some(report) = report else { break };
        match report {
            JobReport::Update(index, partial) => emit_update(calls[index], partial, bus).await,
            JobReport::Done(index, outcome) => {
                emit_end(calls[index], &outcome, &spans[index], scope, bus).await;
                outcomes[index] = Some(outcome);
            }
        }
    }
}

/// The running jobs of a batch. Dropping them (when the run itself is dropped) stops them.
enum Jobs {
    /// One task per call (multi-thread runtimes).
    Spawned(JoinSet<()>),
    /// Futures the loop polls itself.
    Inline(FuturesUnordered<BoxFuture<'static, ()>>),
}

impl Jobs {
    fn for_this_runtime() -> Self {
        match Handle::try_current().map(|runtime| runtime.runtime_flavor()) {
            Ok(RuntimeFlavor::CurrentThread) | Err(_) => Jobs::Inline(FuturesUnordered::new()),
            Ok(_) => Jobs::Spawned(JoinSet::new()),
        }
    }

    fn push(&mut self, job: impl Future<Output = ()> + Send + 'static) {
        match self {
            // Boxed: the task then moves a pointer, not the whole state of the call.
            Jobs::Spawned(tasks) => {
                tasks.spawn(Box::pin(job));
            }
            Jobs::Inline(futures) => futures.push(Box::pin(job)),
        }
    }

    /// Poll the inline jobs until one finishes; never ready for spawned jobs, which run on
    /// their own, nor once every inline job is done.
    async fn progress(&mut self) {
        match self {
            Jobs::Inline(futures) if !futures.is_empty() => {
                futures.next().await;
            }
            _ => std::future::pending().await,
        }
    }
}

/// Execute a prepared call on the loop's own task, emitting its updates directly; with a
/// `journal`, as a step of it.
async fn execute_here(
    ready: Ready,
    call: &ToolCall,
    scope: &Arc<CallScope>,
    bus: &Bus,
    journal: Option<&dyn Journal>,
) -> Outcome {
    let execution = call::execute(ready, call, scope, |partial| {
        emit_update(call, partial, bus)
    });
    let Some(journal) = journal else {
        return execution.await;
    };
    let work = async { recorded_value(&execution.await) };
    let recorded = journal.step(step_name(call), Box::pin(work), &scope.limits);
    replayed_outcome(recorded.await, scope)
}

/// The journal step of a call's execution.
fn step_name(call: &ToolCall) -> String {
    format!("tool call {}", call.id)
}

fn recorded_value(outcome: &Outcome) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}

/// A call's outcome from its journal step; a step the journal could not keep stops the run.
fn replayed_outcome(recorded: Result<Value, JournalError>, scope: &CallScope) -> Outcome {
    match recorded.map(serde_json::from_value::<Outcome>) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => Outcome::failed(
            CallFailure::Panic,
            format!("the journal's record of this call is unreadable: {error}"),
        ),
        Err(error) => {
            scope.signal().cancel();
            Outcome::failed(CallFailure::Cancelled, error.0)
        }
    }
}

/// A parallel batch's executions under a journal: each call is a step of its own, the
/// calls run at the same time, and they end in source order (the order the journal records
/// them in).
struct JournaledJobs<'a> {
    journal: &'a dyn Journal,
    calls: &'a [&'a ToolCall],
    assistant: &'a Arc<AssistantMessage>,
    spans: &'a [Span],
}

impl JournaledJobs<'_> {
    async fn run(
        self,
        ready: Vec<(usize, Ready)>,
        scope: &Arc<CallScope>,
        bus: &Bus,
        outcomes: &mut [Option<Outcome>],
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let batch_permits =
            (scope.policies.batch_concurrency).map(|max| Arc::new(Semaphore::new(max)));
        let blocks: Vec<usize> = (self.assistant.content.iter().enumerate())
            .filter(|(_, block)| block.as_tool_call().is_some())
            .map(|(at, _)| at)
            .collect();
        let indices: Vec<usize> = ready.iter().map(|(index, _)| *index).collect();
        let steps: Vec<(String, Work<'static>)> = (ready.into_iter())
            .map(|(index, job)| {
                let block = blocks[index];
                let scope = Arc::clone(scope);
                let assistant = Arc::clone(self.assistant);
                let tx = tx.clone();
                let batch_permits = batch_permits.clone();
                let work = async move {
                    let Some(call) = assistant.content[block].as_tool_call() else {
                        return Value::Null;
                    };
                    let _batch_permit = match batch_permits {
                        Some(permits) => acquire(permits, scope.signal()).await.ok(),
                        None => None,
                    };
                    let outcome = call::execute(job, call, &scope, |update| {
                        // The loop is gone only if the run was dropped.
                        let _ = tx.send((index, update));
                        std::future::ready(())
                    })
                    .await;
                    recorded_value(&outcome)
                };
                let work: Work<'static> = Box::pin(work.instrument(self.spans[index].clone()));
                (step_name(self.calls[index]), work)
            })
            .collect();
        drop(tx);
        let mut recorded = pin!(self.journal.steps(steps, &scope.limits));
        let values = loop {
            tokio::select! {
                biased;
                Some((index, partial)) = rx.recv() => {
                    emit_update(self.calls[index], partial, bus).await;
                }
                values = &mut recorded => break values,
            }
        };
        // One value per step, in order; a journal that failed fails every call.
        let values: Vec<Result<Value, JournalError>> = match values {
            Ok(values) => values.into_iter().map(Ok).collect(),
            Err(error) => vec![Err(error); indices.len()],
        };
        for (index, value) in indices.into_iter().zip(values) {
            let outcome = replayed_outcome(value, scope);
            emit_end(self.calls[index], &outcome, &self.spans[index], scope, bus).await;
            outcomes[index] = Some(outcome);
        }
    }
}

/// `tool_execution_start`, and the call's span (created here, in the run's span).
async fn emit_start(call: &ToolCall, scope: &CallScope, bus: &Bus) -> Span {
    let span = telemetry::tool_span(call, scope.capture_content);
    bus.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    })
    .await;
    span
}

async fn emit_update(call: &ToolCall, partial: ToolResult, bus: &Bus) {
    bus.emit(AgentEvent::ToolExecutionUpdate {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
        partial_result: partial,
    })
    .await;
}

async fn emit_end(call: &ToolCall, outcome: &Outcome, span: &Span, scope: &CallScope, bus: &Bus) {
    telemetry::record_outcome(span, outcome, scope.capture_content);
    bus.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.result.is_error,
        duration_ms: outcome.duration_ms,
    })
    .await;
}

async fn emit_result(call: &ToolCall, outcome: Outcome, bus: &Bus) -> Finished {
    let record = CallRecord {
        terminate: outcome.result.terminate,
        failure: outcome.failure,
    };
    let message = Arc::new(outcome.into_message(call));
    bus.emit(AgentEvent::MessageStart {
        message: Arc::clone(&message).into(),
    })
    .await;
    bus.emit(AgentEvent::MessageEnd {
        message: Arc::clone(&message).into(),
    })
    .await;
    (message, record)
}
