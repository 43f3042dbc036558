//! Request conversion (context -> the JSON body POSTed) for `openai-responses`, as pi 1.6
//! sends it: flat function tools, reasoning options, and the transcript as input items with
//! the reasoning items replayed in place.

mod system;
mod wire;

use std::borrow::Cow;

use serde_json::Value;

use self::wire::{
    FunctionCall, FunctionCallOutput, FunctionTool, InputContent, InputItem, NamedFunction,
    OutputMessage, OutputText, PromptCacheOptions, Reasoning, ResponsesRequest, ToolOutput,
};
use crate::declaration::Tool;
use crate::message::{AssistantMessage, ContentBlock, Message, ToolResultMessage, UserContent};
use crate::provider::choice::OpenAiToolChoice;
use crate::provider::compat::ResponsesCompat;
use crate::provider::thinking::{self, Mapped};
use crate::provider::{Model, ids, strict, tokens, transform};
use crate::stream::{CacheRetention, Context, StreamOptions, ThinkingLevel};
use crate::transcript;

/// The API rejects a smaller `max_output_tokens` (pi#6265).
const MIN_OUTPUT_TOKENS: u32 = 16;
/// The longest `prompt_cache_key` the API takes, in characters.
const MAX_CACHE_KEY_CHARS: usize = 64;
/// The longest item id the API takes.
const MAX_ITEM_ID_LEN: usize = 64;
/// Providers whose item ids pi keeps or converts for calls of other models (the others get
/// the whole id sanitized, so no item id is sent).
const ITEM_ID_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
/// Asks for the reasoning back, encrypted, so that it can be replayed.
const INCLUDE_REASONING: &str = "reasoning.encrypted_content";

/// The JSON body of a Responses request, or the error of a request that must fail before
/// the network (a `require` strict tool that cannot be strict).
pub(crate) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let compat = ResponsesCompat::resolve(model);
    let supports_strict = compat.supports_strict_mode;
    let mid_conversation = model.compat.supports_mid_convo_system_messages == Some(true);
    let transcript = transcript::resolve(context, mid_conversation);
    let support = system::tool_support(&model.compat);
    let request_tools = transcript::request_tools(&transcript, support);
    let transformed = transform::transform_messages(&transcript, model, |id, source| {
        normalize_call_id(id, model, source)
    });
    let systems = system::SystemMessages::new(model, support, request_tools.folded);
    let input = convert_messages(model, &transformed, systems)?;
    let tools = if request_tools.tools.is_empty() {
        None
    } else {
        Some(convert_tools(&request_tools.tools, supports_strict, false)?)
    };
    let cache = PromptCache::new(&compat, options);
    // `None` for a model that does not reason, whatever was asked.
    let effort = thinking::effort(model, options);
    let reasoning = if !model.reasoning {
        None
    } else if let Some(level) = effort {
        Some(Reasoning {
            effort: thinking::provider_name(model, level),
            summary: Some("auto"),
        })
    } else {
        // A reasoning model asked for none: say so, unless the model cannot turn it off.
        match thinking::mapped(model, ThinkingLevel::Off) {
            Mapped::Unsupported => None,
            Mapped::To(off) => Some(Reasoning {
                effort: off,
                summary: None,
            }),
            Mapped::Unset => Some(Reasoning {
                effort: "none",
                summary: None,
            }),
        }
    };
    let has_tools = tools.as_ref().is_some_and(|tools| !tools.is_empty());
    let request = ResponsesRequest {
        model: &model.id,
        input,
        stream: true,
        prompt_cache_key: cache.key,
        prompt_cache_retention: cache.retention,
        prompt_cache_options: cache.options,
        store: false,
        max_output_tokens: tokens::max_tokens(model, context, options).max(MIN_OUTPUT_TOKENS),
        temperature: options.temperature,
        tools,
        tool_choice: options.tool_choice.as_ref().map(|choice| {
            OpenAiToolChoice::new(choice, |name| NamedFunction {
                r#type: "function",
                name,
            })
        }),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| has_tools),
        max_tool_calls: options.max_tool_calls,
        reasoning,
        include: effort.map(|_| [INCLUDE_REASONING]),
    };
    serde_json::to_value(&request).map_err(|error| error.to_string())
}

