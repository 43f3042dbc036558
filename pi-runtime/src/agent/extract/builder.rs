//! `ExtractBuilder`: the submit tool's name, description and constrained sampling, the
//! business check, the limits, forcing and the reminder, on top of an [`AgentBuilder`].

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::force::Forcing;
use super::run::{Extractor, Progress};
use super::submit::{Check, Slot, SubmitTool};
use crate::__private::parameters_schema;
use crate::agent::builder::AgentBuilder;
use crate::agent::error::BuildError;
use crate::agent::hooks::{FinishedTurn, TurnControl, boxed_finish_turn, boxed_prepare_request};
use crate::args::SchemaError;
use crate::tool::{ConstrainedSampling, RegistryError, Strictness, Tool};

/// The submit tool's name unless [`ExtractBuilder::tool_name`] says otherwise.
pub const DEFAULT_TOOL_NAME: &str = "submit_result";
/// The submit tool's description unless [`ExtractBuilder::tool_description`] says otherwise.
pub const DEFAULT_TOOL_DESCRIPTION: &str = "Submit your final result. Call this once, when you \
     are done: the result is only accepted through this tool, never as text.";
/// The result text of an accepted submission unless [`ExtractBuilder::accepted_text`] says
/// otherwise.
pub const DEFAULT_ACCEPTED_TEXT: &str = "The result passed validation and was accepted.";
/// The reminder [`ExtractBuilder::remind`] sends; `{tool}` is the submit tool's name.
pub const DEFAULT_REMINDER: &str = "You have not called {tool} yet. Call it now with your \
     final result: an answer in text is not accepted.";
/// The turn limit unless [`ExtractBuilder::max_turns`] says otherwise (seed 2's).
pub const DEFAULT_MAX_TURNS: usize = 4;
/// The time limit unless [`ExtractBuilder::time_limit`] (or the agent builder's own
/// [`time_limit`](AgentBuilder::time_limit)) says otherwise (seed 2's).
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);

/// How an extraction runs; every field has a default ([`ExtractOptions::default`]), and
/// each has a method of the same name on [`ExtractBuilder`].
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
        }
    }
}

impl AgentBuilder {
    /// Turn this agent into an [`Extractor`] of `T`: its runs end with an accepted `T` or
    /// an [`ExtractError`](super::ExtractError). Tools registered so far stay next to the
    /// submit tool; hooks set so far keep running. A time limit set on this builder becomes
    /// the extraction's (for the whole extraction rather than each run).
    ///
    /// See [`agent::extract`](super) for the rules.
    pub fn extract<T>(mut self) -> ExtractBuilder<T>
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        let mut options = ExtractOptions::default();
        if let Some(limit) = self.time_limit.take() {
            options.time_limit = Some(limit);
        }
        ExtractBuilder {
            agent: self,
            options,
            check: None,
            target: PhantomData,
        }
    }
}

/// Builds an [`Extractor`]; start with [`AgentBuilder::extract`].
pub struct ExtractBuilder<T> {
    agent: AgentBuilder,
    options: ExtractOptions,
    check: Option<Check<T>>,
    target: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for ExtractBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtractBuilder")
            .field("agent", &self.agent)
            .field("options", &self.options)
            .field("check", &self.check.is_some())
            .finish()
    }
}

