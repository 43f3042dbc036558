//! `ExtractOptions`: how an extraction runs, and the defaults of each option; the builder
//! sets them, the extractor reads them.

use std::time::Duration;

use crate::tool::Strictness;

/// The submit tool's name unless [`ExtractBuilder::tool_name`] says otherwise.
///
/// [`ExtractBuilder::tool_name`]: super::ExtractBuilder::tool_name
pub const DEFAULT_TOOL_NAME: &str = "submit_result";
/// The submit tool's description unless [`ExtractBuilder::tool_description`] says otherwise.
///
/// [`ExtractBuilder::tool_description`]: super::ExtractBuilder::tool_description
pub const DEFAULT_TOOL_DESCRIPTION: &str = "Submit your final result. Call this once, when you \
     are done: the result is only accepted through this tool, never as text.";
/// The result text of an accepted submission unless [`ExtractBuilder::accepted_text`] says
/// otherwise.
///
/// [`ExtractBuilder::accepted_text`]: super::ExtractBuilder::accepted_text
pub const DEFAULT_ACCEPTED_TEXT: &str = "The result passed validation and was accepted.";
/// The reminder [`ExtractBuilder::remind`] sends; `{tool}` is the submit tool's name.
///
/// [`ExtractBuilder::remind`]: super::ExtractBuilder::remind
pub const DEFAULT_REMINDER: &str = "You have not called {tool} yet. Call it now with your \
     final result: an answer in text is not accepted.";
/// The turn limit unless [`ExtractBuilder::max_turns`] says otherwise: room for a few
/// corrections, and a model that keeps failing stops.
///
/// [`ExtractBuilder::max_turns`]: super::ExtractBuilder::max_turns
pub const DEFAULT_MAX_TURNS: usize = 4;
/// The time limit unless [`ExtractBuilder::time_limit`] (or the agent builder's own
/// [`time_limit`](crate::agent::AgentBuilder::time_limit)) says otherwise.
///
/// [`ExtractBuilder::time_limit`]: super::ExtractBuilder::time_limit
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);

/// How an extraction runs; every field has a default ([`ExtractOptions::default`]), and
/// each has a method of the same name on [`ExtractBuilder`](super::ExtractBuilder).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExtractOptions {
    /// The name the model calls (default [`DEFAULT_TOOL_NAME`]).
    pub tool_name: String,
    /// What the model reads about the tool (default [`DEFAULT_TOOL_DESCRIPTION`]).
    pub tool_description: String,
    /// Constrained sampling of the submission (default `Some(Prefer)`: strict where the
    /// provider supports it, silently normal elsewhere; `Require` fails the request where
    /// it is not supported; `None` never asks).
    pub strict: Option<Strictness>,
    /// The most turns (model responses) a run may take, at least 1 (default
    /// [`DEFAULT_MAX_TURNS`]).
    pub max_turns: usize,
    /// Abort a run that takes longer (default [`DEFAULT_TIME_LIMIT`]; `None`: no limit).
    pub time_limit: Option<Duration>,
    /// Send the provider's `tool_choice` naming the submit tool on every request (default
    /// `false`); see [the module docs](super#forcing-the-tool) for which providers do.
    pub force_tool_choice: bool,
    /// When the model answers in text without an accepted submission and turns remain, send
    /// this as a user message and ask again; `{tool}` is replaced by the tool's name
    /// (default `None`: no reminder, the run ends with [`NoSubmission`]).
    ///
    /// [`NoSubmission`]: super::ExtractError::NoSubmission
    pub reminder: Option<String>,
    /// The result text of an accepted submission (default [`DEFAULT_ACCEPTED_TEXT`]).
    pub accepted_text: String,
    /// Start each extraction from the transcript the last one left (default `false`: each
    /// starts from the agent's initial transcript, so one task's document never reaches the
    /// next task's requests).
    pub keep_transcript: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            tool_name: DEFAULT_TOOL_NAME.to_owned(),
            tool_description: DEFAULT_TOOL_DESCRIPTION.to_owned(),
            strict: Some(Strictness::Prefer),
            max_turns: DEFAULT_MAX_TURNS,
            time_limit: Some(DEFAULT_TIME_LIMIT),
            force_tool_choice: false,
            reminder: None,
            accepted_text: DEFAULT_ACCEPTED_TEXT.to_owned(),
            keep_transcript: false,
        }
    }
}
