//! Structured results in one call: an agent whose runs end with a value of your type,
//! handed in through a submit tool built from that type.
//!
//! ```
//! use pi_runtime::agent::Agent;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::tool_args;
//! use serde_json::json;
//!
//! /// The analysis of one function.
//! #[tool_args]
//! #[derive(Debug, PartialEq)]
//! pub struct Analysis {
//!     /// The function's name.
//!     pub name: String,
//!     /// A verbatim quote from the source.
//!     pub evidence: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new()
//!     .respond(FauxResponse::tool_call("c1", "submit_analysis", json!({"name": "first", "evidence": 42})))
//!     .respond(FauxResponse::tool_call("c2", "submit_analysis", json!({"name": "first", "evidence": "items[0]"})));
//! let extractor = Agent::builder()
//!     .model(model)
//!     .system_prompt("Analyse the function.")
//!     .extract::<Analysis>()
//!     .tool_name("submit_analysis")
//!     .check(|analysis: &Analysis| match analysis.evidence.is_empty() {
//!         true => Err("quote the source"),
//!         false => Ok(()),
//!     })
//!     .build()?;
//!
//! let extracted = extractor.extract("return items[0]").await?;
//! assert_eq!(extracted.value, Analysis { name: "first".into(), evidence: "items[0]".into() });
//! // The prompt, the call with `evidence: 42`, its validation error, the accepted call and
//! // its result: the accepting result ended the run without another request.
//! assert_eq!(extracted.messages.len(), 5);
//! assert_eq!(extracted.turns, 2);
//! # Ok(()) }
//! ```
//!
//! # The rules
//!
//! - **The submit tool comes from `T`** (any `DeserializeOwned + JsonSchema` struct or map,
//!   for example a [`#[tool_args]`](crate::tool_args) struct): its schema is `T`'s, built as
//!   `#[tool]` builds it (closed objects, no `$defs`). It is registered next to the agent's
//!   other tools, so a model can look things up before it submits; it asks for constrained
//!   sampling `prefer` (strict where the provider supports it, silently normal elsewhere),
//!   and it is sequential, so every batch it is in runs one call at a time.
//! - **Arguments go through the normal pipeline**: a submission that does not match the
//!   schema never reaches `T`, and the model reads the exact validation text
//!   (`evidence: expected string, got number`) and tries again.
//! - **The business check** ([`ExtractBuilder::check`]) runs on the deserialized `T`; its
//!   `Err` text is the call's error result, nothing is accepted, and the model may try again.
//! - **One acceptance per task.** The accepting result carries `terminate`, so when it is
//!   alone in its batch no further request is made. A second submission, in the same batch
//!   or later, gets the error result `already accepted`; a batch with such a refusal (or any
//!   other call next to the accepted one) does not terminate, because every result of a
//!   batch must agree to stop, so the model is asked once more and its answer ends the
//!   run.
//! - **Limits**: at most [`max_turns`](ExtractBuilder::max_turns) turns (default 4) and
//!   [`time_limit`](ExtractBuilder::time_limit) (default 30 s) for the whole extraction.
//!   Hooks set on the agent builder keep running; a time limit set there becomes the
//!   extraction's.
//! - **A reminder** ([`ExtractBuilder::remind`]) may ask again when the model answered in
//!   text, while turns remain. It is a user message of its own, in a run of its own.
//!
//! # Outcomes are values
//!
//! [`Extractor::extract`] returns [`Extracted`] (the value, the messages the extraction
//! added, the summed usage, the turns) or an [`ExtractError`]:
//!
//! | variant | when |
//! |---|---|
//! | [`NoSubmission`](ExtractError::NoSubmission) | the model answered in text with nothing accepted, and no reminder asked again |
//! | [`TurnLimit`](ExtractError::TurnLimit) | the turn limit ended a run that would have gone on, with nothing accepted |
//! | [`TimeLimit`](ExtractError::TimeLimit) | the time limit aborted the run |
//! | [`Aborted`](ExtractError::Aborted) | [`Extractor::abort`] or [`Agent::abort`](crate::agent::Agent::abort) |
//! | [`Model`](ExtractError::Model) | a model request failed; the error message is kept |
//! | [`Agent`](ExtractError::Agent) | another run is in progress |
//!
//! A run that ends in an error or an abort is never a success, even after an accepted
//! submission. The transcript stays in [`Extractor::agent`] for a look at what happened.
//!
//! # Forcing the tool
//!
//! [`ExtractBuilder::force_tool_choice`] sets [`ToolChoice::Tool`](crate::ToolChoice::Tool)
//! naming the submit tool on every request that offers it, which each provider sends as its
//! `tool_choice`:
//!
//! | provider API | `tool_choice` sent | the model must call |
//! |---|---|---|
//! | OpenAI Chat Completions and compatible servers (DeepSeek, vLLM, ...) | `{"type":"function","function":{"name":"<tool>"}}` | the submit tool (if the server honours `tool_choice`) |
//! | OpenAI Responses | `{"type":"function","name":"<tool>"}` | the submit tool |
//! | Anthropic Messages | `{"type":"tool","name":"<tool>"}` | the submit tool (not allowed together with extended thinking) |
//! | Google Gemini | `functionCallingConfig: {"mode": "ANY", "allowedFunctionNames": ["<tool>"]}` | the submit tool |
//! | the faux model, your own [`LanguageModel`](crate::LanguageModel) | nothing (the choice is in the request's [`StreamOptions`](crate::StreamOptions) for a model that reads it) | nothing |
//!
//! A forced model can call no other tool.
//!
//! # Watching the partial result
//!
//! While the model streams its submission, every argument delta is a
//! [`MessageUpdate`](crate::agent::AgentEvent::MessageUpdate) whose live message holds the
//! call's arguments parsed so far (a JSON object that fills in as the text
//! arrives). [`Extractor::watch_partial`] calls you with them; [`Extractor::partial`] picks
//! them out of any event, for your own subscriber or event stream:
//!
//! ```
//! use std::sync::{Arc, Mutex};
//!
//! use pi_runtime::agent::Agent;
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//! use pi_runtime::tool_args;
//! use serde_json::{Value, json};
//!
//! #[tool_args]
//! pub struct Summary {
//!     /// One sentence.
//!     pub summary: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new()
//!     .with_chunk_chars(8)
//!     .respond(FauxResponse::tool_call("c1", "submit_result", json!({"summary": "Short."})));
//! let extractor = Agent::builder().model(model).extract::<Summary>().build()?;
//! let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
//! let sink = Arc::clone(&seen);
//! extractor.watch_partial(move |partial| sink.lock().unwrap().push(partial.clone()));
//!
//! let extracted = extractor.extract("Summarise.").await?;
//! assert_eq!(extracted.value.summary, "Short.");
//! // `{"summary":"Short."}` streamed in pieces of 8 characters: `{"summar`, `y":"Shor`, `t."}`.
//! assert_eq!(
//!     *seen.lock().unwrap(),
//!     [json!({}), json!({"summary": "Shor"}), json!({"summary": "Short."})]
//! );
//! # Ok(()) }
//! ```

mod builder;
mod force;
mod options;
mod outcome;
mod partial;
mod run;
mod submit;

pub use builder::ExtractBuilder;
pub use options::{
    DEFAULT_ACCEPTED_TEXT, DEFAULT_MAX_TURNS, DEFAULT_REMINDER, DEFAULT_TIME_LIMIT,
    DEFAULT_TOOL_DESCRIPTION, DEFAULT_TOOL_NAME, ExtractOptions,
};
pub use outcome::{ExtractError, Extracted};
pub use run::Extractor;
