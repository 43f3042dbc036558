//! Every fixture the official MCP conformance suite's server scenarios call, served over
//! streamable HTTP on loopback: tools with each kind of content, tools that log, report
//! progress and ask the client questions, resources, a resource template, prompts and
//! completions. Each is declared as a user would declare one.
//!
//! ```text
//! cargo run --example mcp_everything -- --http 127.0.0.1:3000
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3000/mcp --requirements 2025-11-25
//! ```
//!
//! `tests/mcp/conformance/run.sh` runs both revisions' requirement sets against it. Questions
//! to the client are requests on the connection up to 2025-11-25; on 2026-07-28 they go back
//! in an `InputRequiredResult`, and the tool runs again with the answers.

// Sampling, roots and logging are deprecated by SEP-2577, a revision after 2026-07-28; the
// two revisions graded here have them.
#![allow(deprecated)]

use std::process::ExitCode;
use std::time::Duration;

use pi_runtime::mcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationSchema, InputRequest, InputRequests, ListRootsRequest, LoggingLevel,
    SamplingMessage,
};
use pi_runtime::mcp::{
    ClientFeature, ConnectedClient, HttpServing, McpServer, Prompt, PromptMessage, Resource,
    ResourceTemplate,
};
use pi_runtime::message::EmbeddedResource;
use pi_runtime::{ContentBlock, ToolContext, ToolError, ToolResult, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with no samples (8 kHz, 16-bit mono).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// Returns simple text content.
#[tool]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns image content (base64 PNG).
#[tool]
async fn test_image_content() -> Vec<ContentBlock> {
    vec![ContentBlock::image(PNG, "image/png")]
}

/// Returns audio content (base64 WAV).
#[tool]
async fn test_audio_content() -> Vec<ContentBlock> {
    vec![ContentBlock::audio(WAV, "audio/wav")]
}

/// Returns an embedded resource.
#[tool]
async fn test_embedded_resource() -> Vec<ContentBlock> {
    vec![ContentBlock::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )]
}

/// Returns text, an image and an embedded resource.
#[tool]
async fn test_multiple_content_types() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(PNG, "image/png"),
        ContentBlock::resource_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        ),
    ]
}

/// Sends three log messages while it runs.
#[tool]
async fn test_tool_with_logging(#[tool(extract)] client: ConnectedClient) -> &'static str {
    for (pause, message) in [
        (0, "Tool execution started"),
        (50, "Tool processing data"),
        (50, "Tool execution completed"),
    ] {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        client.log(LoggingLevel::Info, json!(message)).await;
    }
    "Tool with logging executed successfully"
}

/// Reports progress three times while it runs.
#[tool]
async fn test_tool_with_progress(ctx: ToolContext) -> &'static str {
    for step in [0, 50, 100] {
        ctx.update(ToolResult::text(format!("Completed step {step} of 100")));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Progress reported"
}

/// Always fails.
#[tool]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// Asks the client's model to answer a prompt.
#[tool]
async fn test_sampling(
    /// The prompt to send to the LLM
    prompt: String,
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    let answer = client.sample("sampling", request).await?;
    let text = answer.message.content.first().and_then(|c| c.as_text());
    Ok(format!(
        "LLM response: {}",
        text.map_or("No response", |t| t.text.as_str())
    ))
}

/// Asks the user for a response.
#[tool]
async fn test_elicitation(
    /// The message to show the user
    message: String,
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"]
    });
    let answer = client.elicit("elicitation", form(message, schema)?).await?;
    Ok(format!("User response: {}", described(&answer)))
}

/// Asks the user with a default for every primitive type (SEP-1034).
#[tool]
async fn test_elicitation_sep1034_defaults(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    let message = "Please review and update the form fields with defaults";
    let answer = client.elicit("defaults", form(message, schema)?).await?;
    Ok(format!("Elicitation completed: {}", described(&answer)))
}

/// Asks the user with each kind of enum (SEP-1330).
#[tool]
async fn test_elicitation_sep1330_enums(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let titled = |kind: &str| -> Vec<Value> {
        ["First", "Second", "Third"]
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"const": format!("value{}", i + 1), "title": format!("{n} {kind}")}))
            .collect()
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled("Option")
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled("Choice")}
            }
        },
        "required": []
    });
    let message = "Please select options from the enum fields";
    let answer = client.elicit("enums", form(message, schema)?).await?;
    Ok(format!("Elicitation completed: {}", described(&answer)))
}

/// Needs a client that can sample, and asks it nothing.
#[tool]
async fn test_missing_capability(
    #[tool(extract)] client: ConnectedClient,
) -> Result<&'static str, ToolError> {
    client.require(ClientFeature::Sampling)?;
    Ok("Success")
}

/// Asks the user's name.
#[tool]
async fn test_input_required_result_elicitation(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let name = ask_name(&client, "user_name", "What is your name?").await?;
    Ok(format!("Hello, {name}!"))
}

