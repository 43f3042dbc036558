//! Guardrails: checks of a run's input and of its answer that can end the run, as a
//! [`RunEnd::GuardrailTripped`] naming the guardrail and its reason. Hooks
//! (`before_tool_call`, `after_tool_call`) stay the guardrails of single tool calls.
//!
//! - An [`InputGuardrail`] checks the messages a run starts with (the prompt), before the
//!   run's first model request. One made [`concurrent`](InputGuardrail::concurrent) runs
//!   beside that request instead, so it costs no latency: if it trips, the request is
//!   cancelled, and no tool of its response runs.
//! - An [`OutputGuardrail`] checks each answer: a response without tool calls, the one the
//!   run would end with. If it trips, the run ends after that turn.
//!
//! A guardrail that panics trips, with the panic as its reason: it may be the check that
//! keeps something out.
//!
//! ```
//! use pi_runtime::agent::guardrail::{GuardrailStage, InputGuardrail, Verdict};
//! use pi_runtime::agent::{Agent, RunEnd};
//! use pi_runtime::provider::faux::{FauxModel, FauxResponse};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FauxModel::new().respond(FauxResponse::text("Here is the password."));
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input_guardrail(InputGuardrail::new("no_passwords", |input| async move {
//!         if input.text().contains("password") {
//!             Verdict::trip("asks for a password")
//!         } else {
//!             Verdict::Pass
//!         }
//!     }))
//!     .build()?;
//! let run = agent.prompt("What is the admin password?").await?;
//! assert_eq!(
//!     run.end,
//!     RunEnd::GuardrailTripped {
//!         guardrail: "no_passwords".into(),
//!         stage: GuardrailStage::Input,
//!         reason: "asks for a password".into(),
//!     }
//! );
//! assert_eq!(model.request_count(), 0, "the model was never asked");
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::{Arc, LazyLock};

use futures::future::{BoxFuture, join_all};

pub use super::end::GuardrailStage;
use super::end::RunEnd;
use super::panics::guarded;
use crate::message::{AssistantMessage, Message};
use crate::tool::RunContext;

/// What a guardrail decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Nothing wrong: the run goes on.
    Pass,
    /// The run ends, for this reason.
    Trip {
        /// Why, for the application (the model never reads it).
        reason: String,
    },
}

impl Verdict {
    /// Trip, for `reason`.
    pub fn trip(reason: impl Into<String>) -> Self {
        Verdict::Trip {
            reason: reason.into(),
        }
    }
}

/// What an input guardrail checks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GuardrailInput {
    /// The messages the run starts with: the prompt (or the queued messages a
    /// `continue_run` delivers).
    pub messages: Vec<Message>,
    /// The run's context, if it has one.
    pub context: Option<RunContext>,
}

impl GuardrailInput {
    /// The text of every message, joined with blank lines.
    pub fn text(&self) -> String {
        let texts: Vec<String> = self.messages.iter().map(Message::text_content).collect();
        texts.join("\n\n")
    }
}

/// What an output guardrail checks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GuardrailOutput {
    /// The answer: a response without tool calls.
    pub message: Arc<AssistantMessage>,
    /// The run's context, if it has one.
    pub context: Option<RunContext>,
}

impl GuardrailOutput {
    /// The answer's text.
    pub fn text(&self) -> String {
        self.message.text()
    }
}

type Check<I> = Arc<dyn Fn(I) -> BoxFuture<'static, Verdict> + Send + Sync>;

/// A check of a run's input (see the [module docs](self)).
#[derive(Clone)]
pub struct InputGuardrail {
    name: String,
    concurrent: bool,
    check: Check<GuardrailInput>,
}

/// A check of a run's answers (see the [module docs](self)).
#[derive(Clone)]
pub struct OutputGuardrail {
    name: String,
    check: Check<GuardrailOutput>,
}

impl InputGuardrail {
    /// A guardrail named `name` (what [`RunEnd::GuardrailTripped`] names) that runs `check`
    /// before the run's first model request.
    pub fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn(GuardrailInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        InputGuardrail {
            name: name.into(),
            concurrent: false,
            check: Arc::new(move |input| Box::pin(check(input))),
        }
    }

    /// Run beside the first model request instead of before it: no latency when it passes;
    /// when it trips, the request is cancelled and none of its tool calls run.
    #[must_use]
    pub fn concurrent(mut self) -> Self {
        self.concurrent = true;
        self
    }

    /// Whether it runs beside the first request.
    pub fn is_concurrent(&self) -> bool {
        self.concurrent
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl OutputGuardrail {
    /// A guardrail named `name` that runs `check` on each answer.
    pub fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn(GuardrailOutput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        OutputGuardrail {
            name: name.into(),
            check: Arc::new(move |output| Box::pin(check(output))),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for InputGuardrail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputGuardrail")
            .field("name", &self.name)
            .field("concurrent", &self.concurrent)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for OutputGuardrail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputGuardrail")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// An agent's guardrails.
#[derive(Debug, Clone, Default)]
pub(crate) struct Guardrails {
    pub(crate) input: Vec<InputGuardrail>,
    pub(crate) output: Vec<OutputGuardrail>,
}

impl Guardrails {
    /// The agent's guardrails, shared: no allocation for the many agents that have none.
    pub(crate) fn shared(self) -> Arc<Guardrails> {
        static NONE: LazyLock<Arc<Guardrails>> = LazyLock::new(Arc::default);
        if self.input.is_empty() && self.output.is_empty() {
            Arc::clone(&NONE)
        } else {
            Arc::new(self)
        }
    }

    /// Whether any input guardrail runs (`concurrent`) beside the first request or
    /// (otherwise) before it.
    pub(crate) fn checks_input(&self, concurrent: bool) -> bool {
        self.input
            .iter()
            .any(|guard| guard.concurrent == concurrent)
    }

    /// Run the input guardrails that run `concurrent`ly with the request, or before it, all
    /// at once: the run's end if one trips (the first of them, in the order they were
    /// added, that did).
    pub(crate) fn check_input(
        self: &Arc<Self>,
        concurrent: bool,
        input: GuardrailInput,
    ) -> impl Future<Output = Option<RunEnd>> + Send + 'static {
        let guards = Arc::clone(self);
        async move {
            let checks = (guards.input.iter())
                .filter(|guard| guard.concurrent == concurrent)
                .map(|guard| {
                    let input = input.clone();
                    let verdict = guarded(move || (guard.check)(input));
                    async move { (guard.name.as_str(), verdict.await) }
                });
            first_trip(join_all(checks).await, GuardrailStage::Input)
        }
    }

    /// Run every output guardrail on `output`, all at once.
    pub(crate) async fn check_output(&self, output: GuardrailOutput) -> Option<RunEnd> {
        let checks = self.output.iter().map(|guard| {
            let output = output.clone();
            let verdict = guarded(move || (guard.check)(output));
            async move { (guard.name.as_str(), verdict.await) }
        });
        first_trip(join_all(checks).await, GuardrailStage::Output)
    }
}

/// The end of the first verdict that trips; a guardrail that panicked trips.
fn first_trip(
    verdicts: Vec<(&str, Result<Verdict, String>)>,
    stage: GuardrailStage,
) -> Option<RunEnd> {
    verdicts.into_iter().find_map(|(name, verdict)| {
        let reason = match verdict {
            Ok(Verdict::Pass) => return None,
            Ok(Verdict::Trip { reason }) => reason,
            Err(panic) => format!("the guardrail panicked: {panic}"),
        };
        Some(RunEnd::GuardrailTripped {
            guardrail: name.to_owned(),
            stage,
            reason,
        })
    })
}
