//! Model presets (OpenAI, DeepSeek, Anthropic, Google) and API keys from the environment.
