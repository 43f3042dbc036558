//! Request conversion (context -> the JSON body POSTed) for `openai-completions`, DeepSeek
//! included.

mod wire;

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use self::wire::{
    AssistantContent, AssistantMessage, ChatCompletionRequest, ChatMessage, ChatTool, ChatToolCall,
    ContentPart, CustomCall, CustomTool, FunctionCall, FunctionName, FunctionTool,
    GrammarDefinition, GrammarFormat, ImageUrl, NamedFunction, ReasoningReplay, ReasoningSwitch,
    StreamUsage, ThinkingSwitch, UserContent,
};
use crate::declaration::Tool;
use crate::message::{ContentBlock, Message, ThinkingContent, ToolResultMessage, UserMessage};
use crate::provider::Model;
use crate::provider::choice::OpenAiToolChoice;
use crate::provider::compat::{MaxTokensField, OpenAiCompat, ThinkingFormat};
use crate::provider::thinking::{self, Mapped};
use crate::provider::{ids, strict, tokens, transform};
use crate::stream::{Context, StreamOptions, ThinkingLevel, ToolChoice};
use crate::transcript::{self, ToolChangeSupport};

/// The fields a replayed thinking signature may name.
const REASONING_FIELDS: [&str; 3] = ["reasoning", "reasoning_content", "reasoning_text"];
/// Inserted between tool results and a user message for servers that need an assistant turn
/// there.
const PROCESSED_RESULTS: &str = "I have processed the tool results.";

/// The JSON body of a Chat Completions request, or the error of a request that must fail
/// before the network (a `require` strict tool that cannot be strict, a bad grammar tool).
pub(crate) fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let compat = OpenAiCompat::resolve(model);
    let transcript = transcript::resolve(context, compat.supports_mid_convo_system_messages);
    let support =
        if compat.supports_mid_convo_system_messages && compat.supports_mid_convo_tool_additions {
            ToolChangeSupport::Additions
        } else {
            ToolChangeSupport::None
        };
    let request_tools = transcript::request_tools(&transcript, support);
    // A replayed call may name a tool removed since: every declared tool counts.
    let grammar_inputs =
        grammar_input_properties(transcript::declared_tools(&transcript), &compat)?;
    let transformed =
        transform::transform_messages(&transcript, model, |id, _| normalize_call_id(id, model));
    let messages = convert_messages(
        model,
        &transformed,
        &compat,
        &grammar_inputs,
        request_tools.folded,
    )?;
    let named = named_choice_fallback(options, &compat, &request_tools.tools)?;
    let offered = named
        .as_ref()
        .map_or(request_tools.tools.as_slice(), |only| only.as_slice());
    let tools = if offered.is_empty() {
        (compat.requires_tools_with_tool_history && has_tool_history(&context.messages))
            .then(Vec::new)
    } else {
        Some(convert_tools(offered, &compat)?)
    };
    let max_tokens = Some(tokens::max_tokens(model, context, options)).filter(|&n| n > 0);
    let (max_tokens, max_completion_tokens) = match compat.max_tokens_field {
        MaxTokensField::MaxTokens => (max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, max_tokens),
    };
    let has_tools = tools.as_ref().is_some_and(|tools| !tools.is_empty());
    let mut request = ChatCompletionRequest {
        model: &model.id,
        messages,
        stream: true,
        stream_options: compat.supports_usage_in_streaming.then_some(StreamUsage {
            include_usage: true,
        }),
        store: compat.supports_store.then_some(false),
        max_tokens,
        max_completion_tokens,
        temperature: options.temperature,
        tool_stream: (has_tools && compat.zai_tool_stream).then_some(true),
        // A named choice is one call of that tool; the narrowed form says so itself.
        parallel_tool_calls: match named {
            Some(_) => Some(options.parallel_tool_calls.unwrap_or(false)),
            None => options.parallel_tool_calls.filter(|_| has_tools),
        },
        tools,
        tool_choice: match named {
            Some(_) => Some(OpenAiToolChoice::Mode("required")),
            None => options.tool_choice.as_ref().map(|choice| {
                OpenAiToolChoice::new(choice, |name| NamedFunction {
                    r#type: "function",
                    function: FunctionName { name },
                })
            }),
        },
        thinking: None,
        reasoning: None,
        reasoning_effort: None,
    };
    if model.reasoning {
        apply_reasoning(
            &mut request,
            model,
            &compat,
            thinking::effort(model, options),
        );
    }
    serde_json::to_value(&request).map_err(|error| error.to_string())
}

