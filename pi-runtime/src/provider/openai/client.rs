//! The client: build the request, send it, parse the stream.

use serde_json::{Value, json};

use crate::message::Message;
use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::stream::ChunkParser;

/// A model behind the OpenAI Chat Completions API: OpenAI, DeepSeek, or any compatible
/// server (vLLM, llama.cpp, Ollama) at `model.base_url`.
///
/// ```
/// use pi_runtime::provider::openai::client::OpenAiCompletions;
/// use pi_runtime::provider::http::HttpOptions;
/// use pi_runtime::provider::{Api, Model};
///
/// let model: Model = serde_json::from_value(serde_json::json!({
///     "id": "qwen3", "provider": "local", "api": "openai-completions",
///     "baseUrl": "http://127.0.0.1:8000/v1"
/// }))?;
/// let client = OpenAiCompletions::new(model, HttpOptions::default());
/// assert_eq!(client.model().api, Api::OpenAiCompletions);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompletions {
    endpoint: Endpoint,
}

impl OpenAiCompletions {
    /// A client for `model`, reached as `options` say.
    pub fn new(model: Model, options: HttpOptions) -> Self {
        OpenAiCompletions {
            endpoint: Endpoint::new(model, options),
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.endpoint.model
    }

    /// The transport options.
    pub fn options(&self) -> &HttpOptions {
        &self.endpoint.options
    }

    /// Parse a recorded response body (the SSE text the server sent) exactly as if it had
    /// just arrived over HTTP.
    pub fn replay(&self, body: impl Into<String>) -> AssistantEventStream {
        self.endpoint
            .replay(body.into(), ChunkParser::new(&self.endpoint.model))
    }

    fn request(&self, context: &Context, options: &StreamOptions) -> Result<HttpRequest, String> {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = self.endpoint.api_key()? {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        Ok(HttpRequest {
            url: self.endpoint.url("chat/completions"),
            headers: self.endpoint.headers(headers),
            body: build_request(&self.endpoint.model, context, options)?,
        })
    }
}

impl LanguageModel for OpenAiCompletions {
    fn api(&self) -> &str {
        self.endpoint.model.api.as_str()
    }

    fn provider(&self) -> &str {
        &self.endpoint.model.provider
    }

    fn id(&self) -> &str {
        &self.endpoint.model.id
    }

    fn stream(&self, context: Context, options: StreamOptions) -> AssistantEventStream {
        let request = self.request(&context, &options);
        let parser = ChunkParser::new(&self.endpoint.model);
        self.endpoint.stream(request, parser, options.signal)
    }
}

// until request.rs lands: a minimal Chat Completions body (system prompt, text, tool calls,
// tool results, tools), enough for end-to-end tests. `super::request::build_request`
// replaces it.
fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let mut messages = Vec::new();
    if !context.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": context.system_prompt}));
    }
    for message in &context.messages {
        match message {
            Message::User(user) => {
                let text = match &user.content {
                    crate::message::UserContent::Text(text) => text.clone(),
                    crate::message::UserContent::Blocks(blocks) => {
                        crate::message::join_text(blocks)
                    }
                };
                messages.push(json!({"role": "user", "content": text}));
            }
            Message::Assistant(assistant) => {
                let text = assistant.text();
                let mut entry = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { Value::String(text) },
                });
                let calls: Vec<Value> = assistant
                    .tool_calls()
                    .map(|call| {
                        json!({"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments.to_string()}})
                    })
                    .collect();
                if !calls.is_empty() {
                    entry["tool_calls"] = Value::Array(calls);
                }
                messages.push(entry);
            }
            Message::ToolResult(result) => messages.push(
                json!({"role": "tool", "content": result.text(), "tool_call_id": result.tool_call_id}),
            ),
        }
    }
    let mut body = json!({
        "model": model.id,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !context.tools.is_empty() {
        let tools: Vec<Value> = context
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters}})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(choice) = &options.tool_choice {
        body["tool_choice"] = choice.clone();
    }
    if let Some(max_tokens) = options.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    Ok(body)
}
