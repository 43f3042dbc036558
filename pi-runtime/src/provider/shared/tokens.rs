//! The output token limit of a request, fitted into the model's context window with a
//! margin for the input being counted higher than estimated (pi's `clampMaxTokensToContext`
//! and `estimateContextTokens`).

use crate::message::{ContentBlock, Message, UserContent};
use crate::provider::Model;
use crate::stream::{Context, StreamOptions};

/// Estimation: characters (UTF-16 units, as pi counts) per token.
const CHARS_PER_TOKEN: f64 = 3.5;
/// What one image counts as, in characters.
const IMAGE_CHARS: usize = 4800;
/// Always left free besides the estimated input.
const SAFETY_TOKENS: i64 = 4096;
/// Some routers count input up to 12% higher than the provider does.
const SAFETY_RATIO: f64 = 0.15;
/// The ratio margin is kept only while it leaves at least this much output.
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32768;

/// The request's output limit (the option, else the model's), fitted into the context
/// window.
pub(crate) fn max_tokens(model: &Model, context: &Context, options: &StreamOptions) -> u32 {
    fit_to_context(
        model,
        context,
        options.max_tokens.unwrap_or(model.max_tokens),
    )
}

/// `max_tokens`, lowered so that the estimated input plus a margin fit into the window;
/// never below 1.
pub(crate) fn fit_to_context(model: &Model, context: &Context, max_tokens: u32) -> u32 {
    if model.context_window == 0 {
        return max_tokens.max(1);
    }
    let window = i64::from(model.context_window);
    let input = estimate_context_tokens(context);
    let margin = SAFETY_TOKENS.max(ceil_ratio(input));
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - SAFETY_TOKENS);
    }
    let room = u32::try_from(room.max(1)).unwrap_or(u32::MAX);
    max_tokens.min(room)
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "token estimates are far below 2^52"
)]
fn ceil_ratio(input: i64) -> i64 {
    (input as f64 * SAFETY_RATIO).ceil() as i64
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    reason = "character counts are far below 2^52"
)]
fn tokens_of(chars: usize) -> i64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as i64
}

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The input estimate: the last usable reported usage plus estimates of what came after it,
/// or estimates of everything.
fn estimate_context_tokens(context: &Context) -> i64 {
    let messages = &context.messages;
    if let Some((index, used)) = last_reported_usage(messages) {
        return used
            + messages[index + 1..]
                .iter()
                .map(estimate_message)
                .sum::<i64>();
    }
    estimate_system(context) + messages.iter().map(estimate_message).sum::<i64>()
}

/// The last assistant message whose usage still describes the prefix: not failed, non-zero,
/// and not older than a message before it (a compaction summary inserted later resets it).
fn last_reported_usage(messages: &[Message]) -> Option<(usize, i64)> {
    let mut latest = 0u64;
    let mut found = None;
    for (index, message) in messages.iter().enumerate() {
        let timestamp = match message {
            Message::User(m) => m.timestamp,
            Message::System(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
            Message::Assistant(m) => {
                let usage = &m.usage;
                let total = if usage.total_tokens > 0 {
                    usage.total_tokens
                } else {
                    usage.input + usage.output + usage.cache_read + usage.cache_write
                };
                if m.timestamp >= latest && !m.stop_reason.is_failure() && total > 0 {
                    found = Some((index, i64::try_from(total).unwrap_or(i64::MAX)));
                }
                m.timestamp
            }
        };
        latest = latest.max(timestamp);
    }
    found
}

/// The leading system message pi builds from the prompt and the tool declarations.
fn estimate_system(context: &Context) -> i64 {
    tokens_of(utf16_len(&context.system_prompt)) + estimate_declarations(&context.tools)
}

/// A list of tool declarations (or removals) as pi counts it: its JSON text.
fn estimate_declarations<T: serde::Serialize>(tools: &[T]) -> i64 {
    if tools.is_empty() {
        return 0;
    }
    serde_json::to_string(tools).map_or(0, |text| tokens_of(utf16_len(&text)))
}

fn estimate_message(message: &Message) -> i64 {
    match message {
        Message::User(user) => match &user.content {
            UserContent::Text(text) => tokens_of(utf16_len(text)),
            UserContent::Blocks(blocks) => tokens_of(content_chars(blocks)),
        },
        Message::ToolResult(result) => tokens_of(content_chars(&result.content)),
        Message::System(system) => {
            tokens_of(utf16_len(&crate::transcript::render_leading(system)))
                + estimate_declarations(system.added())
                + estimate_declarations(system.removed())
        }
        Message::Assistant(assistant) => {
            let chars = assistant
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text(t) => utf16_len(&t.text),
                    ContentBlock::Thinking(t) => utf16_len(&t.thinking),
                    ContentBlock::ToolCall(c) => {
                        utf16_len(&c.name) + utf16_len(&c.arguments.to_string())
                    }
                    ContentBlock::Image(_) | ContentBlock::Audio(_) | ContentBlock::Resource(_) => {
                        IMAGE_CHARS
                    }
                })
                .sum();
            tokens_of(chars)
        }
    }
}

fn content_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => utf16_len(&t.text),
            _ => IMAGE_CHARS,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserMessage;
    use crate::provider::{Api, Compat};

    fn model(context_window: u32) -> Model {
        Model {
            id: "m".into(),
            provider: "p".into(),
            api: Api::OpenAiCompletions,
            base_url: String::new(),
            reasoning: false,
            supports_images: false,
            max_tokens: 384_000,
            context_window,
            compat: Compat::default(),
        }
    }

    fn context(text: &str) -> Context {
        Context {
            system_prompt: "sys".into(),
            messages: vec![Message::from(UserMessage {
                content: UserContent::Text(text.into()),
                timestamp: 1,
            })],
            tools: vec![],
        }
    }

    #[test]
    fn a_large_limit_is_cut_to_the_window() {
        // input: ceil(3/3.5) + ceil(2/3.5) = 2 tokens; margin 4096.
        assert_eq!(
            fit_to_context(&model(128_000), &context("hi"), 384_000),
            123_902
        );
    }

    #[test]
    fn a_nearly_full_window_keeps_the_fixed_margin_only() {
        let text = "x".repeat(350_000); // 100,000 tokens
        let got = fit_to_context(&model(128_000), &context(&text), 384_000);
        // room with the ratio margin: 128,000 - 100,001 - 15,001 < 32,768, so only the fixed
        // margin is kept.
        assert_eq!(got, 128_000 - 100_001 - 4096);
    }

    #[test]
    fn never_below_one_and_no_window_means_no_cut() {
        let text = "x".repeat(3_500_000);
        assert_eq!(fit_to_context(&model(128_000), &context(&text), 1000), 1);
        assert_eq!(fit_to_context(&model(0), &context(&text), 1000), 1000);
    }
}
