//! Where a running call's sub-agent reports its events: the driver of the run the call
//! belongs to, which delivers them, tagged with the call's path, while the call runs.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::batch::JobReport;
use crate::agent::AgentEvent;
use crate::tool::ToolContext;

/// The events of one running call's sub-agent go here. Reached from the call's context
/// ([`EventSink::of`]); a call nested in it (a script's call) gets a sink of its own, under
/// the call's path.
#[derive(Clone)]
pub(crate) struct EventSink {
    /// The batch call the events are delivered under.
    index: usize,
    /// The path of the call that holds this sink's parent, when it is a nested call; `None`
    /// for a call of the batch itself, whose path is its id (no copy made per call).
    above: Option<Arc<str>>,
    reports: mpsc::UnboundedSender<JobReport>,
}

impl EventSink {
    /// The sink of the call `context` belongs to, when a run's batch runs it (directly or
    /// nested in one of its calls): elsewhere (a server's call, `run_tool_call`) there is
    /// no run to report to.
    pub(crate) fn of(context: &ToolContext) -> Option<&EventSink> {
        context.caller()?.events()?.downcast_ref()
    }

    /// The sink of the batch's call `index`.
    pub(crate) fn new(index: usize, reports: mpsc::UnboundedSender<JobReport>) -> Self {
        EventSink {
            index,
            above: None,
            reports,
        }
    }

    /// The sink of a call nested in this sink's call `call_id`.
    pub(crate) fn nested(&self, call_id: &str) -> Self {
        EventSink {
            index: self.index,
            above: Some(Arc::from(self.path(call_id))),
            reports: self.reports.clone(),
        }
    }

    fn path(&self, call_id: &str) -> String {
        match &self.above {
            Some(above) => format!("{above}/{call_id}"),
            None => call_id.to_owned(),
        }
    }

    /// Report `event` of the sub-agent that the tool `agent` runs in the call `call_id`.
    pub(crate) fn forward(&self, call_id: &str, agent: &str, event: AgentEvent) {
        let event = event.nested_under(&self.path(call_id), agent);
        // The driver is gone only if the run was dropped; nothing to report then.
        let _ = self.reports.send(JobReport::Nested(self.index, event));
    }
}
