//! One QuickJS VM running one script on its own thread. The VM only runs when the host hands it
//! something: it reports calls, output and its end as [`VmEvent`]s, and waits for [`Reply`]s.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Runtime, Value};
use tokio::sync::mpsc::UnboundedSender;

use super::heap::StoppableAllocator;

const PRELUDE: &str = include_str!("prelude.js");
/// The VM's heap limit (pi: 256 MiB).
const MEMORY_LIMIT: usize = 256 * 1024 * 1024;
/// The JavaScript stack limit; the thread's own stack is larger.
const MAX_STACK: usize = 1024 * 1024;
/// The VM thread's stack.
pub(crate) const THREAD_STACK: usize = 16 * 1024 * 1024;
/// The failure of a promise job whose error cannot be described (the heap is full).
const JOB_FAILED: &str =
    r#"{"name":"InternalError","message":"out of memory","stack":"InternalError: out of memory"}"#;
/// Promise jobs run between two interrupt polls while the queue drains.
const JOBS_PER_POLL: u32 = 50;

/// What the VM starts with.
pub(crate) struct VmStart {
    pub(crate) code: String,
    /// `[{name, jsName, description}]`.
    pub(crate) tools_json: String,
    /// `[{name, spread}]`.
    pub(crate) globals_json: String,
    /// `{key: json text}`.
    pub(crate) store_json: String,
    /// Interrupt polls allowed before the script fails (the inline sandbox's budget).
    pub(crate) interrupt_budget: Option<u64>,
}

/// One item of the script's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutputItem {
    Text { text: String, console: bool },
    Image { data: String, mime_type: String },
}

/// What the VM reports.
#[derive(Debug)]
pub(crate) enum VmEvent {
    /// `tools.x(args)` (`global: false`) or a global's call; `args` is JSON.
    Call {
        id: u64,
        global: bool,
        name: String,
        args: Option<String>,
    },
    Output(OutputItem),
    /// The script ended: its value's JSON (none for `undefined`) and the store writes.
    Done {
        value: Option<String>,
        writes: String,
    },
    /// The script failed: `{name?, message, stack?}` as JSON.
    Failed(String),
    /// The interrupt budget ran out.
    BudgetExhausted,
    /// The VM itself failed.
    Crashed(String),
}

/// A call's outcome for the script: `ok` with the value's JSON (empty for `undefined`), or a
/// rejection with the message.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) id: u64,
    pub(crate) ok: bool,
    pub(crate) payload: String,
}

/// Run the script to its end, or until `stop` is set or the host stops answering.
pub(crate) fn run(
    start: VmStart,
    events: UnboundedSender<VmEvent>,
    replies: mpsc::Receiver<Reply>,
    stop: Arc<AtomicBool>,
) {
    if let Err(error) = run_vm(start, &events, &replies, stop) {
        // The host may be gone already; then nobody waits for this.
        let _ = events.send(VmEvent::Crashed(error.to_string()));
    }
}

fn run_vm(
    start: VmStart,
    events: &UnboundedSender<VmEvent>,
    replies: &mpsc::Receiver<Reply>,
    stop: Arc<AtomicBool>,
) -> rquickjs::Result<()> {
    let (allocator, armed) = StoppableAllocator::new(Arc::clone(&stop));
    let runtime = Runtime::new_with_alloc(allocator)?;
    armed.set(true);
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(MAX_STACK);
    let exhausted = Rc::new(Cell::new(false));
    let poll = {
        let exhausted = Rc::clone(&exhausted);
        let stop = Arc::clone(&stop);
        let mut polls: u64 = 0;
        let budget = start.interrupt_budget;
        move || {
            if stop.load(Ordering::Relaxed) || exhausted.get() {
                return true;
            }
            polls += 1;
            if budget.is_some_and(|budget| polls > budget) {
                exhausted.set(true);
                return true;
            }
            false
        }
    };
    let poll = Rc::new(RefCell::new(poll));
    let handler_poll = Rc::clone(&poll);
    runtime.set_interrupt_handler(Some(Box::new(move || (handler_poll.borrow_mut())())));
    // The last rejection nothing handled: when the script then waits for nothing, this is
    // why (a promise job that ran out of memory, say), rather than the wait itself.
    let unhandled: Rc<RefCell<Option<Persistent<Value<'static>>>>> = Rc::default();
    let tracked = Rc::clone(&unhandled);
    runtime.set_host_promise_rejection_tracker(Some(Box::new(
        move |ctx, _promise, reason, handled| {
            *tracked.borrow_mut() = (!handled).then(|| Persistent::save(&ctx, reason));
        },
    )));
    let context = Context::full(&runtime)?;
    let finished = Rc::new(Cell::new(false));
    let session = context.with(|ctx| {
        Session::start(&ctx, &start, events, &finished, &exhausted)
            .map(|session| session.map(|session| session.save(&ctx)))
    })?;
    let Some(session) = session else {
        return Ok(());
    };
    // Jobs run through the runtime, not the context, so that a job that fails outside the
    // script's promises (the engine out of memory between two promise steps) is seen with
    // its error instead of leaving a script that waits for nothing.
    let drain = || -> rquickjs::Result<()> {
        let mut jobs = 0u32;
        loop {
            match runtime.execute_pending_job() {
                Ok(false) => break,
                Ok(true) => {}
                Err(failed) => {
                    failed.0.with(|ctx| -> rquickjs::Result<()> {
                        let error = ctx.catch();
                        if exhausted.get() || stop.load(Ordering::Relaxed) {
                            // The interrupt; the loop below reports why.
                            return Ok(());
                        }
                        let describe = session.describe.clone().restore(&ctx)?;
                        let described = describe.call((error,)).unwrap_or_else(|_| {
                            let _ = ctx.catch();
                            JOB_FAILED.to_owned()
                        });
                        finished.set(true);
                        let _ = events.send(VmEvent::Failed(described));
                        Ok(())
                    })?;
                    return Ok(());
                }
            }
            jobs += 1;
            if jobs.is_multiple_of(JOBS_PER_POLL) && (poll.borrow_mut())() {
                break;
            }
        }
        if !finished.get() && !exhausted.get() && !stop.load(Ordering::Relaxed) {
            context.with(|ctx| {
                let stalled = session.stalled.clone().restore(&ctx)?;
                let stalls: bool = stalled.call((true,))?;
                let reason = unhandled.borrow_mut().take();
                if let Some(reason) = reason.filter(|_| stalls) {
                    let describe = session.describe.clone().restore(&ctx)?;
                    let described = describe.call((reason.restore(&ctx)?,)).unwrap_or_else(|_| {
                        let _ = ctx.catch();
                        JOB_FAILED.to_owned()
                    });
                    finished.set(true);
                    let _ = events.send(VmEvent::Failed(described));
                } else if stalls {
                    stalled.call::<_, Value<'_>>((false,))?;
                }
                Ok::<_, rquickjs::Error>(())
            })?;
        }
        Ok(())
    };
    drain()?;
    loop {
        if finished.get() || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if exhausted.get() {
            let _ = events.send(VmEvent::BudgetExhausted);
            return Ok(());
        }
        let Ok(reply) = replies.recv() else {
            return Ok(());
        };
        context.with(|ctx| -> rquickjs::Result<()> {
            let settle = session.settle.clone().restore(&ctx)?;
            if settle
                .call::<_, Value<'_>>((reply.id, reply.ok, reply.payload))
                .is_err()
            {
                // Only an interrupt fails `settle`; the loop reports it above.
                let _ = ctx.catch();
            }
            Ok(())
        })?;
        drain()?;
    }
}

