//! History transformation shared by all providers (pi's `transformMessages`): image
//! placeholders, what another model's messages keep, failed turns dropped, and synthetic
//! results for calls that never got one.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::message::{
    AssistantMessage, ContentBlock, Message, ResourceBody, ToolCall, ToolResultMessage, UserContent,
};
use crate::provider::Model;

/// Shown in a user message instead of images the model cannot see.
const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
/// Shown in a tool result instead of images the model cannot see.
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";
/// The text of the synthetic result of a call that got none.
pub(crate) const NO_RESULT: &str = "No result provided";

/// Whether `message` came from `model` itself (same provider, API and id): only then do its
/// signatures and reasoning mean anything to the model.
pub(crate) fn is_same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider
        && message.api == model.api.as_str()
        && message.model == model.id
}

/// The transcript as a provider should see it. Unchanged messages are borrowed.
///
/// `normalize_id` rewrites the call ids of other models' messages (given with the message
/// that holds them) into the target's id alphabet; the matching results follow.
pub(crate) fn transform_messages<'a>(
    messages: &'a [Message],
    model: &Model,
    normalize_id: impl Fn(&str, &AssistantMessage) -> String,
) -> Vec<Cow<'a, Message>> {
    let mut renamed: HashMap<&'a str, String> = HashMap::new();
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut held: Vec<Cow<'a, Message>> = Vec::new();

    for message in messages {
        let message = match message {
            Message::User(user) => downgrade_user_images(user, model)
                .map_or(Cow::Borrowed(message), |user| Cow::Owned(user.into())),
            Message::ToolResult(result) => {
                let images = downgrade_result_images(result, model);
                let id = renamed.get(result.tool_call_id.as_str());
                match (images, id) {
                    (None, None) => Cow::Borrowed(message),
                    (images, id) => {
                        let mut result = images.unwrap_or_else(|| ToolResultMessage::clone(result));
                        if let Some(id) = id {
                            result.tool_call_id.clone_from(id);
                        }
                        Cow::Owned(result.into())
                    }
                }
            }
            Message::Assistant(assistant) => {
                let converted = convert_assistant(assistant, model, &normalize_id, &mut renamed);
                converted.map_or(Cow::Borrowed(message), |a| Cow::Owned(a.into()))
            }
            Message::System(_) => Cow::Borrowed(message),
        };

        match &*message {
            Message::Assistant(assistant) => {
                close_pending(&mut out, &mut pending, &mut answered);
                out.append(&mut held);
                // A failed turn is never replayed: it may hold half a call or reasoning with
                // no answer, which providers reject.
                if assistant.stop_reason.is_failure() {
                    continue;
                }
                pending.extend(
                    assistant
                        .tool_calls()
                        .map(|call| (call.id.clone(), call.name.clone())),
                );
                out.push(message);
            }
            Message::ToolResult(result) => {
                answered.insert(result.tool_call_id.clone());
                out.push(message);
            }
            Message::User(_) => {
                close_pending(&mut out, &mut pending, &mut answered);
                out.append(&mut held);
                out.push(message);
            }
            // Transparent to tool calls: between a call and its results it waits until the
            // results (synthetic ones included) are in.
            Message::System(_) if !pending.is_empty() => held.push(message),
            Message::System(_) => out.push(message),
        }
    }
    close_pending(&mut out, &mut pending, &mut answered);
    out.append(&mut held);
    out
}

/// Insert `No result provided` for every pending call without a result.
fn close_pending<'a>(
    out: &mut Vec<Cow<'a, Message>>,
    pending: &mut Vec<(String, String)>,
    answered: &mut HashSet<String>,
) {
    for (id, name) in pending.drain(..) {
        if !answered.contains(&id) {
            out.push(Cow::Owned(Message::from(ToolResultMessage {
                tool_call_id: id,
                tool_name: name,
                content: vec![ContentBlock::text(NO_RESULT)],
                details: None,
                usage: None,
                is_error: true,
                duration_ms: None,
                timestamp: crate::message::now_ms(),
            })));
        }
    }
    answered.clear();
}

/// Another model's message: thinking dropped, text signatures and thought signatures
/// removed, call ids normalised. The model's own message: blank unsigned thinking dropped.
/// `None` when nothing changes.
fn convert_assistant<'a>(
    message: &'a AssistantMessage,
    model: &Model,
    normalize_id: &impl Fn(&str, &AssistantMessage) -> String,
    renamed: &mut HashMap<&'a str, String>,
) -> Option<AssistantMessage> {
    let same = is_same_model(message, model);
    let keeps = |block: &ContentBlock| match block {
        ContentBlock::Thinking(t) => {
            same && (t.redacted == Some(true)
                || t.thinking_signature.is_some()
                || !t.thinking.trim().is_empty())
        }
        _ => true,
    };
    let changes = |block: &ContentBlock| match block {
        ContentBlock::Text(t) => !same && t.text_signature.is_some(),
        ContentBlock::ToolCall(c) => {
            !same && (c.thought_signature.is_some() || normalize_id(&c.id, message) != c.id)
        }
        _ => false,
    };
    if message.content.iter().all(|b| keeps(b) && !changes(b)) {
        return None;
    }
    let mut content = Vec::with_capacity(message.content.len());
    for block in &message.content {
        if !keeps(block) {
            continue;
        }
        content.push(match block {
            ContentBlock::Text(t) if !same => ContentBlock::text(t.text.clone()),
            ContentBlock::ToolCall(call) if !same => {
                let id = normalize_id(&call.id, message);
                if id != call.id {
                    renamed.insert(&call.id, id.clone());
                }
                ContentBlock::ToolCall(ToolCall {
                    id,
                    thought_signature: None,
                    ..call.clone()
                })
            }
            other => other.clone(),
        });
    }
    Some(AssistantMessage {
        content,
        ..clone_without_content(message)
    })
}

