//! Hooks: what an application may decide around each tool call and each turn. Every hook
//! is an async closure; a failing or panicking hook never ends the run.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::{AgentPolicy, Approval, ApprovalRequest};
use crate::message::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage, Usage};
use crate::stream::{Context, LanguageModel, ThinkingLevel, ToolChoice};
use crate::tool::{ConversationTools, RunContext, ToolError, ToolResult};

/// What `before_tool_call` sees: a call whose arguments passed validation.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BeforeToolCall {
    /// The assistant message the call belongs to; `None` for a call made outside the loop
    /// ([`Agent::run_tool_call`](super::Agent::run_tool_call), an MCP client's call).
    pub assistant_message: Option<Arc<AssistantMessage>>,
    /// The call as the model sent it (raw arguments).
    pub tool_call: ToolCall,
    /// The validated, coerced arguments the tool would receive.
    pub args: Value,
    /// The transcript before this batch.
    pub messages: Arc<[Message]>,
    /// The run's cancellation signal.
    pub signal: CancellationToken,
    /// The run's context, if it supplies one (see [`Ctx`](crate::Ctx)).
    pub context: Option<RunContext>,
}

/// The answer of `before_tool_call`.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum ToolCallDecision {
    /// Run the call with the validated arguments.
    #[default]
    Allow,
    /// Run the call with these arguments instead. They are not validated again (as in pi).
    Replace(Value),
    /// Do not run the call; the model sees an error result.
    Block {
        /// The text the model sees; `None` or empty: `Tool execution was blocked`.
        reason: Option<String>,
        /// Mark the error result with `terminate`: the run stops after this batch if every
        /// result of the batch agrees.
        terminate: bool,
    },
}

impl ToolCallDecision {
    /// Block the call with this reason.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block {
            reason: Some(reason.into()),
            terminate: false,
        }
    }

    /// Block the call with this reason and ask the run to stop after the batch.
    pub fn block_and_terminate(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block {
            reason: Some(reason.into()),
            terminate: true,
        }
    }
}

/// What `after_tool_call` sees: a call that executed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AfterToolCall {
    /// The assistant message the call belongs to; `None` for a call made outside the loop
    /// ([`Agent::run_tool_call`](super::Agent::run_tool_call), an MCP client's call).
    pub assistant_message: Option<Arc<AssistantMessage>>,
    /// The call as the model sent it (raw arguments).
    pub tool_call: ToolCall,
    /// The arguments the tool received.
    pub args: Value,
    /// The result before any patch (`result.is_error` tells whether the call failed).
    pub result: ToolResult,
    /// The transcript before this batch.
    pub messages: Arc<[Message]>,
    /// The run's cancellation signal.
    pub signal: CancellationToken,
    /// The run's context, if it supplies one (see [`Ctx`](crate::Ctx)).
    pub context: Option<RunContext>,
}

/// Field-by-field changes to a result: each `Some` replaces the field as a
/// whole; `None` keeps it.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ToolResultPatch {
    /// Replaces the content; drops the old `structured_content` unless that is patched too.
    pub content: Option<Vec<ContentBlock>>,
    /// Replaces `details`.
    pub details: Option<Value>,
    /// Replaces `structured_content`.
    pub structured_content: Option<Value>,
    /// Replaces `usage`.
    pub usage: Option<Usage>,
    /// Replaces `terminate` (can reset it).
    pub terminate: Option<bool>,
    /// Replaces `is_error`.
    pub is_error: Option<bool>,
}

impl ToolResultPatch {
    /// A patch that changes nothing; set the fields to replace with the methods below.
    ///
    /// ```
    /// use pi_runtime::agent::ToolResultPatch;
    /// use pi_runtime::{ContentBlock, ToolResult};
    ///
    /// let mut result = ToolResult::text("secret: 42");
    /// ToolResultPatch::new().content(vec![ContentBlock::text("[redacted]")]).apply(&mut result);
    /// assert_eq!(result.text_content(), "[redacted]");
    /// ```
    pub fn new() -> Self {
        ToolResultPatch::default()
    }

    /// Replace the content.
    #[must_use]
    pub fn content(mut self, content: Vec<ContentBlock>) -> Self {
        self.content = Some(content);
        self
    }

    /// Replace `details`.
    #[must_use]
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Replace `structured_content`.
    #[must_use]
    pub fn structured_content(mut self, structured_content: Value) -> Self {
        self.structured_content = Some(structured_content);
        self
    }

