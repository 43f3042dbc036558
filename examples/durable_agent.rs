//! An agent run that survives crashes: the Restate workflow `DurableAgent`, served on
//! `--bind` for a Restate server to drive.
//!
//! ```text
//! durable_agent --bind 127.0.0.1:9080 --effects effects.txt
//! ```
//!
//! Offline, on a scripted model that reads the transcript, so every run (and every replay of
//! one) goes the same way: three calls of `slow_step`, one after the other (300 ms each),
//! then `publish`, which needs a person's approval, then a final answer that lists the
//! results. The prompt `"parallel"` instead makes one batch of ten `slow_step` calls at once,
//! `"steps N"` makes N calls one after the other, with no approval, and `"delegate N"` hands
//! `"steps N"` to the `worker` sub-agent (see `pi_runtime::agent::subagent`), whose model
//! responses and tool calls are steps of the same workflow.
//! Each tool execution appends the line `<run key> <tool call id>` to the effects file.
//!
//! Handlers: `run` (keyed by the run key) takes the prompt as a JSON string and returns the
//! final assistant text; `decide` takes `"approve"` or `"deny"` for the run's pending
//! approval; `pending` lists the calls it waits on; `transcript` returns the finished run's
//! transcript. See the README's "Durable
//! runs on Restate" for the whole cycle with a Restate server, a crash and an approval.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use pi_runtime::agent::approval::{ApprovalDecision, Decision, PendingCall};
use pi_runtime::agent::{Agent, AgentDefinition};
use pi_runtime::durable;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::stream::Context;
use pi_runtime::{Message, State, ToolContext, ToolError, tool};
use restate_sdk::prelude::*;
use restate_sdk::service::IntoServiceDefinition;
use serde_json::json;

/// The file every tool execution appends a line to, and how long a step takes.
#[derive(Clone)]
struct Effects {
    path: Arc<PathBuf>,
    step: Duration,
}

impl Effects {
    /// Append `<run key> <tool call id>`, the run key being the idempotency key's first part.
    fn record(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        let call = ctx.call_id();
        let key = ctx.idempotency_key().unwrap_or(call);
        let run = key.strip_suffix(call).and_then(|run| run.strip_suffix('/'));
        let line = format!("{} {call}", run.unwrap_or("-"));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*self.path)
            .map_err(|error| ToolError::new(format!("cannot open the effects file: {error}")))?;
        // One write per line, so lines of concurrent calls never interleave.
        file.write_all(format!("{line}\n").as_bytes())
            .map_err(|error| ToolError::new(format!("cannot append to the effects file: {error}")))
    }
}

/// One step of the script: takes 300 ms (`--step-ms`), then records itself.
#[tool]
async fn slow_step(
    State(effects): State<Effects>,
    ctx: ToolContext,
    /// Which step this is.
    step: u32,
) -> Result<String, ToolError> {
    if !effects.step.is_zero() {
        tokio::time::sleep(effects.step).await;
    }
    effects.record(&ctx)?;
    Ok(format!("step {step} done"))
}

/// Publish the results. A person approves it first.
#[tool(approval = "always")]
async fn publish(
    State(effects): State<Effects>,
    ctx: ToolContext,
    /// What to publish.
    summary: String,
) -> Result<String, ToolError> {
    effects.record(&ctx)?;
    Ok(format!("published: {summary}"))
}

