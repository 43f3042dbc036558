//! Agents that use agents, offline on scripted models:
//!
//! ```text
//! cargo run --example agents            # every event of the sub-agent, as the parent sees it
//! cargo run --example agents -- --demo  # one line per scenario
//! ```
//!
//! 1. A researcher calls a summarizer sub-agent as a tool; the researcher's listener sees
//!    the summarizer's events, tagged with the path of the call that runs it.
//! 2. A triage agent hands the conversation to a billing agent, which answers.
//! 3. A janitor sub-agent's `delete_file` needs approval: the whole run pauses with the
//!    path of the held call, its signed state is saved and resumed with an approval, the
//!    call runs once, and a second resume of the same state is refused.
//! 4. An input guardrail trips before the model is asked, with a typed end.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_runtime::agent::approval::{ApprovalDecision, ApprovalError, ClaimError, StateKey};
use pi_runtime::agent::guardrail::{InputGuardrail, Verdict};
use pi_runtime::agent::{Agent, AgentDefinition, AgentError, AgentEvent, RunEnd, RunState};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::ApprovalPolicy;
use pi_runtime::{FnTool, ToolError, ToolResult};
use serde_json::json;

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let demo = std::env::args().any(|arg| arg == "--demo");
    match run(demo).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(demo: bool) -> Result<(), Failure> {
    researcher(demo).await?;
    triage().await?;
    janitor().await?;
    guardrail().await?;
    Ok(())
}

/// A researcher that asks a summarizer sub-agent.
async fn researcher(demo: bool) -> Result<(), Failure> {
    let summarizer = Agent::builder()
        .name("summarizer")
        .model(FauxModel::new().respond(FauxResponse::text("Rust is fast and memory-safe.")))
        .system_prompt("Summarize the text you are given in one sentence.")
        .build_definition()?;
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "summarize",
            json!({"task": "Summarize: Rust is a language empowering everyone to build reliable and efficient software."}),
        ))
        .respond(FauxResponse::text("In short: Rust is fast and memory-safe."));
    let researcher = Agent::builder()
        .name("researcher")
        .model(model)
        .tools(summarizer.as_tool("summarize", "Summarize a text in one sentence."))
        .build()?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    researcher.on_event(move |event| {
        let AgentEvent::Nested { path, agent, event } = event else {
            return;
        };
        match &**event {
            AgentEvent::MessageUpdate { .. } if demo => {}
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => println!(
                "  [{path} {agent}] message_update {}",
                assistant_message_event.kind()
            ),
            event if demo => sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{path}:{}", event.kind())),
            event => println!("  [{path} {agent}] {}", event.kind()),
        }
    });
    let run = researcher.prompt("What is Rust, in short?").await?;
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).join(" ");
    let answer = run.final_text().unwrap_or_default();
    if demo {
        println!("sub-agent: the researcher answered {answer:?}; its listener saw {seen}");
    } else {
        println!("sub-agent: the researcher answered {answer:?}");
    }
    Ok(())
}

/// A triage agent that hands billing questions to billing.
async fn triage() -> Result<(), Failure> {
    let billing = Agent::builder()
        .name("billing")
        .model(FauxModel::new().respond(FauxResponse::text("Invoice 7 was paid on 2 May.")))
        .system_prompt("You answer billing questions.")
        .build_definition()?;
    let triage = Agent::builder()
        .name("triage")
        .model(FauxModel::new().respond(FauxResponse::tool_call(
            "h1",
            "transfer_to_billing",
            json!({}),
        )))
        .system_prompt("Route each question to the agent that can answer it.")
        .tools(billing.handoff("transfer_to_billing", "Billing questions go to billing."))
        .build()?;
    let run = triage.prompt("Was invoice 7 paid?").await?;
    println!(
        "handoff: {:?} answered by {}",
        run.final_text().unwrap_or_default(),
        run.agent.as_deref().unwrap_or("an unnamed agent")
    );
    Ok(())
}

