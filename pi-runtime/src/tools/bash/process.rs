//! Run `bash -c` in a process group of its own, stream its merged stdout and stderr, and on
//! timeout, on cancellation, or when the run is dropped, kill every process the call started
//! (see [`tree`](crate::process::tree) for how they are found, `setsid` ones included).
//!
//! Reading ends in bounded time. Background processes may keep the pipes open after the
//! shell exited, or survive a kill (see `tree` for which can), so once the shell exited or was
//! killed, the output still arriving is read until the pipes close, stay quiet for
//! [`QUIET_WINDOW`], or a hard limit passes: [`EXIT_DRAIN_LIMIT`] after a normal exit,
//! [`KILL_DRAIN_LIMIT`] after a kill. Output never extends the limit, only the quiet window.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::process::tree::{MARKER_VAR, Tree};

/// Once the shell exited (or was killed), reading stops when no output came for this long.
pub(crate) const QUIET_WINDOW: Duration = Duration::from_millis(100);
/// After a normal exit, output from background processes is read for at most this long.
pub(crate) const EXIT_DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// After a kill, output already in the pipes is read for at most this long: only a process
/// that escaped the kill can still be writing.
pub(crate) const KILL_DRAIN_LIMIT: Duration = Duration::from_millis(500);

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

/// Kills the call's processes on drop unless disarmed, so a dropped run (the caller stopped
/// polling) still cleans up.
struct Killer {
    tree: Option<Arc<Tree>>,
}

impl Killer {
    /// Kill the tree off the async threads (the walk reads `/proc`), and disarm.
    async fn kill(&mut self) {
        if let Some(tree) = self.tree.take() {
            tree.kill_off_runtime().await;
        }
    }
}

impl Drop for Killer {
    fn drop(&mut self) {
        // A drop cannot await; the walk takes a few milliseconds.
        if let Some(tree) = self.tree.take() {
            tree.kill();
        }
    }
}

/// When reading stops after the shell exited or was killed.
#[derive(Debug, Clone, Copy)]
struct Drain {
    /// The hard limit; output does not move it.
    until: Instant,
    /// The end of the current quiet window; each chunk of output restarts it.
    quiet_until: Instant,
}

impl Drain {
    fn starting(now: Instant, limit: Duration) -> Self {
        Drain {
            until: now + limit,
            quiet_until: now + QUIET_WINDOW,
        }
    }

    fn output(&mut self, now: Instant) {
        self.quiet_until = (now + QUIET_WINDOW).min(self.until);
    }

    fn end(self) -> Instant {
        self.quiet_until.min(self.until)
    }
}

/// The shell's two output pipes, read in arrival order.
struct Pipes {
    stdout: ChildStdout,
    stderr: ChildStderr,
    out_open: bool,
    err_open: bool,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
}

impl Pipes {
    fn closed(&self) -> bool {
        !self.out_open && !self.err_open
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
    let token = Tree::new_token();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env(MARKER_VAR, &token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let shell = crate::process::group_of(&child);
    let mut killer = Killer {
        tree: shell.map(|pid| Arc::new(Tree::new(pid, &token))),
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(io::Error::other("bash was started without output pipes"));
    };
    let mut pipes = Pipes {
        stdout,
        stderr,
        out_open: true,
        err_open: true,
        out_buf: vec![0_u8; 16 * 1024],
        err_buf: vec![0_u8; 16 * 1024],
    };
    let deadline = timeout.map(|t| started + t);
    let mut status: Option<(ExitStatus, Instant)> = None;
    let mut drain: Option<Drain> = None;
    let mut stopped: Option<Ending> = None;

    loop {
        if status.is_some() && pipes.closed() {
            break;
        }
        if drain.is_some_and(|d| Instant::now() >= d.end()) {
            break;
        }
        let wake_at = sink.wake_at();
        // Biased, with the timers and the exit before the reads: a pipe that is always
        // ready (a process writing without pause) must not starve them.
        tokio::select! {
            biased;
            () = signal.cancelled(), if stopped.is_none() => {
                killer.kill().await;
                stopped = Some(Ending::Aborted);
                drain = Some(Drain::starting(Instant::now(), KILL_DRAIN_LIMIT));
            }
            () = sleep_until(deadline.unwrap_or(started)), if deadline.is_some() && stopped.is_none() => {
                let shell_exit = status.map(|(s, at)| (exit_code(s), round_tenths(at - started)));
                // Also when the shell already exited: its background processes still hold
                // the pipes.
                killer.kill().await;
                stopped = Some(Ending::TimedOut { shell_exit });
                drain = Some(Drain::starting(Instant::now(), KILL_DRAIN_LIMIT));
            }
            () = sleep_until(drain.map_or(started, Drain::end)), if drain.is_some() => break,
            exited = child.wait(), if status.is_none() => {
                let now = Instant::now();
                status = Some((exited?, now));
                if let Some(tree) = &killer.tree {
                    tree.shell_reaped();
                }
                if drain.is_none() {
                    drain = Some(Drain::starting(now, EXIT_DRAIN_LIMIT));
                }
            }
            () = sleep_until(wake_at.unwrap_or(started)), if wake_at.is_some() => sink.wake()?,
            read = pipes.stdout.read(&mut pipes.out_buf), if pipes.out_open => match read? {
                0 => pipes.out_open = false,
                n => {
                    sink.data(&pipes.out_buf[..n])?;
                    if let Some(d) = &mut drain {
                        d.output(Instant::now());
                    }
                }
            },
            read = pipes.stderr.read(&mut pipes.err_buf), if pipes.err_open => match read? {
                0 => pipes.err_open = false,
                n => {
                    sink.data(&pipes.err_buf[..n])?;
                    if let Some(d) = &mut drain {
                        d.output(Instant::now());
                    }
                }
            },
        }
    }
    if let Some(ending) = stopped {
        return Ok(ending);
    }
    // A normal exit leaves background processes alone, as an interactive shell would (a
    // model may start a server with `&`). Ones still writing to the pipes get EPIPE once
    // they are dropped here.
    killer.tree = None;
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
