//! `ToolContext`: what a running tool gets besides its arguments: its call id, the run's
//! cancellation signal and a progress channel (SPEC §1.2, §5.9, §5.12).

// futures' channel rather than tokio's: it allocates per update, where tokio's allocates a
// block of 32 results up front, for every call, though most calls send no update at all.
use futures::channel::mpsc;
use tokio_util::sync::CancellationToken;

use super::ToolResult;

/// The context of one tool execution.
///
/// Cloning is cheap. A clone that outlives the call is harmless: updates sent after the
/// call settled are dropped silently (SPEC §5.12).
#[derive(Debug, Clone)]
pub struct ToolContext {
    call_id: String,
    signal: CancellationToken,
    updates: Option<mpsc::UnboundedSender<ToolResult>>,
}

impl ToolContext {
    /// A context whose updates go to `updates`.
    pub fn new(
        call_id: impl Into<String>,
        signal: CancellationToken,
        updates: Option<mpsc::UnboundedSender<ToolResult>>,
    ) -> Self {
        ToolContext {
            call_id: call_id.into(),
            signal,
            updates,
        }
    }

    /// A context for calling a tool directly: never cancelled, updates dropped.
    pub fn detached(call_id: impl Into<String>) -> Self {
        ToolContext::new(call_id, CancellationToken::new(), None)
    }

    /// The id of the call being executed.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The run's cancellation signal. A tool must watch it itself: the loop never
    /// interrupts a running tool (SPEC §5.9).
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }

    /// True once the run was aborted.
    pub fn is_cancelled(&self) -> bool {
        self.signal.is_cancelled()
    }

    /// Stream a progress update (`tool_execution_update`). Never fails; an update sent
    /// after the call finished is ignored.
    pub fn update(&self, partial: ToolResult) {
        if let Some(tx) = &self.updates {
            // The receiver is gone once the call settled; late updates are no-ops by design.
            let _ = tx.unbounded_send(partial);
        }
    }
}
