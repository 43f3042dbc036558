//! Request conversion (context -> the JSON body POSTed) for `anthropic-messages`.

mod system;
mod wire;

use std::borrow::Cow;

use serde_json::{Map, Value};

use self::wire::{
    Block, CacheControl, ImageSource, MessageContent, MessageParam, MessagesRequest, ThinkingParam,
    ToolChoiceParam, ToolParam,
};
use crate::declaration::Tool;
use crate::message::{ContentBlock, ImageContent, Message, ToolResultMessage, UserContent};
use crate::provider::Model;
use crate::provider::compat::AnthropicCompat;
use crate::provider::thinking::{self, MIN_ANSWER_TOKENS, Mapped};
use crate::provider::{ids, strict, tokens, transform};
use crate::stream::{CacheRetention, Context, StreamOptions, ThinkingLevel, ToolChoice};
use crate::transcript;

/// The beta that streams tool input in fine-grained pieces where `eager_input_streaming` is
/// not accepted.
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
/// The beta under which a reasoning model may think between tool calls.
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// Anthropic rejects error results with images: they follow the results, behind this text.
const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";
/// Anthropic's longest tool-use id.
const MAX_ID_LEN: usize = 64;

/// The JSON body of a Messages request, or the error of a request that must fail before the
/// network (a `require` strict tool that cannot be strict).
pub(crate) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let compat = AnthropicCompat::resolve(model);
    let cache_control = match options.cache_retention.unwrap_or_default() {
        CacheRetention::None => None,
        CacheRetention::Short => Some(CacheControl {
            kind: "ephemeral",
            ttl: None,
        }),
        CacheRetention::Long => Some(CacheControl {
            kind: "ephemeral",
            ttl: Some("1h"),
        }),
    };
    let transcript = transcript::resolve(context, compat.supports_mid_convo_system_messages);
    let leading = transcript::leading(&transcript);
    let native = system::native_tool_changes(&compat, leading);
    let transformed =
        transform::transform_messages(&transcript, model, |id, _| ids::sanitize_to(id, MAX_ID_LEN));
    // The leading system message is the `system` parameter, not a message.
    let conversation = &transformed[usize::from(leading.is_some())..];
    let messages = convert_messages(conversation, cache_control, native.then_some(&compat))?;

    // Budget-based thinking: the budget is added to the output limit, so the answer keeps
    // its room (pi's `adjustMaxTokensForThinking`).
    let requested = thinking::requested(options);
    let base_max = tokens::max_tokens(model, context, options);
    let (max_tokens, budget) = match requested {
        Some(level) => {
            let (max, budget) =
                thinking::max_tokens_with_thinking(base_max, model.max_tokens, level);
            let max = tokens::fit_to_context(model, context, max);
            (max, budget.min(max.saturating_sub(MIN_ANSWER_TOKENS)))
        }
        None => (base_max, 0),
    };
    let thinking = thinking_param(model, requested, budget);

    // With native changes the list stays the leading tools for the whole conversation, so the
    // cached prefix survives every change; otherwise it is the current tools.
    let current = if native {
        Vec::new()
    } else {
        transcript::current_tools(&transcript)
    };
    let tools = match leading {
        Some(leading) if native => {
            let mut tools = convert_tools(leading.added(), &compat, cache_control)?;
            tools.push(system::deferred_placeholder());
            Some(tools)
        }
        _ if current.is_empty() => None,
        _ => Some(convert_tools(&current, &compat, cache_control)?),
    };
    let system = leading
        .map(transcript::render_leading)
        .filter(|text| !text.is_empty())
        .map(|text| {
            vec![Block::Text {
                text: Cow::Owned(text),
                cache_control,
            }]
        });
    let has_tools = tools.as_ref().is_some_and(|tools| !tools.is_empty());
    let tool_choice = tool_choice(
        options.tool_choice.as_ref(),
        options.parallel_tool_calls == Some(false) && has_tools,
    );
    let request = MessagesRequest {
        model: &model.id,
        messages,
        max_tokens,
        stream: true,
        system,
        temperature: options.temperature.filter(|_| requested.is_none()),
        tools,
        thinking,
        tool_choice,
    };
    serde_json::to_value(&request).map_err(|error| error.to_string())
}