/// The scripted model: the next step follows from the tool results so far.
fn script(request: &Context) -> FauxResponse {
    let results: Vec<String> = (request.messages.iter())
        .filter_map(Message::as_tool_result)
        .map(|result| result.text())
        .collect();
    let prompt = (request.messages.iter())
        .find_map(|message| match message {
            Message::User(user) => Some(user.text_content()),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(steps) = prompt
        .strip_prefix("steps ")
        .and_then(|n| n.parse::<usize>().ok())
    {
        return match results.len() {
            done if done < steps => FauxResponse::tool_call(
                format!("call-{}", done + 1),
                "slow_step",
                json!({"step": done + 1}),
            ),
            done => FauxResponse::text(format!("Ran {done} steps.")),
        };
    }
    if let Some(steps) = prompt.strip_prefix("delegate ") {
        return match results.first() {
            None => FauxResponse::tool_call(
                "call-1",
                "worker",
                json!({"task": format!("steps {steps}")}),
            ),
            Some(result) => FauxResponse::text(format!("Delegated: {result}")),
        };
    }
    if prompt == "parallel" {
        return match results.len() {
            0 => (2..=10).fold(
                FauxResponse::tool_call("call-1", "slow_step", json!({"step": 1})),
                |response, step| {
                    response.and_tool_call(
                        format!("call-{step}"),
                        "slow_step",
                        json!({"step": step}),
                    )
                },
            ),
            _ => FauxResponse::text(format!("Ran {} steps at once.", results.len())),
        };
    }
    match results.len() {
        step @ 0..=2 => FauxResponse::tool_call(
            format!("call-{}", step + 1),
            "slow_step",
            json!({"step": step + 1}),
        ),
        3 => FauxResponse::tool_call("call-4", "publish", json!({"summary": "three steps"})),
        _ => FauxResponse::text(format!("Finished: {}.", results.join("; "))),
    }
}

fn agent(
    effects: Effects,
    chunk_delay: Duration,
) -> Result<AgentDefinition, pi_runtime::agent::BuildError> {
    // Streamed a few characters at a time, so a response takes a moment, as a real one does.
    let model = FauxModel::new()
        .without_fallback()
        .respond_always(script)
        .with_chunk_chars(8);
    let model = if chunk_delay.is_zero() {
        model
    } else {
        model.with_chunk_delay(chunk_delay)
    };
    // The worker runs the same script, with `slow_step` only.
    let worker = Agent::builder()
        .model(model.clone())
        .system_prompt("Run the script.")
        .tools(SlowStep(effects.clone()))
        .max_turns(20)
        .build_definition()?;
    Agent::builder()
        .model(model)
        .system_prompt("Run the script.")
        .tools((
            SlowStep(effects.clone()),
            Publish(effects),
            worker.as_tool("worker", "Runs the steps it is given."),
        ))
        .max_turns(20)
        .build_definition()
}

struct DurableAgent {
    agent: AgentDefinition,
}

#[restate_sdk::workflow]
impl DurableAgent {
    /// Run the prompt to its end and return the final assistant text.
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, prompt: String) -> HandlerResult<String> {
        let outcome = durable::run(&ctx, &self.agent, prompt).await?;
        Ok(outcome.final_text().unwrap_or_default())
    }

    /// `"approve"` or `"deny"` the call the run waits on.
    #[handler]
    async fn decide(&self, ctx: SharedWorkflowContext<'_>, decision: String) -> HandlerResult<()> {
        let decision = match decision.as_str() {
            "approve" => Decision::Approve,
            "deny" => Decision::Deny {
                reason: "a person denied it".to_owned(),
            },
            other => {
                return Err(TerminalError::new(format!(
                    "the decision is \"approve\" or \"deny\", not {other:?}"
                ))
                .into());
            }
        };
        Ok(durable::decide(&ctx, decision).await?)
    }

    /// The calls the run waits for a decision on; empty when it waits for none.
    #[handler]
    async fn pending(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> HandlerResult<Json<Vec<PendingCall>>> {
        Ok(Json(durable::pending(&ctx).await?))
    }

    /// The finished run's transcript (JSON messages); empty before the run finishes.
    #[handler]
    async fn transcript(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> HandlerResult<Json<Vec<Message>>> {
        Ok(Json(durable::transcript(&ctx).await?))
    }
}

#[derive(Parser)]
#[command(about = "Serve the Restate workflow DurableAgent: an agent run that survives crashes")]
struct Cli {
    /// Where to serve the Restate endpoint (HTTP/2).
    #[arg(long, default_value = "127.0.0.1:9080")]
    bind: SocketAddr,
    /// The file each tool execution appends `<run key> <tool call id>` to.
    #[arg(long)]
    effects: PathBuf,
    /// How long a `slow_step` call takes, in milliseconds.
    #[arg(long, default_value_t = 300)]
    step_ms: u64,
    /// The pause between two chunks of a streamed response, in milliseconds.
    #[arg(long, default_value_t = 25)]
    chunk_delay_ms: u64,
    /// Instead of serving: run `--prompt` this many times in this process, one after the
    /// other, without Restate (approving every call that asks), and print the time per run.
    #[arg(long, value_name = "RUNS")]
    in_memory: Option<u32>,
    /// The prompt of `--in-memory` runs.
    #[arg(long, default_value = "steps 20")]
    prompt: String,
}

/// `runs` runs of `prompt` in memory, one after the other; the time per run.
async fn in_memory(agent: &AgentDefinition, prompt: &str, runs: u32) -> Result<Duration, String> {
    let started = std::time::Instant::now();
    for _ in 0..runs {
        let conversation = agent.conversation();
        let mut outcome = conversation
            .prompt(prompt)
            .await
            .map_err(|e| e.to_string())?;
        while let Some(state) = outcome.into_paused_state() {
            let decisions = (state.pending_approvals())
                .map(|call| ApprovalDecision::approve(call.id.clone()))
                .collect::<Vec<_>>();
            outcome =
                (conversation.resume_with(state, decisions).await).map_err(|e| e.to_string())?;
        }
    }
    Ok(started.elapsed() / runs.max(1))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let effects = Effects {
        path: Arc::new(cli.effects),
        step: Duration::from_millis(cli.step_ms),
    };
    let agent = match agent(effects, Duration::from_millis(cli.chunk_delay_ms)) {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("durable_agent: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(runs) = cli.in_memory {
        return match in_memory(&agent, &cli.prompt, runs).await {
            Ok(per_run) => {
                println!(
                    "in memory: {} µs per run of {:?}",
                    per_run.as_micros(),
                    cli.prompt
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("durable_agent: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let listener = match tokio::net::TcpListener::bind(cli.bind).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("durable_agent: cannot listen on {}: {error}", cli.bind);
            return ExitCode::FAILURE;
        }
    };
    // A killed service is retried soon: the run goes on as soon as a process is back.
    let options = ServiceOptions::new()
        .retry_policy_initial_interval(Duration::from_millis(100))
        .retry_policy_exponentiation_factor(2.0)
        .retry_policy_max_interval(Duration::from_secs(1));
    let endpoint = Endpoint::builder()
        .bind(
            DurableAgent { agent }
                .into_service_definition()
                .options(options),
        )
        .build();
    println!("serving the Restate endpoint on http://{}", cli.bind);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    durable::serve(endpoint, listener, shutdown).await;
    ExitCode::SUCCESS
}
