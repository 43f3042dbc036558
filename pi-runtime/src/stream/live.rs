//! The message a response is building, shared between its one writer and its readers.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::message::AssistantMessage;

/// A cheap handle to the assistant message being streamed.
///
/// The response's writer ([`MessageWriter`](super::MessageWriter)) updates the message in
/// place; every clone of the handle sees it as it stands now, so an event costs time
/// proportional to the event, never to the message so far. The `start` event hands the
/// handle out, and every [`AgentEvent::MessageUpdate`](crate::AgentEvent::MessageUpdate)
/// carries it.
///
/// Read the message in place with [`read`](Self::read) (what a renderer does after each
/// update), or take an owned copy with [`snapshot`](Self::snapshot) when it must outlive
/// the next event.
///
/// ```
/// use pi_runtime::stream::LiveMessage;
/// use pi_runtime::{AssistantMessage, ContentBlock};
///
/// let mut message = AssistantMessage::empty("faux", "faux", "faux-1");
/// message.content.push(ContentBlock::text("Hel"));
/// let live = LiveMessage::new(message);
/// assert_eq!(live.read(|message| message.text()), "Hel");
/// assert_eq!(live.snapshot().content.len(), 1);
/// ```
#[derive(Clone)]
pub struct LiveMessage(Arc<Mutex<Arc<AssistantMessage>>>);

impl LiveMessage {
    /// A handle to `message`.
    pub fn new(message: AssistantMessage) -> Self {
        LiveMessage(Arc::new(Mutex::new(Arc::new(message))))
    }

    /// Look at the message as it stands, without copying it.
    ///
    /// The writer waits while `f` runs: keep it short, and do not wait on the stream in it.
    pub fn read<R>(&self, f: impl FnOnce(&AssistantMessage) -> R) -> R {
        f(&self.lock())
    }

    /// A handle to a message already shared (nothing is copied until someone writes).
    pub(crate) fn from_shared(message: Arc<AssistantMessage>) -> Self {
        LiveMessage(Arc::new(Mutex::new(message)))
    }

    /// An owned copy of the message as it stands.
    pub fn snapshot(&self) -> AssistantMessage {
        AssistantMessage::clone(&self.lock())
    }

    /// The message as it stands, shared rather than copied: the writer hands out the final
    /// message this way, and a later write (there is none once a response is settled) would
    /// copy it first.
    pub(crate) fn share(&self) -> Arc<AssistantMessage> {
        Arc::clone(&self.lock())
    }

    /// Whether both handles are the same message.
    pub fn same_message(&self, other: &LiveMessage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Change the message; only its writer does.
    pub(crate) fn write<R>(&self, f: impl FnOnce(&mut AssistantMessage) -> R) -> R {
        f(Arc::make_mut(&mut self.lock()))
    }

    /// The message, held locked until the guard drops.
    pub(crate) fn guard(&self) -> MessageGuard<'_> {
        MessageGuard(self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Arc<AssistantMessage>> {
        // A panic while the lock was held leaves a message, still readable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The message of a [`LiveMessage`], locked: readers and the writer wait until it drops.
/// From [`MessageWriter::message`](super::MessageWriter::message) it only reads; from
/// [`MessageWriter::message_mut`](super::MessageWriter::message_mut) it also changes the
/// message.
#[derive(Debug)]
pub struct MessageGuard<'a>(MutexGuard<'a, Arc<AssistantMessage>>);

impl Deref for MessageGuard<'_> {
    type Target = AssistantMessage;

    fn deref(&self) -> &AssistantMessage {
        &self.0
    }
}

/// [`MessageGuard`] that may change the message.
#[derive(Debug)]
pub struct MessageGuardMut<'a>(MessageGuard<'a>);

impl<'a> MessageGuardMut<'a> {
    pub(crate) fn new(guard: MessageGuard<'a>) -> Self {
        MessageGuardMut(guard)
    }
}

impl Deref for MessageGuardMut<'_> {
    type Target = AssistantMessage;

    fn deref(&self) -> &AssistantMessage {
        &self.0
    }
}

impl DerefMut for MessageGuardMut<'_> {
    fn deref_mut(&mut self) -> &mut AssistantMessage {
        Arc::make_mut(&mut self.0.0)
    }
}

impl PartialEq for LiveMessage {
    /// Equal when both show the same message now.
    fn eq(&self, other: &Self) -> bool {
        self.same_message(other) || self.snapshot() == other.snapshot()
    }
}

impl fmt::Debug for LiveMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.read(|message| f.debug_tuple("LiveMessage").field(message).finish())
    }
}

impl From<AssistantMessage> for LiveMessage {
    fn from(message: AssistantMessage) -> Self {
        LiveMessage::new(message)
    }
}
