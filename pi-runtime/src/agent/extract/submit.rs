//! The submit tool of an extraction: `T`'s schema, the business check, and one
//! accepted value per task.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::args::deserialize_arguments;
use crate::tool::{
    AgentTool, ExecutionMode, Tool, ToolContext, ToolDefinition, ToolError, ToolResult,
};

/// What a second submission reads, in the same batch or later (conformance `accept_once`).
pub(super) const ALREADY_ACCEPTED: &str = "already accepted";

/// A business check, given the value and handing it back: `Err` is the text the model reads.
pub(super) type Check<T> =
    Arc<dyn Fn(T) -> BoxFuture<'static, (T, Result<(), String>)> + Send + Sync>;

/// The current task's accepted value, shared by the tool and its extractor.
pub(super) struct Slot<T>(Mutex<Option<T>>);

impl<T> Slot<T> {
    pub(super) fn new() -> Self {
        Slot(Mutex::new(None))
    }

    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        // A check that panicked while the slot was locked left it as it was.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The accepted value, leaving the slot empty for the next task.
    pub(super) fn take(&self) -> Option<T> {
        self.lock().take()
    }

    pub(super) fn is_filled(&self) -> bool {
        self.lock().is_some()
    }
}

/// The tool the model calls to hand in its result.
pub(super) struct SubmitTool<T> {
    pub(super) definition: Tool,
    pub(super) snippet: String,
    pub(super) guideline: String,
    pub(super) accepted_text: String,
    pub(super) check: Option<Check<T>>,
    pub(super) slot: Arc<Slot<T>>,
}

impl<T: DeserializeOwned> SubmitTool<T> {
    /// Refuse a second result, deserialize, run the business check, and only then fill the
    /// slot, if it is still empty: two calls could not both be accepted
    /// even if they ran at once (the tool is sequential anyway).
    async fn accept(&self, params: Value) -> Result<ToolResult, ToolError> {
        if self.slot.is_filled() {
            return Err(ToolError::new(ALREADY_ACCEPTED));
        }
        // The arguments passed `T`'s schema already; serde may still disagree (a hook
        // replaced them), and says where in the validation format.
        let mut value: T = deserialize_arguments(&self.definition.name, params)?;
        if let Some(check) = &self.check {
            let (checked, verdict) = check(value).await;
            value = checked;
            verdict.map_err(ToolError::new)?;
        }
        let mut slot = self.slot.lock();
        if slot.is_some() {
            return Err(ToolError::new(ALREADY_ACCEPTED));
        }
        *slot = Some(value);
        Ok(ToolResult::text(self.accepted_text.as_str())
            .with_details(json!({"accepted": true}))
            .with_terminate(true))
    }
}

impl<T> fmt::Debug for SubmitTool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitTool")
            .field("definition", &self.definition)
            .field("check", &self.check.is_some())
            .field("accepted", &self.slot.is_filled())
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned + Send + 'static> AgentTool for SubmitTool<T> {
    fn definition(&self) -> &Tool {
        &self.definition
    }

    /// Two submissions in one batch run one after the other, in source order: the first
    /// valid one wins, deterministically.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }

    fn execute(
        &self,
        _call_id: String,
        params: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(self.accept(params))
    }
}

impl<T: DeserializeOwned + Send + 'static> ToolDefinition for SubmitTool<T> {
    fn prompt_snippet(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.snippet))
    }

    fn prompt_guidelines(&self) -> Vec<Cow<'_, str>> {
        vec![Cow::Borrowed(&self.guideline)]
    }
}