/// The prompt cache fields of a request, as pi's compat flags shape them.
struct PromptCache<'a> {
    /// The session id, while caching is on and the server takes a key.
    key: Option<&'a str>,
    /// `"24h"` for long retention, unless the server cannot keep it or takes
    /// `prompt_cache_options` instead.
    retention: Option<&'static str>,
    /// Explicit mode only: `{mode: "explicit"}` with caching off, `{ttl: "30m"}` for long
    /// retention where supported, else nothing.
    options: Option<PromptCacheOptions>,
}

impl<'a> PromptCache<'a> {
    fn new(compat: &ResponsesCompat, options: &'a StreamOptions) -> Self {
        let retention = options.cache_retention.unwrap_or_default();
        let long = retention == CacheRetention::Long && compat.supports_long_cache_retention;
        let explicit = compat.supports_explicit_prompt_cache_mode;
        PromptCache {
            key: options
                .session_id
                .as_deref()
                .filter(|_| retention != CacheRetention::None && compat.sends_prompt_cache_key)
                .map(clamp_cache_key),
            retention: (long && !explicit).then_some("24h"),
            options: match retention {
                _ if !explicit => None,
                CacheRetention::None => Some(PromptCacheOptions::Mode("explicit")),
                _ if long => Some(PromptCacheOptions::Ttl("30m")),
                _ => None,
            },
        }
    }
}

/// The first 64 characters of a session id.
fn clamp_cache_key(key: &str) -> &str {
    match key.char_indices().nth(MAX_CACHE_KEY_CHARS) {
        Some((cut, _)) => &key[..cut],
        None => key,
    }
}

/// Flat function tools; `strict` only where the model supports strict mode; `deferred`
/// for the tools of a `tool_search_output`.
fn convert_tools(
    tools: &[Tool],
    supports_strict: bool,
    deferred: bool,
) -> Result<Vec<FunctionTool<'_>>, String> {
    tools
        .iter()
        .map(|tool| {
            let strict_schema = strict::resolve_json_schema(tool, supports_strict, None)?;
            Ok(FunctionTool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                strict: supports_strict.then_some(strict_schema.is_some()),
                parameters: strict_schema.map_or(Cow::Borrowed(&tool.parameters), Cow::Owned),
                defer_loading: deferred.then_some(true),
            })
        })
        .collect()
}

/// The ids of another model's calls, as pi's `normalizeToolCallId` rewrites them. For the
/// providers whose item ids mean something (`openai`, ...), `call_id|item_id` keeps both
/// parts, each reduced to the id alphabet; another provider's or API's item id becomes
/// `fc_<hash>` (it names an item this model never saw). Elsewhere the whole id is reduced,
/// so no item id is sent.
fn normalize_call_id(id: &str, model: &Model, source: &AssistantMessage) -> String {
    if !ITEM_ID_PROVIDERS.contains(&model.provider.as_str()) {
        return normalize_id_part(id);
    }
    let mut parts = id.split('|');
    let (Some(call_id), Some(item_id)) = (parts.next(), parts.next()) else {
        return normalize_id_part(id);
    };
    let foreign = source.provider != model.provider || source.api != model.api.as_str();
    let mut item = if foreign {
        let mut hashed = format!("fc_{}", ids::full_hash(item_id));
        hashed.truncate(MAX_ITEM_ID_LEN);
        hashed
    } else {
        normalize_id_part(item_id)
    };
    // The API wants function call item ids to start with `fc`.
    if !item.starts_with("fc_") {
        item = normalize_id_part(&format!("fc_{item}"));
    }
    format!("{}|{item}", normalize_id_part(call_id))
}

/// `[A-Za-z0-9_-]` only (every other UTF-16 unit becomes `_`), cut to 64, trailing `_`
/// removed.
fn normalize_id_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
    }
    out.truncate(MAX_ITEM_ID_LEN);
    out.truncate(out.trim_end_matches('_').len());
    out
}

