//! A sub-agent's journal under a durable run: each of its steps is a step of the journal of
//! the run above, named by the call's path (`c1/turn 1: model response`, `c1/tool call d1`).
//! The call that runs the sub-agent is not a step itself (a step cannot hold steps), so a
//! crash anywhere in the sub-agent replays its recorded steps and runs only the rest.
//!
//! The sub-agent's work never leaves its task: a step request, sent through the call's link
//! to the driver above, asks its journal to open the step, which either replays the record
//! (the work never runs) or asks for the work's record, and answers with the step's record
//! either way.
#![cfg_attr(not(feature = "restate"), allow(dead_code))]

use std::future::Future;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use super::approval::{ApprovalDecision, PendingCall};
use super::dispatch::{RunLimits, RunLink};
use super::journal::{Journal, TimeLimit, Work, record, replay};
use super::step::{JournalError, Recorded, StepRequest};

/// The journal of a sub-agent's run: each step is a step of the journal above, asked for
/// through the link of the call that runs the sub-agent and named `<prefix><name>`.
pub(crate) struct NestedJournal {
    prefix: String,
    link: RunLink,
    /// The sub-agent's own time limit, fired once a step runs for real (as the journal
    /// above fires its run's).
    time_limit: TimeLimit,
}

impl NestedJournal {
    pub(crate) fn new(prefix: String, link: RunLink) -> Self {
        NestedJournal {
            prefix,
            link,
            time_limit: TimeLimit::default(),
        }
    }

    /// Open the step `name` above; run `work` if it runs for real; its record.
    async fn open(
        &self,
        name: String,
        work: Work<'_>,
        limits: &RunLimits,
    ) -> Result<Recorded, JournalError> {
        let (run, running) = oneshot::channel();
        let (done, finished) = oneshot::channel();
        let request = StepRequest { name, run, done };
        (self.link.ask_step(request.under(&self.prefix)))
            .map_err(|_| JournalError("the run above the sub-agent is gone".to_owned()))?;
        // A replayed step drops `run` unanswered: the work never runs.
        if let Ok(answer) = running.await {
            self.time_limit.arm(limits);
            let _ = answer.send(record(work, limits).await);
        }
        finished.await.unwrap_or_else(|_| {
            Err(JournalError(
                "the run above the sub-agent ended the step early".to_owned(),
            ))
        })
    }
}

impl Journal for NestedJournal {
    fn step<'a>(
        &'a self,
        name: String,
        work: Work<'a>,
        limits: &'a RunLimits,
    ) -> BoxFuture<'a, Result<Value, JournalError>> {
        Box::pin(async move {
            let recorded = self.open(name, work, limits).await?;
            Ok(replay(recorded, limits))
        })
    }

    /// One after the other, in source order: the journal above records its steps in order,
    /// and a sub-agent's parallel batch is recorded the same way every time.
    fn steps<'a>(
        &'a self,
        steps: Vec<(String, Work<'static>)>,
        limits: &'a RunLimits,
    ) -> BoxFuture<'a, Result<Vec<Value>, JournalError>> {
        Box::pin(async move {
            let mut values = Vec::with_capacity(steps.len());
            for (name, work) in steps {
                values.push(self.step(name, work, limits).await?);
            }
            Ok(values)
        })
    }

    fn decisions<'a>(
        &'a self,
        _pause: usize,
        _pending: Vec<PendingCall>,
    ) -> BoxFuture<'a, Result<Vec<ApprovalDecision>, JournalError>> {
        Box::pin(std::future::ready(Err(JournalError(
            "a sub-agent under a durable run cannot wait for approval".to_owned(),
        ))))
    }

    fn serve<'a>(&'a self, request: StepRequest) -> BoxFuture<'a, ()> {
        // A grandchild's step is a step of this journal's own journal above.
        let request = request.under(&self.prefix);
        if let Err(unsent) = self.link.ask_step(request) {
            let _ = (unsent.done).send(Err(JournalError(
                "the run above the sub-agent is gone".to_owned(),
            )));
        }
        Box::pin(std::future::ready(()))
    }
}

/// Serve `request` as a step of a journal: `run` is the journal's own way of running a
/// step, given the step's name and the work that yields its record (which a replay never
/// polls). The request's answer is the step's record.
pub(crate) async fn serve_with<F, Fut>(request: StepRequest, run: F)
where
    F: FnOnce(String, BoxFuture<'static, Result<Recorded, JournalError>>) -> Fut,
    Fut: Future<Output = Result<Recorded, JournalError>>,
{
    let StepRequest {
        name,
        run: ask,
        done,
    } = request;
    let work = Box::pin(async move {
        let (answer, record) = oneshot::channel();
        ask.send(answer)
            .map_err(|_| JournalError("the sub-agent is gone".to_owned()))?;
        record
            .await
            .map_err(|_| JournalError("the sub-agent's step ended early".to_owned()))
    });
    let _ = done.send(run(name, work).await);
}