fn clone_without_content(message: &AssistantMessage) -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: message.api.clone(),
        provider: message.provider.clone(),
        model: message.model.clone(),
        usage: message.usage,
        stop_reason: message.stop_reason,
        error_message: message.error_message.clone(),
        response_id: message.response_id.clone(),
        response_model: message.response_model.clone(),
        raw_stop_reason: message.raw_stop_reason.clone(),
        timings: message.timings,
        timestamp: message.timestamp,
        duration_ms: message.duration_ms,
    }
}

fn downgrade_user_images(
    user: &crate::message::UserMessage,
    model: &Model,
) -> Option<crate::message::UserMessage> {
    let UserContent::Blocks(blocks) = &user.content else {
        return None;
    };
    let content = downgrade_blocks(blocks, model, USER_IMAGE_PLACEHOLDER)?;
    Some(crate::message::UserMessage {
        content: UserContent::Blocks(content),
        timestamp: user.timestamp,
    })
}

fn downgrade_result_images(result: &ToolResultMessage, model: &Model) -> Option<ToolResultMessage> {
    let content = downgrade_blocks(&result.content, model, TOOL_IMAGE_PLACEHOLDER)?;
    Some(ToolResultMessage {
        content,
        ..result.clone()
    })
}

/// The blocks as the model can take them: audio and embedded resources lowered (see
/// [`lower_media`]), then images replaced for a model without image input. `None`: unchanged.
fn downgrade_blocks(
    blocks: &[ContentBlock],
    model: &Model,
    placeholder: &str,
) -> Option<Vec<ContentBlock>> {
    let lowered = lower_media(blocks);
    let blocks = lowered.as_deref().unwrap_or(blocks);
    replace_images(blocks, model, placeholder).or(lowered)
}

/// No provider API here carries audio or an embedded resource in a message: a text
/// resource becomes its text, an image resource its image, and the rest a note of what was
/// left out, worded as pi words the MCP results it cannot show.
fn lower_media(blocks: &[ContentBlock]) -> Option<Vec<ContentBlock>> {
    let rich = |b: &ContentBlock| matches!(b, ContentBlock::Audio(_) | ContentBlock::Resource(_));
    if !blocks.iter().any(rich) {
        return None;
    }
    let lowered = blocks.iter().map(|block| match block {
        ContentBlock::Audio(audio) => {
            ContentBlock::text(format!("[audio {} omitted]", audio.mime_type))
        }
        ContentBlock::Resource(resource) => {
            let mime = resource.mime_type.as_deref();
            match &resource.body {
                ResourceBody::Text(text) => ContentBlock::text(text.clone()),
                ResourceBody::Blob(blob) if mime.is_some_and(|m| m.starts_with("image/")) => {
                    ContentBlock::image(blob.clone(), mime.unwrap_or_default())
                }
                ResourceBody::Blob(_) => ContentBlock::text(format!(
                    "[binary resource {} ({}) omitted]",
                    resource.uri,
                    mime.unwrap_or("unknown type")
                )),
            }
        }
        other => other.clone(),
    });
    Some(lowered.collect())
}

/// For a model without image input: each run of images becomes one placeholder text.
fn replace_images(
    blocks: &[ContentBlock],
    model: &Model,
    placeholder: &str,
) -> Option<Vec<ContentBlock>> {
    if model.supports_images || !blocks.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
        return None;
    }
    Some(replace_images_with(blocks, placeholder))
}

