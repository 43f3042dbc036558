//! Where a call's tool runs: on the caller's task, or, when the call has a time limit, on a
//! thread of its own.
//!
//! A time limit is a timer the dispatcher polls beside the tool's future. A tool that blocks
//! its thread (`std::thread::sleep`, a blocking read, a long computation without an
//! `.await`) stops every future polled on that thread, the timer included: on the caller's
//! task, a one-second timeout would wait as long as the tool blocks. So a call with a time
//! limit is polled on a thread that does nothing else, inside the caller's runtime (its
//! timers, I/O and `tokio::spawn` work as on the caller's task), while the caller waits for
//! its result, the timer and the grace period, none of which the tool can hold up.
//!
//! When the call is abandoned, the thread is left to itself: a blocking tool cannot be
//! stopped from outside. It goes on until the tool returns (or awaits something that never
//! comes back, since no one polls it further); its result is dropped. The thread is not one
//! of the runtime's, so it never holds up the runtime's shutdown, and it ends with the
//! process at the latest.

use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::{BoxFuture, Either};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::agent::panics::{caught, made_caught};
use crate::tool::{ToolContext, ToolDefinition, ToolError, ToolResult};

/// What a tool's future came to: its result, or the message of its panic.
pub(super) type Settled = Result<Result<ToolResult, ToolError>, String>;

/// The name of the threads calls run on.
const THREAD_NAME: &str = "pi-tool-call";

/// What one call hands its tool.
pub(super) struct Job {
    pub(super) call_id: String,
    pub(super) args: Value,
    pub(super) context: ToolContext,
}

impl Job {
    /// `tool` called with this job now, its future's panics caught.
    fn run_now(self, tool: &Arc<dyn ToolDefinition>) -> impl Future<Output = Settled> + Send + '_ {
        let Job {
            call_id,
            args,
            context,
        } = self;
        caught(made_caught(|| tool.execute(call_id, args, context)))
    }
}

/// Start `job` of `tool`: on a thread of its own when `own_thread` (and a thread can be
/// had), else as a future for the caller's task. Dropping the future the caller gets
/// abandons the call; on a thread the tool runs on until it returns.
///
/// On the caller's task the tool is called now, borrowed from the caller, and its own future
/// is all the caller holds: no box of ours around it, no copy of the job (a batch starts one
/// per call).
pub(super) fn start(
    tool: &Arc<dyn ToolDefinition>,
    job: Job,
    own_thread: bool,
) -> impl Future<Output = Settled> + Send + '_ {
    match Handle::try_current() {
        Ok(runtime) if own_thread => Either::Right(on_thread(Arc::clone(tool), job, runtime)),
        _ => Either::Left(job.run_now(tool)),
    }
}

/// Run `job` on a thread of its own, inside `runtime`; here if no thread can be had.
fn on_thread(
    tool: Arc<dyn ToolDefinition>,
    job: Job,
    runtime: Handle,
) -> BoxFuture<'static, Settled> {
    // The tool is called on the thread: a tool that blocks may block before its first await.
    let run = |job: Job, tool: Arc<dyn ToolDefinition>| async move { job.run_now(&tool).await };
    // Taken back when no thread can be started, so the call still runs.
    let slot = Arc::new(Mutex::new(Some((job, tool))));
    let taken = Arc::clone(&slot);
    let span = tracing::Span::current();
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.to_owned())
        .spawn(move || {
            let taken = taken.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some((job, tool)) = taken {
                // The caller may be gone (the call was abandoned): the result is dropped.
                let _ = tx.send(runtime.block_on(run(job, tool).instrument(span)));
            }
        });
    if spawned.is_err() {
        let taken = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((job, tool)) = taken {
            return run(job, tool).boxed();
        }
    }
    async move {
        rx.await
            .unwrap_or_else(|_| Err("the tool's thread ended without a result".to_owned()))
    }
    .boxed()
}
