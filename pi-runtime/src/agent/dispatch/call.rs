//! One tool call's pipeline: prepare (abort check, lookup, `prepare_arguments`,
//! validation, `before_tool_call`, abort check, approval), execute with progress updates,
//! finalize (`after_tool_call`). No events here: the batch module decides when they are emitted.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures::StreamExt;
use futures::channel::mpsc;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::lane::{Entered, Hold};
use super::limits::RunLimits;
use super::link::RunLink;
use super::policy::Policies;
use super::worker;
use crate::agent::approval::{self, Approval};
use crate::agent::failure::{self, BLOCKED, CallFailure, OPERATION_ABORTED};
use crate::agent::hooks::{AfterHook, AfterToolCall, BeforeToolCall, Hooks, ToolCallDecision};
use crate::agent::machine::CallOutcome;
use crate::agent::panics::{guarded, panic_message};
use crate::agent::telemetry;
use crate::agent::turn_tools::TurnTools;
use crate::args::ValidationError;
use crate::message::{AssistantMessage, ContentBlock, Message, ToolCall};
use crate::tool::context::ToolCaller;
use crate::tool::{
    ConversationTools, ExecutionMode, Registration, Tool, ToolContext, ToolError, ToolErrorKind,
    ToolResult,
};

/// How long a running tool may ignore the run's cancellation before the loop stops waiting
/// for it: a run must end even when a tool never looks at its signal.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(1);

/// What every call of one batch shares, in one `Arc` that each spawned job and each
/// running tool's context holds. Made only by the [`Dispatcher`](super::Dispatcher).
pub(super) struct CallScope {
    pub(super) tools: Arc<TurnTools>,
    pub(super) hooks: Arc<Hooks>,
    /// The response the calls belong to; `None` for a call from outside the loop.
    pub(super) assistant: Option<Arc<AssistantMessage>>,
    pub(super) messages: Arc<[Message]>,
    pub(super) limits: Arc<RunLimits>,
    /// Record arguments and results on the tool spans.
    pub(super) capture_content: bool,
    /// The conversation's tool set, for the tools that change it.
    pub(super) conversation: Option<ConversationTools>,
    /// The tools' execution policies and what enforces them.
    pub(super) policies: Arc<Policies>,
    /// The agent's (or server's) execution mode: sequential makes every call run alone.
    pub(super) execution: ExecutionMode,
}

/// The caller a running tool's context holds: the tool's own calls of other tools
/// ([`ToolContext::call_tool`](crate::ToolContext::call_tool)) take the pipeline of the
/// scope that runs the tool, one at a time per call, and inherit the tool's hold on the
/// lane. Each gets its own `execute_tool` span, made where the calling tool runs, so it sits
/// under that tool's span.
struct NestedCaller {
    scope: Arc<CallScope>,
    hold: Hold,
    /// The caller this call inherited its hold from (it holds nothing itself): the one whose
    /// hold its nested calls run under too, however deep.
    inherited_from: Option<Arc<NestedCaller>>,
    /// The call's link to its run, in a run's batch.
    link: Option<RunLink>,
}

impl NestedCaller {
    /// The caller whose hold this call's nested calls run under.
    fn holder(self: &Arc<Self>) -> &Arc<NestedCaller> {
        self.inherited_from.as_ref().unwrap_or(self)
    }
}

impl ToolCaller for NestedCaller {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, ToolResult> {
        let span = telemetry::tool_span(&call, self.scope.capture_content);
        let recorded = span.clone();
        let run = async move {
            let scope = &self.scope;
            let outcome = match prepare_in(&call, scope, true).await {
                Preflight::Immediate(outcome) => outcome,
                Preflight::Held(held) => held.refused(&call),
                Preflight::Ready(ready) => {
                    let links = ready.registration.settings().links_to_run;
                    let link = (self.link.as_ref())
                        .filter(|_| links)
                        .map(|link| link.nested(&call.id));
                    execute_in(ready, &call, scope, Some(self.holder()), link, |_| {
                        std::future::ready(())
                    })
                    .await
                }
            };
            scope.count_nested(&call, &outcome);
            telemetry::record_outcome(&recorded, &outcome, scope.capture_content);
            outcome.result
        };
        Box::pin(run.instrument(span))
    }

    fn tools(&self) -> Option<&(dyn Any + Send + Sync)> {
        let tools = self.scope.conversation.as_ref()?;
        Some(tools)
    }

