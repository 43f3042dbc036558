//! Event delivery: each event goes to every open event stream and to each subscriber in
//! subscription order (each awaited before the run goes on, so a subscriber has seen an
//! event before anything after it happens). The conversation's state has taken the event
//! in before (`Shared::emit`).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::{FutureExt, Stream};
use tokio::sync::mpsc;

use super::AgentEvent;

/// A subscriber: called in place, or given a shared event and awaited.
#[derive(Clone)]
pub(crate) enum Listener {
    Sync(Arc<dyn Fn(&AgentEvent) + Send + Sync>),
    Async(Arc<dyn Fn(Arc<AgentEvent>) -> BoxFuture<'static, ()> + Send + Sync>),
}

/// Identifies a subscription, to [`unsubscribe`](super::Agent::unsubscribe) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// How many undelivered events an [`EventStream`] holds before it skips message updates.
pub const EVENT_STREAM_BACKLOG: usize = 1024;

/// The agent's events as a [`Stream`]; see [`Agent::events`](super::Agent::events).
///
/// It yields every event emitted after it was created and ends when the agent is dropped.
/// The run never waits for it, and a slow reader cannot make memory grow with the length of
/// a stream: once [`EVENT_STREAM_BACKLOG`] events wait undelivered, further
/// `message_update` events are skipped until the reader catches up. Nothing is lost by
/// that: every update carries the same [`LiveMessage`](crate::stream::LiveMessage), which
/// already shows the skipped changes. Every other event is always delivered, in order.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<AgentEvent>,
    backlog: Arc<AtomicUsize>,
}

impl Stream for EventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let next = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(_)) = &next {
            self.backlog.fetch_sub(1, Ordering::Relaxed);
        }
        next
    }
}

/// The sending side of one [`EventStream`].
struct StreamSender {
    tx: mpsc::UnboundedSender<AgentEvent>,
    backlog: Arc<AtomicUsize>,
}

impl StreamSender {
    /// Queue `event`; `false` once the stream is gone.
    fn send(&self, event: &AgentEvent) -> bool {
        let waiting = self.backlog.load(Ordering::Relaxed);
        if waiting >= EVENT_STREAM_BACKLOG && matches!(event, AgentEvent::MessageUpdate { .. }) {
            return !self.tx.is_closed();
        }
        self.backlog.fetch_add(1, Ordering::Relaxed);
        self.tx.send(event.clone()).is_ok()
    }
}

/// The subscribers and the open streams.
#[derive(Default)]
pub(crate) struct Bus {
    // Swapped as a whole on (un)subscribe, so an emit holds the lock only to clone an `Arc`.
    listeners: RwLock<Arc<Vec<(SubscriptionId, Listener)>>>,
    streams: Mutex<Vec<StreamSender>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field(
                "listeners",
                &self.listeners.read().map(|l| l.len()).unwrap_or_default(),
            )
            .finish_non_exhaustive()
    }
}

/// Lock a mutex; a panic elsewhere while it was held leaves plain data, still usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bus {
    pub(crate) fn subscribe(&self, listener: Listener) -> SubscriptionId {
        let id = SubscriptionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut listeners = self
            .listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = Vec::clone(&listeners);
        next.push((id, listener));
        *listeners = Arc::new(next);
        id
    }

    pub(crate) fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut listeners = self
            .listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let before = listeners.len();
        let next: Vec<_> = listeners
            .iter()
            .filter(|(i, _)| *i != id)
            .cloned()
            .collect();
        let removed = next.len() != before;
        *listeners = Arc::new(next);
        removed
    }

    pub(crate) fn stream(&self) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        lock(&self.streams).push(StreamSender {
            tx,
            backlog: Arc::clone(&backlog),
        });
        EventStream { rx, backlog }
    }

    /// Deliver one event. A panicking subscriber is skipped: observers never end a run.
    ///
    /// Everything up to the first async subscriber happens now; the future returned only
    /// awaits the async subscribers and those after them, and is small (a run emits an event
    /// for every streamed delta, so a large future copied per event shows in its cost).
    pub(crate) fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send + 'static {
        {
            let mut streams = lock(&self.streams);
            if !streams.is_empty() {
                streams.retain(|stream| stream.send(&event));
            }
        }
        let listeners = Arc::clone(
            &self
                .listeners
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let first_async = listeners
            .iter()
            .position(|(_, listener)| matches!(listener, Listener::Async(_)));
        for (_, listener) in &listeners[..first_async.unwrap_or(listeners.len())] {
            if let Listener::Sync(listener) = listener {
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| listener(&event)));
            }
        }
        #[expect(
            clippy::manual_map,
            reason = "`Option::map`'s closure would take the event by a copy even with no async \
                      subscriber (events are a few hundred bytes, and a run emits thousands)"
        )]
        let rest = match first_async {
            Some(first) => Some((listeners, first, Arc::new(event))),
            None => None,
        };
        async move {
            if let Some((listeners, first, event)) = rest {
                deliver_in_order(&listeners[first..], event).await;
            }
        }
    }
}

/// Deliver a shared event to `listeners` in order, awaiting each async one.
async fn deliver_in_order(listeners: &[(SubscriptionId, Listener)], event: Arc<AgentEvent>) {
    for (_, listener) in listeners {
        match listener {
            Listener::Sync(listener) => {
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| listener(&event)));
            }
            Listener::Async(listener) => {
                let event = Arc::clone(&event);
                if let Ok(delivered) =
                    std::panic::catch_unwind(AssertUnwindSafe(|| listener(event)))
                {
                    let _ = AssertUnwindSafe(delivered).catch_unwind().await;
                }
            }
        }
    }
}
