//! Run `bash -c` in a process group of its own, stream its merged stdout and stderr, and
//! kill the whole group on timeout, on cancellation, or when the run is dropped, so no
//! process is left behind.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

/// After the shell exited, output still arriving from its background processes is read until
/// the pipes close or stay quiet this long, so a daemon holding the pipes cannot hang the
/// tool.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ending {
    /// The shell exited; a shell killed by a signal reports `128 + <signal>`.
    Exited(i32),
    /// The timeout fired. `shell_exit` is set when the shell itself had exited before the
    /// deadline (its code and seconds) and only its background processes kept the pipes open.
    TimedOut { shell_exit: Option<(i32, f64)> },
    /// The signal fired.
    Aborted,
}

/// Where the output goes, and when the run should call back without new output (for
/// throttled progress updates).
pub(crate) trait Sink {
    /// A chunk of stdout or stderr, in arrival order.
    fn data(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// When [`wake`](Sink::wake) should be called, if at all.
    fn wake_at(&self) -> Option<Instant>;
    /// The time asked for by `wake_at` has come.
    fn wake(&mut self) -> io::Result<()>;
}

/// Kills the process group on drop unless disarmed, so a dropped run (the caller stopped
/// polling) still cleans up.
struct GroupKiller {
    pgid: Option<Pid>,
}

impl GroupKiller {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is already gone) is the outcome wanted.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run `command` with `bash -c` in `cwd`.
///
/// # Errors
/// bash could not be started, or reading its output failed.
pub(crate) async fn run(
    command: &str,
    cwd: &Path,
    timeout: Option<Duration>,
    signal: &CancellationToken,
    sink: &mut impl Sink,
) -> io::Result<Ending> {
    let started = Instant::now();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let mut killer = GroupKiller {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(io::Error::other("bash was started without output pipes"));
    };
    let deadline = timeout.map(|t| started + t);
    let (mut out_buf, mut err_buf) = (vec![0_u8; 16 * 1024], vec![0_u8; 16 * 1024]);
    let (mut out_open, mut err_open) = (true, true);
    let mut status: Option<(ExitStatus, Instant)> = None;
    let mut grace_until: Option<Instant> = None;
    let mut timed_out: Option<Option<(i32, f64)>> = None;
    let mut aborted = false;

    loop {
        if status.is_some() && !out_open && !err_open {
            break;
        }
        let wake_at = sink.wake_at();
        tokio::select! {
            biased;
            () = signal.cancelled(), if !aborted && timed_out.is_none() => {
                killer.kill();
                aborted = true;
            }
            () = sleep_until(deadline.unwrap_or(started)), if deadline.is_some() && timed_out.is_none() && !aborted => {
                let shell_exit = status.map(|(s, at)| (exit_code(s), round_tenths(at - started)));
                // Also when the shell already exited: the group kill still reaches the
                // background processes holding the pipes.
                killer.kill();
                timed_out = Some(shell_exit);
            }
            read = stdout.read(&mut out_buf), if out_open => match read? {
                0 => out_open = false,
                n => {
                    sink.data(&out_buf[..n])?;
                    grace_until = status.map(|_| Instant::now() + EXIT_STDIO_GRACE);
                }
            },
            read = stderr.read(&mut err_buf), if err_open => match read? {
                0 => err_open = false,
                n => {
                    sink.data(&err_buf[..n])?;
                    grace_until = status.map(|_| Instant::now() + EXIT_STDIO_GRACE);
                }
            },
            exited = child.wait(), if status.is_none() => {
                let now = Instant::now();
                status = Some((exited?, now));
                grace_until = Some(now + EXIT_STDIO_GRACE);
            }
            () = sleep_until(grace_until.unwrap_or(started)), if grace_until.is_some() => break,
            () = sleep_until(wake_at.unwrap_or(started)), if wake_at.is_some() => sink.wake()?,
        }
    }
    if aborted {
        return Ok(Ending::Aborted);
    }
    if let Some(shell_exit) = timed_out {
        return Ok(Ending::TimedOut { shell_exit });
    }
    // A normal exit leaves background processes alone, as an interactive shell would.
    killer.pgid = None;
    Ok(Ending::Exited(status.map_or(1, |(s, _)| exit_code(s))))
}

fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

fn round_tenths(elapsed: Duration) -> f64 {
    (elapsed.as_secs_f64() * 10.0).round() / 10.0
}
