//! `Model`: which API, which server, which model, and the compatibility flags that change
//! the wire format.

use serde::{Deserialize, Serialize};

/// The wire API of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Api {
    /// OpenAI Chat Completions and every compatible server (DeepSeek, vLLM, llama.cpp,
    /// Ollama).
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    /// The OpenAI Responses API (`POST /responses`): OpenAI's own models, whose reasoning
    /// is carried from one tool call to the next.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages.
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    /// Google Gemini API.
    #[serde(rename = "google-generative-ai")]
    GoogleGenerativeAi,
}

impl Api {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiCompletions => "openai-completions",
            Api::OpenAiResponses => "openai-responses",
            Api::AnthropicMessages => "anthropic-messages",
            Api::GoogleGenerativeAi => "google-generative-ai",
        }
    }
}

/// Compatibility flags. `None` means "detect from the provider and base URL" (as pi 1.6
/// does: for example a `deepseek.com` URL turns on DeepSeek's fields); `Some` overrides the
/// detection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct Compat {
    /// Send `strict` on OpenAI function tools.
    pub supports_strict_mode: Option<bool>,
    /// OpenAI grammar ("custom") tools.
    #[serde(rename = "supportsOpenAIGrammarTools")]
    pub supports_openai_grammar_tools: Option<bool>,
    /// Send `tools: []` when there are no tools but tool history.
    pub requires_tools_with_tool_history: Option<bool>,
    /// Z.ai's `tool_stream: true`.
    pub zai_tool_stream: Option<bool>,
    /// `stream_options.include_usage`.
    pub supports_usage_in_streaming: Option<bool>,
    /// `store: false`.
    pub supports_store: Option<bool>,
    /// `max_tokens` or `max_completion_tokens`.
    pub max_tokens_field: Option<String>,
    /// The `developer` role for reasoning models.
    pub supports_developer_role: Option<bool>,
    /// A synthetic assistant message between tool results and a user message.
    pub requires_assistant_after_tool_result: Option<bool>,
    /// `""` instead of `null` assistant content.
    pub requires_non_null_assistant_content: Option<bool>,
    /// Replay thinking as text.
    pub requires_thinking_as_text: Option<bool>,
    /// `name` on tool results.
    pub requires_tool_result_name: Option<bool>,
    /// The reasoning parameter format (`deepseek`, ...).
    pub thinking_format: Option<String>,
    /// DeepSeek: `reasoning_content` on every replayed assistant message.
    pub requires_reasoning_content_on_assistant_messages: Option<bool>,
    /// `reasoning_effort`.
    pub supports_reasoning_effort: Option<bool>,
    /// Maps requested levels to provider levels (`null`: unsupported level).
    pub thinking_level_map: Option<serde_json::Map<String, serde_json::Value>>,
    /// The server sends `finish_reason`.
    pub supports_finish_reason: Option<bool>,
    /// Anthropic strict tools.
    pub supports_strict_tools: Option<bool>,
    /// Anthropic `eager_input_streaming` on tools.
    pub supports_eager_tool_input_streaming: Option<bool>,
    /// `openai-responses`: whether `prompt_cache_key` (the session id) is sent while caching
    /// is on. `disabled` never sends it (for servers that reject the field); `auto`, the
    /// default, and `enabled` send it.
    pub prompt_cache_key_mode: Option<PromptCacheKeyMode>,
    /// `openai-responses`: the server accepts long cache retention
    /// (`prompt_cache_retention: "24h"`, or `prompt_cache_options.ttl` in explicit mode).
    /// Default `true`; with `false`, long retention sends no retention field.
    pub supports_long_cache_retention: Option<bool>,
    /// `openai-responses`: the model takes `prompt_cache_options` (OpenAI's explicit prompt
    /// cache mode) instead of `prompt_cache_retention`. Default `false`: older models reject
    /// the field.
    pub supports_explicit_prompt_cache_mode: Option<bool>,
    /// System messages after the first stay in place (Anthropic, Responses, Chat Completions;
    /// default off): otherwise every system message is folded into the leading one, and the
    /// request declares the current tools.
    pub supports_mid_convo_system_messages: Option<bool>,
    /// Anthropic: tool changes as `tool_addition` / `tool_removal` blocks of system messages
    /// (the `inline-tools-2026-09-15` beta), so the request's tool list, and the prompt cache,
    /// never change. Needs mid-conversation system messages and a tool in the leading one.
    pub supports_mid_convo_tool_changes: Option<bool>,
    /// Responses: every tool declared in `additional_tools` input items where it changes,
    /// removals announced in text. Needs mid-conversation system messages.
    pub supports_additional_tools: Option<bool>,
    /// Responses: tool additions as client `tool_search_call` / `tool_search_output` pairs; a
    /// removal or redeclaration moves the request's tool list instead.
    pub supports_tool_search: Option<bool>,
    /// Chat Completions (Kimi): tool additions as `{"role":"system","tools":[...]}` messages;
    /// a removal or redeclaration moves the request's tool list instead. Needs
    /// mid-conversation system messages.
    pub supports_mid_convo_tool_additions: Option<bool>,
    /// Chat Completions: the server honours a `tool_choice` naming one function. Default
    /// `true`. With `false` (llama.cpp reads a named choice as `auto`), a
    /// [`ToolChoice::Tool`](crate::ToolChoice::Tool) is sent as `"required"` with the
    /// request's tools narrowed to the named one and `parallel_tool_calls: false` (unless
    /// the request sets it), so the model makes one call of that tool.
    pub supports_named_tool_choice: Option<bool>,
}

