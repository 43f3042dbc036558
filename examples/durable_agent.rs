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
//! results. The prompt `"parallel"` instead makes one batch of ten `slow_step` calls at once.
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
use pi_runtime::agent::approval::{Decision, PendingCall};
use pi_runtime::agent::{Agent, AgentDefinition};
use pi_runtime::durable;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::stream::Context;
use pi_runtime::{Message, State, ToolContext, ToolError, tool};
use restate_sdk::prelude::*;
use restate_sdk::service::IntoServiceDefinition;
use serde_json::json;

/// The file every tool execution appends a line to.
#[derive(Clone)]
struct Effects(Arc<PathBuf>);

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
            .open(&*self.0)
            .map_err(|error| ToolError::new(format!("cannot open the effects file: {error}")))?;
        // One write per line, so lines of concurrent calls never interleave.
        file.write_all(format!("{line}\n").as_bytes())
            .map_err(|error| ToolError::new(format!("cannot append to the effects file: {error}")))
    }
}

/// One step of the script: takes 300 ms, then records itself.
#[tool]
async fn slow_step(
    State(effects): State<Effects>,
    ctx: ToolContext,
    /// Which step this is.
    step: u32,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(300)).await;
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
    let parallel = request.messages.iter().any(|message| {
        matches!(message, Message::User(user) if user.text_content().contains("parallel"))
    });
    if parallel {
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

fn agent(effects: Effects) -> Result<AgentDefinition, pi_runtime::agent::BuildError> {
    // Streamed a few characters at a time, so a response takes a moment, as a real one does.
    let model = FauxModel::new()
        .without_fallback()
        .respond_always(script)
        .with_chunk_chars(8)
        .with_chunk_delay(Duration::from_millis(25));
    Agent::builder()
        .model(model)
        .system_prompt("Run the script.")
        .tools((SlowStep(effects.clone()), Publish(effects)))
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
                reason: "A person denied it.".to_owned(),
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
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let agent = match agent(Effects(Arc::new(cli.effects))) {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("durable_agent: {error}");
            return ExitCode::FAILURE;
        }
    };
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
    HttpServer::new(endpoint).serve(listener).await;
    ExitCode::SUCCESS
}
