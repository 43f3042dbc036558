//! The journaled driver: a run whose every model response and tool execution is a step of a
//! [`Journal`], so that a run that restarts replays what it already did instead of doing it
//! again. It performs the other effects exactly as the in-memory driver does (`run.rs`,
//! whose [`Driver`] it shares), and its pauses for approval wait on the journal.
#![cfg_attr(not(feature = "restate"), allow(dead_code))]

use std::pin::pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::AgentEvent;
use super::dispatch::{JobReport, RunLimits};
use super::error::AgentError;
use super::failure::CallFailure;
use super::handle::resume::{go_on, tool_lookup};
use super::handle::runs::{Inherited, outcome};
use super::handle::{Agent, RunGuard};
use super::journal::{Journal, Work};
use super::machine::{CallOutcome, Effect, ReadyCall, RunState, instant_at};
use super::outcome::RunOutcome;
use super::prompt::Prompt;
use super::run::{Driver, failed_message};
use super::step::JournalError;
use super::telemetry;
use crate::message::{AssistantMessage, Message, StopReason};

impl Agent {
    /// Run `prompt` with every model response and tool execution a step of `journal`,
    /// started (as the journal recorded) at `started_ms`: a replay of the journal drives the
    /// run through the same states, and its pauses for approval wait on the journal. The
    /// time limit counts from `started_ms`, and the journal fires it (it alone knows when the
    /// replay is over).
    pub(crate) async fn prompt_journaled(
        &self,
        prompt: Prompt,
        journal: &dyn Journal,
        run_key: Arc<str>,
        started_ms: u64,
    ) -> Result<RunOutcome, AgentError> {
        (self.prompt_journaled_under(prompt, journal, run_key, started_ms, Inherited::default()))
            .await
    }

    /// [`prompt_journaled`](Self::prompt_journaled) as the sub-agent of a running call,
    /// inheriting its signal, time and context (see [`Agent::prompt_under`]).
    pub(crate) async fn prompt_journaled_under(
        &self,
        prompt: Prompt,
        journal: &dyn Journal,
        run_key: Arc<str>,
        started_ms: u64,
        inherited: Inherited,
    ) -> Result<RunOutcome, AgentError> {
        let Prompt(prompts) = prompt;
        let parent_deadline = inherited.deadline;
        let (mut limits, mut state) =
            self.start(AgentError::BusyPrompting, inherited, |_, messages| {
                Ok((messages, prompts, false))
            })?;
        let shared = self.shared();
        let _guard = RunGuard(shared);
        let config = shared.config();
        let deadline_ms = (config.time_limit).map(|limit| {
            started_ms.saturating_add(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX))
        });
        state.set_deadline_ms(deadline_ms);
        limits.deadline = deadline_ms.map(instant_at);
        limits.end_by(parent_deadline);
        limits.run_key = Some(run_key);
        let signal = limits.signal.clone();
        let span = telemetry::run_span(&*config.model);
        let mut pauses = 0;
        let messages = loop {
            let run = run(shared, limits.clone(), &mut state, journal);
            if let Some(messages) = run.instrument(span.clone()).await {
                break messages;
            }
            if !state.is_paused() {
                break state.added().to_vec();
            }
            pauses += 1;
            let pending = state.pending_approvals().cloned().collect();
            // The journal takes each decision once (it is this path's ledger): no claim.
            let decisions = (journal.decisions(pauses, pending).await)
                .map_err(|error| AgentError::Journal(error.0))?;
            if let Some(decided) = state.decided(decisions, &tool_lookup(&config))? {
                go_on(&config, &limits, &mut state, decided, None).await?;
            }
        };
        let timed_out = signal.is_cancelled() && deadline_ms.is_some();
        Ok(outcome(
            state,
            messages,
            timed_out.then_some(config.time_limit.unwrap_or_default()),
            config.name.as_deref(),
        ))
    }
}

