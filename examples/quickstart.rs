//! The README's main command: `cargo run --example quickstart`.
//!
//! Two `#[tool]` functions, one agent, and a scripted model (no network, no key): the model
//! sends an invalid call, reads the validation error, corrects itself, then runs two slow
//! calls in parallel. Every step is printed as the agent's events arrive.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_runtime::agent::{Agent, AgentEvent};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::{AgentTool, AssistantMessageEvent, ToolContext, ToolError, tool};
use serde_json::json;

/// Add two numbers.
#[tool(snippet = "Add two numbers")]
async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> String {
    (a + b).to_string()
}

/// Get the current weather in a city.
#[tool(snippet = "Look up the weather in a city")]
async fn weather(
    /// The city, e.g. "Paris".
    city: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    // A slow lookup that gives up when the run is aborted.
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(300)) => Ok(format!("{city}: 18°C, rain")),
        () = ctx.signal().cancelled() => Err(ToolError::new("weather lookup aborted")),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== The tools, as the model sees them ==");
    for definition in [Add.definition(), Weather.definition()] {
        println!("{}: {}", definition.name, definition.description);
        println!("{}", serde_json::to_string_pretty(&definition.parameters)?);
    }

    // What a model would answer; a real one comes from `pi_runtime::provider::presets`.
    let model = FauxModel::new()
        .respond(FauxResponse::text("Adding 1 and x.").and_tool_call(
            "c1",
            "add",
            json!({"a": 1, "b": "x"}),
        ))
        .respond(FauxResponse::text("b must be a number.").and_tool_call(
            "c2",
            "add",
            json!({"a": 1, "b": 2}),
        ))
        .respond(
            FauxResponse::text("Now two cities at once.")
                .and_tool_call("c3", "weather", json!({"city": "Paris"}))
                .and_tool_call("c4", "weather", json!({"city": "Lyon"})),
        )
        .respond(FauxResponse::text(
            "1 + 2 = 3, and it rains in Paris and Lyon.",
        ));

    let agent = Agent::builder()
        .model(model)
        .system_prompt("You are a helpful assistant.")
        .tools((Add, Weather))
        .build()?;
    let log = Arc::new(Mutex::new(Log::new()));
    agent.on_event(move |event| {
        log.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .print(event);
    });

    println!("\n== The run ==");
    let messages = agent
        .prompt("What is 1 + 2? And the weather in Paris and Lyon?")
        .await?;
    println!(
        "\nThe run added {} messages to the transcript.",
        messages.len()
    );
    Ok(())
}

/// Prints events as they arrive, with the time since the run started.
struct Log {
    started: Instant,
    batch: Option<Batch>,
}

/// The tool calls of the current turn.
struct Batch {
    started: Instant,
    calls: usize,
    /// The sum of the calls' own durations.
    work_ms: u64,
}

impl Log {
    fn new() -> Self {
        Log {
            started: Instant::now(),
            batch: None,
        }
    }

    fn print(&mut self, event: &AgentEvent) {
        let at = format!("[{:>4} ms]", self.started.elapsed().as_millis());
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => match assistant_message_event {
                AssistantMessageEvent::TextStart { .. } => print!("{at} assistant: "),
                AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
                AssistantMessageEvent::TextEnd { .. } => println!(),
                _ => {}
            },
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } => {
                let batch = self.batch.get_or_insert_with(|| Batch {
                    started: Instant::now(),
                    calls: 0,
                    work_ms: 0,
                });
                batch.calls += 1;
                println!("{at} → {tool_name} {args}");
            }
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                duration_ms,
                ..
            } => {
                if let Some(batch) = &mut self.batch {
                    batch.work_ms += duration_ms.unwrap_or(0);
                }
                let text = result.text_content();
                if *is_error {
                    println!("{at} ✗ {tool_name} failed, the model sees:\n{text}");
                } else {
                    println!("{at} ✓ {tool_name}: {text}");
                }
            }
            AgentEvent::TurnEnd { .. } => {
                if let Some(batch) = self.batch.take()
                    && batch.calls > 1
                {
                    println!(
                        "{:10} {} calls in parallel: {} ms of work in {} ms",
                        "",
                        batch.calls,
                        batch.work_ms,
                        batch.started.elapsed().as_millis()
                    );
                }
            }
            _ => {}
        }
        // Deltas end without a newline; show them now, not with the next line.
        let _ = std::io::stdout().flush();
    }
}
