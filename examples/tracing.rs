//! The spans of an agent run, printed by `tracing-subscriber`: one `invoke_agent` span per
//! run, a `chat {model}` span per model request and an `execute_tool {tool}` span per call
//! (OpenTelemetry GenAI conventions), offline on the faux model.
//!
//! ```sh
//! cargo run --example tracing
//! OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true cargo run --example tracing
//! ```
//!
//! A service that exports spans (for example with `tracing-opentelemetry`) gets the same spans
//! with their `otel.name`, `otel.kind` and `gen_ai.*` attributes; nothing here depends on
//! OpenTelemetry.

use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool;
use serde_json::json;
use tracing_subscriber::fmt::format::FmtSpan;

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Print each span when it closes, with its fields and how long it took.
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .with_max_level(tracing::Level::DEBUG)
        .init();

    let model = FauxModel::new()
        .respond(
            FauxResponse::tool_call("c1", "add", json!({"a": 1, "b": 2})).and_tool_call(
                "c2",
                "add",
                json!({"a": 1, "b": "two"}),
            ),
        )
        .respond(FauxResponse::text("1 + 2 = 3"));
    let agent = Agent::builder().model(model).tools((Add,)).build()?;
    agent.prompt("What is 1 + 2?").await?;
    Ok(())
}
