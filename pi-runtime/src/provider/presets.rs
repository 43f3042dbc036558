//! Model presets (OpenAI, DeepSeek, Anthropic, Google) and API keys from the environment.
//!
//! A preset is a [`Model`] plus [`HttpOptions`] with the provider's server, API and key
//! variable filled in; change anything before [`build`](Preset::build):
//!
//! ```
//! use pi_runtime::LanguageModel;
//! use pi_runtime::provider::http::HttpModel;
//! use pi_runtime::provider::presets;
//!
//! // The key comes from DEEPSEEK_API_KEY unless given.
//! let model = presets::deepseek_chat().api_key("sk-test").build();
//! assert_eq!((model.provider(), model.id()), ("deepseek", "deepseek-chat"));
//!
//! // OpenAI's own models speak the Responses API ...
//! assert_eq!(presets::openai("gpt-5-mini").build().api(), "openai-responses");
//!
//! // ... and any OpenAI-compatible server Chat Completions: point the base URL at it.
//! let local = presets::openai_completions("qwen3")
//!     .base_url("http://127.0.0.1:8000/v1")
//!     .build();
//! assert_eq!(local.api(), "openai-completions");
//!
//! // The model itself rather than a shared trait object: `HttpModel::from(preset)`.
//! let claude = HttpModel::from(presets::anthropic("claude-sonnet-4-5"));
//! assert_eq!(claude.model().base_url, presets::ANTHROPIC_BASE_URL);
//! ```
//!
//! # OpenAI: Responses or Chat Completions
//!
//! | preset | API | choose it for |
//! |---|---|---|
//! | [`openai`] | `openai-responses` (`POST /responses`) | OpenAI's own models, reasoning models above all |
//! | [`openai_completions`] | `openai-completions` (`POST /chat/completions`) | DeepSeek and every OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenRouter, ...), or OpenAI when Chat Completions is wanted |
//!
//! The Responses API is what pi speaks to OpenAI. A reasoning model's reasoning survives a
//! tool call only there: each reasoning item comes back encrypted and is sent again with
//! the call's result, so the model continues its thought instead of starting over (Chat
//! Completions drops it at every call). Reasoning is asked for, and so replayed, when the
//! request has a thinking level (`Agent::builder().thinking_level(..)`). Few servers besides
//! OpenAI's implement Responses; for them, use [`openai_completions`].

use std::sync::Arc;
use std::time::Duration;

use crate::provider::http::{HttpModel, HttpOptions, RetryPolicy};
use crate::provider::{Api, Compat, Model};
use crate::stream::LanguageModel;

/// OpenAI's API server (Responses and Chat Completions).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// DeepSeek's server.
pub const DEEPSEEK_BASE_URL: &str = "https://api.deepseek.com";
/// Anthropic's server (the client adds `/v1/messages`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The Gemini API.
pub const GOOGLE_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A model and how to reach it, ready to [`build`](Preset::build).
#[derive(Debug, Clone)]
pub struct Preset {
    /// The model (change `reasoning`, `max_tokens`, `compat`, ... freely).
    pub model: Model,
    /// Key, headers, retries and timeouts.
    pub options: HttpOptions,
}

impl Preset {
    fn new(provider: &str, api: Api, id: &str, base_url: &str, key_var: &str) -> Self {
        let options = HttpOptions {
            api_key: std::env::var(key_var).ok().filter(|key| !key.is_empty()),
            api_key_env: Some(key_var.to_owned()),
            ..HttpOptions::default()
        };
        Preset {
            model: Model {
                id: id.to_owned(),
                provider: provider.to_owned(),
                api,
                base_url: base_url.to_owned(),
                reasoning: false,
                supports_images: false,
                max_tokens: 8192,
                context_window: 128_000,
                compat: Compat::default(),
            },
            options,
        }
    }

    /// Use this key instead of the environment's.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.options.api_key = Some(key.into());
        self
    }

    /// Send no key at all (a local server); requests no longer fail for a missing one.
    #[must_use]
    pub fn no_api_key(mut self) -> Self {
        self.options.api_key = None;
        self.options.api_key_env = None;
        self
    }

    /// Talk to another server that speaks the same API.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.model.base_url = url.into();
        self
    }

    /// Retries before the first byte.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.options.retry = retry;
        self
    }

    /// The longest silence from the server (response head, or between two body pieces).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.options.read_timeout = timeout;
        self
    }

    /// The longest a whole response may take, retries included.
    #[must_use]
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.options.response_timeout = timeout;
        self
    }

    /// The model, shared, ready for `Agent::builder().model(...)`.
    pub fn build(self) -> Arc<dyn LanguageModel> {
        Arc::new(HttpModel::from(self))
    }
}