/// Drive `state` until it ends (its messages) or pauses for approval (`None`), with each
/// model response and each execution a step of `journal`.
async fn run(
    shared: &Arc<super::config::Shared>,
    limits: RunLimits,
    state: &mut RunState,
    journal: &dyn Journal,
) -> Option<Vec<Message>> {
    let mut driver = Driver::new(shared, limits);
    loop {
        match state.next() {
            Effect::Request => {
                // Input guardrails run before the request here, those meant to run beside it
                // too: a journal step records a whole response.
                if let Some((guardrails, input)) = driver.input_checks(state) {
                    let end = match guardrails.check_input(false, input.clone()).await {
                        Some(end) => Some(end),
                        None => guardrails.check_input(true, input).await,
                    };
                    if let Some(end) = end {
                        state.trip(end, true);
                        continue;
                    }
                }
                let response = respond(&mut driver, state, journal).await;
                driver.responded(&response).await;
                state.responded(response);
            }
            Effect::Execute(calls) => execute(&mut driver, state, journal, calls).await,
            Effect::Pause => {
                driver.paused(state);
                return None;
            }
            Effect::Done(messages) => return Some(messages),
            // Events are the most frequent effect: delivered here, not through `perform`,
            // whose future is as large as its largest arm and is copied on every call.
            Effect::Emit => driver.deliver(state).await,
            effect => driver.perform(state, effect).await,
        }
    }
}

/// The response as a step of `journal`. A replayed response arrives whole: its
/// `message_start` is emitted here, with no updates.
async fn respond(
    driver: &mut Driver<'_>,
    state: &mut RunState,
    journal: &dyn Journal,
) -> Arc<AssistantMessage> {
    let limits = Arc::clone(&driver.limits);
    let name = format!("turn {}: model response", state.turns() + 1);
    let mut ran = false;
    let work = async {
        ran = true;
        serde_json::to_value(&*driver.response(state).await).unwrap_or(Value::Null)
    };
    let recorded = journal.step(name, Box::pin(work), &limits).await;
    let model = driver.configured_model();
    let message = match recorded.map(serde_json::from_value::<AssistantMessage>) {
        Ok(Ok(message)) => Arc::new(message),
        Ok(Err(error)) => {
            let error = format!("the journal's record of the response is unreadable: {error}");
            Arc::new(failed_message(&*model, StopReason::Error, &error))
        }
        Err(error) => {
            limits.signal.cancel();
            Arc::new(failed_message(&*model, StopReason::Aborted, &error.0))
        }
    };
    if !ran {
        driver
            .emit(AgentEvent::MessageStart {
                message: Arc::clone(&message).into(),
            })
            .await;
    }
    message
}

