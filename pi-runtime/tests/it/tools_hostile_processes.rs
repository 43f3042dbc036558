//! `bash` against commands built to outlive it (issue 17, "Processes"): children that left
//! the process group with `setsid`, double-forked daemons, children that cleared their
//! environment, background writers that hold the output pipes, and output that grows when
//! decoded. Every test looks its processes up in `/proc` by a marker of its own, and kills
//! any survivor on the way out, so a failing test leaves nothing running either.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pi_runtime::tools::bash;
use pi_runtime::{State, ToolContext, ToolError, ToolResult};
use tokio_util::sync::CancellationToken;

/// A `sleep` argument no other test (or run) uses: `1001.<pid><n><clock>`, which GNU sleep
/// reads as a number of seconds a little over 1001.
fn marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let clock = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| t.subsec_micros());
    format!("1001.{}{n:02}{clock:06}", std::process::id())
}

/// How long a call may take before the test gives up on it: a call held by a process that
/// outlived the kill would take this long.
const LIMIT: Duration = Duration::from_secs(30);

/// How long a call killed after its 1 s timeout (or abort) may take in all: the kill and the
/// drain take milliseconds, and a loaded machine seconds, far from [`LIMIT`].
const BOUND: Duration = Duration::from_secs(10);

/// How long killed processes may take to be gone: the wait ends as soon as they are.
const SURVIVOR_WAIT: Duration = Duration::from_secs(30);

/// Live (not zombie) processes whose command line holds `marker`, as an argument or inside
/// one (a `sh -c` script).
fn alive_with(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let has = cmdline
            .split(|&b| b == 0)
            .any(|arg| String::from_utf8_lossy(arg).contains(marker));
        let zombie = std::fs::read_to_string(entry.path().join("stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if has && !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// How many of the processes with `marker` are `sleep` itself, not a shell about to run it.
fn sleeping(marker: &str) -> usize {
    alive_with(marker)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.starts_with(b"sleep\0"))
        })
        .count()
}

