//! What every wire API's stream parser implements, and the writer it drives.

use crate::message::{AssistantMessage, StopReason};
use crate::provider::Model;
pub(crate) use crate::stream::MessageWriter as Output;

/// Turns one API's SSE events into [`Output`] steps. Parsers are synchronous: the transport
/// feeds them whatever arrived, so the same code replays a recorded body.
pub(crate) trait StreamParser: Send + 'static {
    /// One SSE event: its `event:` name (`message` when the server gave none) and its data.
    /// `Err` ends the response with `error` at once, keeping the partial content.
    fn event(&mut self, out: &mut Output, name: &str, data: &str) -> Result<(), String>;

    /// The body ended: close what the API leaves open and say why the response ended.
    /// `Err` is the `errorMessage` of an `error` ending.
    fn end(&mut self, out: &mut Output) -> Result<StopReason, String>;
}

/// A writer of an empty, pending message of `model`.
pub(crate) fn output_for(model: &Model) -> Output {
    Output::new(AssistantMessage::empty(
        model.api.as_str(),
        &model.provider,
        &model.id,
    ))
}
