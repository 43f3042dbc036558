//! Responses request wire types: field order is the order pi sends.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::provider::choice::OpenAiToolChoice;

/// The body of `POST /responses`.
#[derive(Debug, Serialize)]
pub(super) struct ResponsesRequest<'a> {
    pub(super) model: &'a str,
    pub(super) input: Vec<InputItem<'a>>,
    pub(super) stream: bool,
    /// Routes the requests of one conversation to the same prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_cache_key: Option<&'a str>,
    /// `"24h"` for long cache retention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_cache_retention: Option<&'static str>,
    /// OpenAI's explicit prompt cache mode (models with `supportsExplicitPromptCacheMode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_cache_options: Option<PromptCacheOptions>,
    /// Always `false`: nothing is kept on OpenAI's side, so reasoning travels in the input.
    pub(super) store: bool,
    /// At least 16 (the API rejects less).
    pub(super) max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Vec<FunctionTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<OpenAiToolChoice<'a, NamedFunction<'a>>>,
    /// Sent only with tools, as on Chat Completions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    /// The most tool calls (built-in ones included) the response may make.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tool_calls: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<Reasoning<'a>>,
    /// `["reasoning.encrypted_content"]` when reasoning is on: the reasoning comes back
    /// encrypted, to be replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) include: Option<[&'static str; 1]>,
}

/// `prompt_cache_options`: `{"mode":"explicit"}` (no caching) or `{"ttl":"30m"}` (long
/// retention).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum PromptCacheOptions {
    /// `{"mode": ...}`.
    Mode(&'static str),
    /// `{"ttl": ...}`.
    Ttl(&'static str),
}

/// `{"type":"function","name","description","parameters","strict"?}`.
#[derive(Debug, Serialize)]
pub(super) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters: Cow<'a, Value>,
    /// Only in a `tool_search_output`: the tool is loaded, not declared up front.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) defer_loading: Option<bool>,
    /// Present only where the model supports strict mode: the API would otherwise make
    /// every tool strict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) strict: Option<bool>,
}

/// `{"effort", "summary"?}`.
#[derive(Debug, Serialize)]
pub(super) struct Reasoning<'a> {
    pub(super) effort: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) summary: Option<&'static str>,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum InputItem<'a> {
    /// A system message: `{"role": "system" | "developer", "content"}`.
    Instructions {
        role: &'static str,
        content: Cow<'a, str>,
    },
    AdditionalTools(AdditionalTools<'a>),
    ToolSearchCall(ToolSearchCall),
    ToolSearchOutput(ToolSearchOutput<'a>),
    /// `{"role": "user", "content": [input_text | input_image]}`.
    User {
        role: &'static str,
        content: Vec<InputContent<'a>>,
    },
    /// An assistant text block.
    Message(OutputMessage<'a>),
    /// A reasoning item, replayed exactly as it arrived.
    Reasoning(Value),
    FunctionCall(FunctionCall<'a>),
    FunctionCallOutput(FunctionCallOutput<'a>),
}

/// `{"type":"additional_tools","role":"developer","tools"}`: tools declared from here on,
/// replacing same-name definitions of earlier items.
#[derive(Debug, Serialize)]
pub(super) struct AdditionalTools<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) role: &'static str,
    pub(super) tools: Vec<FunctionTool<'a>>,
}

/// `{"type":"tool_search_call","call_id","execution":"client","status":"completed",
/// "arguments":{"query","limit"}}`: a search the client ran, loading tools.
#[derive(Debug, Serialize)]
pub(super) struct ToolSearchCall {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) call_id: String,
    pub(super) execution: &'static str,
    pub(super) status: &'static str,
    pub(super) arguments: ToolSearchArguments,
}

/// The loaded names joined with a space, and how many.
#[derive(Debug, Serialize)]
pub(super) struct ToolSearchArguments {
    pub(super) query: String,
    pub(super) limit: usize,
}

/// `{"type":"tool_search_output","call_id","execution":"client","status":"completed",
/// "tools"}`: the tools the search loaded, each `defer_loading`.
#[derive(Debug, Serialize)]
pub(super) struct ToolSearchOutput<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) call_id: String,
    pub(super) execution: &'static str,
    pub(super) status: &'static str,
    pub(super) tools: Vec<FunctionTool<'a>>,
}

/// A user content part, or a part of a tool's output.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InputContent<'a> {
    InputText {
        text: Cow<'a, str>,
    },
    InputImage {
        detail: &'static str,
        /// `data:<mime>;base64,<data>`.
        image_url: String,
    },
}

/// `{"type":"message","role":"assistant","content":[output_text],"status","id","phase"?}`.
#[derive(Debug, Serialize)]
pub(super) struct OutputMessage<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) role: &'static str,
    pub(super) content: [OutputText<'a>; 1],
    pub(super) status: &'static str,
    pub(super) id: Cow<'a, str>,
    /// `commentary` or `final_answer`, as the text's signature recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) phase: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(super) struct OutputText<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) text: &'a str,
    pub(super) annotations: [(); 0],
}

/// `{"type":"function_call","id"?,"call_id","name","arguments"}`.
#[derive(Debug, Serialize)]
pub(super) struct FunctionCall<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    /// The `fc_...` item id, only where the reasoning it pairs with is replayed too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a str>,
    pub(super) call_id: &'a str,
    pub(super) name: &'a str,
    /// The compact JSON text of the arguments.
    pub(super) arguments: String,
}

/// `{"type":"function_call_output","call_id","output"}` (no error flag on this API).
#[derive(Debug, Serialize)]
pub(super) struct FunctionCallOutput<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) call_id: &'a str,
    pub(super) output: ToolOutput<'a>,
}

/// Text, or parts when the result has images the model can see.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolOutput<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<InputContent<'a>>),
}

/// `tool_choice` naming one function: `{"type":"function","name":...}`.
#[derive(Debug, Serialize)]
pub(super) struct NamedFunction<'a> {
    pub(super) r#type: &'static str,
    pub(super) name: &'a str,
}
