//! The `openai-responses` API (the OpenAI Responses API, `POST /responses`): wire types,
//! request conversion and stream parsing.
//!
//! OpenAI's reasoning models keep their reasoning from one tool call to the next only
//! through this API. Nothing is stored on OpenAI's side (`store: false`): each reasoning item
//! arrives with its `encrypted_content`, is kept as the thinking block's signature (the
//! item's JSON, as it arrived), and is sent back verbatim in the next request's `input`,
//! next to the `function_call` and `function_call_output` items of the calls it led to.
//!
//! Tool-call ids are pi's composite `"<call_id>|<item id>"`: the call id pairs a call with
//! its output, the item id (`fc_...`) pairs it with the reasoning that produced it.
//!
//! Prompt caching follows the model's compat flags: `prompt_cache_key` (the
//! session id) unless [`prompt_cache_key_mode`](crate::provider::Compat::prompt_cache_key_mode)
//! is `disabled`; `prompt_cache_retention: "24h"` for long retention unless
//! [`supports_long_cache_retention`](crate::provider::Compat::supports_long_cache_retention)
//! is `false`; `prompt_cache_options` instead with
//! [`supports_explicit_prompt_cache_mode`](crate::provider::Compat::supports_explicit_prompt_cache_mode).
//! An error status is reported in pi's words: `OpenAI API error (400): {"message":...}`.
//!
//! Not yet supported: OpenAI grammar (`custom`) tools; a grammar tool is sent as a function
//! tool.

mod error;
pub(crate) mod request;
pub(crate) mod stream;

use reqwest::StatusCode;
use serde_json::Value;

use crate::provider::Model;
use crate::provider::wire::{ErrorBody, StreamParser, WireApi};
use crate::stream::{Context, StreamOptions};

/// `POST {base}/responses` with a bearer key.
#[derive(Debug)]
pub(crate) struct Responses;

impl WireApi for Responses {
    fn path(&self, _model: &Model) -> String {
        "responses".to_owned()
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

    fn parser(&self, _model: &Model) -> Box<dyn StreamParser> {
        Box::new(stream::EventParser::new())
    }

    fn status_error(&self, model: &Model, status: StatusCode, body: &ErrorBody) -> String {
        error::status_error(model, status.as_u16(), body)
    }
}