/// `choice` as the Messages API writes it: a string of the caller's own JSON `s` becomes
/// `{"type": s}`; an object is sent as it is. `serial` (no parallel tool calls) adds
/// `disable_parallel_tool_use: true` to every choice but `none` and the caller's object, and
/// without a choice sends `{"type":"auto"}` to carry it.
fn tool_choice(choice: Option<&ToolChoice>, serial: bool) -> Option<ToolChoiceParam<'_>> {
    let disable = |kind: &str| (serial && kind != "none").then_some(true);
    let kind = |r#type| ToolChoiceParam::Kind {
        r#type,
        disable_parallel_tool_use: disable(r#type),
    };
    Some(match choice {
        None if serial => kind("auto"),
        None => return None,
        Some(ToolChoice::Auto) => kind("auto"),
        Some(ToolChoice::None) => kind("none"),
        Some(ToolChoice::Required) => kind("any"),
        Some(ToolChoice::Tool(name)) => ToolChoiceParam::Tool {
            r#type: "tool",
            name,
            disable_parallel_tool_use: disable("tool"),
        },
        Some(ToolChoice::Raw(Value::String(r#type))) => kind(r#type),
        Some(ToolChoice::Raw(json)) => ToolChoiceParam::Raw(json),
    })
}

/// The `anthropic-beta` header value, when the request needs one: the betas joined with
/// `,`, in this order: fine-grained tool streaming when tools are sent without
/// `eager_input_streaming`, interleaved thinking when a reasoning model thinks, and inline
/// tools for native tool changes, always after the others (which it never replaces).
pub(crate) fn beta_header(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Option<String> {
    let compat = AnthropicCompat::resolve(model);
    // Folding keeps the current tools, and native changes need the unfolded transcript: the
    // normalized one answers both.
    let transcript = transcript::normalize(context);
    let mut betas = Vec::new();
    if !compat.supports_eager_tool_input_streaming
        && !transcript::current_tools(&transcript).is_empty()
    {
        betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if model.reasoning && thinking::requested(options).is_some() {
        betas.push(INTERLEAVED_THINKING_BETA);
    }
    if system::native_tool_changes(&compat, transcript::leading(&transcript)) {
        betas.push(system::INLINE_TOOLS_BETA);
    }
    (!betas.is_empty()).then(|| betas.join(","))
}

fn thinking_param(
    model: &Model,
    requested: Option<ThinkingLevel>,
    budget: u32,
) -> Option<ThinkingParam> {
    if !model.reasoning {
        return None;
    }
    match requested {
        None if thinking::mapped(model, ThinkingLevel::Off) != Mapped::Unsupported => {
            Some(ThinkingParam {
                kind: "disabled",
                budget_tokens: None,
                display: None,
            })
        }
        None => None,
        Some(_) => Some(ThinkingParam {
            kind: "enabled",
            budget_tokens: Some(if budget == 0 {
                MIN_ANSWER_TOKENS
            } else {
                budget
            }),
            display: Some("summarized"),
        }),
    }
}

/// Anthropic's strict mode rejects these keywords for the whole request.
fn unsupported_strict_keyword(key: &str, value: &Value) -> bool {
    const NUMERIC_AND_COUNT: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    match key {
        "minItems" => !(value == 0 || value == 1),
        "format" => !value.as_str().is_some_and(|f| FORMATS.contains(&f)),
        _ => NUMERIC_AND_COUNT.contains(&key),
    }
}

fn convert_tools<'a>(
    tools: &'a [Tool],
    compat: &AnthropicCompat,
    cache_control: Option<CacheControl>,
) -> Result<Vec<ToolParam<'a>>, String> {
    let last = tools.len().saturating_sub(1);
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let strict_schema = strict::resolve_json_schema(
                tool,
                compat.supports_strict_tools,
                Some(unsupported_strict_keyword),
            )?;
            let strict = strict_schema.is_some();
            let schema = strict_schema.as_ref().unwrap_or(&tool.parameters);
            // Root anyOf/oneOf/allOf are rejected; keep what nested `$ref`s and the model need.
            let mut input_schema = match strict_schema.clone() {
                Some(Value::Object(all)) => all,
                _ => Map::new(),
            };
            input_schema.insert("type".into(), Value::from("object"));
            let properties = schema.get("properties").filter(|p| !p.is_null());
            input_schema.insert(
                "properties".into(),
                properties
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            );
            let required = schema.get("required").filter(|r| !r.is_null());
            input_schema.insert(
                "required".into(),
                required
                    .cloned()
                    .unwrap_or_else(|| Value::Array(Vec::new())),
            );
            for key in ["additionalProperties", "$defs", "definitions"] {
                if let Some(value) = schema.get(key) {
                    input_schema.insert(key.into(), value.clone());
                }
            }
            Ok(ToolParam {
                name: &tool.name,
                description: &tool.description,
                eager_input_streaming: compat.supports_eager_tool_input_streaming.then_some(true),
                strict: strict.then_some(true),
                input_schema,
                cache_control: cache_control.filter(|_| index == last),
                defer_loading: None,
            })
        })
        .collect()
}

