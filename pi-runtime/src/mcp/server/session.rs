//! What one client asked of the server over its connection: the least severe log level it
//! wants (`logging/setLevel`) and the resources it follows (`resources/subscribe`), up to
//! 2025-11-25. From 2026-07-28 a request says its log level itself, and a client follows
//! resources on a `subscriptions/listen` stream, which lasts as long as its request.

// Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28; both
// revisions served here have them.
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{LoggingLevel, ResourceUpdatedNotificationParam};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};

#[derive(Default)]
pub(crate) struct Session {
    log_level: Mutex<Option<LoggingLevel>>,
    subscribed: Mutex<HashSet<String>>,
    /// The connection to tell of changes, known once the client subscribes.
    peer: Mutex<Option<Peer<RoleServer>>>,
}

impl Session {
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    pub(crate) fn subscribe(&self, uri: String, peer: &Peer<RoleServer>) {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(uri);
        let mut known = self.peer.lock().unwrap_or_else(PoisonError::into_inner);
        if known.is_none() {
            *known = Some(peer.clone());
        }
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uri);
    }

    /// The connection to tell that `uri` changed, when this client follows it.
    fn follower_of(&self, uri: &str) -> Option<Peer<RoleServer>> {
        let follows = self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(uri);
        if !follows {
            return None;
        }
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Every live session and `subscriptions/listen` stream of a server.
#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<Vec<Weak<Session>>>,
    /// The open streams, by a number of their own.
    streams: Mutex<Vec<(u64, SubscriptionSink)>>,
    next_stream: std::sync::atomic::AtomicU64,
}

/// Removes a stream from the server's list when its `listen` ends, however it ends.
pub(crate) struct Listening<'a> {
    sessions: &'a Sessions,
    id: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.sessions
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
    }
}

impl Sessions {
    /// Keep `session` while its connection lives; the ended ones are dropped here.
    pub(crate) fn add(&self, session: &Arc<Session>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|session| session.strong_count() > 0);
        sessions.push(Arc::downgrade(session));
    }

    /// Send the notices of changes to `sink` until the returned guard is dropped.
    pub(crate) fn listen(&self, sink: SubscriptionSink) -> Listening<'_> {
        let id = self
            .next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, sink));
        Listening { sessions: self, id }
    }

    pub(crate) async fn resource_updated(&self, uri: &str) {
        let followers: Vec<Peer<RoleServer>> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|session| session.follower_of(uri))
            .collect();
        for peer in followers {
            let notice = ResourceUpdatedNotificationParam::new(uri.to_owned());
            // A client that went away misses it.
            let _ = peer.notify_resource_updated(notice).await;
        }
        let streams: Vec<SubscriptionSink> = self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, sink)| sink.clone())
            .collect();
        for sink in streams {
            // The sink sends only what its client asked to follow; the rest is refused here.
            let _ = sink.notify_resource_updated(uri).await;
        }
    }
}
