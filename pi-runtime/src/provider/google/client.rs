//! The client: build the request, send it, parse the stream.

use crate::provider::Model;
use crate::provider::http::{Endpoint, HttpOptions, HttpRequest};
use crate::stream::{AssistantEventStream, Context, LanguageModel, StreamOptions};

use super::request::build_request;
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
