//! One batch of tool calls: sequential, parallel in three phases (preflight in source order,
//! then execution concurrently, then the result messages), or refused because the response
//! was cut off. Emits the tool events and the result messages in the orders pi guarantees:
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
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tracing::{Instrument, Span};

use super::call::{self, CallScope, Outcome, Preflight, Ready};
use crate::agent::AgentEvent;
use crate::agent::failure::{self, CallFailure};
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

/// Run every call of `scope.assistant`: one after the other when `sequential`.
pub(super) async fn run(scope: Arc<CallScope>, sequential: bool, bus: &Bus) -> BatchOutcome {
    let Some(assistant) = scope.assistant.clone() else {
        return BatchOutcome {
            results: Vec::new(),
            records: Vec::new(),
            terminate: false,
        };
    };
    let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
    let outcomes = if assistant.stop_reason == StopReason::Length {
        truncated(&calls, &scope, bus).await
    } else if sequential {
        sequential_calls(&calls, &scope, bus).await
    } else {
        parallel(&calls, &assistant, &scope, bus).await
    };
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

async fn sequential_calls(calls: &[&ToolCall], scope: &Arc<CallScope>, bus: &Bus) -> Vec<Finished> {
    let mut finished = Vec::with_capacity(calls.len());
    for call in calls {
        let span = emit_start(call, scope, bus).await;
        let prepared = call::prepare(call, scope).instrument(span.clone()).await;
        let outcome = match prepared {
            Preflight::Immediate(outcome) => outcome,
            Preflight::Ready(ready) => {
                execute_here(ready, call, scope, bus)
                    .instrument(span.clone())
                    .await
            }
        };
        emit_end(call, &outcome, &span, scope, bus).await;
        finished.push(emit_result(call, outcome, bus).await);
    }
    finished
}

async fn parallel(
    calls: &[&ToolCall],
    assistant: &Arc<AssistantMessage>,
    scope: &Arc<CallScope>,
    bus: &Bus,
) -> Vec<Finished> {
    // Phase 1: preflight in source order; immediate outcomes end right away.
    let mut outcomes: Vec<Option<Outcome>> = vec![None; calls.len()];
    let mut spans = Vec::with_capacity(calls.len());
    let mut ready = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let span = emit_start(call, scope, bus).await;
        match call::prepare(call, scope).instrument(span.clone()).await {
            Preflight::Immediate(outcome) => {
                emit_end(call, &outcome, &span, scope, bus).await;
                outcomes[index] = Some(outcome);
            }
            Preflight::Ready(job) => ready.push((index, job)),
        }
        spans.push(span);
    }

    // Phase 2: run the prepared calls concurrently; each ends when it finishes.
    if ready.len() == 1 {
        // Nothing to overlap with: running it here saves a task spawn and gives the same
        // events.
        if let Some((index, job)) = ready.pop() {
            let span = &spans[index];
            let outcome = execute_here(job, calls[index], scope, bus)
                .instrument(span.clone())
                .await;
            emit_end(calls[index], &outcome, span, scope, bus).await;
            outcomes[index] = Some(outcome);
        }
    } else if !ready.is_empty() {
        run_jobs(ready, calls, assistant, &spans, scope, bus, &mut outcomes).await;
    }

    // Phase 3: result messages in source order.
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
        let job = async move {
            // Always there; a job that reports nothing ends as "the tool task ended early".
            let Some(call) = assistant.content[block].as_tool_call() else {
                return;
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

/// Execute a prepared call on the loop's own task, emitting its updates directly.
async fn execute_here(ready: Ready, call: &ToolCall, scope: &Arc<CallScope>, bus: &Bus) -> Outcome {
    call::execute(ready, call, scope, |partial| {
        emit_update(call, partial, bus)
    })
    .await
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
