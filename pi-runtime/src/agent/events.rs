//! Agent events: what a run reports, in the order it happens.

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use super::approval::PendingCall;
use crate::message::{AssistantMessage, Message, ToolResultMessage};
use crate::stream::{AssistantMessageEvent, LiveMessage};
use crate::tool::ToolResult;

/// One event of an agent run.
///
/// Serializes with pi's wire names: `{"type":"tool_execution_end","toolCallId":...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run began.
    AgentStart,
    /// A turn began: one model response plus the results of its batch.
    TurnStart,
    /// A message joins the transcript (for the assistant: the response began).
    MessageStart {
        /// The message (for the assistant: the partial at `start`).
        message: Message,
    },
    /// The streaming assistant message changed.
    MessageUpdate {
        /// The message being streamed, as it stands: it already shows this event. Read it in
        /// place ([`LiveMessage::read`]) to render text or partial arguments; take a
        /// [`snapshot`](LiveMessage::snapshot) to keep it.
        #[serde(serialize_with = "as_live_assistant_message")]
        message: LiveMessage,
        /// The raw stream event.
        #[serde(serialize_with = "as_stream_event")]
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is final.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// The run paused before a batch with calls that need approval; nothing in the batch
    /// executed (see [`approval`](super::approval)). No `agent_end` follows until a resume
    /// finishes the run.
    ApprovalRequested {
        /// The calls waiting for a decision, in source order.
        pending: Vec<PendingCall>,
    },
    /// A tool call is about to be prepared.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool the model called.
        tool_name: String,
        /// The raw arguments, as the model sent them.
        args: Value,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool the model called.
        tool_name: String,
        /// The raw arguments, as the model sent them.
        args: Value,
        /// The progress the tool reported.
        #[serde(serialize_with = "as_tool_result")]
        partial_result: ToolResult,
    },
    /// A tool call is finished (after `after_tool_call`).
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool the model called.
        tool_name: String,
        /// The result the model will see.
        #[serde(serialize_with = "as_tool_result")]
        result: ToolResult,
        /// The call failed.
        is_error: bool,
        /// How long `execute` took; absent when it never ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// A turn is finished.
    TurnEnd {
        /// The turn's assistant message (the one the transcript holds).
        #[serde(serialize_with = "as_shared_assistant_message")]
        message: Arc<AssistantMessage>,
        /// The batch's result messages, in source order.
        tool_results: Vec<Arc<ToolResultMessage>>,
    },
    /// The run is finished.
    AgentEnd {
        /// The messages the run added (a prompt run includes the prompts).
        messages: Vec<Message>,
    },
    /// An event of a sub-agent's run (an agent called as a tool, see
    /// [`AgentDefinition::as_tool`](super::AgentDefinition::as_tool)), delivered while the
    /// call that runs it is running, in the order the sub-agent emitted its events.
    Nested {
        /// The ids of the calls from this run down to the sub-agent that emitted `event`,
        /// joined with `/`: `c1` for the sub-agent that this run's call `c1` runs, `c1/c4`
        /// for one that call `c4` of that sub-agent runs.
        path: String,
        /// The name of the tool that runs the sub-agent that emitted `event`.
        agent: String,
        /// The sub-agent's own event, never itself `Nested`. A `message_update`'s message is
        /// the sub-agent's live message, which the run above reads a little later than the
        /// sub-agent wrote it: it shows at least this event (its `delta` is exact). Freezing
        /// a copy per delta would make a long stream cost its length squared.
        event: Box<AgentEvent>,
    },
}

impl AgentEvent {
    /// The event's wire name (`tool_execution_end`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::ApprovalRequested { .. } => "approval_requested",
            AgentEvent::Nested { .. } => "nested",
        }
    }

    /// This event as the call `path` (of the sub-agent tool `agent`) reports it to the run
    /// above: a sub-agent's own event is wrapped, and an event it reports from further down
    /// gets `path` in front of its own.
    pub(crate) fn nested_under(self, path: &str, agent: &str) -> AgentEvent {
        match self {
            AgentEvent::Nested {
                path: below,
                agent,
                event,
            } => AgentEvent::Nested {
                path: format!("{path}/{below}"),
                agent,
                event,
            },
            event => AgentEvent::Nested {
                path: path.to_owned(),
                agent: agent.to_owned(),
                event: Box::new(event),
            },
        }
    }
}

