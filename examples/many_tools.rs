//! Hundreds of tools without paying for them on every request: 300 tools are registered,
//! five are declared to the model, and the rest are deferred until `tool_search` loads them.
//!
//! Offline, on the scripted faux model: the model searches for weather tools, two are loaded
//! (the next request declares them in a system message), and it calls both. At the end the
//! program prints how many bytes the tool list of the first request takes as the OpenAI
//! Chat Completions body carries it, with deferral and with every tool declared.
//!
//! ```text
//! cargo run --example many_tools
//! ```

use std::sync::Arc;

use pi_runtime::agent::Agent;
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::provider::{Api, Model, request_body};
use pi_runtime::tool::{Exposure, FnTool, ToolDefinition, ToolSetExt};
use pi_runtime::tool_search::ToolSearchTool;
use pi_runtime::{Context, Message, StreamOptions, Tool, ToolResult};
use serde_json::json;

/// Thirty services with ten actions each: the kind of catalog a few MCP servers add up to.
const SERVICES: [&str; 30] = [
    "github",
    "gitlab",
    "jira",
    "linear",
    "slack",
    "discord",
    "gmail",
    "calendar",
    "drive",
    "dropbox",
    "notion",
    "confluence",
    "figma",
    "stripe",
    "shopify",
    "salesforce",
    "hubspot",
    "zendesk",
    "pagerduty",
    "datadog",
    "sentry",
    "aws",
    "gcp",
    "azure",
    "postgres",
    "redis",
    "weather",
    "maps",
    "translate",
    "spotify",
];
const ACTIONS: [(&str, &str); 10] = [
    (
        "list_items",
        "List the items of a {s} account, newest first",
    ),
    ("get_item", "Fetch one {s} item by its id"),
    (
        "create_item",
        "Create a new {s} item with a title and a body",
    ),
    ("update_item", "Change the title or the body of a {s} item"),
    ("delete_item", "Delete a {s} item for good"),
    ("search", "Search {s} for items matching a text query"),
    (
        "get_forecast",
        "Get the {s} forecast for a city, day by day",
    ),
    ("get_current", "Get the current {s} conditions in a city"),
    ("share_item", "Share a {s} item with another user"),
    ("export", "Export every {s} item as a CSV file"),
];

fn catalog() -> Vec<Arc<dyn ToolDefinition>> {
    let mut tools: Vec<Arc<dyn ToolDefinition>> = Vec::new();
    for service in SERVICES {
        for (action, description) in ACTIONS {
            let name = format!("{service}__{action}");
            let parameters = json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The item's id"},
                    "city": {"type": "string", "description": "A city name"},
                    "query": {"type": "string", "description": "Free text"}
                }
            });
            let answer = format!("{name}: done");
            tools.push(Arc::new(FnTool::new(
                name,
                description.replace("{s}", service),
                parameters,
                move |args, _| {
                    let answer = format!("{answer} with {args}");
                    async move { Ok(ToolResult::text(answer)) }
                },
            )));
        }
    }
    tools
}

/// The five tools every request declares.
fn everyday() -> Vec<Arc<dyn ToolDefinition>> {
    ["read_file", "write_file", "list_directory", "run_tests"]
        .into_iter()
        .map(|name| -> Arc<dyn ToolDefinition> {
            Arc::new(FnTool::new(
                name,
                format!("The {name} tool of the workspace"),
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                |_, _| async { Ok(ToolResult::text("ok")) },
            ))
        })
        .chain([Arc::new(ToolSearchTool::new()) as Arc<dyn ToolDefinition>])
        .collect()
}

/// The bytes of the `tools` field of a Chat Completions request declaring `tools`.
fn tools_bytes(tools: Vec<Tool>) -> Result<usize, Box<dyn std::error::Error>> {
    let model = Model::new(
        Api::OpenAiCompletions,
        "openai",
        "gpt-test",
        "http://localhost",
    );
    let context = Context::new("", Vec::new(), tools);
    let body = request_body(&model, &context, &StreamOptions::default())?;
    Ok(serde_json::to_string(&body["tools"])?.len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "tool_search",
            json!({"query": "weather forecast and current conditions", "limit": 2}),
        ))
        .respond(
            FauxResponse::tool_call("c2", "weather__get_forecast", json!({"city": "Oslo"}))
                .and_tool_call("c3", "weather__get_current", json!({"city": "Oslo"})),
        )
        .respond(FauxResponse::text("Oslo: rain today, sun tomorrow."));
    let requests = model.clone();
    let agent = Agent::builder()
        .model(model)
        .tools((everyday(), catalog().with_exposure(Exposure::Deferred)))
        .build()?;
    println!(
        "registered {} tools, {} declared",
        agent.tools().len(),
        agent.tools().active().count()
    );

    let outcome = agent.prompt("What is the weather in Oslo?").await?;
    for message in outcome.iter() {
        match message {
            Message::System(change) => {
                let names: Vec<&str> = change.added().iter().map(|t| t.name.as_str()).collect();
                println!("[tools added] {}", names.join(", "));
            }
            Message::ToolResult(result) => {
                println!("[{}] {}", result.tool_name, result.text());
            }
            Message::Assistant(reply) if !reply.text().is_empty() => {
                println!("[assistant] {}", reply.text());
            }
            _ => {}
        }
    }

    let first = &requests.requests()[0];
    let declared = tools_bytes(first.current_tools())?;
    let everything: Vec<Tool> = everyday()
        .iter()
        .chain(&catalog())
        .map(|tool| tool.definition().clone())
        .collect();
    let all = tools_bytes(everything)?;
    println!(
        "tools in the first request: {declared} bytes deferred, {all} bytes with all {} declared ({:.1}x smaller)",
        agent.tools().len(),
        all as f64 / declared as f64
    );
    Ok(())
}
