//! The built-in `bash` tool: run a command, show the model the tail of its merged
//! output, report its exit code, stream progress.

mod log_file;
mod logs;
mod options;
mod output;
mod process;

use std::io;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

pub use self::options::BashOptions;
use self::output::{Output, Snapshot};
use self::process::{Ending, Sink};
use super::truncate::{MAX_BYTES, TruncatedBy, format_size};
use crate::message::ContentBlock;
use crate::tool;
use crate::tool::{State, ToolContext, ToolError, ToolResult};

/// Progress updates are sent at most this often.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// The longest timeout a JavaScript timer can hold, which pi keeps as the limit.
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;
/// `structuredContent.output` holds at most this much of the output.
const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;

/// Run a command with `bash -c` in its own process group: the `bash` tool. Returns the tail
/// of its merged output (or `(no output)`); a non-zero exit is a returned error result ending
/// in `Command exited with code <n>`.
///
/// Progress goes to [`ToolContext::update`]: one empty update at once, then at most one every
/// 100 ms with the current tail. A timeout, cancelling the run's signal, or dropping the call
/// kills every process the command started, also those that left its process group with
/// `setsid` (the command's environment carries a `PI_PROCESS_TREE` marker for this). After a
/// normal exit, background processes are left running, and the output they write is read
/// for at most a second more. Like pi's, the tool runs in parallel with the
/// other calls of its batch.
///
/// When the output is truncated, the full output is kept in a log under the temp directory,
/// which keeps the newest 50 logs and at most 256 MiB of them. One log holds at most
/// [`BashOptions::max_log_bytes`] (64 MiB by default): of a longer output, its first and last
/// halves of that, and the result's footer says so. `structuredContent.output`
/// holds at most 1 MiB of the output as the model sees it (after lossy UTF-8 decoding).
///
/// # Errors
/// An invalid timeout, a missing working directory, bash not starting, a timeout
/// (`… Command timed out after <t> seconds`) or an abort (`… Command aborted`).
///
/// ```
/// use pi_runtime::tools::{BashOptions, bash};
/// use pi_runtime::{State, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let cwd = State(BashOptions::new(std::env::temp_dir()));
/// let command = "echo out; echo err 1>&2; exit 3".to_owned();
/// let result = bash(cwd, command, None, ToolContext::detached("c1")).await.unwrap();
/// assert!(result.is_error);
/// assert_eq!(result.text_content(), "out\nerr\n\n\nCommand exited with code 3");
/// # });
/// ```
#[tool(
    description = "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
    snippet = "Execute bash commands (ls, grep, find, etc.)",
    strict = "prefer",
    closed = false
)]
pub async fn bash(
    State(options): State<BashOptions>,
    /// Shell command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let time_limit = timeout.map(timeout_duration).transpose()?;
    let cwd = options.cwd();
    if ctx.is_cancelled() {
        return Err(ToolError::new("Command aborted"));
    }
    if tokio::fs::metadata(cwd).await.is_err() {
        return Err(ToolError::new(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        )));
    }
    let started = Instant::now();
    ctx.update(ToolResult::default());
    let mut sink = Progress {
        output: Output::new(options.max_log_bytes()),
        ctx: &ctx,
        dirty: false,
        last_update: None,
    };
    let ending = process::run(&command, cwd, time_limit, ctx.signal(), &mut sink).await?;
    sink.output.finish()?;
    sink.flush()?;
    let mut output = sink.output;
    let snapshot = output.snapshot()?;
    let exit_code = match ending {
        Ending::Exited(code) => code,
        Ending::Aborted => {
            let text = shown_text(&output, &snapshot, "");
            return Err(ToolError::new(with_status(&text, "Command aborted")));
        }
        Ending::TimedOut { shell_exit } => {
            let text = shown_text(&output, &snapshot, "");
            let seconds = timeout.unwrap_or_default();
            let mut status = format!("Command timed out after {seconds} seconds");
            if let Some((code, after)) = shell_exit {
                status.push_str(&format!(". The shell exited with code {code} after {after} seconds, but background processes it started kept writing output until the timeout."));
            }
            return Err(ToolError::new(with_status(&text, &status)));
        }
    };
    let text = shown_text(&output, &snapshot, "(no output)");
    let (full, full_truncated) = output.full_text(STRUCTURED_OUTPUT_MAX_BYTES)?;
    let mut structured = Map::new();
    structured.insert("output".into(), full.into());
    structured.insert("truncated".into(), full_truncated.into());
    if let (true, Some(path)) = (full_truncated, &snapshot.full_output_path) {
        structured.insert("full_output_path".into(), path.display().to_string().into());
    }
    structured.insert("exit_code".into(), exit_code.into());
    let wall = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    structured.insert("wall_time_seconds".into(), wall.into());
    let (text, is_error) = if exit_code == 0 {
        (text, false)
    } else {
        (
            with_status(&text, &format!("Command exited with code {exit_code}")),
            true,
        )
    };
    Ok(ToolResult {
        content: vec![ContentBlock::text(text)],
        details: truncation_details(&snapshot),
        structured_content: Some(Value::Object(structured)),
        is_error,
        ..ToolResult::default()
    })
}

