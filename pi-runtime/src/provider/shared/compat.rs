//! Compatibility detection from the provider and base URL, as pi 1.6 detects it: every
//! `Option` of [`Compat`](super::Compat) resolved into the value a request uses.

use crate::provider::{Model, PromptCacheKeyMode};

/// Where an OpenAI-compatible server takes its output token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaxTokensField {
    /// `max_tokens` (deprecated by OpenAI, the only one some servers accept).
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

/// How an OpenAI-compatible server takes the reasoning switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThinkingFormat {
    /// OpenAI's `reasoning_effort`.
    OpenAi,
    /// DeepSeek's `thinking: {type}` plus `reasoning_effort`.
    DeepSeek,
    /// Z.ai's `thinking: {type, clear_thinking}`.
    Zai,
    /// Together's `reasoning: {enabled}`.
    Together,
    /// OpenRouter's `reasoning: {effort}`.
    OpenRouter,
}

impl ThinkingFormat {
    fn parse(name: &str) -> Self {
        match name {
            "deepseek" => ThinkingFormat::DeepSeek,
            "zai" => ThinkingFormat::Zai,
            "together" => ThinkingFormat::Together,
            "openrouter" => ThinkingFormat::OpenRouter,
            _ => ThinkingFormat::OpenAi,
        }
    }
}

/// The effective flags of an `openai-completions` model.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one independent switch per server quirk, as pi's compat table has"
)]
pub(crate) struct OpenAiCompat {
    pub(crate) supports_store: bool,
    pub(crate) supports_developer_role: bool,
    pub(crate) supports_reasoning_effort: bool,
    pub(crate) supports_usage_in_streaming: bool,
    pub(crate) max_tokens_field: MaxTokensField,
    pub(crate) requires_tool_result_name: bool,
    pub(crate) requires_assistant_after_tool_result: bool,
    pub(crate) requires_non_null_assistant_content: bool,
    pub(crate) requires_tools_with_tool_history: bool,
    pub(crate) requires_thinking_as_text: bool,
    pub(crate) requires_reasoning_content_on_assistant_messages: bool,
    pub(crate) thinking_format: ThinkingFormat,
    pub(crate) zai_tool_stream: bool,
    pub(crate) supports_strict_mode: bool,
    pub(crate) supports_openai_grammar_tools: bool,
    pub(crate) supports_mid_convo_system_messages: bool,
    pub(crate) supports_mid_convo_tool_additions: bool,
    pub(crate) supports_named_tool_choice: bool,
}