/// For a server that does not honour a named `tool_choice`
/// ([`Compat::supports_named_tool_choice`](crate::provider::Compat::supports_named_tool_choice)
/// `false`): the one tool a named choice asks for, to offer alone with `"required"`, or why
/// the request cannot be sent. `None`: the choice goes as it is.
fn named_choice_fallback(
    options: &StreamOptions,
    compat: &OpenAiCompat,
    tools: &[Tool],
) -> Result<Option<Vec<Tool>>, String> {
    let Some(ToolChoice::Tool(name)) = &options.tool_choice else {
        return Ok(None);
    };
    if compat.supports_named_tool_choice {
        return Ok(None);
    }
    let only: Vec<Tool> = tools
        .iter()
        .filter(|tool| tool.name == *name)
        .cloned()
        .collect();
    if only.is_empty() {
        return Err(format!(
            "tool_choice names the tool \"{name}\", which this request does not offer"
        ));
    }
    Ok(Some(only))
}

/// The reasoning switch in the server's format.
fn apply_reasoning<'a>(
    request: &mut ChatCompletionRequest<'a>,
    model: &'a Model,
    compat: &OpenAiCompat,
    effort: Option<ThinkingLevel>,
) {
    let level_name = |level| thinking::provider_name(model, level);
    let off_is_supported = thinking::mapped(model, ThinkingLevel::Off) != Mapped::Unsupported;
    match compat.thinking_format {
        ThinkingFormat::DeepSeek => {
            request.thinking = match effort {
                Some(_) => Some(ThinkingSwitch {
                    kind: "enabled",
                    clear_thinking: None,
                }),
                None => off_is_supported.then_some(ThinkingSwitch {
                    kind: "disabled",
                    clear_thinking: None,
                }),
            };
            if compat.supports_reasoning_effort {
                request.reasoning_effort = effort.map(level_name);
            }
        }
        ThinkingFormat::Zai => {
            request.thinking = Some(match effort {
                Some(_) => ThinkingSwitch {
                    kind: "enabled",
                    clear_thinking: Some(false),
                },
                None => ThinkingSwitch {
                    kind: "disabled",
                    clear_thinking: None,
                },
            });
            if let Some(level) = effort.filter(|_| compat.supports_reasoning_effort)
                && thinking::mapped(model, level) != Mapped::Unsupported
            {
                request.reasoning_effort = Some(level_name(level));
            }
        }
        ThinkingFormat::Together => {
            request.reasoning = Some(ReasoningSwitch::Enabled {
                enabled: effort.is_some(),
            });
            if compat.supports_reasoning_effort {
                request.reasoning_effort = effort.map(level_name);
            }
        }
        ThinkingFormat::OpenRouter => {
            request.reasoning = match effort {
                Some(level) => Some(ReasoningSwitch::Effort {
                    effort: level_name(level),
                }),
                None => match thinking::mapped(model, ThinkingLevel::Off) {
                    Mapped::Unsupported => None,
                    Mapped::To(off) => Some(ReasoningSwitch::Effort { effort: off }),
                    Mapped::Unset => Some(ReasoningSwitch::Effort { effort: "none" }),
                },
            };
        }
        ThinkingFormat::OpenAi if compat.supports_reasoning_effort => {
            request.reasoning_effort = match effort {
                Some(level) => Some(level_name(level)),
                None => match thinking::mapped(model, ThinkingLevel::Off) {
                    Mapped::To(off) => Some(off),
                    Mapped::Unset | Mapped::Unsupported => None,
                },
            };
        }
        ThinkingFormat::OpenAi => {}
    }
}

/// Grammar tools' input properties by tool name (only where grammar tools are supported).
fn grammar_input_properties<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    compat: &OpenAiCompat,
) -> Result<HashMap<&'a str, &'a str>, String> {
    let mut properties = HashMap::new();
    for tool in tools {
        if let Some(grammar) = strict::resolve_grammar(tool, compat.supports_openai_grammar_tools)?
        {
            properties.insert(tool.name.as_str(), grammar.input_property);
        }
    }
    Ok(properties)
}

fn convert_tools<'a>(
    tools: &'a [Tool],
    compat: &OpenAiCompat,
) -> Result<Vec<ChatTool<'a>>, String> {
    tools
        .iter()
        .map(|tool| {
            if let Some(grammar) =
                strict::resolve_grammar(tool, compat.supports_openai_grammar_tools)?
            {
                return Ok(ChatTool::Custom {
                    custom: CustomTool {
                        name: &tool.name,
                        description: &tool.description,
                        format: GrammarFormat {
                            kind: "grammar",
                            grammar: GrammarDefinition {
                                syntax: grammar.syntax,
                                definition: grammar.definition,
                            },
                        },
                    },
                });
            }
            let strict_schema =
                strict::resolve_json_schema(tool, compat.supports_strict_mode, None)?;
            let strict = compat
                .supports_strict_mode
                .then_some(strict_schema.is_some());
            Ok(ChatTool::Function {
                function: FunctionTool {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: strict_schema.map_or(Cow::Borrowed(&tool.parameters), Cow::Owned),
                    strict,
                },
            })
        })
        .collect()
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a.tool_calls().next().is_some(),
        Message::User(_) | Message::System(_) => false,
    })
}