    fn link(&self) -> Option<&(dyn Any + Send + Sync)> {
        let link = self.link.as_ref()?;
        Some(link)
    }
}

impl CallScope {
    pub(super) fn signal(&self) -> &CancellationToken {
        &self.limits.signal
    }

    /// Count the failure of a call that leaves no result message (a nested call, or one from
    /// outside the loop) toward the run's retry budgets; a batch's calls count through their
    /// result messages instead.
    pub(super) fn count_nested(&self, call: &ToolCall, outcome: &CallOutcome) {
        if let Some(failures) = &self.limits.nested_failures {
            failures.record(&call.name, outcome.failure);
        }
    }

    /// Why the signal fired: the time limit, or an abort.
    fn stop_failure(&self) -> CallFailure {
        match self.limits.deadline {
            Some(deadline) if Instant::now() >= deadline => CallFailure::Timeout,
            _ => CallFailure::Cancelled,
        }
    }
}

/// A call the run's signal stopped before `execute`.
fn stopped(scope: &CallScope) -> CallOutcome {
    CallOutcome::failed(scope.stop_failure(), OPERATION_ABORTED)
}

/// A call that passed preparation and may execute.
pub(super) struct Ready<'s> {
    /// The tool, with the settings it registered with (its policy applies), borrowed from
    /// the scope's tools: a call's future holds it for the whole call, and a batch holds one
    /// future per call.
    pub(super) registration: &'s Registration,
    pub(super) args: Value,
}

/// A prepared call that needs a person's approval before it may execute.
pub(super) struct Held<'s> {
    pub(super) ready: Ready<'s>,
    pub(super) reason: String,
}

impl Held<'_> {
    /// The outcome where no run can pause for the approval: the call fails closed.
    pub(super) fn refused(&self, call: &ToolCall) -> CallOutcome {
        let text = failure::approval_unavailable(&call.name, &self.reason);
        CallOutcome::failed(CallFailure::Denied, text)
    }

    /// The outcome of a denial, for `reason`.
    pub(super) fn denied(&self, reason: &str) -> CallOutcome {
        CallOutcome::failed(CallFailure::Denied, failure::denied(reason))
    }
}

/// The result of preparation.
#[allow(
    clippy::large_enum_variant,
    reason = "made once per call and matched at once; boxing would allocate for each call that stops early"
)]
pub(super) enum Preflight<'s> {
    Immediate(CallOutcome),
    Ready(Ready<'s>),
    /// Prepared, but a policy wants a person to approve it first.
    Held(Held<'s>),
}

/// Prepare one call. Never fails: every failure is an immediate outcome.
pub(super) async fn prepare<'s>(call: &ToolCall, scope: &'s CallScope) -> Preflight<'s> {
    prepare_in(call, scope, false).await
}

/// [`prepare`] for a model's call (`nested: false`: only the offered tools) or a tool's own
/// call of another tool (`nested: true`: also the registered `codemode` and `deferred` tools,
/// which code mode scripts call without their being declared).
async fn prepare_in<'s>(call: &ToolCall, scope: &'s CallScope, nested: bool) -> Preflight<'s> {
    if scope.signal().is_cancelled() {
        return Preflight::Immediate(stopped(scope));
    }
    let tool = if nested {
        scope.tools.get_nested(&call.name)
    } else {
        scope.tools.get(&call.name)
    };
    let Some(registration) = tool else {
        let outcome = CallOutcome::failed(CallFailure::NotFound, failure::not_found(&call.name));
        return Preflight::Immediate(outcome);
    };
    let tool = registration.tool();
    let validated = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let prepared = tool.prepare_arguments(&call.arguments)?;
        validate_prepared(tool.definition(), call, &prepared).map_err(ToolError::from)
    }));
    let mut args = match validated {
        Ok(Ok(args)) => args,
        Ok(Err(error)) => {
            let outcome = CallOutcome::failed(CallFailure::Validation, error.into_message());
            return Preflight::Immediate(outcome);
        }
        Err(panic) => {
            let outcome = CallOutcome::failed(CallFailure::Panic, panic_message(&*panic));
            return Preflight::Immediate(outcome);
        }
    };
    if let Some(before) = &scope.hooks.before_tool_call {
        let context = BeforeToolCall {
            assistant_message: scope.assistant.clone(),
            tool_call: call.clone(),
            args: args.clone(),
            messages: Arc::clone(&scope.messages),
            signal: scope.signal().clone(),
            context: scope.limits.context.clone(),
        };
        let decision = guarded(|| before(context)).await;
        // An abort while the hook ran wins over whatever the hook answered (as in pi).
        if scope.signal().is_cancelled() {
            return Preflight::Immediate(stopped(scope));
        }
        match decision {
            Ok(Ok(ToolCallDecision::Allow)) => {}
            Ok(Ok(ToolCallDecision::Replace(replaced))) => args = replaced,
            Ok(Ok(ToolCallDecision::Block { reason, terminate })) => {
                let reason = reason.filter(|r| !r.is_empty());
                let text = reason.as_deref().unwrap_or(BLOCKED);
                let mut outcome = CallOutcome::failed(CallFailure::Blocked, text);
                outcome.result.terminate = terminate;
                return Preflight::Immediate(outcome);
            }
            Ok(Err(error)) => {
                let outcome = CallOutcome::failed(CallFailure::ToolError, error.into_message());
                return Preflight::Immediate(outcome);
            }
            Err(panic) => {
                return Preflight::Immediate(CallOutcome::failed(CallFailure::Panic, panic));
            }
        }
    }
    let approval = approval::check(registration, call, &args, scope.hooks.approval.as_ref());
    let ready = Ready { registration, args };
    match approval {
        Approval::NotNeeded => Preflight::Ready(ready),
        Approval::Needed { reason } => Preflight::Held(Held { ready, reason }),
    }
}

