//! Signals to a whole process group. The bash tool's shell and a stdio MCP server are each
//! spawned with `process_group(0)`, leading a group of their own, so one signal reaches
//! everything they started that stayed in it; [`tree`] finds the ones that left it.

pub(crate) mod tree;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The group `child` leads (it was spawned with `process_group(0)`), while it runs.
pub(crate) fn group_of(child: &tokio::process::Child) -> Option<Pid> {
    child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
}

/// Send `signal` to every process of `group`. A group that is gone already (`ESRCH`) is the
/// outcome wanted, so failures are ignored.
pub(crate) fn signal_group(group: Pid, signal: Signal) {
    let _ = killpg(group, signal);
}

/// Kill every process of `group`.
pub(crate) fn kill_group(group: Pid) {
    signal_group(group, Signal::SIGKILL);
}