/// Call ids of other models in Chat Completions' alphabet: `<callId>_<itemId>` for a
/// Responses id, shortened with a hash above 40 characters.
fn normalize_call_id(id: &str, model: &Model) -> String {
    if let Some((call_id, item_id)) = id.split_once('|') {
        let call_id = ids::sanitize(call_id);
        let item_id = ids::sanitize(item_id);
        let combined = if item_id.is_empty() {
            call_id.clone()
        } else {
            format!("{call_id}_{item_id}")
        };
        if combined.chars().count() <= 40 {
            return combined;
        }
        let hash = ids::short_hash(id);
        let prefix: String = call_id.chars().take(40 - hash.len() - 1).collect();
        return format!("{prefix}_{hash}");
    }
    if model.provider == "openai" && id.chars().count() > 40 {
        return id.chars().take(40).collect();
    }
    id.to_owned()
}

/// The transcript as messages. The system messages before `folded` have their tools in the
/// top-level list; each later one sends its additions as a tools message.
fn convert_messages<'a>(
    model: &Model,
    transformed: &'a [Cow<'_, Message>],
    compat: &OpenAiCompat,
    grammar_inputs: &HashMap<&str, &str>,
    folded: usize,
) -> Result<Vec<ChatMessage<'a>>, String> {
    let mut out = Vec::with_capacity(transformed.len());
    let developer = model.reasoning && compat.supports_developer_role;
    let mut systems = 0;
    let mut after_results = false;
    let mut i = 0;
    while i < transformed.len() {
        match &*transformed[i] {
            Message::System(system) => {
                if systems >= folded && !system.added().is_empty() {
                    out.push(ChatMessage::SystemTools {
                        tools: convert_tools(system.added(), compat)?,
                    });
                }
                systems += 1;
                let text = if i == 0 {
                    transcript::render_leading(system)
                } else {
                    transcript::render_update(system)
                };
                if !text.is_empty() {
                    let content = Cow::Owned(text);
                    out.push(if developer {
                        ChatMessage::Developer { content }
                    } else {
                        ChatMessage::System { content }
                    });
                }
                // Only a user message right after results gets the bridging assistant turn.
                after_results = false;
                i += 1;
            }
            Message::User(user) => {
                if compat.requires_assistant_after_tool_result && after_results {
                    out.push(processed_results());
                }
                if let Some(message) = convert_user(user) {
                    out.push(message);
                }
                after_results = false;
                i += 1;
            }
            Message::Assistant(assistant) => {
                if let Some(message) = convert_assistant(assistant, model, compat, grammar_inputs)?
                {
                    out.push(message);
                }
                after_results = false;
                i += 1;
            }
            Message::ToolResult(_) => {
                let run_end = transformed[i..]
                    .iter()
                    .position(|m| !matches!(**m, Message::ToolResult(_)))
                    .map_or(transformed.len(), |n| i + n);
                let mut images = Vec::new();
                for message in &transformed[i..run_end] {
                    if let Message::ToolResult(result) = &**message {
                        out.push(convert_result(result, compat));
                        if model.supports_images {
                            images.extend(result.content.iter().filter_map(image_part));
                        }
                    }
                }
                after_results = images.is_empty();
                if !images.is_empty() {
                    if compat.requires_assistant_after_tool_result {
                        out.push(processed_results());
                    }
                    let mut parts = vec![ContentPart::Text {
                        text: Cow::Borrowed("Attached image(s) from tool result:"),
                    }];
                    parts.append(&mut images);
                    out.push(ChatMessage::User {
                        content: UserContent::Parts(parts),
                    });
                }
                i = run_end;
            }
        }
    }
    Ok(out)
}

fn processed_results<'a>() -> ChatMessage<'a> {
    ChatMessage::Assistant(AssistantMessage {
        content: Some(AssistantContent::Text(Cow::Borrowed(PROCESSED_RESULTS))),
        reasoning: None,
        tool_calls: None,
        reasoning_fill: None,
    })
}

