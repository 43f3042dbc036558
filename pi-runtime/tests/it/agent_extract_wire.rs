//! Seed 2's extraction against the loopback OpenAI (Chat Completions and Responses) and
//! Anthropic servers (SSE): the model
//! sends `evidence: 42`, reads the validation error, corrects itself, and the accepted
//! submission ends the run. The request bodies show the submit tool, `strict` where the
//! model supports it, and `tool_choice` when forcing is on.

use pi_runtime::agent::Agent;
use pi_runtime::agent::extract::{ExtractError, Extractor};
use pi_runtime::provider::http::RetryPolicy;
use pi_runtime::provider::presets::{self, Preset};
use serde_json::{Value, json};

use crate::agent_extract::{
    EVIDENCE_42, FunctionAnalysis, PROMPT, TOOL, accepted_value, analysis, quoted, valid,
};
use crate::provider_support::{
    Recorded, Reply, Server, anthropic_tool_call, openai_tool_call, responses_tool_call,
};

const DESCRIPTION: &str = "Submit your final result. Call this once, when you are done: the \
                           result is only accepted through this tool, never as text.";

fn wrong_args() -> String {
    analysis(json!(42)).to_string()
}

fn right_args() -> String {
    valid().to_string()
}

/// The preset pointed at the loopback server, failing at once instead of retrying.
fn extractor(preset: Preset, server: &Server, force: bool) -> Extractor<FunctionAnalysis> {
    let model = preset
        .base_url(&server.base_url)
        .retry(RetryPolicy::none())
        .build();
    let builder = Agent::builder()
        .shared_model(model)
        .system_prompt("You analyse source code.")
        .extract::<FunctionAnalysis>()
        .tool_name(TOOL)
        .check(quoted);
    let builder = if force {
        builder.force_tool_choice()
    } else {
        builder
    };
    builder.build().expect("extractor")
}

/// `T`'s schema as sent in strict mode (SPEC §7.2): every property required, closed, and
/// the optional `emptyInputBehavior` (an `Option<String>`) allows `null`.
fn strict_schema() -> Value {
    let mut schema = plain_schema();
    schema["properties"]["emptyInputBehavior"] = json!({"anyOf": [
        {"type": "string", "description": "What it does with an empty input; null when unsure."},
        {"type": "null"}
    ]});
    schema["required"] = json!([
        "name",
        "parameters",
        "summary",
        "emptyInputBehavior",
        "evidence"
    ]);
    schema
}

/// `T`'s schema as `#[tool]` builds it.
fn plain_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The function's name."},
            "parameters": {"type": "array", "items": {"type": "string"},
                           "description": "The parameter names, in order."},
            "summary": {"type": "string", "description": "What the function does, in one sentence."},
            "emptyInputBehavior": {"type": "string",
                                   "description": "What it does with an empty input; null when unsure."},
            "evidence": {"type": "string", "description": "A verbatim quote from the source."}
        },
        "required": ["name", "parameters", "summary", "evidence"],
        "additionalProperties": false
    })
}

fn openai_call(id: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": TOOL, "arguments": arguments}})
}

/// The OpenAI `messages` of a request, after the system prompt.
fn openai_messages(request: &Recorded) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .map(|messages| messages[1..].to_vec())
        .unwrap_or_default()
}

#[tokio::test]
async fn openai_strict_and_forced() {
    let server = Server::start(vec![
        Reply::Sse(openai_tool_call("call_1", TOOL, &wrong_args())),
        Reply::Sse(openai_tool_call("call_2", TOOL, &right_args())),
    ])
    .await;
    let mut preset = presets::openai_completions("gpt-4o").no_api_key();
    preset.model.compat.supports_strict_mode = Some(true);
    let extractor = extractor(preset, &server, true);

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the accepted submission ends the run");
    for request in &requests {
        assert_eq!(
            request.body["tools"],
            json!([{"type": "function", "function": {
                "name": TOOL, "description": DESCRIPTION,
                "parameters": strict_schema(), "strict": true}}])
        );
        assert_eq!(
            request.body["tool_choice"],
            json!({"type": "function", "function": {"name": TOOL}})
        );
    }
    let question = json!({"role": "user", "content": [{"type": "text", "text": PROMPT}]});
    assert_eq!(
        openai_messages(&requests[0]),
        std::slice::from_ref(&question)
    );
    assert_eq!(
        openai_messages(&requests[1]),
        [
            question,
            json!({"role": "assistant", "content": null,
                   "tool_calls": [openai_call("call_1", &wrong_args())]}),
            json!({"role": "tool", "content": EVIDENCE_42, "tool_call_id": "call_1"}),
        ]
    );
}

