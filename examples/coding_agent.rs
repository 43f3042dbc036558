//! An interactive coding agent in the terminal, with the built-in `read`, `write`, `edit` and
//! `bash` tools working in the current directory.
//!
//! ```text
//! cargo run --example coding_agent                      # a real model if a key is set, else faux
//! cargo run --example coding_agent -- --base-url http://127.0.0.1:8080/v1 --model qwen3
//! cargo run --example coding_agent -- --mcp 'npx -y @modelcontextprotocol/server-everything'
//! cargo run --example coding_agent -- --mcp-url http://127.0.0.1:8000/mcp
//! ```
//!
//! MCP servers: `--mcp 'COMMAND ARGS'` (repeatable; split at spaces, no quoting) starts a
//! server over stdio, `--mcp-url URL` (repeatable) connects to one over streamable HTTP. Their
//! tools join the built-in ones as `mcp__<server>__<tool>`; a stdio server is named after its
//! last argument (`server-everything` above), an HTTP one after its host and port.
//!
//! The model: `--base-url URL` (with optional `--model ID` and `--api-key KEY`) talks to any
//! OpenAI-compatible server (Chat Completions); otherwise the first of `OPENAI_API_KEY`,
//! `DEEPSEEK_API_KEY`, `ANTHROPIC_API_KEY` and `GEMINI_API_KEY` that is set picks the
//! provider; with none, a faux model shows one scripted tool call. OpenAI is reached over the
//! Responses API (default `gpt-5-mini`, reasoning at medium effort): its reasoning is kept
//! from one tool call to the next.
//!
//! The answer streams as it arrives and tool output shows while the tool runs. `bash`,
//! `write` and every MCP tool its server marks destructive need approval (an agent policy,
//! see `pi_runtime::agent::approval`): the run pauses before the batch that holds them, the
//! loop asks about each pending call — `y` runs it, `edit` runs it with a new command or
//! path, anything else denies it and the model reads why — and resumes the run. Ctrl-C
//! aborts the current run — a running `bash` command has its whole process group killed —
//! and returns to the prompt; at a question it declines the call. Ctrl-D or `exit` quits.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use pi_runtime::agent::approval::{ApprovalDecision, ApprovalRequest, destructive_tools};
use pi_runtime::agent::{Agent, AgentError, AgentEvent, RunEnd, RunOutcome, RunState};
use pi_runtime::mcp::McpClient;
use pi_runtime::prompt::ToolSectionStyle;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::presets;
use pi_runtime::tool::Approval;
use pi_runtime::tools::{Bash, Edit, Read, WorkingDir, Write};
use pi_runtime::{
    AssistantMessageEvent, Context, LanguageModel, Message, ThinkingLevel, ToolDefinition,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const USAGE: &str = "usage: coding_agent [--base-url URL] [--model ID] [--api-key KEY] [--mcp 'COMMAND ARGS']... [--mcp-url URL]...";
/// Result lines shown for a tool that streamed nothing while it ran (`read` of a big file).
const SHOWN_RESULT_LINES: usize = 12;
/// What the model reads after `Tool call denied: ` when the user says no.
const DECLINED: &str = "The user declined this tool call.";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("coding_agent: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let mut options = Options::parse(std::env::args().skip(1))?;
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let cwd = WorkingDir::from(cwd);
    let servers = connect_mcp(
        std::mem::take(&mut options.mcp),
        std::mem::take(&mut options.mcp_url),
    )
    .await?;
    let mcp_tools: Vec<Arc<dyn ToolDefinition>> =
        servers.iter().flat_map(McpClient::tools).collect();
    let (model, about, thinking) = choose_model(options);

    let lines = Lines::from_stdin();
    let agent = Agent::builder()
        .shared_model(model)
        .thinking_level(thinking)
        .system_prompt("You are a coding assistant working in the user's project directory.")
        .tool_section(ToolSectionStyle::CodingAgent)
        .tools((
            Read::new(cwd.clone()),
            Bash::new(cwd.clone().into()),
            Edit::new(cwd.clone()),
            Write::new(cwd.clone()),
            mcp_tools,
        ))
        .approval(needs_approval)
        .build()
        .map_err(|e| e.to_string())?;
    let screen = Screen::default();
    agent.on_event(move |event| {
        screen.show(event);
    });

    println!("coding agent: {about}, working in {}", cwd.display());
    println!("Type a request; Ctrl-C aborts a run, Ctrl-D or `exit` quits.");
    loop {
        prompt("> ");
        let line = tokio::select! {
            line = lines.next() => line,
            _ = tokio::signal::ctrl_c() => {
                println!("\n(nothing to abort: Ctrl-D or `exit` quits)");
                continue;
            }
        };
        let Some(line) = line else { break };
        match line.trim() {
            "" => continue,
            "exit" | "quit" => break,
            request => run_once(&agent, request, &lines).await?,
        }
    }
    println!();
    Ok(())
}

/// One request: run until the model is done or Ctrl-C aborts, asking the user about every
/// call that needs approval on the way, then report how it ended.
async fn run_once(agent: &Agent, request: &str, lines: &Lines) -> Result<(), String> {
    let mut outcome = until_done(agent, agent.prompt(request)).await;
    while let Ok(paused) = &outcome
        && let Some(state) = paused.paused_state()
    {
        let decisions = ask(state, lines).await;
        outcome = match until_done(agent, agent.resume_with(state.clone(), decisions)).await {
            // An edit that does not validate: nothing ran, the run still waits; ask again.
            Err(AgentError::Approval(error)) => {
                println!("({error})");
                continue;
            }
            resumed => resumed,
        };
    }
    match outcome.map_err(|e| e.to_string())?.end {
        RunEnd::Aborted => println!("(run aborted)"),
        RunEnd::ModelError { message } => println!("(the model failed: {message})"),
        _ => {}
    }
    Ok(())
}

/// Await a run; Ctrl-C aborts it (the run then ends as aborted).
async fn until_done(
    agent: &Agent,
    run: impl Future<Output = Result<RunOutcome, AgentError>>,
) -> Result<RunOutcome, AgentError> {
    tokio::pin!(run);
    loop {
        tokio::select! {
            outcome = &mut run => return outcome,
            _ = tokio::signal::ctrl_c() => {
                println!("\n^C aborting...");
                agent.abort();
            }
        }
    }
}

/// The agent's approval policy: `bash` and `write` always ask, and so does every tool hinted
/// destructive (an MCP server's `destructiveHint`).
fn needs_approval(request: &ApprovalRequest<'_>) -> Approval {
    match request.tool_call.name.as_str() {
        "bash" => Approval::needed("runs a command"),
        "write" => Approval::needed("writes a file"),
        _ => destructive_tools(request),
    }
}

/// One decision per pending call of the paused run, asked of the user in order: `y` approves,
/// `edit` asks for a new command (`bash`), path (`write`) or arguments (others), anything
/// else (Ctrl-C, Ctrl-D included) declines.
async fn ask(paused: &RunState, lines: &Lines) -> Vec<ApprovalDecision> {
    let mut decisions = Vec::new();
    for call in paused.pending_approvals() {
        prompt(&format!(
            "Allow the agent to {}? [y/N/edit] ",
            action(&call.tool, &call.args)
        ));
        let decision = match answer(lines).await.as_deref().map(str::trim) {
            Some("y" | "Y" | "yes") => ApprovalDecision::approve(&call.id),
            Some("e" | "edit") => match edited(&call.tool, &call.args, lines).await {
                Some(args) => ApprovalDecision::edit(&call.id, args),
                None => ApprovalDecision::deny(&call.id, DECLINED),
            },
            _ => ApprovalDecision::deny(&call.id, DECLINED),
        };
        decisions.push(decision);
    }
    decisions
}

/// The user's next line; `None` on Ctrl-D or Ctrl-C.
async fn answer(lines: &Lines) -> Option<String> {
    tokio::select! {
        line = lines.next() => line,
        _ = tokio::signal::ctrl_c() => {
            println!();
            None
        }
    }
}

/// What a call would do, in the words of the question.
fn action(tool: &str, args: &Value) -> String {
    let arg = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
    match tool {
        "bash" => format!("run `{}`", arg("command")),
        "write" => format!("write {}", arg("path")),
        other => format!("call {other} with {args}"),
    }
}

/// The arguments with the user's change: a new command for `bash`, a new path for `write`,
/// new JSON for any other tool. `None` if the user typed nothing (or no JSON).
async fn edited(tool: &str, args: &Value, lines: &Lines) -> Option<Value> {
    let key = match tool {
        "bash" => Some("command"),
        "write" => Some("path"),
        _ => None,
    };
    prompt(&match key {
        Some(key) => format!("New {key}: "),
        None => "New arguments (JSON): ".to_owned(),
    });
    let line = answer(lines).await?;
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    match key {
        Some(key) => {
            let mut args = args.clone();
            let object = args.as_object_mut()?;
            object.insert(key.to_owned(), Value::String(line.to_owned()));
            Some(args)
        }
        None => serde_json::from_str(line)
            .inspect_err(|error| println!("(not JSON: {error})"))
            .ok(),
    }
}

/// The command line.
#[derive(Debug, Default)]
struct Options {
    base_url: Option<String>,
    model: Option<String>,
    api_key: Option<String>,
    mcp: Vec<String>,
    mcp_url: Vec<String>,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options::default();
        while let Some(flag) = args.next() {
            let list = match flag.as_str() {
                "--mcp" => Some(&mut options.mcp),
                "--mcp-url" => Some(&mut options.mcp_url),
                _ => None,
            };
            if let Some(list) = list {
                list.push(
                    args.next()
                        .ok_or(format!("{flag} needs a value\n{USAGE}"))?,
                );
                continue;
            }
            let slot = match flag.as_str() {
                "--base-url" => &mut options.base_url,
                "--model" => &mut options.model,
                "--api-key" => &mut options.api_key,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
            };
            *slot = Some(
                args.next()
                    .ok_or(format!("{flag} needs a value\n{USAGE}"))?,
            );
        }
        Ok(options)
    }
}

