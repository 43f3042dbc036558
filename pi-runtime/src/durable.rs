//! Durable agent runs on [Restate](https://restate.dev): a run is a Restate workflow, and a
//! crash anywhere (a deploy, an out-of-memory kill, a dead host) resumes it where it was.
//!
//! - **Model responses** are journal steps named `turn N: model response`, recorded once
//!   complete. A replay never asks the model again.
//! - **Tool executions** are journal steps named `tool call <id>`. The one in flight when
//!   the process died runs again after the restart; its tool gets the same
//!   [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key)
//!   (`<run key>/<call id>`) both times, to pass on to the systems it changes.
//! - **Sub-agents** (an agent called as a tool, see [`subagent`](crate::agent::subagent))
//!   keep no step of their own: each of the sub-agent's model responses and tool executions
//!   is a step of the workflow, named by the call's path (`<call id>/turn 1: model
//!   response`, `<call id>/tool call <id>`), and its tools' idempotency keys are
//!   `<run key>/<call id>/<id>`. A crash anywhere inside a sub-agent, at any depth, replays
//!   what it recorded and runs only the rest. A batch holding a sub-agent's call records its
//!   calls one after the other, in source order, and so does the sub-agent's own batch. A
//!   sub-agent's call that needs approval fails closed here (it cannot wait).
//! - **Approvals** wait on a durable promise per held call, keyed by its call id. A person's
//!   decision goes to the workflow's shared handler ([`decide`], [`decide_each`]) over
//!   Restate's ingress, hours later, whether or not a service process runs at that moment.
//!   The journal is this path's [`PauseLedger`](crate::agent::approval::PauseLedger): each
//!   pause's decisions are taken once, and a decision sent while the run waits for none
//!   (before its pause, or after it was decided) is refused with HTTP 409.
//! - **Limits** survive restarts: turns are counted over the replayed steps, and the time
//!   limit counts from the run's recorded start.
//!
//! Events, hooks and validation run in the service process as in memory. A replay runs them
//! again for the replayed steps, so a subscriber sees a replayed step's events again: its
//! `tool_execution_start` and `_end`, and its response's `message_start` and `message_end`
//! (a replayed response arrives whole, without its streaming updates). Keep hooks
//! deterministic: what decides between two steps must decide the same way on a replay.
//!
//! **A parallel batch under the journal.** Restate's `ctx.run` is not a combinable durable
//! future: awaiting several at once (`join_all` over four or more) stalls until the
//! invocation's inactivity timeout. So a batch's steps are recorded one after another in
//! source order, while the calls themselves run at the same time: the first call found
//! unrecorded starts every later call of the batch (a later call is never recorded before
//! an earlier one), and each step then waits for its own call. The calls of a parallel batch
//! end in source order under the journal. After a crash, the calls of a parallel batch that
//! were not recorded yet run again (those that finished before the crash too), each with its
//! idempotency key.
//!
//! The workflow itself is a few lines of the user's, so its name and handlers are the
//! user's to choose:
//!
//! ```no_run
//! use pi_runtime::agent::{Agent, AgentDefinition};
//! use pi_runtime::agent::approval::Decision;
//! use pi_runtime::durable;
//! use restate_sdk::prelude::*;
//!
//! struct DurableAgent {
//!     agent: AgentDefinition,
//! }
//!
//! #[restate_sdk::workflow]
//! impl DurableAgent {
//!     #[handler]
//!     async fn run(&self, ctx: WorkflowContext<'_>, prompt: String) -> HandlerResult<String> {
//!         let outcome = durable::run(&ctx, &self.agent, prompt).await?;
//!         Ok(outcome.final_text().unwrap_or_default())
//!     }
//!
//!     #[handler]
//!     async fn decide(&self, ctx: SharedWorkflowContext<'_>, decision: String) -> HandlerResult<()> {
//!         let decision = match decision.as_str() {
//!             "approve" => Decision::Approve,
//!             _ => Decision::Deny { reason: "A person said no.".to_owned() },
//!         };
//!         Ok(durable::decide(&ctx, decision).await?)
//!     }
//! }
//!
//! # async fn serve(agent: AgentDefinition) -> std::io::Result<()> {
//! let endpoint = Endpoint::builder().bind(DurableAgent { agent }).build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
//! durable::serve(endpoint, listener, std::future::pending()).await;
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::approval::{ApprovalDecision, Decision, PendingCall};
use crate::agent::dispatch::RunLimits;
use crate::agent::journal::{self, AbortOnDrop, Journal, TimeLimit, Work};
use crate::agent::nested_journal::serve_with;
use crate::agent::step::{JournalError, Recorded, StepRequest};
use crate::agent::{AgentDefinition, Prompt, RunOutcome};
use crate::message::{Message, now_ms};