impl OpenAiCompat {
    /// Detect from the provider and base URL, then apply the model's explicit flags.
    pub(crate) fn resolve(model: &Model) -> Self {
        let provider = model.provider.as_str();
        let url = model.base_url.as_str();
        let zai = matches!(provider, "zai" | "zai-coding-cn")
            || url.contains("api.z.ai")
            || url.contains("open.bigmodel.cn");
        let together = provider == "together"
            || url.contains("api.together.ai")
            || url.contains("api.together.xyz");
        let moonshot =
            matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
        let openrouter = provider == "openrouter" || url.contains("openrouter.ai");
        let cloudflare_workers =
            provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
        let cloudflare_gateway =
            provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
        let nvidia = provider == "nvidia" || url.contains("integrate.api.nvidia.com");
        let ant_ling = provider == "ant-ling" || url.contains("api.ant-ling.com");
        let cerebras = provider == "cerebras" || url.contains("cerebras.ai");
        let deepseek = is_deepseek(model);
        let grok = provider == "xai" || url.contains("api.x.ai");
        let chutes = url.contains("chutes.ai");
        let opencode = provider == "opencode" || url.contains("opencode.ai");
        let non_standard = nvidia
            || cerebras
            || grok
            || together
            || chutes
            || deepseek
            || zai
            || moonshot
            || opencode
            || cloudflare_workers
            || cloudflare_gateway
            || ant_ling;
        let use_max_tokens = chutes
            || deepseek
            || moonshot
            || cloudflare_gateway
            || together
            || nvidia
            || ant_ling
            || zai;
        let openai = provider == "openai" || url.contains("api.openai.com");
        let detected_format = if deepseek {
            ThinkingFormat::DeepSeek
        } else if zai {
            ThinkingFormat::Zai
        } else if together {
            ThinkingFormat::Together
        } else if openrouter {
            ThinkingFormat::OpenRouter
        } else {
            ThinkingFormat::OpenAi
        };

        let c = &model.compat;
        let max_tokens_field = match c.max_tokens_field.as_deref() {
            Some("max_tokens") => MaxTokensField::MaxTokens,
            Some(_) => MaxTokensField::MaxCompletionTokens,
            None if use_max_tokens => MaxTokensField::MaxTokens,
            None => MaxTokensField::MaxCompletionTokens,
        };
        OpenAiCompat {
            supports_store: c.supports_store.unwrap_or(!non_standard),
            supports_developer_role: c.supports_developer_role.unwrap_or(openai),
            supports_reasoning_effort: c.supports_reasoning_effort.unwrap_or(
                !grok
                    && !zai
                    && !moonshot
                    && !together
                    && !cloudflare_gateway
                    && !nvidia
                    && !ant_ling,
            ),
            supports_usage_in_streaming: c.supports_usage_in_streaming.unwrap_or(true),
            max_tokens_field,
            requires_tool_result_name: c.requires_tool_result_name.unwrap_or(false),
            requires_assistant_after_tool_result: c
                .requires_assistant_after_tool_result
                .unwrap_or(false),
            requires_non_null_assistant_content: c
                .requires_non_null_assistant_content
                .unwrap_or(false),
            requires_tools_with_tool_history: c.requires_tools_with_tool_history.unwrap_or(false),
            requires_thinking_as_text: c.requires_thinking_as_text.unwrap_or(false),
            requires_reasoning_content_on_assistant_messages: c
                .requires_reasoning_content_on_assistant_messages
                .unwrap_or(deepseek),
            thinking_format: c
                .thinking_format
                .as_deref()
                .map_or(detected_format, ThinkingFormat::parse),
            zai_tool_stream: c.zai_tool_stream.unwrap_or(false),
            // Compatibility alone does not imply strict support (pi 1.6 detects `false` for
            // every OpenAI-compatible host); a model's own flag turns it on.
            supports_strict_mode: c.supports_strict_mode.unwrap_or(false),
            supports_openai_grammar_tools: c.supports_openai_grammar_tools.unwrap_or(false),
            // pi 1.6 detects neither for any host: only Kimi's own models are known to take them.
            supports_mid_convo_system_messages: c
                .supports_mid_convo_system_messages
                .unwrap_or(false),
            supports_mid_convo_tool_additions: c.supports_mid_convo_tool_additions.unwrap_or(false),
            // Not a pi flag: no host is detected, a model that needs it says so.
            supports_named_tool_choice: c.supports_named_tool_choice.unwrap_or(true),
        }
    }
}

/// DeepSeek: provider `deepseek` or a `deepseek.com` base URL, in any case.
pub(crate) fn is_deepseek(model: &Model) -> bool {
    model.provider == "deepseek" || model.base_url.to_ascii_lowercase().contains("deepseek.com")
}

/// The effective flags of an `anthropic-messages` model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one independent switch per server quirk, as pi's compat table has"
)]
pub(crate) struct AnthropicCompat {
    /// `eager_input_streaming: true` on tools (else the fine-grained streaming beta).
    pub(crate) supports_eager_tool_input_streaming: bool,
    /// Strict tools (default off, as in pi: Anthropic refuses some schemas in strict mode).
    pub(crate) supports_strict_tools: bool,
    /// System messages after the first stay in place (else they are folded).
    pub(crate) supports_mid_convo_system_messages: bool,
    /// Tool changes as `tool_addition` / `tool_removal` blocks.
    pub(crate) supports_mid_convo_tool_changes: bool,
}

impl AnthropicCompat {
    pub(crate) fn resolve(model: &Model) -> Self {
        AnthropicCompat {
            supports_eager_tool_input_streaming: model
                .compat
                .supports_eager_tool_input_streaming
                .unwrap_or(true),
            supports_strict_tools: model.compat.supports_strict_tools.unwrap_or(false),
            supports_mid_convo_system_messages: model
                .compat
                .supports_mid_convo_system_messages
                .unwrap_or(false),
            supports_mid_convo_tool_changes: model
                .compat
                .supports_mid_convo_tool_changes
                .unwrap_or(false),
        }
    }
}