/// Seconds to a duration, with pi's limits and texts.
fn timeout_duration(seconds: f64) -> Result<Duration, ToolError> {
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(ToolError::new(
            "Invalid timeout: must be a finite number of seconds",
        ));
    }
    if seconds * 1000.0 > MAX_TIMEOUT_MS {
        return Err(ToolError::new(format!(
            "Invalid timeout: maximum is {} seconds",
            MAX_TIMEOUT_MS / 1000.0
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `<text>\n\n<status>`, or the status alone when there is no text.
fn with_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// The tail the model sees plus, when it was truncated, the footer naming the full log.
fn shown_text(output: &Output, snapshot: &Snapshot, empty: &str) -> String {
    let t = &snapshot.truncation;
    let mut text = if t.content.is_empty() {
        empty.to_owned()
    } else {
        t.content.clone()
    };
    if !t.truncated {
        return text;
    }
    let mut path = snapshot
        .full_output_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if let Some(cut) = output.log_cut() {
        path.push_str(&format!(
            " (only its first and last {} are kept: {} omitted)",
            format_size(usize::try_from(cut.head).unwrap_or(usize::MAX)),
            format_size(usize::try_from(cut.omitted).unwrap_or(usize::MAX)),
        ));
    }
    let end = t.total_lines;
    let start = end + 1 - t.output_lines.min(end);
    let footer = if t.last_line_partial {
        format!(
            "[Showing last {} of line {end} (line is {}). Full output: {path}]",
            format_size(t.output_bytes),
            format_size(output.last_line_bytes()),
        )
    } else if t.truncated_by == Some(TruncatedBy::Lines) {
        format!("[Showing lines {start}-{end} of {end}. Full output: {path}]")
    } else {
        format!(
            "[Showing lines {start}-{end} of {end} ({} limit). Full output: {path}]",
            format_size(MAX_BYTES)
        )
    };
    text.push_str("\n\n");
    text.push_str(&footer);
    text
}

fn truncation_details(snapshot: &Snapshot) -> Option<Value> {
    if !snapshot.truncation.truncated {
        return None;
    }
    let mut details = Map::new();
    details.insert(
        "truncation".into(),
        serde_json::to_value(&snapshot.truncation).unwrap_or(Value::Null),
    );
    if let Some(path) = &snapshot.full_output_path {
        details.insert("fullOutputPath".into(), path.display().to_string().into());
    }
    Some(Value::Object(details))
}

/// Collects output and sends throttled progress updates.
struct Progress<'a> {
    output: Output,
    ctx: &'a ToolContext,
    dirty: bool,
    last_update: Option<Instant>,
}

impl Progress<'_> {
    fn flush(&mut self) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let snapshot = self.output.snapshot()?;
        let mut update = ToolResult::text(snapshot.truncation.content.clone());
        update.details = truncation_details(&snapshot);
        self.ctx.update(update);
        Ok(())
    }
}

impl Sink for Progress<'_> {
    fn data(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.output.append(bytes)?;
        self.dirty = true;
        match self.last_update {
            Some(last) if last.elapsed() < UPDATE_INTERVAL => Ok(()),
            _ => self.flush(),
        }
    }

    fn wake_at(&self) -> Option<Instant> {
        match (self.dirty, self.last_update) {
            (true, Some(last)) => Some(last + UPDATE_INTERVAL),
            _ => None,
        }
    }

    fn wake(&mut self) -> io::Result<()> {
        self.flush()
    }
}
