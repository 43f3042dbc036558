//! The client: build the request, send it, parse the stream.

use serde_json::{Value, json};

use crate::message::{ContentBlock, Message};
use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::stream::ChunkParser;

/// A model behind the Gemini API (`model.base_url` up to and including the version, e.g.
/// `.../v1beta`).
#[derive(Debug, Clone)]
pub struct GoogleGenerativeAi {
    endpoint: Endpoint,
}

impl GoogleGenerativeAi {
    /// A client for `model`, reached as `options` say.
    pub fn new(model: Model, options: HttpOptions) -> Self {
        GoogleGenerativeAi {
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
        self.endpoint.replay(body.into(), ChunkParser::new())
    }

    fn request(&self, context: &Context, options: &StreamOptions) -> Result<HttpRequest, String> {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = self.endpoint.api_key()? {
            headers.push(("x-goog-api-key".to_owned(), key.to_owned()));
        }
        let path = format!(
            "models/{}:streamGenerateContent?alt=sse",
            self.endpoint.model.id
        );
        Ok(HttpRequest {
            url: self.endpoint.url(&path),
            headers: self.endpoint.headers(headers),
            body: build_request(&self.endpoint.model, context, options)?,
        })
    }
}

impl LanguageModel for GoogleGenerativeAi {
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
            .stream(request, ChunkParser::new(), options.signal)
    }
}

// until request.rs lands: a minimal Gemini REST body (system instruction, text, function
// calls and responses, tools), enough for end-to-end tests. `super::request::build_request`
// replaces it.
fn build_request(
    _model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Value, String> {
    let mut contents: Vec<Value> = Vec::new();
    for message in &context.messages {
        let (role, parts): (&str, Vec<Value>) = match message {
            Message::User(user) => {
                let text = match &user.content {
                    crate::message::UserContent::Text(text) => text.clone(),
                    crate::message::UserContent::Blocks(blocks) => {
                        crate::message::join_text(blocks)
                    }
                };
                ("user", vec![json!({"text": text})])
            }
            Message::Assistant(assistant) => {
                let parts = assistant
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) if !text.text.is_empty() => {
                            Some(json!({"text": text.text}))
                        }
                        ContentBlock::ToolCall(call) => Some(
                            json!({"functionCall": {"name": call.name, "args": call.arguments}}),
                        ),
                        _ => None,
                    })
                    .collect();
                ("model", parts)
            }
            Message::ToolResult(result) => {
                let key = if result.is_error { "error" } else { "output" };
                let part = json!({"functionResponse": {"name": result.tool_name,
                                                       "response": {key: result.text()}}});
                ("user", vec![part])
            }
        };
        if !parts.is_empty() {
            contents.push(json!({"role": role, "parts": parts}));
        }
    }
    let mut body = json!({"contents": contents});
    if !context.system_prompt.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": context.system_prompt}]});
    }
    if !context.tools.is_empty() {
        let declarations: Vec<Value> = context
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "parametersJsonSchema": tool.parameters})
            })
            .collect();
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    if let Some(max_tokens) = options.max_tokens {
        body["generationConfig"] = json!({"maxOutputTokens": max_tokens});
    }
    Ok(body)
}
