//! Gemini API request wire types: the REST body of `generateContent`, and the parameter
//! object of `@google/genai` that pi builds before the SDK turns it into that body.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
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

/// `@google/genai`'s `GenerateContentParameters` as pi builds it.
#[derive(Debug, serde::Serialize)]
pub(super) struct SdkParameters<'a> {
    pub(super) model: &'a str,
    #[serde(serialize_with = "sdk_contents")]
    pub(super) contents: &'a [Content<'a>],
    pub(super) config: SdkConfig<'a>,
}

/// pi writes `role` before `parts`, and parts in its own key order (the SDK reorders both
/// for the REST body).
fn sdk_contents<S: Serializer>(
    contents: &&[Content<'_>],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(contents.iter().map(SdkContent))
}

struct SdkContent<'a>(&'a Content<'a>);

impl Serialize for SdkContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", self.0.role)?;
        map.serialize_entry("parts", &SdkParts(&self.0.parts))?;
        map.end()
    }
}

struct SdkParts<'a>(&'a [Part<'a>]);

impl Serialize for SdkParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(SdkPart))
    }
}

struct SdkPart<'a>(&'a Part<'a>);

impl Serialize for SdkPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let part = self.0;
        let mut map = serializer.serialize_map(None)?;
        if let Some(call) = &part.function_call {
            map.serialize_entry("functionCall", &SdkFunctionCall(call))?;
        }
        if let Some(response) = &part.function_response {
            map.serialize_entry("functionResponse", &SdkFunctionResponse(response))?;
        }
        if let Some(data) = &part.inline_data {
            map.serialize_entry("inlineData", data)?;
        }
        if let Some(thought) = part.thought {
            map.serialize_entry("thought", &thought)?;
        }
        if let Some(text) = &part.text {
            map.serialize_entry("text", text)?;
        }
        if let Some(signature) = part.thought_signature {
            map.serialize_entry("thoughtSignature", signature)?;
        }
        map.end()
    }
}

struct SdkFunctionCall<'a>(&'a FunctionCall<'a>);

impl Serialize for SdkFunctionCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let call = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", call.name)?;
        map.serialize_entry("args", call.args)?;
        if let Some(id) = call.id {
            map.serialize_entry("id", id)?;
        }
        map.end()
    }
}

struct SdkFunctionResponse<'a>(&'a FunctionResponse<'a>);

impl Serialize for SdkFunctionResponse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let response = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", response.name)?;
        map.serialize_entry("response", &response.response)?;
        if let Some(parts) = &response.parts {
            map.serialize_entry("parts", &SdkParts(parts))?;
        }
        if let Some(id) = response.id {
            map.serialize_entry("id", id)?;
        }
        map.end()
    }
}

/// The SDK's flat `config`: generation settings, system prompt and tools side by side.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SdkConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a [ToolDeclarations<'a>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<&'a ToolConfig>,
    pub(super) automatic_continuation: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_config: Option<&'a ThinkingConfig>,
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
pub(super) struct FunctionCallingConfig {
    /// `AUTO`, `ANY`, `NONE` or `VALIDATED`.
    pub(super) mode: &'static str,
}
