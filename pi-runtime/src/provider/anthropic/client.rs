//! The client: build the request, send it, parse the stream.

use serde_json::{Value, json};

use crate::message::{ContentBlock, Message};
use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::stream::EventParser;

/// The Messages API version this client speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A model behind the Anthropic Messages API (`model.base_url` without `/v1`).
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    endpoint: Endpoint,
}

impl AnthropicMessages {
    /// A client for `model`, reached as `options` say.
    pub fn new(model: Model, options: HttpOptions) -> Self {
        AnthropicMessages {
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
        self.endpoint.replay(body.into(), EventParser::new())
    }

    fn request(&self, context: &Context, options: &StreamOptions) -> Result<HttpRequest, String> {
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ];
        if let Some(key) = self.endpoint.api_key()? {
            headers.push(("x-api-key".to_owned(), key.to_owned()));
        }
        if let Some(beta) = beta_header(&self.endpoint.model, context) {
            headers.push(("anthropic-beta".to_owned(), beta));
        }
        Ok(HttpRequest {
            url: self.endpoint.url("v1/messages"),
            headers: self.endpoint.headers(headers),
            body: build_request(&self.endpoint.model, context, options)?,
        })
    }
}

impl LanguageModel for AnthropicMessages {
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
        self.endpoint
            .stream(request, EventParser::new(), options.signal)
    }
}

// until request.rs lands: no beta header. `super::request::beta_header` replaces it.
fn beta_header(_model: &Model, _context: &Context) -> Option<String> {
    None
}

// until request.rs lands: a minimal Messages body (system prompt, text, tool_use,
// tool_result, tools), enough for end-to-end tests. `super::request::build_request`
// replaces it.
fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let mut messages: Vec<Value> = Vec::new();
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
                let content: Vec<Value> = assistant
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) if !text.text.trim().is_empty() => {
                            Some(json!({"type": "text", "text": text.text}))
                        }
                        ContentBlock::ToolCall(call) => Some(
                            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}),
                        ),
                        _ => None,
                    })
                    .collect();
                if !content.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content}));
                }
            }
            Message::ToolResult(result) => {
                let block = json!({"type": "tool_result", "tool_use_id": result.tool_call_id,
                                   "content": result.text(), "is_error": result.is_error});
                // Consecutive results share one user message.
                match messages.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"][0]["type"] == "tool_result" =>
                    {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    let mut body = json!({
        "model": model.id,
        "max_tokens": options.max_tokens.unwrap_or(model.max_tokens),
        "stream": true,
    });
    if !context.system_prompt.is_empty() {
        body["system"] = json!([{"type": "text", "text": context.system_prompt}]);
    }
    body["messages"] = Value::Array(messages);
    if !context.tools.is_empty() {
        let tools: Vec<Value> = context
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "input_schema": tool.parameters})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    Ok(body)
}
