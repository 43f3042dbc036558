//! Where a durable run records its steps, so a run that restarts replays what it already did
//! instead of doing it again: each model response and each tool execution is one step, and a
//! step recorded before a crash returns its recorded value without running.
//!
//! The driver and the batch ask the journal at exactly the points where a run touches the
//! world; everything between two steps (events, hooks, validation) runs again on a replay
//! and must decide the same way, which it does given the same recorded values. Two inputs
//! are not steps of their own, so each step records them as they stood at its end and a
//! replay restores them there: the run's cancellation ([`Recorded::stopped`]) and the
//! failures of nested calls that the retry budgets count ([`Recorded::nested`]).
//!
//! Only durable runs (the `restate` feature) keep a journal; without it the driver never
//! takes its journal paths.
#![cfg_attr(not(feature = "restate"), allow(dead_code))]

use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::approval::{ApprovalDecision, PendingCall};
use super::dispatch::RunLimits;
use super::step::{JournalError, Recorded, StepRequest};

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

    /// Steps that run at the same time (a parallel batch's executions), each recorded under
    /// its own name; their values in the order given.
    fn steps<'a>(
        &'a self,
        steps: Vec<(String, Work<'static>)>,
        limits: &'a RunLimits,
    ) -> BoxFuture<'a, Result<Vec<Value>, JournalError>>;

    /// The decisions on the calls a batch holds for approval, the `pause`-th pause of the
    /// run: waited for durably, however long they take.
    fn decisions<'a>(
        &'a self,
        pause: usize,
        pending: Vec<PendingCall>,
    ) -> BoxFuture<'a, Result<Vec<ApprovalDecision>, JournalError>>;

    /// Make a sub-agent's step (see [`nested_journal`](super::nested_journal)) a step of
    /// this journal, named as the request says.
    fn serve<'a>(&'a self, request: StepRequest) -> BoxFuture<'a, ()>;
}

/// `work`'s value as a step records it, with the run's state at its end: whether the signal
/// had fired, and the nested failures counted so far (taken: [`replay`] gives them back).
pub(crate) async fn record(work: Work<'_>, limits: &RunLimits) -> Recorded {
    let value = work.await;
    let nested = (limits.nested_failures.as_ref()).map_or_else(Vec::new, |f| f.take());
    Recorded {
        value,
        stopped: limits.signal.is_cancelled(),
        nested,
    }
}

/// The value of a recorded step, with the run's state restored as it stood at the step's
/// end: a step whose run had been stopped by then stops the run again at the same point, and
/// its nested failures count again.
pub(crate) fn replay(recorded: Recorded, limits: &RunLimits) -> Value {
    if recorded.stopped {
        limits.signal.cancel();
    }
    if let Some(failures) = &limits.nested_failures {
        for (tool, count) in &recorded.nested {
            failures.add(tool, *count);
        }
    }
    recorded.value
}

/// A journal's hold on the run's time limit: armed by the first step that runs for real, so
/// that while steps replay only the recorded stops stop the run.
#[derive(Debug, Default)]
pub(crate) struct TimeLimit(Mutex<Option<AbortOnDrop>>);

impl TimeLimit {
    /// A step runs for real: fire the run's signal at its deadline from now on.
    pub(crate) fn arm(&self, limits: &RunLimits) {
        let Some(deadline) = limits.deadline else {
            return;
        };
        let mut armed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if armed.is_none() {
            let signal = limits.signal.clone();
            *armed = Some(AbortOnDrop(tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                signal.cancel();
            })));
        }
    }
}