/// Execute `calls`, each as a step of `journal` named after its call, at the same time when
/// there are several. Their updates are delivered as they come; their ends follow in source
/// order (the order the journal records them in) once every step is recorded.
async fn execute(
    driver: &mut Driver<'_>,
    state: &mut RunState,
    journal: &dyn Journal,
    calls: Vec<ReadyCall>,
) {
    // A sub-agent's steps are steps of this journal: the batch then runs one call after
    // the other, so the journal records the same steps in the same order on every replay.
    if calls.iter().any(|call| driver.journals_itself(state, call)) {
        for call in calls {
            if driver.journals_itself(state, &call) {
                run_sub_agent(driver, state, journal, call).await;
            } else {
                Box::pin(execute(driver, state, journal, vec![call])).await;
            }
        }
        return;
    }
    let (updates, mut reports) = mpsc::unbounded_channel();
    let mut indices = Vec::with_capacity(calls.len());
    let mut steps: Vec<(String, Work<'static>)> = Vec::with_capacity(calls.len());
    for call in calls {
        let index = call.index();
        let name = format!("tool call {}", call.call().call().id);
        let (span, job) = driver.job(state, call, updates.clone());
        let work = async move { serde_json::to_value(job.await).unwrap_or(Value::Null) };
        indices.push(index);
        steps.push((name, Box::pin(work.instrument(span))));
    }
    drop(updates);
    let limits = Arc::clone(&driver.limits);
    let values: Vec<Result<Value, JournalError>> = {
        let recorded = async {
            if steps.len() == 1 {
                let (name, work) = steps.pop().unwrap_or_else(|| unreachable!("one step"));
                vec![journal.step(name, work, &limits).await]
            } else {
                match journal.steps(steps, &limits).await {
                    Ok(values) => values.into_iter().map(Ok).collect(),
                    // A journal that failed fails every call.
                    Err(error) => vec![Err(error); indices.len()],
                }
            }
        };
        let mut recorded = pin!(recorded);
        loop {
            tokio::select! {
                biased;
                Some(report) = reports.recv() => {
                    if take_progress(driver, state, report) {
                        driver.deliver(state).await;
                    }
                }
                values = &mut recorded => break values,
            }
        }
    };
    // Updates sent just before their call's step ended come before its end.
    while let Ok(report) = reports.try_recv() {
        take_progress(driver, state, report);
    }
    for (index, value) in indices.into_iter().zip(values) {
        driver.report_nested(state);
        state.executed(index, replayed(value, &limits));
        driver.deliver(state).await;
    }
}

/// Execute `call`, whose tool runs a sub-agent, outside any step: the sub-agent's own steps
/// are steps of `journal` (named `<call id>/...`), asked for through the call's link and
/// served here while it runs, and its events are delivered as they come.
async fn run_sub_agent(
    driver: &mut Driver<'_>,
    state: &mut RunState,
    journal: &dyn Journal,
    call: ReadyCall,
) {
    let index = call.index();
    let (updates, mut reports) = mpsc::unbounded_channel();
    let (span, job) = driver.job(state, call, updates);
    let mut job = pin!(job.instrument(span));
    let mut serving = FuturesUnordered::new();
    let outcome = loop {
        tokio::select! {
            outcome = &mut job => break outcome,
            Some(()) = serving.next(), if !serving.is_empty() => {}
            Some(report) = reports.recv() => match report {
                JobReport::Step(request) => serving.push(journal.serve(request)),
                report => {
                    if take_progress(driver, state, report) {
                        driver.deliver(state).await;
                    }
                }
            },
        }
    };
    while let Ok(report) = reports.try_recv() {
        take_progress(driver, state, report);
    }
    driver.report_nested(state);
    state.executed(index, outcome);
    driver.deliver(state).await;
}

/// Hand the state a running call's update or sub-agent event, or hand the conversation
/// over; `false` for an end, which comes from the call's journal step instead.
fn take_progress(driver: &mut Driver<'_>, state: &mut RunState, report: JobReport) -> bool {
    match report {
        JobReport::Update(index, partial) => state.updated(index, partial),
        JobReport::Nested(index, event) => state.nested(index, event),
        JobReport::HandOff(to) => driver.hand_off(state, &to),
        // A journal step's record holds no sub-agent's state: the call's own result (its
        // sub-agent cannot wait for approval here) stands, and nothing it held runs.
        JobReport::Paused(..) | JobReport::Done(..) => return false,
        // A call inside a step cannot have steps of its own (only a sub-agent's call asks,
        // and it runs outside any step); unanswered, the asking call fails.
        JobReport::Step(_) => return false,
    }
    true
}

/// A call's outcome from its journal step; a step the journal could not keep stops the run.
fn replayed(recorded: Result<Value, JournalError>, limits: &RunLimits) -> CallOutcome {
    match recorded.map(serde_json::from_value::<CallOutcome>) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => CallOutcome::failed(
            CallFailure::Panic,
            format!("the journal's record of this call is unreadable: {error}"),
        ),
        Err(error) => {
            limits.signal.cancel();
            CallOutcome::failed(CallFailure::Cancelled, error.0)
        }
    }
}
