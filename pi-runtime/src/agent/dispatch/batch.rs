//! A batch's calls as the drivers run them: the plan of a response's batch, each call's
//! preflight, and its execution, alone or beside the others. No events here: the run
//! state decides them, from the answers the drivers hand back.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::{Sleep, sleep};
use tracing::{Instrument, Span};

use super::call::{self, CallScope, Preflight, Ready};
use super::link::{JobReport, RunLink};
use super::policy::acquire;
use crate::agent::failure::{self, CallFailure};
use crate::agent::machine::{CallOutcome, Preflighted, ReadyCall};
use crate::message::ToolCall;

/// One response's batch, as the driver runs it: the scope its calls share, and the cap on
/// how many of them execute at once.
pub(crate) struct BatchCalls {
    scope: Arc<CallScope>,
    /// The agent's cap on calls of one batch running at once; tokio's semaphore is fair, so
    /// waiting calls start in source order.
    permits: Option<Arc<Semaphore>>,
}

impl BatchCalls {
    pub(super) fn new(scope: Arc<CallScope>) -> Self {
        let permits = (scope.policies.batch_concurrency).map(|max| Arc::new(Semaphore::new(max)));
        BatchCalls { scope, permits }
    }

    /// Prepare one call of the batch.
    pub(crate) async fn preflight(&self, call: &ToolCall) -> Preflighted {
        match call::prepare(call, &self.scope).await {
            Preflight::Immediate(outcome) => Preflighted::Ended(outcome),
            Preflight::Ready(ready) => Preflighted::Ready { args: ready.args },
            Preflight::Held(held) => Preflighted::NeedsApproval {
                args: held.ready.args,
                reason: held.reason,
            },
        }
    }

    /// The execution of `call`, boxed for a driver to own (a durable run's step; see
    /// [`run_job`]).
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn job(
        &self,
        call: ReadyCall,
        updates: mpsc::UnboundedSender<JobReport>,
    ) -> BoxFuture<'static, CallOutcome> {
        let (scope, permits) = (Arc::clone(&self.scope), self.permits.clone());
        Box::pin(run_job(scope, permits, call, updates))
    }

    /// Whether the offered tool `name` records its own steps in a durable run (see
    /// [`ToolSettings::journals_itself`](crate::tool::ToolSettings)).
    #[cfg(any(test, feature = "restate"))]
    pub(crate) fn journals_itself(&self, name: &str) -> bool {
        (self.scope.tools.get(name)).is_some_and(|tool| tool.settings().journals_itself)
    }

    /// Start executing `calls`, each in its span, and report their updates and ends as
    /// they come: ends follow completion order. On a multi-thread runtime each of several
    /// calls is a task of its own, so CPU-bound tools really run in parallel; a lone call,
    /// and every call elsewhere, is a future of the driver's own task, which gives the same
    /// concurrency without a task per call.
    ///
    /// The calls start in source order, as in pi: each job runs its first poll only after
    /// the previous job's first poll returned (or after [`START_GRACE`], so a call that
    /// computes for a long time before its first `.await` does not hold the others back).
    /// Calls that finish without waiting therefore finish in source order, and "the first
    /// call to start" is always the first in the batch, however the runtime schedules the
    /// tasks.
    pub(crate) fn execute(&self, calls: Vec<(ReadyCall, Span)>) -> Execution {
        let (tx, reports) = mpsc::unbounded_channel();
        let mut jobs = if calls.len() == 1 {
            Jobs::Inline(FuturesUnordered::new())
        } else {
            Jobs::for_this_runtime()
        };
        let mut previous_started: Option<oneshot::Receiver<()>> = None;
        for (call, span) in calls {
            let index = call.index();
            let (started, next_may_start) = oneshot::channel();
            let (scope, permits) = (Arc::clone(&self.scope), self.permits.clone());
            let job = InOrder {
                run: run_job(scope, permits, call, tx.clone()),
                index,
                reports: tx.clone(),
                may_start: previous_started.replace(next_may_start),
                grace: None,
                started: Some(started),
            };
            jobs.push(job.instrument(span));
        }
        Execution { jobs, reports }
    }
}

