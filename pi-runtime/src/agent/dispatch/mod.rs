//! The one path every tool call takes: lookup in the turn's tools,
//! `prepare_arguments`, validation, `before_tool_call`, execution under the run's
//! cancellation and deadline, `after_tool_call`; the batch's phases; and the rule that a
//! sequential tool runs alone.
//!
//! The loop dispatches a response's batch, [`Agent::run_tool_call`](super::Agent::run_tool_call)
//! and the MCP server dispatch one call each; all of them build a [`Dispatcher`] and nothing
//! else, so hooks, limits and error texts are the same wherever a call comes from.

mod batch;
mod call;
mod held;
mod policy;
mod worker;

use std::future::Future;
use std::sync::Arc;

use tokio::sync::RwLock;

pub(crate) use batch::{BatchOutcome, BatchRun, CallRecord};
pub use call::validate_tool_call;
pub(crate) use call::{Outcome, RunLimits, guarded, panic_message};
pub(crate) use held::{Decided, HeldCall, decide};
pub(crate) use policy::Policies;
pub use policy::ToolPolicies;

use self::call::{CallScope, Preflight};
use super::hooks::Hooks;
use super::journal::Journal;
use super::sink::Bus;
use super::turn_tools::TurnTools;
use crate::message::{AssistantMessage, Message, ToolCall};
use crate::tool::{ConversationTools, ExecutionMode, ToolDefinition, ToolResult, ToolSwitch};

/// Serializes sequential tools against every other call made through the same lane: a
/// sequential tool takes it alone, any other tool shares it. Calls that arrive one at a time
/// from independent callers (MCP clients) use it; a batch applies the same rule by running
/// sequentially.
pub(crate) type Lane = Arc<RwLock<()>>;

/// Dispatches tool calls for one turn, or for single calls from outside the loop.
#[derive(Clone)]
pub(crate) struct Dispatcher {
    tools: Arc<TurnTools>,
    hooks: Arc<Hooks>,
    execution: ExecutionMode,
    limits: Arc<RunLimits>,
    /// Record arguments and results on the tool spans.
    capture_content: bool,
    /// The conversation's tool set, which a tool may change (see
    /// [`ToolContext::tools`](crate::ToolContext::tools)).
    conversation: Option<ConversationTools>,
    /// The tools' execution policies and what enforces them.
    policies: Arc<Policies>,
}

impl Dispatcher {
    /// A dispatcher of `tools` with these hooks, policies (`config`'s, or a server's) and
    /// run limits.
    pub(crate) fn new(
        tools: Arc<TurnTools>,
        hooks: Arc<Hooks>,
        policies: Arc<Policies>,
        execution: ExecutionMode,
        limits: Arc<RunLimits>,
        capture_content: bool,
    ) -> Self {
        Dispatcher {
            tools,
            hooks,
            execution,
            limits,
            capture_content,
            conversation: None,
            policies,
        }
    }

    /// Let the tools change the conversation's tool set through `switch`.
    pub(crate) fn with_switch(mut self, switch: Arc<dyn ToolSwitch>) -> Self {
        self.conversation = Some(ConversationTools::new(switch));
        self
    }

    /// The only place a [`CallScope`] is made.
    fn scope(
        &self,
        assistant: Option<Arc<AssistantMessage>>,
        messages: Arc<[Message]>,
    ) -> Arc<CallScope> {
        Arc::new(CallScope {
            tools: Arc::clone(&self.tools),
            hooks: Arc::clone(&self.hooks),
            assistant,
            messages,
            limits: Arc::clone(&self.limits),
            capture_content: self.capture_content,
            conversation: self.conversation.clone(),
            policies: Arc::clone(&self.policies),
        })
    }

    /// The transcript the tool hooks see, snapshotted only when one is set.
    pub(crate) fn hook_transcript(&self, messages: &[Message]) -> Arc<[Message]> {
        if self.hooks.wants_transcript() {
            Arc::from(messages)
        } else {
            Arc::from(Vec::new())
        }
    }

    /// A sequential tool runs alone: it makes its whole batch sequential, and takes a lane
    /// for itself. Unknown tools do not count (as in pi).
    fn runs_alone(tool: &dyn ToolDefinition) -> bool {
        tool.execution_mode() == ExecutionMode::Sequential
    }

    /// Whether `assistant`'s batch runs one call at a time.
    fn sequential(&self, assistant: &AssistantMessage) -> bool {
        self.execution == ExecutionMode::Sequential
            || assistant.tool_calls().any(|call| {
                (self.tools.get(&call.name))
                    .is_some_and(|registered| Self::runs_alone(registered.tool().as_ref()))
            })
    }

    /// Run every call of `assistant`, emitting the tool events and result messages on `bus`;
    /// or hold the batch after its preflight when a call needs approval.
    pub(crate) async fn run_batch(
        &self,
        assistant: Arc<AssistantMessage>,
        messages: Arc<[Message]>,
        bus: &Bus,
        journal: Option<&dyn Journal>,
    ) -> BatchRun {
        let sequential = self.sequential(&assistant);
        let approvals = self.hooks.approval.is_some()
            || assistant.tool_calls().any(|call| {
                (self.tools.get(&call.name))
                    .is_some_and(|registered| registered.settings().approval.may_ask())
            });
        let scope = self.scope(Some(assistant), messages);
        batch::run(scope, sequential, approvals, bus, journal).await
    }

    /// Go on with `assistant`'s batch, held for approval and resolved by [`decide`].
    pub(crate) async fn resume_batch(
        &self,
        assistant: Arc<AssistantMessage>,
        held: Vec<HeldCall>,
        messages: Arc<[Message]>,
        bus: &Bus,
        journal: Option<&dyn Journal>,
    ) -> BatchOutcome {
        let sequential = self.sequential(&assistant);
        let scope = self.scope(Some(assistant), messages);
        batch::resume(scope, held, sequential, bus, journal).await
    }

    /// Put the edited calls of `decided`, the batch of `assistant` held for approval,
    /// through their preflight again (see [`held::preflight_edits`]).
    pub(crate) async fn preflight_edits(
        &self,
        assistant: Arc<AssistantMessage>,
        messages: Arc<[Message]>,
        decided: Decided,
    ) -> Result<Decided, crate::agent::approval::ApprovalError> {
        let scope = self.scope(Some(assistant), messages);
        held::preflight_edits(&scope, decided).await
    }

    /// Run one call outside a batch: no events and no messages; each progress update goes
    /// to `on_update`. With a `lane`, a sequential tool waits for every other call on it.
    pub(crate) async fn call<U, UF>(
        &self,
        call: &ToolCall,
        messages: Arc<[Message]>,
        lane: Option<&Lane>,
        on_update: U,
    ) -> ToolResult
    where
        U: FnMut(ToolResult) -> UF,
        UF: Future<Output = ()>,
    {
        let scope = self.scope(None, messages);
        let outcome = match call::prepare(call, &scope).await {
            Preflight::Immediate(outcome) => outcome,
            // Nothing here can pause for a person: the call fails closed.
            Preflight::Held(held) => held.refused(call),
            Preflight::Ready(ready) => {
                let alone = self.execution == ExecutionMode::Sequential
                    || Self::runs_alone(ready.registration.tool().as_ref());
                // Held until the call ends.
                let (_alone, _shared) = match lane {
                    Some(lane) if alone => (Some(lane.write().await), None),
                    Some(lane) => (None, Some(lane.read().await)),
                    None => (None, None),
                };
                call::execute(ready, call, &scope, on_update).await
            }
        };
        scope.count_nested(call, &outcome);
        outcome.result
    }
}
