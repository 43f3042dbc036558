//! Chat Completions request wire types: field order is the order pi sends.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::provider::choice::OpenAiToolChoice;

/// The body of `POST /chat/completions`.
#[derive(Debug, serde::Serialize)]
pub(super) struct ChatCompletionRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<ChatMessage<'a>>,
    pub(super) stream: bool,
    /// `{"include_usage": true}` unless the server cannot stream usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamUsage>,
    /// `false`: OpenAI must not keep the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Vec<ChatTool<'a>>>,
    /// Z.ai: stream tool-call arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<OpenAiToolChoice<'a, NamedFunction<'a>>>,
    /// Sent only with tools: the API rejects it without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    /// DeepSeek and Z.ai reasoning switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking: Option<ThinkingSwitch>,
    /// Together and OpenRouter reasoning switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<ReasoningSwitch<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_effort: Option<&'a str>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct StreamUsage {
    pub(super) include_usage: bool,
}

/// `{"type":"enabled"|"disabled"}`, plus Z.ai's `clear_thinking: false` when enabled.
#[derive(Debug, serde::Serialize)]
pub(super) struct ThinkingSwitch {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) clear_thinking: Option<bool>,
}

#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub(super) enum ReasoningSwitch<'a> {
    /// Together: `{"enabled": bool}`.
    Enabled { enabled: bool },
    /// OpenRouter: `{"effort": level}`.
    Effort { effort: &'a str },
}

/// One message of `messages`.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum ChatMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    /// A system message to a reasoning model of a host that takes the role.
    Developer {
        content: Cow<'a, str>,
    },
    /// `{"role":"system","tools":[...]}`: tools declared from here on (Kimi).
    #[serde(rename = "system")]
    SystemTools {
        tools: Vec<ChatTool<'a>>,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant(AssistantMessage<'a>),
    Tool {
        content: Cow<'a, str>,
        tool_call_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
    },
}

#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub(super) enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, serde::Serialize)]
pub(super) struct ImageUrl {
    /// `data:<mime>;base64,<data>`.
    pub(super) url: String,
}

/// An assistant turn. `content` is `null` when there is no text.
#[derive(Debug, serde::Serialize)]
pub(super) struct AssistantMessage<'a> {
    pub(super) content: Option<AssistantContent<'a>>,
    /// Replayed reasoning under the field it streamed from (`reasoning_content`, ...).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<ReasoningReplay<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_calls: Option<Vec<ChatToolCall<'a>>>,
    /// DeepSeek's `reasoning_content: ""` on messages without replayed reasoning.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_fill: Option<ReasoningReplay<'a>>,
}

#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub(super) enum AssistantContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

/// One `"<field>": "<text>"` entry whose key is only known at run time.
#[derive(Debug)]
pub(super) struct ReasoningReplay<'a> {
    pub(super) field: &'a str,
    pub(super) text: String,
}

impl Serialize for ReasoningReplay<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.field, &self.text)?;
        map.end()
    }
}

/// `{"id","type":"function","function":{...}}` or a grammar tool's `custom` call.
#[derive(Debug, serde::Serialize)]
pub(super) struct ChatToolCall<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) custom: Option<CustomCall<'a>>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct FunctionCall<'a> {
    pub(super) name: &'a str,
    /// The arguments as compact JSON text.
    pub(super) arguments: String,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct CustomCall<'a> {
    pub(super) name: &'a str,
    pub(super) input: &'a str,
}

/// One entry of `tools`.
#[derive(Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(super) enum ChatTool<'a> {
    Function { function: FunctionTool<'a> },
    Custom { custom: CustomTool<'a> },
}

#[derive(Debug, serde::Serialize)]
pub(super) struct FunctionTool<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters: Cow<'a, Value>,
    /// Present only for servers that support strict mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) strict: Option<bool>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct CustomTool<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) format: GrammarFormat<'a>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct GrammarFormat<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) grammar: GrammarDefinition<'a>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct GrammarDefinition<'a> {
    pub(super) syntax: &'static str,
    pub(super) definition: &'a str,
}

/// `tool_choice` naming one function: `{"type":"function","function":{"name":...}}`.
#[derive(Debug, serde::Serialize)]
pub(super) struct NamedFunction<'a> {
    pub(super) r#type: &'static str,
    pub(super) function: FunctionName<'a>,
}

/// The function a `tool_choice` names.
#[derive(Debug, serde::Serialize)]
pub(super) struct FunctionName<'a> {
    pub(super) name: &'a str,
}
