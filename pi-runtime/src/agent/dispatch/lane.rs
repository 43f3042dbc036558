//! The one rule that a sequential tool runs alone, for every path a call takes: a batch's
//! calls, a tool's own calls of other tools (code mode's), and an MCP server's calls. Each
//! call holds the lane of its run (or server) while it executes: a sequential call all of
//! it, any other call a share. A nested call inherits its parent's hold: under a parent that
//! runs alone it takes nothing, and under a parent that holds a share it runs on that share,
//! unless it must run alone itself: then the parent's share is handed back while the nested
//! call waits for, and holds, the whole lane, and taken again after it. That hand-back is
//! what keeps two parents that both nest a sequential call from waiting for each other. A
//! call nested deeper inherits the same hold, so the share handed back for it is the one its
//! ancestor holds.
//!
//! A parent may nest several such calls at once (a script's `Promise.all`). The share is
//! handed back once, for all of them, and taken again only when the last is done; a share
//! taken again while another started to wait is let go at once. A nested call stopped while
//! it waits, or dropped, gives its turn back too.

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
    held: Mutex<Held>,
}

/// What a [`Hold`] holds now.
#[derive(Debug, Default)]
struct Held {
    /// The permit, while held: nested calls that run alone hand a share back for their time.
    permit: Option<OwnedSemaphorePermit>,
    /// How many nested calls that run alone the share is handed back for now (waiting for
    /// the whole lane or holding it).
    lent: usize,
    /// The call ended: its share is not taken again.
    released: bool,
}

impl Hold {
    fn holding(alone: bool, permit: Option<OwnedSemaphorePermit>) -> Self {
        Hold {
            alone,
            held: Mutex::new(Held {
                permit,
                ..Held::default()
            }),
        }
    }

    /// A hold of nothing: the call runs under its parent's.
    fn inherited(alone: bool) -> Self {
        Hold::holding(alone, None)
    }

    /// Let the lane go: the call ended.
    pub(crate) fn release(&self) {
        let mut held = lock(&self.held);
        held.released = true;
        drop(held.permit.take());
    }

    /// Hand the share back for a nested call that runs alone.
    fn lend(&self) {
        let mut held = lock(&self.held);
        held.lent += 1;
        drop(held.permit.take());
    }

    /// A nested call that ran alone (or waited to) is done: whether the share is to be taken
    /// again, because no other one still needs it handed back.
    fn returned(&self) -> bool {
        let mut held = lock(&self.held);
        held.lent = held.lent.saturating_sub(1);
        held.lent == 0 && !held.released
    }

    /// Keep `share`, taken again, unless a nested call started to wait while it was being
    /// taken (it needs the share handed back), or the call ended, or holds one already.
    fn take_back(&self, share: OwnedSemaphorePermit) {
        let mut held = lock(&self.held);
        if held.lent == 0 && !held.released && held.permit.is_none() {
            held.permit = Some(share);
        }
    }
}

/// The share a nested call that runs alone borrowed from its parent, from the moment it
/// starts to wait for the whole lane: [`take_again`](Self::take_again) when the nested call
/// ended. Dropped instead (the call was stopped while it waited, or dropped), it takes the
/// share again if one is free at once.
pub(crate) struct ShareBack<'a> {
    lane: Lane,
    parent: &'a Hold,
    returned: bool,
}

impl<'a> ShareBack<'a> {
    fn lend(lane: &Lane, parent: &'a Hold) -> Self {
        parent.lend();
        ShareBack {
            lane: lane.clone(),
            parent,
            returned: false,
        }
    }

    /// Take the parent's share again (the nested call released the whole lane).
    pub(crate) async fn take_again(mut self) {
        self.returned = true;
        if !self.parent.returned() {
            return;
        }
        if let Ok(share) = Arc::clone(&self.lane.0).acquire_owned().await {
            self.parent.take_back(share);
        }
    }
}

impl Drop for ShareBack<'_> {
    fn drop(&mut self) {
        if !self.returned
            && self.parent.returned()
            && let Ok(share) = Arc::clone(&self.lane.0).try_acquire_owned()
        {
            self.parent.take_back(share);
        }
    }
}