    /// Replace `usage`.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Replace `terminate`.
    #[must_use]
    pub fn terminate(mut self, terminate: bool) -> Self {
        self.terminate = Some(terminate);
        self
    }

    /// Replace `is_error`.
    #[must_use]
    pub fn is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// Apply the patch.
    pub fn apply(self, result: &mut ToolResult) {
        if let Some(content) = self.content {
            result.content = content;
            if self.structured_content.is_none() {
                result.structured_content = None;
            }
        }
        if let Some(details) = self.details {
            result.details = Some(details);
        }
        if let Some(structured) = self.structured_content {
            result.structured_content = Some(structured);
        }
        if let Some(usage) = self.usage {
            result.usage = Some(usage);
        }
        if let Some(terminate) = self.terminate {
            result.terminate = terminate;
        }
        if let Some(is_error) = self.is_error {
            result.is_error = is_error;
        }
    }
}

/// What `finish_turn` sees: a finished turn, before its `turn_end`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FinishedTurn {
    /// The turn's assistant message.
    pub message: Arc<AssistantMessage>,
    /// The batch's result messages, in source order.
    pub tool_results: Vec<Arc<ToolResultMessage>>,
    /// How many messages the run has added so far.
    pub new_messages: usize,
    /// This turn's number in the run, from 1 (count turns with it, not with a counter that
    /// outlives the run).
    pub turn: usize,
    /// The run's cancellation signal.
    pub signal: CancellationToken,
    /// The conversation's tools: activate or deactivate tools for the next request.
    pub tools: ConversationTools,
}

/// The answer of `finish_turn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TurnControl {
    /// Normal scheduling: ask the model again if the batch asks for it.
    #[default]
    Proceed,
    /// End the run after this turn's `turn_end`. This is how turn limits work.
    End,
    /// Ask the model at least once more, even if nothing else would.
    Continue,
}

/// What `prepare_request` may change right before a model request. Changes to
/// the model and the thinking level stay for the rest of the run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestPlan {
    /// What the model will be asked.
    pub context: Context,
    /// The model to ask.
    pub model: Arc<dyn LanguageModel>,
    /// The reasoning level.
    pub thinking_level: ThinkingLevel,
    /// Which tool the model must call, for this request only (`None`: the provider's
    /// default, which lets the model choose). Each wire API writes it in its own format; a
    /// choice naming a tool the request does not offer is an error on every provider.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may ask for several tool calls in one response, for this request
    /// only (`None`: the provider's default). See [`StreamOptions::parallel_tool_calls`](crate::StreamOptions::parallel_tool_calls)
    /// for where each wire API puts it.
    pub parallel_tool_calls: Option<bool>,
    /// The most tool calls the response may make, for this request only (OpenAI Responses'
    /// `max_tool_calls`; the other APIs send nothing).
    pub max_tool_calls: Option<u32>,
}

pub(crate) type BeforeHook = Arc<
    dyn Fn(BeforeToolCall) -> BoxFuture<'static, Result<ToolCallDecision, ToolError>> + Send + Sync,
>;
pub(crate) type AfterHook = Arc<
    dyn Fn(AfterToolCall) -> BoxFuture<'static, Result<ToolResultPatch, ToolError>> + Send + Sync,
>;
pub(crate) type FinishTurnHook =
    Arc<dyn Fn(FinishedTurn) -> BoxFuture<'static, TurnControl> + Send + Sync>;
pub(crate) type PrepareRequestHook =
    Arc<dyn Fn(RequestPlan) -> BoxFuture<'static, RequestPlan> + Send + Sync>;