/// Asks the client's model a question.
#[tool]
async fn test_input_required_result_sampling(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let question = SamplingMessage::user_text("What is the capital of France?");
    let request = CreateMessageRequestParams::new(vec![question], 100);
    let answer = client.sample("capital_question", request).await?;
    let text = answer.message.content.first().and_then(|c| c.as_text());
    Ok(format!(
        "Sampling answered: {}",
        text.map_or("", |t| t.text.as_str())
    ))
}

/// Asks the client for its roots.
#[tool]
async fn test_input_required_result_list_roots(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let roots = client.roots("client_roots").await?;
    let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!("Found {} root(s): {}", uris.len(), uris.join(", ")))
}

/// Asks for a confirmation, the answers travelling in the sealed request state.
#[tool]
async fn test_input_required_result_request_state(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let confirmed = confirm(&client).await?;
    Ok(format!(
        "state-ok: requestState validated, confirmed={confirmed}"
    ))
}

/// Asks three questions at once: the user, the model and the roots.
#[tool]
async fn test_input_required_result_multiple_inputs(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let greeting = SamplingMessage::user_text("Generate a greeting");
    let questions = InputRequests::from([
        ("user_name".to_owned(), name_question("What is your name?")?),
        (
            "greeting".to_owned(),
            InputRequest::CreateMessage(CreateMessageRequest::new(
                CreateMessageRequestParams::new(vec![greeting], 50),
            )),
        ),
        (
            "client_roots".to_owned(),
            InputRequest::ListRoots(ListRootsRequest::default()),
        ),
    ]);
    let answers = client.ask(questions).await?;
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    Ok(format!("All inputs received: {}", keys.join(", ")))
}

/// Asks one question, then another.
#[tool]
async fn test_input_required_result_multi_round(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let name = ask_name(&client, "step1", "Step 1: What is your name?").await?;
    let message = "Step 2: What is your favorite color?";
    let answer = client
        .elicit("step2", one_field(message, "color", "string")?)
        .await?;
    let color = field(&answer.content, "color");
    Ok(format!("Multi-round complete for {name} who likes {color}"))
}

/// Asks for a confirmation; an altered request state is refused before it runs.
#[tool]
async fn test_input_required_result_tampered_state(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    confirm(&client).await?;
    Ok("integrity-ok: state verified".to_owned())
}

/// Asks only what the client declared it can answer.
#[tool]
async fn test_input_required_result_capabilities(
    #[tool(extract)] client: ConnectedClient,
) -> Result<String, ToolError> {
    let mut questions = InputRequests::new();
    if client.supports(ClientFeature::Elicitation) {
        let params = one_field("Elicitation input", "value", "string")?;
        let request = ElicitRequest::new(params);
        questions.insert(
            "elicit_input".to_owned(),
            InputRequest::Elicitation(request),
        );
    }
    if client.supports(ClientFeature::Sampling) {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Sample request")], 50);
        let request = CreateMessageRequest::new(params);
        questions.insert(
            "sample_input".to_owned(),
            InputRequest::CreateMessage(request),
        );
    }
    if questions.is_empty() {
        return Ok("No supported capabilities declared".to_owned());
    }
    let answers = client.ask(questions).await?;
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    Ok(format!("capabilities-ok: received {}", keys.join(",")))
}

/// Answers at once, with nothing on its stream but the answer.
#[tool]
async fn test_streaming_elicitation() -> &'static str {
    "Streaming complete"
}

/// Logs only when the request asked for log messages.
#[tool]
async fn test_logging_tool(#[tool(extract)] client: ConnectedClient) -> &'static str {
    client
        .log(
            LoggingLevel::Info,
            json!("Diagnostic trace logging activated"),
        )
        .await;
    "Logging evaluated"
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
struct TwoArguments {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

/// The argument of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbeddedArguments {
    /// URI of the resource to embed
    resource_uri: String,
}

/// The variable of `test://template/{id}/data`.
#[derive(Deserialize)]
struct TemplateId {
    id: String,
}

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::fixed(
            "test_simple_prompt",
            "A simple prompt without arguments",
            vec![PromptMessage::user_text(
                "This is a simple prompt for testing.",
            )],
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            |args: TwoArguments, _| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    args.arg1, args.arg2
                );
                Ok(vec![PromptMessage::user_text(text)])
            },
        )
        .with_completion("arg1", |typed| {
            complete_from(&["paris", "park", "party"], typed)
        })
        .with_completion("arg2", |typed| complete_from(&["world", "wonder"], typed)),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            |args: EmbeddedArguments, _| async move {
                let resource = ContentBlock::resource_text(
                    args.resource_uri,
                    "text/plain",
                    "Embedded resource content for testing.",
                );
                Ok(vec![
                    PromptMessage::user(resource),
                    PromptMessage::user_text("Please process the embedded resource above."),
                ])
            },
        ),
        Prompt::fixed(
            "test_prompt_with_image",
            "A prompt that includes image content",
            vec![
                PromptMessage::user(ContentBlock::image(PNG, "image/png")),
                PromptMessage::user_text("Please analyze the image above."),
            ],
        ),
        Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that asks the user for its context first",
            |(): (), client: ConnectedClient| async move {
                let message = "What context should the prompt use?";
                let answer = client
                    .elicit("user_context", one_field(message, "context", "string")?)
                    .await?;
                let context = field(&answer.content, "context");
                let text = format!("Prompt generated with context: {context}");
                Ok(vec![PromptMessage::user_text(text)])
            },
        ),
    ]
}

