//! The client: build the request, send it, parse the stream.

use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::request::{beta_header, build_request};
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
