//! Tools that block their thread, for the tests of time limits: a blocking wait, as
//! `std::thread::sleep` would, that the test releases before it ends, so that no thread
//! outlives it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pi_runtime::tool::ToolPolicy;
use pi_runtime::{FnTool, ToolError, ToolResult};
use serde_json::json;

/// How long a blocking tool blocks at most when nothing releases it: past any bound a test
/// sets, so a time limit that waits for the tool fails the test.
const BLOCK_FOR: Duration = Duration::from_secs(20);
/// The longest a call timing out after 200 ms, then abandoned a second later, may take on a
/// loaded machine. The defect took [`BLOCK_FOR`].
pub(crate) const ON_TIME: Duration = Duration::from_secs(6);

/// Tools that block their thread (a blocking wait, as `std::thread::sleep` would) until
/// released or [`BLOCK_FOR`] passed; counts the calls still blocking, so that a test can see
/// every thread end before it does.
#[derive(Clone, Default)]
pub(crate) struct Blocking {
    gate: Arc<(Mutex<bool>, Condvar)>,
    blocking: Arc<AtomicUsize>,
}

impl Blocking {
    /// A tool `name` with a 200 ms timeout that blocks its thread.
    pub(crate) fn tool(&self, name: &str) -> FnTool {
        let this = self.clone();
        FnTool::new(name, "Blocks.", json!({"type": "object"}), move |_, _| {
            let this = this.clone();
            async move {
                this.block();
                Ok::<_, ToolError>(ToolResult::text("unblocked"))
            }
        })
        .with_policy(ToolPolicy::new().with_timeout(Duration::from_millis(200)))
    }

    /// How many calls are blocking now.
    pub(crate) fn blocking(&self) -> usize {
        self.blocking.load(Ordering::SeqCst)
    }

    fn block(&self) {
        self.blocking.fetch_add(1, Ordering::SeqCst);
        let (released, wake) = &*self.gate;
        let released = released.lock().unwrap();
        let _ = wake
            .wait_timeout_while(released, BLOCK_FOR, |released| !*released)
            .unwrap();
        self.blocking.fetch_sub(1, Ordering::SeqCst);
    }

    /// Release every blocked call, and wait until each has returned.
    pub(crate) async fn release(&self) {
        let (released, wake) = &*self.gate;
        *released.lock().unwrap() = true;
        wake.notify_all();
        let started = Instant::now();
        while self.blocking.load(Ordering::SeqCst) > 0 {
            assert!(
                started.elapsed() < ON_TIME,
                "the blocked calls never returned"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