/// When a request carries a prompt cache key ([`Compat::prompt_cache_key_mode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PromptCacheKeyMode {
    /// As the API decides (for `openai-responses`: whenever caching is on).
    #[default]
    Auto,
    /// Whenever caching is on.
    Enabled,
    /// Never: the server rejects the field.
    Disabled,
}

/// A model on a server: everything a provider adapter needs to build and send a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Model {
    /// The model id sent to the server.
    pub id: String,
    /// The provider (`openai`, `deepseek`, `anthropic`, `google`, or any name).
    pub provider: String,
    /// The wire API.
    pub api: Api,
    /// The server's base URL; point it at any compatible server.
    pub base_url: String,
    /// The model reasons (thinking).
    #[serde(default)]
    pub reasoning: bool,
    /// The model accepts images.
    #[serde(default)]
    pub supports_images: bool,
    /// Output token limit when the request gives none.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Input plus output tokens the model can hold; a request's output limit is lowered to
    /// fit the estimated input into it. `0` means unknown (no lowering).
    #[serde(default = "default_context_window")]
    pub context_window: u32,
    /// Compatibility flags.
    #[serde(default)]
    pub compat: Compat,
}

impl Model {
    /// The model `id` of `provider`, spoken to in `api` at `base_url`, with the defaults of
    /// a model description that names nothing else: no reasoning, no images, 8192 output
    /// tokens, a 128k context window and default compatibility flags.
    ///
    /// ```
    /// use pi_runtime::provider::{Api, Model};
    ///
    /// let mut model = Model::new(Api::OpenAiCompletions, "local", "qwen3", "http://127.0.0.1:8080/v1");
    /// model.reasoning = true;
    /// assert_eq!(model.max_tokens, 8192);
    /// ```
    pub fn new(
        api: Api,
        provider: impl Into<String>,
        id: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        Model {
            id: id.into(),
            provider: provider.into(),
            api,
            base_url: base_url.into(),
            reasoning: false,
            supports_images: false,
            max_tokens: default_max_tokens(),
            context_window: default_context_window(),
            compat: Compat::default(),
        }
    }
}

fn default_max_tokens() -> u32 {
    8192
}

fn default_context_window() -> u32 {
    128_000
}