/// The model itself, for what only an [`HttpModel`] offers (`replay`, `options`).
impl From<Preset> for HttpModel {
    fn from(preset: Preset) -> Self {
        HttpModel::new(preset.model, preset.options)
    }
}

/// An OpenAI model (`gpt-5-mini`, `gpt-4.1`, `o4-mini`, ...) over the Responses API; key
/// from `OPENAI_API_KEY`. Tools may be strict and results may carry images. The reasoning
/// families (`gpt-5` and later, except the `-chat` ones, and `o1`/`o3`/`o4`) are marked as
/// reasoning; without a thinking level their requests leave the effort to the server.
///
/// For an OpenAI-compatible server, use [`openai_completions`]: few of them speak Responses.
pub fn openai(id: &str) -> Preset {
    let mut preset = Preset::new(
        "openai",
        Api::OpenAiResponses,
        id,
        OPENAI_BASE_URL,
        "OPENAI_API_KEY",
    );
    preset.model.supports_images = true;
    preset.model.compat.supports_strict_mode = Some(true);
    if is_openai_reasoning_model(id) {
        preset.model.reasoning = true;
        // Not every reasoning model can turn reasoning off (`effort: "none"` is an error on
        // gpt-5 and the o-series): without a level, send no effort at all.
        preset.model.compat.thinking_level_map = Some(serde_json::Map::from_iter([(
            "off".to_owned(),
            serde_json::Value::Null,
        )]));
    }
    preset
}

/// An OpenAI model over Chat Completions, at OpenAI's server until
/// [`base_url`](Preset::base_url) points it at any compatible one (vLLM, llama.cpp,
/// Ollama, ...); key from `OPENAI_API_KEY`.
pub fn openai_completions(id: &str) -> Preset {
    Preset::new(
        "openai",
        Api::OpenAiCompletions,
        id,
        OPENAI_BASE_URL,
        "OPENAI_API_KEY",
    )
}

/// `gpt-<5 or later>` (but not a `-chat` model) and `o<digit>...`: the OpenAI models that
/// reason.
fn is_openai_reasoning_model(id: &str) -> bool {
    if let Some(rest) = id.strip_prefix("gpt-") {
        let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return major.parse::<u32>().is_ok_and(|major| major >= 5) && !id.contains("-chat");
    }
    id.strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// A DeepSeek model; key from `DEEPSEEK_API_KEY`. The provider name turns on DeepSeek's
/// wire details (`thinking` plus `reasoning_effort`, and `reasoning_content` on replayed
/// assistant messages).
pub fn deepseek(id: &str) -> Preset {
    Preset::new(
        "deepseek",
        Api::OpenAiCompletions,
        id,
        DEEPSEEK_BASE_URL,
        "DEEPSEEK_API_KEY",
    )
}

/// `deepseek-chat`.
pub fn deepseek_chat() -> Preset {
    deepseek("deepseek-chat")
}

/// `deepseek-reasoner`: streams its reasoning as `reasoning_content`.
pub fn deepseek_reasoner() -> Preset {
    let mut preset = deepseek("deepseek-reasoner");
    preset.model.reasoning = true;
    preset
}

/// An Anthropic model (`claude-sonnet-4-5`, ...); key from `ANTHROPIC_API_KEY`.
pub fn anthropic(id: &str) -> Preset {
    Preset::new(
        "anthropic",
        Api::AnthropicMessages,
        id,
        ANTHROPIC_BASE_URL,
        "ANTHROPIC_API_KEY",
    )
}

/// A Gemini model (`gemini-2.5-flash`, ...); key from `GEMINI_API_KEY`.
pub fn google(id: &str) -> Preset {
    Preset::new(
        "google",
        Api::GoogleGenerativeAi,
        id,
        GOOGLE_BASE_URL,
        "GEMINI_API_KEY",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_reasoning_families() {
        for id in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1-codex",
            "gpt-6-luna",
            "o3",
            "o4-mini",
        ] {
            assert!(is_openai_reasoning_model(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-4.1-mini",
            "gpt-5-chat-latest",
            "omni",
            "chat-latest",
        ] {
            assert!(!is_openai_reasoning_model(id), "{id}");
        }
    }
}
