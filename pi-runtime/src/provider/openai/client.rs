//! The client: build the request, send it, parse the stream.

use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::request::build_request;
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
