//! Later system messages on the Messages API: `{"role":"system"}` messages with their text
//! and, with native tool changes, `tool_addition` / `tool_removal` blocks.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::convert_tools;
use super::wire::{Block, InlineTool, MessageContent, MessageParam, ToolParam, ToolReference};
use crate::message::SystemMessage;
use crate::provider::compat::AnthropicCompat;
use crate::transcript;

/// The beta under which system messages may carry tool changes.
pub(super) const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";

/// Whether tool changes travel as blocks: both flags, and a tool in the leading system
/// message. Anthropic rejects a tool list where every tool is deferred, so without an
/// initial tool the placeholder has nothing to stand next to and the current tools are sent.
pub(super) fn native_tool_changes(
    compat: &AnthropicCompat,
    leading: Option<&SystemMessage>,
) -> bool {
    compat.supports_mid_convo_system_messages
        && compat.supports_mid_convo_tool_changes
        && leading.is_some_and(|leading| !leading.added().is_empty())
}

/// The deferred tool sent after the leading tools whenever tool changes are native.
/// Anthropic adds hidden prompt scaffolding for mid-conversation tool changes; declaring
/// this tool from the first request keeps that scaffolding in the cached prefix, so the
/// first change does not invalidate the cache (pi measured a full miss without it). It is
/// never activated and the model cannot see it.
pub(super) fn deferred_placeholder() -> ToolParam<'static> {
    let mut input_schema = Map::new();
    input_schema.insert("type".into(), Value::from("object"));
    input_schema.insert("properties".into(), Value::Object(Map::new()));
    input_schema.insert("required".into(), Value::Array(Vec::new()));
    ToolParam {
        name: "__pi_deferred_placeholder__",
        description: "Reserved placeholder. Never available. Never call this.",
        eager_input_streaming: None,
        strict: None,
        input_schema,
        cache_control: None,
        defer_loading: Some(true),
    }
}

/// A later system message as a message, `None` when it has nothing to send: its rendered
/// text, then with native changes (`native` holds the flags tools convert with) a removal
/// per tool it does not declare again, then an addition per tool it declares.
pub(super) fn convert<'a>(
    message: &'a SystemMessage,
    native: Option<&AnthropicCompat>,
) -> Result<Option<MessageParam<'a>>, String> {
    let mut blocks = Vec::new();
    let text = transcript::render_update(message);
    if !text.is_empty() {
        blocks.push(Block::text(text));
    }
    if let Some(compat) = native {
        // A new definition under the same name replaces the old one: no removal needed.
        let redefined: HashSet<&str> = message.added().iter().map(|t| t.name.as_str()).collect();
        blocks.extend(
            message
                .removed()
                .iter()
                .filter(|tool| !redefined.contains(tool.name.as_str()))
                .map(|tool| Block::ToolRemoval {
                    tool: ToolReference {
                        kind: "tool_reference",
                        name: &tool.name,
                    },
                    cache_control: None,
                }),
        );
        for definition in convert_tools(message.added(), compat, None)? {
            blocks.push(Block::ToolAddition {
                tool: InlineTool {
                    kind: "tool_definition",
                    definition,
                },
                cache_control: None,
            });
        }
    }
    Ok((!blocks.is_empty()).then_some(MessageParam {
        role: "system",
        content: MessageContent::Blocks(blocks),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_is_pi_s_verbatim() {
        let placeholder = serde_json::to_string(&deferred_placeholder()).expect("serialize");
        assert_eq!(
            placeholder,
            r#"{"name":"__pi_deferred_placeholder__","description":"Reserved placeholder. Never available. Never call this.","input_schema":{"type":"object","properties":{},"required":[]},"defer_loading":true}"#
        );
    }

    #[test]
    fn a_message_with_nothing_to_say_is_not_sent() {
        let message = SystemMessage::text("");
        assert!(matches!(convert(&message, None), Ok(None)));
    }
}
