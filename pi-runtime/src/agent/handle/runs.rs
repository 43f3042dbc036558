//! Runs: a prompt or a continuation claims the run slot, and the loop is driven to its end
//! under the run's time limit.

use std::pin::pin;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::config::check_context;
use crate::agent::dispatch::{Lane, RunLimits};
use crate::agent::end::RunEnd;
use crate::agent::error::AgentError;
use crate::agent::machine::{RunState, StateLimits, deadline_after};
use crate::agent::outcome::RunOutcome;
use crate::agent::prompt::Prompt;
use crate::agent::run;
use crate::agent::state::Conversation;
use crate::agent::telemetry;
use crate::message::Message;
use crate::tool::RunContext;

use super::{Agent, RunGuard};

/// What a run inherits from where it starts: for a sub-agent's run, from the call that runs
/// it; for any other, only the context it is given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherited {
    /// The run's signal: for a sub-agent's run, a child of the call's, so that it stops
    /// when the call is stopped.
    pub(crate) signal: CancellationToken,
    /// When the run must end at the latest.
    pub(crate) deadline: Option<Instant>,
    /// The run's context.
    pub(crate) context: Option<RunContext>,
}

impl Inherited {
    fn context(context: Option<RunContext>) -> Self {
        Inherited {
            context,
            ..Inherited::default()
        }
    }
}

impl Agent {
    /// Add the prompt to the transcript and run until the model is done. Returns the
    /// messages the run added (the prompt first) and how the run ended
    /// ([`RunOutcome::end`]): completed, terminated by a tool, a turn or time limit, an abort,
    /// or a model error with the provider's text. Failures inside the run (a failed request,
    /// a failing tool) are in the outcome, not an `Err`.
    ///
    /// # Errors
    /// A run is already in progress, or the last run is paused for approval
    /// ([`AgentError::AwaitingApproval`]: resume it or [`reset`](Self::reset)).
    pub async fn prompt(&self, prompt: impl Into<Prompt>) -> Result<RunOutcome, AgentError> {
        self.prompt_in(prompt.into(), None).await
    }

