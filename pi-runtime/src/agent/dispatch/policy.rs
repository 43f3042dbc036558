//! Each tool's execution policy around one call: its effective policy (the tool's, over the
//! agent's defaults), the permit of its named concurrency limit, and the cap on its output
//! (the dispatcher's call future keeps its time limit). The retry budget is checked by the
//! run driver after each batch, over the run's result messages and the failures of the
//! calls that leave none, which the dispatcher counts here ([`NestedFailures`]).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::agent::failure::CallFailure;
use crate::tool::output::cap_text;
use crate::tool::{
    ConcurrencyLimits, OutputSaver, TempFileSaver, ToolPolicy, ToolResult, ToolSettings,
};

/// What the dispatcher needs to enforce policies: the agent's defaults, the named limits
/// (shared by every conversation of a definition), where cut output is saved, and the cap on
/// calls running at once in one batch.
#[derive(Clone)]
pub(crate) struct Policies {
    pub(crate) defaults: ToolPolicy,
    pub(crate) limits: ConcurrencyLimits,
    pub(crate) saver: Arc<dyn OutputSaver>,
    /// At most this many calls of one batch execute at once.
    pub(crate) batch_concurrency: Option<usize>,
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            defaults: ToolPolicy::new(),
            limits: ConcurrencyLimits::new(),
            saver: Arc::new(TempFileSaver::new()),
            batch_concurrency: None,
        }
    }
}

impl fmt::Debug for Policies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policies")
            .field("defaults", &self.defaults)
            .field("limits", &self.limits)
            .field("batch_concurrency", &self.batch_concurrency)
            .finish_non_exhaustive()
    }
}

impl Policies {
    /// The policy the dispatcher applies to the calls of a tool with these settings.
    pub(crate) fn of(&self, settings: &ToolSettings) -> ToolPolicy {
        settings.policy.clone().or(&self.defaults)
    }

    /// The retry budget of a tool with `settings` (what [`of`](Self::of) says, without
    /// building the whole policy).
    pub(crate) fn retries(&self, settings: &ToolSettings) -> Option<u32> {
        settings.policy.retries.or(self.defaults.retries)
    }

    /// Wait for the permit of `policy`'s named limit, unless `signal` fires first (`Err`).
    /// `Ok(None)` when the policy names no limit.
    pub(crate) async fn permit(
        &self,
        policy: &ToolPolicy,
        signal: &CancellationToken,
    ) -> Result<Option<OwnedSemaphorePermit>, Stopped> {
        let Some(limit) = &policy.concurrency else {
            return Ok(None);
        };
        acquire(self.limits.semaphore(limit), signal)
            .await
            .map(Some)
    }

    /// Cut `result`'s text to `max_output` (a policy's), saving the full text; the saved
    /// file's path goes into an object `details` as `fullOutputPath`.
    pub(crate) fn cap(&self, max_output: Option<usize>, result: &mut ToolResult) {
        let Some(max) = max_output else { return };
        let Some((content, path)) = cap_text(&result.content, max, self.saver.as_ref()) else {
            return;
        };
        result.content = content;
        if let Some(path) = path {
            match &mut result.details {
                Some(Value::Object(details)) => {
                    details.insert("fullOutputPath".into(), Value::String(path));
                }
                None => {
                    result.details = Some(serde_json::json!({ "fullOutputPath": path }));
                }
                // Details of another shape are the tool's own; the text names the file.
                Some(_) => {}
            }
        }
    }
}

/// An agent's execution policies as a whole, to run its tools elsewhere under the same rules
/// ([`Agent::tool_policies`](crate::agent::Agent::tool_policies), given to an
/// [`McpServer`](crate::mcp::McpServer) with `with_tool_policies`): the defaults of
/// [`AgentBuilder::tool_policy`](crate::agent::AgentBuilder::tool_policy), the named
/// concurrency limits, shared and not copied (a call served elsewhere holds a permit the
/// agent's own calls wait for), and where cut output is saved.
///
/// The default is what a tool set gets without an agent: each tool's own policy, limits of
/// its own, output saved to the system's temporary directory.
#[derive(Clone, Debug, Default)]
pub struct ToolPolicies {
    #[cfg_attr(
        not(feature = "mcp"),
        allow(dead_code, reason = "only McpServer (feature mcp) reads it")
    )]
    pub(crate) inner: Arc<Policies>,
}

/// The failed calls of one run that its retry budgets count and that leave no result
/// message: a tool's own calls of other tools (code mode's), and
/// [`Agent::run_tool_call`](crate::agent::Agent::run_tool_call) while the run goes on. The
/// dispatcher counts them as they end; the driver moves them into the run's state after each
/// batch, where they count with the failures its result messages record.
#[derive(Debug, Default)]
pub(crate) struct NestedFailures {
    /// Failures per tool, in the order of each tool's first one.
    by_tool: Mutex<Vec<(String, u32)>>,
}

impl NestedFailures {
    /// Count a call of `tool` that ended with `failure`, if the retry budget counts it.
    pub(crate) fn record(&self, tool: &str, failure: Option<CallFailure>) {
        if !failure.is_some_and(CallFailure::counts_as_retry) {
            return;
        }
        let mut by_tool = self.by_tool.lock().unwrap_or_else(PoisonError::into_inner);
        match by_tool.iter_mut().find(|(name, _)| name == tool) {
            Some((_, count)) => *count += 1,
            None => by_tool.push((tool.to_owned(), 1)),
        }
    }

    /// Count `count` more failures of `tool` (a journal's record of them, replayed).
    pub(crate) fn add(&self, tool: &str, count: u32) {
        let mut by_tool = self.by_tool.lock().unwrap_or_else(PoisonError::into_inner);
        match by_tool.iter_mut().find(|(name, _)| name == tool) {
            Some((_, counted)) => *counted += count,
            None => by_tool.push((tool.to_owned(), count)),
        }
    }

    /// The failures counted since the last call, per tool.
    pub(crate) fn take(&self) -> Vec<(String, u32)> {
        std::mem::take(&mut *self.by_tool.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The signal fired while a call waited for a permit.
#[derive(Debug)]
pub(crate) struct Stopped;

/// A permit of `semaphore`, unless `signal` fires first.
pub(crate) async fn acquire(
    semaphore: Arc<Semaphore>,
    signal: &CancellationToken,
) -> Result<OwnedSemaphorePermit, Stopped> {
    tokio::select! {
        biased;
        () = signal.cancelled() => Err(Stopped),
        // The semaphore is never closed.
        permit = semaphore.acquire_owned() => permit.map_err(|_| Stopped),
    }
}