fn image_block(image: &ImageContent) -> Block<'_> {
    Block::Image {
        source: ImageSource {
            kind: "base64",
            media_type: &image.mime_type,
            data: &image.data,
        },
        cache_control: None,
    }
}

/// The messages after the leading system message. `native` carries the flags tool
/// definitions are converted with when tool changes travel as blocks.
fn convert_messages<'a>(
    transformed: &'a [Cow<'_, Message>],
    cache_control: Option<CacheControl>,
    native: Option<&AnthropicCompat>,
) -> Result<Vec<MessageParam<'a>>, String> {
    let mut out = Vec::with_capacity(transformed.len());
    // Later system messages wait for the next assistant message that is sent, or the end:
    // a system message between a `tool_use` and its `tool_result` is rejected, and one
    // before an assistant message that sends nothing would land before a user message.
    // An update placed before a user message therefore follows it on the wire.
    let mut held = Vec::new();
    let mut i = 0;
    while i < transformed.len() {
        match &*transformed[i] {
            Message::User(user) => {
                out.extend(convert_user(&user.content));
                i += 1;
            }
            Message::System(message) => {
                held.extend(system::convert(message, native)?);
                i += 1;
            }
            Message::Assistant(assistant) => {
                let blocks: Vec<_> = assistant
                    .content
                    .iter()
                    .filter_map(assistant_block)
                    .collect();
                if !blocks.is_empty() {
                    out.append(&mut held);
                    out.push(MessageParam {
                        role: "assistant",
                        content: MessageContent::Blocks(blocks),
                    });
                }
                i += 1;
            }
            Message::ToolResult(_) => {
                // Consecutive results share one user message; error images come after all of
                // them, since the results must lead the message.
                let mut blocks = Vec::new();
                let mut error_images = Vec::new();
                while let Some(Message::ToolResult(result)) = transformed.get(i).map(|m| &**m) {
                    blocks.push(convert_result(result, &mut error_images));
                    i += 1;
                }
                blocks.append(&mut error_images);
                out.push(MessageParam {
                    role: "user",
                    content: MessageContent::Blocks(blocks),
                });
            }
        }
    }
    out.append(&mut held);
    if let (Some(control), Some(last)) = (cache_control, out.last_mut())
        && matches!(last.role, "user" | "system")
    {
        match &mut last.content {
            MessageContent::Blocks(blocks) => {
                if let Some(block) = blocks.last_mut() {
                    block.set_cache_control(control);
                }
            }
            MessageContent::Text(text) => {
                let text = std::mem::take(text);
                last.content = MessageContent::Blocks(vec![Block::Text {
                    text,
                    cache_control: Some(control),
                }]);
            }
        }
    }
    Ok(out)
}

