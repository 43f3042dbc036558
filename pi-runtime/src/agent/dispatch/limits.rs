//! When a run stops its calls, and what every call of the run shares: its signal and
//! deadline, its context, its lane, where nested failures count.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lane::Lane;
use super::policy::NestedFailures;
use crate::tool::RunContext;

/// When a run stops its calls: its cancellation signal, and the time limit that fires it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunLimits {
    pub(crate) signal: CancellationToken,
    /// When the run's time limit cancels the signal, if it has one.
    pub(crate) deadline: Option<Instant>,
    /// The time limit that set `deadline`, when it is not the agent's own (a sub-agent's
    /// run gets what is left of its parent's), for the run's end to report.
    pub(crate) time_limit: Option<Duration>,
    /// The run's context, handed to every call (nested ones too) and hook.
    pub(crate) context: Option<RunContext>,
    /// A durable run's key: with a call's id, the idempotency key its tool gets.
    pub(crate) run_key: Option<Arc<str>>,
    /// Where the run's calls that leave no result message count their failures toward the
    /// retry budgets; `None` outside a run (a server's calls, `run_tool_call` between runs).
    pub(crate) nested_failures: Option<Arc<NestedFailures>>,
    /// Keeps a sequential tool's calls apart from every other call of the run (or server).
    pub(crate) lane: Lane,
    /// What serves the run's calls to a remote caller (an MCP server's connected client),
    /// handed to each call's context; `None` in an agent's run.
    pub(crate) served_by: Option<Arc<dyn Any + Send + Sync>>,
}

impl RunLimits {
    /// End the run by `parent` at the latest (a sub-agent's run, by its call's deadline):
    /// when that comes first, it is the run's deadline, and what is left of it the time
    /// limit the run's end reports.
    pub(crate) fn end_by(&mut self, parent: Option<Instant>) {
        if let Some(parent) = parent
            && self.deadline.is_none_or(|own| parent < own)
        {
            self.deadline = Some(parent);
            self.time_limit = Some(parent.saturating_duration_since(Instant::now()));
        }
    }
}
