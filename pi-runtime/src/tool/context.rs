//! `ToolContext`: what a running tool gets besides its arguments: its call id, the run's
//! cancellation signal and a progress channel.

use std::any::Any;
use std::sync::Arc;

// futures' channel rather than tokio's: it allocates per update, where tokio's allocates a
// block of 32 results up front, for every call, though most calls send no update at all.
use futures::channel::mpsc;
use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{RunContext, ToolResult};
use crate::message::ToolCall;

/// The context of one tool execution.
///
/// Cloning is cheap. A clone that outlives the call is harmless: updates sent after the
/// call settled are dropped silently.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use pi_runtime::{ToolContext, ToolResult};
/// use tokio_util::sync::CancellationToken;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let context = ToolContext::new("c1", CancellationToken::new())
///     .on_update(move |update: ToolResult| sink.lock().unwrap().push(update.text_content()));
/// context.update(ToolResult::text("halfway"));
/// assert_eq!(*seen.lock().unwrap(), ["halfway"]);
/// ```
#[derive(Clone)]
pub struct ToolContext {
    call_id: String,
    signal: CancellationToken,
    updates: Updates,
    /// The pipeline of the call's dispatcher, for the tool's own calls of other tools.
    caller: Option<Arc<dyn ToolCaller>>,
    /// The run's context, if it supplies one.
    run_context: Option<RunContext>,
    /// The key a durable run gives this call, the same on every attempt.
    idempotency_key: Option<String>,
    /// When the call is stopped at the latest: the run's time limit, or the tool's own.
    deadline: Option<Instant>,
    /// What serves the call to a remote caller: an MCP server's `ConnectedClient`, erased
    /// because the tool layer knows nothing of MCP.
    served_by: Option<Arc<dyn Any + Send + Sync>>,
}

/// Runs a tool's calls of other tools through the pipeline that runs the tool itself.
pub(crate) trait ToolCaller: Send + Sync {
    fn call(self: Arc<Self>, call: ToolCall) -> BoxFuture<'static, ToolResult>;

    /// The tool set of the conversation the call runs in, when it runs in one: a
    /// `ConversationTools`, which `ToolContext::tools` (in `switch`) gets back. Erased because
    /// that tool set holds the registry, which holds tools, whose `execute` takes this
    /// context: naming it here would make the context depend on everything above it.
    fn tools(&self) -> Option<&(dyn Any + Send + Sync)>;

    /// The call's link to its run, when the call runs in a run's batch: where a sub-agent
    /// the call runs reports to, the agent's `RunLink`, erased for the same reason.
    fn link(&self) -> Option<&(dyn Any + Send + Sync)>;
}

/// Where a context's progress updates go.
#[derive(Clone)]
enum Updates {
    Dropped,
    Channel(mpsc::UnboundedSender<ToolResult>),
    Callback(Arc<dyn Fn(ToolResult) + Send + Sync>),
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("signal", &self.signal)
            .field("updates", &!matches!(self.updates, Updates::Dropped))
            .field("caller", &self.caller.is_some())
            .field("run_context", &self.run_context)
            .field("idempotency_key", &self.idempotency_key)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl ToolContext {
    /// A context for the call `call_id` under `signal`; its updates are dropped until
    /// [`on_update`](Self::on_update) says where they go.
    pub fn new(call_id: impl Into<String>, signal: CancellationToken) -> Self {
        ToolContext {
            call_id: call_id.into(),
            signal,
            updates: Updates::Dropped,
            caller: None,
            run_context: None,
            idempotency_key: None,
            deadline: None,
            served_by: None,
        }
    }

    /// Give the call this run context (what a `Ctx<T>` parameter reads).
    #[must_use]
    pub fn with_run_context(mut self, context: RunContext) -> Self {
        self.run_context = Some(context);
        self
    }

    /// The run's context, if the run supplies one (see [`Ctx`](super::Ctx)).
    pub fn run_context(&self) -> Option<&RunContext> {
        self.run_context.as_ref()
    }

    /// The run's context, if the run supplies one of type `T`.
    pub fn context<T: 'static>(&self) -> Option<&T> {
        self.run_context.as_ref().and_then(RunContext::get)
    }