/// Validate a call's arguments for `tool`, as the loop does before `execute` (coercion, then
/// the schema check; see [`args`](crate::args)), without `prepare_arguments`. A call whose
/// final arguments failed to parse fails with
/// `Invalid arguments for tool "<name>": <argumentsError>`.
///
/// ```
/// use pi_runtime::agent::validate_tool_call;
/// use pi_runtime::{Tool, ToolCall};
/// use serde_json::json;
///
/// let add = Tool::new("add", "Add.", json!({"type": "object", "properties": {"a": {"type": "number"}}}));
/// let call = ToolCall::new("c1", "add", json!({"a": "1"}));
/// assert_eq!(validate_tool_call(&add, &call), Ok(json!({"a": 1})));
/// ```
///
/// # Errors
/// The text the model sees.
pub fn validate_tool_call(
    tool: &Tool,
    call: &ToolCall,
) -> Result<serde_json::Value, ValidationError> {
    validate_prepared(tool, call, &call.arguments)
}

fn validate_prepared(
    tool: &Tool,
    call: &ToolCall,
    prepared: &serde_json::Value,
) -> Result<serde_json::Value, ValidationError> {
    if let Some(error) = &call.arguments_error {
        return Err(ValidationError::new(failure::invalid_arguments(
            &call.name, error,
        )));
    }
    tool.validate(prepared)
}

/// Execute a prepared call, then run `after_tool_call`.
///
/// Each progress update the tool sends while it runs is handed to `on_update` and awaited
/// before the next; updates still queued when `execute` settles are delivered too, and the
/// channel is closed right after, so later updates are dropped silently. The call's `link`
/// to its run, if it has one, is where a sub-agent the tool runs reports to.
///
/// Not an `async fn`: it hands back `execute_in`'s future itself, which a layer of its own
/// would wrap in a second copy of the arguments (a batch holds one such future per call).
pub(super) fn execute<'a, U, UF>(
    ready: Ready<'a>,
    call: &'a ToolCall,
    scope: &'a Arc<CallScope>,
    link: Option<RunLink>,
    on_update: U,
) -> impl Future<Output = CallOutcome> + 'a
where
    U: FnMut(ToolResult) -> UF + 'a,
    UF: Future<Output = ()> + 'a,
{
    execute_in(ready, call, scope, None, link, on_update)
}