/// `delete_file`, which always needs approval, counting its runs.
fn delete_file(deleted: &Arc<AtomicUsize>) -> FnTool {
    let deleted = Arc::clone(deleted);
    FnTool::new(
        "delete_file",
        "Delete a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        move |args, _| {
            let deleted = Arc::clone(&deleted);
            async move {
                deleted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(ToolResult::text(format!("deleted {}", args["path"])))
            }
        },
    )
    .with_approval(ApprovalPolicy::Always)
}

/// The lead agent, whose janitor sub-agent deletes a file; `lead` and `janitor` are the
/// models' scripts (a fresh process builds the agents again with what is left of them).
fn lead(lead: FauxModel, janitor: FauxModel, deleted: &Arc<AtomicUsize>) -> Result<Agent, Failure> {
    let janitor: AgentDefinition = Agent::builder()
        .name("janitor")
        .model(janitor)
        .tools(delete_file(deleted))
        .build_definition()?;
    Ok(Agent::builder()
        .name("lead")
        .model(lead)
        .tools(janitor.as_tool("janitor", "Cleans up files."))
        .build()?)
}

async fn janitor() -> Result<(), Failure> {
    let key = StateKey::new(b"the agents example signing key")?;
    let deleted = Arc::new(AtomicUsize::new(0));
    let first = lead(
        FauxModel::new().respond(FauxResponse::tool_call(
            "c1",
            "janitor",
            json!({"task": "Delete /tmp/old.log"}),
        )),
        FauxModel::new().respond(FauxResponse::tool_call(
            "d1",
            "delete_file",
            json!({"path": "/tmp/old.log"}),
        )),
        &deleted,
    )?;
    let paused = first.prompt("Clean up the old log.").await?;
    let RunEnd::AwaitingApproval { pending } = &paused.end else {
        return Err(format!("expected a pause, the run ended with {:?}", paused.end).into());
    };
    let held: Vec<String> = (pending.iter())
        .map(|call| format!("{} ({})", call.path(), call.tool))
        .collect();
    println!(
        "approval: the run paused for {}; delete_file ran {} times",
        held.join(", "),
        deleted.load(Ordering::SeqCst)
    );
    let saved = (paused.paused_state())
        .ok_or("a paused run has a state")?
        .to_signed_json(&key);

    // What another process does with the saved state: fresh agents, the same key.
    let resume = || -> Result<(Agent, RunState), Failure> {
        let agent = lead(
            FauxModel::new().respond(FauxResponse::text("The old log is gone.")),
            FauxModel::new().respond(FauxResponse::text("Deleted /tmp/old.log.")),
            &deleted,
        )?;
        Ok((agent, RunState::from_signed_json(&saved, &key)?))
    };
    let (agent, state) = resume()?;
    let resumed = agent
        .resume_with(state, [ApprovalDecision::approve("c1/d1")])
        .await?;
    println!(
        "approval: resumed with approve c1/d1, delete_file ran {} time, {:?}",
        deleted.load(Ordering::SeqCst),
        resumed.final_text().unwrap_or_default()
    );
    let (agent, state) = resume()?;
    match agent
        .resume_with(state, [ApprovalDecision::approve("c1/d1")])
        .await
    {
        Err(AgentError::Approval(ApprovalError::Claim(ClaimError::AlreadyResumed { .. }))) => {
            println!(
                "approval: a second resume of the same state was refused; delete_file ran {} time",
                deleted.load(Ordering::SeqCst)
            );
        }
        other => return Err(format!("a second resume must be refused, got {other:?}").into()),
    }
    Ok(())
}

async fn guardrail() -> Result<(), Failure> {
    let model = FauxModel::new().respond(FauxResponse::text("Card 4111 1111 1111 1111 is..."));
    let agent = Agent::builder()
        .model(model.clone())
        .input_guardrail(InputGuardrail::new("no_card_numbers", |input| async move {
            let digits = input.text().chars().filter(char::is_ascii_digit).count();
            if digits >= 12 {
                Verdict::trip("the message holds a card number")
            } else {
                Verdict::Pass
            }
        }))
        .build()?;
    let run = agent
        .prompt("Is card 4111 1111 1111 1111 still valid?")
        .await?;
    println!(
        "guardrail: {:?}; model requests: {}",
        run.end,
        model.request_count()
    );
    Ok(())
}
