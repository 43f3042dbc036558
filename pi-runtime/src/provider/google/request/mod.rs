//! Request conversion (context -> the JSON body POSTed) for `google-generative-ai`.

mod schema;
mod wire;

use std::borrow::Cow;

use serde_json::Value;

use self::wire::{
    Content, FunctionCall, FunctionCallingConfig, FunctionDeclaration, FunctionOutput,
    FunctionResponse, GenerateContentRequest, GenerationConfig, InlineData, Part,
    SystemInstruction, ThinkingConfig, ToolConfig, ToolDeclarations,
};
use crate::declaration::Tool;
use crate::message::{
    ContentBlock, ImageContent, Message, SystemMessage, ToolResultMessage, UserContent,
};
use crate::provider::Model;
use crate::provider::compat::gemini_major_version;
use crate::provider::thinking::{self, Mapped};
use crate::provider::{ids, strict, tokens, transform};
use crate::stream::{Context, StreamOptions, ThinkingLevel, ToolChoice};
use crate::transcript;

/// Everything of a request except its serialized form, which differs between the REST body
/// and the SDK's parameters.
struct Request<'a> {
    contents: Vec<Content<'a>>,
    system_instruction: Option<String>,
    tools: Option<Vec<ToolDeclarations<'a>>>,
    tool_config: Option<ToolConfig>,
    generation: GenerationConfig,
}

/// The REST body `@google/genai` POSTs: `contents`, `systemInstruction`,
/// `tools`, `toolConfig`, `generationConfig`; the model is part of the URL.
pub(crate) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    // Gemini has no system message but the leading one: every later one is folded into it.
    let transcript = transcript::resolve(context, false);
    let leading = transcript::leading(&transcript);
    let conversation = &transcript[usize::from(leading.is_some())..];
    let transformed = transform_messages(model, conversation);
    let request = convert(model, context, leading, &transformed, options)?;
    let body = GenerateContentRequest {
        contents: &request.contents,
        system_instruction: request
            .system_instruction
            .as_deref()
            .map(|text| SystemInstruction {
                parts: [Part {
                    text: Some(Cow::Borrowed(text)),
                    ..Part::default()
                }],
                role: "user",
            }),
        tools: request.tools.as_deref(),
        tool_config: request.tool_config.as_ref(),
        generation_config: &request.generation,
    };
    serde_json::to_value(&body).map_err(|error| error.to_string())
}

fn transform_messages<'a>(model: &Model, messages: &'a [Message]) -> Vec<Cow<'a, Message>> {
    let keep_ids = requires_tool_call_id(&model.id);
    transform::transform_messages(messages, model, |id, _| {
        if keep_ids {
            ids::sanitize_to(id, 64)
        } else {
            id.to_owned()
        }
    })
}

/// `leading` is the folded system message: its text is the instruction, its tools the
/// current ones.
fn convert<'a>(
    model: &'a Model,
    context: &Context,
    leading: Option<&'a SystemMessage>,
    transformed: &'a [Cow<'_, Message>],
    options: &StreamOptions,
) -> Result<Request<'a>, String> {
    let contents = convert_messages(model, transformed);
    let supports_strict = gemini_major_version(&model.id).is_some_and(|v| v >= 3);
    let tools = leading.map_or(&[][..], SystemMessage::added);
    let (tools, tool_config) = if tools.is_empty() {
        (None, None)
    } else {
        let (declarations, any_strict) = convert_tools(tools, supports_strict)?;
        let mode = function_calling_mode(options.tool_choice.as_ref(), any_strict);
        let config = mode.map(|mode| ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names: allowed_function(options.tool_choice.as_ref(), mode),
            },
        });
        (Some(declarations), config)
    };
    let thinking_config = if model.reasoning {
        Some(thinking_config(model, options)?)
    } else {
        None
    };
    Ok(Request {
        contents,
        system_instruction: leading
            .map(transcript::render_leading)
            .filter(|text| !text.is_empty()),
        tools,
        tool_config,
        generation: GenerationConfig {
            temperature: options.temperature,
            max_output_tokens: Some(tokens::max_tokens(model, context, options)).filter(|&n| n > 0),
            thinking_config,
        },
    })
}

/// The one function a named tool choice allows, sent with `ANY` only (the API ignores the
/// list under the other modes).
fn allowed_function(choice: Option<&ToolChoice>, mode: &str) -> Option<[String; 1]> {
    match choice {
        Some(ToolChoice::Tool(name)) if mode == "ANY" => Some([name.clone()]),
        _ => None,
    }
}

