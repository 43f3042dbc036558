//! Structured results through a tool call (seed 2, SPEC §10), in one call: the model hands in
//! its analysis of a function by calling `submit_analysis`, and the program's output is the
//! value that tool accepted, never text the model wrote.
//!
//! `Agent::builder()...extract::<FunctionAnalysis>()` builds the submit tool from the type and
//! guards the result in three layers: the schema (checked before anything is accepted; the
//! model reads the error and retries), a business check (the evidence must be a quote from
//! the source), and one acceptance per task. A run is limited to 4 turns and 30 seconds; a
//! run that ends without an accepted submission, or with a failed or aborted request, is an
//! error, even after an accepted submission.
//!
//! ```text
//! cargo run --example submit_analysis                                  # scripted model, offline
//! cargo run --example submit_analysis -- --script never                # the failure path
//! cargo run --example submit_analysis -- --watch                       # the partial result as it streams
//! DEEPSEEK_API_KEY=... cargo run --example submit_analysis             # a real provider
//! cargo run --example submit_analysis -- --base-url http://127.0.0.1:8000/v1 --model qwen3
//! ```
//!
//! The accepted analysis goes to stdout as JSON; the story of the run goes to stderr.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use pi_runtime::agent::extract::Extractor;
use pi_runtime::agent::{Agent, AgentEvent, BuildError};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::presets;
use pi_runtime::{LanguageModel, Message, tool_args};
use serde_json::{Value, json};

/// The function under analysis.
const SOURCE: &str = "\
export function first<T>(items: T[]): T | undefined {
  return items[0]
}
";

const SYSTEM_PROMPT: &str = "You analyse source code. You must hand in your final result by \
calling submit_analysis; never answer in prose instead.";

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

/// Seed 2's `validateAnalysis`: the evidence must be quoted from the source.
fn quoted_from_source(analysis: &FunctionAnalysis) -> Result<(), String> {
    let evidence = analysis.evidence.trim();
    if evidence.is_empty() || !SOURCE.contains(evidence) {
        return Err(format!(
            "evidence {:?} does not occur in the source code: quote the source verbatim",
            analysis.evidence
        ));
    }
    Ok(())
}

/// Ask a model for a structured analysis of a function, received through a tool call.
///
/// Without a key or `--base-url` the model is scripted (no network). With `--base-url` it is
/// any OpenAI-compatible server (key from OPENAI_API_KEY, if set); otherwise the first
/// provider with a key in DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY.
#[derive(Debug, Parser)]
struct Cli {
    /// Use the scripted model with this script, even when a key is set.
    #[arg(long, alias = "script", value_enum)]
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
    /// Force the submit tool through the provider's `tool_choice`.
    #[arg(long)]
    force_tool_choice: bool,
    /// Show the submission as it streams, a partial JSON value per delta.
    #[arg(long)]
    watch: bool,
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
    #[value(alias = "never")]
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
    let extractor = match analyser(model, &cli) {
        Ok(extractor) => extractor,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let prompt = format!(
        "Call submit_analysis with your analysis of this function. Quote the source verbatim as \
         evidence; use null for emptyInputBehavior if unsure. Code:\n{SOURCE}"
    );
    match extractor.extract(prompt).await {
        Ok(extracted) => match serde_json::to_string_pretty(&extracted.value) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: could not print the analysis: {error}");
                ExitCode::FAILURE
            }
        },
        // No submission, the turn or time limit, an abort, a failed request: each is an
        // `ExtractError` whose text says what happened.
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The agent, its submit tool and its limits, in one builder chain.
fn analyser(
    model: Arc<dyn LanguageModel>,
    cli: &Cli,
) -> Result<Extractor<FunctionAnalysis>, BuildError> {
    let builder = Agent::builder()
        .shared_model(model)
        .system_prompt(SYSTEM_PROMPT)
        .extract::<FunctionAnalysis>()
        .tool_name("submit_analysis")
        .tool_description(
            "Submit the final analysis of the function. Only one valid analysis is accepted \
             per task.",
        )
        .accepted_text("The analysis passed validation and was accepted.")
        .check(quoted_from_source)
        .max_turns(4)
        .time_limit(Duration::from_secs(cli.time_limit));
    let builder = if cli.force_tool_choice {
        builder.force_tool_choice()
    } else {
        builder
    };
    let extractor = builder.build()?;
    extractor.agent().on_event(|event| {
        narrate(event);
    });
    if cli.watch {
        extractor.watch_partial(|partial| eprintln!("… {partial}"));
    }
    Ok(extractor)
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
        let preset = presets::openai_completions(&model("gpt-4o-mini")).base_url(url);
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