/// The transcript as input items. `index` counts the messages after the leading system
/// message that produced items, and every later system message, as pi's `msg_pi_<n>`
/// fallback ids do.
fn convert_messages<'a>(
    model: &Model,
    transformed: &'a [Cow<'_, Message>],
    mut systems: system::SystemMessages<'a>,
) -> Result<Vec<InputItem<'a>>, String> {
    let mut input = Vec::with_capacity(transformed.len() + 1);
    let mut index = 0;
    for (position, message) in transformed.iter().enumerate() {
        let produced = match &**message {
            Message::System(system) => {
                let leading = position == 0;
                systems.push(system, leading, index, &mut input)?;
                !leading
            }
            Message::User(user) => match &user.content {
                UserContent::Text(text) => {
                    input.push(InputItem::User {
                        role: "user",
                        content: vec![InputContent::InputText {
                            text: Cow::Borrowed(text),
                        }],
                    });
                    true
                }
                UserContent::Blocks(blocks) => {
                    let content: Vec<_> = blocks.iter().filter_map(input_content).collect();
                    let produced = !content.is_empty();
                    if produced {
                        input.push(InputItem::User {
                            role: "user",
                            content,
                        });
                    }
                    produced
                }
            },
            Message::Assistant(assistant) => {
                let before = input.len();
                convert_assistant(assistant, model, index, &mut input);
                input.len() > before
            }
            Message::ToolResult(result) => {
                input.push(InputItem::FunctionCallOutput(FunctionCallOutput {
                    kind: "function_call_output",
                    call_id: call_part(&result.tool_call_id),
                    output: tool_output(result, model),
                }));
                true
            }
        };
        if produced {
            index += 1;
        }
    }
    Ok(input)
}

fn input_content(block: &ContentBlock) -> Option<InputContent<'_>> {
    match block {
        ContentBlock::Text(text) => Some(InputContent::InputText {
            text: Cow::Borrowed(&text.text),
        }),
        ContentBlock::Image(image) => Some(InputContent::InputImage {
            detail: "auto",
            image_url: format!("data:{};base64,{}", image.mime_type, image.data),
        }),
        _ => None,
    }
}

/// The call id part of a `call_id|item_id` id.
fn call_part(id: &str) -> &str {
    id.split('|').next().unwrap_or(id)
}

/// An assistant message's items: reasoning replayed verbatim, text as `message` items,
/// calls as `function_call` items.
fn convert_assistant<'a>(
    message: &'a AssistantMessage,
    model: &Model,
    index: usize,
    input: &mut Vec<InputItem<'a>>,
) {
    let same_provider_and_api =
        message.provider == model.provider && message.api == model.api.as_str();
    // Another model of this provider and API: its item ids are paired with reasoning this
    // model does not get, and the API rejects such a pairing.
    let other_model = same_provider_and_api && message.model != model.id;
    let mut texts = 0;
    for block in &message.content {
        match block {
            ContentBlock::Thinking(thinking) => {
                // Unsigned thinking has no reasoning item to replay. A signature that is not
                // an item's JSON (a hand-edited transcript) is dropped too.
                if let Some(item) = thinking
                    .thinking_signature
                    .as_deref()
                    .and_then(|signature| serde_json::from_str::<Value>(signature).ok())
                    .filter(Value::is_object)
                {
                    input.push(InputItem::Reasoning(item));
                }
            }
            ContentBlock::Text(text) => {
                let signature = text.text_signature.as_deref().map(parse_text_signature);
                let id = match signature.as_ref().map(|s| &s.id) {
                    Some(id) if id.encode_utf16().count() > MAX_ITEM_ID_LEN => {
                        Cow::Owned(format!("msg_{}", ids::full_hash(id)))
                    }
                    Some(id) if !id.is_empty() => id.clone(),
                    _ if texts == 0 => Cow::Owned(format!("msg_pi_{index}")),
                    _ => Cow::Owned(format!("msg_pi_{index}_{texts}")),
                };
                texts += 1;
                input.push(InputItem::Message(OutputMessage {
                    kind: "message",
                    role: "assistant",
                    content: [OutputText {
                        kind: "output_text",
                        text: &text.text,
                        annotations: [],
                    }],
                    status: "completed",
                    id,
                    phase: signature.and_then(|s| s.phase),
                }));
            }
            ContentBlock::ToolCall(call) => {
                let mut parts = call.id.split('|');
                let call_id = parts.next().unwrap_or_default();
                let item_id = parts
                    .next()
                    .filter(|item| !other_model && item.starts_with("fc_"));
                input.push(InputItem::FunctionCall(FunctionCall {
                    kind: "function_call",
                    id: item_id,
                    call_id,
                    name: &call.name,
                    arguments: call.arguments.to_string(),
                }));
            }
            ContentBlock::Image(_) | ContentBlock::Audio(_) | ContentBlock::Resource(_) => {}
        }
    }
}

