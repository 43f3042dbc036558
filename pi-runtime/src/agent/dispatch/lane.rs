//! The one rule that a sequential tool runs alone, for every path a call takes: a batch's
//! calls, a tool's own calls of other tools (code mode's), and an MCP server's calls. Each
//! call holds the lane of its run (or server) while it executes: a sequential call all of
//! it, any other call a share. A nested call inherits its parent's hold: under a parent that
//! runs alone it takes nothing, and under a parent that holds a share it runs on that share,
//! unless it must run alone itself: then the parent's share is handed back while the nested
//! call waits for, and holds, the whole lane, and taken again after it. That hand-back is
//! what keeps two parents that both nest a sequential call from waiting for each other.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shares of a lane: a call running alone holds all of them.
const SHARES: u32 = 1 << 20;

/// The lane of one run's (or one server's) calls. Cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct Lane(Arc<Semaphore>);

impl Default for Lane {
    fn default() -> Self {
        Lane(Arc::new(Semaphore::new(SHARES as usize)))
    }
}

/// What a running call holds of its lane; a nested call reads it to inherit.
#[derive(Debug)]
pub(crate) struct Hold {
    alone: bool,
    /// The permit, while held: a nested call that runs alone hands a share back for its
    /// time.
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Hold {
    /// A hold of nothing: the call runs under its parent's.
    fn inherited(alone: bool) -> Self {
        Hold {
            alone,
            permit: Mutex::new(None),
        }
    }

    /// Let the lane go: the call ended.
    pub(crate) fn release(&self) {
        drop(lock(&self.permit).take());
    }
}

/// The share a nested call that runs alone borrowed from its parent: taken again when the
/// nested call ended.
pub(crate) struct ShareBack<'a> {
    lane: Lane,
    parent: &'a Hold,
}

impl ShareBack<'_> {
    /// Take the parent's share again (the nested call released the whole lane).
    pub(crate) async fn take_again(self) {
        if let Ok(share) = Arc::clone(&self.lane.0).acquire_owned().await {
            *lock(&self.parent.permit) = Some(share);
        }
    }
}

/// How a call entered its lane: its hold, and the share to give back to its parent when it
/// borrowed the whole lane from it.
pub(crate) struct Entered<'a> {
    pub(crate) hold: Hold,
    pub(crate) share_back: Option<ShareBack<'a>>,
}

/// A call that may not run yet, from [`Lane::try_enter`]: what it waits for.
pub(crate) struct Waiting<'a> {
    alone: bool,
    /// The hold of the parent a call that must run alone borrows the whole lane from.
    parent: Option<&'a Hold>,
}

impl Lane {
    /// Enter the lane for a call that runs `alone` or not, nested in `parent`'s call if it
    /// is a nested call: at once when it may run now (the common case of a call that shares
    /// the lane with other shares, or inherits its parent's hold), else what it must wait
    /// for, to [`wait`](Self::wait).
    pub(crate) fn try_enter<'a>(
        &self,
        alone: bool,
        parent: Option<&'a Hold>,
    ) -> Result<Entered<'a>, Waiting<'a>> {
        let hold = match parent {
            Some(parent) if parent.alone || !alone => Hold::inherited(parent.alone),
            Some(parent) => {
                return Err(Waiting {
                    alone,
                    parent: Some(parent),
                });
            }
            None => match Arc::clone(&self.0).try_acquire_many_owned(shares(alone)) {
                Ok(permit) => Hold {
                    alone,
                    permit: Mutex::new(Some(permit)),
                },
                Err(_) => {
                    return Err(Waiting {
                        alone,
                        parent: None,
                    });
                }
            },
        };
        Ok(Entered {
            hold,
            share_back: None,
        })
    }

    /// Wait until a call that may not run yet may run; cancel by dropping the future.
    pub(crate) async fn wait<'a>(&self, waiting: Waiting<'a>) -> Entered<'a> {
        let Waiting { alone, parent } = waiting;
        let Some(parent) = parent else {
            return Entered {
                hold: Hold {
                    alone,
                    permit: Mutex::new(self.take(shares(alone)).await),
                },
                share_back: None,
            };
        };
        // A call that must run alone under a parent's share: hand the share back while this
        // call waits for the whole lane.
        drop(lock(&parent.permit).take());
        let permit = self.take(SHARES).await;
        Entered {
            hold: Hold {
                alone: true,
                permit: Mutex::new(permit),
            },
            share_back: Some(ShareBack {
                lane: self.clone(),
                parent,
            }),
        }
    }

    async fn take(&self, shares: u32) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed.
        Arc::clone(&self.0).acquire_many_owned(shares).await.ok()
    }
}

/// The shares a call takes: all of them when it runs alone.
fn shares(alone: bool) -> u32 {
    if alone { SHARES } else { 1 }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