/// Wait up to `within` for every process with `marker` to be gone; the survivors.
async fn survivors(marker: &str, within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let alive = alive_with(marker);
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Kills whatever still carries the marker when the test ends, passed or not.
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in alive_with(&self.0) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

async fn run(command: &str, timeout: Option<f64>) -> Result<ToolResult, ToolError> {
    let cwd = std::env::temp_dir();
    bash(
        State(cwd.as_path().into()),
        command.into(),
        timeout,
        ToolContext::detached("c1"),
    )
    .await
}

/// Run to the end, but fail (rather than hang the suite) after `limit`.
async fn run_within(
    command: &str,
    timeout: Option<f64>,
    limit: Duration,
) -> (Result<ToolResult, ToolError>, Duration) {
    let started = Instant::now();
    let result = tokio::time::timeout(limit, run(command, timeout))
        .await
        .unwrap_or_else(|_| panic!("bash did not return within {limit:?}: {command}"));
    (result, started.elapsed())
}

/// Seen before the fix: the timeout killed the shell's group only, and `sleep` went on in a
/// session of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_a_setsid_child() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command = format!("setsid sleep {m} & echo started; wait");
    let (result, elapsed) = run_within(&command, Some(1.0), LIMIT).await;
    assert_eq!(
        result.unwrap_err().message(),
        "started\n\n\nCommand timed out after 1 seconds"
    );
    assert!(elapsed < BOUND, "{elapsed:?}");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// A double fork orphans the daemon before the kill: no parent link leads to it, only the
/// marker it inherited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_a_double_forked_daemon() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command = format!("(setsid sleep {m} > /dev/null 2>&1 &); sleep {m}");
    let (result, elapsed) = run_within(&command, Some(1.0), LIMIT).await;
    assert_eq!(
        result.unwrap_err().message(),
        "Command timed out after 1 seconds"
    );
    assert!(elapsed < BOUND, "{elapsed:?}");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// `env -i` drops the marker; the child is found through its parent, the shell, which the
/// kill freezes before it walks the tree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_kills_a_setsid_child_that_cleared_its_environment() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command = format!("env -i setsid sleep {m} & echo started; wait");
    let signal = CancellationToken::new();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let ctx = ToolContext::new("c1", signal.clone()).on_update(move |update| {
        let _ = tx.unbounded_send(update);
    });
    let canceller = async {
        crate::tools_bash::output_shows(rx, "started\n").await;
        // `sleep` may not be running yet when `echo` is read: the abort must find it.
        while alive_with(&m).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal.cancel();
    };
    let started = Instant::now();
    let call = bash(
        State(std::env::temp_dir().as_path().into()),
        command,
        None,
        ctx,
    );
    let (result, ()) = tokio::time::timeout(LIMIT, async { tokio::join!(call, canceller) })
        .await
        .expect("bash did not return");
    assert_eq!(
        result.unwrap_err().message(),
        "started\n\n\nCommand aborted"
    );
    assert!(started.elapsed() < BOUND);
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// A caller that stops polling (a dropped run) still kills the tree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_call_kills_the_daemons_it_started() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command = format!("(setsid sleep {m} > /dev/null 2>&1 &); setsid sleep {m} & wait");
    let both_running = async {
        while sleeping(&m) < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let dropped = tokio::time::timeout(LIMIT, async {
        tokio::select! {
            _ = run(&command, None) => panic!("the command cannot end on its own"),
            // The call is dropped here, once both daemons run.
            () = both_running => {}
        }
    });
    dropped.await.expect("both daemons start");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// Seen before the fix: a `setsid` writer survived the kill and kept writing, each chunk
/// restarted the 100 ms quiet window, and the tool never returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_writer_cannot_hold_the_tool_after_a_timeout() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command =
        format!("setsid sh -c 'm={m}; while :; do echo tick; sleep 0.01; done' & sleep {m}");
    let (result, elapsed) = run_within(&command, Some(1.0), LIMIT).await;
    let message = result.unwrap_err().into_message();
    assert!(message.starts_with("tick\n"), "{message}");
    assert!(
        message.ends_with("tick\n\n\nCommand timed out after 1 seconds"),
        "{message}"
    );
    assert!(elapsed < BOUND, "{elapsed:?}");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// A writer that escapes the kill (no marker, orphaned at once) cannot hold the tool
/// either: the drain after a kill has a hard limit. Once the tool stops reading, the
/// writer's next write fails with EPIPE and ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaped_writer_cannot_hold_the_tool_after_a_timeout() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command = format!(
        "(env -i setsid sh -c 'm={m}; while :; do echo tick; sleep 0.01; done' &); sleep {m}"
    );
    let (result, elapsed) = run_within(&command, Some(1.0), LIMIT).await;
    let message = result.unwrap_err().into_message();
    assert!(
        message.ends_with("\n\nCommand timed out after 1 seconds"),
        "{message}"
    );
    assert!(elapsed < BOUND, "{elapsed:?}");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// Seen before the fix: without a timeout, a background writer that outlived the shell kept
/// the tool reading forever. Now the drain after the exit stops within a second; the writer
/// is left running (a normal exit does not kill background jobs) until its next write hits
/// the closed pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_writer_cannot_hold_the_tool_after_the_shell_exits() {
    let m = marker();
    let _reaper = Reaper(m.clone());
    let command =
        format!("setsid sh -c 'm={m}; while :; do echo tick; sleep 0.01; done' & echo done");
    let (result, elapsed) = run_within(&command, None, LIMIT).await;
    let result = result.unwrap();
    assert!(!result.is_error);
    assert!(result.text_content().contains("done\n"));
    assert_eq!(result.structured_content.unwrap()["exit_code"], 0);
    assert!(elapsed < BOUND, "{elapsed:?}");
    assert_eq!(survivors(&m, SURVIVOR_WAIT).await, Vec::<i32>::new());
}

