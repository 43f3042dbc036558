//! What a durable run's steps record, and how a sub-agent asks the run above for one: the
//! words the journal (`journal.rs`), a sub-agent's journal (`nested_journal.rs`) and a
//! call's link to its driver share, with nothing of either.
#![cfg_attr(not(feature = "restate"), allow(dead_code))]

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

/// A step that cannot be recorded or replayed: the run cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct JournalError(pub(crate) String);

/// What a step recorded: its value, whether the run's signal had fired by its end, and the
/// failed nested calls (per tool) counted while it ran, which a replay counts again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Recorded {
    pub(crate) value: Value,
    pub(crate) stopped: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) nested: Vec<(String, u32)>,
}

/// A sub-agent's request for one step of the journal above.
pub(crate) struct StepRequest {
    /// The step's name in the journal above.
    pub(crate) name: String,
    /// Sent when the step runs for real: the sub-agent answers with its work's record.
    pub(crate) run: oneshot::Sender<oneshot::Sender<Recorded>>,
    /// The step's record, replayed or just made.
    pub(crate) done: oneshot::Sender<Result<Recorded, JournalError>>,
}

impl StepRequest {
    /// The same request, one level further up: its name gets `prefix` in front.
    pub(crate) fn under(mut self, prefix: &str) -> Self {
        self.name = format!("{prefix}{}", self.name);
        self
    }
}
