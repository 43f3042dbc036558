//! The `openai-completions` API (OpenAI Chat Completions and compatible servers): wire
//! types, request conversion and stream parsing.

pub(crate) mod request;
pub(crate) mod stream;

use serde_json::Value;

use crate::provider::Model;
use crate::provider::wire::{StreamParser, WireApi};
use crate::stream::{Context, StreamOptions};

/// `POST {base}/chat/completions` with a bearer key.
#[derive(Debug)]
pub(crate) struct Completions;

impl WireApi for Completions {
    fn path(&self, _model: &Model) -> String {
        "chat/completions".to_owned()
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn body(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Value, String> {
        request::build_request(model, context, options)
    }

    fn parser(&self, model: &Model) -> Box<dyn StreamParser> {
        Box::new(stream::ChunkParser::new(model))
    }
}
