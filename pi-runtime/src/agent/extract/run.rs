//! `Extractor`: one extraction is one task: prompt, remind while allowed, stop at the time
//! limit, then judge the run.

use std::fmt;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;
use tokio::time::Instant;

use super::options::ExtractOptions;
use super::outcome::{ExtractError, Extracted};
use super::partial::read_partial;
use super::submit::Slot;
use crate::agent::failure::OPERATION_ABORTED;
use crate::agent::handle::runs::Inherited;
use crate::agent::hooks::FinishedTurn;
use crate::agent::{Agent, AgentError, AgentEvent, Prompt, RunOutcome, SubscriptionId};
use crate::message::{AssistantMessage, Message, StopReason, Usage, UserMessage};

/// What the turn hook saw during the current extraction.
#[derive(Debug, Default)]
pub(super) struct Progress {
    turns: AtomicUsize,
    limit_reached: AtomicBool,
    saw_abort: AtomicBool,
}

impl Progress {
    /// Count a finished turn; `true` when it reached the limit.
    pub(super) fn count_turn(&self, turn: &FinishedTurn, max_turns: usize) -> bool {
        if turn.signal.is_cancelled() {
            self.saw_abort.store(true, Ordering::SeqCst);
        }
        let turns = self.turns.fetch_add(1, Ordering::SeqCst) + 1;
        let reached = turns >= max_turns;
        if reached {
            self.limit_reached.store(true, Ordering::SeqCst);
        }
        reached
    }

    fn reset(&self) {
        self.turns.store(0, Ordering::SeqCst);
        self.limit_reached.store(false, Ordering::SeqCst);
        self.saw_abort.store(false, Ordering::SeqCst);
    }

    fn turns(&self) -> usize {
        self.turns.load(Ordering::SeqCst)
    }
}

/// An agent whose runs hand in one `T` through a submit tool; build it with
/// [`AgentBuilder::extract`](crate::agent::AgentBuilder::extract).
///
/// Each [`extract`](Self::extract) is one task: a fresh acceptance slot and turn count, on
/// the agent's initial transcript, so one task's document never reaches the next task's
/// requests ([`ExtractBuilder::keep_transcript`](super::ExtractBuilder::keep_transcript)
/// carries the transcript over instead). After a task, [`agent`](Self::agent) shows what it
/// added.
pub struct Extractor<T> {
    agent: Agent,
    /// The transcript each task starts from.
    initial: Vec<Message>,
    options: ExtractOptions,
    slot: Arc<Slot<T>>,
    progress: Arc<Progress>,
    running: AtomicBool,
    aborted: AtomicBool,
}

impl<T> fmt::Debug for Extractor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extractor")
            .field("agent", &self.agent)
            .field("options", &self.options)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

/// Releases the extractor when an extraction ends, even if its future was dropped. The abort
/// flag is cleared here rather than at the start, so an abort that arrives while the
/// extraction starts up is never lost.
struct Claim<'a> {
    running: &'a AtomicBool,
    aborted: &'a AtomicBool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.aborted.store(false, Ordering::SeqCst);
        self.running.store(false, Ordering::SeqCst);
    }
}

impl<T> Extractor<T> {
    pub(super) fn new(
        agent: Agent,
        options: ExtractOptions,
        slot: Arc<Slot<T>>,
        progress: Arc<Progress>,
    ) -> Self {
        Extractor {
            initial: agent.messages(),
            agent,
            options,
            slot,
            progress,
            running: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
        }
    }

    /// The agent: subscribe to its events, read its transcript or state.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The options it was built with (the reminder with the tool's name filled in).
    pub fn options(&self) -> &ExtractOptions {
        &self.options
    }

    /// The name the model calls.
    pub fn tool_name(&self) -> &str {
        &self.options.tool_name
    }

    /// Abort the current extraction: it ends with [`ExtractError::Aborted`], even if the
    /// run still ended normally. Does nothing while idle.
    pub fn abort(&self) {
        if self.running.load(Ordering::SeqCst) {
            self.aborted.store(true, Ordering::SeqCst);
            self.agent.abort();
        }
    }

    /// The partial submission, if `event` is a streamed piece of a call to the submit tool:
    /// the arguments parsed so far (a JSON object that fills in as the model writes).
    pub fn partial(&self, event: &AgentEvent) -> Option<Value> {
        read_partial(event, &self.options.tool_name, Value::clone)
    }

    /// Call `watch` with the partial submission after each streamed piece of a call to the
    /// submit tool ([`partial`](Self::partial) without the copy: `watch` reads it in place,
    /// so keep it short).
    pub fn watch_partial<F>(&self, watch: F) -> SubscriptionId
    where
        F: Fn(&Value) + Send + Sync + 'static,
    {
        let tool = self.options.tool_name.clone();
        self.agent.on_event(move |event| {
            read_partial(event, &tool, &watch);
        })
    }

    /// Run one task: prompt, let the model submit (correcting itself from validation and
    /// check errors), and return the accepted value with the run.
    ///
    /// # Errors
    /// No accepted submission ([`NoSubmission`](ExtractError::NoSubmission),
    /// [`TurnLimit`](ExtractError::TurnLimit)), a run that ended in an abort or an error
    /// ([`TimeLimit`](ExtractError::TimeLimit), [`Aborted`](ExtractError::Aborted),
    /// [`Model`](ExtractError::Model), also after an accepted submission), or a busy agent.
    pub async fn extract(&self, prompt: impl Into<Prompt>) -> Result<Extracted<T>, ExtractError> {
        self.extract_in(prompt.into(), None).await
    }