    /// The key to pass on to external systems so that a call made twice takes effect once:
    /// `<run key>/<call id>` in a durable run (see `pi_runtime::durable`), where the call in
    /// flight when a process dies runs again after the restart with the same key. `None`
    /// outside a durable run.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// When the call will be stopped at the latest (its signal fires then): the run's time
    /// limit or the tool's own, whichever ends first. `None` when neither is set. A tool
    /// that hands work on (a sub-agent, a remote job) gives it what is left.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Stop the call at `deadline` at the latest (see [`deadline`](Self::deadline)).
    #[must_use]
    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// What serves the call to a remote caller (see the field).
    #[must_use]
    pub(crate) fn with_served_by(mut self, served_by: Option<Arc<dyn Any + Send + Sync>>) -> Self {
        self.served_by = served_by;
        self
    }

    /// What serves the call to a remote caller, when something does.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn served_by(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.served_by.as_deref()
    }

    /// Give the call the key a durable run gives it.
    #[must_use]
    pub(crate) fn with_idempotency_key(mut self, key: Option<String>) -> Self {
        self.idempotency_key = key;
        self
    }

    /// Send each progress update to `sink`.
    #[must_use]
    pub fn on_update(mut self, sink: impl Fn(ToolResult) + Send + Sync + 'static) -> Self {
        self.updates = Updates::Callback(Arc::new(sink));
        self
    }

    /// The dispatcher's context: updates go to the call's channel, and the tool's own calls
    /// to `caller`.
    pub(crate) fn dispatched(
        call_id: String,
        signal: CancellationToken,
        updates: mpsc::UnboundedSender<ToolResult>,
        caller: Arc<dyn ToolCaller>,
        run_context: Option<RunContext>,
    ) -> Self {
        ToolContext {
            call_id,
            signal,
            updates: Updates::Channel(updates),
            caller: Some(caller),
            run_context,
            idempotency_key: None,
            deadline: None,
            served_by: None,
        }
    }

    /// A context for calling a tool directly: never cancelled, updates dropped.
    pub fn detached(call_id: impl Into<String>) -> Self {
        ToolContext::new(call_id, CancellationToken::new())
    }

    /// The id of the call being executed.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The run's cancellation signal. A tool must watch it itself: the loop never
    /// interrupts a running tool.
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }

    /// True once the run was aborted.
    pub fn is_cancelled(&self) -> bool {
        self.signal.is_cancelled()
    }

    /// What runs the call, when an agent does: the pipeline for the tool's own calls, and the
    /// conversation's tools ([`tools`](Self::tools)).
    pub(crate) fn caller(&self) -> Option<&Arc<dyn ToolCaller>> {
        self.caller.as_ref()
    }

    /// Call another tool of the same turn through the pipeline that runs this one: lookup,
    /// `prepare_arguments`, validation, the agent's `before_tool_call` and
    /// `after_tool_call`, the run's cancellation and time limit. The result is what the
    /// model would have seen; the nested call emits no events and adds no message. Its
    /// progress updates are dropped. A failure counts toward the called tool's retry budget
    /// for the run, as a failed call of the model does.
    ///
    /// A context made outside an agent ([`new`](Self::new), [`detached`](Self::detached))
    /// has no tools to call: the result is an error.
    pub async fn call_tool(&self, call: ToolCall) -> ToolResult {
        match &self.caller {
            Some(caller) => Arc::clone(caller).call(call).await,
            None => ToolResult::error(format!(
                "Tool {} not found: this context was not made by an agent, so it has no tools to call",
                call.name
            )),
        }
    }

    /// Stream a progress update (`tool_execution_update`). Never fails; an update sent
    /// after the call finished is ignored.
    pub fn update(&self, partial: ToolResult) {
        match &self.updates {
            Updates::Dropped => {}
            // The receiver is gone once the call settled; late updates are no-ops by design.
            Updates::Channel(tx) => {
                let _ = tx.unbounded_send(partial);
            }
            Updates::Callback(sink) => sink(partial),
        }
    }
}
