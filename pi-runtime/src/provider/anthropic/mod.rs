//! The `anthropic-messages` API: wire types, request conversion and stream parsing.

pub(crate) mod request;
pub(crate) mod stream;
mod wire;

use serde_json::Value;

use crate::provider::Model;
use crate::provider::wire::{StreamParser, WireApi};
use crate::stream::{Context, StreamOptions};

/// The Messages API version this runtime speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `POST {base}/v1/messages` (the base URL is without `/v1`) with `x-api-key`.
#[derive(Debug)]
pub(crate) struct Messages;

impl WireApi for Messages {
    fn path(&self, _model: &Model) -> String {
        "v1/messages".to_owned()
    }

    fn auth(&self, key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_owned())
    }

    fn headers(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Vec<(String, String)> {
        let mut headers = vec![("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned())];
        if let Some(beta) = request::beta_header(model, context, options) {
            headers.push(("anthropic-beta".to_owned(), beta));
        }
        headers
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
        Box::new(stream::EventParser::new(&model.id))
    }
}