fn image_part(block: &ContentBlock) -> Option<ContentPart<'static>> {
    match block {
        ContentBlock::Image(image) => Some(ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{};base64,{}", image.mime_type, image.data),
            },
        }),
        _ => None,
    }
}

/// A string stays a string; blocks lose empty texts; a message left empty is skipped.
fn convert_user(user: &UserMessage) -> Option<ChatMessage<'_>> {
    let content = match &user.content {
        crate::message::UserContent::Text(text) => UserContent::Text(text),
        crate::message::UserContent::Blocks(blocks) => {
            let parts: Vec<_> = blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text(t) if t.text.is_empty() => None,
                    ContentBlock::Text(t) => Some(ContentPart::Text {
                        text: Cow::Borrowed(&t.text),
                    }),
                    other => image_part(other),
                })
                .collect();
            if parts.is_empty() {
                return None;
            }
            UserContent::Parts(parts)
        }
    };
    Some(ChatMessage::User { content })
}

fn convert_assistant<'a>(
    message: &'a crate::message::AssistantMessage,
    model: &Model,
    compat: &OpenAiCompat,
    grammar_inputs: &HashMap<&str, &str>,
) -> Result<Option<ChatMessage<'a>>, String> {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .filter(|text| !text.trim().is_empty())
        .collect();
    let thinking: Vec<&ThinkingContent> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => Some(t),
            _ => None,
        })
        .collect();
    let empty_content =
        compat.requires_assistant_after_tool_result || compat.requires_non_null_assistant_content;
    let mut content = if texts.is_empty() {
        empty_content.then_some(AssistantContent::Text(Cow::Borrowed("")))
    } else {
        Some(AssistantContent::Text(Cow::Owned(texts.concat())))
    };
    let mut reasoning = None;
    if let Some(first) = thinking.first() {
        if compat.requires_thinking_as_text {
            let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
            let mut parts = vec![ContentPart::Text {
                text: Cow::Owned(joined.join("\n\n")),
            }];
            parts.extend(texts.iter().map(|text| ContentPart::Text {
                text: Cow::Borrowed(*text),
            }));
            content = Some(AssistantContent::Parts(parts));
        } else if let Some(field) = first
            .thinking_signature
            .as_deref()
            .and_then(|sig| REASONING_FIELDS.iter().find(|f| **f == sig))
        {
            let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
            reasoning = Some(ReasoningReplay {
                field,
                text: joined.join("\n"),
            });
        }
    }
    let calls = message
        .tool_calls()
        .map(|call| {
            Ok(match grammar_inputs.get(call.name.as_str()) {
                Some(property) => ChatToolCall {
                    id: &call.id,
                    kind: "custom",
                    function: None,
                    custom: Some(CustomCall {
                        name: &call.name,
                        input: strict::grammar_input(&call.name, &call.arguments, property)?,
                    }),
                },
                None => ChatToolCall {
                    id: &call.id,
                    kind: "function",
                    function: Some(FunctionCall {
                        name: &call.name,
                        arguments: call.arguments.to_string(),
                    }),
                    custom: None,
                },
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let has_reasoning_content = reasoning
        .as_ref()
        .is_some_and(|r| r.field == "reasoning_content");
    // DeepSeek rejects tool-call history without `reasoning_content`, so every other
    // replayed assistant message of a reasoning model gets an empty one.
    let reasoning_fill = (compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !has_reasoning_content)
        .then(|| ReasoningReplay {
            field: "reasoning_content",
            text: String::new(),
        });
    let has_content = match &content {
        Some(AssistantContent::Text(text)) => !text.is_empty(),
        Some(AssistantContent::Parts(parts)) => !parts.is_empty(),
        None => false,
    };
    if !has_content && calls.is_empty() {
        return Ok(None);
    }
    Ok(Some(ChatMessage::Assistant(AssistantMessage {
        content,
        reasoning,
        tool_calls: (!calls.is_empty()).then_some(calls),
        reasoning_fill,
    })))
}

/// Texts joined with `\n`; a blank result says why it is blank.
fn convert_result<'a>(result: &'a ToolResultMessage, compat: &OpenAiCompat) -> ChatMessage<'a> {
    let text = crate::message::join_text(&result.content);
    let has_images = result
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Image(_)));
    let content = if !text.trim().is_empty() {
        Cow::Owned(text)
    } else if has_images {
        Cow::Borrowed("(see attached image)")
    } else {
        Cow::Borrowed("(no tool output)")
    };
    ChatMessage::Tool {
        content,
        tool_call_id: &result.tool_call_id,
        name: (compat.requires_tool_result_name && !result.tool_name.is_empty())
            .then_some(result.tool_name.as_str()),
    }
}