/// Connect the `--mcp` and `--mcp-url` servers, in order, each tool name unique.
async fn connect_mcp(commands: Vec<String>, urls: Vec<String>) -> Result<Vec<McpClient>, String> {
    let mut clients: Vec<McpClient> = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    let mut used = Vec::new();
    let mut unique = |base: String| {
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        used.push(name.clone());
        name
    };
    for line in commands {
        let mut words = line.split_whitespace();
        let program = words.next().ok_or("--mcp needs a command")?;
        let args: Vec<&str> = words.collect();
        let last = args
            .iter()
            .rev()
            .find(|a| !a.starts_with('-'))
            .copied()
            .unwrap_or(program);
        let stem = std::path::Path::new(last)
            .file_stem()
            .and_then(|stem| stem.to_str())
            .filter(|stem| !stem.is_empty())
            .unwrap_or(program);
        let name = unique(stem.to_owned());
        let mut command = tokio::process::Command::new(program);
        command.args(&args);
        let client = McpClient::builder(name.clone())
            .taken(taken.clone())
            .stdio(command)
            .await
            .map_err(|e| e.to_string())?;
        taken.extend(client.tool_names());
        println!("MCP server {name}: {} tools", client.tool_names().len());
        clients.push(client);
    }
    for url in urls {
        let host = url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("remote");
        let name = unique(host.to_owned());
        let client = McpClient::builder(name.clone())
            .taken(taken.clone())
            .http(url.clone())
            .await
            .map_err(|e| e.to_string())?;
        taken.extend(client.tool_names());
        println!(
            "MCP server {name} ({url}): {} tools",
            client.tool_names().len()
        );
        clients.push(client);
    }
    Ok(clients)
}

