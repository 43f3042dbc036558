//! Messages API request wire types: field order is the order pi sends.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

/// The body of `POST /v1/messages` (beta features travel in the `anthropic-beta` header).
#[derive(Debug, Serialize)]
pub(super) struct MessagesRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<MessageParam<'a>>,
    pub(super) max_tokens: u32,
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<Vec<Block<'a>>>,
    /// Not sent with extended thinking, which rejects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Vec<ToolParam<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking: Option<ThinkingParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<ToolChoiceParam<'a>>,
}

/// `{"type":"ephemeral"}`, with `"ttl":"1h"` for long retention.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) ttl: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(super) struct MessageParam<'a> {
    pub(super) role: &'static str,
    pub(super) content: MessageContent<'a>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum MessageContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

/// One content block.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: MessageContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool declared from here on, in a system message (native tool changes).
    ToolAddition {
        tool: InlineTool<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool withdrawn from here on, in a system message (native tool changes).
    ToolRemoval {
        tool: ToolReference<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl<'a> Block<'a> {
    pub(super) fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Block::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// Mark a cache breakpoint; `false` for blocks that cannot carry one.
    pub(super) fn set_cache_control(&mut self, control: CacheControl) -> bool {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. }
            | Block::ToolAddition { cache_control, .. }
            | Block::ToolRemoval { cache_control, .. } => {
                *cache_control = Some(control);
                true
            }
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::ToolUse { .. } => {
                false
            }
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct ImageSource<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) media_type: &'a str,
    pub(super) data: &'a str,
}

/// `{"type":"tool_definition","definition":<tool as in tools, without cache_control>}`.
#[derive(Debug, Serialize)]
pub(super) struct InlineTool<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) definition: ToolParam<'a>,
}

/// `{"type":"tool_reference","name"}`.
#[derive(Debug, Serialize)]
pub(super) struct ToolReference<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) name: &'a str,
}

/// One entry of `tools`.
#[derive(Debug, Serialize)]
pub(super) struct ToolParam<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) eager_input_streaming: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) strict: Option<bool>,
    pub(super) input_schema: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cache_control: Option<CacheControl>,
    /// Only on the placeholder of native tool changes: declared, never loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) defer_loading: Option<bool>,
}

/// `{"type":"disabled"}` or budget-based `{"type":"enabled","budget_tokens","display"}`.
#[derive(Debug, Serialize)]
pub(super) struct ThinkingParam {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) budget_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) display: Option<&'static str>,
}

/// `tool_choice`: a kind, one tool, or the caller's own object.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolChoiceParam<'a> {
    /// `{"type":"auto"}`, `{"type":"none"}`, `{"type":"any"}`, or the caller's string.
    Kind {
        r#type: &'a str,
        /// `true`: at most one tool call in the response (not sent with `none`).
        #[serde(skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    /// `{"type":"tool","name":...}`.
    Tool {
        r#type: &'static str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    /// Forwarded verbatim.
    Raw(&'a Value),
}