    /// [`prompt`](Self::prompt) with a context for this run only: every tool call (nested
    /// ones too) and hook of the run sees `context`, and a tool's `Ctx<T>` parameter gets a
    /// clone of it. Conversations of one [`AgentDefinition`](crate::agent::AgentDefinition) run at once, each with its own
    /// context.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    /// use pi_runtime::{Ctx, tool};
    /// use serde_json::json;
    ///
    /// struct Tenant(&'static str);
    ///
    /// /// Name the tenant.
    /// #[tool]
    /// async fn whoami(Ctx(tenant): Ctx<Arc<Tenant>>) -> String {
    ///     tenant.0.to_owned()
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = FauxModel::new().respond(FauxResponse::tool_call("c1", "whoami", json!({})));
    /// let definition = Agent::builder().model(model).tools(Whoami).build_definition()?;
    /// let run = definition.conversation().prompt_with("Who am I?", Arc::new(Tenant("acme"))).await?;
    /// assert_eq!(run[2].as_tool_result().map(|r| r.text()).as_deref(), Some("acme"));
    ///
    /// let error = definition.conversation().prompt("Who am I?").await.unwrap_err();
    /// assert!(error.to_string().starts_with("tool \"whoami\" reads a context of type"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`prompt`](Self::prompt), and a tool reads a context of another type
    /// ([`AgentError::ContextType`]).
    pub async fn prompt_with<T: Send + Sync + 'static>(
        &self,
        prompt: impl Into<Prompt>,
        context: T,
    ) -> Result<RunOutcome, AgentError> {
        self.prompt_in(prompt.into(), Some(RunContext::new(context)))
            .await
    }

    /// Give every later run of this conversation that is not given its own
    /// ([`prompt_with`](Self::prompt_with)) this context.
    pub fn set_context<T: Send + Sync + 'static>(&self, context: T) {
        *self
            .shared
            .context
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(RunContext::new(context));
    }

    async fn prompt_in(
        &self,
        Prompt(prompts): Prompt,
        context: Option<RunContext>,
    ) -> Result<RunOutcome, AgentError> {
        let (limits, state) = self.start(
            AgentError::BusyPrompting,
            Inherited::context(context),
            |_, messages| Ok((messages, prompts, false)),
        )?;
        Ok(self.drive(RunGuard(&self.shared), limits, state).await)
    }

    /// Run `prompt` as the sub-agent of a running call: the run stops when the call's
    /// signal fires, and its time limit is the agent's own or what is left of the call's,
    /// whichever ends first.
    pub(crate) async fn prompt_under(
        &self,
        Prompt(prompts): Prompt,
        parent: Inherited,
    ) -> Result<RunOutcome, AgentError> {
        let (limits, state) = self.start(AgentError::BusyPrompting, parent, |_, messages| {
            Ok((messages, prompts, false))
        })?;
        Ok(self.drive(RunGuard(&self.shared), limits, state).await)
    }

    /// Run again from the current transcript (pi's `continue()`): after a tool result or a
    /// user message, ask the model; after an assistant message, deliver queued steering
    /// (else follow-up) messages as prompts.
    ///
    /// # Errors
    /// A run is in progress, the last run is paused for approval
    /// ([`AgentError::AwaitingApproval`]), the transcript is empty, or it ends with an
    /// assistant message and nothing is queued. A refused call changes nothing.
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        let (limits, state) = self.start(
            AgentError::BusyContinuing,
            Inherited::default(),
            |state, messages| match messages.last() {
                None => Err(AgentError::NoMessages),
                Some(Message::Assistant(_)) => {
                    let steering = state.poll_steering();
                    let (prompts, skip) = if steering.is_empty() {
                        (state.poll_follow_ups(), false)
                    } else {
                        (steering, true)
                    };
                    if prompts.is_empty() {
                        Err(AgentError::CannotContinueFrom("assistant"))
                    } else {
                        Ok((messages, prompts, skip))
                    }
                }
                Some(_) => Ok((messages, Vec::new(), false)),
            },
        )?;
        Ok(self.drive(RunGuard(&self.shared), limits, state).await)
    }

    /// Cancel the current run: running tools see the signal, the next model request is not
    /// made, and the run ends with an `aborted` response. Does nothing while idle.
    pub fn abort(&self) {
        if let Some(run) = self.shared.conversation().slot.current() {
            run.signal.cancel();
        }
    }

    /// Claim the run slot for a run over the transcript, as `input` decides from it (under
    /// the same lock, so a refused start changes nothing).
    pub(crate) fn start(
        &self,
        busy: AgentError,
        inherited: Inherited,
        input: impl FnOnce(
            &mut Conversation,
            Vec<Message>,
        ) -> Result<(Vec<Message>, Vec<Message>, bool), AgentError>,
    ) -> Result<(RunLimits, RunState), AgentError> {
        let config = self.shared.config();
        let context = inherited.context.or_else(|| self.shared.context());
        check_context(config.tools.registry(), context.as_ref())?;
        // The agent's own limit, or what is left of the parent's if that ends first.
        let now = Instant::now();
        let (time_limit, inherited_limit) = match (config.time_limit, inherited.deadline) {
            (own, Some(deadline)) if own.is_none_or(|own| deadline < now + own) => {
                let left = deadline.saturating_duration_since(now);
                (Some(left), Some(left))
            }
            (own, _) => (own, None),
        };
        let mut state = self.shared.conversation();
        if state.slot.is_busy() {
            return Err(busy);
        }
        if state.awaiting_approval {
            return Err(AgentError::AwaitingApproval);
        }
        let transcript = state.view.messages.clone();
        let (messages, prompts, skip_initial_steering) = input(&mut state, transcript)?;
        let limits = RunLimits {
            signal: inherited.signal,
            deadline: time_limit.map(|limit| now + limit),
            context,
            run_key: None,
            nested_failures: Some(Arc::default()),
            lane: Lane::default(),
            served_by: None,
            time_limit: inherited_limit,
        };
        state.slot.claim(limits.clone());
        state.view.error_message = None;
        let limits_of_state = StateLimits {
            max_turns: config.max_turns,
            deadline_ms: time_limit.map(deadline_after),
        };
        let run = RunState::new(
            messages,
            state.opening_tools.clone(),
            prompts,
            skip_initial_steering,
            limits_of_state,
        );
        Ok((limits, run))
    }

    /// Run until `pause` holds between two steps, and return the state there (the run slot
    /// is free again); `None` if the run ended first.
    #[cfg(test)]
    pub(crate) async fn run_until(
        &self,
        prompt: impl Into<Prompt>,
        pause: &(dyn Fn(&RunState) -> bool + Sync),
    ) -> Option<RunState> {
        let Prompt(prompts) = prompt.into();
        let (limits, mut state) = self
            .start(
                AgentError::BusyPrompting,
                Inherited::default(),
                |_, messages| Ok((messages, prompts, false)),
            )
            .ok()?;
        let _guard = RunGuard(&self.shared);
        match run::run(&self.shared, limits, &mut state, Some(pause)).await {
            Some(_) => None,
            None => Some(state),
        }
    }

    /// Run the loop under the time limit, in the run's span; the slot is free again when
    /// this returns or is dropped.
    pub(super) async fn drive(
        &self,
        _guard: RunGuard<'_>,
        limits: RunLimits,
        mut state: RunState,
    ) -> RunOutcome {
        let shared = &*self.shared;
        let config = shared.config();
        let span = telemetry::run_span(&*config.model);
        let signal = limits.signal.clone();
        let deadline = limits.deadline;
        let time_limit = limits.time_limit.or(config.time_limit);
        let mut timed_out = false;
        let messages = {
            let mut run = pin!(run::run(&self.shared, limits, &mut state, None).instrument(span));
            match deadline {
                Some(deadline) => {
                    tokio::select! {
                        messages = &mut run => messages,
                        () = tokio::time::sleep_until(deadline) => {
                            timed_out = true;
                            signal.cancel();
                            run.await
                        }
                    }
                }
                None => run.await,
            }
        };
        // Without a pause hook the run ends, or pauses for approval.
        let messages = messages.unwrap_or_else(|| state.added().to_vec());
        let timed_out = timed_out.then_some(time_limit.unwrap_or_default());
        outcome(state, messages, timed_out, config.name.as_deref())
    }
}

/// How a run that stopped driving ended: paused for approval, or its end, with an abort by
/// the time limit (`timed_out`, with the limit) reported as such. `started_as` names the
/// agent the run started with; a handoff in the run names another.
pub(crate) fn outcome(
    state: RunState,
    messages: Vec<Message>,
    timed_out: Option<Duration>,
    started_as: Option<&str>,
) -> RunOutcome {
    let agent = state
        .handed_to_agent()
        .unwrap_or(started_as)
        .map(str::to_owned);
    if state.is_paused() {
        let end = state.end().cloned().unwrap_or(RunEnd::Aborted);
        return RunOutcome {
            messages,
            turns: state.turns(),
            end,
            agent,
            paused: Some(Box::new(state)),
        };
    }
    let end = match (state.end(), timed_out) {
        (Some(RunEnd::Aborted) | None, Some(limit)) => RunEnd::TimeLimit { limit },
        (Some(end), _) => end.clone(),
        (None, _) => RunEnd::Aborted,
    };
    RunOutcome {
        messages,
        turns: state.turns(),
        end,
        agent,
        paused: None,
    }
}