/// The model to talk to, a line saying which it is, and the reasoning level to ask of it.
fn choose_model(options: Options) -> (Arc<dyn LanguageModel>, String, ThinkingLevel) {
    let set = |var: &str| std::env::var(var).is_ok_and(|value| !value.is_empty());
    if let Some(url) = options.base_url {
        let id = options.model.unwrap_or_else(|| "default".to_owned());
        let preset = presets::openai_completions(&id).base_url(&url);
        // A local server usually wants no key; the preset already took OPENAI_API_KEY.
        let preset = match options.api_key {
            Some(key) => preset.api_key(key),
            None if set("OPENAI_API_KEY") => preset,
            None => preset.no_api_key(),
        };
        let about = format!("model {id} at {url}");
        return (preset.build(), about, ThinkingLevel::Off);
    }
    let model = |default: &str| options.model.clone().unwrap_or_else(|| default.to_owned());
    let preset = if set("OPENAI_API_KEY") {
        presets::openai(&model("gpt-5-mini"))
    } else if set("DEEPSEEK_API_KEY") {
        presets::deepseek(&model("deepseek-chat"))
    } else if set("ANTHROPIC_API_KEY") {
        presets::anthropic(&model("claude-sonnet-4-5"))
    } else if set("GEMINI_API_KEY") {
        presets::google(&model("gemini-2.5-flash"))
    } else {
        let about = "the faux model (set OPENAI_API_KEY or another key for a real one)";
        return (Arc::new(faux_model()), about.to_owned(), ThinkingLevel::Off);
    };
    let preset = match options.api_key {
        Some(key) => preset.api_key(key),
        None => preset,
    };
    let about = format!("{} model {}", preset.model.provider, preset.model.id);
    // A reasoning model reasons (and, over Responses, keeps its reasoning across calls)
    // only when asked for a level.
    let thinking = if preset.model.reasoning {
        ThinkingLevel::Medium
    } else {
        ThinkingLevel::Off
    };
    (preset.build(), about, thinking)
}