/// The workflow state key of the approval a run waits for.
const PENDING: &str = "pi.pending";
/// The workflow state key of the finished run's transcript.
const TRANSCRIPT: &str = "pi.transcript";

/// Run `prompt` in a new conversation of `agent` as the workflow `ctx`, to its end: each
/// model response and tool execution a step of the workflow's journal, each pause for
/// approval a wait on a durable promise that [`decide`] resolves. The run's key is the
/// workflow's key. The transcript is kept in the workflow's state ([`transcript`]).
///
/// # Errors
/// A terminal error when the run cannot start (a tool reads a context this run does not
/// supply) or the journal stops it (the invocation was cancelled).
pub async fn run(
    ctx: &WorkflowContext<'_>,
    agent: &AgentDefinition,
    prompt: impl Into<Prompt>,
) -> Result<RunOutcome, TerminalError> {
    let started_ms = ctx
        .run(|| async { Ok(now_ms()) })
        .name("run started")
        .await?;
    let conversation = agent.conversation();
    let journal = RestateJournal::new(ctx);
    let run_key: Arc<str> = Arc::from(ctx.key());
    let outcome = conversation
        .prompt_journaled(prompt.into(), &journal, run_key, started_ms)
        .await
        .map_err(|error| TerminalError::new(error.to_string()))?;
    ctx.set(TRANSCRIPT, Json(outcome.messages.clone()));
    Ok(outcome)
}

/// Decide every call the run of `ctx`'s workflow holds for approval, as `decision`.
///
/// # Errors
/// A terminal error with HTTP status 409 when the run waits for no approval now (it has not
/// reached its pause yet, or the pause was decided).
pub async fn decide(
    ctx: &SharedWorkflowContext<'_>,
    decision: Decision,
) -> Result<(), TerminalError> {
    let pending = waiting(ctx).await?;
    let decisions =
        (pending.calls.iter()).map(|call| ApprovalDecision::new(call.id.clone(), decision.clone()));
    resolve(ctx, &pending, decisions.collect())
}

/// Decide each call the run of `ctx`'s workflow holds for approval on its own: one decision
/// per pending call, by call id.
///
/// # Errors
/// A terminal error when the run waits for no approval now (HTTP status 409), or
/// `decisions` names a call it does not wait on, names one twice, or leaves one out (400);
/// nothing is decided then.
pub async fn decide_each(
    ctx: &SharedWorkflowContext<'_>,
    decisions: Vec<ApprovalDecision>,
) -> Result<(), TerminalError> {
    let pending = waiting(ctx).await?;
    resolve(ctx, &pending, decisions)
}

/// The HTTP status of a decision sent while the run waits for none: the request is fine,
/// the run's state refuses it (Restate answers a terminal error's code to the caller).
const CONFLICT: u16 = 409;

/// The HTTP status of decisions that do not fit the pending calls.
const BAD_REQUEST: u16 = 400;

/// The approval the run of `ctx`'s workflow waits for.
async fn waiting(ctx: &SharedWorkflowContext<'_>) -> Result<Pending, TerminalError> {
    match ctx.get::<Json<Pending>>(PENDING).await? {
        Some(Json(pending)) => Ok(pending),
        None => Err(TerminalError::new_with_code(
            CONFLICT,
            format!("the run {} waits for no approval", ctx.key()),
        )),
    }
}

