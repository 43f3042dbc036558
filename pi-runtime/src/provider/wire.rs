//! What every wire API implements for the HTTP model: its request ([`WireApi`]) and the parser
//! of its events ([`StreamParser`]), which drives a [`MessageWriter`].

use reqwest::StatusCode;
use serde_json::Value;

use crate::excerpt::excerpt;

use crate::message::{AssistantMessage, StopReason};
use crate::provider::Model;
use crate::stream::{Context, MessageWriter, StreamOptions};

/// What one wire API adds to the shared transport. Each API folder implements it once;
/// [`wire_api`](crate::provider::request::wire_api) picks the implementation from
/// [`Api`](crate::provider::Api). A new API is a new folder with its request conversion, its
/// stream parser and this impl, plus one arm of that match.
pub(crate) trait WireApi: Sync {
    /// The path under the model's base URL (`chat/completions`).
    fn path(&self, model: &Model) -> String;

    /// The header that carries the key, and its value.
    fn auth(&self, key: &str) -> (&'static str, String);

    /// The API's own headers for this request (a version, a beta flag).
    fn headers(
        &self,
        _model: &Model,
        _context: &Context,
        _options: &StreamOptions,
    ) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The JSON body, or why the request must fail before the network.
    fn body(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Value, String>;

    /// A parser for one response's events.
    fn parser(&self, model: &Model) -> Box<dyn StreamParser>;

    /// The `errorMessage` of a response with an error status: by default `HTTP <status>: <the
    /// body, trimmed and bounded>`. An API whose pi wording is known overrides it.
    fn status_error(&self, _model: &Model, status: StatusCode, body: &ErrorBody) -> String {
        let mut message = format!("HTTP {status}");
        let body = body.quoted();
        if !body.is_empty() {
            message.push_str(": ");
            message.push_str(&body);
        }
        message
    }
}

/// The body of a response with an error status, as far as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorBody {
    /// The body as text (invalid UTF-8 replaced); `cut` when it went on past the part that
    /// is read (64 KiB).
    Text { text: String, cut: bool },
    /// The body came encoded (`gzip`, ...) although the request asked for `identity`: unread.
    Encoded(String),
    /// The body did not arrive within the time limits.
    Missing,
}

impl ErrorBody {
    /// The body as an error message quotes it: trimmed and bounded
    /// ([`excerpt`](crate::excerpt::excerpt)), with a remark when it was cut; or a remark
    /// saying why there is no text.
    pub(crate) fn quoted(&self) -> String {
        match self {
            ErrorBody::Text { text, cut } => {
                let mut quoted = excerpt(text.trim()).to_string();
                if *cut {
                    quoted.push_str(CUT_REMARK);
                }
                quoted
            }
            ErrorBody::Encoded(encoding) => {
                format!("(a {encoding}-encoded body, which was not asked for)")
            }
            ErrorBody::Missing => "(the error body did not arrive)".to_owned(),
        }
    }
}

/// Follows a quote of a body that was not read to its end.
pub(crate) const CUT_REMARK: &str = " (the body is longer; reading stopped there)";

/// Turns one API's SSE events into [`MessageWriter`] steps. Parsers are synchronous: the
/// transport feeds them whatever arrived, so the same code replays a recorded body.
pub(crate) trait StreamParser: Send + 'static {
    /// One SSE event: its `event:` name (`message` when the server gave none) and its data.
    /// `Err` ends the response with `error` at once, keeping the partial content.
    fn event(&mut self, out: &mut MessageWriter, name: &str, data: &str) -> Result<(), String>;

    /// The body ended: close what the API leaves open and say why the response ended.
    /// `Err` is the `errorMessage` of an `error` ending.
    fn end(&mut self, out: &mut MessageWriter) -> Result<StopReason, String>;
}

/// A writer of an empty, pending message of `model`.
pub(crate) fn output_for(model: &Model) -> MessageWriter {
    MessageWriter::new(AssistantMessage::empty(
        model.api.as_str(),
        &model.provider,
        &model.id,
    ))
}
