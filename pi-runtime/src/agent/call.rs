//! One tool call's pipeline (SPEC §3): prepare (abort check, lookup, `prepare_arguments`,
//! validation, `before_tool_call`, abort check), execute with progress updates, finalize
//! (`after_tool_call`). No events here: the batch module decides when they are emitted.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::hooks::{AfterToolCall, BeforeToolCall, Hooks, ToolCallDecision};
use crate::args::validate_prepared;
use crate::message::{AssistantMessage, Message, ToolCall, ToolResultMessage, now_ms};
use crate::tool::{ToolContext, ToolDefinition, ToolRegistry, ToolResult};

/// The text of every call stopped by the run's cancellation signal (SPEC §3.7).
pub(crate) const ABORTED: &str = "Operation aborted";
const BLOCKED: &str = "Tool execution was blocked";

/// What every call of one batch shares; cheap to clone into a spawned job.
#[derive(Clone)]
pub(crate) struct CallScope {
    pub(crate) hooks: Arc<Hooks>,
    pub(crate) assistant: Arc<AssistantMessage>,
    pub(crate) messages: Arc<[Message]>,
    pub(crate) signal: CancellationToken,
}

/// A finished call: the result the model sees (`result.is_error` is the call's error flag)
/// and how long `execute` took, when it ran.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) result: ToolResult,
    pub(crate) duration_ms: Option<u64>,
}

impl Outcome {
    /// An immediate outcome: the call ended before `execute`.
    pub(crate) fn immediate(message: impl Into<String>) -> Self {
        Outcome {
            result: ToolResult::error(message),
            duration_ms: None,
        }
    }

    /// The transcript message of this outcome (SPEC §3.6).
    pub(crate) fn into_message(self, call: &ToolCall) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: self.result.content,
            details: self.result.details,
            usage: self.result.usage,
            is_error: self.result.is_error,
            duration_ms: self.duration_ms,
            timestamp: now_ms(),
        }
    }
}

/// A call that passed preparation and may execute.
pub(crate) struct Ready {
    pub(crate) tool: Arc<dyn ToolDefinition>,
    pub(crate) args: Value,
}

/// The result of preparation.
pub(crate) enum Preflight {
    Immediate(Outcome),
    Ready(Ready),
}

/// Prepare one call (SPEC §3.2). Never fails: every failure is an immediate outcome.
pub(crate) async fn prepare(call: &ToolCall, tools: &ToolRegistry, scope: &CallScope) -> Preflight {
    if scope.signal.is_cancelled() {
        return Preflight::Immediate(Outcome::immediate(ABORTED));
    }
    let Some(tool) = tools.get(&call.name) else {
        return Preflight::Immediate(Outcome::immediate(format!("Tool {} not found", call.name)));
    };
    let validated = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let prepared = tool.prepare_arguments(&call.arguments)?;
        validate_prepared(tool.definition(), call, &prepared)
    }));
    let mut args = match validated {
        Ok(Ok(args)) => args,
        Ok(Err(error)) => return Preflight::Immediate(Outcome::immediate(error.into_message())),
        Err(panic) => return Preflight::Immediate(Outcome::immediate(panic_message(&*panic))),
    };
    if let Some(before) = &scope.hooks.before_tool_call {
        let context = BeforeToolCall {
            assistant_message: Arc::clone(&scope.assistant),
            tool_call: call.clone(),
            args: args.clone(),
            messages: Arc::clone(&scope.messages),
            signal: scope.signal.clone(),
        };
        let decision = guarded(|| before(context)).await;
        // An abort while the hook ran wins over whatever the hook answered (SPEC §3.2).
        if scope.signal.is_cancelled() {
            return Preflight::Immediate(Outcome::immediate(ABORTED));
        }
        match decision {
            Ok(Ok(ToolCallDecision::Allow)) => {}
            Ok(Ok(ToolCallDecision::Replace(replaced))) => args = replaced,
            Ok(Ok(ToolCallDecision::Block { reason, terminate })) => {
                let reason = reason.filter(|r| !r.is_empty());
                let mut outcome = Outcome::immediate(reason.as_deref().unwrap_or(BLOCKED));
                outcome.result.terminate = terminate;
                return Preflight::Immediate(outcome);
            }
            Ok(Err(error)) => {
                return Preflight::Immediate(Outcome::immediate(error.into_message()));
            }
            Err(panic) => return Preflight::Immediate(Outcome::immediate(panic)),
        }
    }
    Preflight::Ready(Ready {
        tool: Arc::clone(tool),
        args,
    })
}

/// Execute a prepared call, then run `after_tool_call` (SPEC §3.4, §3.5).
///
/// Each progress update the tool sends while it runs is handed to `on_update` and awaited
/// before the next; updates still queued when `execute` settles are delivered too, and the
/// channel is closed right after, so later updates are dropped (SPEC §5.12).
pub(crate) async fn execute<U, UF>(
    ready: Ready,
    call: &ToolCall,
    scope: &CallScope,
    mut on_update: U,
) -> Outcome
where
    U: FnMut(ToolResult) -> UF,
    UF: Future<Output = ()>,
{
    let Ready { tool, args } = ready;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let context = ToolContext::new(call.id.clone(), scope.signal.clone(), Some(tx));
    // `after_tool_call` needs the arguments too; only then is a copy worth making.
    let kept_args = scope.hooks.after_tool_call.as_ref().map(|_| args.clone());
    let started = Instant::now();
    let mut running = pin!(guarded(|| tool.execute(call.id.clone(), args, context)));
    let settled = loop {
        tokio::select! {
            biased;
            settled = &mut running => break settled,
            Some(update) = rx.recv() => on_update(update).await,
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    while let Ok(update) = rx.try_recv() {
        on_update(update).await;
    }
    drop(rx);
    let result = match settled {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => ToolResult::error(error.into_message()),
        Err(panic) => ToolResult::error(panic),
    };
    let mut outcome = Outcome {
        result,
        duration_ms: Some(duration_ms),
    };
    if let (Some(after), Some(args)) = (&scope.hooks.after_tool_call, kept_args) {
        let context = AfterToolCall {
            assistant_message: Arc::clone(&scope.assistant),
            tool_call: call.clone(),
            args,
            result: outcome.result.clone(),
            messages: Arc::clone(&scope.messages),
            signal: scope.signal.clone(),
        };
        match guarded(|| after(context)).await {
            Ok(Ok(patch)) => patch.apply(&mut outcome.result),
            Ok(Err(error)) => outcome.result = ToolResult::error(error.into_message()),
            Err(panic) => outcome.result = ToolResult::error(panic),
        }
    }
    outcome
}

/// Run a user future, turning a panic (while creating or polling it) into its message.
pub(crate) async fn guarded<F, Fut>(make: F) -> Result<Fut::Output, String>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let future =
        std::panic::catch_unwind(AssertUnwindSafe(make)).map_err(|panic| panic_message(&*panic))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|panic| panic_message(&*panic))
}

/// The message of a panic payload (`panic!("...")` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked".to_owned()
    }
}