/// `none`/`any` always win; a strict tool needs `VALIDATED`; otherwise the choice, if any.
fn function_calling_mode(choice: Option<&ToolChoice>, any_strict: bool) -> Option<&'static str> {
    let choice = match choice {
        Some(ToolChoice::Raw(json)) => match json.as_str() {
            Some("none") => Some(ToolChoice::None),
            Some("any") => Some(ToolChoice::Required),
            // Any other choice, an object included, means AUTO.
            _ => (!is_falsy(json)).then_some(ToolChoice::Auto),
        },
        other => other.cloned(),
    };
    match choice {
        Some(ToolChoice::None) => Some("NONE"),
        // A named tool is ANY limited by `allowedFunctionNames` (see `allowed_function`).
        Some(ToolChoice::Required | ToolChoice::Tool(_)) => Some("ANY"),
        _ if any_strict => Some("VALIDATED"),
        Some(_) => Some("AUTO"),
        None => None,
    }
}

fn is_falsy(value: &Value) -> bool {
    matches!(value, Value::Null | Value::Bool(false)) || value.as_str() == Some("")
}

fn convert_tools(
    tools: &[Tool],
    supports_strict: bool,
) -> Result<(Vec<ToolDeclarations<'_>>, bool), String> {
    let mut any_strict = false;
    let declarations = tools
        .iter()
        .map(|tool| {
            let strict_schema = strict::resolve_json_schema(tool, supports_strict, None)?;
            any_strict |= strict_schema.is_some();
            let parameters = strict_schema.as_ref().unwrap_or(&tool.parameters);
            Ok(FunctionDeclaration {
                name: &tool.name,
                description: &tool.description,
                parameters_json_schema: schema::const_to_enum(parameters),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((
        vec![ToolDeclarations {
            function_declarations: declarations,
        }],
        any_strict,
    ))
}

/// Models behind Google APIs that need call ids on calls and responses.
fn requires_tool_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-")
        || model_id.starts_with("gpt-oss-")
        || gemini_major_version(model_id).is_some_and(|v| v >= 3)
}

/// Gemini before 3 cannot take images inside a function response.
fn supports_multimodal_function_response(model_id: &str) -> bool {
    gemini_major_version(model_id).is_none_or(|v| v >= 3)
}

/// Models that take a thinking level instead of a token budget.
fn uses_thinking_level(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let gemini_3_pro_or_flash = id.match_indices("gemini-3").any(|(at, _)| {
        let rest = &id[at + "gemini-3".len()..];
        let rest = match rest.strip_prefix('.') {
            Some(minor) => {
                let digits = minor.bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 {
                    return false;
                }
                &minor[digits..]
            }
            None => rest,
        };
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let gemini_4_or_later = id.match_indices("gemini-").any(|(at, _)| {
        let rest = &id.as_bytes()[at + "gemini-".len()..];
        matches!(rest, [b'4'..=b'9', ..] | [b'1'..=b'9', b'0'..=b'9', ..])
    });
    let gemma_4 = id.contains("gemma4") || id.contains("gemma-4");
    gemini_3_pro_or_flash
        || gemini_4_or_later
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || gemma_4
}

/// A pi level as one of Gemini's four, through the model's `thinkingLevelMap`.
fn google_level(model: &Model, level: ThinkingLevel) -> Result<&'static str, String> {
    let mapped = thinking::mapped(model, level);
    let resolved = match mapped {
        Mapped::To(to) => to.to_ascii_lowercase(),
        Mapped::Unset | Mapped::Unsupported => thinking::name(level).to_owned(),
    };
    match resolved.as_str() {
        "minimal" => Ok("MINIMAL"),
        "low" => Ok("LOW"),
        "medium" => Ok("MEDIUM"),
        "high" => Ok("HIGH"),
        _ => {
            let shown = match mapped {
                Mapped::To(to) => to,
                Mapped::Unset => "undefined",
                Mapped::Unsupported => "null",
            };
            Err(format!(
                "Unsupported Google thinking level mapping for {}/{}: {} -> {shown}",
                model.provider,
                model.id,
                thinking::name(level)
            ))
        }
    }
}

fn thinking_config(model: &Model, options: &StreamOptions) -> Result<ThinkingConfig, String> {
    let Some(level) = thinking::effort(model, options) else {
        return disabled_thinking(model);
    };
    let google = google_level(model, level)?;
    Ok(if uses_thinking_level(&model.id) {
        ThinkingConfig {
            include_thoughts: Some(true),
            thinking_level: Some(google),
            thinking_budget: None,
        }
    } else {
        ThinkingConfig {
            include_thoughts: Some(true),
            thinking_level: None,
            thinking_budget: Some(thinking_budget(&model.id, google)),
        }
    })
}

/// Thinking off: a zero budget, or the weakest level a level-based model offers.
fn disabled_thinking(model: &Model) -> Result<ThinkingConfig, String> {
    let off_budget = ThinkingConfig {
        include_thoughts: None,
        thinking_level: None,
        thinking_budget: Some(0),
    };
    if !uses_thinking_level(&model.id) {
        return Ok(off_budget);
    }
    let fallback = thinking::clamp(model, ThinkingLevel::Off);
    if fallback == ThinkingLevel::Off {
        return Ok(off_budget);
    }
    Ok(ThinkingConfig {
        include_thoughts: None,
        thinking_level: Some(google_level(model, fallback)?),
        thinking_budget: None,
    })
}

/// Token budgets of the Gemini 2.5 family; `-1` (dynamic) for other models.
fn thinking_budget(model_id: &str, level: &str) -> i64 {
    let high = if model_id.contains("2.5-pro") {
        32768
    } else if model_id.contains("2.5-flash") {
        24576
    } else {
        return -1;
    };
    let minimal = if model_id.contains("2.5-flash-lite") {
        512
    } else {
        128
    };
    match level {
        "MINIMAL" => minimal,
        "LOW" => 2048,
        "MEDIUM" => 8192,
        _ => high,
    }
}

/// A thought signature is replayed only when it is well-formed base64.
fn is_valid_signature(signature: &str) -> bool {
    let body = signature.trim_end_matches('=');
    !signature.is_empty()
        && signature.len().is_multiple_of(4)
        && signature.len() - body.len() <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn inline_data(image: &ImageContent) -> Part<'_> {
    Part {
        inline_data: Some(InlineData {
            mime_type: &image.mime_type,
            data: &image.data,
        }),
        ..Part::default()
    }
}

fn text_part(text: &str) -> Part<'_> {
    Part {
        text: Some(Cow::Borrowed(text)),
        ..Part::default()
    }
}

fn convert_messages<'a>(model: &'a Model, transformed: &'a [Cow<'_, Message>]) -> Vec<Content<'a>> {
    let include_ids = requires_tool_call_id(&model.id);
    let mut contents: Vec<Content<'a>> = Vec::with_capacity(transformed.len());
    for message in transformed {
        match &**message {
            // Folded into the system instruction before conversion.
            Message::System(_) => {}
            Message::User(user) => {
                let parts = match &user.content {
                    UserContent::Text(text) => vec![text_part(text)],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|block| match block {
                            ContentBlock::Text(t) => Some(text_part(&t.text)),
                            ContentBlock::Image(image) => Some(inline_data(image)),
                            // Lowered to text and images (`transform`).
                            _ => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(Content {
                        parts,
                        role: "user",
                    });
                }
            }
            Message::Assistant(assistant) => {
                let same = assistant.provider == model.provider && assistant.model == model.id;
                let signature = |s: Option<&'a String>| {
                    s.map(String::as_str)
                        .filter(|s| same && is_valid_signature(s))
                };
                let mut parts = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text(t) => {
                            let thought_signature = signature(t.text_signature.as_ref());
                            if t.text.trim().is_empty() && thought_signature.is_none() {
                                continue;
                            }
                            parts.push(Part {
                                thought_signature,
                                ..text_part(&t.text)
                            });
                        }
                        ContentBlock::Thinking(t) if same => {
                            let thought_signature = signature(t.thinking_signature.as_ref());
                            if t.thinking.trim().is_empty() && thought_signature.is_none() {
                                continue;
                            }
                            parts.push(Part {
                                thought: Some(true),
                                thought_signature,
                                ..text_part(&t.thinking)
                            });
                        }
                        ContentBlock::Thinking(t) => {
                            if !t.thinking.trim().is_empty() {
                                parts.push(text_part(&t.thinking));
                            }
                        }
                        ContentBlock::ToolCall(call) => parts.push(Part {
                            function_call: Some(FunctionCall {
                                args: &call.arguments,
                                id: include_ids.then_some(call.id.as_str()),
                                name: &call.name,
                            }),
                            thought_signature: signature(call.thought_signature.as_ref()),
                            ..Part::default()
                        }),
                        ContentBlock::Image(_)
                        | ContentBlock::Audio(_)
                        | ContentBlock::Resource(_) => {}
                    }
                }
                if !parts.is_empty() {
                    contents.push(Content {
                        parts,
                        role: "model",
                    });
                }
            }
            Message::ToolResult(result) => push_result(&mut contents, model, result, include_ids),
        }
    }
    contents
}

