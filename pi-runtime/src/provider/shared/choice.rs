//! `tool_choice` as both OpenAI APIs (Chat Completions and Responses) write it: the same mode
//! words and the caller's JSON as given; only a named tool's form differs between them.

use serde::Serialize;
use serde_json::Value;

use crate::stream::ToolChoice;

/// A `tool_choice` of an OpenAI API whose named-tool form is `F`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum OpenAiToolChoice<'a, F> {
    /// `"auto"`, `"none"` or `"required"`.
    Mode(&'static str),
    /// One tool, in the API's own form.
    Named(F),
    /// Forwarded verbatim (`allowed_tools`, ...).
    Raw(&'a Value),
}

impl<'a, F> OpenAiToolChoice<'a, F> {
    /// `choice`, with `named` writing a named tool.
    pub(crate) fn new(choice: &'a ToolChoice, named: impl FnOnce(&'a str) -> F) -> Self {
        match choice {
            ToolChoice::Auto => OpenAiToolChoice::Mode("auto"),
            ToolChoice::None => OpenAiToolChoice::Mode("none"),
            ToolChoice::Required => OpenAiToolChoice::Mode("required"),
            ToolChoice::Tool(name) => OpenAiToolChoice::Named(named(name)),
            ToolChoice::Raw(json) => OpenAiToolChoice::Raw(json),
        }
    }
}
