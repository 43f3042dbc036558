//! The submission as it streams: the submit call's partial arguments, read from the live
//! message an [`AgentEvent::MessageUpdate`] carries.

use serde_json::Value;

use crate::agent::AgentEvent;
use crate::message::ContentBlock;
use crate::stream::AssistantMessageEvent;

/// Run `read` on the partial arguments of a call to `tool`, if `event` is an argument
/// delta of such a call. The arguments are the lenient partial parse of the text so far
/// read in place: `read` runs while the response's writer waits.
pub(super) fn read_partial<R>(
    event: &AgentEvent,
    tool: &str,
    read: impl FnOnce(&Value) -> R,
) -> Option<R> {
    let AgentEvent::MessageUpdate {
        message,
        assistant_message_event: AssistantMessageEvent::ToolCallDelta { content_index, .. },
    } = event
    else {
        return None;
    };
    message.read(|message| match message.content.get(*content_index) {
        Some(ContentBlock::ToolCall(call)) if call.name == tool => Some(read(&call.arguments)),
        _ => None,
    })
}