/// Non-blank text, images; a message left empty is skipped.
fn convert_user(content: &UserContent) -> Option<MessageParam<'_>> {
    let content = match content {
        UserContent::Text(text) if text.trim().is_empty() => return None,
        UserContent::Text(text) => MessageContent::Text(Cow::Borrowed(text)),
        UserContent::Blocks(blocks) => {
            let blocks: Vec<_> = blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text(t) if t.text.trim().is_empty() => None,
                    ContentBlock::Text(t) => Some(Block::text(t.text.as_str())),
                    ContentBlock::Image(image) => Some(image_block(image)),
                    // Audio and resources were lowered to text and images (`transform`).
                    _ => None,
                })
                .collect();
            if blocks.is_empty() {
                return None;
            }
            MessageContent::Blocks(blocks)
        }
    };
    Some(MessageParam {
        role: "user",
        content,
    })
}

fn assistant_block(block: &ContentBlock) -> Option<Block<'_>> {
    match block {
        ContentBlock::Text(t) if t.text.trim().is_empty() => None,
        ContentBlock::Text(t) => Some(Block::text(t.text.as_str())),
        ContentBlock::Thinking(t) if t.redacted == Some(true) => Some(Block::RedactedThinking {
            data: t.thinking_signature.as_deref().unwrap_or_default(),
        }),
        ContentBlock::Thinking(t) => {
            let signature = t
                .thinking_signature
                .as_deref()
                .filter(|s| !s.trim().is_empty());
            match signature {
                Some(signature) => Some(Block::Thinking {
                    thinking: &t.thinking,
                    signature,
                }),
                None if t.thinking.trim().is_empty() => None,
                // Unsigned thinking (an aborted stream) is not accepted as thinking.
                None => Some(Block::text(t.thinking.as_str())),
            }
        }
        ContentBlock::ToolCall(call) => Some(Block::ToolUse {
            id: &call.id,
            name: &call.name,
            input: &call.arguments,
        }),
        ContentBlock::Image(_) | ContentBlock::Audio(_) | ContentBlock::Resource(_) => None,
    }
}

fn convert_result<'a>(
    result: &'a ToolResultMessage,
    error_images: &mut Vec<Block<'a>>,
) -> Block<'a> {
    let has_images = result
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_)));
    let content = if result.is_error && has_images {
        error_images.push(Block::text(format!(
            "Images from the error result of tool call {} ({}):",
            result.tool_call_id, result.tool_name
        )));
        error_images.extend(result.content.iter().filter_map(|block| match block {
            ContentBlock::Image(image) => Some(image_block(image)),
            _ => None,
        }));
        let replaced = transform::replace_images_with(&result.content, ERROR_IMAGE_PLACEHOLDER);
        MessageContent::Text(Cow::Owned(crate::message::join_text(&replaced)))
    } else if has_images {
        let mut blocks: Vec<_> = result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(Block::text(t.text.as_str())),
                ContentBlock::Image(image) => Some(image_block(image)),
                // Audio and resources were lowered to text and images (`transform`).
                _ => None,
            })
            .collect();
        if !blocks.iter().any(|b| matches!(b, Block::Text { .. })) {
            blocks.insert(0, Block::text("(see attached image)"));
        }
        MessageContent::Blocks(blocks)
    } else {
        MessageContent::Text(Cow::Owned(crate::message::join_text(&result.content)))
    };
    Block::ToolResult {
        tool_use_id: &result.tool_call_id,
        content,
        is_error: result.is_error,
        cache_control: None,
    }
}