/// Resolve each pending call's promise with its decision, once all of them are checked.
fn resolve(
    ctx: &SharedWorkflowContext<'_>,
    pending: &Pending,
    decisions: Vec<ApprovalDecision>,
) -> Result<(), TerminalError> {
    let mut by_call: std::collections::HashMap<&str, &ApprovalDecision> =
        std::collections::HashMap::new();
    for decision in &decisions {
        let call = decision.call_id();
        if !pending.calls.iter().any(|pending| pending.id == call) {
            return Err(TerminalError::new_with_code(
                BAD_REQUEST,
                format!("no call {call} waits for approval"),
            ));
        }
        if by_call.insert(call, decision).is_some() {
            return Err(TerminalError::new_with_code(
                BAD_REQUEST,
                format!("call {call} is decided twice"),
            ));
        }
    }
    for call in &pending.calls {
        if !by_call.contains_key(call.id.as_str()) {
            return Err(TerminalError::new_with_code(
                BAD_REQUEST,
                format!("call {} is not decided", call.id),
            ));
        }
    }
    for call in &pending.calls {
        if let Some(decision) = by_call.get(call.id.as_str()) {
            ctx.resolve_promise(&promise(pending.pause, &call.id), Json((*decision).clone()));
        }
    }
    Ok(())
}

/// The promise of the call `call` held at the run's `pause`-th pause: keyed by the call id
/// (within the pause, since a scripted model may use one id twice in a run).
fn promise(pause: usize, call: &str) -> String {
    format!("approval {pause}/{call}")
}

/// The calls the run of `ctx`'s workflow waits for a decision on; empty when it waits for
/// none.
///
/// # Errors
/// A terminal error when the workflow's state cannot be read.
pub async fn pending(ctx: &SharedWorkflowContext<'_>) -> Result<Vec<PendingCall>, TerminalError> {
    let pending = ctx.get::<Json<Pending>>(PENDING).await?;
    Ok(pending
        .map(|Json(pending)| pending.calls)
        .unwrap_or_default())
}

/// The transcript of the finished run of `ctx`'s workflow; empty before it finishes.
///
/// # Errors
/// A terminal error when the workflow's state cannot be read.
pub async fn transcript(ctx: &SharedWorkflowContext<'_>) -> Result<Vec<Message>, TerminalError> {
    let messages = ctx.get::<Json<Vec<Message>>>(TRANSCRIPT).await?;
    Ok(messages.map(|Json(messages)| messages).unwrap_or_default())
}

/// Serve `endpoint` on `listener` over HTTP/2, which a Restate server speaks to its
/// services, until `shutdown` completes; the connections open then are closed (the server
/// retries what they carried).
///
/// Use it instead of the SDK's `HttpServer`: that one leaves Nagle's algorithm on, so every
/// journal step's small frame waits for the server's delayed acknowledgement, about 40 ms a
/// step. Here each connection sets `TCP_NODELAY`.
///
/// ```no_run
/// # use restate_sdk::prelude::*;
/// # async fn serve(endpoint: Endpoint) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
/// let shutdown = async {
///     let _ = tokio::signal::ctrl_c().await;
/// };
/// pi_runtime::durable::serve(endpoint, listener, shutdown).await;
/// # Ok(()) }
/// ```
pub async fn serve(
    endpoint: restate_sdk::endpoint::Endpoint,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let service = restate_sdk::hyper::HyperEndpoint::new(endpoint);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
            // Reap finished connections as they end, so the set does not grow.
            Some(_) = connections.join_next() => continue,
        };
        let Ok((stream, remote)) = accepted else {
            // Out of descriptors, say: the next accept may work.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%remote, %error, "cannot set TCP_NODELAY");
        }
        let service = service.clone();
        connections.spawn(async move {
            let served =
                hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            if let Err(error) = served {
                tracing::debug!(%remote, %error, "a Restate connection ended with an error");
            }
        });
    }
}

/// The approval a paused run waits for: which pause of the run it is, and its calls (each
/// decided through its own promise).
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    pause: usize,
    calls: Vec<PendingCall>,
}

/// A workflow's journal as a run's [`Journal`]. It also fires the run's time limit, but only
/// once a step runs for real: while steps replay, the recorded stops stand in for it.
struct RestateJournal<'a, 'ctx> {
    ctx: &'a WorkflowContext<'ctx>,
    time_limit: TimeLimit,
}

impl<'a, 'ctx> RestateJournal<'a, 'ctx> {
    fn new(ctx: &'a WorkflowContext<'ctx>) -> Self {
        RestateJournal {
            ctx,
            time_limit: TimeLimit::default(),
        }
    }
}

