//! A run that pauses for a person's approval and finishes in another process:
//!
//! ```text
//! cargo run --example approval -- pause --state run.json --effects effects.txt
//! cargo run --example approval -- resume --state run.json --decision approve --effects effects.txt
//! cargo run --example approval -- run --decision approve --effects effects.txt
//! ```
//!
//! Offline, on a scripted model. The model asks to append a line to the effects file; the
//! tool needs approval (`#[tool(approval = "always")]`), so `pause` stops before it runs and
//! writes the signed run state. `resume` builds a fresh agent, reads the state (refusing one
//! that was changed or signed with another key, or larger than 8 MiB), applies the decision
//! and prints the final assistant text. `run` is the same run in one process, decided as
//! soon as it asks. The effects file gets one line per execution; `--transcript FILE` writes
//! the final transcript (JSON), which is the same whether the run crossed a process
//! boundary or not.
//!
//! `--depth N` puts `append_line` N sub-agents down (an agent calling a helper agent as a
//! tool, which calls the next): the whole run pauses all the same, and the pending call is
//! named by its path (`d2/d1/call_1`).
//!
//! A pause resumes once: `resume` claims the pause in a ledger directory (`pause-ledger`
//! beside the state file, or `--ledger DIR`), so a second `resume` of the same state, after
//! the first or at the same moment, fails and runs nothing. Every process that may resume
//! the state must use the same ledger directory.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use pi_runtime::agent::approval::{ApprovalDecision, FileLedger, StateKey};
use pi_runtime::agent::{Agent, RunEnd, RunOutcome, RunState};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{Message, State, ToolError, tool};
use serde_json::json;

/// Append one line to the effects file.
#[tool(approval = "always")]
async fn append_line(
    State(effects): State<PathBuf>,
    /// The line to append.
    line: String,
) -> Result<String, ToolError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&effects)
        .map_err(|error| ToolError::new(format!("cannot open {}: {error}", effects.display())))?;
    writeln!(file, "{line}").map_err(|error| ToolError::new(error.to_string()))?;
    Ok(format!("appended {line:?}"))
}