/// The prelude's functions for one script, kept across the VM's turns.
struct SavedSession {
    settle: Persistent<Function<'static>>,
    stalled: Persistent<Function<'static>>,
    describe: Persistent<Function<'static>>,
}

/// The prelude's functions for one script.
struct Session<'js> {
    settle: Function<'js>,
    stalled: Function<'js>,
    describe: Function<'js>,
}

impl<'js> Session<'js> {
    fn save(self, ctx: &Ctx<'js>) -> SavedSession {
        SavedSession {
            settle: Persistent::save(ctx, self.settle),
            stalled: Persistent::save(ctx, self.stalled),
            describe: Persistent::save(ctx, self.describe),
        }
    }

    /// Evaluate the prelude and start the script; `None` when the script did not compile
    /// (its failure is reported).
    fn start(
        ctx: &Ctx<'js>,
        start: &VmStart,
        events: &UnboundedSender<VmEvent>,
        finished: &Rc<Cell<bool>>,
        exhausted: &Rc<Cell<bool>>,
    ) -> rquickjs::Result<Option<Self>> {
        let sender = events.clone();
        let finished = Rc::clone(finished);
        let exhausted = Rc::clone(exhausted);
        let bridge = Function::new(
            ctx.clone(),
            move |kind: String, a: String, b: String, c: String, d: String| {
                let event = match kind.as_str() {
                    "call" | "global" => VmEvent::Call {
                        id: a.parse().unwrap_or(0),
                        global: kind == "global",
                        name: b,
                        args: (d == "+").then_some(c),
                    },
                    "output" => VmEvent::Output(match a.as_str() {
                        "image" => OutputItem::Image {
                            data: b,
                            mime_type: c,
                        },
                        other => OutputItem::Text {
                            text: b,
                            console: other == "console",
                        },
                    }),
                    _ if exhausted.get() => {
                        // The script ended because the budget ran out (pi reports that).
                        finished.set(true);
                        VmEvent::BudgetExhausted
                    }
                    _ => {
                        finished.set(true);
                        if a == "ok" {
                            VmEvent::Done {
                                value: (!b.is_empty()).then_some(b),
                                writes: c,
                            }
                        } else {
                            VmEvent::Failed(b)
                        }
                    }
                };
                // The host may have stopped listening (a timeout); the VM stops soon after.
                let _ = sender.send(event);
            },
        )?;
        let mut options = EvalOptions::default();
        options.strict = false;
        options.filename = Some("codemode-prelude.js".to_owned());
        let factory: Function<'js> = ctx.eval_with_options(PRELUDE, options)?;
        let api: Object<'js> = factory.call((
            bridge,
            start.tools_json.as_str(),
            start.globals_json.as_str(),
            start.store_json.as_str(),
        ))?;
        let run: Function<'js> = api.get("run")?;
        let describe: Function<'js> = api.get("describe")?;
        let session = Session {
            settle: api.get("settle")?,
            stalled: api.get("stalled")?,
            describe: describe.clone(),
        };
        // The wrapper shares the first line with the script, so line numbers match the input.
        let mut options = EvalOptions::default();
        options.strict = false;
        options.filename = Some("codemode.js".to_owned());
        let wrapped = format!("(async (tools, console) => {{{}\n}})", start.code);
        let script = match ctx.eval_with_options::<Function<'js>, _>(wrapped, options) {
            Ok(script) => script,
            Err(rquickjs::Error::Exception) => {
                let error = ctx.catch();
                let described: String = describe.call((error,))?;
                let _ = events.send(VmEvent::Failed(described));
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        if run.call::<_, Value<'js>>((script,)).is_err() {
            // An interrupt while the script's synchronous part ran.
            let _ = ctx.catch();
        }
        Ok(Some(session))
    }
}