    /// [`extract`](Self::extract) as the sub-agent of a running call: each of its runs
    /// inherits the call's signal, time and context (see [`Agent::prompt_under`]).
    pub(crate) async fn extract_under(
        &self,
        prompt: Prompt,
        parent: Inherited,
    ) -> Result<Extracted<T>, ExtractError> {
        self.extract_in(prompt, Some(parent)).await
    }

    async fn extract_in(
        &self,
        prompt: Prompt,
        parent: Option<Inherited>,
    ) -> Result<Extracted<T>, ExtractError> {
        if self.running.swap(true, Ordering::SeqCst) {
            return Err(AgentError::BusyPrompting.into());
        }
        let _claim = Claim {
            running: &self.running,
            aborted: &self.aborted,
        };
        self.progress.reset();
        drop(self.slot.take());
        if !self.options.keep_transcript {
            self.agent.set_messages(self.initial.clone());
        }

        let timed_out = AtomicBool::new(false);
        let mut runs = pin!(self.runs(prompt, parent.as_ref(), &timed_out));
        let messages = match self.options.time_limit {
            None => runs.await,
            Some(limit) => {
                let deadline = Instant::now() + limit;
                tokio::select! {
                    // Polled first: once polled, `runs` is inside a run until it returns, so
                    // the abort below always reaches a running agent.
                    biased;
                    messages = &mut runs => messages,
                    () = tokio::time::sleep_until(deadline) => {
                        timed_out.store(true, Ordering::SeqCst);
                        self.agent.abort();
                        runs.await
                    }
                }
            }
        }?;
        self.judge(messages, timed_out.load(Ordering::SeqCst))
    }

    /// The prompt's run, then one run per reminder.
    async fn runs(
        &self,
        prompt: Prompt,
        parent: Option<&Inherited>,
        timed_out: &AtomicBool,
    ) -> Result<Vec<Message>, AgentError> {
        let mut messages = self.run(prompt, parent).await?.into_messages();
        while !timed_out.load(Ordering::SeqCst)
            && let Some(reminder) = self.reminder_due(&messages)
        {
            messages.extend(self.run(UserMessage::text(reminder).into(), parent).await?);
        }
        Ok(messages)
    }

    /// One run of the extraction's agent, under `parent` if it is a sub-agent's.
    async fn run(
        &self,
        prompt: Prompt,
        parent: Option<&Inherited>,
    ) -> Result<RunOutcome, AgentError> {
        match parent {
            Some(parent) => {
                let inherited = Inherited {
                    signal: parent.signal.child_token(),
                    ..parent.clone()
                };
                self.agent.prompt_under(prompt, inherited).await
            }
            None => self.agent.prompt(prompt).await,
        }
    }

    /// The reminder, if the model just answered in text with nothing accepted and turns
    /// remain.
    fn reminder_due(&self, messages: &[Message]) -> Option<&str> {
        let reminder = self.options.reminder.as_deref()?;
        let last = last_assistant(messages)?;
        let answered_in_text = !last.stop_reason.is_failure() && last.tool_calls().next().is_none();
        let due = answered_in_text
            && !self.slot.is_filled()
            && !self.was_aborted()
            && self.progress.turns() < self.options.max_turns;
        due.then_some(reminder)
    }

    fn was_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst) || self.progress.saw_abort.load(Ordering::SeqCst)
    }

    /// A failed or aborted run is never a success; then the accepted value; then why there
    /// is none.
    fn judge(&self, messages: Vec<Message>, timed_out: bool) -> Result<Extracted<T>, ExtractError> {
        let last = last_assistant(&messages);
        if let Some(last) = last.filter(|last| last.stop_reason.is_failure()) {
            let reason = last
                .error_message
                .clone()
                .unwrap_or_else(|| last.stop_reason.as_str().to_owned());
            return Err(match last.stop_reason {
                StopReason::Aborted => self.abort_error(timed_out, reason),
                _ => ExtractError::Model { message: reason },
            });
        }
        if timed_out || self.was_aborted() {
            return Err(self.abort_error(timed_out, OPERATION_ABORTED.to_owned()));
        }
        let turns = self.progress.turns();
        if let Some(value) = self.slot.take() {
            let usage = total_usage(&messages);
            return Ok(Extracted {
                value,
                messages,
                usage,
                turns,
            });
        }
        let tool = self.options.tool_name.clone();
        // The limit ended a run that would have gone on: tool results to answer, or a
        // reminder to send.
        let cut_short = last.is_some_and(|last| last.tool_calls().next().is_some())
            || self.options.reminder.is_some();
        if self.progress.limit_reached.load(Ordering::SeqCst) && cut_short {
            return Err(ExtractError::TurnLimit {
                tool,
                max_turns: self.options.max_turns,
            });
        }
        Err(ExtractError::NoSubmission { tool, turns })
    }

    fn abort_error(&self, timed_out: bool, reason: String) -> ExtractError {
        match self.options.time_limit {
            Some(limit) if timed_out => ExtractError::TimeLimit { limit },
            _ => ExtractError::Aborted { reason },
        }
    }
}

fn last_assistant(messages: &[Message]) -> Option<&AssistantMessage> {
    messages.iter().rev().find_map(Message::as_assistant)
}

/// The sum of the responses' usage (a tool's own usage is not the model's).
fn total_usage(messages: &[Message]) -> Usage {
    let mut total = Usage::default();
    for message in messages {
        if let Message::Assistant(assistant) = message {
            total += assistant.usage;
        }
    }
    total
}