impl Journal for RestateJournal<'_, '_> {
    fn step<'b>(
        &'b self,
        name: String,
        work: Work<'b>,
        limits: &'b RunLimits,
    ) -> BoxFuture<'b, Result<Value, JournalError>> {
        Box::pin(async move {
            let recorded = self
                .ctx
                .run(|| async move {
                    self.time_limit.arm(limits);
                    Ok(Json(journal::record(work, limits).await))
                })
                .name(name)
                .await;
            match recorded {
                Ok(Json(recorded)) => Ok(journal::replay(recorded, limits)),
                Err(error) => Err(JournalError(error.to_string())),
            }
        })
    }

    fn steps<'b>(
        &'b self,
        steps: Vec<(String, Work<'static>)>,
        limits: &'b RunLimits,
    ) -> BoxFuture<'b, Result<Vec<Value>, JournalError>> {
        Box::pin(async move {
            let (names, works): (Vec<String>, Vec<Work<'static>>) = steps.into_iter().unzip();
            let calls = Arc::new(Mutex::new(Calls::new(works)));
            let mut values = Vec::with_capacity(names.len());
            for (index, name) in names.into_iter().enumerate() {
                let calls = Arc::clone(&calls);
                let recorded = self
                    .ctx
                    .run(|| async move {
                        self.time_limit.arm(limits);
                        let running = {
                            let mut calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
                            calls.start(index, limits)
                        };
                        match running {
                            Some(running) => match running.await {
                                Ok(recorded) => Ok(Json(recorded)),
                                Err(error) => Err(TerminalError::new(format!(
                                    "the tool call's task ended early: {error}"
                                ))
                                .into()),
                            },
                            None => Err(TerminalError::new("the tool call ran already").into()),
                        }
                    })
                    .name(name)
                    .await;
                match recorded {
                    Ok(Json(recorded)) => values.push(journal::replay(recorded, limits)),
                    Err(error) => return Err(JournalError(error.to_string())),
                }
            }
            Ok(values)
        })
    }

    fn serve<'b>(&'b self, request: StepRequest) -> BoxFuture<'b, ()> {
        Box::pin(serve_with(request, move |name, work| async move {
            let recorded = self
                .ctx
                .run(|| async move {
                    match work.await {
                        Ok(recorded) => Ok(Json(recorded)),
                        Err(error) => Err(TerminalError::new(error.0).into()),
                    }
                })
                .name(name)
                .await;
            recorded
                .map(|Json(recorded)| recorded)
                .map_err(|error| JournalError(error.to_string()))
        }))
    }

    fn decisions<'b>(
        &'b self,
        pause: usize,
        pending: Vec<PendingCall>,
    ) -> BoxFuture<'b, Result<Vec<ApprovalDecision>, JournalError>> {
        Box::pin(async move {
            let keys: Vec<String> = (pending.iter())
                .map(|call| promise(pause, &call.id))
                .collect();
            self.ctx.set(
                PENDING,
                Json(Pending {
                    pause,
                    calls: pending,
                }),
            );
            let mut decisions = Vec::with_capacity(keys.len());
            // All of them are resolved at once (see `resolve`), so waiting in turn costs
            // nothing.
            for key in &keys {
                match self.ctx.promise::<Json<ApprovalDecision>>(key).await {
                    Ok(Json(decision)) => decisions.push(decision),
                    Err(error) => return Err(JournalError(error.to_string())),
                }
            }
            self.ctx.clear(PENDING);
            Ok(decisions)
        })
    }
}

/// The executions of a parallel batch: waiting to start, or running as tasks.
struct Calls {
    waiting: Vec<Option<Work<'static>>>,
    running: Vec<Option<AbortOnDrop<Recorded>>>,
}

impl Calls {
    fn new(works: Vec<Work<'static>>) -> Self {
        let running = works.iter().map(|_| None).collect();
        Calls {
            waiting: works.into_iter().map(Some).collect(),
            running,
        }
    }

    /// The running call `index`: it starts now, with every later call (nothing after an
    /// unrecorded step is recorded, so none of them ran). `None` if it was taken already.
    fn start(&mut self, index: usize, limits: &RunLimits) -> Option<AbortOnDrop<Recorded>> {
        for at in index..self.waiting.len() {
            if let Some(work) = self.waiting.get_mut(at).and_then(Option::take) {
                let limits = limits.clone();
                let task = tokio::spawn(async move { journal::record(work, &limits).await });
                self.running[at] = Some(AbortOnDrop(task));
            }
        }
        self.running.get_mut(index).and_then(Option::take)
    }
}