/// The hooks of a run: what an application decides around each call and each turn. An
/// [`AgentBuilder`](super::AgentBuilder) sets them one by one; an
/// [`McpServer`](crate::mcp::McpServer) takes the tool hooks of an agent
/// ([`Agent::hooks`](super::Agent::hooks)) or its own.
///
/// ```
/// use pi_runtime::agent::{Hooks, ToolCallDecision};
///
/// let hooks = Hooks::new().before_tool_call(|call| async move {
///     Ok(if call.tool_call.name == "bash" { ToolCallDecision::block("no shell") } else { ToolCallDecision::Allow })
/// });
/// assert!(format!("{hooks:?}").contains("before_tool_call: true"));
/// ```
#[derive(Clone, Default)]
pub struct Hooks {
    pub(crate) before_tool_call: Option<BeforeHook>,
    pub(crate) after_tool_call: Option<AfterHook>,
    pub(crate) finish_turn: Option<FinishTurnHook>,
    pub(crate) prepare_request: Option<PrepareRequestHook>,
    /// The agent's approval policy (see [`approval`](super::approval)).
    pub(crate) approval: Option<AgentPolicy>,
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Hooks::default()
    }

    /// Decide about each call whose arguments passed validation: allow it, replace its
    /// arguments, or block it. An `Err` or a panic becomes the call's error.
    #[must_use]
    pub fn before_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(BeforeToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolCallDecision, ToolError>> + Send + 'static,
    {
        self.before_tool_call = Some(boxed_before(hook));
        self
    }

    /// Patch each executed call's result. An `Err` or a panic replaces the
    /// result with an error result.
    #[must_use]
    pub fn after_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(AfterToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResultPatch, ToolError>> + Send + 'static,
    {
        self.after_tool_call = Some(boxed_after(hook));
        self
    }

    /// Called after every turn, before its `turn_end`. A panic ends the run.
    #[must_use]
    pub fn finish_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(FinishedTurn) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = TurnControl> + Send + 'static,
    {
        self.finish_turn = Some(boxed_finish_turn(hook));
        self
    }

    /// Change the context, the model or the thinking level right before each request.
    #[must_use]
    pub fn prepare_request<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(RequestPlan) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RequestPlan> + Send + 'static,
    {
        self.prepare_request = Some(boxed_prepare_request(hook));
        self
    }

    /// Decide which calls need a person's approval, for every tool (a tool's own policy is
    /// asked first; see [`approval`](super::approval)). It sees each call after validation
    /// and `before_tool_call`.
    #[must_use]
    pub fn approval<F>(mut self, policy: F) -> Self
    where
        F: Fn(&ApprovalRequest<'_>) -> Approval + Send + Sync + 'static,
    {
        self.approval = Some(Arc::new(policy));
        self
    }

    /// Tool hooks see the transcript, so it is only snapshotted when one is set.
    pub(crate) fn wants_transcript(&self) -> bool {
        self.before_tool_call.is_some() || self.after_tool_call.is_some()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("before_tool_call", &self.before_tool_call.is_some())
            .field("after_tool_call", &self.after_tool_call.is_some())
            .field("finish_turn", &self.finish_turn.is_some())
            .field("prepare_request", &self.prepare_request.is_some())
            .field("approval", &self.approval.is_some())
            .finish()
    }
}

pub(crate) fn boxed_before<F, Fut>(hook: F) -> BeforeHook
where
    F: Fn(BeforeToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolCallDecision, ToolError>> + Send + 'static,
{
    Arc::new(move |call| Box::pin(hook(call)))
}

pub(crate) fn boxed_after<F, Fut>(hook: F) -> AfterHook
where
    F: Fn(AfterToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResultPatch, ToolError>> + Send + 'static,
{
    Arc::new(move |call| Box::pin(hook(call)))
}

pub(crate) fn boxed_finish_turn<F, Fut>(hook: F) -> FinishTurnHook
where
    F: Fn(FinishedTurn) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = TurnControl> + Send + 'static,
{
    Arc::new(move |turn| Box::pin(hook(turn)))
}

pub(crate) fn boxed_prepare_request<F, Fut>(hook: F) -> PrepareRequestHook
where
    F: Fn(RequestPlan) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RequestPlan> + Send + 'static,
{
    Arc::new(move |plan| Box::pin(hook(plan)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_patch_drops_structured_content_unless_patched_too() {
        let mut result = ToolResult::text("old");
        result.structured_content = Some(json!({"n": 1}));
        result.details = Some(json!({"kept": true}));
        ToolResultPatch {
            content: Some(vec![ContentBlock::text("new")]),
            ..ToolResultPatch::default()
        }
        .apply(&mut result);
        assert_eq!(result.text_content(), "new");
        assert_eq!(result.structured_content, None);
        assert_eq!(result.details, Some(json!({"kept": true})));

        ToolResultPatch {
            content: Some(vec![ContentBlock::text("newer")]),
            structured_content: Some(json!({"n": 2})),
            terminate: Some(true),
            is_error: Some(true),
            ..ToolResultPatch::default()
        }
        .apply(&mut result);
        assert_eq!(result.structured_content, Some(json!({"n": 2})));
        assert!(result.terminate && result.is_error);
    }

    #[test]
    fn empty_patch_changes_nothing() {
        let mut result = ToolResult::text("same").with_terminate(true);
        let before = result.clone();
        ToolResultPatch::default().apply(&mut result);
        assert_eq!(result, before);
    }
}