/// An assistant message with its `role`, as pi's events carry it.
fn as_assistant_message<S: Serializer>(
    message: &AssistantMessage,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a> {
        role: &'static str,
        #[serde(flatten)]
        message: &'a AssistantMessage,
    }
    Tagged {
        role: "assistant",
        message,
    }
    .serialize(serializer)
}

fn as_shared_assistant_message<S: Serializer>(
    message: &Arc<AssistantMessage>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    as_assistant_message(message, serializer)
}

fn as_live_assistant_message<S: Serializer>(
    message: &LiveMessage,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    message.read(|message| as_assistant_message(message, serializer))
}

/// pi's `AgentToolResult`: `{content, details?, structuredContent?, usage?, isError?, terminate?}`.
fn as_tool_result<S: Serializer>(result: &ToolResult, serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("content", &result.content)?;
    if let Some(details) = &result.details {
        map.serialize_entry("details", details)?;
    }
    if let Some(structured) = &result.structured_content {
        map.serialize_entry("structuredContent", structured)?;
    }
    if let Some(usage) = &result.usage {
        map.serialize_entry("usage", usage)?;
    }
    if result.is_error {
        map.serialize_entry("isError", &true)?;
    }
    if result.terminate {
        map.serialize_entry("terminate", &true)?;
    }
    map.end()
}

/// The stream event without its partial message (which `message` already carries):
/// `{"type", "contentIndex"?, "delta"?}`.
fn as_stream_event<S: Serializer>(
    event: &AssistantMessageEvent,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("type", event.kind())?;
    if let Some(index) = event.content_index() {
        map.serialize_entry("contentIndex", &index)?;
    }
    match event {
        AssistantMessageEvent::TextDelta { delta, .. }
        | AssistantMessageEvent::ThinkingDelta { delta, .. }
        | AssistantMessageEvent::ToolCallDelta { delta, .. } => {
            map.serialize_entry("delta", delta)?;
        }
        AssistantMessageEvent::TextEnd { content, .. }
        | AssistantMessageEvent::ThinkingEnd { content, .. } => {
            map.serialize_entry("content", content)?;
        }
        AssistantMessageEvent::ToolCallStart { tool_call, .. }
        | AssistantMessageEvent::ToolCallEnd { tool_call, .. } => {
            map.serialize_entry("toolCall", tool_call)?;
        }
        AssistantMessageEvent::Done { reason, .. }
        | AssistantMessageEvent::Error { reason, .. } => {
            map.serialize_entry("reason", reason)?;
        }
        _ => {}
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_names_are_pis() {
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "add".into(),
            result: ToolResult::error("boom"),
            is_error: true,
            duration_ms: None,
        };
        assert_eq!(
            serde_json::to_value(&end).unwrap(),
            json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "add",
                   "result": {"content": [{"type": "text", "text": "boom"}], "details": {}, "isError": true},
                   "isError": true})
        );
        assert_eq!(
            serde_json::to_value(AgentEvent::AgentStart).unwrap(),
            json!({"type": "agent_start"})
        );
    }

    #[test]
    fn turn_end_carries_the_assistant_role() {
        let mut message = AssistantMessage::empty("faux", "faux", "faux-1");
        message.stop_reason = crate::StopReason::Stop;
        let value = serde_json::to_value(AgentEvent::TurnEnd {
            message: Arc::new(message),
            tool_results: Vec::new(),
        })
        .unwrap();
        assert_eq!(value["message"]["role"], "assistant");
        assert_eq!(value["message"]["stopReason"], "stop");
        assert_eq!(value["toolResults"], json!([]));
    }
}