/// Each run of images becomes one `placeholder` text block (a placeholder already in place
/// absorbs the images after it).
pub(crate) fn replace_images_with(blocks: &[ContentBlock], placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut after_placeholder = false;
    for block in blocks {
        if let ContentBlock::Image(_) = block {
            if !after_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            after_placeholder = true;
            continue;
        }
        after_placeholder = block.as_text() == Some(placeholder);
        out.push(block.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{StopReason, ThinkingContent, UserMessage};
    use crate::provider::{Api, Compat};

    fn model() -> Model {
        Model {
            id: "m".into(),
            provider: "p".into(),
            api: Api::OpenAiCompletions,
            base_url: String::new(),
            reasoning: true,
            supports_images: false,
            max_tokens: 8192,
            context_window: 128_000,
            compat: Compat::default(),
        }
    }

    fn assistant(provider: &str, content: Vec<ContentBlock>, stop: StopReason) -> Message {
        let mut m = AssistantMessage::empty("openai-completions", provider, "m");
        m.content = content;
        m.stop_reason = stop;
        Message::from(m)
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall::new(id, "read", json!({})))
    }

    fn result(id: &str) -> Message {
        Message::from(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: 0,
        })
    }

    fn user(text: &str) -> Message {
        Message::from(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp: 0,
        })
    }

    fn summary(messages: &[Cow<'_, Message>]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match &**m {
                Message::User(_) => "user".to_owned(),
                Message::System(_) => "system".to_owned(),
                Message::Assistant(a) => format!(
                    "assistant{:?}",
                    a.tool_calls().map(|c| c.id.as_str()).collect::<Vec<_>>()
                ),
                Message::ToolResult(r) => {
                    format!("result {} {} {}", r.tool_call_id, r.is_error, r.text())
                }
            })
            .collect()
    }

    #[test]
    fn orphaned_calls_get_synthetic_results_before_the_next_user_message() {
        let messages = vec![
            user("go"),
            assistant(
                "p",
                vec![call("call_2"), call("call_3")],
                StopReason::ToolUse,
            ),
            result("call_2"),
            user("next"),
        ];
        let out = transform_messages(&messages, &model(), |id, _| id.to_owned());
        assert_eq!(
            summary(&out),
            [
                "user",
                "assistant[\"call_2\", \"call_3\"]",
                "result call_2 false ",
                "result call_3 true No result provided",
                "user"
            ]
        );
        assert!(matches!(out[0], Cow::Borrowed(_)));
    }

    #[test]
    fn failed_turns_are_dropped_and_history_end_closes_calls() {
        let messages = vec![
            user("go"),
            assistant("p", vec![call("a")], StopReason::Error),
            assistant("p", vec![call("b")], StopReason::ToolUse),
        ];
        let out = transform_messages(&messages, &model(), |id, _| id.to_owned());
        assert_eq!(
            summary(&out),
            [
                "user",
                "assistant[\"b\"]",
                "result b true No result provided"
            ]
        );
    }

    #[test]
    fn other_models_lose_thinking_and_get_normalised_ids() {
        let thinking = ContentBlock::Thinking(ThinkingContent {
            thinking: "hmm".into(),
            thinking_signature: Some("sig".into()),
            redacted: None,
        });
        let messages = vec![
            assistant(
                "other",
                vec![thinking.clone(), call("a|b")],
                StopReason::ToolUse,
            ),
            result("a|b"),
            assistant("p", vec![thinking.clone()], StopReason::Stop),
        ];
        let out = transform_messages(&messages, &model(), |id, _| id.replace('|', "_"));
        assert_eq!(
            summary(&out),
            ["assistant[\"a_b\"]", "result a_b false ", "assistant[]"]
        );
        let Message::Assistant(first) = &*out[0] else {
            panic!()
        };
        assert_eq!(first.content.len(), 1);
        let Message::Assistant(own) = &*out[2] else {
            panic!()
        };
        assert_eq!(own.content, vec![thinking]);
    }

    #[test]
    fn images_become_one_placeholder_per_run() {
        let blocks = vec![
            ContentBlock::image("AA", "image/png"),
            ContentBlock::image("BB", "image/png"),
            ContentBlock::text("x"),
            ContentBlock::image("CC", "image/png"),
        ];
        let out = replace_images_with(&blocks, USER_IMAGE_PLACEHOLDER);
        assert_eq!(
            out,
            vec![
                ContentBlock::text(USER_IMAGE_PLACEHOLDER),
                ContentBlock::text("x"),
                ContentBlock::text(USER_IMAGE_PLACEHOLDER),
            ]
        );
    }

    #[test]
    fn audio_and_embedded_resources_reach_the_model_as_text_and_images() {
        let media = Message::from(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![
                ContentBlock::audio("UklG", "audio/wav"),
                ContentBlock::resource_text("test://a", "text/plain", "the text"),
                ContentBlock::resource_blob("test://b", "image/png", "iVBO"),
                ContentBlock::resource_blob("test://c", "application/zip", "UEsD"),
            ],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: 0,
        });
        let messages = [assistant("p", vec![call("c1")], StopReason::ToolUse), media];
        let mut seeing = model();
        seeing.supports_images = true;
        let out = transform_messages(&messages, &seeing, |id, _| id.to_owned());
        let Message::ToolResult(lowered) = &*out[1] else {
            panic!("a result: {out:?}");
        };
        assert_eq!(
            lowered.content,
            [
                ContentBlock::text("[audio audio/wav omitted]"),
                ContentBlock::text("the text"),
                ContentBlock::image("iVBO", "image/png"),
                ContentBlock::text("[binary resource test://c (application/zip) omitted]"),
            ]
        );
        // A model without image input gets the image's placeholder as well.
        let out = transform_messages(&messages, &model(), |id, _| id.to_owned());
        let Message::ToolResult(blind) = &*out[1] else {
            panic!("a result: {out:?}");
        };
        assert_eq!(blind.content[2], ContentBlock::text(TOOL_IMAGE_PLACEHOLDER));
    }
}
