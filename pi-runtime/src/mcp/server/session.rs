//! What one client asked of the server over its connection: the least severe log level it
//! wants (`logging/setLevel`) and the resources it follows (`resources/subscribe`), up to
//! 2025-11-25. From 2026-07-28 a request says its log level itself, and nothing is kept.

// Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28; both
// revisions served here have them.
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{LoggingLevel, ResourceUpdatedNotificationParam};
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

/// Every live session of a server.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<Vec<Weak<Session>>>);

impl Sessions {
    /// Keep `session` while its connection lives; the ended ones are dropped here.
    pub(crate) fn add(&self, session: &Arc<Session>) {
        let mut sessions = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|session| session.strong_count() > 0);
        sessions.push(Arc::downgrade(session));
    }

    pub(crate) async fn resource_updated(&self, uri: &str) {
        let followers: Vec<Peer<RoleServer>> = self
            .0
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
    }
}