/// A task that stops when its handle is dropped: a run dropped half way (by the engine that
/// drives it, or with its process) leaves nothing running.
#[derive(Debug)]
pub(crate) struct AbortOnDrop<T = ()>(pub(crate) JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::agent::approval::Decision;
    use crate::agent::nested_journal::serve_with;
    use crate::agent::test_support::timeless;
    use crate::agent::{Agent, AgentDefinition, RunEnd, RunOutcome};
    use crate::message::now_ms;
    use crate::provider::faux::{FauxModel, FauxResponse};
    use crate::stream::Context;
    use crate::{FnTool, ToolError, ToolResult};

    /// A journal in memory: it replays the first `replay` entries of an earlier run's record
    /// and records the rest as they run.
    struct MemoryJournal {
        replay: Vec<(String, Recorded)>,
        cursor: Mutex<usize>,
        recorded: Mutex<Vec<(String, Recorded)>>,
        ran: Mutex<Vec<String>>,
        decision: Decision,
        time_limit: TimeLimit,
    }

    impl MemoryJournal {
        fn new(replay: Vec<(String, Recorded)>) -> Self {
            MemoryJournal {
                replay,
                cursor: Mutex::new(0),
                recorded: Mutex::new(Vec::new()),
                ran: Mutex::new(Vec::new()),
                decision: Decision::Approve,
                time_limit: TimeLimit::default(),
            }
        }

        fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
            mutex.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// The recorded entry at the cursor, if the replay has one; the cursor moves on.
        fn next_replayed(&self, name: &str) -> Option<Recorded> {
            let mut cursor = Self::lock(&self.cursor);
            let at = *cursor;
            *cursor += 1;
            let (recorded_name, recorded) = self.replay.get(at)?;
            assert_eq!(recorded_name, name, "the replay asks for another step");
            Self::lock(&self.recorded).push((name.to_owned(), recorded.clone()));
            Some(recorded.clone())
        }

        fn keep(&self, name: String, recorded: &Recorded) {
            Self::lock(&self.ran).push(name.clone());
            Self::lock(&self.recorded).push((name, recorded.clone()));
        }

        fn record_of(&self) -> Vec<(String, Recorded)> {
            Self::lock(&self.recorded).clone()
        }

        fn ran(&self) -> Vec<String> {
            Self::lock(&self.ran).clone()
        }
    }

    impl Journal for MemoryJournal {
        fn step<'a>(
            &'a self,
            name: String,
            work: Work<'a>,
            limits: &'a RunLimits,
        ) -> BoxFuture<'a, Result<Value, JournalError>> {
            Box::pin(async move {
                if let Some(recorded) = self.next_replayed(&name) {
                    return Ok(replay(recorded, limits));
                }
                self.time_limit.arm(limits);
                let recorded = record(work, limits).await;
                self.keep(name, &recorded);
                Ok(replay(recorded, limits))
            })
        }

        fn steps<'a>(
            &'a self,
            steps: Vec<(String, Work<'static>)>,
            limits: &'a RunLimits,
        ) -> BoxFuture<'a, Result<Vec<Value>, JournalError>> {
            Box::pin(async move {
                let mut values = Vec::new();
                let mut live = Vec::new();
                for (name, work) in steps {
                    match self.next_replayed(&name) {
                        Some(recorded) => values.push(replay(recorded, limits)),
                        None => live.push((name, work)),
                    }
                }
                if !live.is_empty() {
                    self.time_limit.arm(limits);
                }
                let (names, works): (Vec<_>, Vec<_>) = live.into_iter().unzip();
                let done =
                    futures::future::join_all(works.into_iter().map(|work| record(work, limits)));
                for (name, recorded) in names.into_iter().zip(done.await) {
                    self.keep(name, &recorded);
                    values.push(replay(recorded, limits));
                }
                Ok(values)
            })
        }

        fn decisions<'a>(
            &'a self,
            _pause: usize,
            pending: Vec<PendingCall>,
        ) -> BoxFuture<'a, Result<Vec<ApprovalDecision>, JournalError>> {
            let decisions = (pending.iter())
                .map(|call| ApprovalDecision::new(call.id.clone(), self.decision.clone()))
                .collect();
            Box::pin(std::future::ready(Ok(decisions)))
        }

        fn serve<'a>(&'a self, request: StepRequest) -> BoxFuture<'a, ()> {
            Box::pin(serve_with(request, move |name, work| async move {
                if let Some(recorded) = self.next_replayed(&name) {
                    return Ok(recorded);
                }
                let recorded = work.await?;
                self.keep(name, &recorded);
                Ok(recorded)
            }))
        }
    }

    /// Three calls of `step`, one per response, then `(done)`; `step` counts its executions
    /// and takes `step_ms`, stopping early when its signal fires. The counter counts the
    /// model's requests.
    fn agent(executions: &Arc<AtomicUsize>, step_ms: u64) -> (AgentDefinition, Arc<AtomicUsize>) {
        let requests = Arc::new(AtomicUsize::new(0));
        let asked = Arc::clone(&requests);
        let model = FauxModel::new().respond_always(move |request: &Context| {
            asked.fetch_add(1, Ordering::SeqCst);
            let results = (request.messages.iter())
                .filter(|message| message.as_tool_result().is_some())
                .count();
            match results {
                0..=2 => FauxResponse::tool_call(format!("c{results}"), "step", json!({})),
                _ => FauxResponse::text("(done)"),
            }
        });
        let count = Arc::clone(executions);
        let step = FnTool::new(
            "step",
            "One step.",
            json!({"type": "object"}),
            move |_, ctx| {
                count.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(step_ms)) => Ok(ToolResult::text("stepped")),
                        () = ctx.signal().cancelled() => Err(ToolError::new("stopped")),
                    }
                }
            },
        );
        let definition = Agent::builder()
            .model(model)
            .tools(step)
            .time_limit(Duration::from_millis(500))
            .build_definition()
            .expect("an agent");
        (definition, requests)
    }

    async fn run(
        definition: &AgentDefinition,
        journal: &MemoryJournal,
        started_ms: u64,
    ) -> (RunOutcome, Vec<&'static str>) {
        let conversation = definition.conversation();
        let kinds = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&kinds);
        conversation.on_event(move |event| {
            if !matches!(event, crate::agent::AgentEvent::MessageUpdate { .. }) {
                MemoryJournal::lock(&seen).push(event.kind());
            }
        });
        let outcome = conversation
            .prompt_journaled("Go".into(), journal, Arc::from("run-1"), started_ms)
            .await
            .expect("the run starts");
        let kinds = MemoryJournal::lock(&kinds).clone();
        (outcome, kinds)
    }

    #[tokio::test]
    async fn a_replay_runs_nothing_again_and_ends_as_the_run_did() {
        let executions = Arc::new(AtomicUsize::new(0));
        let (definition, model) = agent(&executions, 1);
        let first = MemoryJournal::new(Vec::new());
        let started = now_ms();
        let (live, live_events) = run(&definition, &first, started).await;
        assert_eq!(live.end, RunEnd::Completed);
        assert_eq!(
            (
                executions.load(Ordering::SeqCst),
                model.load(Ordering::SeqCst)
            ),
            (3, 4)
        );
        let names: Vec<String> = first
            .record_of()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            names,
            [
                "turn 1: model response",
                "tool call c0",
                "turn 2: model response",
                "tool call c1",
                "turn 3: model response",
                "tool call c2",
                "turn 4: model response",
            ]
        );

        let replayed = MemoryJournal::new(first.record_of());
        let (again, events) = run(&definition, &replayed, started).await;
        assert_eq!(replayed.ran(), Vec::<String>::new());
        assert_eq!(
            (
                executions.load(Ordering::SeqCst),
                model.load(Ordering::SeqCst)
            ),
            (3, 4)
        );
        assert_eq!(timeless(&again.messages), timeless(&live.messages));
        assert_eq!(again.end, RunEnd::Completed);
        // A replayed step's events come again; a response comes whole, without updates.
        assert_eq!(events, live_events);
        assert_eq!(
            events
                .iter()
                .filter(|kind| **kind == "tool_execution_end")
                .count(),
            3
        );
    }

    #[tokio::test]
    async fn a_replay_that_stops_half_way_goes_on_live() {
        let executions = Arc::new(AtomicUsize::new(0));
        let (definition, model) = agent(&executions, 1);
        let first = MemoryJournal::new(Vec::new());
        let started = now_ms();
        let (live, _) = run(&definition, &first, started).await;
        // The process died after the second call's step was recorded.
        let mut record = first.record_of();
        record.truncate(4);
        let resumed = MemoryJournal::new(record);
        let (again, _) = run(&definition, &resumed, started).await;
        assert_eq!(
            resumed.ran(),
            [
                "turn 3: model response",
                "tool call c2",
                "turn 4: model response"
            ]
        );
        assert_eq!(
            (
                executions.load(Ordering::SeqCst),
                model.load(Ordering::SeqCst)
            ),
            (4, 6)
        );
        assert_eq!(timeless(&again.messages), timeless(&live.messages));
    }

    #[tokio::test]
    async fn the_time_limit_stops_a_replay_where_it_stopped_the_run() {
        let executions = Arc::new(AtomicUsize::new(0));
        // Three steps of 300 ms under a 500 ms limit: the second is stopped.
        let (definition, model) = agent(&executions, 300);
        let first = MemoryJournal::new(Vec::new());
        let started = now_ms();
        let (live, _) = run(&definition, &first, started).await;
        assert!(
            matches!(live.end, RunEnd::TimeLimit { .. }),
            "{:?}",
            live.end
        );
        let stopped: Vec<bool> = first.record_of().iter().map(|(_, r)| r.stopped).collect();
        assert_eq!(stopped, [false, false, false, true, true]);

        // The stopped run asked the model no third time. Replayed long after the deadline,
        // the recorded stop ends it at the same place,
        // and the clock (never armed while replaying) changes nothing.
        let replayed = MemoryJournal::new(first.record_of());
        let (again, _) = run(&definition, &replayed, started).await;
        assert!(
            matches!(again.end, RunEnd::TimeLimit { .. }),
            "{:?}",
            again.end
        );
        assert_eq!(replayed.ran(), Vec::<String>::new());
        assert_eq!(
            (
                executions.load(Ordering::SeqCst),
                model.load(Ordering::SeqCst)
            ),
            (2, 2)
        );
        assert_eq!(timeless(&again.messages), timeless(&live.messages));
    }

    #[tokio::test]
    async fn a_replay_counts_the_failed_nested_calls_toward_the_retry_budget() {
        // `outer` calls `inner` with arguments `inner` refuses; `inner` allows one failure.
        let inner = FnTool::new(
            "inner",
            "Needs a number.",
            json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}),
            |_, _| async { Ok(ToolResult::text("inner ran")) },
        )
        .with_policy(crate::tool::ToolPolicy {
            retries: Some(1),
            ..Default::default()
        });
        let outer = FnTool::new(
            "outer",
            "Calls inner.",
            json!({"type": "object"}),
            |_, ctx| async move {
                let call = crate::ToolCall::new("nested", "inner", json!({}));
                Ok(ctx.call_tool(call).await)
            },
        );
        let model = FauxModel::new().respond_always(|request: &Context| {
            let results = (request.messages.iter())
                .filter(|message| message.as_tool_result().is_some())
                .count();
            FauxResponse::tool_call(format!("c{results}"), "outer", json!({}))
        });
        let definition = Agent::builder()
            .model(model)
            .tools((inner, outer))
            .build_definition()
            .expect("an agent");
        let first = MemoryJournal::new(Vec::new());
        let started = now_ms();
        let (live, _) = run(&definition, &first, started).await;
        let exhausted = RunEnd::RetriesExhausted {
            tool: "inner".to_owned(),
            retries: 1,
        };
        assert_eq!(live.end, exhausted);
        let nested: Vec<_> = first
            .record_of()
            .into_iter()
            .map(|(_, r)| r.nested)
            .collect();
        let once = vec![("inner".to_owned(), 1)];
        assert_eq!(nested, [vec![], once.clone(), vec![], once]);

        let replayed = MemoryJournal::new(first.record_of());
        let (again, _) = run(&definition, &replayed, started).await;
        assert_eq!(replayed.ran(), Vec::<String>::new());
        assert_eq!(again.end, exhausted);
        assert_eq!(timeless(&again.messages), timeless(&live.messages));
    }

    #[tokio::test]
    async fn a_sub_agents_steps_are_the_runs_and_a_crash_inside_it_runs_only_the_rest() {
        let executions = Arc::new(AtomicUsize::new(0));
        let (worker, _) = agent(&executions, 1);
        let lead_model = FauxModel::new().respond_always(|request: &Context| {
            let results = (request.messages.iter())
                .filter(|message| message.as_tool_result().is_some())
                .count();
            match results {
                0 => FauxResponse::tool_call("w0", "worker", json!({"task": "work"})),
                _ => FauxResponse::text("(lead done)"),
            }
        });
        let lead = Agent::builder()
            .model(lead_model)
            .tools(worker.as_tool("worker", "Works."))
            .build_definition()
            .expect("an agent");
        let first = MemoryJournal::new(Vec::new());
        let started = now_ms();
        let (live, _) = run(&lead, &first, started).await;
        assert_eq!(live.end, RunEnd::Completed);
        assert_eq!(live[2].text_content(), "(done)", "the worker's answer");
        let names: Vec<String> = (first.record_of().into_iter())
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            names,
            [
                "turn 1: model response",
                "w0/turn 1: model response",
                "w0/tool call c0",
                "w0/turn 2: model response",
                "w0/tool call c1",
                "w0/turn 3: model response",
                "w0/tool call c2",
                "w0/turn 4: model response",
                "turn 2: model response",
            ]
        );
        assert_eq!(executions.load(Ordering::SeqCst), 3);

        // The process died inside the worker, after its second call's step was recorded.
        let mut record = first.record_of();
        record.truncate(5);
        let resumed = MemoryJournal::new(record);
        let (again, _) = run(&lead, &resumed, started).await;
        assert_eq!(
            resumed.ran(),
            [
                "w0/turn 3: model response",
                "w0/tool call c2",
                "w0/turn 4: model response",
                "turn 2: model response",
            ]
        );
        assert_eq!(
            executions.load(Ordering::SeqCst),
            4,
            "only the call in flight ran again"
        );
        assert_eq!(timeless(&again.messages), timeless(&live.messages));

        // A whole replay runs nothing.
        let replayed = MemoryJournal::new(first.record_of());
        let (whole, _) = run(&lead, &replayed, started).await;
        assert_eq!(replayed.ran(), Vec::<String>::new());
        assert_eq!(executions.load(Ordering::SeqCst), 4);
        assert_eq!(timeless(&whole.messages), timeless(&live.messages));
    }
}