#[tokio::test]
async fn openai_responses_strict_and_forced() {
    let server = Server::start(vec![
        Reply::Sse(responses_tool_call("call_1", "fc_1", TOOL, &wrong_args())),
        Reply::Sse(responses_tool_call("call_2", "fc_2", TOOL, &right_args())),
    ])
    .await;
    // The OpenAI preset: Responses, strict mode supported.
    let extractor = extractor(presets::openai("gpt-4.1").no_api_key(), &server, true);

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the accepted submission ends the run");
    for request in &requests {
        assert_eq!(request.path_and_query, "/responses");
        assert_eq!(
            request.body["tools"],
            json!([{"type": "function", "name": TOOL, "description": DESCRIPTION,
                    "parameters": strict_schema(), "strict": true}])
        );
        assert_eq!(
            request.body["tool_choice"],
            json!({"type": "function", "name": TOOL})
        );
    }
    let input = requests[1].body["input"].as_array().cloned();
    assert_eq!(
        input.expect("input")[2..],
        [
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": TOOL,
                   "arguments": wrong_args()}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": EVIDENCE_42}),
        ]
    );
}

#[tokio::test]
async fn openai_without_forcing_sends_no_tool_choice() {
    let server = Server::start(vec![Reply::Sse(openai_tool_call(
        "call_1",
        TOOL,
        &right_args(),
    ))])
    .await;
    // A server without strict mode (the default for OpenAI-compatible hosts): `prefer`
    // falls back silently, and no `strict` key is sent.
    let extractor = extractor(
        presets::openai_completions("gpt-4o").no_api_key(),
        &server,
        false,
    );

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    let request = server.only_request();
    assert_eq!(
        request.body["tools"],
        json!([{"type": "function", "function": {
            "name": TOOL, "description": DESCRIPTION, "parameters": plain_schema()}}])
    );
    assert_eq!(request.body.get("tool_choice"), None);
}

#[tokio::test]
async fn anthropic_strict_and_forced() {
    let server = Server::start(vec![
        Reply::Sse(anthropic_tool_call("toolu_1", TOOL, &wrong_args())),
        Reply::Sse(anthropic_tool_call("toolu_2", TOOL, &right_args())),
    ])
    .await;
    let mut preset = presets::anthropic("claude-sonnet-4-5").api_key("sk-ant-dummy");
    preset.model.compat.supports_strict_tools = Some(true);
    let extractor = extractor(preset, &server, true);

    let extracted = extractor.extract(PROMPT).await.expect("accepted");

    assert_eq!(extracted.value, accepted_value());
    // Two responses of 10 input and 12 output tokens each.
    assert_eq!((extracted.usage.input, extracted.usage.output), (20, 24));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the accepted submission ends the run");
    for request in &requests {
        assert_eq!(
            request.body["tools"],
            json!([{"name": TOOL, "description": DESCRIPTION, "eager_input_streaming": true,
                    "input_schema": strict_schema(), "strict": true,
                    "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            request.body["tool_choice"],
            json!({"type": "tool", "name": TOOL})
        );
    }
    let wrong: Value = analysis(json!(42));
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": TOOL, "input": wrong}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": EVIDENCE_42,
                 "is_error": true, "cache_control": {"type": "ephemeral"}}]},
        ])
    );
}

#[tokio::test]
async fn anthropic_without_forcing_sends_no_tool_choice() {
    let server = Server::start(vec![Reply::Sse(anthropic_tool_call(
        "toolu_1",
        TOOL,
        &right_args(),
    ))])
    .await;
    let preset = presets::anthropic("claude-sonnet-4-5").api_key("sk-ant-dummy");
    let extractor = extractor(preset, &server, false);

    extractor.extract(PROMPT).await.expect("accepted");

    let request = server.only_request();
    // No strict tools by default: `prefer` falls back to the plain schema.
    assert_eq!(
        request.body["tools"],
        json!([{"name": TOOL, "description": DESCRIPTION, "eager_input_streaming": true,
                "input_schema": plain_schema(), "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(request.body.get("tool_choice"), None);
}

#[tokio::test]
async fn google_forcing_names_the_function() {
    // Gemini names the function through `allowedFunctionNames` under mode ANY.
    let server = Server::start(vec![Reply::Status(
        400,
        r#"{"error": {"code": 400, "message": "stop here", "status": "INVALID_ARGUMENT"}}"#.into(),
        Vec::new(),
    )])
    .await;
    let extractor = extractor(
        presets::google("gemini-2.5-flash").api_key("g-dummy"),
        &server,
        true,
    );

    let error = extractor.extract(PROMPT).await.unwrap_err();

    assert!(matches!(error, ExtractError::Model { .. }), "{error:?}");
    let request = server.only_request();
    assert_eq!(
        request.body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [TOOL]}})
    );
}