/// [`execute`] a call, nested in the call of `parent` if it is a nested one. The
/// call holds its lane while it runs: all of it for a sequential tool (or any tool, when the
/// agent runs sequentially), else a share.
///
/// One future for the whole call, lane and tool alike: a batch holds one per call, and each
/// layer of futures is copied whole when it starts. An `async` block, not an `async fn`,
/// which would keep a second copy of each argument for the whole call.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of each argument for the whole call"
)]
fn execute_in<'a, U, UF>(
    ready: Ready<'a>,
    call: &'a ToolCall,
    scope: &'a Arc<CallScope>,
    parent: Option<&'a Arc<NestedCaller>>,
    link: Option<RunLink>,
    mut on_update: U,
) -> impl Future<Output = CallOutcome> + 'a
where
    U: FnMut(ToolResult) -> UF + 'a,
    UF: Future<Output = ()> + 'a,
{
    async move {
        if scope.signal().is_cancelled() {
            return stopped(scope);
        }
        let registration = ready.registration;
        let alone = scope.execution == ExecutionMode::Sequential
            || registration.tool().execution_mode() == ExecutionMode::Sequential;
        let lane = &scope.limits.lane;
        let Entered {
            hold,
            share_back,
            inherited,
        } = match lane.try_enter(alone, parent.map(|parent| &parent.hold)) {
            Ok(entered) => entered,
            Err(waiting) => tokio::select! {
                biased;
                () = scope.signal().cancelled() => return stopped(scope),
                entered = lane.wait(waiting) => entered,
            },
        };
        // The tool's context is how it calls other tools: they inherit this call's hold.
        let caller = Arc::new(NestedCaller {
            scope: Arc::clone(scope),
            hold,
            inherited_from: parent.filter(|_| inherited).map(Arc::clone),
            link,
        });
        let outcome = 'call: {
            let policy = scope.policies.of(registration.settings());
            // Held until the call ends; the time limit starts once the call may run.
            let Ok(_permit) = scope.policies.permit(&policy, scope.signal()).await else {
                break 'call stopped(scope);
            };
            let (timeout, max_output) = (policy.timeout, policy.max_output);
            // The call's own signal: a child of the run's when the tool's time limit may fire
            // it, else the run's itself (a child token per call costs a lock on the run's
            // signal, which every call of a large parallel batch would contend for).
            let own_signal = timeout.map(|_| scope.signal().child_token());
            let call_signal = own_signal.as_ref().unwrap_or(scope.signal());
            let (tx, mut rx) = mpsc::unbounded();
            let context = ToolContext::dispatched(
                call.id.clone(),
                call_signal.clone(),
                tx,
                Arc::clone(&caller) as Arc<dyn ToolCaller>,
                scope.limits.context.clone(),
            )
            .with_idempotency_key(
                scope
                    .limits
                    .run_key
                    .as_ref()
                    .map(|key| format!("{key}/{}", call.id)),
            )
            .with_deadline(call_deadline(scope.limits.deadline, timeout))
            .with_served_by(scope.limits.served_by.clone());
            // `after_tool_call` needs the arguments too; only then is a copy worth making.
            let kept_args = (scope.hooks.after_tool_call.as_ref()).map(|_| ready.args.clone());
            let started = Instant::now();
            // A call with a time limit runs on a thread of its own, so that the limit fires on
            // time even when the tool blocks its thread (see `worker`).
            let job = worker::Job {
                call_id: call.id.clone(),
                args: ready.args,
                context,
            };
            let mut running = pin!(worker::start(registration.tool(), job, timeout.is_some()));
            let mut given_up = pin!(give_up(timeout, call_signal));
            let settled = loop {
                tokio::select! {
                    biased;
                    settled = &mut running => break Some(settled),
                    Some(update) = rx.next() => on_update(update).await,
                    () = &mut given_up => break None,
                }
            };
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let timed_out =
                timeout.filter(|_| call_signal.is_cancelled() && !scope.signal().is_cancelled());
            let ended = conclude(settled, call, scope, max_output, timed_out);
            while let Ok(update) = rx.try_recv() {
                on_update(update).await;
            }
            drop(rx);
            let (mut result, mut failure) = match ended {
                Ended::Settled(result, failure) => (result, failure),
                // Nothing more to wait for: no `after_tool_call` for a result that never came.
                Ended::Abandoned(result, failure) => {
                    break 'call CallOutcome {
                        result,
                        failure: Some(failure),
                        duration_ms: Some(duration_ms),
                    };
                }
            };
            if let (Some(after), Some(args)) = (&scope.hooks.after_tool_call, kept_args) {
                // Boxed: most calls have no `after_tool_call`, and its state would widen every
                // call's future (a batch holds one per call).
                Box::pin(after_call(
                    after,
                    scope,
                    call,
                    args,
                    &mut result,
                    &mut failure,
                ))
                .await;
            }
            CallOutcome {
                result,
                failure,
                duration_ms: Some(duration_ms),
            }
        };
        // A tool that keeps its context (a task it left running) keeps no hold.
        caller.hold.release();
        if let Some(share_back) = share_back {
            share_back.take_again().await;
        }
        outcome
    }
}