/// The effective flags of an `openai-responses` model (pi 1.6 detects nothing here: every
/// flag has a fixed default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one independent switch per server capability, as pi's compat table has"
)]
pub(crate) struct ResponsesCompat {
    /// `strict` on function tools (default off: without it no `strict` field is sent).
    pub(crate) supports_strict_mode: bool,
    /// `prompt_cache_key` while caching is on (`promptCacheKeyMode` not `disabled`).
    pub(crate) sends_prompt_cache_key: bool,
    /// Long retention is sent at all (`supportsLongCacheRetention`, default on).
    pub(crate) supports_long_cache_retention: bool,
    /// `prompt_cache_options` instead of `prompt_cache_retention`
    /// (`supportsExplicitPromptCacheMode`, default off).
    pub(crate) supports_explicit_prompt_cache_mode: bool,
}

impl ResponsesCompat {
    pub(crate) fn resolve(model: &Model) -> Self {
        let c = &model.compat;
        ResponsesCompat {
            supports_strict_mode: c.supports_strict_mode.unwrap_or(false),
            sends_prompt_cache_key: c.prompt_cache_key_mode != Some(PromptCacheKeyMode::Disabled),
            supports_long_cache_retention: c.supports_long_cache_retention.unwrap_or(true),
            supports_explicit_prompt_cache_mode: c
                .supports_explicit_prompt_cache_mode
                .unwrap_or(false),
        }
    }
}

/// The major version of a `gemini-<N>...` (or `gemini-live-<N>...`) model id.
pub(crate) fn gemini_major_version(model_id: &str) -> Option<u32> {
    let id = model_id.to_ascii_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Api, Compat};

    fn model(provider: &str, base_url: &str, compat: Compat) -> Model {
        Model {
            id: "m".into(),
            provider: provider.into(),
            api: Api::OpenAiCompletions,
            base_url: base_url.into(),
            reasoning: true,
            supports_images: false,
            max_tokens: 8192,
            context_window: 128_000,
            compat,
        }
    }

    #[test]
    fn deepseek_is_detected_from_the_base_url_in_any_case() {
        let c = OpenAiCompat::resolve(&model(
            "custom",
            "https://API.DeepSeek.com/v1",
            Compat::default(),
        ));
        assert_eq!(c.thinking_format, ThinkingFormat::DeepSeek);
        assert!(c.requires_reasoning_content_on_assistant_messages);
        assert!(!c.supports_store);
        assert!(!c.supports_developer_role);
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxTokens);
        assert!(c.supports_reasoning_effort);
        assert!(!c.supports_strict_mode);
    }

    #[test]
    fn openai_gets_store_and_the_developer_role() {
        let c = OpenAiCompat::resolve(&model("openai", "http://127.0.0.1:9", Compat::default()));
        assert!(c.supports_store);
        assert!(c.supports_developer_role);
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxCompletionTokens);
        assert_eq!(c.thinking_format, ThinkingFormat::OpenAi);
    }

    #[test]
    fn explicit_flags_win_over_detection() {
        let compat = Compat {
            supports_strict_mode: Some(true),
            supports_store: Some(false),
            max_tokens_field: Some("max_tokens".into()),
            ..Compat::default()
        };
        let c = OpenAiCompat::resolve(&model("openai", "", compat));
        assert!(c.supports_strict_mode);
        assert!(!c.supports_store);
        assert_eq!(c.max_tokens_field, MaxTokensField::MaxTokens);
    }

    #[test]
    fn responses_flags_default_as_pi_does() {
        let mut m = model("openai", "", Compat::default());
        m.api = Api::OpenAiResponses;
        let c = ResponsesCompat::resolve(&m);
        assert!(c.sends_prompt_cache_key && c.supports_long_cache_retention);
        assert!(!c.supports_explicit_prompt_cache_mode && !c.supports_strict_mode);
        for (mode, sends) in [
            (PromptCacheKeyMode::Auto, true),
            (PromptCacheKeyMode::Enabled, true),
            (PromptCacheKeyMode::Disabled, false),
        ] {
            m.compat.prompt_cache_key_mode = Some(mode);
            assert_eq!(ResponsesCompat::resolve(&m).sends_prompt_cache_key, sends);
        }
    }

    #[test]
    fn gemini_versions() {
        assert_eq!(gemini_major_version("gemini-3-pro-preview"), Some(3));
        assert_eq!(gemini_major_version("gemini-2.5-flash"), Some(2));
        assert_eq!(gemini_major_version("Gemini-Live-12-x"), Some(12));
        assert_eq!(gemini_major_version("gemini-flash-latest"), None);
        assert_eq!(gemini_major_version("claude-x"), None);
    }
}
