//! Where a durable run records its steps, so a run that restarts replays what it already did
//! instead of doing it again: each model response and each tool execution is one step, and a
//! step recorded before a crash returns its recorded value without running.
//!
//! The driver and the batch ask the journal at exactly the points where a run touches the
//! world; everything between two steps (events, hooks, validation) runs again on a replay
//! and must decide the same way, which it does given the same recorded values. The one
//! input that is not a step, the run's cancellation, is recorded with each step
//! ([`Recorded::stopped`]) and replayed from there.
//!
//! Only durable runs (the `restate` feature) keep a journal; without it the driver never
//! takes its journal paths.
#![cfg_attr(not(feature = "restate"), allow(dead_code))]

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::{ApprovalDecision, PendingCall};
use super::dispatch::RunLimits;

/// A step that cannot be recorded or replayed: the run cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct JournalError(pub(crate) String);

/// What a step recorded: its value, and whether the run's signal had fired by its end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Recorded {
    pub(crate) value: Value,
    pub(crate) stopped: bool,
}

/// A step's work, run at most once unless the process dies while it runs.
pub(crate) type Work<'a> = BoxFuture<'a, Value>;

/// The record of a run's steps (Restate's journal, with the `restate` feature). Each step
/// gets the run's limits: its signal is recorded with the step, and its time limit is the
/// journal's to fire once steps run for real rather than replay.
pub(crate) trait Journal: Sync {
    /// One step named `name`: run `work` and record its value, or replay the value recorded.
    fn step<'a>(
        &'a self,
        name: String,
        work: Work<'a>,
        limits: &'a RunLimits,
    ) -> BoxFuture<'a, Result<Value, JournalError>>;

    /// Steps that may run at the same time (a parallel batch's executions), each recorded
    /// under its own name; their values in the order given. When `concurrent` is false they
    /// run one after the other.
    fn steps<'a>(
        &'a self,
        steps: Vec<(String, Work<'static>)>,
        concurrent: bool,
        limits: &'a RunLimits,
    ) -> BoxFuture<'a, Result<Vec<Value>, JournalError>>;

    /// The decisions on the calls a batch holds for approval, the `pause`-th pause of the
    /// run: waited for durably, however long they take.
    fn decisions<'a>(
        &'a self,
        pause: usize,
        pending: Vec<PendingCall>,
    ) -> BoxFuture<'a, Result<Vec<ApprovalDecision>, JournalError>>;
}

/// `work`'s value as a step records it, with whether `signal` had fired by its end.
pub(crate) async fn record(work: Work<'_>, signal: &CancellationToken) -> Recorded {
    let value = work.await;
    Recorded {
        value,
        stopped: signal.is_cancelled(),
    }
}

/// The value of a recorded step; a replayed step whose run had been stopped by then stops
/// the run again at the same point.
pub(crate) fn replay(recorded: Recorded, signal: &CancellationToken) -> Value {
    if recorded.stopped {
        signal.cancel();
    }
    recorded.value
}