/// How a call entered its lane: its hold, and the share to give back to its parent when it
/// borrowed the whole lane from it.
pub(crate) struct Entered<'a> {
    pub(crate) hold: Hold,
    pub(crate) share_back: Option<ShareBack<'a>>,
    /// The call runs under its parent's hold, holding nothing itself: its own nested calls
    /// run under (and borrow from) its parent's too.
    pub(crate) inherited: bool,
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
        let (hold, inherited) = match parent {
            Some(parent) if parent.alone || !alone => (Hold::inherited(parent.alone), true),
            Some(parent) => {
                return Err(Waiting {
                    alone,
                    parent: Some(parent),
                });
            }
            None => match Arc::clone(&self.0).try_acquire_many_owned(shares(alone)) {
                Ok(permit) => (Hold::holding(alone, Some(permit)), false),
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
            inherited,
        })
    }

    /// Wait until a call that may not run yet may run; cancel by dropping the future.
    pub(crate) async fn wait<'a>(&self, waiting: Waiting<'a>) -> Entered<'a> {
        let Waiting { alone, parent } = waiting;
        let Some(parent) = parent else {
            return Entered {
                hold: Hold::holding(alone, self.take(shares(alone)).await),
                share_back: None,
                inherited: false,
            };
        };
        // A call that must run alone under a parent's share: hand the share back while this
        // call waits for the whole lane (given back if it stops waiting).
        let share_back = ShareBack::lend(self, parent);
        let permit = self.take(SHARES).await;
        Entered {
            hold: Hold::holding(true, permit),
            share_back: Some(share_back),
            inherited: false,
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

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Poll;

    use futures::{FutureExt, poll};

    use super::*;

    /// A call that enters at once: a top-level one, or a nested one that does not wait.
    fn enter<'a>(lane: &Lane, alone: bool, parent: Option<&'a Hold>) -> Entered<'a> {
        match lane.try_enter(alone, parent) {
            Ok(entered) => entered,
            Err(waiting) => (lane.wait(waiting).now_or_never()).expect("the call enters at once"),
        }
    }

    /// The waiting of a nested call that runs alone under `parent`.
    fn waiting<'a>(lane: &Lane, parent: &'a Hold) -> Waiting<'a> {
        match lane.try_enter(true, Some(parent)) {
            Ok(_) => panic!("a call that runs alone under a share waits for the whole lane"),
            Err(waiting) => waiting,
        }
    }

    #[tokio::test]
    async fn a_share_taken_again_while_a_sibling_waits_is_let_go() {
        let lane = Lane::default();
        let p = enter(&lane, false, None).hold;
        let q = enter(&lane, false, None).hold;
        // A runs alone under P, C under Q: A gets the lane when Q hands its share back.
        let mut a = pin!(lane.wait(waiting(&lane, &p)));
        assert!(poll!(a.as_mut()).is_pending());
        let mut c = pin!(lane.wait(waiting(&lane, &q)));
        assert!(poll!(c.as_mut()).is_pending());
        let Poll::Ready(a) = poll!(a.as_mut()) else {
            panic!("A has the lane")
        };
        a.hold.release();
        // A takes P's share again behind C, which has the lane now.
        let mut a_back = pin!(a.share_back.unwrap().take_again());
        assert!(poll!(a_back.as_mut()).is_pending());
        let Poll::Ready(c) = poll!(c.as_mut()) else {
            panic!("C has the lane")
        };
        c.hold.release();
        c.share_back.unwrap().take_again().await;
        // A's share is granted; before A takes it, B (alone under P too) starts to wait.
        let mut b = pin!(lane.wait(waiting(&lane, &p)));
        assert!(poll!(b.as_mut()).is_pending());
        a_back.await;
        // P does not keep the share A took: B waits only for Q.
        q.release();
        assert!(poll!(b.as_mut()).is_ready(), "B waits for its own parent");
    }

    #[tokio::test]
    async fn a_nested_call_stopped_while_it_waits_gives_the_share_back() {
        let lane = Lane::default();
        let p = enter(&lane, false, None).hold;
        let q = enter(&lane, false, None).hold;
        let mut a = Box::pin(lane.wait(waiting(&lane, &p)));
        assert!(poll!(a.as_mut()).is_pending());
        drop(a);
        q.release();
        // P runs on, holding its share again: a call that runs alone waits for it.
        assert!(lane.try_enter(true, None).is_err());
        p.release();
        assert!(lane.try_enter(true, None).is_ok());
    }

    #[tokio::test]
    async fn two_nested_calls_hand_the_share_back_once() {
        let lane = Lane::default();
        let p = enter(&lane, false, None).hold;
        let mut a = pin!(lane.wait(waiting(&lane, &p)));
        let mut b = pin!(lane.wait(waiting(&lane, &p)));
        let Poll::Ready(a) = poll!(a.as_mut()) else {
            panic!("A has the lane")
        };
        assert!(poll!(b.as_mut()).is_pending());
        a.hold.release();
        a.share_back.unwrap().take_again().await;
        // B still needs the share handed back, so A did not take it.
        let Poll::Ready(b) = poll!(b.as_mut()) else {
            panic!("B has the lane")
        };
        b.hold.release();
        b.share_back.unwrap().take_again().await;
        // The last one took it again: P holds its share until it ends.
        assert!(lane.try_enter(true, None).is_err());
        p.release();
        assert!(lane.try_enter(true, None).is_ok());
    }
}
