//! Gemini API request wire types: the REST body of `generateContent`.

use std::borrow::Cow;

use serde_json::Value;

/// The REST body POSTed to `models/<id>:streamGenerateContent` (the model is in the URL).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerateContentRequest<'a> {
    pub(super) contents: &'a [Content<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a [ToolDeclarations<'a>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<&'a ToolConfig>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    pub(super) generation_config: &'a GenerationConfig,
}

/// The system prompt as a content (the REST API has no plain-string form).
#[derive(Debug, serde::Serialize)]
pub(super) struct SystemInstruction<'a> {
    pub(super) parts: [Part<'a>; 1],
    pub(super) role: &'static str,
}

#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_config: Option<ThinkingConfig>,
}

impl GenerationConfig {
    fn is_empty(&self) -> bool {
        self.temperature.is_none()
            && self.max_output_tokens.is_none()
            && self.thinking_config.is_none()
    }
}

/// `{"includeThoughts"?, "thinkingLevel"?, "thinkingBudget"?}`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) include_thoughts: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_level: Option<&'static str>,
    /// `-1` lets the model decide; `0` turns thinking off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_budget: Option<i64>,
}

/// One turn: `user` or `model`.
#[derive(Debug, serde::Serialize)]
pub(super) struct Content<'a> {
    pub(super) parts: Vec<Part<'a>>,
    pub(super) role: &'static str,
}

/// One part; exactly one of the data fields is set.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) inline_data: Option<InlineData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought_signature: Option<&'a str>,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InlineData<'a> {
    pub(super) mime_type: &'a str,
    pub(super) data: &'a str,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct FunctionCall<'a> {
    pub(super) args: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a str>,
    pub(super) name: &'a str,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct FunctionResponse<'a> {
    pub(super) name: &'a str,
    pub(super) response: FunctionOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parts: Option<Vec<Part<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a str>,
}

/// `{"output": text}`, or `{"error": text}` for an error result.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FunctionOutput {
    Output(String),
    Error(String),
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolDeclarations<'a> {
    pub(super) function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters_json_schema: Value,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolConfig {
    pub(super) function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionCallingConfig {
    /// `AUTO`, `ANY`, `NONE` or `VALIDATED`.
    pub(super) mode: &'static str,
    /// With `ANY`: the functions the model may call (the one a named tool choice names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) allowed_function_names: Option<[String; 1]>,
}