/// A scripted model: it lists the directory with `bash`, then counts what it saw.
fn faux_model() -> FauxModel {
    FauxModel::new()
        .with_chunk_chars(4)
        .respond(
            FauxResponse::text("Let me look around first.")
                .and_tool_call("faux-1", "bash", json!({"command": "ls -la"})),
        )
        .respond_with(|context: &Context| {
            let entries = match context.messages.last() {
                Some(Message::ToolResult(result)) if !result.is_error => {
                    // `ls -la` prints a `total` line first.
                    result.text().lines().skip(1).count().to_string()
                }
                _ => "no".to_owned(),
            };
            FauxResponse::text(format!(
                "This directory has {entries} entries. I am a faux model: connect a real one to go further."
            ))
        })
        .with_fallback(FauxResponse::text(
            "I am a faux model and only know one trick. Set OPENAI_API_KEY (or DEEPSEEK_, ANTHROPIC_, GEMINI_) or pass --base-url.",
        ))
}

/// Lines typed by the user, for the prompt loop and the approval questions. `None` once
/// stdin closed (Ctrl-D).
struct Lines(Arc<tokio::sync::Mutex<mpsc::Receiver<String>>>);

impl Lines {
    fn from_stdin() -> Self {
        let (tx, rx) = mpsc::channel(1);
        // A thread, not a task: a blocking read of stdin cannot be cancelled, and this one
        // lives as long as the program.
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        Lines(Arc::new(tokio::sync::Mutex::new(rx)))
    }

    async fn next(&self) -> Option<String> {
        self.0.lock().await.recv().await
    }
}

/// Prints the run as it happens: answer text as it streams, each tool call, its output while
/// it runs, and how it ended.
#[derive(Default)]
struct Screen {
    /// Per running call, the output already printed.
    printed: Mutex<HashMap<String, String>>,
}

impl Screen {
    fn show(&self, event: &AgentEvent) {
        let mut out = std::io::stdout().lock();
        let mut printed = self.printed.lock().unwrap_or_else(PoisonError::into_inner);
        // A closed stdout is no reason to stop the agent; there is just nobody to tell.
        let _ = match event {
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
                ..
            } => write!(out, "{delta}"),
            AgentEvent::MessageEnd {
                message: Message::Assistant(message),
            } if message
                .content
                .iter()
                .any(|block| block.as_text().is_some()) =>
            {
                writeln!(out)
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                printed.insert(tool_call_id.clone(), String::new());
                writeln!(out, "\n[{tool_name}] {}", summary(args))
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                let shown = printed.entry(tool_call_id.clone()).or_default();
                write!(out, "{}", catch_up(shown, &partial_result.text_content()))
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                ..
            } => {
                let mut shown = printed.remove(tool_call_id).unwrap_or_default();
                let (rest, on_screen) = if shown.is_empty() {
                    let head = head(&result.text_content(), SHOWN_RESULT_LINES);
                    (head.clone(), head)
                } else {
                    (catch_up(&mut shown, &result.text_content()), shown)
                };
                let newline = if on_screen.is_empty() || on_screen.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                let status = if *is_error { "failed" } else { "done" };
                writeln!(out, "{rest}{newline}[{tool_name}] {status}")
            }
            _ => Ok(()),
        };
        let _ = out.flush();
    }
}

/// What is new in `now` compared with what was printed; the tail a tool reports can drop
/// its first lines, and then the new tail starts on a fresh line.
fn catch_up(printed: &mut String, now: &str) -> String {
    let new = match now.strip_prefix(printed.as_str()) {
        Some(rest) => rest.to_owned(),
        None => {
            let lines: Vec<&str> = now.lines().collect();
            format!(
                "\n...\n{}",
                lines[lines.len().saturating_sub(5)..].join("\n")
            )
        }
    };
    now.clone_into(printed);
    new
}

/// The first `lines` lines of `text`, and how many were left out.
fn head(text: &str, lines: usize) -> String {
    let total = text.lines().count();
    let mut shown: Vec<&str> = text.lines().take(lines).collect();
    let more = format!("... ({} more lines)", total.saturating_sub(lines));
    if total > lines {
        shown.push(&more);
    }
    shown.join("\n")
}

/// A call's arguments in one line: the command, the path, or the JSON.
fn summary(args: &serde_json::Value) -> String {
    ["command", "path"]
        .iter()
        .find_map(|key| args[key].as_str())
        .map_or_else(|| args.to_string(), ToOwned::to_owned)
}

fn prompt(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{text}");
    let _ = out.flush();
}