fn resources() -> Result<(Vec<Resource>, ResourceTemplate), String> {
    let resources = vec![
        Resource::text(
            "test://static-text",
            "Static Text Resource",
            "text/plain",
            "This is the content of the static text resource.",
        )
        .with_description("A static text resource for testing"),
        Resource::blob(
            "test://static-binary",
            "Static Binary Resource",
            "image/png",
            PNG,
        )
        .with_description("A static binary resource (image) for testing"),
        Resource::text(
            "test://watched-resource",
            "Watched Resource",
            "text/plain",
            "Watched resource content",
        )
        .with_description("A resource that can be subscribed to"),
    ];
    let template = ResourceTemplate::new(
        "test://template/{id}/data",
        "Resource Template",
        |uri, TemplateId { id }, _| async move {
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![EmbeddedResource::text(
                uri,
                "application/json",
                data.to_string(),
            )])
        },
    )
    .map_err(|e| e.to_string())?
    .with_description("A resource template with parameter substitution")
    .with_mime_type("application/json")
    .with_completion("id", |typed| complete_from(&["123", "124", "200"], typed));
    Ok((resources, template))
}

/// An elicitation form from a JSON schema.
fn form(message: impl Into<String>, schema: Value) -> Result<ElicitRequestParams, ToolError> {
    let Value::Object(schema) = schema else {
        return Err(ToolError::new("an elicitation schema is an object"));
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema)?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema,
    })
}

/// A form of one required field of JSON type `kind`.
fn one_field(message: &str, field: &str, kind: &str) -> Result<ElicitRequestParams, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {field: {"type": kind}},
        "required": [field]
    });
    form(message, schema)
}

fn name_question(message: &str) -> Result<InputRequest, ToolError> {
    let request = ElicitRequest::new(one_field(message, "name", "string")?);
    Ok(InputRequest::Elicitation(request))
}

async fn ask_name(client: &ConnectedClient, key: &str, message: &str) -> Result<String, ToolError> {
    let answer = client
        .elicit(key, one_field(message, "name", "string")?)
        .await?;
    Ok(field(&answer.content, "name"))
}

async fn confirm(client: &ConnectedClient) -> Result<bool, ToolError> {
    let answer = client
        .elicit("confirm", one_field("Please confirm", "ok", "boolean")?)
        .await?;
    Ok(answer
        .content
        .as_ref()
        .and_then(|c| c.get("ok"))
        .and_then(Value::as_bool)
        == Some(true))
}

fn field(content: &Option<Value>, name: &str) -> String {
    match content.as_ref().and_then(|c| c.get(name)) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "unknown".to_owned(),
    }
}

fn described(answer: &ElicitResult) -> String {
    let action = serde_json::to_value(&answer.action).unwrap_or(Value::Null);
    let content = answer.content.clone().unwrap_or_else(|| json!({}));
    format!(
        "action={}, content={content}",
        action.as_str().unwrap_or("unknown")
    )
}

fn complete_from(values: &[&str], typed: &str) -> Vec<String> {
    values
        .iter()
        .filter(|value| value.starts_with(typed))
        .map(|value| (*value).to_owned())
        .collect()
}

const USAGE: &str = "usage: mcp_everything --http ADDR   (a loopback address, e.g. 127.0.0.1:3000)";

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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = match args.as_slice() {
        [flag, addr] if flag == "--http" => addr.parse().map_err(|e| format!("{addr}: {e}"))?,
        _ => return Err(USAGE.to_owned()),
    };
    let tools = (
        (
            TestSimpleText,
            TestImageContent,
            TestAudioContent,
            TestEmbeddedResource,
            TestMultipleContentTypes,
            TestToolWithLogging,
            TestToolWithProgress,
            TestErrorHandling,
            TestSampling,
            TestElicitation,
            TestElicitationSep1034Defaults,
            TestElicitationSep1330Enums,
        ),
        (
            TestMissingCapability,
            TestInputRequiredResultElicitation,
            TestInputRequiredResultSampling,
            TestInputRequiredResultListRoots,
            TestInputRequiredResultRequestState,
            TestInputRequiredResultMultipleInputs,
            TestInputRequiredResultMultiRound,
            TestInputRequiredResultTamperedState,
            TestInputRequiredResultCapabilities,
            TestStreamingElicitation,
            TestLoggingTool,
        ),
    );
    let (resources, template) = resources()?;
    let mut server = McpServer::new(tools)
        .map_err(|e| e.to_string())?
        .with_name("mcp-everything", env!("CARGO_PKG_VERSION"))
        .with_resource_template(template);
    for resource in resources {
        server = server.with_resource(resource);
    }
    for prompt in prompts() {
        server = server.with_prompt(prompt);
    }
    let http = server
        .serve_http(addr, HttpServing::default())
        .await
        .map_err(|e| e.to_string())?;
    println!("listening on {}", http.url());
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    http.shutdown().await;
    Ok(())
}