/// What a text block's signature says about its `message` item.
#[derive(Debug)]
struct TextSignature<'a> {
    id: Cow<'a, str>,
    phase: Option<&'static str>,
}

/// `{"v":1,"id","phase"?}` as written by the stream parser; any other text is the id itself
/// (older transcripts stored the bare id).
fn parse_text_signature(signature: &str) -> TextSignature<'_> {
    if signature.starts_with('{')
        && let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(signature)
        && fields.get("v").and_then(Value::as_f64) == Some(1.0)
        && let Some(Value::String(id)) = fields.get("id")
    {
        let phase = match fields.get("phase").and_then(Value::as_str) {
            Some("commentary") => Some("commentary"),
            Some("final_answer") => Some("final_answer"),
            _ => None,
        };
        return TextSignature {
            id: Cow::Owned(id.clone()),
            phase,
        };
    }
    TextSignature {
        id: Cow::Borrowed(signature),
        phase: None,
    }
}

/// Text (blocks joined with `\n`), or `input_text` / `input_image` parts when the result
/// has images the model can see. A result without text says why.
fn tool_output<'a>(result: &'a ToolResultMessage, model: &Model) -> ToolOutput<'a> {
    let text = crate::message::join_text(&result.content);
    let has_text = !text.trim().is_empty();
    let images: Vec<_> = result
        .content
        .iter()
        .filter(|block| matches!(block, ContentBlock::Image(_)))
        .filter_map(input_content)
        .collect();
    if images.is_empty() || !model.supports_images {
        return ToolOutput::Text(if has_text {
            Cow::Owned(text)
        } else if images.is_empty() {
            Cow::Borrowed("(no tool output)")
        } else {
            Cow::Borrowed("(see attached image)")
        });
    }
    let mut parts = Vec::with_capacity(images.len() + 1);
    if has_text {
        parts.push(InputContent::InputText {
            text: Cow::Owned(text),
        });
    }
    parts.extend(images);
    ToolOutput::Parts(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_parts_keep_the_id_alphabet_and_lose_trailing_underscores() {
        assert_eq!(normalize_id_part("call.x/y+1"), "call_x_y_1");
        assert_eq!(normalize_id_part("item:7:"), "item_7");
        assert_eq!(normalize_id_part("a\u{1F600}b"), "a__b");
        assert_eq!(normalize_id_part(&"x".repeat(70)).len(), 64);
    }

    #[test]
    fn text_signatures() {
        let v1 = parse_text_signature(r#"{"v":1,"id":"msg_1","phase":"commentary"}"#);
        assert_eq!((v1.id.as_ref(), v1.phase), ("msg_1", Some("commentary")));
        let odd_phase = parse_text_signature(r#"{"v":1,"id":"msg_2","phase":"other"}"#);
        assert_eq!((odd_phase.id.as_ref(), odd_phase.phase), ("msg_2", None));
        let bare = parse_text_signature("msg_3");
        assert_eq!((bare.id.as_ref(), bare.phase), ("msg_3", None));
    }

    #[test]
    fn cache_keys_are_cut_to_64_characters() {
        let long = "é".repeat(70);
        assert_eq!(clamp_cache_key(&long).chars().count(), 64);
        assert_eq!(clamp_cache_key("session-42"), "session-42");
    }
}