/// What a call came to when its tool settled, or when the loop gave up waiting for it.
enum Ended {
    /// The tool's result (or error), which `after_tool_call` may still change.
    Settled(ToolResult, Option<CallFailure>),
    /// No result came: the call is over.
    Abandoned(ToolResult, CallFailure),
}

/// The result the model reads for a call whose tool `settled` (`None`: the loop gave up on
/// it), its output cut to `max_output`. When the tool's own time limit fired (`timed_out`,
/// the run's signal did not), the model reads that the call timed out, and what is known of
/// its work, so that it does not repeat work that may be done: a tool that ended within the
/// grace period ended with a result, which the model reads after the notice (and
/// `after_tool_call` sees so); one that did not may still be running, and the text says its
/// work may yet be done.
fn conclude(
    settled: Option<worker::Settled>,
    call: &ToolCall,
    scope: &CallScope,
    max_output: Option<usize>,
    timed_out: Option<Duration>,
) -> Ended {
    let (mut result, mut failure) = match settled {
        Some(Ok(Ok(mut result))) => {
            scope.policies.cap(max_output, &mut result);
            let failure = result.is_error.then_some(CallFailure::ToolError);
            (result, failure)
        }
        Some(Ok(Err(error))) => {
            let failure = match error.kind() {
                ToolErrorKind::InvalidArguments => CallFailure::Validation,
                ToolErrorKind::Retry => CallFailure::Retry,
                _ => CallFailure::ToolError,
            };
            (ToolResult::error(error.into_message()), Some(failure))
        }
        Some(Err(panic)) => (ToolResult::error(panic), Some(CallFailure::Panic)),
        None => {
            let (text, stop) = match timed_out {
                Some(timeout) => (
                    failure::timed_out_abandoned(&call.name, timeout, STOP_GRACE),
                    CallFailure::Timeout,
                ),
                None => {
                    let stop = scope.stop_failure();
                    let timeout = stop == CallFailure::Timeout;
                    (failure::abandoned(&call.name, timeout, STOP_GRACE), stop)
                }
            };
            return Ended::Abandoned(ToolResult::error(text), stop);
        }
    };
    if let Some(timeout) = timed_out {
        let notice = failure::timed_out_then_ended(&call.name, timeout);
        result.content.insert(0, ContentBlock::text(notice));
        result.is_error = true;
        failure = Some(CallFailure::Timeout);
    }
    Ended::Settled(result, failure)
}

/// Let `after_tool_call` see the call's result and change it.
async fn after_call(
    after: &AfterHook,
    scope: &CallScope,
    call: &ToolCall,
    args: Value,
    result: &mut ToolResult,
    failure: &mut Option<CallFailure>,
) {
    let context = AfterToolCall {
        assistant_message: scope.assistant.clone(),
        tool_call: call.clone(),
        args,
        result: result.clone(),
        messages: Arc::clone(&scope.messages),
        signal: scope.signal().clone(),
        context: scope.limits.context.clone(),
    };
    match guarded(|| after(context)).await {
        Ok(Ok(patch)) => {
            patch.apply(result);
            *failure = match (result.is_error, *failure) {
                (false, _) => None,
                (true, None) => Some(CallFailure::ToolError),
                (true, failure) => failure,
            };
        }
        Ok(Err(error)) => {
            *result = ToolResult::error(error.into_message());
            *failure = Some(CallFailure::ToolError);
        }
        Err(panic) => {
            *result = ToolResult::error(panic);
            *failure = Some(CallFailure::Panic);
        }
    }
}

/// When a call is stopped at the latest: the run's deadline, or the tool's time limit from
/// now, whichever ends first.
fn call_deadline(run: Option<Instant>, timeout: Option<Duration>) -> Option<Instant> {
    let own = timeout.map(|timeout| Instant::now() + timeout);
    match (run, own) {
        (Some(run), Some(own)) => Some(run.min(own)),
        (run, own) => run.or(own),
    }
}

/// Resolves [`STOP_GRACE`] after the call's signal fired: the moment to stop waiting for a
/// tool that ignores it. The tool's own time limit (`timeout`), if it has one, fires that
/// signal; so does the run's.
async fn give_up(timeout: Option<Duration>, call_signal: &CancellationToken) {
    match timeout {
        Some(timeout) => tokio::select! {
            () = tokio::time::sleep(timeout) => call_signal.cancel(),
            () = call_signal.cancelled() => {}
        },
        None => call_signal.cancelled().await,
    }
    tokio::time::sleep(STOP_GRACE).await;
}
