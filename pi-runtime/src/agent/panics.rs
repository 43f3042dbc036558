//! Panics of user code (tools, hooks, models) caught where they happen, so that each becomes
//! a result the model and the caller see instead of tearing down the run.

use std::any::Any;
use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Once;

use futures::FutureExt;
use futures::future::Either;

/// Run a user future, turning a panic (while creating or polling it) into its message.
///
/// Such a panic is a result the model and the caller see, so the process's panic hook does
/// not print it too (see [`quiet_caught_panics`]).
pub(crate) async fn guarded<F, Fut>(make: F) -> Result<Fut::Output, String>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    caught(made_caught(make)).await
}

/// Call `make` now, a panic in it becoming its message (the first half of [`guarded`]).
pub(crate) fn made_caught<Fut>(make: impl FnOnce() -> Fut) -> Result<Fut, String> {
    quiet_caught_panics();
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        let _caught = CaughtScope::enter();
        make()
    }))
    .map_err(|panic| panic_message(&*panic))
}

/// What [`made_caught`] made, polled to its end, a panic while polling it becoming its
/// message (the second half of [`guarded`]).
pub(crate) fn caught<Fut: Future>(
    made: Result<Fut, String>,
) -> impl Future<Output = Result<Fut::Output, String>> {
    match made {
        Ok(future) => Either::Left(poll_caught(future)),
        Err(message) => Either::Right(std::future::ready(Err(message))),
    }
}

/// Poll `future` to its end, a panic while polling it becoming its message.
async fn poll_caught<Fut: Future>(future: Fut) -> Result<Fut::Output, String> {
    let mut future = pin!(future);
    let caught = futures::future::poll_fn(|cx| {
        let _caught = CaughtScope::enter();
        future.as_mut().poll(cx)
    });
    AssertUnwindSafe(caught)
        .catch_unwind()
        .await
        .map_err(|panic| panic_message(&*panic))
}

thread_local! {
    /// How many [`CaughtScope`]s are open on this thread.
    static CAUGHT: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as running user code whose panics become results, until dropped
/// (unwinding included).
struct CaughtScope;

impl CaughtScope {
    fn enter() -> Self {
        CAUGHT.with(|caught| caught.set(caught.get() + 1));
        CaughtScope
    }
}

impl Drop for CaughtScope {
    fn drop(&mut self) {
        CAUGHT.with(|caught| caught.set(caught.get().saturating_sub(1)));
    }
}

/// Wrap the process's panic hook, once: a panic inside a [`CaughtScope`] becomes a tool or
/// hook result (and a `tracing` warning on the call's span), so it is not printed; every
/// other panic goes to the hook that was there before.
fn quiet_caught_panics() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CAUGHT.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// The message of a panic payload (`panic!("...")` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked".to_owned()
    }
}
