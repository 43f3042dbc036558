//! Resuming a saved run, and a paused batch's decisions: checked, their edits preflighted
//! again, the pause claimed once.

use std::sync::Arc;

use crate::agent::approval::{ApprovalDecision, ApprovalError, PauseLedger};
use crate::agent::config::{Config, check_context};
use crate::agent::dispatch::{Dispatcher, Lane, RunLimits};
use crate::agent::error::AgentError;
use crate::agent::machine::held::Decided;
use crate::agent::machine::{RunState, instant_at};
use crate::agent::outcome::RunOutcome;
use crate::tool::ToolDefinition;

use super::runs::Inherited;
use super::{Agent, RunGuard};

impl Agent {
    /// Drive a [`RunState`] (this process's, or another's read back with
    /// [`RunState::from_signed_json`]) to its
    /// end with this conversation's model, tools and hooks, exactly as the run it was taken
    /// from would have gone on. The transcript becomes the state's; the time limit is the
    /// absolute one the state carries. A run paused for approval needs
    /// [`resume_with`](Self::resume_with).
    ///
    /// # Errors
    /// A run is in progress here, the state has an unsupported version, or it waits for
    /// approval decisions.
    pub async fn resume(&self, state: RunState) -> Result<RunOutcome, AgentError> {
        self.resume_with(state, []).await
    }

    /// Resume a run paused for approval ([`RunEnd::AwaitingApproval`](crate::agent::RunEnd::AwaitingApproval)) with exactly one
    /// decision per pending call, checked before anything runs (see
    /// [`approval`](crate::agent::approval)). The batch then goes on as it would have without the
    /// pause: the approved and edited calls execute with the calls that needed no approval,
    /// each denied call gets an error result carrying its reason, and the run continues.
    ///
    /// A pause resumes once: once the decisions are checked, the resume claims the state's
    /// [`pause_id`](RunState::pause_id) in the agent's
    /// [`PauseLedger`](crate::agent::approval::PauseLedger)
    /// ([`AgentBuilder::pause_ledger`](crate::agent::AgentBuilder::pause_ledger); by default one
    /// per process), and every later resume of the same pause fails.
    ///
    /// # Errors
    /// A run is in progress here, the state has an unsupported version, the decisions do
    /// not fit the pending calls ([`AgentError::Approval`]: missing, duplicate or unknown, an
    /// edit that does not validate or that `before_tool_call` blocks, changed arguments, a
    /// tool this agent lacks), or the pause was resumed before
    /// ([`ApprovalError::Claim`](crate::agent::approval::ApprovalError::Claim)). Nothing ran then.
    pub async fn resume_with(
        &self,
        state: RunState,
        decisions: impl IntoIterator<Item = ApprovalDecision>,
    ) -> Result<RunOutcome, AgentError> {
        let decisions = decisions.into_iter().collect();
        self.resume_under(state, decisions, Inherited::default())
            .await
    }

    /// [`resume_with`](Self::resume_with) as the sub-agent of a running call: the run stops
    /// when the call's signal fires, its time limit ends with the call's at the latest, and
    /// it runs with the call's context (see [`prompt_under`](Self::prompt_under)).
    pub(crate) async fn resume_under(
        &self,
        mut state: RunState,
        decisions: Vec<ApprovalDecision>,
        inherited: Inherited,
    ) -> Result<RunOutcome, AgentError> {
        state
            .check_version()
            .map_err(|error| AgentError::UnsupportedState(error.to_string()))?;
        let config = self.shared.config();
        let (mut limits, decided) = {
            let mut slot = self.shared.conversation();
            if slot.slot.is_busy() {
                return Err(AgentError::BusyContinuing);
            }
            let decided = state.decided(decisions, &tool_lookup(&config))?;
            let context = inherited.context.or_else(|| self.shared.context());
            check_context(config.tools.registry(), context.as_ref())?;
            let limits = RunLimits {
                signal: inherited.signal,
                deadline: None,
                context,
                run_key: None,
                nested_failures: Some(Arc::default()),
                lane: Lane::default(),
                served_by: None,
                time_limit: None,
            };
            // The slot is this resume's from here: the checks below wait (a hook, the
            // ledger), and the guard frees it if they refuse.
            slot.slot.claim(limits.clone());
            (limits, decided)
        };
        let guard = RunGuard(&self.shared);
        if let Some(decided) = decided {
            go_on(&config, &limits, &mut state, decided, Some(&*config.ledger)).await?;
        }
        // The time limit counts again from now (it stopped while the run was paused), and
        // ends with the parent's at the latest.
        limits.deadline = state.deadline_ms().map(instant_at);
        limits.end_by(inherited.deadline);
        {
            let mut slot = self.shared.conversation();
            slot.awaiting_approval = false;
            slot.slot.claim(limits.clone());
            slot.view.messages = state.transcript().to_vec();
            slot.opening_tools = state.opening_tools().cloned();
        }
        Ok(self.drive(guard, limits, state).await)
    }
}

/// The tools a paused batch's decisions are checked against: the agent's, as configured now.
pub(crate) fn tool_lookup(config: &Config) -> impl Fn(&str) -> Option<Arc<dyn ToolDefinition>> {
    let tools = Arc::clone(&config.tools);
    move |name| {
        tools
            .get(name)
            .map(|registration| Arc::clone(registration.tool()))
    }
}

/// Go on with a paused batch as `decided` (checked by [`RunState::decided`], the one place
/// decisions are applied): its edits through the whole preflight again, then its pause
/// claimed in `ledger` (a journal's own runs take each decision once and claim nothing),
/// then the state goes on. Nothing changes when this fails.
pub(crate) async fn go_on(
    config: &Config,
    limits: &RunLimits,
    state: &mut RunState,
    decided: Decided,
    ledger: Option<&dyn PauseLedger>,
) -> Result<(), ApprovalError> {
    let decided = preflight_edits(config, limits, state, decided).await?;
    if let (Some(ledger), Some(pause_id)) = (ledger, state.pause_id()) {
        ledger.claim(pause_id).await?;
    }
    state.go_on(decided);
    Ok(())
}

/// Put the edited calls of `decided` (the paused batch of `state`) through their preflight
/// again, with `config`'s tools and hooks under `limits`.
async fn preflight_edits(
    config: &Config,
    limits: &RunLimits,
    state: &RunState,
    decided: Decided,
) -> Result<Decided, ApprovalError> {
    let Some(response) = state.paused_response() else {
        return Ok(decided);
    };
    let dispatcher = Dispatcher::new(
        Arc::clone(&config.tools),
        Arc::clone(&config.hooks),
        Arc::clone(&config.policies),
        config.execution,
        Arc::new(limits.clone()),
        config.capture_content,
    );
    // The hooks see the transcript before the batch, as on the model's path.
    let messages = dispatcher.hook_transcript(state.transcript());
    dispatcher
        .preflight_edits(Arc::clone(response), messages, decided)
        .await
}