/// Execute `call` under the batch's cap (`permits`), sending each progress update to
/// `updates` tagged with the call's index. A call whose tool is gone ends as not found.
///
/// An `async` block, not an `async fn`, which would keep a second copy of each argument for
/// the whole call.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of each argument for the whole call"
)]
fn run_job(
    scope: Arc<CallScope>,
    permits: Option<Arc<Semaphore>>,
    call: ReadyCall,
    updates: mpsc::UnboundedSender<JobReport>,
) -> impl Future<Output = CallOutcome> + Send + 'static {
    async move {
        let index = call.index();
        let tool_call = call.call.call();
        let Some(registration) = scope.tools.get(&tool_call.name) else {
            let text = failure::not_found(&tool_call.name);
            return CallOutcome::failed(CallFailure::NotFound, text);
        };
        // Only a tool that reports to its run (a sub-agent, a handoff) gets a link: the other
        // calls make none.
        let link = (registration.settings().links_to_run).then(|| {
            let durable = scope.limits.run_key.clone();
            RunLink::new(index, &updates, &scope.messages, call.resume, durable)
        });
        let ready = Ready {
            registration,
            args: call.args,
        };
        // Held until the call ends; a call stopped while it waits ends as stopped by
        // `execute`, which sees the signal.
        let _batch_permit = match permits {
            Some(permits) => acquire(permits, scope.signal()).await.ok(),
            None => None,
        };
        call::execute(ready, tool_call, &scope, link, |update| {
            // The driver is gone only if the run was dropped; nothing to report then.
            let _ = updates.send(JobReport::Update(index, update));
            std::future::ready(())
        })
        .await
    }
}

pin_project_lite::pin_project! {
    /// A call of a batch as the driver runs it (`run`, its execution): it starts (is first
    /// polled) only once the call before it started, or [`START_GRACE`] after it first could,
    /// and reports its end. A future of its own rather than an `async` block around `run`,
    /// which would copy `run` once more, whole, as it starts.
    struct InOrder<Run> {
        #[pin]
        run: Run,
        index: usize,
        reports: mpsc::UnboundedSender<JobReport>,
        // Ready once the call before this one started; `None` once this one may start.
        may_start: Option<oneshot::Receiver<()>>,
        // When this call starts anyway; made when it first waits.
        grace: Option<Pin<Box<Sleep>>>,
        // Tells the next call it may start; `None` once told.
        started: Option<oneshot::Sender<()>>,
    }
}

impl<Run: Future<Output = CallOutcome>> Future for InOrder<Run> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if let Some(may_start) = this.may_start.as_mut() {
            // Asked first without polling: a poll spends the task's cooperative budget, and a
            // large batch would run out of it on calls that may start at once.
            let waits = may_start.try_recv() == Err(TryRecvError::Empty);
            if waits && Pin::new(may_start).poll(cx).is_pending() {
                let grace = (this.grace).get_or_insert_with(|| Box::pin(sleep(START_GRACE)));
                if grace.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            *this.may_start = None;
            *this.grace = None;
        }
        let ended = match this.run.poll(cx) {
            Poll::Ready(outcome) => {
                // Reported before the next call may start, so that calls that end at once end
                // in order.
                let _ = this.reports.send(JobReport::Done(*this.index, outcome));
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        };
        if let Some(started) = this.started.take() {
            let _ = started.send(());
        }
        ended
    }
}

/// How long a call may take to get going (its first poll) before the next call of the
/// batch starts anyway.
const START_GRACE: Duration = Duration::from_millis(10);

/// Calls started by [`BatchCalls::execute`]. Dropping it (when the run itself is dropped)
/// stops them.
pub(crate) struct Execution {
    jobs: Jobs,
    reports: mpsc::UnboundedReceiver<JobReport>,
}

impl Execution {
    /// The next report of a call; `None` once every call reported its end (or its job is
    /// gone).
    pub(crate) async fn next(&mut self) -> Option<JobReport> {
        loop {
            tokio::select! {
                biased;
                report = self.reports.recv() => return report,
                () = self.jobs.progress() => {}
            }
        }
    }
}

/// The running jobs of a batch.
enum Jobs {
    /// One task per call (multi-thread runtimes).
    Spawned(JoinSet<()>),
    /// Futures the driver polls itself.
    Inline(FuturesUnordered<BoxFuture<'static, ()>>),
}

impl Jobs {
    fn for_this_runtime() -> Self {
        match Handle::try_current().map(|runtime| runtime.runtime_flavor()) {
            Ok(RuntimeFlavor::CurrentThread) | Err(_) => Jobs::Inline(FuturesUnordered::new()),
            Ok(_) => Jobs::Spawned(JoinSet::new()),
        }
    }

    fn push(&mut self, job: impl Future<Output = ()> + Send + 'static) {
        match self {
            // Boxed: the task then moves a pointer, not the whole state of the call.
            Jobs::Spawned(tasks) => {
                tasks.spawn(Box::pin(job));
            }
            Jobs::Inline(futures) => futures.push(Box::pin(job)),
        }
    }

    /// Poll the inline jobs until one finishes; never ready for spawned jobs, which run on
    /// their own, nor once every inline job is done.
    async fn progress(&mut self) {
        match self {
            Jobs::Inline(futures) if !futures.is_empty() => {
                futures.next().await;
            }
            _ => std::future::pending().await,
        }
    }
}
