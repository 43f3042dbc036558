//! Structured results through a tool call (seed 2, SPEC §10): the model hands in its
//! analysis of a function by calling `submit_analysis`, and the program's output is the value
//! that tool accepted, never text the model wrote.
//!
//! Three layers guard the result: the schema (checked before the tool runs; the model reads
//! the error and retries), a business check inside the tool (the evidence must be a quote from
//! the source), and one acceptance per task. A run is limited to 4 turns and 30 seconds; a run
//! that ends without an accepted submission, or with a failed or aborted request, is an error.
//!
//! ```text
//! cargo run --example submit_analysis                                  # scripted model, offline
//! cargo run --example submit_analysis -- --faux-script never-submits   # the failure path
//! DEEPSEEK_API_KEY=... cargo run --example submit_analysis             # a real provider
//! cargo run --example submit_analysis -- --base-url http://127.0.0.1:8000/v1 --model qwen3
//! ```
//!
//! The accepted analysis goes to stdout as JSON; the story of the run goes to stderr.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{Parser, ValueEnum};
use pi_runtime::agent::{Agent, AgentError, AgentEvent, BuildError, TurnControl};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::presets;
use pi_runtime::{
    Args, ExecutionMode, LanguageModel, Message, State, StopReason, ToolError, ToolResult, tool,
    tool_args,
};
use serde_json::{Value, json};

/// The function under analysis.
const SOURCE: &str = "\
export function first<T>(items: T[]): T | undefined {
  return items[0]
}
";

const SYSTEM_PROMPT: &str = "You analyse source code. You must hand in your final result by \
calling submit_analysis; never answer in prose instead.";

const MAX_TURNS: usize = 4;

/// The analysis of one function.
#[tool_args(serialize)]
#[derive(Debug)]
#[serde(rename_all = "camelCase")]
pub struct FunctionAnalysis {
    /// The function's name.
    pub name: String,
    /// The parameter names, in order.
    pub parameters: Vec<String>,
    /// The return type as written in the source.
    pub return_type: String,
    /// What the function does, in one sentence.
    pub summary: String,
    /// What the function does with an empty input; null when unsure.
    pub empty_input_behavior: Option<String>,
    /// A verbatim quote from the source that backs the summary.
    pub evidence: String,
}

/// One task's submission slot: the source the evidence must come from and the accepted
/// analysis, filled at most once.
#[derive(Debug)]
struct Submission {
    source: &'static str,
    accepted: Mutex<Option<FunctionAnalysis>>,
}

impl Submission {
    fn new(source: &'static str) -> Self {
        Submission {
            source,
            accepted: Mutex::new(None),
        }
    }

    /// The business checks, then acceptance. The slot is checked and filled under one lock,
    /// so even concurrent calls could not both be accepted.
    fn accept(&self, analysis: FunctionAnalysis) -> Result<(), ToolError> {
        let mut accepted = self.accepted.lock().unwrap_or_else(PoisonError::into_inner);
        if accepted.is_some() {
            return Err(ToolError::new("already accepted"));
        }
        let evidence = analysis.evidence.trim();
        if evidence.is_empty() || !self.source.contains(evidence) {
            return Err(ToolError::new(format!(
                "evidence {:?} does not occur in the source code: quote the source verbatim",
                analysis.evidence
            )));
        }
        *accepted = Some(analysis);
        Ok(())
    }

    fn take(&self) -> Option<FunctionAnalysis> {
        self.accepted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Submit the final analysis of the function. Only one valid analysis is accepted per task.
#[tool(strict = "prefer")]
async fn submit_analysis(
    State(submission): State<Arc<Submission>>,
    Args(analysis): Args<FunctionAnalysis>,
) -> Result<ToolResult, ToolError> {
    submission.accept(analysis)?;
    let accepted = ToolResult::text("The analysis passed validation and was accepted.")
        .with_details(json!({"accepted": true}));
    // The result is in hand: no need to ask the model again.
    Ok(accepted.with_terminate(true))
}

/// Why a run produced no result.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(
        "no validated submission received in {turns} of at most {MAX_TURNS} turns: the model \
         never made a submit_analysis call that passed validation"
    )]
    NoSubmission { turns: usize },
    #[error("the model request failed: {0}")]
    Request(String),
    #[error("the run was aborted at the time limit of {limit:?}: {reason}")]
    Aborted { limit: Duration, reason: String },
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Ask a model for a structured analysis of a function, received through a tool call.
///
/// Without a key or `--base-url` the model is scripted (no network). With `--base-url` it is
/// any OpenAI-compatible server (key from OPENAI_API_KEY, if set); otherwise the first
/// provider with a key in DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY.
#[derive(Debug, Parser)]
struct Cli {
    /// Use the scripted model with this script, even when a key is set.
    #[arg(long, value_enum)]
    faux_script: Option<FauxScript>,
    /// An OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.
    #[arg(long)]
    base_url: Option<String>,
    /// The model id (default: the provider's usual model).
    #[arg(long)]
    model: Option<String>,
    /// Abort the run after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    time_limit: u64,
}