/// Consecutive function responses share one `user` turn; Gemini before 3 gets a result's
/// images as a separate turn.
fn push_result<'a>(
    contents: &mut Vec<Content<'a>>,
    model: &Model,
    result: &'a ToolResultMessage,
    include_ids: bool,
) {
    let text = crate::message::join_text(&result.content);
    let images: Vec<Part<'a>> = if model.supports_images {
        result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Image(image) => Some(inline_data(image)),
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    let value = if !text.trim().is_empty() {
        text
    } else if !images.is_empty() {
        "(see attached image)".to_owned()
    } else {
        String::new()
    };
    let multimodal = supports_multimodal_function_response(&model.id);
    let (nested, separate) = match (images.is_empty(), multimodal) {
        (true, _) => (None, None),
        (false, true) => (Some(images), None),
        (false, false) => (None, Some(images)),
    };
    let part = Part {
        function_response: Some(FunctionResponse {
            name: &result.tool_name,
            response: if result.is_error {
                FunctionOutput::Error(value)
            } else {
                FunctionOutput::Output(value)
            },
            parts: nested,
            id: include_ids.then_some(result.tool_call_id.as_str()),
        }),
        ..Part::default()
    };
    match contents.last_mut() {
        Some(last)
            if last.role == "user" && last.parts.iter().any(|p| p.function_response.is_some()) =>
        {
            last.parts.push(part);
        }
        _ => contents.push(Content {
            parts: vec![part],
            role: "user",
        }),
    }
    if let Some(images) = separate {
        let mut parts = vec![text_part("Tool result image:")];
        parts.extend(images);
        contents.push(Content {
            parts,
            role: "user",
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_level_models() {
        for id in [
            "gemini-3-pro-preview",
            "gemini-3.1-flash",
            "gemini-4-x",
            "gemini-10",
            "gemma-4-27b",
            "gemini-flash-latest",
        ] {
            assert!(uses_thinking_level(id), "{id}");
        }
        for id in [
            "gemini-2.5-flash",
            "gemini-3-nano",
            "gemini-3.-pro",
            "gemini-flash-lite",
        ] {
            assert!(!uses_thinking_level(id), "{id}");
        }
    }

    #[test]
    fn budgets_of_the_2_5_family() {
        assert_eq!(thinking_budget("gemini-2.5-flash", "HIGH"), 24576);
        assert_eq!(thinking_budget("gemini-2.5-flash-lite", "MINIMAL"), 512);
        assert_eq!(thinking_budget("gemini-2.5-pro", "HIGH"), 32768);
        assert_eq!(thinking_budget("gemini-2.0", "HIGH"), -1);
    }

    #[test]
    fn signatures_must_be_base64() {
        assert!(is_valid_signature("c2lnbmF0dXJl"));
        assert!(is_valid_signature("ab+/cd=="));
        assert!(!is_valid_signature("abc"));
        assert!(!is_valid_signature("ab_c"));
        assert!(!is_valid_signature("===="));
        assert!(!is_valid_signature(""));
    }

    #[test]
    fn tool_choice_modes() {
        let auto = ToolChoice::Raw(Value::from("auto"));
        let none = ToolChoice::Raw(Value::from("none"));
        let falsy = ToolChoice::Raw(Value::from(""));
        assert_eq!(function_calling_mode(Some(&none), true), Some("NONE"));
        assert_eq!(function_calling_mode(Some(&auto), true), Some("VALIDATED"));
        assert_eq!(function_calling_mode(Some(&auto), false), Some("AUTO"));
        assert_eq!(function_calling_mode(Some(&falsy), true), Some("VALIDATED"));
        assert_eq!(function_calling_mode(Some(&falsy), false), None);
        assert_eq!(function_calling_mode(None, false), None);
        let typed = [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required];
        let modes = typed.map(|choice| function_calling_mode(Some(&choice), false));
        assert_eq!(modes, [Some("AUTO"), Some("NONE"), Some("ANY")]);
        let tool = ToolChoice::Tool("submit".into());
        assert_eq!(function_calling_mode(Some(&tool), true), Some("ANY"));
    }
}