impl<T> ExtractBuilder<T>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// The name the model calls (default `submit_result`).
    #[must_use]
    pub fn tool_name(mut self, name: impl Into<String>) -> Self {
        self.options.tool_name = name.into();
        self
    }

    /// What the model reads about the tool.
    #[must_use]
    pub fn tool_description(mut self, description: impl Into<String>) -> Self {
        self.options.tool_description = description.into();
        self
    }

    /// Constrained sampling of the submission (default `Prefer`).
    #[must_use]
    pub fn strict(mut self, strictness: Strictness) -> Self {
        self.options.strict = Some(strictness);
        self
    }

    /// Ask for no constrained sampling at all.
    #[must_use]
    pub fn without_constrained_sampling(mut self) -> Self {
        self.options.strict = None;
        self
    }

    /// The most turns a run may take (default 4, at least 1).
    #[must_use]
    pub fn max_turns(mut self, turns: usize) -> Self {
        self.options.max_turns = turns;
        self
    }

    /// Abort a run that takes longer than this (default 30 s).
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.options.time_limit = Some(limit);
        self
    }

    /// No time limit.
    #[must_use]
    pub fn without_time_limit(mut self) -> Self {
        self.options.time_limit = None;
        self
    }

    /// Force the submit tool through the provider's `tool_choice` on every request.
    ///
    /// The model can then call no other tool, so use it when the submit tool is the only
    /// one. Anthropic refuses a forced tool together with extended thinking.
    #[must_use]
    pub fn force_tool_choice(mut self) -> Self {
        self.options.force_tool_choice = true;
        self
    }

    /// Ask again with [`DEFAULT_REMINDER`] when the model answers in text without an
    /// accepted submission, while turns remain.
    #[must_use]
    pub fn remind(self) -> Self {
        self.remind_with(DEFAULT_REMINDER)
    }

    /// Ask again with this text (`{tool}` becomes the tool's name) when the model answers
    /// in text without an accepted submission, while turns remain.
    #[must_use]
    pub fn remind_with(mut self, reminder: impl Into<String>) -> Self {
        self.options.reminder = Some(reminder.into());
        self
    }

    /// The result text of an accepted submission.
    #[must_use]
    pub fn accepted_text(mut self, text: impl Into<String>) -> Self {
        self.options.accepted_text = text.into();
        self
    }

    /// Replace every option at once.
    #[must_use]
    pub fn options(mut self, options: ExtractOptions) -> Self {
        self.options = options;
        self
    }

    /// A business check on the deserialized value (seed 2's `validateAnalysis`): `Err`'s
    /// text goes back to the model as the call's error result, nothing is accepted, and the
    /// model may try again.
    #[must_use]
    pub fn check<F, E>(mut self, check: F) -> Self
    where
        F: Fn(&T) -> Result<(), E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        self.check = Some(Arc::new(move |value: &T| {
            check(value).map_err(|error| error.to_string())
        }));
        self
    }

    /// Build the extractor.
    ///
    /// # Errors
    /// Those of [`AgentBuilder::build`], among them a tool that already has the submit
    /// tool's name; and `T`'s schema is not an object (`T` must be a struct or a map).
    pub fn build(self) -> Result<Extractor<T>, BuildError> {
        let ExtractBuilder {
            mut agent,
            mut options,
            check,
            ..
        } = self;
        options.max_turns = options.max_turns.max(1);
        options.reminder = options
            .reminder
            .map(|text| text.replace("{tool}", &options.tool_name));
        let tool = submit_tool::<T>(&options, check)?;
        let slot = Arc::clone(&tool.slot);
        let progress = Arc::new(Progress::default());
        wrap_hooks(&mut agent, &options, &progress);
        let agent = agent.tools(tool).build()?;
        Ok(Extractor::new(agent, options, slot, progress))
    }
}

fn submit_tool<T>(
    options: &ExtractOptions,
    check: Option<Check<T>>,
) -> Result<SubmitTool<T>, BuildError>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    // The schema `#[tool]` would give an `Args<T>` tool: closed objects, everything inline.
    let parameters = parameters_schema::<T>(true);
    if parameters.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(BuildError::Tools(RegistryError::InvalidSchema {
            tool: options.tool_name.clone(),
            error: SchemaError::new(format!(
                "the result type `{}` must be a struct or a map: tool arguments are an object",
                std::any::type_name::<T>()
            )),
        }));
    }
    let mut definition = Tool::new(
        options.tool_name.as_str(),
        options.tool_description.as_str(),
        parameters,
    );
    if let Some(strict) = options.strict {
        definition =
            definition.with_constrained_sampling(ConstrainedSampling::JsonSchema { strict });
    }
    Ok(SubmitTool {
        definition,
        snippet: "Submit the final result".to_owned(),
        guideline: format!(
            "Hand in your final result by calling {}; an answer in text is not accepted",
            options.tool_name
        ),
        accepted_text: options.accepted_text.clone(),
        check,
        slot: Arc::new(Slot::new()),
    })
}

/// Put the turn limit (and, when forcing, the tool choice) around the hooks the user set.
fn wrap_hooks(agent: &mut AgentBuilder, options: &ExtractOptions, progress: &Arc<Progress>) {
    let user_finish = agent.hooks.finish_turn.take();
    let progress = Arc::clone(progress);
    let max_turns = options.max_turns;
    agent.hooks.finish_turn = Some(boxed_finish_turn(move |turn: FinishedTurn| {
        // Counted before the user's hook runs, so a panicking hook cannot skip a turn.
        let reached = progress.count_turn(&turn, max_turns);
        let user = user_finish.clone();
        async move {
            let control = match user {
                Some(hook) => hook(turn).await,
                None => TurnControl::Proceed,
            };
            if reached { TurnControl::End } else { control }
        }
    }));
    if options.force_tool_choice {
        let user_prepare = agent.hooks.prepare_request.take();
        let forcing = Arc::new(Forcing::new(options.tool_name.clone()));
        agent.hooks.prepare_request = Some(boxed_prepare_request(move |plan| {
            let user = user_prepare.clone();
            let forcing = Arc::clone(&forcing);
            async move {
                let mut plan = match user {
                    Some(hook) => hook(plan).await,
                    None => plan,
                };
                plan.model = forcing.apply(plan.model);
                plan
            }
        }));
    }
}