/// What the scripted model does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FauxScript {
    /// Submits `evidence: 42`, reads the validation error, submits a valid analysis.
    CorrectsItself,
    /// Quotes code that is not in the source, reads the error, submits a valid analysis.
    Misquotes,
    /// Submits two valid analyses in one response; the second is refused.
    SubmitsTwice,
    /// Answers in prose (with JSON in it) instead of calling the tool.
    NeverSubmits,
    /// Submits invalid arguments every turn, until the turn limit.
    AlwaysInvalid,
    /// Takes an hour to answer, so the time limit aborts the run.
    Stalls,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let model = choose_model(&cli);
    eprintln!("model: {}/{}", model.provider(), model.id());
    match analyse(model, Duration::from_secs(cli.time_limit)).await {
        Ok(analysis) => match serde_json::to_string_pretty(&analysis) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: could not print the analysis: {error}");
                ExitCode::FAILURE
            }
        },
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// One task: prompt once, then judge the run by what the tool accepted.
async fn analyse(
    model: Arc<dyn LanguageModel>,
    time_limit: Duration,
) -> Result<FunctionAnalysis, Failure> {
    let submission = Arc::new(Submission::new(SOURCE));
    let turns = AtomicUsize::new(0);
    let agent = Agent::builder()
        .shared_model(model)
        .system_prompt(SYSTEM_PROMPT)
        .tools(SubmitAnalysis::new(Arc::clone(&submission)))
        // Two submissions in one response must not race for the slot.
        .tool_execution(ExecutionMode::Sequential)
        .finish_turn(move |_| {
            let done = turns.fetch_add(1, Ordering::Relaxed) + 1;
            std::future::ready(if done >= MAX_TURNS {
                TurnControl::End
            } else {
                TurnControl::Proceed
            })
        })
        .time_limit(time_limit)
        .build()?;
    agent.subscribe(|event| {
        narrate(event);
        std::future::ready(())
    });

    let messages = agent
        .prompt(format!(
            "Call submit_analysis with your analysis of this function. Quote the source \
             verbatim as evidence; use null for emptyInputBehavior if unsure. Code:\n{SOURCE}"
        ))
        .await?;

    // An accepting call ends the run, so the last assistant message is usually the call
    // itself: success is judged by the accepted value, after ruling out a failed request.
    let last = messages.iter().rev().find_map(|message| match message {
        Message::Assistant(assistant) => Some(assistant),
        _ => None,
    });
    if let Some(last) = last {
        let reason = || {
            last.error_message
                .clone()
                .unwrap_or_else(|| last.stop_reason.as_str().to_owned())
        };
        match last.stop_reason {
            StopReason::Error => return Err(Failure::Request(reason())),
            StopReason::Aborted => {
                return Err(Failure::Aborted {
                    limit: time_limit,
                    reason: reason(),
                });
            }
            _ => {}
        }
    }
    let turns = messages
        .iter()
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count();
    submission.take().ok_or(Failure::NoSubmission { turns })
}

/// The story of the run, on stderr.
fn narrate(event: &AgentEvent) {
    match event {
        AgentEvent::MessageEnd {
            message: Message::Assistant(assistant),
        } => {
            let text = assistant.text();
            if !text.is_empty() {
                eprintln!("assistant: {text}");
            }
        }
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => eprintln!("→ {tool_name} {args}"),
        AgentEvent::ToolExecutionEnd {
            result, is_error, ..
        } => {
            let mark = if *is_error { "✗" } else { "✓" };
            eprintln!("{mark} {}", result.text_content());
        }
        _ => {}
    }
}

/// The provider the command line and the environment ask for, or the scripted model.
fn choose_model(cli: &Cli) -> Arc<dyn LanguageModel> {
    if let Some(script) = cli.faux_script {
        return Arc::new(faux_model(script));
    }
    let model = |default: &str| cli.model.clone().unwrap_or_else(|| default.to_owned());
    if let Some(url) = &cli.base_url {
        let preset = presets::openai(&model("gpt-4o-mini")).base_url(url);
        // A local server usually takes no key; send one only if it is set.
        let preset = if preset.options.api_key.is_some() {
            preset
        } else {
            preset.no_api_key()
        };
        return preset.build();
    }
    let with_key = [
        presets::deepseek(&model("deepseek-chat")),
        presets::openai(&model("gpt-4o-mini")),
        presets::anthropic(&model("claude-sonnet-4-5")),
        presets::google(&model("gemini-2.5-flash")),
    ]
    .into_iter()
    .find(|preset| preset.options.api_key.is_some());
    match with_key {
        Some(preset) => preset.build(),
        None => Arc::new(faux_model(FauxScript::CorrectsItself)),
    }
}

/// A valid analysis of [`SOURCE`], as the model would send it.
fn valid_analysis() -> Value {
    json!({
        "name": "first",
        "parameters": ["items"],
        "returnType": "T | undefined",
        "summary": "Returns the first element of the array.",
        "emptyInputBehavior": "Returns undefined.",
        "evidence": "return items[0]",
    })
}

fn with_evidence(evidence: Value) -> Value {
    let mut analysis = valid_analysis();
    analysis["evidence"] = evidence;
    analysis
}

fn faux_model(script: FauxScript) -> FauxModel {
    let submit =
        |id: &str, arguments: Value| FauxResponse::tool_call(id, "submit_analysis", arguments);
    let model = FauxModel::new();
    match script {
        FauxScript::CorrectsItself => model
            .respond(submit("c1", with_evidence(json!(42))))
            .respond(submit("c2", valid_analysis())),
        FauxScript::Misquotes => model
            .respond(submit("c1", with_evidence(json!("return items.at(0)"))))
            .respond(submit("c2", valid_analysis())),
        FauxScript::SubmitsTwice => model
            .respond(submit("c1", valid_analysis()).and_tool_call(
                "c2",
                "submit_analysis",
                valid_analysis(),
            ))
            .respond(FauxResponse::text("Submitted.")),
        FauxScript::NeverSubmits => model.respond(FauxResponse::text(format!(
            "Here is my analysis: {}",
            valid_analysis()
        ))),
        // The fallback answers every request once the script is empty: invalid forever.
        FauxScript::AlwaysInvalid => model.with_fallback(submit("c1", with_evidence(json!(42)))),
        FauxScript::Stalls => model
            .with_chunk_delay(Duration::from_secs(3600))
            .respond(submit("c1", valid_analysis())),
    }
}
