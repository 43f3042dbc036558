//! `McpClient` as the client the official MCP conformance suite grades: the suite starts a
//! scenario's server, then runs this as `mcp_conformance_client URL`, naming the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, its data in `MCP_CONFORMANCE_CONTEXT` (JSON) and the revision
//! to speak in `MCP_CONFORMANCE_PROTOCOL_VERSION`.
//!
//! ```text
//! npx @modelcontextprotocol/conformance client --requirements 2025-11-25 \
//!     --command "target/debug/examples/mcp_conformance_client"
//! ```
//!
//! Each scenario is what an application does with the client: connect (the handshake up to
//! 2025-11-25, discovery on 2026-07-28), list the tools, and call the ones the scenario is
//! about. Questions from the server are answered by `ClientAnswers`: a form is accepted as
//! its defaults fill it. Where the server wants OAuth (`auth/*`), the client authorizes with
//! `OAuth`; the person who would sign in is played by a request that follows the
//! authorization URL to its redirect, as the suite's authorization server approves at once.

// Sampling and roots are deprecated by SEP-2577, a revision after 2026-07-28; the two
// revisions graded here have them.
#![allow(deprecated)]

use std::process::ExitCode;

use pi_runtime::ToolContext;
use pi_runtime::mcp::model::{
    CreateMessageResult, ElicitResult, ElicitationAction, Root, SamplingMessage,
};
use pi_runtime::mcp::oauth::OAuth;
use pi_runtime::mcp::{ClientAnswers, McpClient};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: mcp_conformance_client URL (the suite sets MCP_CONFORMANCE_SCENARIO)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let mut builder = McpClient::builder("conformance").answers(answers());
    if scenario.starts_with("auth/") {
        builder = builder.oauth(oauth(&context));
    }
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        builder = builder.protocol_version(&version);
    }
    let client = builder.http(&url).await.map_err(|e| e.to_string())?;
    eprintln!("{scenario}: tools {:?}", client.tool_names());

    for (tool, arguments) in calls(&scenario, &context, &client) {
        let Some(definition) = client
            .tools()
            .into_iter()
            .find(|t| t.definition().name == format!("mcp__conformance__{tool}"))
        else {
            eprintln!("{scenario}: no tool {tool} to call");
            continue;
        };
        let call = definition.execute(tool.clone(), arguments, ToolContext::detached(&tool));
        let result = call.await.map_err(|e| e.to_string())?;
        eprintln!("{scenario}: {tool} -> {}", result.text_content());
    }
    client.close().await;
    Ok(())
}

/// The calls a scenario is about: the ones its context lists, else by its name.
fn calls(scenario: &str, context: &Value, client: &McpClient) -> Vec<(String, Value)> {
    if let Some(listed) = context.get("toolCalls").and_then(Value::as_array) {
        return listed
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                Some((name, call.get("arguments").cloned().unwrap_or(json!({}))))
            })
            .collect();
    }
    let plain = |name: &str| name.strip_prefix("mcp__conformance__").map(str::to_owned);
    let names: Vec<String> = client
        .tool_names()
        .iter()
        .filter_map(|n| plain(n))
        .collect();
    match scenario {
        // Listing is the whole scenario: the client must not fetch a schema's `$ref`.
        "json-schema-ref-no-deref" => Vec::new(),
        "elicitation-sep1034-client-defaults" => {
            vec![("test_client_elicitation_defaults".to_owned(), json!({}))]
        }
        // Every tool, in order, each with the inputs it asks for.
        "sep-2322-client-request-state" => names.into_iter().map(|n| (n, json!({}))).collect(),
        _ => names
            .into_iter()
            .take(1)
            .map(|n| (n, json!({"a": 2, "b": 3})))
            .collect(),
    }
}

/// Where the scenario registered a client, that client; else a client ID metadata document,
/// which the suite's authorization servers accept (or registration, where they do not).
fn oauth(context: &Value) -> OAuth {
    let oauth = OAuth::new(
        "http://localhost:3000/callback",
        |authorization_url| async move {
            let redirect = follow_to_redirect(&authorization_url).await;
            redirect.map_err(|e| format!("the authorization URL did not redirect back: {e}"))
        },
    )
    .client_name("pi-runtime-conformance");
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    match text("client_id") {
        Some(client_id) => oauth.registered_client(client_id, text("client_secret")),
        None => oauth.client_metadata_url("https://conformance-test.local/client-metadata.json"),
    }
}

/// What a person signing in would end on: the `Location` the authorization endpoint
/// redirects to.
async fn follow_to_redirect(url: &str) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    let location = response
        .headers()
        .get("location")
        .ok_or_else(|| format!("{} without a Location header", response.status()))?;
    location
        .to_str()
        .map(str::to_owned)
        .map_err(|e| e.to_string())
}

/// Forms are accepted as filled by their defaults (the client fills in the rest); the
/// model answers every sampling request alike; the one root is the working directory.
fn answers() -> ClientAnswers {
    ClientAnswers::new()
        .elicitation(|_form| async {
            let mut answer = ElicitResult::new(ElicitationAction::Accept);
            answer.content = Some(json!({"confirmed": true}));
            answer
        })
        .sampling(|_request| async {
            Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text("A sampled answer."),
                "conformance-model".to_owned(),
            ))
        })
        .roots(vec![Root::new("file:///tmp")])
}
