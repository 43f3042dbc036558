//! The `google-generative-ai` API (Gemini): wire types, request conversion and stream
//! parsing.

pub(crate) mod request;
pub(crate) mod stream;

use serde_json::Value;

use crate::provider::Model;
use crate::provider::wire::{StreamParser, WireApi};
use crate::stream::{Context, StreamOptions};

/// `POST {base}/models/{id}:streamGenerateContent?alt=sse` (the base URL ends with the
/// version, e.g. `.../v1beta`) with `x-goog-api-key`.
#[derive(Debug)]
pub(crate) struct GenerateContent;

impl WireApi for GenerateContent {
    fn path(&self, model: &Model) -> String {
        format!("models/{}:streamGenerateContent?alt=sse", model.id)
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("x-goog-api-key", key.to_owned())
    }

    fn body(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Value, String> {
        request::build_request(model, context, options)
    }

    fn parser(&self, _model: &Model) -> Box<dyn StreamParser> {
        Box::new(stream::ChunkParser::new())
    }
}
