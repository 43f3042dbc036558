//! `ExtractBuilder`: the submit tool's name, description and constrained sampling, the
//! business check, the limits, forcing and the reminder, on top of an [`AgentBuilder`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::force::force_tool;
use super::options::{DEFAULT_REMINDER, ExtractOptions};
use super::run::{Extractor, Progress};
use super::submit::{Check, Slot, SubmitTool};
use crate::__private::parameters_schema;
use crate::agent::builder::AgentBuilder;
use crate::agent::error::BuildError;
use crate::agent::hooks::{FinishedTurn, TurnControl, boxed_finish_turn, boxed_prepare_request};
use crate::args::SchemaError;
use crate::tool::{ConstrainedSampling, RegistryError, Strictness, Tool};

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

    /// Start each [`extract`](super::Extractor::extract) from the transcript the previous
    /// one left, as [`Agent::prompt`](crate::agent::Agent::prompt) does (default: each
    /// starts from the initial transcript, so tasks never see each other's messages).
    #[must_use]
    pub fn keep_transcript(mut self) -> Self {
        self.options.keep_transcript = true;
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

    /// A business check on the deserialized value (say, that quoted evidence really occurs
    /// in the source): `Err`'s
    /// text goes back to the model as the call's error result, nothing is accepted, and the
    /// model may try again.
    #[must_use]
    pub fn check<F, E>(mut self, check: F) -> Self
    where
        F: Fn(&T) -> Result<(), E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        self.check = Some(Arc::new(move |value: T| {
            let verdict = check(&value).map_err(|error| error.to_string());
            Box::pin(std::future::ready((value, verdict)))
        }));
        self
    }

    /// An async business check (a database lookup, another service): like
    /// [`check`](Self::check), given a clone of the value.
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    /// use pi_runtime::tool_args;
    /// use serde_json::json;
    ///
    /// /// A customer.
    /// #[tool_args]
    /// #[derive(Clone)]
    /// pub struct Customer {
    ///     /// Their id.
    ///     pub id: u64,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = FauxModel::new()
    ///     .respond(FauxResponse::tool_call("c1", "submit_result", json!({"id": 7})))
    ///     .respond(FauxResponse::tool_call("c2", "submit_result", json!({"id": 42})));
    /// let extractor = Agent::builder()
    ///     .model(model)
    ///     .extract::<Customer>()
    ///     .check_async(|customer: Customer| async move {
    ///         tokio::task::yield_now().await; // the lookup
    ///         if customer.id == 42 { Ok(()) } else { Err(format!("no customer {}", customer.id)) }
    ///     })
    ///     .build()?;
    /// assert_eq!(extractor.extract("Who wrote in?").await?.value.id, 42);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn check_async<F, Fut, E>(mut self, check: F) -> Self
    where
        T: Clone,
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: fmt::Display,
    {
        let check = Arc::new(check);
        self.check = Some(Arc::new(move |value: T| {
            let verdict = check(value.clone());
            Box::pin(async move {
                let verdict = verdict.await.map_err(|error| error.to_string());
                (value, verdict)
            })
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
        let tool: Arc<str> = Arc::from(options.tool_name.as_str());
        agent.hooks.prepare_request = Some(boxed_prepare_request(move |plan| {
            let user = user_prepare.clone();
            let tool = Arc::clone(&tool);
            async move {
                let mut plan = match user {
                    Some(hook) => hook(plan).await,
                    None => plan,
                };
                force_tool(&mut plan, &tool);
                plan
            }
        }));
    }
}
