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

/// Set in the environment of a test run by [`alone`].
#[cfg(feature = "mcp")]
pub(crate) const ALONE: &str = "PI_TEST_ALONE";

/// Run the `#[ignore]`d test `name` (its full path) of this binary in a process of its own,
/// where no other test allocates: for what the resident memory tells, which the tests running
/// beside it would blur. The test runs only with [`ALONE`] set. Panics, with its output, if
/// it fails.
#[cfg(feature = "mcp")]
pub(crate) async fn alone(name: &str) {
    let exe = std::env::current_exe().expect("this test binary");
    let run = tokio::process::Command::new(exe)
        .args([name, "--exact", "--ignored", "--nocapture"])
        .env(ALONE, "1")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(180), run)
        .await
        .expect("the test ends within 3 minutes")
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "{name} failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
}