/// Seen before the fix: a 1 MiB cap gave 1.81 MB, because the cap counted raw bytes and
/// each invalid byte decodes to three. 2 MB of 0xFF decode to 6 MB.
#[tokio::test]
async fn structured_output_is_capped_in_decoded_bytes() {
    // Allocates tens of megabytes on purpose: not while another test measures its peak.
    let _alone = crate::memory_support::measured().await;
    let (result, _) = run_within("head -c 2000000 /dev/zero | tr '\\0' '\\377'", None, LIMIT).await;
    let result = result.unwrap();
    let structured = result.structured_content.unwrap();
    let output = structured["output"].as_str().unwrap();
    let cap = 1024 * 1024;
    assert!(
        output.len() <= cap && output.len() > cap - 64,
        "{}",
        output.len()
    );
    assert_eq!(structured["truncated"], true);
    assert!(output.starts_with('\u{FFFD}') && output.ends_with('\u{FFFD}'));
    assert!(output.contains(" bytes omitted ...]"));
    let log = structured["full_output_path"].as_str().unwrap();
    assert_eq!(std::fs::metadata(log).unwrap().len(), 2_000_000);
    std::fs::remove_file(log).unwrap();
}

/// Full-output logs go to one private directory per user, which the tool prunes.
#[tokio::test]
async fn full_output_logs_live_in_a_private_directory() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (result, _) = run_within("seq 1 3000", None, LIMIT).await;
    let details = result.unwrap().details.unwrap();
    let log = Path::new(details["fullOutputPath"].as_str().unwrap()).to_owned();
    let dir = log.parent().unwrap();
    let euid = nix::unistd::geteuid();
    assert_eq!(
        dir,
        std::env::temp_dir().join(format!("pi-bash-logs-{euid}"))
    );
    let meta = std::fs::metadata(dir).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), euid.as_raw());
    std::fs::remove_file(log).unwrap();
}

/// Seen before the fix: `yes` for 15 s wrote a 1.96 GB log, since the retention cap applies
/// only to older logs. Now one log keeps the first and last halves of its cap.
#[tokio::test]
async fn a_log_keeps_the_head_and_tail_of_an_output_over_its_cap() {
    let _alone = crate::memory_support::measured().await;
    let cap = pi_runtime::tools::BashOptions::MIN_LOG_BYTES;
    let options = pi_runtime::tools::BashOptions::new(std::env::temp_dir()).with_max_log_bytes(cap);
    let total = 200_000_000_u64;
    let command = format!("yes | head -c {total}");
    let (peak, started) = (crate::memory_support::peak_rss(), Instant::now());
    let result = tokio::time::timeout(
        Duration::from_secs(120),
        bash(State(options), command, None, ToolContext::detached("c1")),
    )
    .await
    .expect("the command ends in time")
    .unwrap();
    let elapsed = started.elapsed();
    let grown = crate::memory_support::peak_rss().saturating_sub(peak);
    let structured = result.structured_content.as_ref().unwrap();
    let log = structured["full_output_path"].as_str().unwrap().to_owned();
    let size = std::fs::metadata(&log).unwrap().len();
    let omitted = total - cap;
    let line = format!(
        "\n\n[... {omitted} bytes omitted: this log keeps the first and the last {} bytes of the output ...]\n\n",
        cap / 2
    );
    assert_eq!(size, cap + line.len() as u64);
    let bytes = std::fs::read(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let half = usize::try_from(cap / 2).unwrap();
    assert!(bytes[..half].chunks(2).all(|pair| pair == b"y\n"));
    assert_eq!(&bytes[half..half + line.len()], line.as_bytes());
    assert!(
        bytes[half + line.len()..]
            .chunks(2)
            .all(|pair| pair == b"y\n")
    );
    let text = result.text_content();
    let footer = format!(
        "[Showing lines 99998001-100000000 of 100000000. Full output: {log} (only its first and last 2.0MB are kept: 186.7MB omitted)]"
    );
    assert!(text.ends_with(&footer), "{}", &text[text.len() - 300..]);
    // Measured here, unoptimized: 2.0 s and 9.5 MB.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    assert!(
        grown < 64 * 1024 * 1024,
        "peak memory grew by {grown} bytes"
    );
}
