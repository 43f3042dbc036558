//! Peak-memory checks. The tests of this binary share one process, so a test that asserts
//! how much the peak grew holds [`measured`]'s lock, and so does every test that allocates
//! tens of megabytes on purpose (a 50 MB event, an endless one, a 5 MB edit, bash output over
//! its cap): their peaks do not add up.

use tokio::sync::{Mutex, MutexGuard};

static HEAVY: Mutex<()> = Mutex::const_new(());

/// Wait until no other heavy test runs; hold the guard for the whole test.
pub(crate) async fn measured() -> MutexGuard<'static, ()> {
    HEAVY.lock().await
}

/// The peak resident memory of this process, in bytes.
pub(crate) fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        * 1024
}

/// The resident memory of this process now, in bytes.
// Only the MCP tests measure what stays resident after a close.
#[cfg(feature = "mcp")]
pub(crate) fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS in /proc/self/status")
        * 1024
}
