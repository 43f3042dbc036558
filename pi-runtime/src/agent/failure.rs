//! Why a tool call ended in an error result, and the texts the model sees for the failures
//! the loop itself decides (pi 1.6's wording). One table: each text is written once here,
//! but for the texts of a stop by the run's signal, which providers and tools write too
//! ([`aborted`](crate::aborted)).

use std::time::Duration;

/// How a call failed; `None` on a [`CallOutcome`](super::machine::CallOutcome) means it
/// succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallFailure {
    /// No tool of that name is registered.
    NotFound,
    /// The arguments did not parse or validate (or the response was cut off, so they may be
    /// truncated).
    Validation,
    /// `before_tool_call` blocked the call.
    Blocked,
    /// A person denied the call, or it needed approval where none can be asked for.
    Denied,
    /// The tool or a hook panicked.
    Panic,
    /// The tool, or a hook, returned an error.
    ToolError,
    /// The run was aborted.
    Cancelled,
    /// The run's time limit, or the tool's own `timeout`, ended the call.
    Timeout,
    /// The tool asked the model to try again ([`ToolError::retry`](crate::ToolError::retry)).
    Retry,
}

impl CallFailure {
    /// The OpenTelemetry `error.type` of a call that failed this way.
    pub fn error_type(self) -> &'static str {
        match self {
            CallFailure::NotFound => "not_found",
            CallFailure::Validation => "validation",
            CallFailure::Blocked => "blocked",
            CallFailure::Denied => "denied",
            CallFailure::Panic => "panic",
            CallFailure::ToolError => "tool_error",
            CallFailure::Cancelled => "cancelled",
            CallFailure::Timeout => "timeout",
            CallFailure::Retry => "retry",
        }
    }

    /// Whether the failure counts against the tool's retry budget: the model can correct
    /// it by calling again (invalid arguments, an explicit retry).
    pub fn counts_as_retry(self) -> bool {
        matches!(self, CallFailure::Validation | CallFailure::Retry)
    }
}

/// The texts of a stop by the run's signal, at their home below the loop.
pub(crate) use crate::aborted::{OPERATION_ABORTED, REQUEST_ABORTED};

/// A call that `before_tool_call` blocked without a reason.
pub(crate) const BLOCKED: &str = "Tool execution was blocked";

/// A call a person denied; the model reads their reason.
pub(crate) fn denied(reason: &str) -> String {
    if reason.is_empty() {
        "Tool call denied".to_owned()
    } else {
        format!("Tool call denied: {reason}")
    }
}

/// A call that needs approval where no run can pause for it (a call from outside the loop).
pub(crate) fn approval_unavailable(tool: &str, reason: &str) -> String {
    format!(
        "Tool \"{tool}\" needs approval ({reason}), and this call cannot wait for one: it was not executed"
    )
}

/// A call of a tool that is not registered.
pub(crate) fn not_found(tool: &str) -> String {
    format!("Tool {tool} not found")
}

/// A call whose final arguments failed to parse; `error` is the call's `arguments_error`.
pub(crate) fn invalid_arguments(tool: &str, error: &str) -> String {
    format!("Invalid arguments for tool \"{tool}\": {error}")
}

/// A call in a response cut off by the output token limit: it never runs, because its
/// arguments may be cut off too and still validate.
pub(crate) fn truncated(tool: &str) -> String {
    format!(
        "Tool call \"{tool}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}

/// A running tool that ignored the run's cancellation for `grace` and was abandoned.
pub(crate) fn abandoned(tool: &str, timed_out: bool, grace: Duration) -> String {
    let why = if timed_out {
        "the run reached its time limit"
    } else {
        "the run was aborted"
    };
    format!(
        "Tool \"{tool}\" was stopped: {why}, and it did not finish within {}s of being told to stop",
        grace.as_secs_f64()
    )
}

/// A call that ran past its tool's own `timeout`, was told to stop, and ended within the
/// grace period: this notice comes first in its result, followed by what the tool returned,
/// since its work may be done.
pub(crate) fn timed_out_then_ended(tool: &str, timeout: Duration) -> String {
    format!(
        "Tool \"{tool}\" timed out after {} and was told to stop; it ended afterwards, so its work may be done. It returned:",
        format_duration(timeout)
    )
}

/// A call that ran past its tool's own `timeout`, was told to stop, and did not end within
/// `grace`: the call was abandoned, but the tool may still be running.
pub(crate) fn timed_out_abandoned(tool: &str, timeout: Duration, grace: Duration) -> String {
    format!(
        "Tool \"{tool}\" timed out after {}, and it did not finish within {} of being told to stop; it may still be running, so its work may yet be done",
        format_duration(timeout),
        format_duration(grace)
    )
}

/// `250ms`, `1s`, `1.5s`, `90s`: how a timeout reads in an error.
pub(crate) fn format_duration(duration: Duration) -> String {
    if duration.subsec_millis() != 0 && duration.as_secs() == 0 {
        format!("{}ms", duration.as_millis())
    } else {
        format!("{}s", duration.as_secs_f64())
    }
}
