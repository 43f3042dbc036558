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
mod edits;
mod lane;
mod limits;
mod link;
mod policy;
mod worker;

use std::future::Future;
use std::sync::Arc;

pub(crate) use batch::BatchCalls;
pub use call::validate_tool_call;
pub(crate) use limits::RunLimits;
pub(crate) use link::{JobReport, RunLink};
pub(crate) use policy::Policies;
pub use policy::ToolPolicies;

use self::call::{CallScope, Preflight};
use super::approval::ApprovalError;
use super::hooks::Hooks;
use super::machine::BatchPlan;
use super::machine::held::Decided;
use super::turn_tools::TurnTools;
use crate::message::{AssistantMessage, Message, ToolCall};
use crate::tool::{ConversationTools, ExecutionMode, ToolResult, ToolSwitch};

pub(crate) use lane::Lane;

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
            execution: self.execution,
        })
    }

    /// The transcript the tool hooks (and tools that read it) see, snapshotted only when
    /// one is set (or offered).
    pub(crate) fn hook_transcript(&self, messages: &[Message]) -> Arc<[Message]> {
        if self.hooks.wants_transcript() || self.tools.reads_transcript() {
            Arc::from(messages)
        } else {
            Arc::from(Vec::new())
        }
    }

    /// How `assistant`'s batch runs: sequential when the agent or one of its offered tools
    /// says so (a sequential tool runs alone; unknown tools do not count, as in pi),
    /// prepared whole first when a policy may ask about a call, and the retry budgets of the
    /// tools it calls. One lookup per call.
    pub(crate) fn plan(&self, assistant: &AssistantMessage) -> BatchPlan {
        let mut sequential = self.execution == ExecutionMode::Sequential;
        let mut approvals = self.hooks.approval.is_some();
        let mut plan = BatchPlan::new();
        for call in assistant.tool_calls() {
            let offered = self.tools.get(&call.name);
            if let Some(registered) = offered {
                sequential |= registered.tool().execution_mode() == ExecutionMode::Sequential;
                approvals |= registered.settings().approval.may_ask();
            }
            let registered = offered.or_else(|| self.tools.get_nested(&call.name));
            if let Some(retries) = registered.and_then(|r| self.policies.retries(r.settings())) {
                plan = plan.retry_budget(call.name.clone(), retries);
            }
        }
        plan.sequential(sequential).approvals(approvals)
    }

    /// The retry budget of `tool`, if it has one.
    pub(crate) fn retry_budget(&self, tool: &str) -> Option<u32> {
        let registration = self.tools.get_nested(tool)?;
        self.policies.retries(registration.settings())
    }

    /// The calls of `assistant`'s batch, whose hooks see `messages`.
    pub(crate) fn batch(
        &self,
        assistant: Arc<AssistantMessage>,
        messages: Arc<[Message]>,
    ) -> BatchCalls {
        BatchCalls::new(self.scope(Some(assistant), messages))
    }

    /// Put the edited calls of `decided`, the batch of `assistant` held for approval,
    /// through their preflight again (see [`edits::preflight_edits`]).
    pub(crate) async fn preflight_edits(
        &self,
        assistant: Arc<AssistantMessage>,
        messages: Arc<[Message]>,
        decided: Decided,
    ) -> Result<Decided, ApprovalError> {
        let scope = self.scope(Some(assistant), messages);
        edits::preflight_edits(&scope, decided).await
    }

    /// Run one call outside a batch: no events and no messages; each progress update goes
    /// to `on_update`. A sequential tool waits for every other call on the limits' lane.
    /// Nothing here can pause for a person: a call that needs approval fails closed.
    pub(crate) async fn call<U, UF>(
        &self,
        call: &ToolCall,
        messages: Arc<[Message]>,
        on_update: U,
    ) -> ToolResult
    where
        U: FnMut(ToolResult) -> UF,
        UF: Future<Output = ()>,
    {
        let unavailable = |_: String| std::future::ready(Verdict::Unavailable);
        self.call_approved_by(call, messages, on_update, unavailable)
            .await
    }

    /// [`call`](Self::call), where a call that needs approval asks `approve` (given the
    /// reason) and runs only on its approval.
    pub(crate) async fn call_approved_by<U, UF, A, AF>(
        &self,
        call: &ToolCall,
        messages: Arc<[Message]>,
        on_update: U,
        approve: A,
    ) -> ToolResult
    where
        U: FnMut(ToolResult) -> UF,
        UF: Future<Output = ()>,
        A: FnOnce(String) -> AF,
        AF: Future<Output = Verdict>,
    {
        let scope = self.scope(None, messages);
        let outcome = match call::prepare(call, &scope).await {
            Preflight::Immediate(outcome) => outcome,
            Preflight::Held(held) => match approve(held.reason.clone()).await {
                Verdict::Approve => call::execute(held.ready, call, &scope, None, on_update).await,
                Verdict::Deny(reason) => held.denied(&reason),
                Verdict::Unavailable => held.refused(call),
            },
            Preflight::Ready(ready) => call::execute(ready, call, &scope, None, on_update).await,
        };
        scope.count_nested(call, &outcome);
        outcome.result
    }
}

/// What was decided about a call outside a run that needs approval. Only an MCP server
/// asks anyone (its client); without it every call is `Unavailable`.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) enum Verdict {
    Approve,
    /// Denied, for this reason (may be empty).
    Deny(String),
    /// Nobody could be asked: the call fails closed.
    Unavailable,
}
