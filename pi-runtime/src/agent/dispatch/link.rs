//! A running call's link to the run whose batch runs it: where a sub-agent the call runs
//! reports its events and its pause, and what the call resumes its sub-agent with.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::agent::machine::{CallOutcome, NestedResume, RunState};
use crate::agent::step::StepRequest;
use crate::agent::{AgentDefinition, AgentEvent};
use crate::message::Message;
use crate::tool::{ToolContext, ToolResult};

/// What a running call reports to the driver, which alone hands it to the state.
pub(crate) enum JobReport {
    Update(usize, ToolResult),
    /// An event of the call's sub-agent, already tagged with its path.
    Nested(usize, AgentEvent),
    /// The call's sub-agent paused for approval as this state; the call's end follows.
    Paused(usize, Box<RunState>),
    /// The call hands the conversation to this agent.
    HandOff(Box<AgentDefinition>),
    /// In a durable run, the call's sub-agent asks for one of its steps, to be a step of the
    /// run's journal.
    Step(StepRequest),
    Done(usize, CallOutcome),
}

/// One running call's link to its run, reached from the call's context
/// ([`RunLink::of`]). A call nested in it (a script's call) gets a link of its own, under
/// the call's path, which reports events but cannot pause: a script cannot wait.
#[derive(Clone)]
pub(crate) struct RunLink {
    /// The batch call the reports are delivered under.
    index: usize,
    /// The path of the call that holds this link's parent, when it is a nested call; `None`
    /// for a call of the batch itself, whose path is its id (no copy made per call).
    above: Option<Arc<str>>,
    /// Weak: a context the tool keeps after its call ended (in a task it left running) must
    /// not keep the batch's reports open, or the batch would wait for them forever.
    reports: mpsc::WeakUnboundedSender<JobReport>,
    /// The transcript before the response whose call this is (what a sub-agent may start
    /// from).
    transcript: Arc<[Message]>,
    /// For a call going on from its sub-agent's pause: the sub-agent's state and the
    /// decisions, taken once.
    resume: Option<Arc<Mutex<Option<NestedResume>>>>,
    /// A durable run's key, for a call of its batch: the call's sub-agent records its steps
    /// in the run's journal, asking the driver for each ([`JobReport::Step`]). `None`
    /// elsewhere, and for a nested call, which is inside its parent's step.
    durable: Option<Arc<str>>,
}

impl RunLink {
    /// The link of the call `context` belongs to, when a run's batch runs it (directly or
    /// nested in one of its calls): elsewhere (a server's call, `run_tool_call`) there is
    /// no run to report to.
    pub(crate) fn of(context: &ToolContext) -> Option<&RunLink> {
        context.caller()?.link()?.downcast_ref()
    }

    /// The link of the batch's call `index`, resuming its sub-agent with `resume` if given;
    /// `durable`, the key of the run if it is a durable one.
    pub(super) fn new(
        index: usize,
        reports: &mpsc::UnboundedSender<JobReport>,
        transcript: &Arc<[Message]>,
        resume: Option<Box<NestedResume>>,
        durable: Option<Arc<str>>,
    ) -> Self {
        RunLink {
            index,
            above: None,
            reports: reports.downgrade(),
            transcript: Arc::clone(transcript),
            resume: resume.map(|resume| Arc::new(Mutex::new(Some(*resume)))),
            durable,
        }
    }

    /// The link of a call nested in this link's call `call_id`.
    pub(crate) fn nested(&self, call_id: &str) -> Self {
        RunLink {
            index: self.index,
            above: Some(Arc::from(self.path(call_id))),
            reports: self.reports.clone(),
            transcript: Arc::clone(&self.transcript),
            resume: None,
            // A script's call is inside its parent's step: it cannot have steps of its own.
            durable: None,
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
        self.report(JobReport::Nested(
            self.index,
            event.nested_under(&self.path(call_id), agent),
        ));
    }

    /// The key of the durable run whose journal records the steps of a sub-agent this call
    /// runs; `None` where the call cannot have steps.
    pub(crate) fn durable_key(&self) -> Option<&Arc<str>> {
        self.durable.as_ref()
    }

    /// Ask the driver for a step of the durable run's journal; the request back if the
    /// call ended (or the run was dropped), when nothing is listening.
    pub(crate) fn ask_step(&self, request: StepRequest) -> Result<(), StepRequest> {
        let Some(reports) = self.reports.upgrade() else {
            return Err(request);
        };
        reports
            .send(JobReport::Step(request))
            .map_err(|unsent| match unsent.0 {
                JobReport::Step(request) => request,
                _ => unreachable!("the report sent is the step"),
            })
    }

    /// The transcript before the response whose call this is.
    pub(crate) fn transcript(&self) -> &[Message] {
        &self.transcript
    }

    /// Send `report` to the driver while the call runs; `false` once it ended (or the run
    /// was dropped), when nothing is listening.
    fn report(&self, report: JobReport) -> bool {
        match self.reports.upgrade() {
            Some(reports) => reports.send(report).is_ok(),
            None => false,
        }
    }

    /// Report that the call's sub-agent paused for approval as `child`, before the call
    /// returns: the call then waits with its batch, and the run pauses. A call nested in
    /// another cannot wait (nothing is reported), nor can a call whose driver keeps no
    /// sub-agent's state (a durable run's): its result, which says so, stands.
    pub(crate) fn pause(&self, child: RunState) {
        if self.above.is_none() {
            self.report(JobReport::Paused(self.index, Box::new(child)));
        }
    }

    /// Hand the conversation to `to` once the call's batch ends (a
    /// [handoff](crate::agent::handoff)). `false` if the call cannot (it is nested in
    /// another call), and the call must fail.
    pub(crate) fn hand_off(&self, to: AgentDefinition) -> bool {
        if self.above.is_some() {
            return false;
        }
        self.report(JobReport::HandOff(Box::new(to)))
    }

    /// The sub-agent's paused state and the decisions to resume it with, once, for a call
    /// going on from its sub-agent's pause.
    pub(crate) fn take_resume(&self) -> Option<NestedResume> {
        let resume = self.resume.as_ref()?;
        resume.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}