#[derive(Parser)]
#[command(about = "Pause a run for approval, then resume it in another process")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The key that signs the run state (both commands must use the same one; 16 bytes or
    /// more).
    #[arg(long, global = true, default_value = "approval example key")]
    key: String,
    /// The file the tool appends a line to, once per execution.
    #[arg(long, global = true, default_value = "effects.txt")]
    effects: PathBuf,
    /// Where to write the final transcript (JSON), if anywhere.
    #[arg(long, global = true)]
    transcript: Option<PathBuf>,
    /// How many sub-agents deep `append_line` sits (see `pi_runtime::agent::subagent`): 0
    /// gives the agent the tool; 2 has it call a helper that calls a helper that has it.
    /// The pending call is then named by its path (`d2/d1/call_1`).
    #[arg(long, global = true, default_value_t = 0)]
    depth: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Run until the approval and write the signed state.
    Pause {
        /// Where to write the state.
        #[arg(long)]
        state: PathBuf,
    },
    /// Finish the paused run with a decision and print the final assistant text.
    Resume {
        /// The state `pause` wrote.
        #[arg(long)]
        state: PathBuf,
        /// What the person decided.
        #[arg(long, value_enum)]
        decision: Choice,
        /// The directory where resumes claim their pause, shared by every process that may
        /// resume the state; by default `pause-ledger` beside the state file.
        #[arg(long)]
        ledger: Option<PathBuf>,
    },
    /// The whole run in this process: the decision is taken when the run asks for it.
    Run {
        /// What the person decided.
        #[arg(long, value_enum)]
        decision: Choice,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Choice {
    Approve,
    Deny,
    Edit,
}

/// The scripted model, answering from the transcript so that a resumed run picks up where
/// it paused: a call of `append_line` first, then an answer that reports its result.
fn model() -> FauxModel {
    let step = |context: &pi_runtime::Context| match context.messages.last() {
        Some(Message::ToolResult(result)) => {
            FauxResponse::text(format!("The tool said: {}", result.text()))
        }
        _ => FauxResponse::tool_call(
            "call_1",
            "append_line",
            json!({"line": "hello from the agent"}),
        ),
    };
    FauxModel::new().respond_with(step).respond_with(step)
}

/// The scripted model of a helper `depth` levels above `append_line`: it hands the task to
/// the helper below (`helper_<depth - 1>`, or the tool itself at depth 1 is reached through
/// `helper_0`), then reports what it said.
fn delegating(depth: usize) -> FauxModel {
    let step = move |context: &pi_runtime::Context| match context.messages.last() {
        Some(Message::ToolResult(result)) => FauxResponse::text(result.text()),
        _ => FauxResponse::tool_call(
            format!("d{depth}"),
            format!("helper_{}", depth - 1),
            json!({"task": "Append a greeting."}),
        ),
    };
    FauxModel::new().respond_with(step).respond_with(step)
}

/// The agent, with `append_line` `depth` sub-agents down; with `ledger`, its resumes claim
/// their pause there (without, in this process's memory only).
fn agent(
    effects: PathBuf,
    ledger: Option<FileLedger>,
    depth: usize,
) -> Result<Agent, Box<dyn std::error::Error>> {
    let mut builder = Agent::builder()
        .model(model())
        .tools(AppendLine::new(effects));
    for level in 1..=depth {
        let below = builder.build_definition()?;
        let helper = below.as_tool(
            format!("helper_{}", level - 1),
            "Does the task it is given.",
        );
        builder = Agent::builder().model(delegating(level)).tools(helper);
    }
    let builder = match ledger {
        Some(ledger) => builder.pause_ledger(ledger),
        None => builder,
    };
    Ok(builder.build()?)
}

/// One decision per pending call of `paused`, naming each by its path.
fn decide(paused: &RunState, choice: Choice) -> Vec<ApprovalDecision> {
    (paused.pending_approvals())
        .map(|call| match choice {
            Choice::Approve => ApprovalDecision::approve(call.path()),
            Choice::Deny => ApprovalDecision::deny(call.path(), "the operator said no"),
            Choice::Edit => {
                ApprovalDecision::edit(call.path(), json!({"line": "edited by the operator"}))
            }
        })
        .collect()
}

/// Finish: print the final assistant text, and write the transcript if asked.
fn finish(
    agent: &Agent,
    run: &RunOutcome,
    transcript: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = transcript {
        std::fs::write(path, serde_json::to_string_pretty(&agent.transcript())?)?;
    }
    println!("{}", final_text(run));
    Ok(())
}

fn final_text(run: &RunOutcome) -> String {
    (run.messages.iter().rev())
        .find_map(Message::as_assistant)
        .map(|message| message.text())
        .unwrap_or_default()
}

async fn main_inner(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let key = StateKey::new(&cli.key)?;
    match cli.command {
        Command::Pause { state } => {
            let run = agent(cli.effects, None, cli.depth)?
                .prompt("Append a greeting.")
                .await?;
            let (RunEnd::AwaitingApproval { pending }, Some(paused)) =
                (&run.end, run.paused_state())
            else {
                return Err(format!("the run did not pause: {:?}", run.end).into());
            };
            for call in pending {
                println!(
                    "pending {} {} {} ({})",
                    call.path(),
                    call.tool,
                    call.args,
                    call.reason
                );
            }
            std::fs::write(&state, paused.to_signed_json(&key))?;
            println!("state written to {}", state.display());
        }
        Command::Resume {
            state,
            decision,
            ledger,
        } => {
            let ledger = ledger.unwrap_or_else(|| beside(&state, "pause-ledger"));
            let file = std::fs::File::open(&state)
                .map_err(|error| format!("cannot open {}: {error}", state.display()))?;
            let paused = RunState::from_signed_reader(file, &key)?;
            let decisions = decide(&paused, decision);
            let agent = agent(cli.effects, Some(FileLedger::new(ledger)?), cli.depth)?;
            let run = agent.resume_with(paused, decisions).await?;
            finish(&agent, &run, cli.transcript)?;
        }
        Command::Run { decision } => {
            let agent = agent(cli.effects, None, cli.depth)?;
            let mut run = agent.prompt("Append a greeting.").await?;
            while let Some(paused) = run.paused_state().cloned() {
                let decisions = decide(&paused, decision);
                run = agent.resume_with(paused, decisions).await?;
            }
            finish(&agent, &run, cli.transcript)?;
        }
    }
    Ok(())
}

/// `name` in the directory of `file`.
fn beside(file: &std::path::Path, name: &str) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(name),
        _ => PathBuf::from(name),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match main_inner(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
